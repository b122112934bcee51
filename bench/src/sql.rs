//! Statements the benchmark uses to measure from the database's own clock, to preload
//! history, and to watch the apalis-postgres peer it is compared against. They belong to the
//! benchmark, not to the library: nothing here ships in `trellis`.

use trellis::store::{Result, Store};

/// The benchmark's own statements, over a [`Store`]'s pool.
pub(crate) trait BenchSql {
    async fn start_latencies_ms(&self) -> Result<Vec<f64>>;
    /// Per task (in submission order): its first `from` event's time and its first `to`
    /// event's, in milliseconds since the epoch.
    async fn event_times_ms(&self, from: &str, to: &str) -> Result<Vec<(f64, f64)>>;
    async fn retry_gaps_ms(&self) -> Result<Vec<f64>>;
    async fn task_durations_ms(&self) -> Result<Vec<f64>>;
    async fn count_all_steps(&self) -> Result<i64>;
    async fn apalis_done(&self) -> Result<i64>;
    async fn graphile_left(&self) -> Result<i64>;
    async fn table_writes(&self) -> Result<Vec<TableWrites>>;
    async fn enable_statement_stats(&self) -> Result<()>;
    async fn statement_stats(&self, limit: i64) -> Result<Vec<(i64, f64, String)>>;
    async fn count_unfinished_tasks(&self) -> Result<i64>;
    async fn any_unfinished(&self) -> Result<bool>;
    async fn queued_entries(&self) -> Result<i64>;
    async fn cost_snapshot(&self) -> Result<Cost>;
    async fn load_task_list(&self, tasks: i64) -> Result<()>;
    async fn load_recent_tasks(&self, tasks: i64) -> Result<()>;
    async fn analyze_queue(&self) -> Result<()>;
    async fn drain_span(&self) -> Result<(i64, f64)>;
    async fn workers_alive(&self) -> Result<i64>;
    async fn sessions_on(&self, db: &str) -> Result<i64>;
    async fn fleet_audit(&self) -> Result<(i64, i64, i64)>;
    async fn db_now(&self) -> Result<chrono::DateTime<chrono::Utc>>;
    async fn open_report(&self) -> Result<Report>;
    async fn close_report(&self, r: Report) -> Result<()>;
    async fn phase_figures(
        &self,
        marks: &[chrono::DateTime<chrono::Utc>],
    ) -> Result<Vec<(f64, f64, f64)>>;
    async fn wal_lsn(&self) -> Result<String>;
    async fn data_directory(&self) -> Result<String>;
    async fn relation_of_filenode(&self, filenode: i64) -> Result<Option<String>>;
    async fn delivery_span(
        &self,
    ) -> Result<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>)>;
    async fn task_outcomes(&self) -> Result<Vec<(uuid::Uuid, String, f64)>>;
    async fn attempts_per_task(&self, tool: &str) -> Result<Vec<(uuid::Uuid, i64)>>;
    async fn finished_since(
        &self,
        since: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<(uuid::Uuid, f64, chrono::DateTime<chrono::Utc>)>>;
    async fn sessions_by_name(&self, db: &str) -> Result<Vec<(String, i64)>>;
    async fn soak_sizes(&self) -> Result<Sizes>;
}

/// What the database holds: bytes of tables (with TOAST) and of indexes, dead tuples, and the
/// rows of `tasks`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sizes {
    pub table_bytes: i64,
    pub index_bytes: i64,
    pub dead_tuples: i64,
    pub tasks: i64,
}

/// A report holding a REPEATABLE READ snapshot on a connection of its own.
pub(crate) struct Report {
    conn: sqlx::pool::PoolConnection<sqlx::Postgres>,
}

/// Cumulative counters of the server: statements run in this database (pg_stat_statements),
/// commits in this database (pg_stat_database), WAL bytes written by the cluster (pg_stat_wal).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cost {
    pub statements: i64,
    pub commits: i64,
    pub wal_bytes: i64,
}

/// The head of the task loads' `INSERT … SELECT` (the columns their `SELECT`s fill).
macro_rules! insert_tasks {
    () => {
        "INSERT INTO tasks (id, description, status, plan_version, max_step_retries,
             max_single_step_repairs, max_task_replans, max_consecutive_failures,
             max_reflection_rounds, max_concurrent_steps, event_seq,
             created_at, updated_at, finished_at) "
    };
}

impl BenchSql for Store {
    /// Tasks that finished at or after `since`: id, milliseconds from submit to finish, and
    /// when (database clock).
    async fn finished_since(
        &self,
        since: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<(uuid::Uuid, f64, chrono::DateTime<chrono::Utc>)>> {
        Ok(sqlx::query_as(
            "SELECT id, (extract(epoch FROM finished_at - created_at) * 1000)::float8, finished_at
               FROM tasks WHERE finished_at >= $1",
        )
        .bind(since)
        .fetch_all(self.pool())
        .await?)
    }

    /// Server sessions on database `db` by `application_name`.
    async fn sessions_by_name(&self, db: &str) -> Result<Vec<(String, i64)>> {
        Ok(sqlx::query_as(
            "SELECT coalesce(application_name, ''), count(*) FROM pg_stat_activity
              WHERE datname = $1 GROUP BY 1",
        )
        .bind(db)
        .fetch_all(self.pool())
        .await?)
    }

    /// The sizes a soak watches.
    async fn soak_sizes(&self) -> Result<Sizes> {
        let (table_bytes, index_bytes, dead_tuples, tasks): (i64, i64, i64, i64) = sqlx::query_as(
            "SELECT coalesce(sum(pg_table_size(relid)), 0)::int8,
                        coalesce(sum(pg_indexes_size(relid)), 0)::int8,
                        coalesce(sum(n_dead_tup), 0)::int8,
                        (SELECT count(*) FROM tasks)
                   FROM pg_stat_user_tables",
        )
        .fetch_one(self.pool())
        .await?;
        Ok(Sizes {
            table_bytes,
            index_bytes,
            dead_tuples,
            tasks,
        })
    }

    /// The first delivered webhook's outbox row and the last delivery (database clock).
    async fn delivery_span(
        &self,
    ) -> Result<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>)> {
        Ok(sqlx::query_as(
            "SELECT min(created_at), max(delivered_at) FROM webhook_deliveries WHERE status = 'delivered'",
        )
        .fetch_one(self.pool())
        .await?)
    }

    /// The WAL's insert position now.
    async fn wal_lsn(&self) -> Result<String> {
        Ok(sqlx::query_scalar("SELECT pg_current_wal_lsn()::text")
            .fetch_one(self.pool())
            .await?)
    }

    /// The server's data directory (a superuser may read it): where `pg_waldump` finds the WAL.
    async fn data_directory(&self) -> Result<String> {
        Ok(
            sqlx::query_scalar("SELECT current_setting('data_directory')")
                .fetch_one(self.pool())
                .await?,
        )
    }

    /// The table or index a file node of this database belongs to (the default tablespace).
    async fn relation_of_filenode(&self, filenode: i64) -> Result<Option<String>> {
        Ok(
            sqlx::query_scalar("SELECT pg_filenode_relation(0, $1::oid)::regclass::text")
                .bind(filenode)
                .fetch_one(self.pool())
                .await?,
        )
    }

    /// Every task's status and how long it took from submit to its end, or to now when it has
    /// not ended (milliseconds, database clock).
    async fn task_outcomes(&self) -> Result<Vec<(uuid::Uuid, String, f64)>> {
        Ok(sqlx::query_as(
            "SELECT id, status,
                    (extract(epoch FROM (CASE WHEN status IN ('succeeded', 'failed', 'cancelled',
                                                              'needs_intervention')
                                              THEN updated_at ELSE now() END) - created_at)
                     * 1000)::float8
             FROM tasks",
        )
        .fetch_all(self.pool())
        .await?)
    }

    /// Attempts per task that called `tool` (a refused connection leaves no trace at the tool).
    async fn attempts_per_task(&self, tool: &str) -> Result<Vec<(uuid::Uuid, i64)>> {
        Ok(sqlx::query_as(
            "SELECT task_id, count(*) FROM attempts WHERE tool = $1 GROUP BY task_id",
        )
        .bind(tool)
        .fetch_all(self.pool())
        .await?)
    }

    async fn event_times_ms(&self, from: &str, to: &str) -> Result<Vec<(f64, f64)>> {
        Ok(sqlx::query_as(
            "SELECT (extract(epoch FROM a.at) * 1000)::float8, (extract(epoch FROM b.at) * 1000)::float8
             FROM tasks t
             JOIN LATERAL (SELECT min(at) AS at FROM events WHERE task_id = t.id AND kind = $1) a ON true
             JOIN LATERAL (SELECT min(at) AS at FROM events WHERE task_id = t.id AND kind = $2) b ON true
             WHERE a.at IS NOT NULL AND b.at IS NOT NULL
             ORDER BY t.created_at",
        )
        .bind(from)
        .bind(to)
        .fetch_all(self.pool())
        .await?)
    }

    /// Submit → first attempt started, per task, in milliseconds (database clock).
    async fn start_latencies_ms(&self) -> Result<Vec<f64>> {
        Ok(sqlx::query_scalar(
            "SELECT (extract(epoch FROM (min(a.started_at) - t.created_at)) * 1000)::float8
             FROM tasks t JOIN attempts a ON a.task_id = t.id GROUP BY t.id, t.created_at",
        )
        .fetch_all(self.pool())
        .await?)
    }

    /// Failed attempt finished → next attempt of the same step started, in milliseconds.
    async fn retry_gaps_ms(&self) -> Result<Vec<f64>> {
        Ok(sqlx::query_scalar(
            "SELECT (extract(epoch FROM (n.started_at - f.finished_at)) * 1000)::float8
             FROM attempts f
             JOIN attempts n ON n.task_id = f.task_id AND n.step_key = f.step_key AND n.attempt = f.attempt + 1
             WHERE f.status = 'failed'",
        )
        .fetch_all(self.pool())
        .await?)
    }

    /// Created → finished, per finished task, in milliseconds.
    async fn task_durations_ms(&self) -> Result<Vec<f64>> {
        Ok(sqlx::query_scalar(
            "SELECT (extract(epoch FROM (finished_at - created_at)) * 1000)::float8
             FROM tasks WHERE finished_at IS NOT NULL ORDER BY created_at",
        )
        .fetch_all(self.pool())
        .await?)
    }

    /// Steps in the tables (any status).
    async fn count_all_steps(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT count(*) FROM steps")
            .fetch_one(self.pool())
            .await?)
    }

    /// Rows written per table of this database since it was made (`pg_stat_user_tables`, after
    /// the backends' statistics are flushed): inserts, updates, how many of those were HOT
    /// (touching no index), deletes. The tables with any write, most updated first.
    async fn table_writes(&self) -> Result<Vec<TableWrites>> {
        // backends flush their counters at most once a second
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        Ok(sqlx::query_as(
            "SELECT relname::text AS relation, n_tup_ins AS inserted, n_tup_upd AS updated,
                    n_tup_hot_upd AS hot, n_tup_del AS deleted
             FROM pg_stat_user_tables
             WHERE n_tup_ins + n_tup_upd + n_tup_del > 0
             ORDER BY n_tup_upd DESC, n_tup_ins DESC",
        )
        .fetch_all(self.pool())
        .await?)
    }

    /// Jobs graphile-worker still holds (a peer; its own schema): done jobs are deleted.
    async fn graphile_left(&self) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT count(*) FROM graphile_worker._private_jobs")
                .fetch_one(self.pool())
                .await?,
        )
    }

    /// Jobs apalis-postgres has finished (the benchmark's peer; its own schema).
    async fn apalis_done(&self) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT count(*) FROM apalis.jobs WHERE status = 'Done'")
                .fetch_one(self.pool())
                .await?,
        )
    }

    /// Reset `pg_stat_statements` (the server must preload it); for `trellis-bench --profile`.
    async fn enable_statement_stats(&self) -> Result<()> {
        sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .execute(self.pool())
            .await?;
        sqlx::query("SELECT pg_stat_statements_reset()")
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// The statements that took the most time: (calls, total ms, text).
    async fn statement_stats(&self, limit: i64) -> Result<Vec<(i64, f64, String)>> {
        Ok(sqlx::query_as(
            "SELECT calls, total_exec_time, query FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
             ORDER BY total_exec_time DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(self.pool())
        .await?)
    }

    /// The cost counters now (`pg_stat_statements` must be preloaded and created).
    async fn cost_snapshot(&self) -> Result<Cost> {
        let (statements, commits, wal_bytes): (i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
                     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())),
                    (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
                    (SELECT wal_bytes::bigint FROM pg_stat_wal)",
        )
        .fetch_one(self.pool())
        .await?;
        Ok(Cost {
            statements,
            commits,
            wal_bytes,
        })
    }

    /// Tasks not yet in a terminal or stopped state (bounded by the status index, however much
    /// history the table holds).
    async fn count_unfinished_tasks(&self) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT count(*) FROM tasks
             WHERE status IN ('pending', 'planning', 'running', 'reflecting', 'replanning', 'evaluating')",
        )
        .fetch_one(self.pool())
        .await?)
    }

    /// Whether any task is unfinished (one probe of the status index, whatever the backlog).
    async fn any_unfinished(&self) -> Result<bool> {
        Ok(sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM tasks
             WHERE status IN ('pending', 'planning', 'running', 'reflecting', 'replanning', 'evaluating'))",
        )
        .fetch_one(self.pool())
        .await?)
    }

    /// Steps waiting in the claim queue: the backlog of one-step tasks not yet started (a
    /// count that reads the queue's live slots, not the tasks' history or its dead rows).
    async fn queued_entries(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT count(*) FROM claim_queue")
            .fetch_one(self.pool())
            .await?)
    }

    /// `tasks` rows for the task-list benchmark, without steps: created a second apart up to
    /// now, mostly succeeded, one in fifty failed, one in a thousand running; then ANALYZE, as
    /// autovacuum would after a load this size.
    async fn load_task_list(&self, tasks: i64) -> Result<()> {
        load_tasks(
            self,
            tasks,
            concat!(
                insert_tasks!(),
                "SELECT gen_random_uuid(), 'report ' || i || ' for customer ' || (i % 977),
                        CASE WHEN i % 1000 = 0 THEN 'running' WHEN i % 50 = 0 THEN 'failed'
                             ELSE 'succeeded' END,
                        1, 3, 1, 1, 3, 5, 8, 0,
                        now() - make_interval(secs => $1 - i), now() - make_interval(secs => $1 - i),
                        CASE WHEN i % 1000 = 0 THEN NULL ELSE now() - make_interval(secs => $1 - i) END
                 FROM generate_series(1, $1) AS i"
            ),
        )
        .await
    }

    /// ANALYZE the queue's tables after a load, as autovacuum would.
    async fn analyze_queue(&self) -> Result<()> {
        sqlx::query("ANALYZE tasks, steps, claim_queue")
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Tasks finished, and seconds from the first attempt's start to the last task's end
    /// (database clock): a drain's span without the workers' start-up.
    async fn drain_span(&self) -> Result<(i64, f64)> {
        Ok(sqlx::query_as(
            "SELECT (SELECT count(*) FROM tasks WHERE finished_at IS NOT NULL),
                    coalesce(extract(epoch FROM (SELECT max(finished_at) FROM tasks)
                                              - (SELECT min(started_at) FROM attempts)), 0)::float8",
        )
        .fetch_one(self.pool())
        .await?)
    }

    /// Server sessions on database `db`.
    async fn sessions_on(&self, db: &str) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = $1")
                .bind(db)
                .fetch_one(self.pool())
                .await?,
        )
    }

    /// Workers registered and not stopped.
    async fn workers_alive(&self) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT count(*) FROM workers WHERE stopped_at IS NULL")
                .fetch_one(self.pool())
                .await?,
        )
    }

    /// Tasks, tasks succeeded, and steps with more than one successful attempt.
    async fn fleet_audit(&self) -> Result<(i64, i64, i64)> {
        Ok(sqlx::query_as(
            "SELECT (SELECT count(*) FROM tasks),
                    (SELECT count(*) FROM tasks WHERE status = 'succeeded'),
                    (SELECT count(*) FROM (SELECT step_id FROM attempts WHERE status = 'succeeded'
                                           GROUP BY step_id HAVING count(*) > 1) x)",
        )
        .fetch_one(self.pool())
        .await?)
    }

    /// The database's clock.
    async fn db_now(&self) -> Result<chrono::DateTime<chrono::Utc>> {
        Ok(sqlx::query_scalar("SELECT clock_timestamp()")
            .fetch_one(self.pool())
            .await?)
    }

    /// Open a REPEATABLE READ transaction and read the recovery statistics (so its snapshot is
    /// taken); it stays open until [`BenchSql::close_report`].
    async fn open_report(&self) -> Result<Report> {
        let mut conn = self.pool().acquire().await?;
        // the report runs longer than the session limits a Trellis pool sets
        sqlx::query("SET idle_in_transaction_session_timeout = 0")
            .execute(&mut *conn)
            .await?;
        sqlx::query("BEGIN ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut *conn)
            .await?;
        sqlx::query("SELECT count(*) FROM recovery_by_tool")
            .execute(&mut *conn)
            .await?;
        sqlx::query("SELECT count(*), max(finished_at) FROM attempts")
            .execute(&mut *conn)
            .await?;
        Ok(Report { conn })
    }

    async fn close_report(&self, mut r: Report) -> Result<()> {
        sqlx::query("COMMIT").execute(&mut *r.conn).await?;
        sqlx::query("RESET idle_in_transaction_session_timeout")
            .execute(&mut *r.conn)
            .await?;
        Ok(())
    }

    /// For each phase between consecutive `marks`: tasks submitted per second, tasks finished
    /// per second, and the p99 of submit → finish in seconds over the tasks submitted in it
    /// (a task not finished counts until the last mark).
    async fn phase_figures(
        &self,
        marks: &[chrono::DateTime<chrono::Utc>],
    ) -> Result<Vec<(f64, f64, f64)>> {
        let mut out = Vec::new();
        let last = marks.last().copied();
        for w in marks.windows(2) {
            let (a, b) = (w[0], w[1]);
            let row: (f64, f64, f64) = sqlx::query_as(
                "SELECT (SELECT count(*) FROM tasks WHERE created_at >= $1 AND created_at < $2)::float8
                          / extract(epoch FROM $2 - $1)::float8,
                        (SELECT count(*) FROM tasks WHERE finished_at >= $1 AND finished_at < $2)::float8
                          / extract(epoch FROM $2 - $1)::float8,
                        coalesce((SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY
                                     extract(epoch FROM coalesce(finished_at, $3) - created_at))
                                  FROM tasks WHERE created_at >= $1 AND created_at < $2), 0)::float8",
            )
            .bind(a)
            .bind(b)
            .bind(last)
            .fetch_one(self.pool())
            .await?;
            out.push(row);
        }
        Ok(out)
    }

    /// More `tasks` rows, all submitted within the last hour (1 in 50 failed, the rest
    /// succeeded), appended after the older ones and not vacuumed: the overview's worst hour.
    async fn load_recent_tasks(&self, tasks: i64) -> Result<()> {
        load_tasks(
            self,
            tasks,
            concat!(
                insert_tasks!(),
                "SELECT gen_random_uuid(), 'recent ' || i,
                        CASE WHEN i % 50 = 0 THEN 'failed' ELSE 'succeeded' END,
                        1, 3, 1, 1, 3, 5, 8, 0,
                        now() - make_interval(secs => i % 3500), now(), now()
                 FROM generate_series(1, $1) AS i"
            ),
        )
        .await
    }
}

/// Run a task load (`$1` = how many), then ANALYZE, as autovacuum would after a load this size.
async fn load_tasks(store: &Store, tasks: i64, sql: &'static str) -> Result<()> {
    sqlx::query(sql).bind(tasks).execute(store.pool()).await?;
    sqlx::query("ANALYZE tasks").execute(store.pool()).await?;
    Ok(())
}

/// One table's writes ([`BenchSql::table_writes`]).
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct TableWrites {
    pub relation: String,
    pub inserted: i64,
    pub updated: i64,
    /// Updates that touched no index (heap-only tuples).
    pub hot: i64,
    pub deleted: i64,
}
