//! The failure decision (pure): what happens to a step and its task after a failed attempt.
//!
//! This is the seam the three-tier recovery engine plugs into: the store records the failed
//! attempt and the counters, calls [`decide`] with the state after the increments, and applies
//! the returned [`Transition`] in the same transaction. Today's policy is plain retries with
//! exponential backoff; step reflection, repair and replanning replace it without touching the
//! store's transaction shape.

use crate::model::{ToolFailure, WORKER_LOST};

/// Counters and limits after the failed attempt has been counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureState {
    /// `step_retry_count` after `+= 1`.
    pub retry_count: i32,
    pub max_step_retries: i32,
    /// `consecutive_failures` after `+= 1`.
    pub consecutive_failures: i32,
    pub max_consecutive_failures: i32,
    /// Times this step's worker died (after `+= 1` when this failure is a lost worker).
    pub rescue_count: i32,
    pub max_rescues: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base_ms: u64,
    pub max_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    /// Run the same step again after `delay_ms` (database time).
    Retry { delay_ms: u64 },
    /// The step fails for good and so does the task.
    FailTask { reason: String },
}

/// Decide after a failed attempt.
///
/// - a lost worker (`worker_lost`) is re-queued at once, unless the step has now been rescued
///   `max_rescues` times (poison);
/// - a retryable error is retried with exponential backoff while
///   `retry_count < max_step_retries` and `consecutive_failures < max_consecutive_failures`;
/// - anything else fails the task.
pub fn decide(state: &FailureState, failure: &ToolFailure, backoff: Backoff) -> Transition {
    if failure.category == WORKER_LOST {
        return if state.rescue_count >= state.max_rescues {
            Transition::FailTask {
                reason: format!(
                    "poison step: its worker was lost {} times",
                    state.rescue_count
                ),
            }
        } else {
            Transition::Retry { delay_ms: 0 }
        };
    }
    if !failure.retryable {
        return Transition::FailTask {
            reason: format!("non-retryable {}: {}", failure.category, failure.message),
        };
    }
    if state.retry_count >= state.max_step_retries {
        return Transition::FailTask {
            reason: format!(
                "retries exhausted ({} of {}): {}",
                state.retry_count, state.max_step_retries, failure.message
            ),
        };
    }
    if state.consecutive_failures >= state.max_consecutive_failures {
        return Transition::FailTask {
            reason: format!(
                "{} consecutive failures (limit {}): {}",
                state.consecutive_failures, state.max_consecutive_failures, failure.message
            ),
        };
    }
    Transition::Retry {
        delay_ms: backoff_ms(backoff, state.retry_count),
    }
}

/// `base * 2^(n-1)`, capped at `max`.
pub fn backoff_ms(b: Backoff, retry_count: i32) -> u64 {
    let exp = (retry_count.max(1) - 1).min(32) as u32;
    b.base_ms.saturating_mul(1u64 << exp).min(b.max_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Backoff = Backoff {
        base_ms: 100,
        max_ms: 1000,
    };

    fn state(retry: i32, consecutive: i32, rescues: i32) -> FailureState {
        FailureState {
            retry_count: retry,
            max_step_retries: 3,
            consecutive_failures: consecutive,
            max_consecutive_failures: 3,
            rescue_count: rescues,
            max_rescues: 3,
        }
    }

    #[test]
    fn exhaustive_over_small_counters() {
        for retryable in [false, true] {
            for retry in 1..=4 {
                for consecutive in 1..=4 {
                    let f = ToolFailure::new("tool_error", "x", retryable);
                    let t = decide(&state(retry, consecutive, 0), &f, B);
                    let expect_retry = retryable && retry < 3 && consecutive < 3;
                    assert_eq!(
                        matches!(t, Transition::Retry { .. }),
                        expect_retry,
                        "retryable={retryable} retry={retry} consecutive={consecutive}: {t:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn lost_workers_requeue_at_once_until_poison() {
        let lost = ToolFailure::new(WORKER_LOST, "lease expired", true);
        for rescues in 1..=4 {
            // retry and consecutive counters do not matter for a lost worker
            let t = decide(&state(9, 9, rescues), &lost, B);
            if rescues < 3 {
                assert_eq!(t, Transition::Retry { delay_ms: 0 });
            } else {
                assert!(
                    matches!(t, Transition::FailTask { ref reason } if reason.contains("poison"))
                );
            }
        }
    }

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff_ms(B, 1), 100);
        assert_eq!(backoff_ms(B, 2), 200);
        assert_eq!(backoff_ms(B, 3), 400);
        assert_eq!(backoff_ms(B, 5), 1000);
        assert_eq!(backoff_ms(B, 100), 1000);
        assert_eq!(backoff_ms(B, 0), 100);
    }
}
