//! `[worker]`: a worker process: concurrency, leases, polling, retries, circuits, waits.

use serde::Deserialize;

use super::ConfigError;

/// Steps a worker runs at once unless `[worker] concurrency` says otherwise. Steps are mostly
/// waits on other services (HTTP, MCP, LLM calls), a running step costs about 3 KB, and a
/// worker's connections do not grow with it; larger batches are what make a drain fast
/// (docs/benchmarks-history.md, "Fleets and poolers": the drain rate stops growing at 128 to 256).
pub const DEFAULT_CONCURRENCY: u32 = 256;

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSettings {
    /// Fixed worker id (a UUID); a fresh v7 id when unset.
    pub id: Option<String>,
    /// Steps this worker runs at once.
    pub concurrency: u32,
    /// Lease length; heartbeats extend it every `lease_secs / 3`.
    pub lease_secs: u64,
    /// Fallback poll period when no notification arrives.
    pub poll_ms: u64,
    /// Most steps claimed by one claim transaction (unset: every free slot, so a claim takes
    /// what the worker has room for and the queue holds).
    pub claim_batch: Option<u32>,
    /// On SIGTERM, how long in-flight steps may run before they are released.
    pub shutdown_grace_secs: u64,
    /// Base of the exponential backoff between retries of a failed step.
    pub retry_backoff_ms: u64,
    /// Upper bound of that backoff.
    pub retry_backoff_max_ms: u64,
    /// Each failure of a step in a row multiplies its backoff by this (a tool's `retry`
    /// overrides it, as it does the two above).
    pub retry_backoff_coefficient: f64,
    /// No retry starts later than this after the first failure of its streak; 0: no limit.
    pub retry_max_elapsed_secs: f64,
    /// A step's own retry delay after a `Retry-After` longer than this is cut to it (the tool
    /// is held for the whole time announced; a wait past the step's limit ends it at once).
    pub max_retry_after_secs: u64,
    /// Outages in a row, fleet-wide, that open a tool's circuit; 0 turns the breaker off (a
    /// tool's `circuit_breaker` overrides it).
    pub circuit_failure_threshold: u32,
    /// How long an open circuit waits before its probe.
    pub circuit_cool_down_secs: f64,
    /// A step's own outages in a row that confirm the tool is down before the fleet-wide count
    /// may open its circuit (1: every outage at once). A tool with an alternative counts each
    /// outage at once unless its `circuit_breaker.confirm_failures` says otherwise.
    pub circuit_confirm_failures: u32,
    /// How long a step may wait on its tool's open circuit or rate-limit hold, from its first
    /// failure or first wait, when the tool's `retry.max_elapsed_secs` does not say; then it
    /// fails without a call.
    pub tool_wait_max_secs: f64,
    /// How often the maintenance loop looks for expired leases.
    pub rescue_interval_ms: u64,
    /// A step whose worker died this many times fails as poison.
    pub max_rescues: u32,
    /// How often leases are renewed (default: `lease_secs / 3`); must be below `lease_secs`.
    pub heartbeat_secs: Option<f64>,
    /// Port of the worker's own `GET /metrics` (Prometheus); 0: not served.
    pub metrics_port: u16,
    /// Address the metrics listener binds (default `127.0.0.1`; `0.0.0.0` for a scraper on
    /// another host).
    pub metrics_host: String,
    /// The API's address as an async tool reaches it: its calls carry
    /// `{callback_base_url}/api/v1/callbacks/{token}` (default `http://{server.host}:{server.port}`).
    pub callback_base_url: Option<String>,
    /// How long an async tool's step waits for its callback; a heartbeat extends it.
    pub async_timeout_secs: f64,
    /// How often the maintenance loop looks for waits whose time has come (sleeps, timeouts).
    pub wait_check_ms: u64,
}

impl WorkerSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Invalid(m.to_string()));
        let w = self;
        if w.concurrency == 0 {
            return bad("worker.concurrency must be at least 1");
        }
        if w.lease_secs == 0 {
            return bad("worker.lease_secs must be at least 1");
        }
        if !(w.async_timeout_secs > 0.0
            && w.async_timeout_secs <= crate::domain::wait::MAX_WAIT_SECS)
        {
            return bad("worker.async_timeout_secs must be above 0 and at most 30 days");
        }
        if w.wait_check_ms == 0 {
            return bad("worker.wait_check_ms must be at least 1");
        }
        if let Some(u) = &w.callback_base_url
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            return bad("worker.callback_base_url must start with http:// or https://");
        }
        if w.poll_ms == 0 {
            return bad("worker.poll_ms must be at least 1");
        }
        if w.claim_batch == Some(0) {
            return bad("worker.claim_batch must be at least 1");
        }
        if w.max_rescues == 0 {
            return bad("worker.max_rescues must be at least 1");
        }
        if w.rescue_interval_ms == 0 {
            return bad("worker.rescue_interval_ms must be at least 1");
        }
        if let Some(h) = w.heartbeat_secs
            && !(h >= 0.1 && h < w.lease_secs as f64)
        {
            return bad("worker.heartbeat_secs must be at least 0.1 and below worker.lease_secs");
        }
        if let Some(id) = &w.id
            && uuid::Uuid::parse_str(id).is_err()
        {
            return bad("worker.id must be a UUID");
        }
        if !(w.retry_backoff_coefficient.is_finite()
            && (1.0..=100.0).contains(&w.retry_backoff_coefficient))
        {
            return bad("worker.retry_backoff_coefficient must be between 1 and 100");
        }
        if w.retry_backoff_max_ms < w.retry_backoff_ms {
            return bad("worker.retry_backoff_max_ms must be at least worker.retry_backoff_ms");
        }
        if !(w.retry_max_elapsed_secs.is_finite() && w.retry_max_elapsed_secs >= 0.0) {
            return bad("worker.retry_max_elapsed_secs must be 0 (no limit) or more");
        }
        if !(w.circuit_cool_down_secs.is_finite() && w.circuit_cool_down_secs > 0.0) {
            return bad("worker.circuit_cool_down_secs must be above 0");
        }
        if !(1..=100).contains(&w.circuit_confirm_failures) {
            return bad("worker.circuit_confirm_failures must be between 1 and 100");
        }
        if !(w.tool_wait_max_secs.is_finite() && w.tool_wait_max_secs > 0.0) {
            return bad("worker.tool_wait_max_secs must be above 0");
        }
        if w.metrics_host.parse::<std::net::IpAddr>().is_err() {
            return bad("worker.metrics_host must be an IP address");
        }
        Ok(())
    }
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            id: None,
            concurrency: DEFAULT_CONCURRENCY,
            lease_secs: 30,
            poll_ms: 1000,
            claim_batch: None,
            shutdown_grace_secs: 20,
            retry_backoff_ms: 500,
            retry_backoff_max_ms: 60_000,
            retry_backoff_coefficient: 2.0,
            retry_max_elapsed_secs: 0.0,
            max_retry_after_secs: 300,
            circuit_failure_threshold: 5,
            circuit_cool_down_secs: 5.0,
            circuit_confirm_failures: 3,
            tool_wait_max_secs: 300.0,
            rescue_interval_ms: 2000,
            max_rescues: 3,
            heartbeat_secs: None,
            metrics_port: 0,
            metrics_host: "127.0.0.1".into(),
            callback_base_url: None,
            async_timeout_secs: 3600.0,
            wait_check_ms: 500,
        }
    }
}
