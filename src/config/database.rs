//! `[database]`: where PostgreSQL is, the pool, the session limits, a pooler in between.

use serde::Deserialize;

use super::{ConfigError, invalid};

/// A worker's pool size when `[database] max_connections` is unset.
pub const WORKER_POOL: u32 = 2;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    /// Connection URL; `DATABASE_URL` wins over the file.
    pub url: Option<String>,
    /// Pool size. Unset: 20 for the API; 2 for a worker, whatever its concurrency
    /// ([`DatabaseSettings::worker_pool_size`]).
    pub max_connections: Option<u32>,
    pub acquire_timeout_secs: u64,
    /// The server cancels a statement running longer (0 = no limit).
    pub statement_timeout_ms: u64,
    /// The server ends a session idle inside a transaction longer, freeing its locks.
    pub idle_in_transaction_timeout_ms: u64,
    /// What sits between the processes and PostgreSQL: `none`, `session` or `transaction`
    /// (PgBouncer's `pool_mode`; Supavisor's port 6543 and RDS Proxy are `transaction`).
    pub pooler: String,
    /// A direct URL (PostgreSQL itself) for LISTEN and, behind a transaction pooler, for
    /// migrations. Unset behind a transaction pooler: workers poll every `worker.poll_ms`.
    pub listen_url: Option<String>,
    /// Apply migrations at start (`false`: check that the schema is current, and refuse to
    /// start, naming `trellis-api migrate`, when it is behind).
    pub migrate: bool,
    /// `application_name` of this process's sessions (default: the binary's name), as
    /// `pg_stat_activity` and PgBouncer's `SHOW CLIENTS` show it.
    pub application_name: Option<String>,
}

impl DatabaseSettings {
    /// The API's pool size.
    pub fn api_pool_size(&self) -> u32 {
        self.max_connections.unwrap_or(20)
    }

    /// A worker's pool: [`WORKER_POOL`] connections whatever its concurrency (claims and
    /// completions are batched, every transaction is short), plus LISTEN's own: at most 3
    /// server connections per worker.
    pub fn worker_pool_size(&self) -> u32 {
        self.max_connections.unwrap_or(WORKER_POOL)
    }

    /// `pooler` as the store takes it (validated at load).
    pub fn pooler(&self) -> crate::store::Pooler {
        crate::store::Pooler::parse(&self.pooler).unwrap_or_default()
    }

    pub fn pool_config(&self, max_connections: u32) -> crate::store::PoolConfig {
        let ms = std::time::Duration::from_millis;
        crate::store::PoolConfig {
            max_connections,
            acquire_timeout: std::time::Duration::from_secs(self.acquire_timeout_secs),
            statement_timeout: ms(self.statement_timeout_ms),
            idle_in_transaction_timeout: ms(self.idle_in_transaction_timeout_ms),
            application_name: None,
            pooler: self.pooler(),
            listen_url: self.listen_url.clone(),
        }
    }
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: None,
            max_connections: None,
            acquire_timeout_secs: 10,
            statement_timeout_ms: 60_000,
            idle_in_transaction_timeout_ms: 60_000,
            pooler: "none".into(),
            listen_url: None,
            migrate: true,
            application_name: None,
        }
    }
}

impl DatabaseSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.max_connections.is_some_and(|n| n < 2) {
            return invalid("database.max_connections must be at least 2");
        }
        if crate::store::Pooler::parse(&self.pooler).is_none() {
            return invalid("database.pooler must be none, session or transaction");
        }
        Ok(())
    }
}
