//! The deterministic rules brain (no LLM):
//!
//! - step reflection: an error with `hints` is a `parameter_error` → retry with those parameters;
//!   a retryable error (timeout, connection, 5xx, `retryable: true`) is a `tool_error` → retry
//!   with an untried registered alternative tool (the best recent success rate first: the
//!   analysis says so), else the same tool; anything else → trigger
//!   overall reflection (not recoverable when the category is `external_error` or the error is a
//!   non-retryable 4xx without hints);
//! - repair: switch to an untried alternative tool; none → the repair fails;
//! - overall reflection: an optional failed step → `skip_steps`; a retryable or recoverable
//!   failure with replans left → `replan_from_step` at the failed step; otherwise stop;
//! - replan: the current plan as it stands (the strategy decides what is kept);
//! - evaluation: the share of required steps that succeeded.
//!
//! It cannot plan from a description.

use std::collections::BTreeMap;

use crate::domain::status::{AttemptStatus, StepStatus};

use super::{Answer, Brain, BrainError, BrainFuture, DecisionContext, Planned};
use crate::domain::model::{PlanSpec, StepSpec, ToolFailure};
use crate::domain::recovery::{
    Dimensions, Evaluation, OverallReflection, StepAction, StepReflection, Strategy, Trigger,
};

#[derive(Debug, Clone, Default)]
pub struct RulesBrain;

fn ready<'a, T: Send + 'a>(r: Result<T, BrainError>) -> BrainFuture<'a, T> {
    Box::pin(std::future::ready(r.map(Answer::plain)))
}

fn is_recoverable(f: &ToolFailure) -> bool {
    let plain_4xx = f.http_status.is_some_and(|s| (400..500).contains(&s)) && f.hints.is_empty();
    !(f.category == "external_error" || (!f.retryable && plain_4xx))
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

    pub fn repair(ctx: &DecisionContext) -> Result<StepSpec, BrainError> {
        let step = ctx
            .step
            .as_ref()
            .ok_or_else(|| BrainError::NoAnswer("no step to repair".into()))?;
        let alt = ctx
            .untried_alternatives()
            .into_iter()
            .next()
            .ok_or_else(|| {
                BrainError::NoAnswer(format!(
                    "no untried alternative tool for step {}",
                    step.step_key
                ))
            })?;
        let mut spec = step.effective_spec();
        spec.tool = alt;
        Ok(spec)
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
                step_id: key.clone(),
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
