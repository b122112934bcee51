//! The pool every statement runs on, and the transactions it opens, as a pooler allows.
//!
//! With no pooler (or a session pooler) statements are prepared once per connection and kept
//! (sqlx's named statements and their cache). Behind a transaction-mode pooler (PgBouncer,
//! Supavisor, RDS Proxy) a connection is a different server session from one transaction to
//! the next, so:
//!
//! - every statement is unnamed ([`Execute::persistent`] is false): no `sqlx_s_N` outlives its
//!   transaction, none collides with another client's on a shared backend. (sqlx 0.9.0 still
//!   names statements when its cache capacity is 0, so the cache setting alone is not enough.)
//! - every statement runs inside an explicit transaction: sqlx parses an unnamed statement
//!   (Parse, Describe, Sync) and binds it (Bind, Execute, Sync) in two round trips, and
//!   between them an idle session may go back to the pooler, whose next backend has no such
//!   statement. A statement run on the pool itself ([`Executor`] for `&Db`) is wrapped in
//!   `BEGIN … COMMIT`;
//! - nothing is set per session: the timeouts (and the hot path's planner settings) are
//!   set for the transaction (`set_config(…, true)`, `SET LOCAL`'s function form) with each
//!   `BEGIN`, in the same round trip.

use std::fmt;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use sqlx::postgres::{PgQueryResult, PgRow, PgStatement, PgTypeInfo};
use sqlx::{
    AssertSqlSafe, Describe, Either, Execute, Executor, PgPool, Postgres, SqlSafeStr, SqlStr,
    Transaction,
};

/// What sits between the processes and PostgreSQL (`[database] pooler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pooler {
    /// The processes connect to PostgreSQL itself.
    #[default]
    None,
    /// A pooler that gives a client one server session for the client's life (PgBouncer's
    /// `pool_mode = session`): no startup parameters but the few it knows; sessions are ours.
    Session,
    /// A pooler that gives a client a server session per transaction (PgBouncer's
    /// `pool_mode = transaction`): no session state at all.
    Transaction,
}

impl Pooler {
    /// `none`, `session` or `transaction`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "none" => Some(Self::None),
            "session" => Some(Self::Session),
            "transaction" => Some(Self::Transaction),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Session => "session",
            Self::Transaction => "transaction",
        }
    }
}

/// `BEGIN`, and the settings for the transaction in one statement (`SET LOCAL` each would be
/// a statement each), in one round trip.
fn begin_with(settings: &[(&str, String)]) -> String {
    if settings.is_empty() {
        return "BEGIN".into();
    }
    let sets: Vec<String> = settings
        .iter()
        .map(|(k, v)| format!("set_config('{k}', '{v}', true)"))
        .collect();
    format!("BEGIN; SELECT {}", sets.join(", "))
}

/// A connection pool and how its transactions begin.
#[derive(Clone)]
pub struct Db {
    pool: PgPool,
    /// Statements are named and kept per connection (false behind a transaction pooler).
    named: bool,
    /// What opens a transaction (`BEGIN`, with the session limits behind a transaction pooler).
    begin: SqlStr,
    /// What opens a hot transaction (with [`super::HOT_SETTINGS`] too, unless every session
    /// starts with them).
    begin_hot: SqlStr,
    pooler: Pooler,
    local: Vec<(&'static str, String)>,
    hot_sessions: bool,
}

impl fmt::Debug for Db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Db")
            .field("named", &self.named)
            .field("size", &self.pool.size())
            .finish()
    }
}

impl Db {
    /// `local`: the settings every transaction sets for itself with its `BEGIN` (empty where
    /// the sessions start with them); `hot_sessions`: every session starts with
    /// [`super::HOT_SETTINGS`].
    pub(super) fn new(
        pool: PgPool,
        pooler: Pooler,
        local: Vec<(&'static str, String)>,
        hot_sessions: bool,
    ) -> Self {
        let hot: Vec<(&str, String)> = super::HOT_SETTINGS
            .iter()
            .filter(|_| !hot_sessions)
            .map(|(k, v)| (*k, v.to_string()))
            .chain(local.iter().cloned())
            .collect();
        Self {
            pool,
            named: pooler != Pooler::Transaction,
            begin: AssertSqlSafe(begin_with(&local)).into_sql_str(),
            begin_hot: AssertSqlSafe(begin_with(&hot)).into_sql_str(),
            pooler,
            local,
            hot_sessions,
        }
    }

    /// The same kind of handle on another pool.
    pub(super) fn sibling(&self, pool: PgPool, hot_sessions: bool) -> Self {
        Self::new(pool, self.pooler, self.local.clone(), hot_sessions)
    }

    pub fn pooler(&self) -> Pooler {
        self.pooler
    }

    /// Every session starts with the hot settings ([`super::HOT_SETTINGS`]).
    pub fn hot_sessions(&self) -> bool {
        self.hot_sessions
    }

    /// The pool itself (its statements are not wrapped: for tests, benchmarks and sizes).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Open a transaction (for `in_tx!`).
    pub(crate) async fn begin(&self) -> Result<Conn, sqlx::Error> {
        self.open(&self.begin).await
    }

    /// Open a transaction that plans generically, through indexes only
    /// ([`super::HOT_SETTINGS`]; for `in_tx!(hot …)`).
    pub(crate) async fn begin_hot(&self) -> Result<Conn, sqlx::Error> {
        self.open(&self.begin_hot).await
    }

    async fn open(&self, begin: &SqlStr) -> Result<Conn, sqlx::Error> {
        let tx = super::begin_on(&self.pool, begin.clone()).await?;
        Ok(Conn {
            tx,
            named: self.named,
        })
    }

    /// One statement's rows in a transaction of its own (behind a transaction pooler).
    async fn alone<'q, E: 'q + Execute<'q, Postgres>>(
        &self,
        query: E,
    ) -> Result<Vec<Step>, sqlx::Error> {
        let run = async {
            in_tx!(self, |tx| Ok((&mut **tx)
                .fetch_many(query)
                .try_collect()
                .await?))
        };
        run.await.map_err(|e| match e {
            super::StoreError::Db(e) => e,
            other => sqlx::Error::Protocol(other.to_string()),
        })
    }
}

/// The connection of a transaction (`write::Tx`); statements on it are prepared as its pool allows.
pub struct Conn {
    tx: Transaction<'static, Postgres>,
    named: bool,
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conn").field("named", &self.named).finish()
    }
}

impl Conn {
    pub(super) async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await
    }

    pub(super) async fn rollback(self) -> Result<(), sqlx::Error> {
        self.tx.rollback().await
    }
}

/// A statement with its preparation decided by the pool: named and kept only where
/// connections are ours.
struct Prepared<E> {
    inner: E,
    named: bool,
}

impl<'q, E: Execute<'q, Postgres>> Execute<'q, Postgres> for Prepared<E> {
    fn sql(self) -> SqlStr {
        self.inner.sql()
    }

    fn statement(&self) -> Option<&PgStatement> {
        self.inner.statement()
    }

    fn take_arguments(
        &mut self,
    ) -> Result<Option<sqlx::postgres::PgArguments>, sqlx::error::BoxDynError> {
        self.inner.take_arguments()
    }

    fn persistent(&self) -> bool {
        self.named && self.inner.persistent()
    }
}

type Step = Either<PgQueryResult, PgRow>;

impl<'c> Executor<'c> for &'c mut Conn {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(self, query: E) -> BoxStream<'e, Result<Step, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        let named = self.named;
        (&mut *self.tx).fetch_many(Prepared {
            inner: query,
            named,
        })
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<PgRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        let named = self.named;
        (&mut *self.tx).fetch_optional(Prepared {
            inner: query,
            named,
        })
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [PgTypeInfo],
    ) -> BoxFuture<'e, Result<PgStatement, sqlx::Error>>
    where
        'c: 'e,
    {
        (&mut *self.tx).prepare_with(sql, parameters)
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<Postgres>, sqlx::Error>>
    where
        'c: 'e,
    {
        (&mut *self.tx).describe(sql)
    }
}

/// A statement on the pool: on a connection of its own; behind a transaction pooler, in a
/// transaction of its own (its rows are read whole before the commit).
impl<'c> Executor<'c> for &'c Db {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(self, query: E) -> BoxStream<'e, Result<Step, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        if self.named {
            return self.pool.fetch_many(query);
        }
        futures::stream::once(async move {
            let steps = self.alone(query).await?;
            Ok::<_, sqlx::Error>(futures::stream::iter(steps.into_iter().map(Ok)))
        })
        .try_flatten()
        .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<PgRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        if self.named {
            return self.pool.fetch_optional(query);
        }
        Box::pin(async move {
            let steps = self.alone(query).await?;
            Ok(steps.into_iter().find_map(|s| match s {
                Either::Right(row) => Some(row),
                Either::Left(_) => None,
            }))
        })
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [PgTypeInfo],
    ) -> BoxFuture<'e, Result<PgStatement, sqlx::Error>>
    where
        'c: 'e,
    {
        self.pool.prepare_with(sql, parameters)
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<Postgres>, sqlx::Error>>
    where
        'c: 'e,
    {
        self.pool.describe(sql)
    }
}
