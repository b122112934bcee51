//! The brain: every decision the seeds name (select tools and plan, reflect on a step, repair a
//! step, reflect on the task, replan, evaluate). [`llm_brain::LlmBrain`] asks an
//! OpenAI-compatible model ([`llm`] is the client, [`prompts`] the prompts) when
//! `[llm] base_url` is configured; [`rules::RulesBrain`] is deterministic, needs no LLM, and is
//! the default otherwise (`rules`, `llm_brain`).
//!
//! Brain calls run inside claimable decisions (lease + fence) with no transaction open; a brain
//! error or an unusable answer becomes the fallback of SPEC §4, never a loop.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use crate::domain::decision::{
    Answer, DecisionContext, DecisionInput, DecisionOutcome, LlmCallRecord, Meter, Planned,
    ToolSelection, Usage,
};
use crate::domain::model::StepSpec;
use crate::domain::recovery::{Evaluation, OverallReflection, StepReflection};
pub use crate::domain::status::DecisionKind;

pub mod llm;
pub mod llm_brain;
pub mod prompts;
pub mod rules;

#[derive(Debug, Clone, thiserror::Error)]
pub enum BrainError {
    #[error("this brain cannot {0}")]
    Unsupported(&'static str),
    #[error("{0}")]
    NoAnswer(String),
}

pub type BrainFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<Answer<T>, BrainError>> + Send + 'a>>;

/// The decisions of SPEC §3–4.
pub trait Brain: Send + Sync + std::fmt::Debug {
    fn name(&self) -> &'static str;
    /// Plan a description-only task (`ctx.steps` is empty).
    fn plan<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, Planned>;
    fn reflect_step<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, StepReflection>;
    fn repair_step<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, StepSpec>;
    fn reflect_overall<'a>(
        &'a self,
        ctx: &'a DecisionContext,
    ) -> BrainFuture<'a, OverallReflection>;
    fn replan<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, Planned>;
    fn evaluate<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, Evaluation>;
    /// The evaluation as a pure function, when this brain's evaluation needs no I/O: the worker
    /// then applies it inside the completion that finishes a plan, with no evaluation decision.
    fn pure_evaluation(&self) -> Option<fn(&DecisionContext) -> Evaluation> {
        None
    }
}

/// Ask the brain for a decision's outcome. Brain errors and unusable answers become the
/// fallbacks of SPEC §4; a decision whose workers died `max_rescues` times skips the brain and
/// takes the fallback at once. Never fails, never loops.
pub async fn decide(
    brain: &dyn Brain,
    ctx: &DecisionContext,
    kind: DecisionKind,
    skip_brain: bool,
) -> DecisionOutcome {
    use DecisionOutcome as O;
    let text = |e: BrainError| e.to_string();
    match kind {
        DecisionKind::Plan => O::Plan(ask(skip_brain, || brain.plan(ctx)).await.map_err(text)),
        DecisionKind::StepRepair => O::Repair(
            ask(skip_brain, || brain.repair_step(ctx))
                .await
                .map_err(text),
        ),
        DecisionKind::Replan => {
            O::Replan(ask(skip_brain, || brain.replan(ctx)).await.map_err(text))
        }
        DecisionKind::StepReflection => match ask(skip_brain, || brain.reflect_step(ctx)).await {
            Ok(a) => O::StepReflection {
                reflection: a.value,
                raw: a.raw,
                fallback: false,
            },
            Err(e) => O::StepReflection {
                reflection: crate::domain::recovery::fallback_reflection(&e.to_string()),
                raw: None,
                fallback: true,
            },
        },
        DecisionKind::OverallReflection => {
            match ask(skip_brain, || brain.reflect_overall(ctx)).await {
                Ok(a) => O::Overall {
                    reflection: a.value,
                    raw: a.raw,
                    fallback: false,
                },
                Err(e) => O::Overall {
                    reflection: fallback_overall(&e),
                    raw: None,
                    fallback: true,
                },
            }
        }
        DecisionKind::Evaluation => match ask(skip_brain, || brain.evaluate(ctx)).await {
            Ok(a) => O::Evaluation {
                evaluation: a.value,
                raw: a.raw,
            },
            // the rules evaluation needs no I/O and cannot fail
            Err(_) => O::Evaluation {
                evaluation: rules::RulesBrain::evaluate(ctx),
                raw: None,
            },
        },
    }
}

/// The brain's answer, unless the decision lost its worker too often (then the brain is not
/// asked at all).
async fn ask<'a, T>(
    skip_brain: bool,
    call: impl FnOnce() -> BrainFuture<'a, T>,
) -> Result<Answer<T>, BrainError> {
    if skip_brain {
        return Err(BrainError::NoAnswer(
            "the decision lost its worker too many times".into(),
        ));
    }
    call().await
}

/// SPEC §4: an overall reflection that failed stops the task for a person.
fn fallback_overall(e: &BrainError) -> OverallReflection {
    OverallReflection {
        should_replan: false,
        root_causes: vec![],
        incorrect_assumptions: vec![],
        alternative_approaches: vec![],
        lessons_learned: vec![],
        stop_reason: format!("overall reflection failed: {e}"),
        optimization_suggestions: vec![],
        replanning_strategy: None,
    }
}

/// The brain the configuration asks for: the LLM brain when `[llm] base_url` is set, else the
/// rules brain.
pub fn from_settings(s: &crate::config::Settings) -> Arc<dyn Brain> {
    match llm_brain::LlmBrain::from_settings(s) {
        Some(b) => {
            tracing::info!(model = %b.model(), "decisions come from the LLM brain");
            Arc::new(b)
        }
        None => Arc::new(rules::RulesBrain),
    }
}
