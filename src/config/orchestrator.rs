//! `[orchestrator]`: parallel steps, reflection rounds, task timeouts.

use serde::Deserialize;

use super::{ConfigError, invalid};

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

impl OrchestratorSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
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
