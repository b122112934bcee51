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
    /// Money the task may spend, in the price map's currency (`None`: no cap): past it the
    /// task stops (`cost_limit_exceeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Wall-time budget from submission, in seconds (0: none): past it the task fails with
    /// `deadline_exceeded`.
    pub task_timeout_secs: i32,
}

/// `[limits] cost_warn_fraction` by default: a task is warned at this fraction of its
/// `max_cost`.
pub const DEFAULT_COST_WARN_FRACTION: f64 = 0.8;

/// How many windows of a map's items may be live at once when its items waiting out a
/// backoff lend their places (a map whose window is its task's `max_concurrent_steps`): the
/// claim still runs at most a window of them at once, and a claim queue sync reads at most
/// this many windows of ready items.
pub const MAP_LEND_WINDOWS: i32 = 8;

/// What a task's spending calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostCheck {
    Within,
    /// It crossed the warning fraction of its limit (and was not warned before).
    Warn,
    /// It reached its limit: it stops.
    Stop,
}

/// What a task that has spent `cost` against `max_cost` calls for, `warned` already or not.
pub fn check_cost(cost: f64, max_cost: Option<f64>, warned: bool, warn_fraction: f64) -> CostCheck {
    match max_cost {
        None => CostCheck::Within,
        Some(max) if cost >= max => CostCheck::Stop,
        Some(max) if !warned && cost >= max * warn_fraction => CostCheck::Warn,
        Some(_) => CostCheck::Within,
    }
}

/// Whether a check's outcome sends the task its `cost_warning`: at the fraction, and at the
/// limit when no check saw the fraction first (one cost can cross both), so a stopped task is
/// always warned, once.
pub fn warns(check: CostCheck, warned: bool) -> bool {
    match check {
        CostCheck::Within => false,
        CostCheck::Warn => true,
        CostCheck::Stop => !warned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_is_warned_first_unless_it_was_warned_before() {
        use CostCheck::*;
        for (check, warned, want) in [
            (Within, false, false),
            (Within, true, false),
            (Warn, false, true),
            (Stop, false, true),
            (Stop, true, false),
        ] {
            assert_eq!(warns(check, warned), want, "{check:?}, warned {warned}");
        }
    }

    #[test]
    fn a_task_is_warned_once_then_stopped_at_its_limit() {
        use CostCheck::*;
        let cases = [
            (0.0, None, false, Within),
            (1e9, None, false, Within),
            (0.5, Some(1.0), false, Within),
            (0.8, Some(1.0), false, Warn),
            (0.9, Some(1.0), true, Within),
            (0.99, Some(1.0), false, Warn),
            (1.0, Some(1.0), false, Stop),
            (1.0, Some(1.0), true, Stop),
            (2.0, Some(1.0), true, Stop),
            (0.0, Some(0.0), false, Stop),
        ];
        for (cost, max, warned, want) in cases {
            assert_eq!(
                check_cost(cost, max, warned, 0.8),
                want,
                "{cost} of {max:?}, warned {warned}"
            );
        }
    }
}
