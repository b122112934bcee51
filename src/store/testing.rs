//! Statements tests and operators use to inspect or provoke states (kept here so that no SQL
//! lives outside the store).

use std::collections::BTreeMap;

use uuid::Uuid;

use super::{Result, Store, StoreError};

impl Store {
    /// Move every task's end (or, for one not ended, its last change) `secs` into the past, as
    /// if it had happened that long ago (retention tests). Returns tasks changed.
    pub async fn age_tasks(&self, secs: f64) -> Result<u64> {
        Ok(sqlx::query(sql!("testing/age_finished"))
            .bind(secs)
            .execute(&self.pool)
            .await?
            .rows_affected())
    }

    /// Rows that belong to a task, over every table that holds task rows.
    pub async fn rows_of_task(&self, id: Uuid) -> Result<i64> {
        Ok(sqlx::query_scalar(sql!("testing/rows_of_task"))
            .bind(id)
            .fetch_one(&self.pool)
            .await?)
    }

    /// Row count of every Trellis table.
    pub async fn row_counts(&self) -> Result<BTreeMap<String, i64>> {
        let rows: Vec<(String, i64)> = sqlx::query_as(sql!("testing/row_counts"))
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().collect())
    }

    /// Bytes the claim queue's partitions and their indexes take on disk: what a claim may
    /// have to walk (live entries, and dead ones VACUUM or the ring has not freed yet).
    pub async fn claim_queue_bytes(&self) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::bigint FROM pg_inherits
             WHERE inhparent = 'claim_queue'::regclass",
        )
        .fetch_one(&self.pool)
        .await?)
    }

    /// Make a step's lease look expired (as if its worker stopped heartbeating long ago).
    pub async fn expire_lease(&self, step_id: Uuid) -> Result<u64> {
        let sql = sql!("testing/expire_step_leases");
        self.update_for(sql, step_id).await
    }

    /// An `UPDATE` with one id parameter; rows it changed.
    async fn update_for(&self, sql: &'static str, id: Uuid) -> Result<u64> {
        Ok(sqlx::query(sql)
            .bind(id)
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

    /// Steps on which `steps.status` and `running_steps` disagree (0 at any instant: the
    /// triggers that keep the index change it in the status change's own transaction).
    pub async fn running_index_disagreements(&self) -> Result<i64> {
        Ok(
            sqlx::query_scalar(sql!("testing/running_index_disagreements"))
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// Where the claim queue differs from its definition (`queue/sync`'s, recomputed for every
    /// task): `(task, step, "missing" | "extra")`. Empty at any instant, since every move that
    /// changes what a task may have queued re-syncs it in the move's transaction.
    pub async fn claim_queue_disagreements(&self) -> Result<Vec<(Uuid, Uuid, String)>> {
        Ok(sqlx::query_as(sql!("testing/claim_queue_disagreements"))
            .fetch_all(&self.pool)
            .await?)
    }

    /// Steps in a status, over all tasks.
    pub async fn count_steps(&self, status: &str) -> Result<i64> {
        self.count_where("SELECT count(*) FROM steps WHERE status = $1", status)
            .await
    }

    /// Tasks in a status.
    pub async fn count_tasks(&self, status: &str) -> Result<i64> {
        self.count_where("SELECT count(*) FROM tasks WHERE status = $1", status)
            .await
    }

    /// (attempts rows, succeeded attempts, steps whose succeeded attempts ≠ 1, max lease token).
    pub async fn attempt_audit(&self) -> Result<(i64, i64, i64, i64)> {
        Ok(sqlx::query_as(sql!("testing/fingerprint_counts"))
            .fetch_one(&self.pool)
            .await?)
    }
}

fn plain_identifier(name: &str) -> Result<()> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return Err(StoreError::Rejected(format!("bad database name {name:?}")));
    }
    Ok(())
}

impl Store {
    /// `CREATE DATABASE name` (test harness). The name must be a plain identifier.
    pub async fn create_database(&self, name: &str) -> Result<()> {
        plain_identifier(name)?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// `DROP DATABASE IF EXISTS name WITH (FORCE)` (test harness): sessions still connected
    /// to it (a worker process, a pool a test leaked) are ended first.
    pub async fn drop_database(&self, name: &str) -> Result<()> {
        plain_identifier(name)?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

impl Store {
    /// Attempts recorded with this error category (e.g. `worker_lost`).
    pub async fn count_attempts_in_category(&self, category: &str) -> Result<i64> {
        let sql = "SELECT count(*) FROM attempts WHERE error_category = $1";
        self.count_where(sql, category).await
    }

    /// The write context's savepoint, as a bulk action uses it: in one transaction, a
    /// `step_released` event (reason `kept`) for the task, then a savepoint, another one
    /// (reason `dropped`) with a touch and a wake-up, and the savepoint rolled back.
    pub async fn chores_across_a_rolled_back_savepoint(&self, task_id: Uuid) -> Result<()> {
        use crate::domain::event::{self, Event};
        let released = |reason: &str| {
            Event::StepReleased(event::StepReleased {
                step_key: "s".into(),
                worker_id: Uuid::nil(),
                reason: reason.into(),
            })
        };
        in_tx!(self.pool, |tx| {
            super::lock_task(tx, task_id).await?;
            tx.event(task_id, released("kept"));
            let mark = tx.savepoint().await?;
            tx.event(task_id, released("dropped"));
            tx.touch(&[task_id]);
            tx.wake_steps();
            tx.rollback_to(mark).await?;
            Ok(())
        })
    }

    /// Events of a kind, over all tasks.
    pub async fn count_events(&self, kind: &str) -> Result<i64> {
        self.count_where("SELECT count(*) FROM events WHERE kind = $1", kind)
            .await
    }

    /// A `count(*)` with one text parameter.
    async fn count_where(&self, sql: &'static str, value: &str) -> Result<i64> {
        Ok(sqlx::query_scalar(sql)
            .bind(value)
            .fetch_one(&self.pool)
            .await?)
    }
}

impl Store {
    /// Make every running decision of a task look abandoned (its worker died).
    pub async fn expire_decision_leases(&self, task_id: Uuid) -> Result<u64> {
        let sql = sql!("testing/expire_decision_leases");
        self.update_for(sql, task_id).await
    }

    /// Decisions of a task by status.
    pub async fn decision_counts(&self, task_id: Uuid) -> Result<BTreeMap<String, i64>> {
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT status, count(*) FROM decisions WHERE task_id = $1 GROUP BY status",
        )
        .bind(task_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().collect())
    }
}

/// The numbers a recovery must reach whatever happened to its workers (see tests/it/durability.rs).
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryFingerprint {
    pub status: String,
    pub plan_version: i32,
    pub round: i32,
    pub task_replan_count: i32,
    pub single_step_repair_count: i32,
    pub consecutive_failures: i32,
    /// Failed attempts, not counting those lost with a worker.
    pub tool_failures: i64,
    pub reflections: i64,
    pub recoveries: Vec<(i32, String)>,
    /// (step key, plan version, retry_count, status) of every step row.
    pub steps: Vec<(String, i32, i32, String)>,
}

impl Store {
    pub async fn recovery_fingerprint(&self, task_id: Uuid) -> Result<RecoveryFingerprint> {
        let t = self.get_task(task_id).await?;
        let tool_failures: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM attempts WHERE task_id = $1 AND status = 'failed'
               AND error_category IS DISTINCT FROM 'worker_lost'",
        )
        .bind(task_id)
        .fetch_one(&self.pool)
        .await?;
        let reflections: i64 =
            sqlx::query_scalar("SELECT count(*) FROM reflections WHERE task_id = $1")
                .bind(task_id)
                .fetch_one(&self.pool)
                .await?;
        let recoveries: Vec<(i32, String)> =
            sqlx::query_as("SELECT tier, action FROM recoveries WHERE task_id = $1 ORDER BY id")
                .bind(task_id)
                .fetch_all(&self.pool)
                .await?;
        let steps: Vec<(String, i32, i32, String)> = sqlx::query_as(
            "SELECT step_key, plan_version, retry_count, status FROM steps WHERE task_id = $1
             ORDER BY plan_version, position, created_at",
        )
        .bind(task_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(RecoveryFingerprint {
            status: t.status.to_string(),
            plan_version: t.plan_version,
            round: t.round,
            task_replan_count: t.task_replan_count,
            single_step_repair_count: t.single_step_repair_count,
            consecutive_failures: t.consecutive_failures,
            tool_failures,
            reflections,
            recoveries,
            steps,
        })
    }
}

/// History, as a long-running deployment holds it (the benchmark's scenario 6, the metrics
/// tests).
impl Store {
    /// Preload finished history: `tasks` succeeded tasks of `steps_per_task` echo steps each,
    /// with their plans, attempts and events, as a long-running deployment would hold.
    pub async fn load_history(&self, tasks: i64, steps_per_task: i64) -> Result<()> {
        in_tx!(self.pool, |tx| {
            sqlx::query(sql!("testing/history_tasks"))
                .bind(tasks)
                .execute(&mut **tx)
                .await?;
            sqlx::query(sql!("testing/history_plans"))
                .execute(&mut **tx)
                .await?;
            sqlx::query(sql!("testing/history_steps"))
                .bind(steps_per_task)
                .execute(&mut **tx)
                .await?;
            sqlx::query(sql!("testing/history_attempts"))
                .execute(&mut **tx)
                .await?;
            sqlx::query(sql!("testing/history_events"))
                .execute(&mut **tx)
                .await?;
            Ok(())
        })?;
        sqlx::query("ANALYZE").execute(self.pool()).await?;
        Ok(())
    }
}

/// The generic plans of hot statements as a worker's session makes them: prepared and planned
/// once (`probe`), then shown (`explain`) after the tables changed, without re-planning (as a
/// long-lived hot connection keeps them).
pub struct PlanProbe {
    conn: sqlx::pool::PoolConnection<sqlx::Postgres>,
}

impl std::fmt::Debug for PlanProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlanProbe")
    }
}

impl Store {
    /// Prepare the hot statements on a connection of this pool with the hot sessions' planner
    /// settings, and make their generic plans now.
    pub async fn plan_probe(&self) -> Result<PlanProbe> {
        let mut conn = self.pool.pool().acquire().await?;
        for (k, v) in super::HOT_SETTINGS {
            sqlx::query(sqlx::AssertSqlSafe(format!("SET {k} = {v}")))
                .execute(&mut *conn)
                .await?;
        }
        for (name, sql, args) in super::step_queue::claim::probe_statements() {
            sqlx::query(sqlx::AssertSqlSafe(format!("PREPARE {name} AS {sql}")))
                .execute(&mut *conn)
                .await?;
            sqlx::query(sqlx::AssertSqlSafe(format!("EXPLAIN EXECUTE {name}{args}")))
                .execute(&mut *conn)
                .await?;
        }
        Ok(PlanProbe { conn })
    }
}

impl PlanProbe {
    /// (statement, its cached plan) for each probed statement.
    pub async fn explain(&mut self) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for (name, _, args) in super::step_queue::claim::probe_statements() {
            let lines: Vec<String> =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("EXPLAIN EXECUTE {name}{args}")))
                    .fetch_all(&mut *self.conn)
                    .await?;
            out.push((name.to_string(), lines.join("\n")));
        }
        Ok(out)
    }
}

impl Store {
    /// The most attempts (of `tenant`'s tasks, or of every task) that ran at once.
    pub async fn peak_attempts(&self, tenant: Option<&str>) -> Result<i64> {
        Ok(sqlx::query_scalar(sql!("testing/peak_attempts"))
            .bind(tenant)
            .fetch_one(&self.pool)
            .await?)
    }
}

impl Store {
    /// What this store's own statements see of the setting `name`: one run on the pool, one in
    /// a transaction, one in a hot transaction (the settings a pooler mode sets where it sets
    /// them: at connect, after connecting, or with each `BEGIN`).
    pub async fn setting_seen(&self, name: &str) -> Result<[String; 3]> {
        const SHOW: &str = "SELECT current_setting($1)";
        let on_pool: String = sqlx::query_scalar(SHOW)
            .bind(name)
            .fetch_one(&self.pool)
            .await?;
        let in_tx: String = in_tx!(self.pool, |tx| Ok(sqlx::query_scalar(SHOW)
            .bind(name)
            .fetch_one(&mut **tx)
            .await?))?;
        let hot: String = in_tx!(hot self, |tx| Ok(sqlx::query_scalar(SHOW)
            .bind(name)
            .fetch_one(&mut **tx)
            .await?))?;
        Ok([on_pool, in_tx, hot])
    }
}
