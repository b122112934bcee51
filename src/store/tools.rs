//! The tool registry.

use serde_json::Value;

use sqlx::types::Json;

use super::{Result, Store, StoreError};
use crate::domain::circuit::BreakerSpec;
use crate::domain::recovery::RetrySpec;
use crate::domain::tool::ToolDef;

#[derive(Debug, Clone)]
pub struct NewTool {
    pub id: String,
    pub name: String,
    pub description: String,
    pub endpoint: String,
    pub timeout_ms: i32,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub output_params: Vec<String>,
    pub alternatives: Vec<String>,
    pub tags: Vec<String>,
    pub max_concurrency: Option<i32>,
    pub rate_limit_per_sec: Option<f64>,
    pub rate_limit_burst: i32,
    pub retry: Option<RetrySpec>,
    pub circuit_breaker: Option<BreakerSpec>,
    /// Every call waits for a person's approval first.
    pub requires_approval: bool,
    /// `sync` or `async`.
    pub mode: String,
    /// Call headers, values literal or `${secret.NAME}`.
    pub headers: std::collections::BTreeMap<String, String>,
    /// The tenant whose plans may name it.
    pub tenant: String,
    /// Told when a call in flight is cancelled.
    pub cancel_url: Option<String>,
    /// How a 2xx answer's body says the call failed.
    pub failure_when: Vec<crate::domain::envelope::FailureRule>,
}

/// A tool is visible to a tenant when it is the tenant's, or built in (every tenant's).
const VISIBLE: &str = "($1::text IS NULL OR tenant = $1 OR kind = 'builtin')";

impl Store {
    /// The names in `ids` that are not tools `tenant` may use (none: any tenant's), sorted.
    pub async fn unknown_tools(
        &self,
        tenant: Option<&str>,
        ids: &std::collections::HashSet<String>,
    ) -> Result<Vec<String>> {
        let ids: Vec<&String> = ids.iter().collect();
        let known: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT id FROM tools WHERE {VISIBLE} AND id = ANY($2)"
        )))
        .bind(tenant)
        .bind(&ids)
        .fetch_all(&self.pool)
        .await?;
        let mut unknown: Vec<String> = ids
            .into_iter()
            .filter(|i| !known.contains(i))
            .cloned()
            .collect();
        unknown.sort();
        Ok(unknown)
    }

    /// Register an HTTP tool. An existing id is a conflict; alternatives must name known tools.
    pub async fn create_tool(&self, t: &NewTool) -> Result<ToolDef> {
        in_tx!(self.pool, |tx| {
            let known: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT id FROM tools WHERE {VISIBLE} AND id = ANY($2)"
            )))
            .bind(&t.tenant)
            .bind(&t.alternatives)
            .fetch_all(&mut **tx)
            .await?;
            if let Some(missing) = t.alternatives.iter().find(|a| !known.contains(a)) {
                return Err(StoreError::Rejected(format!(
                    "alternative tool {missing:?} is not registered"
                )));
            }
            let row: Option<ToolDef> = sqlx::query_as(sql!("tool/create"))
                .bind(&t.id)
                .bind(&t.name)
                .bind(&t.description)
                .bind(&t.endpoint)
                .bind(t.timeout_ms)
                .bind(&t.input_schema)
                .bind(&t.output_params)
                .bind(&t.alternatives)
                .bind(&t.tags)
                .bind(t.max_concurrency)
                .bind(t.rate_limit_per_sec)
                .bind(t.rate_limit_burst)
                .bind(&t.output_schema)
                .bind(t.retry.map(Json))
                .bind(t.circuit_breaker.map(Json))
                .bind(t.requires_approval)
                .bind(&t.mode)
                .bind(Json(&t.headers))
                .bind(&t.tenant)
                .bind(&t.cancel_url)
                .bind(Json(&t.failure_when))
                .fetch_optional(&mut **tx)
                .await?;
            let row =
                row.ok_or_else(|| StoreError::Conflict(format!("tool {:?} already exists", t.id)))?;
            Ok(row)
        })
    }

    /// The tools `tenant` may use (none: every tool) in id order, after `after` (keyset), at
    /// most `limit`.
    pub async fn list_tools(
        &self,
        tenant: Option<&str>,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<ToolDef>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT * FROM tools WHERE {VISIBLE} AND ($2::text IS NULL OR id > $2)
             ORDER BY id LIMIT $3"
        )))
        .bind(tenant)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The registry's version and every tool, read in one statement (a worker's tool cache).
    pub async fn tool_registry(&self) -> Result<(i64, Vec<ToolDef>)> {
        use sqlx::{FromRow, Row};
        let rows = sqlx::query(
            "SELECT t.*, (SELECT version FROM tool_registry) AS registry_version,
                    coalesce(c.open_until IS NOT NULL OR c.held_until IS NOT NULL, false) AS gated
             FROM tools t LEFT JOIN tool_circuits c ON c.tool_id = t.id ORDER BY t.id",
        )
        .fetch_all(&self.pool)
        .await?;
        let version = match rows.first() {
            Some(r) => r.try_get("registry_version")?,
            None => {
                sqlx::query_scalar("SELECT version FROM tool_registry")
                    .fetch_one(&self.pool)
                    .await?
            }
        };
        let tools = rows
            .iter()
            .map(ToolDef::from_row)
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok((version, tools))
    }

    pub async fn get_tool(&self, id: &str) -> Result<ToolDef> {
        sqlx::query_as("SELECT * FROM tools WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("tool {id:?}")))
    }

    /// Pause (`true`) or resume a tool: while paused, the claim starts none of its steps (they
    /// stay queued: no attempt, no retry spent); running calls finish. Resuming wakes the
    /// workers.
    pub async fn set_tool_paused(&self, id: &str, paused: bool) -> Result<ToolDef> {
        in_tx!(self.pool, |tx| {
            let row: Option<ToolDef> = sqlx::query_as(sql!("tool/pause"))
                .bind(id)
                .bind(paused)
                .fetch_optional(&mut **tx)
                .await?;
            let row = row.ok_or_else(|| StoreError::NotFound(format!("tool {id:?}")))?;
            if !paused {
                tx.wake_steps();
            }
            Ok(row)
        })
    }

    /// Delete an HTTP tool. Built-ins cannot be deleted.
    pub async fn delete_tool(&self, id: &str) -> Result<()> {
        let kind: Option<String> = sqlx::query_scalar(sql!("tool/delete"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        if kind.is_some() {
            return Ok(());
        }
        let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM tools WHERE id = $1)")
            .bind(id)
            .fetch_one(&self.pool)
            .await?;
        if exists {
            Err(StoreError::Conflict(format!(
                "tool {id:?} is built in and cannot be deleted"
            )))
        } else {
            Err(StoreError::NotFound(format!("tool {id:?}")))
        }
    }
}
