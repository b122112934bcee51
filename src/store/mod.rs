//! The SQL layer. Every statement Trellis runs lives in this module, one named function per
//! statement (or per short transaction), taking parameter structs. All time comparisons use
//! the database's `now()`.
//!
//! Lock order, everywhere: the task row first (`FOR NO KEY UPDATE`), then its steps. The claim
//! takes task rows with `SKIP LOCKED`, so claims never queue behind completions.

use std::time::Duration;

use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

pub mod bench;
pub mod decisions;
pub mod reports;
pub mod steps;
pub mod tasks;
pub mod testing;
pub mod tools;
pub mod workers;

/// Channel a transaction notifies (delivered at commit) when steps become ready.
pub const READY_CHANNEL: &str = "trellis_steps_ready";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    /// The caller's lease was taken over (or the step is no longer running): nothing changed.
    #[error("stale lease: the step was taken over or is no longer running")]
    Fenced,
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The handle everything uses to reach PostgreSQL.
#[derive(Debug, Clone)]
pub struct Store {
    pool: PgPool,
}

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl Store {
    /// Connect a pool. `max_connections` should cover claims, completions and heartbeats.
    pub async fn connect(
        url: &str,
        max_connections: u32,
        acquire_timeout: Duration,
    ) -> Result<Self> {
        let options: PgConnectOptions = url.parse()?;
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(acquire_timeout)
            .connect_with(options)
            .await?;
        Ok(Self { pool })
    }

    /// Connect with the configured URL and pool settings, then apply migrations: what both
    /// binaries do at start.
    pub async fn open(settings: &crate::config::Settings) -> Result<Self> {
        let url = settings
            .database_url()
            .map_err(|e| StoreError::Invalid(e.to_string()))?;
        let store = Self::connect(
            url,
            settings.database.max_connections,
            Duration::from_secs(settings.database.acquire_timeout_secs),
        )
        .await?;
        store.migrate().await?;
        Ok(store)
    }

    pub fn from_pool(pool: PgPool) -> Self {
        Self { pool }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Apply pending migrations. `sqlx::migrate!` holds an advisory lock while it runs, so many
    /// processes may start at once.
    pub async fn migrate(&self) -> Result<()> {
        MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    /// Readiness: the database answers and every migration this binary knows is applied.
    pub async fn ready(&self) -> Result<bool> {
        let applied: i64 =
            sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
                .fetch_one(&self.pool)
                .await?;
        Ok(applied as usize >= MIGRATOR.iter().count())
    }
}

/// An event to append: `(task, kind, payload)`.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub task_id: Uuid,
    pub kind: &'static str,
    pub payload: Value,
}

impl NewEvent {
    pub fn new(task_id: Uuid, kind: &'static str, payload: Value) -> Self {
        Self {
            task_id,
            kind,
            payload,
        }
    }
}

/// Append events (any number of tasks) in one statement. Sequence numbers come from
/// `tasks.event_seq`, bumped in the same statement; callers hold the task rows' locks, so
/// per-task sequences are gap-free and ordered by commit.
pub(crate) async fn append_events(
    tx: &mut Transaction<'_, Postgres>,
    events: &[NewEvent],
) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let task_ids: Vec<Uuid> = events.iter().map(|e| e.task_id).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind).collect();
    let payloads: Vec<Value> = events.iter().map(|e| e.payload.clone()).collect();
    sqlx::query(
        r#"
        WITH ev AS (
            SELECT e.task_id, e.kind, e.payload, e.ord,
                   row_number() OVER (PARTITION BY e.task_id ORDER BY e.ord) AS rn
            FROM unnest($1::uuid[], $2::text[], $3::jsonb[]) WITH ORDINALITY AS e(task_id, kind, payload, ord)
        ), counts AS (
            SELECT task_id, count(*) AS n FROM ev GROUP BY task_id
        ), bump AS (
            UPDATE tasks t SET event_seq = t.event_seq + counts.n
            FROM counts WHERE t.id = counts.task_id
            RETURNING t.id, t.event_seq AS last_seq, counts.n
        )
        INSERT INTO events (task_id, seq, kind, payload)
        SELECT ev.task_id, bump.last_seq - bump.n + ev.rn, ev.kind, ev.payload
        FROM ev JOIN bump ON bump.id = ev.task_id
        "#,
    )
    .bind(&task_ids)
    .bind(&kinds)
    .bind(&payloads)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Commit on success; roll back at once on error. (A dropped sqlx transaction rolls back only
/// when its pooled connection is next used, and until then its row locks make `SKIP LOCKED`
/// claims pass the task by.)
pub(crate) async fn finish<T>(tx: Transaction<'_, Postgres>, r: Result<T>) -> Result<T> {
    match r {
        Ok(v) => {
            tx.commit().await?;
            Ok(v)
        }
        Err(e) => {
            if let Err(rb) = tx.rollback().await {
                tracing::warn!(error = %rb, "rollback failed");
            }
            Err(e)
        }
    }
}

/// Wake idle workers (delivered when the transaction commits).
pub(crate) async fn notify_ready(tx: &mut Transaction<'_, Postgres>) -> Result<()> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(READY_CHANNEL)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
