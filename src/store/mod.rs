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
//! - [`keys`]: API key digests and roles; `secrets`: sealed tool credentials; `mcp`: MCP
//!   servers and their tools; `templates`: the template registry;
//! - [`write`](mod@write): the write context a transaction's work gets, which does the chores at commit;
//! - `db`: the pool and how a transaction begins; `bulk`: bulk actions; `rerun`: rerun from a
//!   step; `deadlines`, `retention`: the sweeps;
//! - `maps`, `children`, `waits`, `schedules`, `webhooks`: fan-out, waits, cron, the outbox;
//!   `agent`: an agent step's turns, each stored with the calls it asked for;
//! - `fairness`, `tenants`, `cost`: key limits and aging, tenants' caps, cost in money;
//! - `testing` (feature `testing`): statements tests use to provoke and inspect states.
//!
//! Lock order, everywhere: the task row first (`FOR NO KEY UPDATE`), then its steps. The claim
//! takes task rows with `SKIP LOCKED`, so claims never queue behind completions.
//!
//! Architecture invariant: every transaction runs inside `in_tx!`, which commits on success and
//! rolls back at once on error; nothing else calls `begin()` or `begin_with()`.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Executor, PgPool};
use uuid::Uuid;

pub use db::{Db, Pooler};
pub use write::{NewEvent, Tx};

use crate::domain::records::TaskRow;

/// Run `$body` (an expression that may use `?` and `return`, evaluating to
/// `Result<T, StoreError>`) in one transaction on `$pool`, with `$tx: &mut Tx` bound to it:
/// commit when it is `Ok`, roll back at once when it is `Err` ([`finish`]). The only way this
/// crate opens a transaction.
///
/// `in_tx!(hot store, |tx| …)` is for the claim, completion, failure and decision
/// transactions, whose statements run thousands of times per connection: they run with generic
/// plans, opened with [`HOT_SETTINGS`] (on a [`Store::with_generic_plans`] handle every session
/// already has them: a plain `BEGIN`). Behind a transaction pooler each `BEGIN` also carries
/// the session limits ([`db`]).
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
        let owned = $crate::store::Tx::new(store.pool.begin_hot().await?);
        in_tx!(@run owned, |$tx| $body)
    }};
    ($pool:expr, |$tx:ident| $body:expr) => {{
        let owned = $crate::store::Tx::new($pool.begin().await?);
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

/// The hot path's planner settings: generic plans, read through indexes only. Its transactions
/// begin with them (`SELECT set_config(…, true)` sent with the `BEGIN`: one round trip, one
/// statement). Under the default `plan_cache_mode = auto` PostgreSQL
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
/// Set per transaction they leave no session state behind, so a worker needs no pool of its
/// own for its hot path and the same code runs behind a transaction pooler. (Behind one, every
/// statement is unnamed and planned at each execution, so only the scan and JIT settings
/// matter there; see [`db`].)
pub const HOT_SETTINGS: [(&str, &str); 4] = [
    ("plan_cache_mode", "force_generic_plan"),
    ("enable_seqscan", "off"),
    ("enable_bitmapscan", "off"),
    ("jit", "off"),
];

pub mod agent;
pub mod apply;
pub mod bulk;
pub mod children;
pub mod circuits;
pub mod claim_queue;
pub mod cost;
pub mod db;
pub mod deadlines;
pub mod decision_queue;
pub mod fairness;
pub mod keys;
pub mod lifecycle;
pub mod maps;
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
pub mod tenants;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tools;
pub mod waits;
pub mod webhooks;
pub mod workers;
pub mod write;

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
    /// The schema cannot be brought to or is not at this binary's version; says what to run.
    #[error("{0}")]
    Schema(String),
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
    /// What sits between this process and PostgreSQL.
    pub pooler: Pooler,
    /// A direct URL for LISTEN (and migrations behind a transaction pooler). Unset: LISTEN on
    /// the pool's URL, except behind a transaction pooler, where the process polls.
    pub listen_url: Option<String>,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            max_connections: 10,
            acquire_timeout: Duration::from_secs(10),
            statement_timeout: Duration::from_secs(60),
            idle_in_transaction_timeout: Duration::from_secs(60),
            application_name: None,
            pooler: Pooler::None,
            listen_url: None,
        }
    }
}

/// The handle everything uses to reach PostgreSQL.
#[derive(Debug, Clone)]
pub struct Store {
    pool: Db,
    /// Where LISTEN connects; `None`: nowhere (behind a transaction pooler with no direct
    /// URL), the workers poll.
    listen: Option<PgConnectOptions>,
    /// The connection LISTEN holds, once there is one (counted by [`Store::connections`]).
    listener_pool: std::sync::Arc<std::sync::Mutex<Option<PgPool>>>,
    /// Whether claims must walk the limited tools' lanes (shared by this handle's siblings).
    lanes: std::sync::Arc<claim_queue::LaneCache>,
    /// The weight of a concurrency key no `key_limits` pattern matches (`[fairness]
    /// default_weight`).
    default_weight: f64,
    /// What the claim keeps beyond the registries: the `[tenants]` caps and `[fairness]
    /// default_max_running`.
    claim_caps: step_queue::ClaimCaps,
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
    /// `idle_in_transaction_session_timeout`, `jit = off` and (direct) TCP keepalives set on the server's
    /// side of its socket (sqlx has no client-side socket options; the server's probes are
    /// what end the backend of a worker whose host vanished, releasing its locks). Directly
    /// they are startup parameters; behind a session pooler (which refuses unknown startup
    /// parameters) `SET`s after connecting; behind a transaction pooler `SET LOCAL`s with
    /// every `BEGIN` ([`db`]).
    pub async fn connect_with(url: &str, c: &PoolConfig) -> Result<Self> {
        let ms = |d: Duration| format!("{}ms", d.as_millis());
        let mut options: PgConnectOptions = url.parse::<PgConnectOptions>()?;
        if let Some(name) = &c.application_name {
            options = options.application_name(name);
        }
        // no statement of Trellis is worth compiling: each runs in milliseconds, and a batch's
        // estimate (a submit of 1,000 tasks) passes jit_above_cost on a stock server, which then
        // spends about 2 s compiling it (docs/benchmarks-history.md, "Stock first")
        let limits = vec![
            ("statement_timeout", ms(c.statement_timeout)),
            (
                "idle_in_transaction_session_timeout",
                ms(c.idle_in_transaction_timeout),
            ),
            ("jit", "off".to_string()),
        ];
        let listen = match (&c.listen_url, c.pooler) {
            (Some(direct), _) => {
                let mut o = direct.parse::<PgConnectOptions>()?;
                if let Some(name) = &c.application_name {
                    o = o.application_name(name);
                }
                Some(o)
            }
            (None, Pooler::Transaction) => None,
            (None, _) => Some(options.clone()),
        };
        // sqlx pings a connection before handing it out (a round trip per transaction): kept,
        // so that after a restart or a failover a dead connection is replaced, not used.
        // Pinging only those idle for a second took 0.13 ms off a step's start, but a statement
        // on a connection used just before a restart then failed (docs/benchmarks-history.md, "Stock first")
        let pool = PgPoolOptions::new()
            .max_connections(c.max_connections)
            .acquire_timeout(c.acquire_timeout);
        let (pool, local) = match c.pooler {
            Pooler::None => {
                let mut startup = limits;
                startup.extend([
                    ("tcp_keepalives_idle", "30".to_string()),
                    ("tcp_keepalives_interval", "10".to_string()),
                    ("tcp_keepalives_count", "3".to_string()),
                ]);
                (pool.connect_with(options.options(startup)).await?, vec![])
            }
            Pooler::Session => {
                let sets: String = limits
                    .iter()
                    .map(|(k, v)| format!("SET {k} = '{v}';"))
                    .collect();
                let sets = std::sync::Arc::new(sets);
                let pool = pool
                    .after_connect(move |conn, _| {
                        let sets = sets.clone();
                        Box::pin(async move {
                            conn.execute(sqlx::AssertSqlSafe(sets.as_str())).await?;
                            Ok(())
                        })
                    })
                    .connect_with(options.extra_float_digits(None))
                    .await?;
                (pool, vec![])
            }
            Pooler::Transaction => (
                pool.connect_with(options.extra_float_digits(None)).await?,
                limits,
            ),
        };
        Ok(Self {
            pool: Db::new(pool, c.pooler, local, false),
            listen,
            listener_pool: Default::default(),
            lanes: Default::default(),
            default_weight: 1.0,
            claim_caps: Default::default(),
        })
    }

    /// A second handle on the same database with its own small pool, so that what runs on it
    /// never waits behind the main pool.
    pub async fn dedicated(&self, max_connections: u32) -> Result<Self> {
        let options = (*self.pool.pool().connect_options()).clone();
        self.sibling(
            options,
            max_connections,
            Duration::from_secs(5),
            self.pool.hot_sessions(),
        )
        .await
    }

    /// A handle with a pool of its own as large as this one's, whose sessions start with the
    /// planner settings of [`HOT_SETTINGS`] (generic plans, index paths only, no JIT), so its hot
    /// transactions begin with a plain `BEGIN`. Behind a transaction pooler sessions carry no
    /// settings: its hot transactions keep the `SET LOCAL`s.
    pub async fn with_generic_plans(&self) -> Result<Self> {
        let mut options = (*self.pool.pool().connect_options()).clone();
        let hot = self.pool.pooler() == Pooler::None;
        if hot {
            // appended to the session options this handle's pool already starts with
            options = options.options(HOT_SETTINGS);
        }
        let pool = self.pool.pool().options();
        self.sibling(
            options,
            pool.get_max_connections(),
            pool.get_acquire_timeout(),
            hot,
        )
        .await
    }

    /// A handle with a pool of its own on `options`.
    async fn sibling(
        &self,
        options: PgConnectOptions,
        max_connections: u32,
        acquire_timeout: Duration,
        hot_sessions: bool,
    ) -> Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(acquire_timeout)
            .connect_with(options)
            .await?;
        Ok(Self {
            pool: self.pool.sibling(pool, hot_sessions),
            listen: self.listen.clone(),
            listener_pool: self.listener_pool.clone(),
            lanes: self.lanes.clone(),
            default_weight: self.default_weight,
            claim_caps: self.claim_caps,
        })
    }

    /// This handle with `[fairness] default_weight`: the weight of a concurrency key that no
    /// pattern of the key limits matches.
    pub fn with_default_weight(mut self, weight: f64) -> Self {
        self.default_weight = weight;
        self
    }

    /// This handle with the `[tenants]` caps: per tenant without a row of its own, at most
    /// this many tasks with running steps and running steps (0: no cap).
    pub fn with_tenant_caps(mut self, caps: crate::domain::tenant::Caps) -> Self {
        self.claim_caps.tenants = caps;
        self
    }

    /// This handle with `[fairness] default_max_running`: the steps of one concurrency key
    /// that no pattern caps running at once, across the fleet (0: no cap).
    pub fn with_default_max_running(mut self, n: i32) -> Self {
        self.claim_caps.key_max_running = n;
        self
    }

    /// The pool itself, for tests and benchmarks (the store's own statements run on [`Db`]).
    pub fn pool(&self) -> &PgPool {
        self.pool.pool()
    }

    /// This handle's open server connections (its pool's and LISTEN's) and how many of them
    /// are idle.
    pub fn connections(&self) -> (u32, u32) {
        let listen = self
            .listener_pool
            .lock()
            .expect("listener pool lock")
            .as_ref()
            .map_or(0, |p| p.size());
        let pool = self.pool.pool();
        (pool.size() + listen, pool.num_idle() as u32)
    }

    /// The pool as the store's statements use it.
    pub fn db(&self) -> &Db {
        &self.pool
    }

    /// Apply pending migrations. `sqlx::migrate!` holds a session advisory lock while it runs,
    /// so many processes may start at once; behind a transaction pooler that lock would be
    /// stranded on a backend others share, so migrations go over the direct URL
    /// (`listen_url`), and without one nothing is applied and the error says what to run.
    pub async fn migrate(&self) -> Result<()> {
        if self.pool.pooler() == Pooler::Transaction {
            let direct = self.listen.as_ref().ok_or_else(|| {
                StoreError::Schema(
                    "migrations need a direct connection, not a transaction pooler: set \
                     database.listen_url (APP_DATABASE__LISTEN_URL) to PostgreSQL's own URL, or \
                     run `trellis-api migrate` with DATABASE_URL set to it and start the \
                     processes with database.migrate = false"
                        .into(),
                )
            })?;
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect_with(direct).await?;
            let ran = Self::migrate_on(&mut conn).await;
            let _ = conn.close().await;
            return ran;
        }
        let mut conn = self.pool.pool().acquire().await?;
        Self::migrate_on(&mut conn).await
    }

    async fn migrate_on(conn: &mut sqlx::PgConnection) -> Result<()> {
        // a migration may rewrite a large table: no statement timeout on its connection
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

    /// For a process that must not migrate (`[database] migrate = false`): `Ok` when every
    /// migration this binary knows is applied (a newer schema is fine: migrations only add
    /// what older binaries can ignore), else [`StoreError::Schema`] naming the command to run.
    pub async fn check_schema(&self) -> Result<()> {
        let table: Option<String> =
            sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text")
                .fetch_one(&self.pool)
                .await?;
        let applied: Vec<i64> = if table.is_some() {
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
                .fetch_all(&self.pool)
                .await?
        } else {
            Vec::new()
        };
        let missing: Vec<String> = MIGRATOR
            .iter()
            .filter(|m| m.migration_type.is_up_migration() && !applied.contains(&m.version))
            .map(|m| format!("{} {}", m.version, m.description))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(StoreError::Schema(format!(
            "the database schema is behind this binary ({} migration(s) not applied, first: {}): \
             run `trellis-api migrate` with DATABASE_URL set to PostgreSQL's own URL, then start again",
            missing.len(),
            missing[0]
        )))
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

/// Open a transaction on `pool` with `begin` (`BEGIN`, maybe with `SET LOCAL`s): the one
/// place a transaction opens, reached through [`Db::begin`] from `in_tx!` only.
pub(crate) async fn begin_on(
    pool: &PgPool,
    begin: sqlx::SqlStr,
) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
    pool.begin_with(begin).await
}

/// Commit on success, after the write context's chores ([`write`](mod@write)); roll back at once on
/// error. (A dropped sqlx transaction rolls back only when its pooled connection is next used,
/// and until then its row locks make `SKIP LOCKED` claims pass the task by.) Called by
/// `in_tx!` only.
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
pub(crate) async fn known_tools(
    tx: &mut Tx,
    task: Uuid,
) -> Result<std::collections::HashSet<String>> {
    Ok(sqlx::query_scalar(
        "SELECT id FROM tools
         WHERE tenant = (SELECT tenant FROM tasks WHERE id = $1) OR kind = 'builtin'",
    )
    .bind(task)
    .fetch_all(&mut **tx)
    .await?
    .into_iter()
    .collect())
}
