//! `[fairness]`: fair queues: concurrency keys and priority aging.

use serde::Deserialize;

use super::{ConfigError, invalid};

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

impl FairnessSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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
