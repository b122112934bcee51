//! The limits in force for one task.

use serde::{Deserialize, Serialize};

/// The largest task deadline accepted, in seconds (one year).
pub const MAX_TASK_TIMEOUT_SECS: i32 = 366 * 24 * 3600;

/// Limits in force for one task (configuration defaults, overridden per task at submit time).
/// Serialized only into the `task_submitted` event payload (and read back from it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub max_step_retries: i32,
    pub max_single_step_repairs: i32,
    pub max_task_replans: i32,
    pub max_consecutive_failures: i32,
    pub max_reflection_rounds: i32,
    /// 1 runs the task's steps one at a time in plan order.
    pub max_concurrent_steps: i32,
    /// Step-level reflection (three-tier recovery) on; off = plain retries then fail.
    pub step_reflection: bool,
    /// Reflect and replan when a finished plan is evaluated as unsuccessful.
    pub auto_reflection: bool,
    pub success_threshold: f64,
    /// LLM calls allowed per task (`None`: no cap).
    pub max_llm_calls: Option<i32>,
    /// LLM tokens (total) allowed per task (`None`: no cap).
    pub max_llm_tokens: Option<i64>,
    /// Wall-time budget from submission, in seconds (0: none): past it the task fails with
    /// `deadline_exceeded`.
    pub task_timeout_secs: i32,
}
