//! `[bulk_actions]`: how the workers apply bulk actions.

use serde::Deserialize;

use super::ConfigError;

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
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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
