//! The decision vocabulary shared by the brain (which answers decisions) and the store (which
//! queues them and applies their outcomes): what a decision was created with, what the brain
//! may read, what it answers, and what its LLM calls cost.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::model::{PlanSpec, StepSpec, ToolFailure};
use super::records::{AttemptRow, StepRow, TaskRow};
use super::recovery::{Counters, Evaluation, OverallReflection, StepReflection, Strategy, Trigger};
use super::tool::ToolDef;

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
    /// The unsuccessful evaluation that started this round's reflection: its failures and
    /// improvement suggestions reach the reflection and the replan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<Evaluation>,
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
    /// LLM tokens this task has spent so far, for its token cap (0 when it has none).
    pub llm_tokens_used: i64,
    /// LLM calls made while deciding, recorded by the worker before it applies the outcome.
    pub meter: Meter,
    /// Recent outcomes of the step's alternative tools across the fleet (loaded only for a
    /// step whose tool has several alternatives).
    pub evidence: HashMap<String, ToolEvidence>,
    /// Registered workflow templates (loaded only for a `plan` decision).
    pub templates: Vec<super::template::TemplateDef>,
    /// Earlier plan versions that a chain of repairs turned into the current one (a repair is a
    /// version of its own): a step's attempts under them count as tried in this plan.
    pub repaired_versions: Vec<i32>,
}

/// How a tool fared in the fleet's recent attempts (the recovery statistics' raw rows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolEvidence {
    pub attempts: i64,
    pub succeeded: i64,
}

impl ToolEvidence {
    /// The success rate with one success and one failure assumed (Laplace): a tool never seen
    /// scores 0.5, above one that keeps failing and below one that keeps working.
    pub fn score(self) -> f64 {
        (self.succeeded as f64 + 1.0) / (self.attempts as f64 + 2.0)
    }
}

impl std::fmt::Display for ToolEvidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.attempts == 0 {
            write!(f, "no recent attempts")
        } else {
            write!(
                f,
                "{} of {} recent attempts succeeded",
                self.succeeded, self.attempts
            )
        }
    }
}

/// Tokens and requests of one LLM call, as the server reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Prompt tokens the provider served from its cache (`prompt_tokens_details.cached_tokens`).
    pub cached_tokens: u64,
    /// HTTP requests made (retries and the re-ask included).
    pub requests: u32,
    /// The last answer came from the fallback endpoint (`[llm] fallback_base_url`).
    pub by_fallback: bool,
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
    pub usage: Usage,
    pub latency_ms: i64,
    /// The prompt messages and the raw answer (`[debug] save_llm_exchanges`), redacted.
    pub exchange: Option<serde_json::Value>,
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

    /// Tokens of the calls recorded so far.
    pub fn tokens(&self) -> i64 {
        self.0
            .lock()
            .expect("meter lock")
            .iter()
            .map(|r| r.usage.total_tokens as i64)
            .sum()
    }

    /// Everything recorded so far (the meter is left empty).
    pub fn take(&self) -> Vec<LlmCallRecord> {
        std::mem::take(&mut *self.0.lock().expect("meter lock"))
    }
}

impl DecisionContext {
    /// The current plan, as it stands.
    pub fn current_plan(&self) -> PlanSpec {
        PlanSpec {
            steps: self.steps.iter().map(StepRow::effective_spec).collect(),
            reasoning: String::new(),
            estimated_duration: None,
        }
    }

    /// Tools the step has been run with in this plan version and the versions it repaired
    /// (attempts, plus its current tool).
    pub fn tried_tools(&self) -> HashSet<String> {
        let Some(step) = &self.step else {
            return HashSet::new();
        };
        let same_plan = |v: i32| v == step.plan_version || self.repaired_versions.contains(&v);
        let mut tried: HashSet<String> = self
            .attempts
            .iter()
            .filter(|a| a.step_key == step.step_key && same_plan(a.plan_version))
            .map(|a| a.tool.clone())
            .collect();
        tried.insert(step.tool.clone());
        if let Some(t) = &step.tool_override {
            tried.insert(t.clone());
        }
        tried
    }

    /// Registered alternatives of the step's tools that it has not tried yet, the best recent
    /// success rate first ([`ToolEvidence::score`]; ties keep registry order).
    pub fn untried_alternatives(&self) -> Vec<String> {
        let mut out = self.untried_in_registry_order();
        let score = |t: &String| self.evidence.get(t).copied().unwrap_or_default().score();
        out.sort_by(|a, b| score(b).total_cmp(&score(a)));
        out
    }

    /// Why the alternatives are in the order they are, when evidence decided it.
    pub fn alternatives_rationale(&self) -> Option<String> {
        let alts = self.untried_alternatives();
        if alts.len() < 2 || self.evidence.is_empty() {
            return None;
        }
        let parts: Vec<String> = alts
            .iter()
            .map(|t| format!("{t}: {}", self.evidence.get(t).copied().unwrap_or_default()))
            .collect();
        Some(format!(
            "alternatives ranked by recent success rate ({})",
            parts.join("; ")
        ))
    }

    /// Registered alternatives of the step's tools that it has not tried yet, in registry order.
    fn untried_in_registry_order(&self) -> Vec<String> {
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
    /// What kind of task this is, in the model's words (seed 004 `task_type`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    /// A registered workflow template that fits the task (seed 004 `workflow_id`): its plan
    /// is used with `workflow_input` instead of asking for a plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_input: Option<serde_json::Value>,
}

/// A plan (or a replan) and, when two-stage planning ran, the tool selection it was made with.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub plan: PlanSpec,
    pub selection: Option<ToolSelection>,
    /// The workflow template the plan was made from (origin `template:<id>`).
    pub template: Option<String>,
}

impl Planned {
    pub fn single_stage(plan: PlanSpec) -> Self {
        Self {
            plan,
            selection: None,
            template: None,
        }
    }
}

/// The brain's answer to a decision, or what stands in for it.
#[derive(Debug, Clone)]
pub enum DecisionOutcome {
    Plan(Result<Answer<Planned>, String>),
    StepReflection {
        reflection: StepReflection,
        raw: Option<String>,
        fallback: bool,
    },
    Repair(Result<Answer<StepSpec>, String>),
    Overall {
        reflection: OverallReflection,
        raw: Option<String>,
        fallback: bool,
    },
    Replan(Result<Answer<Planned>, String>),
    Evaluation {
        evaluation: Evaluation,
        raw: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::ToolEvidence;

    #[test]
    fn evidence_ranks_working_tools_above_unknown_above_failing() {
        let e = |attempts, succeeded| ToolEvidence {
            attempts,
            succeeded,
        };
        let unknown = e(0, 0).score();
        assert_eq!(unknown, 0.5);
        assert!(e(3, 3).score() > unknown && unknown > e(3, 0).score());
        assert!(
            e(100, 90).score() > e(3, 3).score(),
            "more evidence weighs more"
        );
        assert!(e(1, 1).score() < e(10, 9).score());
        assert_eq!(e(4, 3).to_string(), "3 of 4 recent attempts succeeded");
        assert_eq!(e(0, 0).to_string(), "no recent attempts");
    }
}
