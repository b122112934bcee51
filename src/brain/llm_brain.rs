//! The LLM brain: every decision through an OpenAI-compatible model ([`super::llm::LlmClient`])
//! with the prompts of [`super::prompts`]. Each call is metered into the decision's
//! [`super::Meter`] (the worker writes it to `llm_calls`), respects the task's LLM call cap,
//! and is checked beyond its schema (the answer must parse into its Rust type, plans must be
//! valid DAGs over registered tools); an unusable answer is re-asked once, then the decision
//! takes its fallback (SPEC §4).

use std::collections::HashSet;
use std::time::Instant;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::llm::{LlmClient, LlmConfig};
use super::prompts::{self, AttemptBrief, Prompt, StepState, TaskBrief, ToolBrief};
use super::{
    Answer, Brain, BrainError, BrainFuture, DecisionContext, LlmCallRecord, Planned, ToolSelection,
};
use crate::domain::model::{ActionSpec, MapSpec, PlanSpec, StepSpec, ToolFailure, empty_object};
use crate::domain::recovery::{Evaluation, OverallReflection, StepReflection, Strategy, Trigger};
use crate::domain::template::TemplateDef;

#[derive(Debug)]
pub struct LlmBrain {
    client: LlmClient,
    two_stage: bool,
    two_stage_threshold: usize,
    /// Keep each call's prompt and raw answer in its `llm_calls` row.
    save_exchanges: bool,
}

impl LlmBrain {
    pub fn new(client: LlmClient, two_stage: bool, two_stage_threshold: usize) -> Self {
        Self {
            client,
            two_stage,
            two_stage_threshold,
            save_exchanges: false,
        }
    }

    /// Keep every call's prompt messages and raw answer (`[debug] save_llm_exchanges`).
    pub fn saving_exchanges(mut self, on: bool) -> Self {
        self.save_exchanges = on;
        self
    }

    /// `None` without an `[llm] base_url`.
    pub fn from_settings(s: &crate::config::Settings) -> Option<Self> {
        let cfg = LlmConfig::from_settings(&s.llm)?;
        let brain = Self::new(
            LlmClient::new(cfg),
            s.orchestrator.enable_two_stage_planning,
            s.orchestrator.two_stage_tool_threshold as usize,
        );
        Some(brain.saving_exchanges(s.debug.save_llm_exchanges))
    }

    pub fn model(&self) -> &str {
        &self.client.config().model
    }

    /// One metered, capped, checked call. `check` runs on the parsed answer; a failure is
    /// re-asked once like a schema violation.
    async fn ask<T, F>(
        &self,
        ctx: &DecisionContext,
        prompt: Prompt,
        check: F,
    ) -> Result<Answer<T>, BrainError>
    where
        T: DeserializeOwned,
        F: Fn(&Value) -> Result<T, String> + Sync,
    {
        if let Some(cap) = ctx.task.max_llm_calls {
            let used = ctx.llm_calls_used + ctx.meter.len() as i64;
            if used >= cap as i64 {
                return Err(BrainError::NoAnswer(format!(
                    "the task's LLM call cap is reached ({used} of {cap} calls)"
                )));
            }
        }
        if let Some(cap) = ctx.task.max_llm_tokens {
            let used = ctx.llm_tokens_used + ctx.meter.tokens();
            if used >= cap {
                return Err(BrainError::NoAnswer(format!(
                    "the task's LLM token cap is reached ({used} of {cap} tokens)"
                )));
            }
        }
        if let Some(cap) = ctx.task.max_cost
            && ctx.task.cost >= cap
        {
            return Err(BrainError::NoAnswer(format!(
                "the task's cost limit is reached ({:.6} of {cap})",
                ctx.task.cost
            )));
        }
        let started = Instant::now();
        let messages = prompt.messages();
        let sent = self.save_exchanges.then(|| messages.clone());
        let (usage, result) = self
            .client
            .ask(prompt.name, &prompt.schema, messages, &|v| {
                check(v).map(|_| ())
            })
            .await;
        // the answer as it came, valid or not (an invalid one is what an operator needs)
        let raw = match &result {
            Ok(a) => Some(a.raw.as_str()),
            Err(super::llm::LlmError::Invalid { raw, .. }) => Some(raw.as_str()),
            Err(_) => None,
        };
        let exchange = sent.map(|m| exchange(ctx, &m, raw));
        // LlmError texts are redacted: safe to store and to show
        let result = result.map_err(|e| e.to_string());
        let cfg = self.client.config();
        let model = match &cfg.fallback {
            Some(f) if usage.by_fallback => f.model.clone(),
            _ => cfg.model.clone(),
        };
        ctx.meter.record(LlmCallRecord {
            name: prompt.name.to_string(),
            model,
            ok: result.is_ok(),
            error: result.as_ref().err().cloned(),
            usage,
            latency_ms: started.elapsed().as_millis() as i64,
            exchange,
        });
        let a = result.map_err(BrainError::NoAnswer)?;
        Ok(Answer {
            value: check(&a.value).map_err(BrainError::NoAnswer)?,
            raw: Some(a.raw),
        })
    }

    /// Two-stage planning applies when it is on and the registry holds more tools than the
    /// threshold.
    fn two_stage_applies(&self, tools: usize) -> bool {
        self.two_stage && tools > self.two_stage_threshold
    }

    async fn select_tools(
        &self,
        ctx: &DecisionContext,
        task: &TaskBrief,
        tools: &[ToolBrief],
        replanning: Option<&prompts::ReplanningSelection>,
    ) -> Option<(ToolSelection, Vec<ToolBrief>)> {
        let known: HashSet<&str> = tools.iter().map(|t| t.id.as_str()).collect();
        // templates are offered for a first plan only
        let templates: &[TemplateDef] = match replanning {
            None => &ctx.templates,
            Some(_) => &[],
        };
        let prompt = prompts::tool_selection(task, tools, replanning, templates);
        let r = self
            .ask(ctx, prompt, |v| {
                let mut sel: ToolSelection = parse(v)?;
                sel.selected_tools.retain(|t| known.contains(t.as_str()));
                if sel.workflow_id.is_some() {
                    // the template's plan must work with the input the model gave
                    from_template(ctx, &sel)?;
                    return Ok(sel);
                }
                if sel.selected_tools.is_empty() {
                    return Err("selected_tools names none of the available tool ids".into());
                }
                Ok(sel)
            })
            .await;
        match r {
            Ok(a) => {
                let chosen: Vec<ToolBrief> = tools
                    .iter()
                    .filter(|t| a.value.selected_tools.contains(&t.id))
                    .cloned()
                    .collect();
                Some((a.value, chosen))
            }
            Err(e) => {
                tracing::warn!(task = %ctx.task.id, error = %e, "tool selection failed; planning with every tool");
                None
            }
        }
    }

    async fn make_plan(
        &self,
        ctx: &DecisionContext,
        prompt_for: impl Fn(&[ToolBrief]) -> Prompt,
        replanning: Option<prompts::ReplanningSelection>,
    ) -> Result<Answer<Planned>, BrainError> {
        let task = task_brief(ctx);
        let all = tool_briefs(ctx);
        let (selection, tools) = if self.two_stage_applies(all.len()) {
            match self
                .select_tools(ctx, &task, &all, replanning.as_ref())
                .await
            {
                Some((sel, chosen)) => (Some(sel), chosen),
                None => (None, all.clone()),
            }
        } else {
            (None, all.clone())
        };
        if let Some(sel) = selection.as_ref().filter(|s| s.workflow_id.is_some()) {
            let (id, plan) = from_template(ctx, sel).map_err(BrainError::NoAnswer)?;
            return Ok(Answer {
                value: Planned {
                    plan,
                    selection,
                    template: Some(id),
                },
                raw: None,
            });
        }
        let known: HashSet<String> = ctx.tools.keys().cloned().collect();
        let a = self
            .ask(ctx, prompt_for(&tools), |v| {
                let plan = wire_plan(v)?;
                crate::domain::plan::validate(&plan, &known).map_err(|e| e.message)?;
                Ok(plan)
            })
            .await?;
        Ok(Answer {
            value: Planned {
                plan: a.value,
                selection,
                template: None,
            },
            raw: a.raw,
        })
    }
}

/// The plan of the workflow template a tool selection chose, with its input: the input must
/// match the template's `input_schema` and the plan must be valid over the registered tools.
fn from_template(ctx: &DecisionContext, sel: &ToolSelection) -> Result<(String, PlanSpec), String> {
    let id = sel.workflow_id.clone().unwrap_or_default();
    let t = ctx
        .templates
        .iter()
        .find(|t| t.id == id)
        .ok_or_else(|| format!("workflow_id {id:?} is not a registered template"))?;
    let input = sel
        .workflow_input
        .clone()
        .unwrap_or_else(|| Value::Object(Default::default()));
    let violations = crate::domain::schema::violations(&t.input_schema, &input);
    if !violations.is_empty() {
        return Err(format!(
            "workflow_input does not match template {id:?}'s input_schema: {}",
            violations.join("; ")
        ));
    }
    let plan = crate::domain::template::instantiate(&t.plan, &input)?;
    let plan: PlanSpec = serde_json::from_value(plan)
        .map_err(|e| format!("template {id:?} with this input: {e}"))?;
    let known: HashSet<String> = ctx.tools.keys().cloned().collect();
    crate::domain::plan::validate(&plan, &known).map_err(|e| e.message)?;
    Ok((id, plan))
}

fn parse<T: DeserializeOwned>(v: &Value) -> Result<T, String> {
    serde_json::from_value(v.clone()).map_err(|e| format!("the answer does not fit: {e}"))
}

// ---------------------------------------------------------------- lenient wire formats

/// A step as models write it: `step_id` (or `id`), extra fields ignored, `expected_output`
/// of any JSON type.
#[derive(Debug, Deserialize)]
struct WireStep {
    #[serde(alias = "id")]
    step_id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    tool: String,
    #[serde(default = "empty_object")]
    parameters: Value,
    #[serde(default)]
    dependencies: Option<Vec<String>>,
    #[serde(default)]
    expected_output: Value,
    #[serde(default)]
    optional: Option<bool>,
    #[serde(default)]
    actions: Option<Vec<WireAction>>,
    #[serde(default)]
    map: Option<MapSpec>,
}

#[derive(Debug, Deserialize)]
struct WireAction {
    #[serde(alias = "id")]
    action_id: String,
    #[serde(default)]
    name: String,
    tool: String,
    #[serde(default = "empty_object")]
    parameters: Value,
}

#[derive(Debug, Deserialize)]
struct WirePlan {
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    estimated_duration: Option<f64>,
    steps: Vec<WireStep>,
}

impl From<WireStep> for StepSpec {
    fn from(w: WireStep) -> Self {
        StepSpec {
            id: w.step_id,
            name: w.name,
            tool: w.tool,
            parameters: if w.parameters.is_null() {
                empty_object()
            } else {
                w.parameters
            },
            dependencies: w.dependencies.unwrap_or_default(),
            expected_output: match w.expected_output {
                Value::Null => String::new(),
                Value::String(s) => s,
                other => other.to_string(),
            },
            optional: w.optional.unwrap_or(false),
            map: w.map,
            actions: w
                .actions
                .unwrap_or_default()
                .into_iter()
                .map(|a| ActionSpec {
                    id: a.action_id,
                    name: a.name,
                    tool: a.tool,
                    parameters: a.parameters,
                })
                .collect(),
        }
    }
}

/// A `plan` / `replan` answer as a plan.
pub fn wire_plan(v: &Value) -> Result<PlanSpec, String> {
    let w: WirePlan = parse(v)?;
    Ok(PlanSpec {
        steps: w.steps.into_iter().map(StepSpec::from).collect(),
        reasoning: w.reasoning.unwrap_or_default(),
        estimated_duration: w
            .estimated_duration
            .filter(|d| d.is_finite() && *d >= 0.0)
            .map(|d| d.min(i32::MAX as f64).round() as i32),
    })
}

/// A `step_repair` answer as a step.
pub fn wire_step(v: &Value) -> Result<StepSpec, String> {
    let w: WireStep = parse(v)?;
    Ok(w.into())
}

// ---------------------------------------------------------------- context → prompt context

/// What `[debug] save_llm_exchanges` keeps of one call: the messages sent and the raw answer,
/// with every credential value of the task's metadata and context redacted.
fn exchange(ctx: &DecisionContext, sent: &[super::llm::Message], raw: Option<&str>) -> Value {
    let t = &ctx.task;
    let secrets: Vec<String> = [&t.metadata, &t.context, &t.runtime_metadata]
        .into_iter()
        .flat_map(crate::domain::secrets::secret_values)
        .collect();
    let scrub = |s: &str| crate::domain::secrets::scrub(s, &secrets);
    let messages: Vec<Value> = sent
        .iter()
        .map(|m| serde_json::json!({"role": m.role, "content": scrub(&m.content)}))
        .collect();
    serde_json::json!({"messages": messages, "answer": raw.map(scrub)})
}

fn task_brief(ctx: &DecisionContext) -> TaskBrief {
    TaskBrief {
        description: ctx.task.description.clone(),
        metadata: ctx.task.metadata.clone(),
        runtime_metadata: ctx.task.runtime_metadata.clone(),
        context: ctx.task.context.clone(),
    }
}

/// Registered tools in id order (deterministic prompts).
fn tool_briefs(ctx: &DecisionContext) -> Vec<ToolBrief> {
    let mut tools: Vec<ToolBrief> = ctx.tools.values().map(ToolBrief::from).collect();
    tools.sort_by(|a, b| a.id.cmp(&b.id));
    tools
}

fn step_states(ctx: &DecisionContext) -> Vec<StepState> {
    ctx.steps
        .iter()
        .map(|s| StepState {
            spec: s.effective_spec(),
            status: s.status.to_string(),
            retry_count: s.retry_count,
            output: s.output.clone(),
            error: s.error.clone(),
        })
        .collect()
}

fn attempt_briefs(ctx: &DecisionContext) -> Vec<AttemptBrief> {
    ctx.attempts
        .iter()
        .map(|a| AttemptBrief {
            step_key: a.step_key.clone(),
            plan_version: a.plan_version,
            attempt: a.attempt,
            tool: a.tool.clone(),
            status: a.status.to_string(),
            parameters: a.parameters.clone(),
            output: a.output.clone(),
            error: a.error.clone(),
        })
        .collect()
}

fn failure_of(ctx: &DecisionContext) -> ToolFailure {
    ctx.input.failure.clone().unwrap_or_else(|| {
        ToolFailure::new(
            "unknown_error",
            "the failure was not recorded with the decision",
            false,
        )
    })
}

fn step_failure_context(ctx: &DecisionContext) -> Result<prompts::StepFailureContext, BrainError> {
    let step = ctx
        .step
        .as_ref()
        .ok_or_else(|| BrainError::NoAnswer("the decision has no step".into()))?;
    Ok(prompts::StepFailureContext {
        step: step.effective_spec(),
        failure: failure_of(ctx),
        attempts: attempt_briefs(ctx)
            .into_iter()
            .filter(|a| a.step_key == step.step_key && a.plan_version == step.plan_version)
            .collect(),
        counters: ctx.counters,
        untried_alternatives: ctx.untried_alternatives(),
    })
}

/// What the overall reflection and the step failure said, in a few lines.
fn reflection_analysis(ctx: &DecisionContext) -> String {
    let mut lines = Vec::new();
    if let Some(s) = &ctx.input.summary {
        lines.push(s.clone());
    }
    if let (Some(k), Some(f)) = (&ctx.input.step_key, &ctx.input.failure) {
        lines.push(format!("step {k} failed: {} ({})", f.message, f.category));
    }
    if let Some(r) = &ctx.input.step_reflection {
        lines.push(format!(
            "step reflection: {} — {} ({})",
            r.root_cause_category, r.root_cause, r.analysis
        ));
    }
    if let Some(o) = &ctx.input.overall {
        for c in &o.root_causes {
            lines.push(format!("root cause: {c}"));
        }
    }
    if lines.is_empty() {
        "(no analysis recorded)".into()
    } else {
        lines.join("\n")
    }
}

/// Attempts of the plan version being replaced (the tools "used before").
fn current_version_attempts(ctx: &DecisionContext) -> Vec<AttemptBrief> {
    attempt_briefs(ctx)
        .into_iter()
        .filter(|a| a.plan_version == ctx.task.plan_version)
        .collect()
}

impl Brain for LlmBrain {
    fn name(&self) -> &'static str {
        "llm"
    }

    fn plan<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, Planned> {
        Box::pin(async move {
            let task = task_brief(ctx);
            self.make_plan(ctx, |tools| prompts::plan(&task, tools), None)
                .await
        })
    }

    fn reflect_step<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, StepReflection> {
        Box::pin(async move {
            let c = step_failure_context(ctx)?;
            let prompt = prompts::step_reflection(&task_brief(ctx), &c, &tool_briefs(ctx));
            self.ask(ctx, prompt, parse::<StepReflection>).await
        })
    }

    fn repair_step<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, StepSpec> {
        Box::pin(async move {
            let c = step_failure_context(ctx)?;
            let key = c.step.id.clone();
            let prompt = prompts::step_repair(
                &task_brief(ctx),
                &c,
                ctx.input.step_reflection.as_ref(),
                &step_states(ctx),
                &tool_briefs(ctx),
            );
            self.ask(ctx, prompt, |v| {
                let step = wire_step(v)?;
                if step.id != key {
                    return Err(format!("step_id must stay {key:?} (got {:?})", step.id));
                }
                if !step.tool.is_empty() && !ctx.tools.contains_key(&step.tool) {
                    return Err(format!("tool {:?} is not registered", step.tool));
                }
                Ok(step)
            })
            .await
        })
    }

    fn reflect_overall<'a>(
        &'a self,
        ctx: &'a DecisionContext,
    ) -> BrainFuture<'a, OverallReflection> {
        Box::pin(async move {
            let c = prompts::OverallContext {
                trigger: ctx.input.trigger.unwrap_or(Trigger::StepFailure),
                summary: ctx.input.summary.clone().unwrap_or_default(),
                failed_step: ctx.input.step_key.clone(),
                failure: ctx.input.failure.clone(),
                step_reflection: ctx.input.step_reflection.clone(),
                steps: step_states(ctx),
                execution_history: prompts::execution_history(&attempt_briefs(ctx)),
                counters: ctx.counters,
                evaluation: ctx.input.evaluation.clone(),
            };
            let prompt = prompts::overall_reflection(&task_brief(ctx), &c);
            self.ask(ctx, prompt, parse::<OverallReflection>).await
        })
    }

    fn replan<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, Planned> {
        Box::pin(async move {
            let task = task_brief(ctx);
            let strategy = ctx.input.strategy.clone().unwrap_or(Strategy::FullReplan);
            let overall = ctx.input.overall.clone().unwrap_or_else(|| {
                // replans always follow an overall reflection; be total anyway
                OverallReflection {
                    should_replan: true,
                    root_causes: vec![],
                    incorrect_assumptions: vec![],
                    alternative_approaches: vec![],
                    lessons_learned: vec![],
                    stop_reason: String::new(),
                    optimization_suggestions: vec![],
                    replanning_strategy: Some(strategy.clone()),
                }
            });
            let guidance = prompts::format_guidance(&overall, &strategy);
            let history = prompts::execution_history(&attempt_briefs(ctx));
            let all = tool_briefs(ctx);
            let previous = prompts::previous_tools(&current_version_attempts(ctx), &all);
            let steps = step_states(ctx);
            let selection_ctx = prompts::ReplanningSelection {
                previous_tools: previous.clone(),
                execution_history: history.clone(),
                reflection_analysis: reflection_analysis(ctx),
                guidance: Some(guidance.clone()),
            };
            self.make_plan(
                ctx,
                |tools| {
                    let evaluation = ctx.input.evaluation.as_ref();
                    prompts::replan(
                        &task, &guidance, &strategy, evaluation, &steps, &previous, &history, tools,
                    )
                },
                Some(selection_ctx),
            )
            .await
        })
    }

    fn evaluate<'a>(&'a self, ctx: &'a DecisionContext) -> BrainFuture<'a, Evaluation> {
        Box::pin(async move {
            let prompt = prompts::evaluation(
                &task_brief(ctx),
                &step_states(ctx),
                &prompts::execution_history(&current_version_attempts(ctx)),
                ctx.task.success_threshold,
            );
            self.ask(ctx, prompt, parse::<Evaluation>).await
        })
    }
}
