//! Configuration: `config.toml` → `config.{APP_ENV}.toml` → `APP_<SECTION>__<KEY>` environment
//! variables → defaults. `DATABASE_URL` is accepted as well as `APP_DATABASE__URL`.
//! Validated once at start-up; an invalid value is an error naming the key.

use std::path::Path;

use serde::Deserialize;

use crate::domain::Limits;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot parse {path}: {message}")]
    Parse { path: String, message: String },
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub database: DatabaseSettings,
    pub server: ServerSettings,
    pub worker: WorkerSettings,
    pub llm: LlmSettings,
    pub orchestrator: OrchestratorSettings,
    pub reflection: ReflectionSettings,
    pub retention: RetentionSettings,
    pub auth: AuthSettings,
    pub tools: ToolSettings,
    pub limits: LimitSettings,
    pub debug: DebugSettings,
    pub log: LogSettings,
    pub webhooks: WebhookSettings,
    pub secrets: SecretSettings,
    pub fairness: FairnessSettings,
    pub tenants: TenantSettings,
    pub bulk_actions: BulkActionSettings,
}

/// Bulk actions (`[bulk_actions]`): how the workers apply them.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BulkActionSettings {
    /// Tasks per batch (one transaction each; an abort waits for at most one batch).
    pub batch_size: u32,
    /// How often each worker looks for a running bulk action (stretched by the fleet's size).
    pub poll_ms: u64,
}

impl BulkActionSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Invalid(m.to_string()));
        if self.batch_size == 0 || self.batch_size > 10_000 {
            return bad("bulk_actions.batch_size must be between 1 and 10000");
        }
        if self.poll_ms == 0 || self.poll_ms > 3_600_000 {
            return bad("bulk_actions.poll_ms must be between 1 and 3600000");
        }
        Ok(())
    }
}

impl Default for BulkActionSettings {
    fn default() -> Self {
        Self {
            batch_size: 100,
            poll_ms: 1000,
        }
    }
}

/// Tenants (`[tenants]`): the caps each tenant gets unless `PUT /api/v1/tenants/{tenant}` gave
/// it its own.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TenantSettings {
    /// At most this many tasks of one tenant with running steps, across the fleet (0: no cap).
    pub max_running_tasks: u32,
    /// At most this many running steps of one tenant, across the fleet (0: no cap).
    pub max_running_steps: u32,
}

impl TenantSettings {
    pub fn caps(&self) -> crate::domain::tenant::Caps {
        crate::domain::tenant::Caps {
            max_running_tasks: self.max_running_tasks.min(i32::MAX as u32) as i32,
            max_running_steps: self.max_running_steps.min(i32::MAX as u32) as i32,
        }
    }
}

/// Fair queues (`[fairness]`): concurrency keys and priority aging.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FairnessSettings {
    /// The weight of a key no `/key-limits` pattern matches: within a priority, keys are served
    /// in proportion to their weights.
    pub default_weight: f64,
    /// A task waiting longer than this rises one priority level per interval (0: no aging).
    pub aging_interval_secs: u64,
    /// The most levels aging adds to a task.
    pub aging_max_boost: u32,
    /// Steps of one concurrency key that no `/key-limits` pattern caps, running at once across
    /// the fleet (0: no cap).
    pub default_max_running: u32,
}

impl Default for FairnessSettings {
    fn default() -> Self {
        Self {
            default_weight: 1.0,
            aging_interval_secs: 0,
            aging_max_boost: 5,
            default_max_running: 0,
        }
    }
}

/// Tool credentials (`[secrets]`).
#[derive(Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecretSettings {
    /// 32 bytes, base64 (`APP_SECRETS__KEY`): seals secrets at rest. Without it, `PUT /secrets`
    /// is refused and a tool header naming a secret fails its call.
    pub key: Option<String>,
}

impl std::fmt::Debug for SecretSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretSettings")
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Completion webhooks (`[webhooks]`).
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookSettings {
    /// The Standard Webhooks secret (`whsec_` + base64) that signs tasks' own webhooks (a
    /// subscription has its own). Without it, a submit with a `webhook` is refused.
    pub signing_secret: Option<String>,
    /// Tries of one delivery before it is dead.
    pub max_attempts: u32,
    /// First retry delay, doubled each try, up to `backoff_max_ms`.
    pub backoff_ms: u64,
    pub backoff_max_ms: u64,
    /// Per delivery request.
    pub timeout_ms: u64,
}

impl std::fmt::Debug for WebhookSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSettings")
            .field(
                "signing_secret",
                &self.signing_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("max_attempts", &self.max_attempts)
            .field("backoff_ms", &self.backoff_ms)
            .field("backoff_max_ms", &self.backoff_max_ms)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            signing_secret: None,
            max_attempts: 8,
            backoff_ms: 1000,
            backoff_max_ms: 3_600_000,
            timeout_ms: 10_000,
        }
    }
}

/// How the binaries log (`[log]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// `text` (default) or `json`: one JSON object per line, on stderr (logs) and stdout (the
    /// few notices a binary prints, such as the address the API listens on).
    pub format: LogFormat,
    /// OpenTelemetry export, off unless set: the base URL of an OTLP/HTTP collector
    /// (`http://collector:4318`); spans (request → task → step → attempt → LLM call, the
    /// LLM calls with GenAI semantic-convention attributes) go to `{otlp_endpoint}/v1/traces`
    /// as protobuf, batched.
    pub otlp_endpoint: Option<String>,
    /// The `service.name` the spans carry (default: the binary's name).
    pub otlp_service_name: Option<String>,
}

impl LogSettings {
    /// The OTLP endpoint when export is on (an empty value means off).
    pub fn otlp(&self) -> Option<&str> {
        self.otlp_endpoint
            .as_deref()
            .filter(|e| !e.trim().is_empty())
    }
}

/// The shape of every line a binary prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

impl LogFormat {
    /// The format asked for by `APP_LOG__FORMAT` alone: how to report a configuration that
    /// could not be loaded.
    pub fn from_env() -> Self {
        match std::env::var("APP_LOG__FORMAT") {
            Ok(v) if v.eq_ignore_ascii_case("json") => Self::Json,
            _ => Self::Text,
        }
    }
}

/// Audit aids, off by default (`[debug]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DebugSettings {
    /// Keep every LLM call's prompt messages and raw answer in `llm_calls.exchange` (credential
    /// values of the task's metadata and context are redacted).
    pub save_llm_exchanges: bool,
    /// Check every answer of the API against the OpenAPI document it serves; each mismatch is
    /// logged and appended to this file. The test harness sets it on every `trellis-api` it
    /// starts; it costs a buffered body per answer, so leave it unset in production.
    pub check_answers_file: Option<std::path::PathBuf>,
}

/// Access control of the API (CONTRACT.md "Access control").
#[derive(Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSettings {
    /// When set, this key is an admin key (only its hash is kept in memory).
    pub bootstrap_admin_key: Option<String>,
    /// Run without access control (the API logs a warning at start). Off by default.
    pub disabled: bool,
}

/// The bootstrap key never shows in `Debug` output.
impl std::fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthSettings")
            .field(
                "bootstrap_admin_key",
                &self.bootstrap_admin_key.as_ref().map(|_| "[redacted]"),
            )
            .field("disabled", &self.disabled)
            .finish()
    }
}

/// Outbound requests of HTTP tools and `http_request` (CONTRACT.md "Outbound requests").
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolSettings {
    /// Exceptions to the refused ranges, e.g. `["127.0.0.1/32", "10.1.0.0/16"]` (the
    /// environment takes them comma-separated). `None`: not set (`--dev` then allows loopback).
    #[serde(deserialize_with = "cidr_list")]
    pub allow_cidrs: Option<Vec<ipnet::IpNet>>,
    /// `false`: public addresses are refused too, so only `allow_cidrs` can be reached (an
    /// egress allow-list).
    pub allow_public: bool,
    /// A tool answer longer than this fails the attempt (`output_too_large`).
    pub max_output_bytes: u64,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            allow_cidrs: None,
            allow_public: true,
            max_output_bytes: 1_048_576,
        }
    }
}

/// Accepts a TOML array of CIDR strings or one comma-separated string.
fn cidr_list<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<ipnet::IpNet>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        One(String),
        Many(Vec<String>),
    }
    let items = match Raw::deserialize(d)? {
        Raw::One(s) => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        Raw::Many(v) => v,
    };
    items
        .iter()
        .map(|c| parse_cidr(c).map_err(serde::de::Error::custom))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// `10.0.0.0/8`, or a bare address meaning just that address.
pub fn parse_cidr(c: &str) -> Result<ipnet::IpNet, String> {
    c.parse::<ipnet::IpNet>()
        .or_else(|_| c.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("tools.allow_cidrs: {c:?} is not a CIDR (like 10.1.0.0/16)"))
}

/// Input limits (CONTRACT.md "Input limits").
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitSettings {
    /// A submitted (or resumed) plan with more steps is a 422.
    pub max_steps_per_plan: u32,
    /// Money a task may spend, in the price map's currency, unless its own `limits.max_cost` or
    /// its template's says otherwise (0: no cap).
    pub max_cost: f64,
    /// A task that has spent this fraction of its `max_cost` gets a `cost_warning` event.
    pub cost_warn_fraction: f64,
    /// How deep a tree of child tasks may grow: a root's children are at depth 1. A `task`
    /// call that would start a child deeper fails and stops its task (`child_depth_exceeded`).
    pub max_child_depth: u32,
    /// How many tasks may descend from one root task, over its whole life. A `task` call past
    /// it fails and stops its task (`descendants_exceeded`).
    pub max_descendants: u32,
    /// The largest `map.max_items` a plan may ask for (a 422 past it), and the most items any
    /// map runs.
    pub max_map_items: u32,
    /// How long a parent step waits on a child stopped in `needs_intervention` before the step
    /// fails (`child_task_failed`) and the parent's recovery takes over (0: at once).
    pub child_intervention_wait_secs: u64,
}

impl LimitSettings {
    /// What every plan is held to.
    pub fn plan_bounds(&self) -> crate::domain::plan::Bounds {
        crate::domain::plan::Bounds {
            max_steps: self.max_steps_per_plan as usize,
            max_map_items: self.max_map_items,
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Invalid(m.to_string()));
        if !(self.max_cost.is_finite() && (0.0..=1e9).contains(&self.max_cost)) {
            return bad("limits.max_cost must be between 0 (no cap) and 1000000000");
        }
        if !(self.cost_warn_fraction > 0.0 && self.cost_warn_fraction <= 1.0) {
            return bad("limits.cost_warn_fraction must be above 0 and at most 1");
        }
        if !(1..=100).contains(&self.max_child_depth) {
            return bad("limits.max_child_depth must be between 1 and 100");
        }
        if !(1..=10_000_000).contains(&self.max_descendants) {
            return bad("limits.max_descendants must be between 1 and 10000000");
        }
        if !(1..=1_000_000).contains(&self.max_map_items) {
            return bad("limits.max_map_items must be between 1 and 1000000");
        }
        if self.child_intervention_wait_secs > 365 * 86_400 {
            return bad("limits.child_intervention_wait_secs must be at most a year (31536000)");
        }
        if !(1..=100_000).contains(&self.max_steps_per_plan) {
            return bad("limits.max_steps_per_plan must be between 1 and 100000");
        }
        Ok(())
    }
}

impl Default for LimitSettings {
    fn default() -> Self {
        Self {
            max_steps_per_plan: 1000,
            max_cost: 0.0,
            cost_warn_fraction: crate::domain::limits::DEFAULT_COST_WARN_FRACTION,
            max_child_depth: 8,
            max_descendants: 10_000,
            max_map_items: 10_000,
            child_intervention_wait_secs: 0,
        }
    }
}

/// How long finished tasks are kept; the workers' maintenance deletes older ones.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionSettings {
    /// Tasks that ended `succeeded`, `failed` or `cancelled` longer ago than this are deleted
    /// with all their rows (their statistics stay in the daily roll-ups), and so are webhook
    /// deliveries delivered or given up as long ago. 0 keeps everything.
    pub finished_task_ttl_secs: u64,
    /// Tasks deleted per transaction.
    pub batch_size: u32,
    /// How often each worker looks for expired tasks.
    pub interval_secs: u64,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        Self {
            finished_task_ttl_secs: 604_800,
            batch_size: 500,
            interval_secs: 60,
        }
    }
}

/// Steps a worker runs at once unless `[worker] concurrency` says otherwise. Steps are mostly
/// waits on other services (HTTP, MCP, LLM calls), a running step costs about 3 KB, and a
/// worker's connections do not grow with it; larger batches are what make a drain fast
/// (docs/benchmarks-history.md, "Fleets and poolers": the drain rate stops growing at 128 to 256).
pub const DEFAULT_CONCURRENCY: u32 = 256;

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

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSettings {
    pub host: String,
    pub port: u16,
}

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

#[derive(Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSettings {
    /// OpenAI-compatible API root, e.g. `https://api.openai.com/v1` (no base_url: rules brain).
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub model: Option<String>,
    /// Per HTTP request (fractions allowed); default 60.
    pub timeout_secs: Option<f64>,
    /// Retries of 429, 5xx, timeouts and connection errors; default 3.
    pub max_retries: Option<u32>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    /// First retry delay, doubled each retry; default 500.
    pub retry_backoff_ms: Option<u64>,
    /// Default per-task cap on LLM calls (overridable at submit time); none: no cap.
    pub max_calls_per_task: Option<u32>,
    /// Default per-task cap on LLM tokens (overridable with `limits.max_llm_tokens`).
    pub max_tokens_per_task: Option<u64>,
    /// Nucleus sampling, sent with every request when set (0 < top_p ≤ 1).
    pub top_p: Option<f64>,
    /// A second OpenAI-compatible endpoint, asked when the primary fails after its retries.
    pub fallback_base_url: Option<String>,
    /// The fallback's model (default: `model`).
    pub fallback_model: Option<String>,
    pub fallback_api_key: Option<String>,
    /// The price map (`[[llm.prices]]`), set in the database at start like
    /// `PUT /api/v1/model-prices`: what each LLM call costs.
    pub prices: Vec<PriceSetting>,
}

/// One `[[llm.prices]]` entry: a model's prices per million tokens, from `valid_from` on.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PriceSetting {
    pub model: String,
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    #[serde(default)]
    pub cached_input_per_mtok: Option<f64>,
    /// RFC 3339 (default: always).
    #[serde(default)]
    pub valid_from: Option<String>,
}

impl PriceSetting {
    /// When the price starts (none: always), checked.
    pub fn valid_from(&self) -> Result<chrono::DateTime<chrono::Utc>, String> {
        match &self.valid_from {
            None => Ok(chrono::DateTime::UNIX_EPOCH),
            Some(t) => chrono::DateTime::parse_from_rfc3339(t)
                .map(|t| t.with_timezone(&chrono::Utc))
                .map_err(|_| format!("llm.prices: valid_from {t:?} is not an RFC 3339 time")),
        }
    }
}

impl LlmSettings {
    /// An LLM is configured (a non-empty `base_url`).
    pub fn enabled(&self) -> bool {
        self.base_url
            .as_deref()
            .is_some_and(|u| !u.trim().is_empty())
    }
}

impl LlmSettings {
    /// The `[llm]` checks of [`Settings::validate`].
    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Invalid(m.to_string()));
        let l = self;
        for p in &l.prices {
            let price = |v: f64| v.is_finite() && (0.0..=1e9).contains(&v);
            if p.model.is_empty() || p.model.len() > 200 {
                return bad("llm.prices: a model is 1 to 200 characters");
            }
            if !price(p.input_per_mtok)
                || !price(p.output_per_mtok)
                || !p.cached_input_per_mtok.is_none_or(price)
            {
                return bad("llm.prices: prices are between 0 and 1000000000 per million tokens");
            }
            p.valid_from().map_err(ConfigError::Invalid)?;
        }
        if let Some(t) = l.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return bad("llm.temperature must be between 0 and 2");
        }
        if let Some(u) = &l.base_url
            && l.enabled()
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            return bad("llm.base_url must be an http:// or https:// URL");
        }
        if let Some(u) = &l.fallback_base_url {
            let u = u.trim();
            if !(u.is_empty() || u.starts_with("http://") || u.starts_with("https://")) {
                return bad("llm.fallback_base_url must be an http:// or https:// URL");
            }
        }
        if let Some(p) = l.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            return bad("llm.top_p must be above 0 and at most 1");
        }
        if let Some(t) = l.timeout_secs
            && !(t > 0.0 && t <= 3600.0)
        {
            return bad("llm.timeout_secs must be more than 0 and at most 3600");
        }
        if l.max_retries.is_some_and(|n| n > 10) {
            return bad("llm.max_retries must be at most 10");
        }
        Ok(())
    }
}

/// The API key never shows in `Debug` output (settings may be logged).
impl std::fmt::Debug for LlmSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("model", &self.model)
            .field("timeout_secs", &self.timeout_secs)
            .field("max_retries", &self.max_retries)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("seed", &self.seed)
            .field("retry_backoff_ms", &self.retry_backoff_ms)
            .field("max_calls_per_task", &self.max_calls_per_task)
            .field("max_tokens_per_task", &self.max_tokens_per_task)
            .field("top_p", &self.top_p)
            .field("fallback_base_url", &self.fallback_base_url)
            .field("fallback_model", &self.fallback_model)
            .field(
                "fallback_api_key",
                &self.fallback_api_key.as_ref().map(|_| "[redacted]"),
            )
            .finish()
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OrchestratorSettings {
    pub max_reflection_rounds: u32,
    pub success_threshold: f64,
    pub enable_auto_reflection: bool,
    pub enable_parallel_execution: bool,
    pub parallel_max_concurrent: u32,
    pub enable_two_stage_planning: bool,
    pub two_stage_tool_threshold: u32,
    /// Default wall-time budget of a task from submission, in seconds (0: none); a task can
    /// set its own with `limits.task_timeout_secs`.
    pub task_timeout_secs: u32,
    /// At most this many tasks have steps running at once, fleet-wide (0: no cap).
    pub max_concurrent_tasks: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReflectionSettings {
    pub enable_step_level_reflection: bool,
    pub max_step_retries: u32,
    pub max_single_step_repairs: u32,
    /// Seed-style configs call it `max_task_replanning_attempts`.
    #[serde(alias = "max_task_replanning_attempts")]
    pub max_task_replans: u32,
    pub max_consecutive_failures: u32,
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

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 8080,
        }
    }
}

impl WorkerSettings {
    fn validate(&self) -> Result<(), ConfigError> {
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

impl Default for OrchestratorSettings {
    fn default() -> Self {
        Self {
            max_reflection_rounds: 5,
            success_threshold: 80.0,
            enable_auto_reflection: true,
            enable_parallel_execution: true,
            parallel_max_concurrent: 8,
            enable_two_stage_planning: true,
            two_stage_tool_threshold: 10,
            task_timeout_secs: 0,
            max_concurrent_tasks: 0,
        }
    }
}

impl Default for ReflectionSettings {
    fn default() -> Self {
        Self {
            enable_step_level_reflection: true,
            max_step_retries: 3,
            max_single_step_repairs: 1,
            max_task_replans: 1,
            max_consecutive_failures: 3,
        }
    }
}

const SECTIONS: [&str; 17] = [
    "database",
    "server",
    "worker",
    "llm",
    "orchestrator",
    "reflection",
    "retention",
    "auth",
    "tools",
    "limits",
    "debug",
    "log",
    "webhooks",
    "secrets",
    "fairness",
    "tenants",
    "bulk_actions",
];

impl Settings {
    /// Load from the working directory and the process environment.
    pub fn load() -> Result<Self, ConfigError> {
        let vars: Vec<(String, String)> = std::env::vars().collect();
        Self::load_from(Path::new("."), &vars)
    }

    /// Load from `dir` and the given environment (testable without touching the process env).
    pub fn load_from(dir: &Path, env: &[(String, String)]) -> Result<Self, ConfigError> {
        let mut merged = toml::Table::new();
        let app_env = env
            .iter()
            .find(|(k, _)| k == "APP_ENV")
            .map(|(_, v)| v.clone());
        let mut files = vec!["config.toml".to_string()];
        if let Some(app_env) = app_env.filter(|e| !e.is_empty()) {
            files.push(format!("config.{app_env}.toml"));
        }
        for file in files {
            let path = dir.join(&file);
            if !path.exists() {
                continue;
            }
            let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                path: path.display().to_string(),
                source,
            })?;
            let table: toml::Table =
                text.parse()
                    .map_err(|e: toml::de::Error| ConfigError::Parse {
                        path: path.display().to_string(),
                        message: e.to_string(),
                    })?;
            merge(&mut merged, table);
        }
        for (key, value) in env {
            let Some(rest) = key.strip_prefix("APP_") else {
                continue;
            };
            let Some((section, field)) = rest.split_once("__") else {
                continue;
            };
            let section = section.to_ascii_lowercase();
            if !SECTIONS.contains(&section.as_str()) {
                continue;
            }
            let field = field.to_ascii_lowercase();
            let entry = merged
                .entry(section.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let toml::Value::Table(t) = entry else {
                return Err(ConfigError::Invalid(format!("[{section}] must be a table")));
            };
            // text settings stay text even when they look like a number ("12345" as a key)
            let v = if TEXT_KEYS.contains(&(section.as_str(), field.as_str())) {
                toml::Value::String(value.clone())
            } else {
                env_value(value)
            };
            t.insert(field, v);
        }
        if let Some((_, url)) = env.iter().find(|(k, _)| k == "DATABASE_URL")
            && !url.is_empty()
        {
            let entry = merged
                .entry("database".to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            if let toml::Value::Table(t) = entry {
                t.insert("url".into(), toml::Value::String(url.clone()));
            }
        }
        let settings: Settings = toml::Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Invalid(e.to_string()))?;
        settings.validate()?;
        Ok(settings)
    }

    /// Every section's own checks (each section's `validate`), then the few across sections.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.worker.validate()?;
        if crate::secretbox::SecretBox::from_settings(self.secrets.key.as_deref()).is_err() {
            return invalid("secrets.key must be 32 bytes, base64");
        }
        self.webhooks.validate()?;
        self.database.validate()?;
        self.fairness.validate()?;
        self.tenants.validate()?;
        self.limits.validate()?;
        self.bulk_actions.validate()?;
        self.retention.validate()?;
        self.auth.validate()?;
        if self.tools.max_output_bytes == 0 {
            return invalid("tools.max_output_bytes must be at least 1");
        }
        self.orchestrator.validate()?;
        self.log.validate()?;
        self.llm.validate()
    }

    /// The database URL, or an error saying how to set it.
    pub fn database_url(&self) -> Result<&str, ConfigError> {
        self.database.url.as_deref().ok_or_else(|| {
            ConfigError::Invalid(
                "no database URL: set DATABASE_URL (or APP_DATABASE__URL, or [database] url)"
                    .into(),
            )
        })
    }
}

/// A configuration error naming what is wrong.
fn invalid(m: &str) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid(m.to_string()))
}

impl WebhookSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        if let Some(s) = &self.signing_secret
            && standardwebhooks::Webhook::new(s).is_err()
        {
            return invalid("webhooks.signing_secret must be whsec_ followed by base64");
        }
        if self.max_attempts == 0 || self.backoff_ms == 0 || self.timeout_ms == 0 {
            return invalid("webhooks.max_attempts, backoff_ms and timeout_ms must be at least 1");
        }
        Ok(())
    }
}

impl DatabaseSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.max_connections.is_some_and(|n| n < 2) {
            return invalid("database.max_connections must be at least 2");
        }
        if crate::store::Pooler::parse(&self.pooler).is_none() {
            return invalid("database.pooler must be none, session or transaction");
        }
        Ok(())
    }
}

impl FairnessSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        if !(0.001..=1000.0).contains(&self.default_weight) {
            return invalid("fairness.default_weight must be from 0.001 to 1000");
        }
        if self.aging_max_boost > 1000 {
            return invalid("fairness.aging_max_boost must be at most 1000");
        }
        if self.default_max_running > 1_000_000 {
            return invalid("fairness.default_max_running must be at most 1000000");
        }
        Ok(())
    }
}

impl TenantSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.max_running_tasks > 1_000_000 || self.max_running_steps > 1_000_000 {
            return invalid(
                "tenants.max_running_tasks and max_running_steps must be at most 1000000",
            );
        }
        Ok(())
    }
}

impl RetentionSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.batch_size == 0 || self.batch_size > 10_000 {
            return invalid("retention.batch_size must be between 1 and 10000");
        }
        if self.interval_secs == 0 {
            return invalid("retention.interval_secs must be at least 1");
        }
        Ok(())
    }
}

impl AuthSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        if self
            .bootstrap_admin_key
            .as_deref()
            .is_some_and(|k| k.trim().len() < 16)
        {
            return invalid("auth.bootstrap_admin_key must be at least 16 characters");
        }
        Ok(())
    }
}

impl OrchestratorSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.parallel_max_concurrent == 0 {
            return invalid("orchestrator.parallel_max_concurrent must be at least 1");
        }
        if self.max_reflection_rounds == 0 {
            return invalid("orchestrator.max_reflection_rounds must be at least 1");
        }
        if !(0.0..=100.0).contains(&self.success_threshold) {
            return invalid("orchestrator.success_threshold must be between 0 and 100");
        }
        if self.task_timeout_secs > crate::domain::MAX_TASK_TIMEOUT_SECS as u32 {
            return invalid(&format!(
                "orchestrator.task_timeout_secs must be at most {} (one year)",
                crate::domain::MAX_TASK_TIMEOUT_SECS
            ));
        }
        Ok(())
    }
}

impl LogSettings {
    fn validate(&self) -> Result<(), ConfigError> {
        if let Some(e) = self.otlp() {
            let ok = url::Url::parse(e)
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
            if !ok {
                return invalid("log.otlp_endpoint must be an http:// or https:// URL");
            }
        }
        if self
            .otlp_service_name
            .as_deref()
            .is_some_and(|n| n.trim().is_empty())
        {
            return invalid("log.otlp_service_name must not be empty");
        }
        Ok(())
    }
}

/// Settings whose environment value is always taken as text.
const TEXT_KEYS: &[(&str, &str)] = &[
    ("database", "url"),
    ("database", "listen_url"),
    ("database", "pooler"),
    ("database", "application_name"),
    ("server", "host"),
    ("worker", "id"),
    ("llm", "base_url"),
    ("llm", "api_key"),
    ("llm", "model"),
    ("auth", "bootstrap_admin_key"),
    ("tools", "allow_cidrs"),
    ("worker", "callback_base_url"),
    ("webhooks", "signing_secret"),
    ("secrets", "key"),
];

/// Environment values are TOML literals when they parse as one (numbers, booleans), else strings.
fn env_value(raw: &str) -> toml::Value {
    let probe = format!("v = {raw}");
    match probe.parse::<toml::Table>() {
        Ok(mut t) => match t.remove("v") {
            Some(
                v @ (toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_)),
            ) => v,
            _ => toml::Value::String(raw.to_string()),
        },
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

fn merge(into: &mut toml::Table, from: toml::Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

impl Limits {
    /// The limits configuration puts in force for new tasks.
    pub fn from_settings(s: &Settings) -> Self {
        let r = &s.reflection;
        let o = &s.orchestrator;
        Limits {
            max_step_retries: r.max_step_retries as i32,
            max_single_step_repairs: r.max_single_step_repairs as i32,
            max_task_replans: r.max_task_replans as i32,
            max_consecutive_failures: r.max_consecutive_failures as i32,
            max_reflection_rounds: o.max_reflection_rounds as i32,
            max_concurrent_steps: if o.enable_parallel_execution {
                o.parallel_max_concurrent as i32
            } else {
                1
            },
            step_reflection: r.enable_step_level_reflection,
            auto_reflection: o.enable_auto_reflection,
            success_threshold: o.success_threshold,
            max_llm_calls: s.llm.max_calls_per_task.map(|n| n as i32),
            max_llm_tokens: s.llm.max_tokens_per_task.map(|n| n as i64),
            max_cost: (s.limits.max_cost > 0.0).then_some(s.limits.max_cost),
            task_timeout_secs: o.task_timeout_secs as i32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn every_section_takes_its_environment_overrides() {
        let dir = std::env::temp_dir().join(format!("trellis-cfg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = Settings::load_from(
            &dir,
            &env(&[
                ("APP_TENANTS__MAX_RUNNING_STEPS", "5"),
                ("APP_FAIRNESS__DEFAULT_MAX_RUNNING", "3"),
                ("APP_BULK_ACTIONS__BATCH_SIZE", "7"),
                ("APP_LIMITS__MAX_COST", "2.5"),
            ]),
        )
        .unwrap();
        assert_eq!(s.tenants.max_running_steps, 5);
        assert_eq!(s.fairness.default_max_running, 3);
        assert_eq!(s.bulk_actions.batch_size, 7);
        assert_eq!(s.limits.max_cost, 2.5);
        assert_eq!(s.limits.cost_warn_fraction, 0.8);
        let e = Settings::load_from(&dir, &env(&[("APP_LIMITS__COST_WARN_FRACTION", "0")]))
            .unwrap_err();
        assert!(e.to_string().contains("cost_warn_fraction"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn defaults_match_the_contract() {
        let dir = std::env::temp_dir().join(format!("trellis-cfg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = Settings::load_from(&dir, &[]).unwrap();
        assert_eq!(s.server.host, "127.0.0.1");
        assert_eq!(s.server.port, 8080);
        // the contract said 16; the fleet issue asked for a default that drains as fast as
        // a tuned configuration (docs/benchmarks-history.md, "Fleets and poolers")
        assert_eq!(s.worker.concurrency, DEFAULT_CONCURRENCY);
        assert_eq!(s.worker.lease_secs, 30);
        assert_eq!(s.worker.poll_ms, 1000);
        assert_eq!(s.reflection.max_step_retries, 3);
        assert_eq!(s.reflection.max_single_step_repairs, 1);
        assert_eq!(s.reflection.max_task_replans, 1);
        assert_eq!(s.reflection.max_consecutive_failures, 3);
        assert!(s.reflection.enable_step_level_reflection);
        assert_eq!(s.orchestrator.max_reflection_rounds, 5);
        assert_eq!(s.orchestrator.success_threshold, 80.0);
        assert!(s.orchestrator.enable_parallel_execution);
        assert_eq!(s.orchestrator.parallel_max_concurrent, 8);
        assert_eq!(s.orchestrator.two_stage_tool_threshold, 10);
        assert!(s.llm.base_url.is_none());
    }

    #[test]
    fn files_then_env_then_database_url() {
        let dir = std::env::temp_dir().join(format!("trellis-cfg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.toml"),
            "[server]\nport = 9000\nhost = \"0.0.0.0\"\n[worker]\nconcurrency = 4\n",
        )
        .unwrap();
        std::fs::write(dir.join("config.prod.toml"), "[worker]\nconcurrency = 5\n").unwrap();
        let s = Settings::load_from(
            &dir,
            &env(&[
                ("APP_ENV", "prod"),
                ("APP_SERVER__PORT", "0"),
                ("APP_WORKER__LEASE_SECS", "7"),
                ("APP_DATABASE__URL", "postgres://file"),
                ("DATABASE_URL", "postgres://env"),
                ("APP_ORCHESTRATOR__ENABLE_PARALLEL_EXECUTION", "false"),
                ("APP_LLM__API_KEY", "12345"),
                ("APP_LLM__MODEL", "7"),
                ("APP_LLM__TIMEOUT_SECS", "2.5"),
            ]),
        )
        .unwrap();
        assert_eq!(s.server.port, 0);
        assert_eq!(s.server.host, "0.0.0.0");
        assert_eq!(s.worker.concurrency, 5);
        assert_eq!(s.worker.lease_secs, 7);
        assert!(!s.orchestrator.enable_parallel_execution);
        assert_eq!(s.database_url().unwrap(), "postgres://env");
        assert_eq!(s.llm.api_key.as_deref(), Some("12345"));
        assert_eq!(s.llm.model.as_deref(), Some("7"));
        assert_eq!(s.llm.timeout_secs, Some(2.5));
    }

    #[test]
    fn the_example_config_parses_and_matches_the_defaults() {
        let dir = std::env::temp_dir().join(format!("trellis-cfg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.toml"),
            include_str!("../config.example.toml"),
        )
        .unwrap();
        let s = Settings::load_from(&dir, &[]).unwrap();
        let d = Settings::default();
        assert_eq!(format!("{s:?}"), format!("{d:?}"));
    }

    #[test]
    fn invalid_values_are_named() {
        let dir = std::env::temp_dir();
        let e = Settings::load_from(&dir, &env(&[("APP_WORKER__CONCURRENCY", "0")])).unwrap_err();
        assert!(e.to_string().contains("worker.concurrency"), "{e}");
        let e = Settings::load_from(&dir, &env(&[("APP_WORKER__LEASE_SECS", "soon")])).unwrap_err();
        assert!(e.to_string().contains("lease_secs"), "{e}");
        let e = Settings::load_from(&dir, &env(&[("APP_SERVER__NOPE", "1")])).unwrap_err();
        assert!(e.to_string().contains("nope"), "{e}");
        for (k, v, named) in [
            ("APP_LLM__BASE_URL", "localhost:11434", "llm.base_url"),
            ("APP_LLM__TIMEOUT_SECS", "0", "llm.timeout_secs"),
            ("APP_LLM__TEMPERATURE", "3", "llm.temperature"),
            ("APP_LLM__MAX_RETRIES", "50", "llm.max_retries"),
            ("APP_WORKER__HEARTBEAT_SECS", "30", "worker.heartbeat_secs"),
            ("APP_LLM__TOP_P", "1.5", "llm.top_p"),
            (
                "APP_LLM__FALLBACK_BASE_URL",
                "localhost:1",
                "llm.fallback_base_url",
            ),
            (
                "APP_LOG__OTLP_ENDPOINT",
                "collector:4318",
                "log.otlp_endpoint",
            ),
            ("APP_LOG__OTLP_ENDPOINT", "ftp://x", "log.otlp_endpoint"),
            ("APP_LOG__OTLP_SERVICE_NAME", " ", "log.otlp_service_name"),
            (
                "APP_ORCHESTRATOR__TASK_TIMEOUT_SECS",
                "99999999",
                "task_timeout_secs",
            ),
        ] {
            let e = Settings::load_from(&dir, &env(&[(k, v)])).unwrap_err();
            assert!(e.to_string().contains(named), "{k}: {e}");
        }
        // an empty base_url means "no LLM"
        let s = Settings::load_from(&dir, &env(&[("APP_LLM__BASE_URL", "")])).unwrap();
        assert!(!s.llm.enabled());
        // and an empty otlp_endpoint means no export
        let s = Settings::load_from(&dir, &env(&[("APP_LOG__OTLP_ENDPOINT", "")])).unwrap();
        assert_eq!(s.log.otlp(), None);
    }

    /// Seed-style names load: `max_task_replanning_attempts` is `max_task_replans`, and
    /// `heartbeat_secs` sets the worker's renewal period.
    #[test]
    fn seed_style_keys_load() {
        let dir = std::env::temp_dir().join(format!("trellis-seed-cfg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.toml"),
            "[reflection]\nmax_task_replanning_attempts = 4\n[worker]\nlease_secs = 30\nheartbeat_secs = 2.5\n",
        )
        .unwrap();
        let s = Settings::load_from(&dir, &[]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(s.reflection.max_task_replans, 4);
        let w = crate::worker::WorkerConfig::from_settings(&s);
        assert_eq!(w.heartbeat, std::time::Duration::from_millis(2500));
        assert_eq!(
            crate::worker::WorkerConfig::from_settings(&Settings::default()).heartbeat,
            std::time::Duration::from_secs(10)
        );
    }

    /// `[log]` and `[debug]` take environment overrides like every other section; an unknown
    /// log format is named.
    #[test]
    fn log_and_debug_sections_take_env_overrides() {
        let dir = std::env::temp_dir();
        let s = Settings::load_from(
            &dir,
            &env(&[
                ("APP_LOG__FORMAT", "json"),
                ("APP_DEBUG__SAVE_LLM_EXCHANGES", "true"),
            ]),
        )
        .unwrap();
        assert_eq!(s.log.format, LogFormat::Json);
        assert!(s.debug.save_llm_exchanges);
        assert_eq!(Settings::default().log.format, LogFormat::Text);
        let e = Settings::load_from(&dir, &env(&[("APP_LOG__FORMAT", "xml")])).unwrap_err();
        assert!(e.to_string().contains("xml"), "{e}");
    }
}
