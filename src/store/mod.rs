//! The SQL layer: the only place with SQL. It depends on [`crate::domain`] and on nothing else of
//! the crate (never on `brain`, `tools`, `worker`, `api` or `config`). All time comparisons use
//! the database's `now()`.
//!
//! - `sql/`: every statement that writes or spans more than three lines, one named file each;
//!   a status write declares its move (`-- move: StepMove::Claim`), checked by a test;
//! - [`tasks`], [`steps`]: the status moves of tasks, and of steps outside the queue;
//! - [`step_queue`]: claim, heartbeat, complete, fail, release, rescue;
//! - [`claim_queue`]: the claimable steps, kept per task where its steps change;
//! - [`circuits`]: a tool's retry policy and circuit breaker, a step's failure streak;
//! - [`decision_queue`]: create, claim, rescue and release decisions; their context;
//! - [`apply`]: applying a decision's outcome (step-level and task-level);
//! - [`lifecycle`]: task-level consequences shared by the queue and the appliers;
//! - [`plans`]: plan versions and their step rows;
//! - [`submit`]: submit, cancel, resume; [`reads`]: read models;
//! - [`tools`], [`workers`], [`reports`]: the registries and the recovery views;
//! - [`keys`]: API key digests and roles.
//!
//! Lock order, everywhere: the task row first (`FOR NO KEY UPDATE`), then its steps. The claim
//! takes task rows with `SKIP LOCKED`, so claims never queue behind completions.
//!
//! Architecture invariant: every transaction runs inside `in_tx!`, which commits on success and
//! rolls back at once on error; nothing else calls `begin()` or `begin_with()`.

use std::time::Duration;

use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use crate::domain::event::Event;
use crate::domain::records::TaskRow;

/// Run `$body` (an expression that may use `?` and `return`, evaluating to
/// `Result<T, StoreError>`) in one transaction on `$pool`, with `$tx: &mut Tx` bound to it:
/// commit when it is `Ok`, roll back at once when it is `Err` ([`finish`]). The only way this
/// crate opens a transaction.
///
/// `in_tx!(hot store, |tx| …)` is for the claim, completion, failure and decision
/// transactions, whose statements run thousands of times per connection: they run with generic
/// plans. On a [`Store::with_generic_plans`] handle every session already has them (a plain
/// `BEGIN`); on any other it opens with [`BEGIN_HOT`].
/// A named statement: the text of `src/store/sql/<name>.sql` (compiled in), whose first line
/// is `-- name: <name>`, so `pg_stat_statements`, the server's logs and `EXPLAIN` name it too.
/// A file whose name starts with `_` is a part other statements end with (`concat!`).
macro_rules! sql {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/store/sql/",
            $name,
            ".sql"
        ))
    };
}

macro_rules! in_tx {
    (hot $store:expr, |$tx:ident| $body:expr) => {{
        let store: &$crate::store::Store = &$store;
        let begin = if store.generic_plans {
            "BEGIN"
        } else {
            $crate::store::BEGIN_HOT
        };
        let owned: $crate::store::Tx = store.pool.begin_with(begin).await?;
        in_tx!(@run owned, |$tx| $body)
    }};
    ($pool:expr, |$tx:ident| $body:expr) => {{
        let owned: $crate::store::Tx = $pool.begin().await?;
        in_tx!(@run owned, |$tx| $body)
    }};
    (@run $owned:ident, |$tx:ident| $body:expr) => {{
        let mut owned = $owned;
        let result: $crate::store::Result<_> = async {
            let $tx = &mut owned;
            $body
        }
        .await;
        $crate::store::finish(owned, result).await
    }};
}

/// How the hot path's transactions begin (one round trip, as a plain `BEGIN`): with generic
/// plans, read through indexes only. Under the default `plan_cache_mode = auto` PostgreSQL
/// keeps planning the claim and completion statements anew on every execution (their generic
/// plans' estimates lose to the custom plans' by a little), and planning the claim's CTEs took
/// longer than running them: 0.18 + 0.68 ms of planning against 0.07 + 0.34 ms of execution
/// per idle claim. Their parameters are ids, limits and flags whose values do not change which
/// plan is good.
///
/// A generic plan is made once per session, with the statistics of that moment, and kept: made
/// on the empty tables of a new install (PostgreSQL assumes ten pages), every statement that
/// reads by a list of ids became a sequential scan or a hash join over a whole table, kept
/// while the tables grew (a worker fell to a quarter of its rate within a minute of load; see
/// BENCHMARKS.md), and the claim queue's ordered walk became a bitmap scan and a sort of the
/// whole queue when its estimate was small. Every hot statement reaches its rows through an
/// index (keys, or an ordered walk with a `LIMIT`), so hot sessions plan with
/// `enable_seqscan` and `enable_bitmapscan` off: such a plan is then never chosen while an
/// index path exists, whatever the statistics say. JIT is off too: these statements run in
/// a millisecond, and the cost a disabled path adds to a plan that has no other (a one-row
/// table's scan) made PostgreSQL compile the claim on every run (800 ms).
///
/// The `SET LOCAL`s cost no round trip, but they are statements in `pg_stat_statements`; a
/// worker therefore runs its hot path on a [`Store::with_generic_plans`] handle, whose sessions
/// start with these settings as startup parameters, and uses this only where it shares a pool
/// with the API (`trellis-api --dev`).
pub const BEGIN_HOT: &str = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan; \
     SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL jit = off";

/// The hot sessions' planner settings ([`BEGIN_HOT`] says why).
pub(crate) const HOT_SETTINGS: [(&str, &str); 4] = [
    ("plan_cache_mode", "force_generic_plan"),
    ("enable_seqscan", "off"),
    ("enable_bitmapscan", "off"),
    ("jit", "off"),
];

pub mod apply;
pub mod circuits;
pub mod claim_queue;
pub mod deadlines;
pub mod decision_queue;
pub mod keys;
pub mod lifecycle;
pub mod mcp;
pub mod plans;
pub mod reads;
pub mod reports;
pub mod rerun;
pub mod retention;
pub mod schedules;
pub mod secrets;
pub mod step_queue;
pub mod steps;
pub mod submit;
pub mod tasks;
pub mod templates;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tools;
pub mod waits;
pub mod webhooks;
pub mod workers;

/// Channel a transaction notifies (delivered at commit) when steps become ready.
pub const READY_CHANNEL: &str = "trellis_steps_ready";
/// Payload of a notification on [`READY_CHANNEL`] that a decision is pending.
pub const DECISIONS_PAYLOAD: &str = "decisions";

/// What went wrong, split by whose fault it is.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The caller named something that does not exist (→ 404).
    #[error("{0} not found")]
    NotFound(String),
    /// The caller asked for something the current state does not allow (→ 409).
    #[error("{0}")]
    Conflict(String),
    /// The caller's input is invalid against the stored state, e.g. an unknown tool (→ 422).
    #[error("{0}")]
    Rejected(String),
    /// The caller's lease was taken over (or the row is no longer running): nothing changed.
    #[error("stale lease: the step was taken over or is no longer running")]
    Fenced,
    /// Our own data or code is wrong: a row that cannot be decoded, a move the transition
    /// table does not allow. Never the caller's fault (→ 500, logged).
    #[error("corrupt state: {0}")]
    Corrupt(String),
    /// The database failed or could not be reached (→ 503).
    #[error("database error: {0}")]
    Db(sqlx::Error),
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => {
                StoreError::Corrupt(e.to_string())
            }
            e => StoreError::Db(e),
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A transaction, as `in_tx!` hands it to its work.
pub type Tx = Transaction<'static, Postgres>;

/// A page of a per-task history list, oldest first.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    pub limit: i64,
    pub offset: i64,
}

impl Page {
    /// Every row (internal readers, never an API call).
    pub const ALL: Page = Page {
        limit: i64::MAX,
        offset: 0,
    };
}

impl Default for Page {
    fn default() -> Self {
        Self {
            limit: 1000,
            offset: 0,
        }
    }
}

/// How a pool connects.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    pub max_connections: u32,
    pub acquire_timeout: Duration,
    /// A statement running longer is cancelled by the server.
    pub statement_timeout: Duration,
    /// A session idle inside a transaction longer is ended by the server (its locks freed).
    pub idle_in_transaction_timeout: Duration,
    /// Shown in `pg_stat_activity.application_name` (`trellis-api`, `trellis-worker`), so an
    /// operator can tell the fleet's sessions apart.
    pub application_name: Option<String>,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(10),
            statement_timeout: Duration::from_secs(60),
            idle_in_transaction_timeout: Duration::from_secs(60),
            application_name: None,
        }
    }
}

/// The handle everything uses to reach PostgreSQL.
#[derive(Debug, Clone)]
pub struct Store {
    pool: PgPool,
    /// Every session of `pool` plans with `plan_cache_mode = force_generic_plan`.
    generic_plans: bool,
    /// Whether claims must walk the limited tools' lanes (shared by this handle's siblings).
    lanes: std::sync::Arc<claim_queue::LaneCache>,
}

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl Store {
    /// Connect a pool with the default session limits ([`PoolConfig`]).
    pub async fn connect(
        url: &str,
        max_connections: u32,
        acquire_timeout: Duration,
    ) -> Result<Self> {
        Self::connect_with(
            url,
            &PoolConfig {
                max_connections,
                acquire_timeout,
                ..PoolConfig::default()
            },
        )
        .await
    }

    /// Connect a pool. Every connection gets a `statement_timeout`, an
    /// `idle_in_transaction_session_timeout` and TCP keepalives set on the server's side of
    /// its socket (sqlx has no client-side socket options; the server's probes are what end
    /// the backend of a worker whose host vanished, releasing its locks).
    pub async fn connect_with(url: &str, c: &PoolConfig) -> Result<Self> {
        let ms = |d: Duration| format!("{}ms", d.as_millis());
        let mut options: PgConnectOptions = url.parse::<PgConnectOptions>()?;
        if let Some(name) = &c.application_name {
            options = options.application_name(name);
        }
        let options = options.options([
            ("statement_timeout", ms(c.statement_timeout)),
            (
                "idle_in_transaction_session_timeout",
                ms(c.idle_in_transaction_timeout),
            ),
            ("tcp_keepalives_idle", "30".to_string()),
            ("tcp_keepalives_interval", "10".to_string()),
            ("tcp_keepalives_count", "3".to_string()),
        ]);
        let pool = PgPoolOptions::new()
            .max_connections(c.max_connections)
            .acquire_timeout(c.acquire_timeout)
            .connect_with(options)
            .await?;
        Ok(Self {
            pool,
            generic_plans: false,
            lanes: Default::default(),
        })
    }

    /// A second handle on the same database with its own small pool, so that what runs on it
    /// (a worker's heartbeat) never waits behind the main pool.
    pub async fn dedicated(&self, max_connections: u32) -> Result<Self> {
        let options = (*self.pool.connect_options()).clone();
        self.sibling(
            options,
            max_connections,
            Duration::from_secs(5),
            self.generic_plans,
        )
        .await
    }

    /// A handle for a worker's hot path (claims, completions, failures, decisions), with a pool
    /// of its own as large as this one's, whose sessions start with the planner settings of
    /// [`BEGIN_HOT`] (generic plans, index paths only, no JIT). Its statements are keyed by
    /// ids and leases; the maintenance sweeps, whose time predicates do favour custom
    /// plans, stay on `self`.
    pub async fn with_generic_plans(&self) -> Result<Self> {
        // appended to the session options this handle's pool already starts with
        let options = (*self.pool.connect_options()).clone().options(HOT_SETTINGS);
        let pool = self.pool.options();
        self.sibling(
            options,
            pool.get_max_connections(),
            pool.get_acquire_timeout(),
            true,
        )
        .await
    }

    /// A handle with a pool of its own on `options`.
    async fn sibling(
        &self,
        options: PgConnectOptions,
        max_connections: u32,
        acquire_timeout: Duration,
        generic_plans: bool,
    ) -> Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(acquire_timeout)
            .connect_with(options)
            .await?;
        Ok(Self {
            pool,
            generic_plans,
            lanes: self.lanes.clone(),
        })
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Apply pending migrations. `sqlx::migrate!` holds an advisory lock while it runs, so many
    /// processes may start at once.
    pub async fn migrate(&self) -> Result<()> {
        // a migration may rewrite a large table: no statement timeout on its connection
        let mut conn = self.pool.acquire().await?;
        sqlx::query("SET statement_timeout = 0")
            .execute(&mut *conn)
            .await?;
        let ran = MIGRATOR.run(&mut *conn).await;
        sqlx::query("RESET statement_timeout")
            .execute(&mut *conn)
            .await?;
        ran?;
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

/// An event to append to a task's log.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub task_id: Uuid,
    pub event: Event,
}

impl NewEvent {
    pub fn new(task_id: Uuid, event: Event) -> Self {
        Self { task_id, event }
    }
}

/// Append events (any number of tasks) in one statement. Sequence numbers come from
/// `tasks.event_seq`, bumped in the same statement; callers hold the task rows' locks, so
/// per-task sequences are gap-free and ordered by commit.
pub(crate) async fn append_events(tx: &mut Tx, events: &[NewEvent]) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let task_ids: Vec<Uuid> = events.iter().map(|e| e.task_id).collect();
    // the one place an event is serialized (the claim and the submit statement build theirs in
    // SQL; tests/it/events.rs reads every kind back as its variant)
    let kinds: Vec<&str> = events.iter().map(|e| e.event.kind()).collect();
    let payloads: Vec<Value> = events.iter().map(|e| e.event.payload()).collect();
    sqlx::query(sql!("event/append"))
        .bind(&task_ids)
        .bind(&kinds)
        .bind(&payloads)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Commit on success; roll back at once on error. (A dropped sqlx transaction rolls back only
/// when its pooled connection is next used, and until then its row locks make `SKIP LOCKED`
/// claims pass the task by.) Called by `in_tx!` only.
pub(crate) async fn finish<T>(tx: Tx, r: Result<T>) -> Result<T> {
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
pub(crate) async fn notify_ready(tx: &mut Tx) -> Result<()> {
    sqlx::query(sql!("queue/notify_ready"))
        .bind(READY_CHANNEL)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Wake workers for a pending decision (payload [`DECISIONS_PAYLOAD`]): workers claim
/// decisions when told to, or at their poll interval, not on every claim of steps.
pub(crate) async fn notify_decisions(tx: &mut Tx) -> Result<()> {
    sqlx::query(sql!("queue/notify_decisions"))
        .bind(READY_CHANNEL)
        .bind(DECISIONS_PAYLOAD)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Lock the task row (always the first lock a transaction takes) and read all of it.
/// A task's status as this transaction sees it (what a client's write left it in).
pub(crate) async fn task_status(tx: &mut Tx, id: Uuid) -> Result<crate::domain::TaskStatus> {
    Ok(sqlx::query_scalar("SELECT status FROM tasks WHERE id = $1")
        .bind(id)
        .fetch_one(&mut **tx)
        .await?)
}

pub(crate) async fn lock_task(tx: &mut Tx, id: Uuid) -> Result<TaskRow> {
    sqlx::query_as(sql!("task/lock"))
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("task {id}")))
}

/// Known tool ids, read in the transaction (plans are validated against the registry as it
/// stands when they are installed).
pub(crate) async fn known_tools(tx: &mut Tx) -> Result<std::collections::HashSet<String>> {
    Ok(sqlx::query_scalar("SELECT id FROM tools")
        .fetch_all(&mut **tx)
        .await?
        .into_iter()
        .collect())
}
