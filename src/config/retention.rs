//! `[retention]`: how long finished tasks are kept.

use serde::Deserialize;

use super::{ConfigError, invalid};

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

impl RetentionSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.batch_size == 0 || self.batch_size > 10_000 {
            return invalid("retention.batch_size must be between 1 and 10000");
        }
        if self.interval_secs == 0 {
            return invalid("retention.interval_secs must be at least 1");
        }
        Ok(())
    }
}
