//! Statements tests and operators use to inspect or provoke states (kept here so that no SQL
//! lives outside the store).

use std::collections::BTreeMap;

use uuid::Uuid;

use super::{Result, Store};

pub const TABLES: [&str; 7] = [
    "tasks", "plans", "steps", "attempts", "events", "tools", "workers",
];

impl Store {
    /// Row count of every Trellis table.
    pub async fn row_counts(&self) -> Result<BTreeMap<String, i64>> {
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT 'tasks', count(*) FROM tasks UNION ALL SELECT 'plans', count(*) FROM plans
             UNION ALL SELECT 'steps', count(*) FROM steps UNION ALL SELECT 'attempts', count(*) FROM attempts
             UNION ALL SELECT 'events', count(*) FROM events UNION ALL SELECT 'tools', count(*) FROM tools
             UNION ALL SELECT 'workers', count(*) FROM workers",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().collect())
    }

    /// Make a step's lease look expired (as if its worker stopped heartbeating long ago).
    pub async fn expire_lease(&self, step_id: Uuid) -> Result<u64> {
        Ok(sqlx::query(
            "UPDATE steps SET lease_expires_at = now() - interval '1 second'
             WHERE id = $1 AND status = 'running'",
        )
        .bind(step_id)
        .execute(&self.pool)
        .await?
        .rows_affected())
    }

    /// Steps currently running on one worker.
    pub async fn running_on(&self, worker_id: Uuid) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM steps WHERE lease_owner = $1 AND status = 'running'",
        )
        .bind(worker_id)
        .fetch_one(&self.pool)
        .await?)
    }

    /// Steps in a status, over all tasks.
    pub async fn count_steps(&self, status: &str) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT count(*) FROM steps WHERE status = $1")
                .bind(status)
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// Tasks in a status.
    pub async fn count_tasks(&self, status: &str) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT count(*) FROM tasks WHERE status = $1")
                .bind(status)
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// (attempts rows, succeeded attempts, steps whose succeeded attempts ≠ 1, max lease token).
    pub async fn attempt_audit(&self) -> Result<(i64, i64, i64, i64)> {
        Ok(sqlx::query_as(
            "SELECT (SELECT count(*) FROM attempts),
                    (SELECT count(*) FROM attempts WHERE status = 'succeeded'),
                    (SELECT count(*) FROM steps s WHERE (SELECT count(*) FROM attempts a
                        WHERE a.step_id = s.id AND a.status = 'succeeded') <> 1),
                    (SELECT coalesce(max(lease_token), 0) FROM steps)",
        )
        .fetch_one(&self.pool)
        .await?)
    }
}

impl Store {
    /// `CREATE DATABASE name` (test harness). The name must be a plain identifier.
    pub async fn create_database(&self, name: &str) -> Result<()> {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(super::StoreError::Invalid(format!(
                "bad database name {name:?}"
            )));
        }
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

impl Store {
    /// Attempts recorded with this error category (e.g. `worker_lost`).
    pub async fn count_attempts_in_category(&self, category: &str) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT count(*) FROM attempts WHERE error_category = $1")
                .bind(category)
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// Events of a kind, over all tasks.
    pub async fn count_events(&self, kind: &str) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT count(*) FROM events WHERE kind = $1")
                .bind(kind)
                .fetch_one(&self.pool)
                .await?,
        )
    }
}
