//! Read models: tasks, steps, plans, attempts, events, reflections, evaluations, LLM usage.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::Page;
use super::{Result, Store, StoreError};
use crate::domain::records::{AttemptRow, StepRow, TaskRow};

/// A row type a read decodes into (the caller's view: `sqlx::FromRow` by column name).
pub trait Row: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin {}

impl<T> Row for T where T: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin {}
use crate::domain::status::{StepStatus, TaskStatus};

/// `GET /api/v1/tasks` filters.
#[derive(Debug, Clone, Default)]
pub struct ListTasks {
    pub status: Option<TaskStatus>,
    pub limit: i64,
    /// Only tasks created before this one (cursor) ...
    pub before_task: Option<Uuid>,
    /// ... or before this instant.
    pub before_time: Option<DateTime<Utc>>,
    /// Only tasks created at or after this instant.
    pub since: Option<DateTime<Utc>>,
    /// Only tasks whose description contains this text (any case).
    pub text: Option<String>,
    /// Only this tenant's tasks (none: every tenant's).
    pub tenant: Option<String>,
}

/// A `LIKE` pattern matching `text` anywhere (its `%`, `_` and `\` taken literally).
pub(crate) fn contains_pattern(text: &str) -> String {
    let mut p = String::with_capacity(text.len() + 2);
    p.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

impl Store {
    /// The tenant of task `id`.
    pub async fn task_tenant(&self, id: Uuid) -> Result<String> {
        sqlx::query_scalar("SELECT tenant FROM tasks WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("task {id}")))
    }

    pub async fn get_task(&self, id: Uuid) -> Result<TaskRow> {
        sqlx::query_as("SELECT * FROM tasks WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("task {id}")))
    }

    /// Step counts of one plan version by status.
    pub async fn step_counts(
        &self,
        task_id: Uuid,
        plan_version: i32,
    ) -> Result<BTreeMap<StepStatus, i64>> {
        let rows: Vec<(StepStatus, i64)> = sqlx::query_as(
            "SELECT status, count(*) FROM steps WHERE task_id = $1 AND plan_version = $2 GROUP BY status",
        )
        .bind(task_id)
        .bind(plan_version)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().collect())
    }

    /// Steps of a task, all plan versions, in plan order.
    pub async fn list_steps(&self, task_id: Uuid) -> Result<Vec<StepRow>> {
        Ok(sqlx::query_as(sql!("read/steps_of_task"))
            .bind(task_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Plan versions, oldest first (columns `version, origin, reasoning, estimated_duration,
    /// steps, created_at`).
    pub async fn list_plans<R: Row>(&self, task_id: Uuid) -> Result<Vec<R>> {
        Ok(sqlx::query_as(
            "SELECT version, origin, reasoning, estimated_duration, steps, created_at
             FROM plans WHERE task_id = $1 ORDER BY version",
        )
        .bind(task_id)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn list_attempts(&self, task_id: Uuid, page: Page) -> Result<Vec<AttemptRow>> {
        Ok(sqlx::query_as(
            "SELECT step_id, step_key, plan_version, attempt, tool, parameters, status, output, error,
                    error_category, worker_id, started_at, finished_at, duration_ms, idempotency_key
             FROM attempts WHERE task_id = $1 ORDER BY id LIMIT $2 OFFSET $3",
        )
        .bind(task_id)
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Events after `after`, in order (columns `seq, kind, at, payload`).
    pub async fn list_events<R: Row>(
        &self,
        task_id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<R>> {
        Ok(sqlx::query_as(
            "SELECT seq, kind, at, payload FROM events WHERE task_id = $1 AND seq > $2
             ORDER BY seq LIMIT $3",
        )
        .bind(task_id)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Newest first (columns `id, status, description, created_at, updated_at`). The statement
    /// holds only the filters given, so each combination is its own prepared statement with
    /// its own plan: an `$n IS NULL OR …` form would let PostgreSQL settle on one generic plan
    /// for every combination, which walks the wrong index once a text search has run.
    pub async fn list_tasks<R: Row>(&self, q: &ListTasks) -> Result<Vec<R>> {
        let mut sql = sqlx::QueryBuilder::new(
            "SELECT id, status, description, created_at, updated_at FROM tasks WHERE true",
        );
        if let Some(s) = q.status {
            sql.push(" AND status = ").push_bind(s);
        }
        match q.tenant.as_deref() {
            None => {}
            Some(t) if crate::domain::tenant::check(t).is_ok() => {
                // a literal (a checked name: no quotes), so that the planner may use the
                // partial index of the tenants other than `default`
                sql.push(format_args!(" AND tenant = '{t}'"));
            }
            Some(t) => {
                sql.push(" AND tenant = ").push_bind(t.to_owned());
            }
        }
        if let Some(id) = q.before_task {
            sql.push(
                " AND (created_at, id) < (SELECT c.created_at, c.id FROM tasks c WHERE c.id = ",
            )
            .push_bind(id);
            // another tenant's task is no cursor for this one: it reads as unknown (no page)
            if let Some(t) = q.tenant.as_deref() {
                sql.push(" AND c.tenant = ").push_bind(t.to_owned());
            }
            sql.push(")");
        }
        if let Some(t) = q.before_time {
            sql.push(" AND created_at < ").push_bind(t);
        }
        if let Some(t) = q.since {
            sql.push(" AND created_at >= ").push_bind(t);
        }
        if let Some(text) = &q.text {
            sql.push(" AND description ILIKE ")
                .push_bind(contains_pattern(text));
        }
        sql.push(" ORDER BY created_at DESC, id DESC LIMIT ")
            .push_bind(q.limit);
        Ok(sql.build_query_as().fetch_all(&self.pool).await?)
    }

    /// Task and step counts by status, every status present (zero when none).
    /// Of `tenant`'s tasks (none: every tenant's).
    pub async fn stats(
        &self,
        tenant: Option<&str>,
    ) -> Result<(BTreeMap<String, i64>, BTreeMap<String, i64>)> {
        let tasks: Vec<(String, i64)> = sqlx::query_as(
            "SELECT status, count(*) FROM tasks WHERE $1::text IS NULL OR tenant = $1
             GROUP BY status",
        )
        .bind(tenant)
        .fetch_all(&self.pool)
        .await?;
        let steps: Vec<(String, i64)> = match tenant {
            None => {
                sqlx::query_as("SELECT status, count(*) FROM steps GROUP BY status")
                    .fetch_all(&self.pool)
                    .await?
            }
            Some(t) => {
                sqlx::query_as(
                    "SELECT s.status, count(*) FROM steps s JOIN tasks t ON t.id = s.task_id
                     WHERE t.tenant = $1 GROUP BY s.status",
                )
                .bind(t)
                .fetch_all(&self.pool)
                .await?
            }
        };
        let mut t: BTreeMap<String, i64> =
            TaskStatus::ALL.iter().map(|s| (s.to_string(), 0)).collect();
        t.extend(tasks);
        let mut s: BTreeMap<String, i64> =
            StepStatus::ALL.iter().map(|s| (s.to_string(), 0)).collect();
        s.extend(steps);
        Ok((t, s))
    }

    /// Known tool ids (for plan validation).
    /// The ids of the tools `tenant`'s plans may name (its own and the built-ins).
    pub async fn tool_ids(&self, tenant: &str) -> Result<Vec<String>> {
        Ok(
            sqlx::query_scalar("SELECT id FROM tools WHERE tenant = $1 OR kind = 'builtin'")
                .bind(tenant)
                .fetch_all(&self.pool)
                .await?,
        )
    }

    /// Live (not superseded) steps of one plan version, in plan order.
    pub async fn live_steps(&self, task_id: Uuid, version: i32) -> Result<Vec<StepRow>> {
        super::plans::live_steps(&self.pool, task_id, version).await
    }

    /// Reflections, oldest first (columns `level, step_key, plan_version, round, is_fallback,
    /// body, raw, created_at`).
    pub async fn list_reflections<R: Row>(&self, task_id: Uuid, page: Page) -> Result<Vec<R>> {
        Ok(sqlx::query_as(
            "SELECT level, step_key, plan_version, round, is_fallback, body, raw, created_at
             FROM reflections WHERE task_id = $1 ORDER BY id LIMIT $2 OFFSET $3",
        )
        .bind(task_id)
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Evaluations, oldest first (the columns of `evaluations` but `id`, `task_id`, `raw`).
    pub async fn list_evaluations<R: Row>(&self, task_id: Uuid, page: Page) -> Result<Vec<R>> {
        Ok(sqlx::query_as(
            "SELECT round, plan_version, overall_score, completeness, correctness, efficiency,
                    reliability, is_successful, successes, failures, improvement_suggestions, created_at
             FROM evaluations WHERE task_id = $1 ORDER BY id LIMIT $2 OFFSET $3",
        )
        .bind(task_id)
        .bind(page.limit)
        .bind(page.offset)
        .fetch_all(&self.pool)
        .await?)
    }

    /// LLM calls and tokens spent on a task (zeros when none; columns `calls, failed_calls,
    /// requests, prompt_tokens, completion_tokens, total_tokens`).
    pub async fn llm_usage<R: Row>(&self, task_id: Uuid) -> Result<R> {
        Ok(sqlx::query_as(sql!("read/llm_usage"))
            .bind(task_id)
            .fetch_one(&self.pool)
            .await?)
    }

    /// What `/metrics` reads from the database, in one statement whose cost follows the live
    /// work, not the history: unfinished tasks by status (through the status index), ready and
    /// running steps by tool (through their partial indexes) with the oldest ready step's wait,
    /// and the live workers with the steps they hold.
    pub async fn metrics_gauges(&self, tenant: Option<&str>) -> Result<Vec<GaugeRow>> {
        gauges(&self.pool, tenant).await
    }

    /// The last `minutes` minutes' work and the live work, as the dashboard's overview shows
    /// them, all read in one snapshot (a read-only repeatable-read transaction), so the parts
    /// agree with each other: attempts finished per minute, per tool, the gauges of
    /// [`Store::metrics_gauges`], and the tasks submitted in the window by status (each count
    /// stopping at `cap` + 1, as in [`Store::recent_task_counts`]). The window is
    /// `last_minutes!`: no index on `finished_at`, so the hot path pays nothing for it.
    /// `tenant`: one tenant's work (none: every tenant's).
    pub async fn activity(&self, minutes: i32, cap: i64, tenant: Option<&str>) -> Result<Activity> {
        in_tx!(self.pool, |tx| {
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .execute(&mut **tx)
                .await?;
            let per_minute = sqlx::query_as(sql!("read/attempts_per_minute"))
                .bind(minutes)
                .bind(tenant)
                .fetch_all(&mut **tx)
                .await?;
            let tools = sqlx::query_as(sql!("read/attempts_per_tool"))
                .bind(minutes)
                .bind(tenant)
                .fetch_all(&mut **tx)
                .await?;
            let by_key = sqlx::query_as(sql!("read/queue_by_key"))
                .bind(20_i64)
                .bind(tenant)
                .fetch_all(&mut **tx)
                .await?;
            let by_tenant = sqlx::query_as(sql!("read/queue_by_tenant"))
                .bind(20_i64)
                .bind(tenant)
                .fetch_all(&mut **tx)
                .await?;
            Ok(Activity {
                minutes: per_minute,
                tools,
                by_key,
                by_tenant,
                gauges: gauges(&mut **tx, tenant).await?,
                recent_tasks: recent_counts(&mut **tx, minutes, cap, tenant).await?,
            })
        })
    }

    /// Tasks submitted in the last `minutes` minutes (database clock) by their status now, every
    /// status present; each count stops at `cap` + 1, so the cost is at most `cap` + 1 entries
    /// of the status index per status, whatever the history or the hour's volume.
    pub async fn recent_task_counts(
        &self,
        minutes: i32,
        cap: i64,
    ) -> Result<BTreeMap<String, i64>> {
        recent_counts(&self.pool, minutes, cap, None).await
    }

    /// Created → finished (or → now, database clock, while unfinished), in milliseconds.
    pub async fn task_duration_ms(&self, id: Uuid) -> Result<i64> {
        sqlx::query_scalar(
            "SELECT (extract(epoch FROM (coalesce(finished_at, now()) - created_at)) * 1000)::bigint
             FROM tasks WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("task {id}")))
    }
}

/// See [`Store::metrics_gauges`].
async fn gauges(db: impl sqlx::PgExecutor<'_>, tenant: Option<&str>) -> Result<Vec<GaugeRow>> {
    Ok(sqlx::query_as(sql!("read/gauges"))
        .bind(tenant)
        .fetch_all(db)
        .await?)
}

/// See [`Store::recent_task_counts`].
async fn recent_counts(
    db: impl sqlx::PgExecutor<'_>,
    minutes: i32,
    cap: i64,
    tenant: Option<&str>,
) -> Result<BTreeMap<String, i64>> {
    // a branch per status with the status written in, so each is planned with its own
    // selectivity; the ORDER BY keeps every branch on the status index (a LIMIT over a
    // sequential scan would read the whole history when the recent rows are at its end)
    let rows: Vec<(String, i64)> = sqlx::query_as(sql!("read/recent_task_counts"))
        .bind(minutes)
        .bind(cap)
        .bind(tenant)
        .fetch_all(db)
        .await?;
    Ok(rows.into_iter().collect())
}

/// What [`Store::activity`] read, in one snapshot.
#[derive(Debug, Clone)]
pub struct Activity {
    pub minutes: Vec<ActivityRow>,
    pub tools: Vec<ToolActivityRow>,
    /// Ready and running steps per concurrency key: the top 20, then `others`.
    pub by_key: Vec<(String, i64, i64)>,
    /// Ready and running steps per tenant: the top 20, then `others`.
    pub by_tenant: Vec<(String, i64, i64)>,
    pub gauges: Vec<GaugeRow>,
    pub recent_tasks: BTreeMap<String, i64>,
}

/// One minute of [`Store::activity`].
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ActivityRow {
    pub minute: DateTime<Utc>,
    pub succeeded: i64,
    pub failed: i64,
}

/// One tool of [`Store::activity`].
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ToolActivityRow {
    pub tool: String,
    pub attempts: i64,
    pub failed: i64,
    pub median_ms: f64,
    pub mean_ms: f64,
}

/// One row of [`Store::metrics_gauges`]: `family` is `tasks` (by `status`), `steps` (by
/// `status` and `tool`; `oldest_secs` is how long the oldest ready step has waited),
/// `workers` (`n` live workers, `oldest_secs` the steps and decisions they hold), `db` (the
/// oldest open transaction) or `circuits` (`status` the circuit's state, `n` its outages in a
/// row, per `tool`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct GaugeRow {
    pub family: String,
    pub status: String,
    pub tool: String,
    pub n: i64,
    pub oldest_secs: f64,
}
