//! MCP servers and the tools imported from them (kind `mcp`, ids `<server>.<tool>`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Result, Store, StoreError};

/// A registered MCP server.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct McpServerRow {
    pub id: String,
    pub endpoint: String,
    pub headers: sqlx::types::Json<std::collections::BTreeMap<String, String>>,
    pub created_at: DateTime<Utc>,
    pub refreshed_at: DateTime<Utc>,
    /// Its tools are this tenant's.
    #[sqlx(default)]
    pub tenant: String,
}

/// A tool as its server lists it.
#[derive(Debug, Clone)]
pub struct ListedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
}

impl Store {
    /// Register (or update) a server with the tools it lists now, in one transaction: new
    /// tools inserted, changed ones updated, ones it no longer lists removed. A tool id already
    /// taken by another kind of tool is a conflict.
    pub async fn import_mcp_server(
        &self,
        id: &str,
        endpoint: &str,
        headers: &std::collections::BTreeMap<String, String>,
        tools: &[ListedTool],
        tenant: &str,
    ) -> Result<McpServerRow> {
        in_tx!(self.pool, |tx| {
            let row: McpServerRow = sqlx::query_as(sql!("mcp/upsert_server"))
                .bind(id)
                .bind(endpoint)
                .bind(sqlx::types::Json(headers))
                .bind(tenant)
                .fetch_one(&mut **tx)
                .await?;
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            let descriptions: Vec<&str> = tools.iter().map(|t| t.description.as_str()).collect();
            let inputs: Vec<&Value> = tools.iter().map(|t| &t.input_schema).collect();
            let outputs: Vec<Option<&Value>> =
                tools.iter().map(|t| t.output_schema.as_ref()).collect();
            let n = sqlx::query(sql!("mcp/upsert_tools"))
                .bind(id)
                .bind(endpoint)
                .bind(sqlx::types::Json(headers))
                .bind(&names)
                .bind(&descriptions)
                .bind(&inputs)
                .bind(&outputs)
                .execute(&mut **tx)
                .await?
                .rows_affected();
            if n as usize != tools.len() {
                return Err(StoreError::Conflict(format!(
                    "a tool id {id}.<name> is already taken by a tool of another source"
                )));
            }
            sqlx::query(sql!("mcp/drop_unlisted"))
                .bind(id)
                .bind(&names)
                .execute(&mut **tx)
                .await?;
            Ok(row)
        })
    }

    pub async fn get_mcp_server(&self, id: &str) -> Result<McpServerRow> {
        sqlx::query_as("SELECT * FROM mcp_servers WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("MCP server {id}")))
    }

    /// The ids of the tools imported from one server.
    pub async fn mcp_server_tools(&self, id: &str) -> Result<Vec<String>> {
        Ok(
            sqlx::query_scalar("SELECT id FROM tools WHERE mcp_server = $1 ORDER BY id")
                .bind(id)
                .fetch_all(&self.pool)
                .await?,
        )
    }

    /// Every server, with the ids of the tools imported from it.
    /// `tenant`'s servers (none: every tenant's), with their tools.
    pub async fn list_mcp_servers(
        &self,
        tenant: Option<&str>,
    ) -> Result<Vec<(McpServerRow, Vec<String>)>> {
        let servers: Vec<McpServerRow> = sqlx::query_as(
            "SELECT * FROM mcp_servers WHERE $1::text IS NULL OR tenant = $1 ORDER BY id",
        )
        .bind(tenant)
        .fetch_all(&self.pool)
        .await?;
        let tools: Vec<(String, String)> = sqlx::query_as(
            "SELECT mcp_server, id FROM tools WHERE mcp_server IS NOT NULL ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(servers
            .into_iter()
            .map(|s| {
                let ids = tools
                    .iter()
                    .filter(|(srv, _)| *srv == s.id)
                    .map(|(_, id)| id.clone())
                    .collect();
                (s, ids)
            })
            .collect())
    }

    /// Delete a server and the tools imported from it.
    pub async fn delete_mcp_server(&self, id: &str) -> Result<()> {
        let n = sqlx::query(sql!("mcp/delete_server"))
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("MCP server {id}")));
        }
        Ok(())
    }
}
