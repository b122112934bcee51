//! The brain: every decision the seeds name (select tools and plan, reflect on a step, repair a
//! step, reflect on the task, replan, evaluate). [`llm_brain::LlmBrain`] asks an
//! OpenAI-compatible model ([`llm`] is the client, [`prompts`] the prompts) when
//! `[llm] base_url` is configured; [`rules::RulesBrain`] is deterministic, needs no LLM, and is
//! the default otherwise.
//!
//! Brain calls run inside claimable decisions (lease + fence) with no transaction open; a brain
//! error or an unusable answer becomes the fallback of SPEC §4, never a loop.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::model::{PlanSpec, StepSpec, ToolFailure};
use crate::recovery::{Counters, Evaluation, OverallReflection, StepReflection, Strategy, Trigger};
use crate::store::tasks::{AttemptRow, StepRow, TaskRow};
use crate::tools::ToolDef;

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

/// A brain answer and, when there was one, the raw text it came from (kept for audit).
#[derive(Debug, Clone)]
pub struct Answer<T> {
    pub value: T,
    pub raw: Option<String>,
}

impl<T> Answer<T> {
    pub fn plain(value: T) -> Self {
        Self { value, raw: None }
    }
}

pub type BrainFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<Answer<T>, BrainError>> + Send + 'a>>;

/// The decision kinds (`decisions.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Plan a description-only task (tool selection, then the plan).
    Plan,
    StepReflection,
    StepRepair,
    OverallReflection,
    Replan,
    Evaluation,
}

impl DecisionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Plan => "plan",
            DecisionKind::StepReflection => "step_reflection",
            DecisionKind::StepRepair => "step_repair",
            DecisionKind::OverallReflection => "overall_reflection",
            DecisionKind::Replan => "replan",
            DecisionKind::Evaluation => "evaluation",
        }
    }

    pub const ALL: [DecisionKind; 6] = [
        DecisionKind::Plan,
        DecisionKind::StepReflection,
        DecisionKind::StepRepair,
        DecisionKind::OverallReflection,
        DecisionKind::Replan,
        DecisionKind::Evaluation,
    ];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// What a decision was created with (`decisions.input`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DecisionInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_key: Option<String>,
    /// The failed attempt that started this recovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<ToolFailure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_reflection: Option<StepReflection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overall: Option<OverallReflection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
}

/// Everything a brain may read to make a decision, loaded fresh by the worker.
#[derive(Debug, Clone)]
pub struct DecisionContext {
    pub task: TaskRow,
    /// Live steps of the current plan version, in plan order.
    pub steps: Vec<StepRow>,
    /// The step the decision concerns, if any.
    pub step: Option<StepRow>,
    /// Every attempt of the task, oldest first (the execution history).
    pub attempts: Vec<AttemptRow>,
    pub tools: HashMap<String, ToolDef>,
    pub counters: Counters,
    pub input: DecisionInput,
    /// LLM calls this task has made so far (`llm_calls` rows), for the per-task cap (0 when
    /// the task has no cap: not counted).
    pub llm_calls_used: i64,
    /// LLM calls made while deciding, recorded by the worker before it applies the outcome.
    pub meter: Meter,
}

/// The cost of one LLM call (one `llm_calls` row).
#[derive(Debug, Clone, PartialEq)]
pub struct LlmCallRecord {
    /// The json_schema name of the request.
    pub name: String,
    pub model: String,
    pub ok: bool,
    /// Why the call gave no usable answer (the API key is never in it).
    pub error: Option<String>,
    pub usage: llm::Usage,
    pub latency_ms: i64,
}

/// Collects the LLM calls made for one decision.
#[derive(Debug, Clone, Default)]
pub struct Meter(Arc<Mutex<Vec<LlmCallRecord>>>);

impl Meter {
    pub fn record(&self, r: LlmCallRecord) {
        self.0.lock().expect("meter lock").push(r);
    }

    pub fn len(&self) -> usize {
        self.0.lock().expect("meter lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Everything recorded so far (the meter is left empty).
    pub fn take(&self) -> Vec<LlmCallRecord> {
        std::mem::take(&mut *self.0.lock().expect("meter lock"))
    }
}

impl DecisionContext {
    /// The step's definition as it stands (recovery overrides applied).
    pub fn effective_spec(step: &StepRow) -> StepSpec {
        let mut parameters = step.parameters.clone();
        crate::params::merge_overrides(&mut parameters, &step.param_overrides);
        StepSpec {
            id: step.step_key.clone(),
            name: step.name.clone(),
            tool: step
                .tool_override
                .clone()
                .unwrap_or_else(|| step.tool.clone()),
            parameters,
            dependencies: step.dependencies.clone(),
            expected_output: step.expected_output.clone(),
            optional: step.optional,
            actions: serde_json::from_value(step.actions.clone()).unwrap_or_default(),
        }
    }

    /// The current plan, as it stands.
    pub fn current_plan(&self) -> PlanSpec {
        PlanSpec {
            steps: self.steps.iter().map(Self::effective_spec).collect(),
            reasoning: String::new(),
            estimated_duration: None,
        }
    }

    /// Tools the step has been run with in this plan version (attempts, plus its current tool).
    pub fn tried_tools(&self) -> HashSet<String> {
        let Some(step) = &self.step else {
            return HashSet::new();
        };
        let mut tried: HashSet<String> = self
            .attempts
            .iter()
            .filter(|a| a.step_key == step.step_key && a.plan_version == step.plan_version)
            .map(|a| a.tool.clone())
            .collect();
        tried.insert(step.tool.clone());
        if let Some(t) = &step.tool_override {
            tried.insert(t.clone());
        }
        tried
    }

    /// Registered alternatives of the step's tools that it has not tried yet, in registry order.
    pub fn untried_alternatives(&self) -> Vec<String> {
        let Some(step) = &self.step else {
            return vec![];
        };
        let tried = self.tried_tools();
        let mut out = Vec::new();
        for tool in [Some(&step.tool), step.tool_override.as_ref()]
            .into_iter()
            .flatten()
        {
            if let Some(def) = self.tools.get(tool) {
                for alt in &def.alternatives {
                    if !tried.contains(alt) && self.tools.contains_key(alt) && !out.contains(alt) {
                        out.push(alt.clone());
                    }
                }
            }
        }
        out
    }
}

/// Stage 1 of two-stage planning: the tools the plan may use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSelection {
    pub selected_tools: Vec<String>,
    #[serde(default)]
    pub reasoning: String,
    /// At replanning time: what changed from the tools used before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes_summary: Option<String>,
}

/// A plan (or a replan) and, when two-stage planning ran, the tool selection it was made with.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub plan: PlanSpec,
    pub selection: Option<ToolSelection>,
}

impl Planned {
    pub fn single_stage(plan: PlanSpec) -> Self {
        Self {
            plan,
            selection: None,
        }
    }
}

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
}

/// Ask the brain for a decision's outcome. Brain errors and unusable answers become the
/// fallbacks of SPEC §4; a decision whose workers died `max_rescues` times skips the brain and
/// takes the fallback at once. Never fails, never loops.
pub async fn decide(
    brain: &dyn Brain,
    ctx: &DecisionContext,
    kind: DecisionKind,
    skip_brain: bool,
) -> crate::store::decisions::DecisionOutcome {
    use crate::store::decisions::DecisionOutcome as O;
    let lost = || BrainError::NoAnswer("the decision lost its worker too many times".into());
    match kind {
        DecisionKind::Plan => {
            let r = if skip_brain {
                Err(lost())
            } else {
                brain.plan(ctx).await
            };
            O::Plan(r.map_err(|e| e.to_string()))
        }
        DecisionKind::StepReflection => {
            let r = if skip_brain {
                Err(lost())
            } else {
                brain.reflect_step(ctx).await
            };
            match r {
                Ok(a) => O::StepReflection {
                    reflection: a.value,
                    raw: a.raw,
                    fallback: false,
                },
                Err(e) => O::StepReflection {
                    reflection: crate::recovery::fallback_reflection(&e.to_string()),
                    raw: None,
                    fallback: true,
                },
            }
        }
        DecisionKind::StepRepair => {
            let r = if skip_brain {
                Err(lost())
            } else {
                brain.repair_step(ctx).await
            };
            O::Repair(r.map_err(|e| e.to_string()))
        }
        DecisionKind::OverallReflection => {
            let r = if skip_brain {
                Err(lost())
            } else {
                brain.reflect_overall(ctx).await
            };
            match r {
                Ok(a) => O::Overall {
                    reflection: a.value,
                    raw: a.raw,
                    fallback: false,
                },
                Err(e) => O::Overall {
                    reflection: OverallReflection {
                        should_replan: false,
                        root_causes: vec![],
                        incorrect_assumptions: vec![],
                        alternative_approaches: vec![],
                        lessons_learned: vec![],
                        stop_reason: format!("overall reflection failed: {e}"),
                        replanning_strategy: None,
                    },
                    raw: None,
                    fallback: true,
                },
            }
        }
        DecisionKind::Replan => {
            let r = if skip_brain {
                Err(lost())
            } else {
                brain.replan(ctx).await
            };
            O::Replan(r.map_err(|e| e.to_string()))
        }
        DecisionKind::Evaluation => {
            let r = if skip_brain {
                Err(lost())
            } else {
                brain.evaluate(ctx).await
            };
            match r {
                Ok(a) => O::Evaluation {
                    evaluation: a.value,
                    raw: a.raw,
                },
                // the rules evaluation needs no I/O and cannot fail
                Err(_) => O::Evaluation {
                    evaluation: rules::RulesBrain::evaluate(ctx),
                    raw: None,
                },
            }
        }
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

#[cfg(test)]
mod tests {
    use super::DecisionKind;

    /// `decisions.kind` CHECK lists exactly the decision kinds; the state-machine doc names the
    /// decision statuses of the `decisions.status` CHECK.
    #[test]
    fn decision_kinds_match_the_schema_and_docs() {
        // the latest migration that redefines the CHECK
        let sql = include_str!("../../migrations/20261122000004_llm_brain.sql");
        let flat: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let kinds = DecisionKind::ALL;
        let list = kinds
            .iter()
            .map(|k| format!("'{}'", k.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        assert!(
            flat.contains(&format!("kind IN ({list})")),
            "decisions.kind CHECK drifted"
        );
        for k in kinds {
            assert_eq!(DecisionKind::parse(k.as_str()), Some(k));
        }
        let doc_flat: String = include_str!("../../docs/state-machine.md")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let doc_list = kinds
            .iter()
            .map(|k| format!("`{}`", k.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        assert!(
            doc_flat.contains(&doc_list),
            "the decision kinds in docs/state-machine.md drifted"
        );
        let doc = include_str!("../../docs/state-machine.md");
        let recovery = include_str!("../../migrations/20261122000002_recovery.sql");
        for status in ["pending", "running", "done", "cancelled"] {
            assert!(recovery.contains(&format!("'{status}'")));
            assert!(
                doc.contains(&format!("`{status}`")),
                "{status} missing from the doc"
            );
        }
    }
}
