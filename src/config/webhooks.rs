//! `[webhooks]`: completion webhooks.

use serde::Deserialize;

use super::{ConfigError, invalid};

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

impl WebhookSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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
