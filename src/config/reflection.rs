//! `[reflection]`: the recovery budgets new tasks get (retries, repairs, replans).

use serde::Deserialize;

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
