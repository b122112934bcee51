//! `[log]`: how the binaries log.

use serde::Deserialize;

use super::{ConfigError, invalid};

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

impl LogSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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
