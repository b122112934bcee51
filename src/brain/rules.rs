//! The deterministic rules brain (no LLM):
//!
//! - step reflection: an error with `hints` is a `parameter_error` → retry with those parameters;
//!   parameters that broke the tool's `input_schema` → the schema repair
//!   ([`crate::domain::schema_repair`]: lossless coercions, defaults, single values), each
//!   change named, or not recoverable when it would have to guess; parameters the tool's own
//!   4xx (or failed 2xx) answer named → each made the type its message asks for, by the same
//!   lossless coercions ([`crate::domain::schema_repair::repair_named`]); either refused →
//!   the step that produced the value, when a placeholder brought it; a `tool_unavailable` tool
//!   (404, 405, 410, 501) → an untried alternative, else not recoverable;
//!   a retryable error (timeout, connection, 5xx, `retryable: true`) is a `tool_error` → retry
//!   with an untried registered alternative tool (the best recent success rate first: the
//!   analysis says so), else the same tool; anything else → trigger
//!   overall reflection (not recoverable when the category is `external_error` or
//!   `approval_rejected`, or the error is a non-retryable 4xx without hints);
//! - repair: switch to an untried alternative tool; none → the same step again after the
//!   backoff when the failure was transient, else the repair fails;
//! - overall reflection: an optional failed step → `skip_steps`; a retryable or recoverable
//!   failure with replans left → `replan_from_step` at the failed step; otherwise stop;
//! - replan: the current plan as it stands (the strategy decides what is kept);
//! - evaluation: the share of required steps that succeeded.
//!
//! It cannot plan from a description.

use std::collections::BTreeMap;

use crate::domain::status::{AttemptStatus, StepStatus};

use super::{Answer, Brain, BrainError, BrainFuture, DecisionContext, Planned};
use crate::domain::failure::category;
use crate::domain::model::{PlanSpec, StepSpec, ToolFailure};
use crate::domain::recovery::{
    Dimensions, Evaluation, OverallReflection, StepAction, StepReflection, Strategy, Trigger,
};
use crate::domain::{schema_repair, upstream};

#[derive(Debug, Clone, Default)]
pub struct RulesBrain;

fn ready<'a, T: Send + 'a>(r: Result<T, BrainError>) -> BrainFuture<'a, T> {
    Box::pin(std::future::ready(r.map(Answer::plain)))
}

fn is_recoverable(f: &ToolFailure) -> bool {
    let plain_4xx = f.http_status.is_some_and(|s| (400..500).contains(&s)) && f.hints.is_empty();
    // a person said no: asking again is not the machine's call
    let rejected = f.category == crate::domain::wait::APPROVAL_REJECTED;
    !(f.category == category::EXTERNAL_ERROR || rejected || (!f.retryable && plain_4xx))
}

impl RulesBrain {
    pub fn reflect(ctx: &DecisionContext) -> Result<StepReflection, BrainError> {
        let f = ctx
            .input
            .failure
            .as_ref()
            .ok_or_else(|| BrainError::NoAnswer("no failure to reflect on".into()))?;
        if !f.hints.is_empty() {
            let hints: BTreeMap<_, _> = f.hints.clone();
            return Ok(StepReflection {
                root_cause_category: "parameter_error".into(),
                root_cause: f.message.clone(),
                analysis: format!(
                    "the tool named the parameters to change: {}",
                    hints.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
                confidence: 90.0,
                is_recoverable: true,
                alternative_solutions: vec![],
                suggested_action: StepAction::RetryWithParams(hints),
            });
        }
        if !f.schema_violations.is_empty() {
            return Ok(Self::schema_repair(ctx, f));
        }
        if f.category == category::TOOL_UNAVAILABLE {
            return Ok(Self::unavailable(ctx, f));
        }
        if f.retryable {
            let alts = ctx.untried_alternatives();
            let action = match alts.first() {
                Some(alt) => StepAction::RetryWithTool(alt.clone()),
                None => StepAction::RetryWithParams(BTreeMap::new()),
            };
            return Ok(StepReflection {
                root_cause_category: "tool_error".into(),
                root_cause: f.message.clone(),
                analysis: match (alts.first(), ctx.alternatives_rationale()) {
                    (Some(alt), Some(why)) => {
                        format!("transient tool failure; trying alternative tool {alt}: {why}")
                    }
                    (Some(alt), None) => {
                        format!("transient tool failure; trying alternative tool {alt}")
                    }
                    (None, _) => "transient tool failure; retrying the same tool".into(),
                },
                confidence: 70.0,
                is_recoverable: true,
                alternative_solutions: alts,
                suggested_action: action,
            });
        }
        let category = if f.category.is_empty() {
            "unknown_error".to_string()
        } else {
            f.category.clone()
        };
        Ok(StepReflection {
            root_cause_category: category.clone(),
            root_cause: f.message.clone(),
            analysis: "the error is not retryable and names no parameter to change".into(),
            confidence: 60.0,
            is_recoverable: is_recoverable(f),
            alternative_solutions: ctx.untried_alternatives(),
            suggested_action: StepAction::TriggerOverallReflection(format!(
                "{category}: {}",
                f.message
            )),
        })
    }

    /// Parameters that broke the tool's `input_schema` (no call was made): repaired where the
    /// schema makes the fix unambiguous, each change named; otherwise not recoverable.
    fn schema_repair(ctx: &DecisionContext, f: &ToolFailure) -> StepReflection {
        let key = ctx.input.step_key.as_deref().unwrap_or_default();
        let attempt = ctx
            .attempts
            .iter()
            .rev()
            .find(|a| a.step_key == key && a.status == AttemptStatus::Failed);
        let schema = attempt
            .and_then(|a| ctx.tools.get(&a.tool))
            .map(|t| &t.input_schema);
        let outcome = match (attempt, schema) {
            // the tool's own answer named them (a call was made): what it asked for, by name
            (Some(a), _) if f.http_status.is_some() => {
                schema_repair::repair_named(&a.parameters, &f.schema_violations)
            }
            (Some(a), Some(schema)) => schema_repair::repair(schema, &a.parameters),
            _ => schema_repair::Outcome::Refused {
                reasons: vec!["the failed call's parameters or its tool's schema are gone".into()],
            },
        };
        let mut r = StepReflection {
            root_cause_category: category::PARAMETER_ERROR.into(),
            root_cause: f.message.clone(),
            analysis: String::new(),
            confidence: 95.0,
            is_recoverable: true,
            alternative_solutions: vec![],
            suggested_action: StepAction::TriggerOverallReflection(String::new()),
        };
        match outcome {
            schema_repair::Outcome::Repaired { params, changes } => {
                let named: Vec<String> = changes.iter().map(|c| c.to_string()).collect();
                let by = match f.http_status {
                    Some(s) => format!("the tool's HTTP {s} answer names every refused value"),
                    None => "the tool's input_schema settles every violation".into(),
                };
                r.analysis = format!("schema repair: {by}; {}", named.join("; "));
                let fixed = schema_repair::changed_top_level(&params, &changes);
                r.suggested_action = StepAction::RetryWithParams(fixed.into_iter().collect());
            }
            schema_repair::Outcome::Refused { reasons } => {
                r.analysis = format!("schema repair refused: {}", reasons.join("; "));
                r.confidence = 80.0;
                r.is_recoverable = false;
                r.suggested_action =
                    StepAction::TriggerOverallReflection(format!("parameter_error: {}", f.message));
                // the value came from an earlier step: that step can do better, this one cannot
                if let Some(up) = Self::upstream(ctx, f) {
                    r.root_cause_category = "upstream_output".into();
                    r.analysis = format!(
                        "{}; the value at {} came from step {}'s output ({}): that step runs again, told why",
                        r.analysis, up.parameter, up.producer, up.placeholder
                    );
                    r.alternative_solutions = vec![format!("re-run step {}", up.producer)];
                }
            }
        }
        r
    }

    /// The tool is unusable (gone, or refusing the method): an untried alternative, or stop.
    fn unavailable(ctx: &DecisionContext, f: &ToolFailure) -> StepReflection {
        let alts = ctx.untried_alternatives();
        let (analysis, recoverable, action) = match alts.first() {
            Some(alt) => (
                format!("the tool itself is unusable; switching to alternative tool {alt}"),
                true,
                StepAction::RetryWithTool(alt.clone()),
            ),
            None => (
                "the tool itself is unusable and no untried alternative is registered".into(),
                false,
                StepAction::TriggerOverallReflection(format!(
                    "{}: {}",
                    category::TOOL_UNAVAILABLE,
                    f.message
                )),
            ),
        };
        StepReflection {
            root_cause_category: category::TOOL_UNAVAILABLE.into(),
            root_cause: f.message.clone(),
            analysis,
            confidence: 85.0,
            is_recoverable: recoverable,
            alternative_solutions: alts,
            suggested_action: action,
        }
    }

    /// An untried alternative tool; without one, a transient failure keeps its step as it is
    /// (it runs again after the backoff of its streak, which keeps growing).
    pub fn repair(ctx: &DecisionContext) -> Result<StepSpec, BrainError> {
        let step = ctx
            .step
            .as_ref()
            .ok_or_else(|| BrainError::NoAnswer("no step to repair".into()))?;
        let mut spec = step.effective_spec();
        if let Some(alt) = ctx.untried_alternatives().into_iter().next() {
            spec.tool = alt;
            return Ok(spec);
        }
        if ctx.input.failure.as_ref().is_some_and(|f| f.retryable) {
            return Ok(spec);
        }
        Err(BrainError::NoAnswer(format!(
            "no untried alternative tool for step {}",
            step.step_key
        )))
    }

    /// The earlier step whose output put the failing step's bad parameter there, if any.
    fn upstream(ctx: &DecisionContext, f: &ToolFailure) -> Option<upstream::Upstream> {
        let step = ctx.step.as_ref()?;
        upstream::upstream_of(&step.effective_spec().parameters, f)
    }

    pub fn overall(ctx: &DecisionContext) -> OverallReflection {
        let mut o = OverallReflection {
            should_replan: false,
            root_causes: vec![],
            incorrect_assumptions: vec![],
            alternative_approaches: vec![],
            lessons_learned: vec![],
            stop_reason: String::new(),
            optimization_suggestions: vec![],
            replanning_strategy: None,
        };
        if ctx.input.trigger == Some(Trigger::Evaluation) {
            o.root_causes
                .push("the finished plan was evaluated below the success threshold".into());
            o.stop_reason =
                "evaluation below the success threshold; the rules brain has no better plan".into();
            return o;
        }
        let key = ctx.input.step_key.clone().unwrap_or_default();
        // an item of a map (`m[3]`) is replanned as its map step: the plan names `m`
        let plan_key = key.split('[').next().unwrap_or_default().to_string();
        let failure = ctx.input.failure.as_ref();
        if let Some(f) = failure {
            o.root_causes
                .push(format!("step {key}: {} ({})", f.message, f.category));
        }
        let optional = ctx.step.as_ref().is_some_and(|s| s.optional);
        let recoverable = ctx
            .input
            .step_reflection
            .as_ref()
            .map(|r| r.is_recoverable)
            .unwrap_or(false);
        let retryable = failure.is_some_and(|f| f.retryable);
        let replans_left = ctx.counters.task_replan_count < ctx.counters.max_task_replans;
        let upstream = failure.and_then(|f| Self::upstream(ctx, f));
        if let (Some(up), false) = (&upstream, optional) {
            Self::heal_upstream(ctx, &mut o, up, &key, failure);
            return o;
        }
        if optional {
            o.should_replan = true;
            o.replanning_strategy = Some(Strategy::SkipSteps {
                step_ids: vec![key.clone()],
                reason: format!("step {key} is optional and failed"),
            });
        } else if (retryable || recoverable) && replans_left {
            o.should_replan = true;
            o.lessons_learned
                .push("earlier results can be kept; only the failed part runs again".into());
            o.replanning_strategy = Some(Strategy::ReplanFromStep {
                step_id: plan_key,
                reason: "the failure looked transient or recoverable".into(),
            });
        } else {
            o.stop_reason = match failure {
                Some(f) if !(retryable || recoverable) => format!(
                    "step {key} failed with a non-recoverable {}: {}",
                    f.category, f.message
                ),
                _ => format!("step {key} keeps failing and no replans are left"),
            };
        }
        o
    }

    /// The failing step's bad value came from an earlier step's output: re-run that step, told
    /// why, while replans are left; else stop, saying so.
    fn heal_upstream(
        ctx: &DecisionContext,
        o: &mut OverallReflection,
        up: &upstream::Upstream,
        key: &str,
        failure: Option<&ToolFailure>,
    ) {
        let replans_left = ctx.counters.task_replan_count < ctx.counters.max_task_replans;
        let why = format!(
            "step {key}'s parameter {} came from step {}'s output ({})",
            up.parameter, up.producer, up.placeholder
        );
        o.root_causes.push(why.clone());
        if replans_left {
            o.should_replan = true;
            o.lessons_learned.push(format!(
                "a bad value is healed where it is made: step {} runs again, told why",
                up.producer
            ));
            o.replanning_strategy = Some(Strategy::ReplanFromStep {
                step_id: up.producer.clone(),
                reason: format!(
                    "{why}, which step {key}'s tool rejects: {}",
                    failure.map(|f| f.message.as_str()).unwrap_or_default()
                ),
            });
        } else {
            let n = ctx.counters.task_replan_count;
            o.stop_reason = format!(
                "{why}, and it is still wrong after {n} re-run{} of step {}: {}",
                if n == 1 { "" } else { "s" },
                up.producer,
                failure.map(|f| f.message.as_str()).unwrap_or_default()
            );
        }
    }

    pub fn replan(ctx: &DecisionContext) -> PlanSpec {
        let mut plan = ctx.current_plan();
        plan.reasoning = format!(
            "rules brain: same plan, strategy {}",
            ctx.input
                .strategy
                .as_ref()
                .map(|s| s.name())
                .unwrap_or("full_replan")
        );
        plan
    }

    pub fn evaluate(ctx: &DecisionContext) -> Evaluation {
        let required: Vec<_> = ctx.steps.iter().filter(|s| !s.optional).collect();
        let done = required
            .iter()
            .filter(|s| s.status == StepStatus::Succeeded)
            .count();
        let completeness = if required.is_empty() {
            100.0
        } else {
            100.0 * done as f64 / required.len() as f64
        };
        let version_attempts: Vec<_> = ctx
            .attempts
            .iter()
            .filter(|a| a.plan_version == ctx.task.plan_version)
            .collect();
        let failed = version_attempts
            .iter()
            .filter(|a| a.status == AttemptStatus::Failed)
            .count();
        let total = version_attempts.len().max(1);
        let efficiency = (100.0 * ctx.steps.len().max(1) as f64 / total as f64).min(100.0);
        let reliability = 100.0 * (1.0 - failed as f64 / total as f64);
        Evaluation {
            overall_score: completeness,
            is_successful: completeness >= ctx.task.success_threshold,
            dimensions: Dimensions {
                completeness,
                correctness: completeness,
                efficiency,
                reliability,
            },
            successes: required
                .iter()
                .filter(|s| s.status == StepStatus::Succeeded)
                .map(|s| format!("{} succeeded", s.step_key))
                .collect(),
            failures: required
                .iter()
                .filter(|s| s.status != StepStatus::Succeeded)
                .map(|s| format!("{} is {}", s.step_key, s.status))
                .collect(),
            improvement_suggestions: if failed > 0 {
                vec![format!("{failed} failed attempts in this plan version")]
            } else {
                vec![]
            },
        }
    }
}

impl Brain for RulesBrain {
    fn name(&self) -> &'static str {
        "rules"
    }
    fn plan<'a>(&'a self, _ctx: &'a DecisionContext) -> BrainFuture<'a, Planned> {
        ready(Err(BrainError::Unsupported(
            "plan from a description (no LLM configured)",
        )))
    }
    fn reflect_step<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, StepReflection> {
        ready(Self::reflect(ctx))
    }
    fn repair_step<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, StepSpec> {
        ready(Self::repair(ctx))
    }
    fn reflect_overall<'a>(
        &'a self,
        ctx: &'a DecisionContext,
    ) -> BrainFuture<'a, OverallReflection> {
        ready(Ok(Self::overall(ctx)))
    }
    fn replan<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, Planned> {
        ready(Ok(Planned::single_stage(Self::replan(ctx))))
    }
    fn evaluate<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, Evaluation> {
        ready(Ok(Self::evaluate(ctx)))
    }

    fn pure_evaluation(&self) -> Option<fn(&DecisionContext) -> Evaluation> {
        Some(Self::evaluate)
    }
}
