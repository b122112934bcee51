//! The three-tier recovery decision, as pure functions of (counters + the brain's answer).
//! The store applies each result in one transaction; nothing here does I/O.
//!
//! 1. after a failed attempt: [`after_failure`] — re-queue a lost worker's step, plain retries when
//!    step reflection is off, else ask the brain for a step reflection;
//! 2. after the step reflection: [`after_step_reflection`] — tier 1 retry (adjusted parameters or
//!    alternative tool) while retries remain, else tier 2 repair while the failure is recoverable
//!    and repairs remain, else tier 3 overall reflection;
//! 3. after a repair attempt: a failed repair still counts and falls through to tier 3;
//! 4. after the overall reflection: [`after_overall`] — replan by strategy, stop for a human,
//!    or fail;
//! 5. after the evaluation of a finished plan: [`after_evaluation`] — succeed, reflect for another
//!    round, or fail.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{StepSpec, ToolFailure, WORKER_LOST};

/// How a step's retries are spaced and bounded (Temporal's activity retry policy): the tool's
/// `retry` field over the `[worker]` defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// The first retry's delay.
    pub initial_interval_ms: u64,
    /// Each further failure in a row multiplies the delay by this.
    pub backoff_coefficient: f64,
    pub max_interval_ms: u64,
    /// Failed attempts of a step of this tool before tier 1 escalates (None: the task's
    /// `max_step_retries` and `max_consecutive_failures` decide).
    pub max_attempts: Option<i32>,
    /// No tier 1 retry would start later than this after the streak's first failure (None: no
    /// limit).
    pub max_elapsed_ms: Option<u64>,
    /// A `Retry-After` longer than this is cut to it.
    pub max_retry_after_ms: u64,
}

/// A tool's retry policy (the tool field `retry`): each part optional, the workers' `[worker]`
/// defaults apply to the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RetryPolicy)]
pub struct RetrySpec {
    /// Failed attempts of a step of this tool before tier 1 escalates to a repair (default:
    /// the task's `max_step_retries` and `max_consecutive_failures`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 100)]
    pub max_attempts: Option<i32>,
    /// The first retry's delay (default `[worker] retry_backoff_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 86400000)]
    pub initial_interval_ms: Option<u64>,
    /// Each failure in a row multiplies the delay by this (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 100)]
    pub backoff_coefficient: Option<f64>,
    /// The longest delay (default `[worker] retry_backoff_max_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 86400000)]
    pub max_interval_ms: Option<u64>,
    /// No retry starts later than this after the first failure of the streak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(exclusive_minimum = 0, maximum = 2592000)]
    pub max_elapsed_secs: Option<f64>,
}

impl RetrySpec {
    /// What is out of range, if anything.
    pub fn problem(&self) -> Option<String> {
        const DAY_MS: u64 = 86_400_000;
        if self.max_attempts.is_some_and(|n| !(1..=100).contains(&n)) {
            return Some("retry.max_attempts must be between 1 and 100".into());
        }
        if self.initial_interval_ms.is_some_and(|ms| ms > DAY_MS) {
            return Some(format!(
                "retry.initial_interval_ms must be at most {DAY_MS}"
            ));
        }
        if self.max_interval_ms.is_some_and(|ms| ms > DAY_MS) {
            return Some(format!("retry.max_interval_ms must be at most {DAY_MS}"));
        }
        if let (Some(a), Some(b)) = (self.initial_interval_ms, self.max_interval_ms)
            && b < a
        {
            return Some("retry.max_interval_ms must be at least retry.initial_interval_ms".into());
        }
        if self
            .backoff_coefficient
            .is_some_and(|c| !(c.is_finite() && (1.0..=100.0).contains(&c)))
        {
            return Some("retry.backoff_coefficient must be between 1 and 100".into());
        }
        if self
            .max_elapsed_secs
            .is_some_and(|s| !(s.is_finite() && s > 0.0 && s <= 2_592_000.0))
        {
            return Some(
                "retry.max_elapsed_secs must be above 0 and at most 2592000 (30 days)".into(),
            );
        }
        None
    }
}

impl RetryPolicy {
    /// `spec` over these defaults.
    pub fn with(self, spec: Option<&RetrySpec>) -> RetryPolicy {
        let Some(s) = spec else { return self };
        RetryPolicy {
            initial_interval_ms: s.initial_interval_ms.unwrap_or(self.initial_interval_ms),
            backoff_coefficient: s.backoff_coefficient.unwrap_or(self.backoff_coefficient),
            max_interval_ms: s.max_interval_ms.unwrap_or(self.max_interval_ms),
            max_attempts: s.max_attempts.or(self.max_attempts),
            max_elapsed_ms: s
                .max_elapsed_secs
                .map(|secs| (secs * 1000.0) as u64)
                .or(self.max_elapsed_ms),
            max_retry_after_ms: self.max_retry_after_ms,
        }
    }

    /// The backoff before the attempt that follows `failures` failures in a row:
    /// `initial × coefficient^(failures − 1)`, at most `max_interval`.
    pub fn backoff_ms(&self, failures: i32) -> u64 {
        let exp = (failures.max(1) - 1).min(64);
        let ms = self.initial_interval_ms as f64 * self.backoff_coefficient.max(1.0).powi(exp);
        if ms.is_finite() {
            (ms as u64).min(self.max_interval_ms)
        } else {
            self.max_interval_ms
        }
    }

    /// When the step may run again after `f`: the backoff of its streak for a transient
    /// failure (nothing for one whose fix needs no waiting: a wrong parameter, another tool),
    /// and never before the tool's `Retry-After` (capped).
    pub fn delay_ms(&self, streak: &Streak, f: &ToolFailure) -> u64 {
        let backoff = if f.retryable {
            self.backoff_ms(streak.failures)
        } else {
            0
        };
        let asked = u64::from(f.retry_after_ms.unwrap_or(0)).min(self.max_retry_after_ms);
        backoff.max(asked)
    }

    /// The failure as recovery must read it when the time it asks to wait (`Retry-After`, a
    /// reset, a body's retry time) ends past the step's wait limit (`limit_ms`, counted from
    /// its streak's first failure): not retryable, the reason said at once, instead of a wait
    /// that could only end in the same failure. None: it can wait.
    pub fn past_wait_limit(streak: &Streak, f: &ToolFailure, limit_ms: u64) -> Option<ToolFailure> {
        let asked = u64::from(f.retry_after_ms?);
        if !f.retryable || streak.elapsed_ms.saturating_add(asked) <= limit_ms {
            return None;
        }
        let mut past = f.clone();
        past.retryable = false;
        past.message = format!(
            "{} (the tool asks to come back in {:.1} s, past this step's wait limit of {:.1} s)",
            f.message,
            asked as f64 / 1000.0,
            limit_ms as f64 / 1000.0
        );
        Some(past)
    }

    /// Whether tier 1 may run the step again after `delay_ms`.
    pub fn retries_left(&self, c: &Counters, streak: &Streak, delay_ms: u64) -> bool {
        let in_time = self
            .max_elapsed_ms
            .is_none_or(|max| streak.elapsed_ms.saturating_add(delay_ms) <= max);
        let by_count = match self.max_attempts {
            Some(n) => c.retry_count < n,
            None => {
                c.retry_count < c.max_step_retries
                    && c.consecutive_failures < c.max_consecutive_failures
            }
        };
        in_time && by_count
    }
}

/// A step's failed attempts in a row, under its step key (across tier 1 retries, repairs and
/// replans, since its last success), this failure included, and the time since the first: the
/// backoff keeps growing across tiers instead of starting over at each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Streak {
    pub failures: i32,
    pub elapsed_ms: u64,
}

/// Knobs of the failure path that come from worker configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailurePolicy {
    /// The default retry policy (a tool's `retry` field overrides parts of it).
    pub retry: RetryPolicy,
    /// The default circuit breaker (a tool's `circuit_breaker` field overrides parts of it).
    pub breaker: super::circuit::Breaker,
    pub max_rescues: i32,
    /// Lease length of decisions this worker creates and runs at once.
    pub lease_secs: f64,
    /// How long a step may wait on its tool's circuit or hold when the tool's retry policy
    /// names no `max_elapsed` ([`super::circuit::after_wait`]).
    pub max_wait_ms: u64,
}

impl FailurePolicy {
    /// A fixed backoff of `backoff_ms` (no growth), no elapsed limit, `Retry-After` capped at
    /// five minutes, the circuit breaker off.
    pub const fn fixed(backoff_ms: u64, max_rescues: i32, lease_secs: f64) -> Self {
        FailurePolicy {
            retry: RetryPolicy {
                initial_interval_ms: backoff_ms,
                backoff_coefficient: 1.0,
                max_interval_ms: backoff_ms,
                max_attempts: None,
                max_elapsed_ms: None,
                max_retry_after_ms: 300_000,
            },
            breaker: super::circuit::Breaker {
                failure_threshold: 0,
                cool_down_ms: 30_000,
                confirm_failures: 1,
            },
            max_rescues,
            lease_secs,
            max_wait_ms: 300_000,
        }
    }
}

/// Counters (after this failure's increments) and the limits of one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// `step_retry_count`: failed attempts of this step since it (re)started.
    pub retry_count: i32,
    pub max_step_retries: i32,
    pub single_step_repair_count: i32,
    pub max_single_step_repairs: i32,
    pub task_replan_count: i32,
    pub max_task_replans: i32,
    /// Failed attempts since the last success or replan.
    pub consecutive_failures: i32,
    pub max_consecutive_failures: i32,
    pub round: i32,
    pub max_reflection_rounds: i32,
    /// Times this step's worker was lost.
    pub rescue_count: i32,
    pub max_rescues: i32,
}

// ---------------------------------------------------------------- step 1: the failed attempt

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterFailure {
    /// Run the same step again after `delay_ms` (database time).
    Retry { delay_ms: u64 },
    /// Ask the brain for a step reflection (a claimable decision).
    Reflect,
    /// The step fails for good and so does the task.
    FailTask { reason: String },
}

/// Decide right after a failed attempt has been recorded and counted.
pub fn after_failure(
    c: &Counters,
    failure: &ToolFailure,
    step_reflection: bool,
    retry: (&RetryPolicy, &Streak),
) -> AfterFailure {
    let (policy, streak) = retry;
    if failure.category == WORKER_LOST {
        // not the tool's fault: re-queue at once, unless the step keeps killing its workers
        return if c.rescue_count >= c.max_rescues {
            AfterFailure::FailTask {
                reason: format!("poison step: its worker was lost {} times", c.rescue_count),
            }
        } else {
            AfterFailure::Retry { delay_ms: 0 }
        };
    }
    if super::failure::stops_task(&failure.category) {
        return AfterFailure::FailTask {
            reason: failure.message.clone(),
        };
    }
    if step_reflection {
        return AfterFailure::Reflect;
    }
    // step reflection off: plain retries of retryable errors, then fail
    if !failure.retryable {
        return AfterFailure::FailTask {
            reason: format!("non-retryable {}: {}", failure.category, failure.message),
        };
    }
    let delay_ms = policy.delay_ms(streak, failure);
    if policy.retries_left(c, streak, delay_ms) {
        return AfterFailure::Retry { delay_ms };
    }
    let limit = match policy.max_attempts {
        Some(n) => format!("{} of the tool's {n} attempts", c.retry_count),
        None if c.retry_count >= c.max_step_retries => {
            format!(
                "retries exhausted ({} of {})",
                c.retry_count, c.max_step_retries
            )
        }
        None if c.consecutive_failures >= c.max_consecutive_failures => format!(
            "{} consecutive failures (limit {})",
            c.consecutive_failures, c.max_consecutive_failures
        ),
        None => "the tool's retry time is used up".to_string(),
    };
    AfterFailure::FailTask {
        reason: format!("{limit}: {}", failure.message),
    }
}

/// A failed attempt as the failure path reads it under its locks: the task's counters (before
/// this failure), the step's, and whether the task still runs the step's plan version.
#[derive(Debug, Clone, Copy)]
pub struct Failed<'a> {
    pub failure: &'a ToolFailure,
    /// The task's counters and limits, the step's `retry_count` and `rescue_count` included,
    /// all before this failure.
    pub counters: Counters,
    /// The step's attempts before this one.
    pub attempts: i32,
    /// `Err(why)` when the task was cancelled, stopped or replanned while the step ran: the
    /// failure is recorded and nothing is started.
    pub active: Result<(), &'a str>,
    pub step_reflection: bool,
}

/// What a failed attempt counts, and what follows from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Counted {
    /// The worker was lost: a rescue, not the step's fault.
    pub lost: bool,
    /// The number of the attempt that failed.
    pub attempt: i32,
    /// The counters after this failure.
    pub counters: Counters,
    /// The task still runs this step's plan version.
    pub active: bool,
    pub transition: AfterFailure,
}

/// Count a failed attempt and decide what follows ([`after_failure`]). A lost worker is not the
/// step's fault: it counts as a rescue, not as a retry or a failure.
pub fn count_failure(f: &Failed<'_>, retry: (&RetryPolicy, &Streak)) -> Counted {
    let lost = f.failure.category == WORKER_LOST;
    let c = f.counters;
    let counters = Counters {
        retry_count: c.retry_count + i32::from(!lost),
        rescue_count: c.rescue_count + i32::from(lost),
        consecutive_failures: c.consecutive_failures + i32::from(!lost),
        ..c
    };
    let transition = match f.active {
        Ok(()) => after_failure(&counters, f.failure, f.step_reflection, retry),
        Err(why) => AfterFailure::FailTask {
            reason: why.to_string(),
        },
    };
    Counted {
        lost,
        attempt: f.attempts + 1,
        counters,
        active: f.active.is_ok(),
        transition,
    }
}

// ---------------------------------------------------------------- step 2: the step reflection

/// The only actions a step reflection may suggest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum StepAction {
    /// Run the same step again with these parameters merged in.
    RetryWithParams(BTreeMap<String, Value>),
    /// Run the same step again with another tool.
    RetryWithTool(String),
    /// The only way a step reflection leads to replanning or stopping.
    TriggerOverallReflection(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepReflection {
    pub root_cause_category: String,
    pub root_cause: String,
    pub analysis: String,
    /// 0–100.
    pub confidence: f64,
    pub is_recoverable: bool,
    #[serde(default)]
    pub alternative_solutions: Vec<String>,
    pub suggested_action: StepAction,
}

/// Used when the brain fails or answers nonsense: never a loop, straight to tier 3.
pub fn fallback_reflection(why: &str) -> StepReflection {
    StepReflection {
        root_cause_category: "reflection_error".into(),
        root_cause: format!("step reflection failed: {why}"),
        analysis: "the step reflection could not be obtained; escalating to overall reflection"
            .into(),
        confidence: 0.0,
        is_recoverable: false,
        alternative_solutions: vec![],
        suggested_action: StepAction::TriggerOverallReflection(format!(
            "step reflection failed: {why}"
        )),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum AfterStepReflection {
    /// Tier 1: same step, these parameters merged over the step's.
    RetryWithParams {
        params: BTreeMap<String, Value>,
        delay_ms: u64,
    },
    /// Tier 1: same step, another tool.
    RetryWithTool { tool: String, delay_ms: u64 },
    /// Tier 2: ask the brain to rewrite this one step.
    Repair,
    /// Tier 3: task-level reflection.
    OverallReflection { summary: String },
}

/// `tool_known`: whether a suggested alternative tool exists in the registry. `retry`: the
/// failed tool's policy, the step's streak and the failure (None: a failure no longer at hand,
/// retried at once).
pub fn after_step_reflection(
    c: &Counters,
    r: &StepReflection,
    tool_known: impl Fn(&str) -> bool,
    retry: (&RetryPolicy, &Streak, Option<&ToolFailure>),
) -> AfterStepReflection {
    let (policy, streak, failure) = retry;
    let delay_ms = failure.map_or(0, |f| policy.delay_ms(streak, f));
    let retries_left = policy.retries_left(c, streak, delay_ms);
    let summary = match &r.suggested_action {
        StepAction::RetryWithParams(params) if retries_left => {
            return AfterStepReflection::RetryWithParams {
                params: params.clone(),
                delay_ms,
            };
        }
        StepAction::RetryWithTool(tool) if retries_left && tool_known(tool) => {
            // another tool owes nothing to this one's backoff or Retry-After
            return AfterStepReflection::RetryWithTool {
                tool: tool.clone(),
                delay_ms: 0,
            };
        }
        StepAction::TriggerOverallReflection(s) => s.clone(),
        StepAction::RetryWithTool(tool) if !tool_known(tool) => {
            format!(
                "suggested alternative tool {tool:?} is not registered: {}",
                r.root_cause
            )
        }
        _ => format!(
            "retries exhausted ({} of {}, {} consecutive failures): {}",
            c.retry_count, c.max_step_retries, c.consecutive_failures, r.root_cause
        ),
    };
    if r.is_recoverable && c.single_step_repair_count < c.max_single_step_repairs {
        AfterStepReflection::Repair
    } else {
        AfterStepReflection::OverallReflection { summary }
    }
}

// ---------------------------------------------------------------- step 4: overall reflection

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "strategy_type", rename_all = "snake_case")]
pub enum Strategy {
    FullReplan,
    ReplanFromStep {
        step_id: String,
        #[serde(default)]
        reason: String,
    },
    SkipSteps {
        step_ids: Vec<String>,
        #[serde(default)]
        reason: String,
    },
    #[serde(rename = "add_remediation")]
    AddRemediationSteps {
        #[serde(default)]
        suggestions: Vec<String>,
    },
    AdjustDependencies {
        #[serde(default)]
        adjustments: Vec<String>,
    },
}

impl Strategy {
    pub fn name(&self) -> &'static str {
        match self {
            Strategy::FullReplan => "full_replan",
            Strategy::ReplanFromStep { .. } => "replan_from_step",
            Strategy::SkipSteps { .. } => "skip_steps",
            Strategy::AddRemediationSteps { .. } => "add_remediation",
            Strategy::AdjustDependencies { .. } => "adjust_dependencies",
        }
    }
}

/// A recovery action as the `recoveries` log records it (`tier`, `action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryAction {
    /// Tier 1: a plain retry after a backoff (step reflection off, or before it).
    Retry,
    /// Tier 1: a retry with adjusted parameters.
    RetryWithParams,
    /// Tier 1: a retry with an alternative tool.
    RetryWithTool,
    /// Tier 1: a retry with the parameters the tool's `input_schema` made unambiguous (no call
    /// was made with the broken ones).
    SchemaRepair,
    /// Tier 2: the step was repaired.
    Repair,
    /// Tier 2: the repair gave no usable step.
    RepairFailed,
    /// Tier 3: a new plan version with this strategy (its name).
    Replan(&'static str),
    /// Tier 3: the replan gave no usable plan.
    ReplanFailed,
    /// Tier 3: stopped for a person.
    Intervention,
    /// Tier 3: the task failed.
    Fail,
}

impl RecoveryAction {
    /// 1 = step retry, 2 = single-step repair, 3 = task level.
    pub fn tier(self) -> i32 {
        use RecoveryAction::*;
        match self {
            Retry | RetryWithParams | RetryWithTool | SchemaRepair => 1,
            Repair | RepairFailed => 2,
            Replan(_) | ReplanFailed | Intervention | Fail => 3,
        }
    }

    /// The `recoveries.action` text (`replan:<strategy>` for a replan).
    pub fn label(self) -> String {
        use RecoveryAction::*;
        match self {
            Retry => "retry".into(),
            RetryWithParams => "retry_with_params".into(),
            RetryWithTool => "retry_with_tool".into(),
            SchemaRepair => "schema_repair".into(),
            Repair => "repair".into(),
            RepairFailed => "repair_failed".into(),
            Replan(strategy) => format!("replan:{strategy}"),
            ReplanFailed => "replan_failed".into(),
            Intervention => "intervention".into(),
            Fail => "fail".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverallReflection {
    pub should_replan: bool,
    #[serde(default)]
    pub root_causes: Vec<String>,
    #[serde(default)]
    pub incorrect_assumptions: Vec<String>,
    #[serde(default)]
    pub alternative_approaches: Vec<String>,
    #[serde(default)]
    pub lessons_learned: Vec<String>,
    #[serde(default)]
    pub stop_reason: String,
    /// How a later plan could do better (seed 001); passed on to the replan.
    #[serde(default)]
    pub optimization_suggestions: Vec<String>,
    #[serde(default)]
    pub replanning_strategy: Option<Strategy>,
}

/// What led to the overall reflection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// A step's recovery escalated (tier 3).
    StepFailure,
    /// A finished plan was evaluated as not successful (round loop).
    Evaluation,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AfterOverall {
    Replan { strategy: Strategy },
    Intervention { reason: String },
    Fail { reason: String },
}

pub fn after_overall(c: &Counters, trigger: Trigger, o: &OverallReflection) -> AfterOverall {
    let strategy = o
        .replanning_strategy
        .clone()
        .unwrap_or(Strategy::FullReplan);
    match trigger {
        Trigger::StepFailure if !o.should_replan => AfterOverall::Intervention {
            reason: if o.stop_reason.is_empty() {
                "overall reflection decided to stop".into()
            } else {
                o.stop_reason.clone()
            },
        },
        Trigger::StepFailure if c.task_replan_count < c.max_task_replans => {
            AfterOverall::Replan { strategy }
        }
        Trigger::StepFailure => AfterOverall::Fail {
            reason: format!(
                "replans exhausted ({} of {})",
                c.task_replan_count, c.max_task_replans
            ),
        },
        Trigger::Evaluation if o.should_replan && c.round < c.max_reflection_rounds => {
            AfterOverall::Replan { strategy }
        }
        Trigger::Evaluation => AfterOverall::Fail {
            reason: if o.should_replan {
                format!("evaluation unsuccessful after {} rounds", c.round)
            } else {
                format!(
                    "evaluation unsuccessful; reflection stopped: {}",
                    o.stop_reason
                )
            },
        },
    }
}

// ---------------------------------------------------------------- step 5: evaluation

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dimensions {
    pub completeness: f64,
    pub correctness: f64,
    pub efficiency: f64,
    pub reliability: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub overall_score: f64,
    pub is_successful: bool,
    pub dimensions: Dimensions,
    #[serde(default)]
    pub successes: Vec<String>,
    #[serde(default)]
    pub failures: Vec<String>,
    #[serde(default)]
    pub improvement_suggestions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterEvaluation {
    Succeed,
    /// Another round: overall reflection triggered by the evaluation.
    Reflect,
    Fail {
        reason: String,
    },
}

/// `is_successful = overall ≥ success_threshold` is recomputed here, whatever the brain said.
pub fn after_evaluation(
    c: &Counters,
    e: &Evaluation,
    success_threshold: f64,
    auto_reflection: bool,
) -> AfterEvaluation {
    if e.overall_score >= success_threshold {
        AfterEvaluation::Succeed
    } else if auto_reflection && c.round < c.max_reflection_rounds {
        AfterEvaluation::Reflect
    } else {
        AfterEvaluation::Fail {
            reason: format!(
                "evaluation score {:.1} below the success threshold {success_threshold:.1} (round {} of {})",
                e.overall_score, c.round, c.max_reflection_rounds
            ),
        }
    }
}

// ---------------------------------------------------------------- replanning: what is kept

/// A step of the plan being replaced, as it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct OldStep {
    pub spec: StepSpec,
    pub succeeded: bool,
}

/// Which steps of the new plan keep their old result (not run again), which are skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Carry {
    pub kept: HashSet<String>,
    pub skipped: HashSet<String>,
}

/// `full_replan` keeps nothing (fresh context). Every other strategy keeps a succeeded step
/// whose definition is unchanged and none of whose dependencies run again;
/// `replan_from_step` never keeps the named step or anything after it;
/// `skip_steps` marks the named steps skipped (their dependents treat them as done).
pub fn carry_over(old: &[OldStep], new_plan: &[StepSpec], strategy: &Strategy) -> Carry {
    let mut carry = Carry::default();
    if matches!(strategy, Strategy::FullReplan) {
        return carry;
    }
    if let Strategy::SkipSteps { step_ids, .. } = strategy {
        carry.skipped = new_plan
            .iter()
            .filter(|s| step_ids.contains(&s.id))
            .map(|s| s.id.clone())
            .collect();
    }
    let from = match strategy {
        Strategy::ReplanFromStep { step_id, .. } => Some(step_id.as_str()),
        _ => None,
    };
    let position = |key: &str| old.iter().position(|o| o.spec.id == key);
    let from_pos = from.and_then(position);
    // new plan in dependency order, so a step's dependencies are decided before it
    let order = match super::plan::topological_order(&super::model::PlanSpec {
        steps: new_plan.to_vec(),
        reasoning: String::new(),
        estimated_duration: None,
    }) {
        Ok(o) => o,
        Err(_) => return carry,
    };
    for i in order {
        let s = &new_plan[i];
        if carry.skipped.contains(&s.id) {
            continue;
        }
        let Some(o) = old.iter().find(|o| o.spec.id == s.id) else {
            continue;
        };
        let before_from = match (from_pos, position(&s.id)) {
            (Some(f), Some(p)) => p < f,
            (Some(_), None) => false,
            (None, _) => true,
        };
        let deps_kept = s
            .dependencies
            .iter()
            .all(|d| carry.kept.contains(d) || carry.skipped.contains(d));
        let unchanged = o.spec.tool == s.tool
            && o.spec.parameters == s.parameters
            && o.spec.actions == s.actions
            && o.spec.dependencies == s.dependencies;
        if o.succeeded && unchanged && deps_kept && before_from && Some(s.id.as_str()) != from {
            carry.kept.insert(s.id.clone());
        }
    }
    carry
}

/// What a rerun from step `from` keeps: every succeeded step that is neither `from` nor
/// downstream of it and whose definition is unchanged (its output is copied, its tool is not
/// called again). Everything else runs, `from` and its descendants included.
pub fn rerun_carry(old: &[OldStep], new_plan: &[StepSpec], from: &str) -> Carry {
    let rerun = super::plan::downstream(new_plan, from);
    let adjust = Strategy::AdjustDependencies {
        adjustments: vec![],
    };
    let mut carry = carry_over(old, new_plan, &adjust);
    carry.kept.retain(|k| !rerun.contains(k));
    carry
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const P: RetryPolicy = RetryPolicy {
        initial_interval_ms: 100,
        backoff_coefficient: 2.0,
        max_interval_ms: 1000,
        max_attempts: None,
        max_elapsed_ms: None,
        max_retry_after_ms: 5000,
    };
    const S: Streak = Streak {
        failures: 1,
        elapsed_ms: 0,
    };
    const B: (&RetryPolicy, &Streak) = (&P, &S);

    fn tier1(
        f: Option<&ToolFailure>,
    ) -> (&'static RetryPolicy, &'static Streak, Option<&ToolFailure>) {
        (&P, &S, f)
    }

    fn counters() -> Counters {
        Counters {
            retry_count: 1,
            max_step_retries: 3,
            single_step_repair_count: 0,
            max_single_step_repairs: 1,
            task_replan_count: 0,
            max_task_replans: 1,
            consecutive_failures: 1,
            max_consecutive_failures: 3,
            round: 1,
            max_reflection_rounds: 5,
            rescue_count: 0,
            max_rescues: 3,
        }
    }

    fn reflection(action: StepAction, recoverable: bool) -> StepReflection {
        StepReflection {
            root_cause_category: "tool_error".into(),
            root_cause: "x".into(),
            analysis: String::new(),
            confidence: 80.0,
            is_recoverable: recoverable,
            alternative_solutions: vec![],
            suggested_action: action,
        }
    }

    #[test]
    fn backoff_grows_by_its_coefficient_and_caps() {
        assert_eq!(P.backoff_ms(1), 100);
        assert_eq!(P.backoff_ms(2), 200);
        assert_eq!(P.backoff_ms(3), 400);
        assert_eq!(P.backoff_ms(5), 1000);
        assert_eq!(P.backoff_ms(100), 1000);
        assert_eq!(P.backoff_ms(0), 100);
        let triple = RetryPolicy {
            backoff_coefficient: 3.0,
            max_interval_ms: u64::MAX,
            ..P
        };
        assert_eq!(triple.backoff_ms(3), 900);
        assert_eq!(triple.backoff_ms(i32::MAX), u64::MAX, "saturates");
    }

    #[test]
    fn the_delay_follows_the_streak_and_honours_retry_after() {
        let transient = ToolFailure::new("tool_error", "down", true);
        let streak = |n| Streak {
            failures: n,
            elapsed_ms: 0,
        };
        // the streak spans tiers: its fourth failure waits 800 ms, whatever the retry count
        assert_eq!(P.delay_ms(&streak(4), &transient), 800);
        // a fix that needs no waiting: none
        let param = ToolFailure::new("parameter_error", "bad", false);
        assert_eq!(P.delay_ms(&streak(4), &param), 0);
        // Retry-After: never earlier, capped
        let mut asked = transient.clone();
        asked.retry_after_ms = Some(3000);
        assert_eq!(P.delay_ms(&streak(1), &asked), 3000);
        asked.retry_after_ms = Some(60_000);
        assert_eq!(P.delay_ms(&streak(1), &asked), 5000);
        asked.retry_after_ms = Some(10);
        assert_eq!(P.delay_ms(&streak(4), &asked), 800);
    }

    #[test]
    fn a_wait_past_the_limit_is_said_at_once() {
        let mut f = ToolFailure::new("tool_error", "HTTP 429", true);
        let streak = Streak {
            failures: 1,
            elapsed_ms: 1_000,
        };
        assert_eq!(RetryPolicy::past_wait_limit(&streak, &f, 300_000), None);
        f.retry_after_ms = Some(299_000);
        assert_eq!(RetryPolicy::past_wait_limit(&streak, &f, 300_000), None);
        f.retry_after_ms = Some(3_600_000);
        let past = RetryPolicy::past_wait_limit(&streak, &f, 300_000).expect("past the limit");
        assert!(!past.retryable);
        assert!(past.message.contains("3600.0 s"), "{}", past.message);
        // a tool that allows long waits parks the step instead
        assert_eq!(RetryPolicy::past_wait_limit(&streak, &f, 86_400_000), None);
        // what is not retryable anyway stays as it is
        f.retryable = false;
        assert_eq!(RetryPolicy::past_wait_limit(&streak, &f, 300_000), None);
    }

    #[test]
    fn a_tool_policy_overrides_the_limits_and_bounds_the_time() {
        let spec = RetrySpec {
            max_attempts: Some(6),
            max_elapsed_secs: Some(2.0),
            initial_interval_ms: Some(50),
            ..Default::default()
        };
        let p = P.with(Some(&spec));
        assert_eq!(p.initial_interval_ms, 50);
        assert_eq!(p.max_interval_ms, 1000);
        assert_eq!(P.with(None), P);
        let c = |retry, consecutive| Counters {
            retry_count: retry,
            consecutive_failures: consecutive,
            ..counters()
        };
        let s = |ms| Streak {
            failures: 1,
            elapsed_ms: ms,
        };
        // the tool's attempts replace the task's retry and consecutive limits
        assert!(p.retries_left(&c(5, 5), &s(0), 0));
        assert!(!p.retries_left(&c(6, 1), &s(0), 0));
        assert!(!P.retries_left(&c(3, 1), &s(0), 0));
        assert!(!P.retries_left(&c(1, 3), &s(0), 0));
        // no retry starts past the elapsed limit
        assert!(p.retries_left(&c(1, 1), &s(1500), 500));
        assert!(!p.retries_left(&c(1, 1), &s(1500), 501));
    }

    #[test]
    fn after_failure_exhaustively() {
        use super::super::failure::category::{CHILD_DEPTH_EXCEEDED, DESCENDANTS_EXCEEDED};
        let categories = ["tool_error", CHILD_DEPTH_EXCEEDED, DESCENDANTS_EXCEEDED];
        for (category, reflect) in categories.into_iter().flat_map(|c| [(c, false), (c, true)]) {
            for retryable in [false, true] {
                for retry in 1..=4 {
                    for consecutive in 1..=4 {
                        let c = Counters {
                            retry_count: retry,
                            consecutive_failures: consecutive,
                            ..counters()
                        };
                        let f = ToolFailure::new(category, "x", retryable);
                        let got = after_failure(&c, &f, reflect, B);
                        // a tree at its limit stops the task whatever else holds
                        let want = if category != "tool_error" {
                            "fail"
                        } else if reflect {
                            "reflect"
                        } else if retryable && retry < 3 && consecutive < 3 {
                            "retry"
                        } else {
                            "fail"
                        };
                        let is = match got {
                            AfterFailure::Retry { .. } => "retry",
                            AfterFailure::Reflect => "reflect",
                            AfterFailure::FailTask { .. } => "fail",
                        };
                        assert_eq!(
                            is, want,
                            "{category} reflect={reflect} retryable={retryable} retry={retry} consecutive={consecutive}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_failure_counts_as_a_retry_a_lost_worker_as_a_rescue() {
        let tool = ToolFailure::new("tool_error", "x", true);
        let lost = ToolFailure::new(WORKER_LOST, "lease expired", true);
        let before = Counters {
            retry_count: 1,
            rescue_count: 1,
            consecutive_failures: 1,
            ..counters()
        };
        let failed = |f, active| Failed {
            failure: f,
            counters: before,
            attempts: 4,
            active,
            step_reflection: true,
        };
        let c = count_failure(&failed(&tool, Ok(())), B);
        assert!(!c.lost);
        assert_eq!(c.attempt, 5);
        assert_eq!(
            (
                c.counters.retry_count,
                c.counters.rescue_count,
                c.counters.consecutive_failures
            ),
            (2, 1, 2)
        );
        assert!(c.active);
        assert_eq!(c.transition, AfterFailure::Reflect);
        let c = count_failure(&failed(&lost, Ok(())), B);
        assert!(c.lost);
        assert_eq!(
            (
                c.counters.retry_count,
                c.counters.rescue_count,
                c.counters.consecutive_failures
            ),
            (1, 2, 1)
        );
        assert_eq!(c.transition, AfterFailure::Retry { delay_ms: 0 });
        // a task no longer running the step's version: counted, recorded, nothing started
        let c = count_failure(&failed(&tool, Err("task is cancelled")), B);
        assert!(!c.active);
        assert_eq!(c.counters.retry_count, 2);
        assert_eq!(
            c.transition,
            AfterFailure::FailTask {
                reason: "task is cancelled".into()
            }
        );
    }

    #[test]
    fn lost_workers_requeue_at_once_until_poison() {
        let lost = ToolFailure::new(WORKER_LOST, "lease expired", true);
        for rescues in 1..=4 {
            for reflect in [false, true] {
                let c = Counters {
                    rescue_count: rescues,
                    retry_count: 9,
                    consecutive_failures: 9,
                    ..counters()
                };
                let t = after_failure(&c, &lost, reflect, B);
                if rescues < 3 {
                    assert_eq!(t, AfterFailure::Retry { delay_ms: 0 });
                } else {
                    assert!(
                        matches!(t, AfterFailure::FailTask { ref reason } if reason.contains("poison"))
                    );
                }
            }
        }
    }

    /// Every combination of action × retries left × consecutive limit × recoverable × repairs left.
    #[test]
    fn after_step_reflection_exhaustively() {
        let actions = [
            StepAction::RetryWithParams(BTreeMap::from([("a".to_string(), json!(1))])),
            StepAction::RetryWithTool("alt".into()),
            StepAction::RetryWithTool("ghost".into()),
            StepAction::TriggerOverallReflection("s".into()),
        ];
        for action in &actions {
            for retry in [1, 2, 3] {
                for consecutive in [1, 3] {
                    for recoverable in [false, true] {
                        for repairs in [0, 1] {
                            let c = Counters {
                                retry_count: retry,
                                consecutive_failures: consecutive,
                                single_step_repair_count: repairs,
                                ..counters()
                            };
                            let r = reflection(action.clone(), recoverable);
                            let got = after_step_reflection(&c, &r, |t| t == "alt", tier1(None));
                            let retries_left = retry < 3 && consecutive < 3;
                            let tier1 = retries_left
                                && (matches!(action, StepAction::RetryWithParams(_))
                                    || *action == StepAction::RetryWithTool("alt".into()));
                            let expect = if tier1 {
                                "tier1"
                            } else if recoverable && repairs < 1 {
                                "repair"
                            } else {
                                "overall"
                            };
                            let is = match &got {
                                AfterStepReflection::RetryWithParams { params, .. } => {
                                    assert_eq!(params.get("a"), Some(&json!(1)));
                                    "tier1"
                                }
                                AfterStepReflection::RetryWithTool { tool, .. } => {
                                    assert_eq!(tool, "alt");
                                    "tier1"
                                }
                                AfterStepReflection::Repair => "repair",
                                AfterStepReflection::OverallReflection { .. } => "overall",
                            };
                            assert_eq!(
                                is, expect,
                                "{action:?} retry={retry} consecutive={consecutive} recoverable={recoverable} repairs={repairs}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_fallback_reflection_goes_straight_to_tier_3() {
        let r = fallback_reflection("bad json");
        assert_eq!(r.root_cause_category, "reflection_error");
        assert!(!r.is_recoverable);
        let got = after_step_reflection(&counters(), &r, |_| true, tier1(None));
        assert!(
            matches!(got, AfterStepReflection::OverallReflection { ref summary } if summary.contains("bad json"))
        );
    }

    #[test]
    fn after_overall_exhaustively() {
        for trigger in [Trigger::StepFailure, Trigger::Evaluation] {
            for should in [false, true] {
                for replans in [0, 1] {
                    for round in [1, 5] {
                        let c = Counters {
                            task_replan_count: replans,
                            round,
                            ..counters()
                        };
                        let o = OverallReflection {
                            should_replan: should,
                            root_causes: vec![],
                            incorrect_assumptions: vec![],
                            alternative_approaches: vec![],
                            lessons_learned: vec![],
                            stop_reason: "needs a human".into(),
                            optimization_suggestions: vec![],
                            replanning_strategy: Some(Strategy::SkipSteps {
                                step_ids: vec!["s".into()],
                                reason: String::new(),
                            }),
                        };
                        let got = after_overall(&c, trigger, &o);
                        let expect = match trigger {
                            Trigger::StepFailure if !should => "intervention",
                            Trigger::StepFailure if replans < 1 => "replan",
                            Trigger::StepFailure => "fail",
                            Trigger::Evaluation if should && round < 5 => "replan",
                            Trigger::Evaluation => "fail",
                        };
                        let is = match &got {
                            AfterOverall::Replan { strategy } => {
                                assert_eq!(strategy.name(), "skip_steps");
                                "replan"
                            }
                            AfterOverall::Intervention { reason } => {
                                assert_eq!(reason, "needs a human");
                                "intervention"
                            }
                            AfterOverall::Fail { .. } => "fail",
                        };
                        assert_eq!(
                            is, expect,
                            "{trigger:?} should={should} replans={replans} round={round}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn after_evaluation_exhaustively() {
        let e = |score: f64| Evaluation {
            overall_score: score,
            is_successful: true, // ignored: recomputed against the threshold
            dimensions: Dimensions {
                completeness: score,
                correctness: score,
                efficiency: score,
                reliability: score,
            },
            successes: vec![],
            failures: vec![],
            improvement_suggestions: vec![],
        };
        for score in [79.9, 80.0] {
            for auto in [false, true] {
                for round in [1, 5] {
                    let c = Counters {
                        round,
                        ..counters()
                    };
                    let got = after_evaluation(&c, &e(score), 80.0, auto);
                    let expect = if score >= 80.0 {
                        AfterEvaluation::Succeed
                    } else if auto && round < 5 {
                        AfterEvaluation::Reflect
                    } else {
                        got.clone()
                    };
                    assert_eq!(got, expect);
                    if score < 80.0 && !(auto && round < 5) {
                        assert!(matches!(got, AfterEvaluation::Fail { .. }));
                    }
                }
            }
        }
    }

    #[test]
    fn strategies_parse_from_the_wire_format() {
        let s: Strategy = serde_json::from_value(
            json!({"strategy_type": "replan_from_step", "step_id": "step_3", "reason": "r"}),
        )
        .unwrap();
        assert_eq!(
            s,
            Strategy::ReplanFromStep {
                step_id: "step_3".into(),
                reason: "r".into()
            }
        );
        let s: Strategy = serde_json::from_value(
            json!({"strategy_type": "add_remediation", "suggestions": ["a"]}),
        )
        .unwrap();
        assert_eq!(s.name(), "add_remediation");
        let s: Strategy =
            serde_json::from_value(json!({"strategy_type": "skip_steps", "step_ids": ["x"]}))
                .unwrap();
        assert_eq!(s.name(), "skip_steps");
        let s: Strategy = serde_json::from_value(
            json!({"strategy_type": "adjust_dependencies", "adjustments": []}),
        )
        .unwrap();
        assert_eq!(s.name(), "adjust_dependencies");
        let s: Strategy = serde_json::from_value(json!({"strategy_type": "full_replan"})).unwrap();
        assert_eq!(s, Strategy::FullReplan);
        let a: StepAction =
            serde_json::from_value(json!({"type": "retry_with_tool", "data": "t"})).unwrap();
        assert_eq!(a, StepAction::RetryWithTool("t".into()));
    }

    fn spec(id: &str, deps: &[&str]) -> StepSpec {
        serde_json::from_value(json!({"id": id, "tool": "echo", "dependencies": deps})).unwrap()
    }

    #[test]
    fn carry_over_by_strategy() {
        // a → b → c, and d independent; a, b, d succeeded, c failed
        let plan = vec![
            spec("a", &[]),
            spec("b", &["a"]),
            spec("c", &["b"]),
            spec("d", &[]),
        ];
        let old: Vec<OldStep> = plan
            .iter()
            .map(|s| OldStep {
                spec: s.clone(),
                succeeded: s.id != "c",
            })
            .collect();
        let keys = |c: &HashSet<String>| {
            let mut v: Vec<_> = c.iter().cloned().collect();
            v.sort();
            v
        };
        assert_eq!(
            carry_over(&old, &plan, &Strategy::FullReplan),
            Carry::default()
        );
        let c = carry_over(
            &old,
            &plan,
            &Strategy::ReplanFromStep {
                step_id: "b".into(),
                reason: String::new(),
            },
        );
        assert_eq!(keys(&c.kept), ["a"]);
        let c = carry_over(
            &old,
            &plan,
            &Strategy::ReplanFromStep {
                step_id: "c".into(),
                reason: String::new(),
            },
        );
        assert_eq!(keys(&c.kept), ["a", "b"]);
        let c = carry_over(
            &old,
            &plan,
            &Strategy::SkipSteps {
                step_ids: vec!["c".into()],
                reason: String::new(),
            },
        );
        assert_eq!(
            (keys(&c.kept), keys(&c.skipped)),
            (
                vec!["a".to_string(), "b".into(), "d".into()],
                vec!["c".to_string()]
            )
        );
        // a changed definition runs again, and so does everything depending on it
        let mut changed = plan.clone();
        changed[0].parameters = json!({"new": true});
        let c = carry_over(
            &old,
            &changed,
            &Strategy::AdjustDependencies {
                adjustments: vec![],
            },
        );
        assert_eq!(keys(&c.kept), ["d"]);
    }

    #[test]
    fn a_rerun_keeps_what_is_not_downstream_of_its_step() {
        // a → b → c, d independent and listed after b; all succeeded
        let plan = vec![
            spec("a", &[]),
            spec("b", &["a"]),
            spec("c", &["b"]),
            spec("d", &[]),
        ];
        let old: Vec<OldStep> = plan
            .iter()
            .map(|s| OldStep {
                spec: s.clone(),
                succeeded: true,
            })
            .collect();
        let keys = |c: &Carry| {
            let mut v: Vec<_> = c.kept.iter().cloned().collect();
            v.sort();
            v
        };
        assert_eq!(keys(&rerun_carry(&old, &plan, "b")), ["a", "d"]);
        assert_eq!(keys(&rerun_carry(&old, &plan, "a")), ["d"]);
        assert_eq!(keys(&rerun_carry(&old, &plan, "d")), ["a", "b", "c"]);
        // an unchanged step that failed runs again; nothing is ever skipped
        let mut failed = old.clone();
        failed[3].succeeded = false;
        let c = rerun_carry(&failed, &plan, "c");
        assert_eq!(
            (keys(&c), c.skipped.len()),
            (vec!["a".into(), "b".into()], 0)
        );
    }
}
