//! Configuration: `config.toml` → `config.{APP_ENV}.toml` → `APP_<SECTION>__<KEY>` environment
//! variables → defaults. `DATABASE_URL` is accepted as well as `APP_DATABASE__URL`.
//! Validated once at start-up; an invalid value is an error naming the key.
//!
//! One file per section, each with its type, its defaults and its `validate`: `database`,
//! `server`, `worker`, `llm`, `orchestrator`, `reflection`, `retention`, `auth`,
//! `tools`, `limits`, `debug`, `log`, `webhooks`, `secrets`, `fairness`,
//! `tenants`, `bulk_actions`. The sections an environment override may name, and which
//! settings take text, come from these types ([`Settings`]), never from a list.

use std::path::Path;

use serde::Deserialize;

use crate::domain::Limits;

mod auth;
mod bulk_actions;
mod database;
mod debug;
mod fairness;
mod limits;
mod llm;
mod log;
mod orchestrator;
mod reflection;
mod retention;
mod secrets;
mod server;
mod tenants;
mod tools;
mod webhooks;
mod worker;

pub use auth::AuthSettings;
pub use bulk_actions::BulkActionSettings;
pub use database::{DatabaseSettings, WORKER_POOL};
pub use debug::DebugSettings;
pub use fairness::FairnessSettings;
pub use limits::LimitSettings;
pub use llm::{LlmSettings, PriceSetting};
pub use log::{LogFormat, LogSettings};
pub use orchestrator::OrchestratorSettings;
pub use reflection::ReflectionSettings;
pub use retention::RetentionSettings;
pub use secrets::SecretSettings;
pub use server::ServerSettings;
pub use tenants::TenantSettings;
pub use tools::{ToolSettings, parse_cidr};
pub use webhooks::WebhookSettings;
pub use worker::{DEFAULT_CONCURRENCY, WorkerSettings};

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
            let (section, field) = (section.to_ascii_lowercase(), field.to_ascii_lowercase());
            let Some(v) = env_entry(&section, &field, value) else {
                continue;
            };
            let entry = merged
                .entry(section.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let toml::Value::Table(t) = entry else {
                return Err(ConfigError::Invalid(format!("[{section}] must be a table")));
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

    /// Every section's own checks (each section's `validate`, in its file; `[server]`,
    /// `[debug]` and `[reflection]` hold nothing their types let be wrong).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.worker.validate()?;
        self.secrets.validate()?;
        self.webhooks.validate()?;
        self.database.validate()?;
        self.fairness.validate()?;
        self.tenants.validate()?;
        self.limits.validate()?;
        self.bulk_actions.validate()?;
        self.retention.validate()?;
        self.auth.validate()?;
        self.tools.validate()?;
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

/// The value of `APP_<SECTION>__<KEY>=raw`, read as the types say; None when `[section]` is
/// not a section of [`Settings`] (another program's variable). A setting that takes text gets
/// the text as it is ("12345" as a key stays a string), any other the TOML literal `raw`
/// spells (a number, a boolean). The types answer both questions: the sections and the text
/// settings are never listed by hand.
fn env_entry(section: &str, key: &str, raw: &str) -> Option<toml::Value> {
    fn probe(section: &str, entry: Option<(&str, toml::Value)>) -> bool {
        let mut t = toml::Table::new();
        if let Some((k, v)) = entry {
            t.insert(k.into(), v);
        }
        let mut root = toml::Table::new();
        root.insert(section.into(), toml::Value::Table(t));
        toml::Value::Table(root).try_into::<Settings>().is_ok()
    }
    if !probe(section, None) {
        return None;
    }
    let text = toml::Value::String(raw.to_string());
    if probe(section, Some((key, text.clone()))) {
        return Some(text);
    }
    Some(env_value(raw))
}

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
            include_str!("../../config.example.toml"),
        )
        .unwrap();
        let s = Settings::load_from(&dir, &[]).unwrap();
        let d = Settings::default();
        assert_eq!(format!("{s:?}"), format!("{d:?}"));
    }

    /// Every setting `config.example.toml` names, set or commented out, takes an environment
    /// override that reads as the file would, and has a default: loading without it works.
    #[test]
    fn every_documented_setting_has_an_env_override_and_a_default() {
        let root = std::env::temp_dir().join(format!("trellis-doc-cfg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&root).unwrap();
        let empty = root.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        assert!(
            Settings::load_from(&empty, &[]).is_ok(),
            "the defaults load"
        );
        let (mut section, mut checked) = (String::new(), Vec::new());
        for line in include_str!("../../config.example.toml").lines() {
            let l = line.trim_start_matches('#').trim();
            if let Some(s) = l.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                section = s.to_string();
                continue;
            }
            let Ok(table) = l.parse::<toml::Table>() else {
                continue; // prose
            };
            let Some((key, value)) = table.into_iter().next() else {
                continue; // a comment
            };
            let raw = match &value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_) => {
                    value.to_string()
                }
                _ => continue,
            };
            let file = root.join(format!("{section}-{key}"));
            std::fs::create_dir_all(&file).unwrap();
            std::fs::write(
                file.join("config.toml"),
                format!("[{section}]\n{key} = {value}\n"),
            )
            .unwrap();
            let from_file = Settings::load_from(&file, &[]);
            let var = format!("APP_{}__{}", section.to_uppercase(), key.to_uppercase());
            let from_env = Settings::load_from(&empty, &env(&[(var.as_str(), raw.as_str())]));
            assert_eq!(
                format!("{from_file:?}"),
                format!("{from_env:?}"),
                "{var}={raw} does not read as [{section}] {key} = {value}"
            );
            // the override changes what it names (unless the example shows the default)
            let default = Settings::default();
            let differs = format!("{from_env:?}") != format!("{:?}", Ok::<_, ()>(default));
            checked.push((format!("{section}.{key}"), differs));
        }
        std::fs::remove_dir_all(&root).unwrap();
        assert!(checked.len() > 80, "only {} settings found", checked.len());
        assert!(
            checked.iter().filter(|(_, d)| *d).count() > 20,
            "few overrides changed anything: {checked:?}"
        );
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
