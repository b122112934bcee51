//! The LLM brain's prompts: one builder per decision (system + user message + the JSON schema
//! named in CONTRACT.md), built from typed context. Nothing here does I/O; [`super::llm_brain`]
//! turns a [`super::DecisionContext`] into these contexts and sends the prompts.
//!
//! - `tool_selection`: first-time selection (task, metadata, all tools) and, at replanning time,
//!   selection with execution feedback (seed 004: previous tools with status, failure reason and
//!   a 200-character output summary; the execution history; the reflection analysis; the
//!   overall guidance);
//! - `plan`: the task with only the selected tools;
//! - `step_reflection`: limited to the three step actions (seed 001);
//! - `step_repair`: rewrite one step;
//! - `overall_reflection`: the five replanning strategies and their formats;
//! - `replan`: the guidance formatted (root causes, assumptions, alternatives, lessons, strategy);
//! - `evaluation`: the four dimensions.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Value, json};

use super::llm::Message;
use crate::domain::model::{StepSpec, ToolFailure};
use crate::domain::recovery::{
    Counters, Evaluation, OverallReflection, StepReflection, Strategy, Trigger,
};
use crate::domain::template::TemplateDef;
use crate::domain::tool::ToolDef;

/// Characters kept of an output or error in summaries (seed 004).
pub const SUMMARY_CHARS: usize = 200;

/// One request: its json_schema name, the two messages and the schema of the answer.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub name: &'static str,
    pub system: String,
    pub user: String,
    pub schema: Value,
}

impl Prompt {
    pub fn messages(&self) -> Vec<Message> {
        vec![Message::system(&self.system), Message::user(&self.user)]
    }
}

// ---------------------------------------------------------------- typed context

/// The task as the brain sees it.
#[derive(Debug, Clone, Default)]
pub struct TaskBrief {
    pub description: String,
    pub metadata: Value,
    /// Values copied from tool outputs after successful steps.
    pub runtime_metadata: Value,
    /// The caller's `context` (`${context.…}` placeholders read it).
    pub context: Value,
}

/// A registered tool as the brain sees it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolBrief {
    pub id: String,
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<String>,
}

impl From<&ToolDef> for ToolBrief {
    fn from(t: &ToolDef) -> Self {
        Self {
            id: t.id.clone(),
            name: t.name.clone(),
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
            alternatives: t.alternatives.clone(),
        }
    }
}

/// A step of the current plan with where it stands.
#[derive(Debug, Clone)]
pub struct StepState {
    pub spec: StepSpec,
    pub status: String,
    pub retry_count: i32,
    pub output: Option<Value>,
    pub error: Option<Value>,
}

/// One attempt of the execution history.
#[derive(Debug, Clone)]
pub struct AttemptBrief {
    pub step_key: String,
    pub plan_version: i32,
    pub attempt: i32,
    pub tool: String,
    pub status: String,
    pub parameters: Value,
    pub output: Option<Value>,
    pub error: Option<Value>,
}

/// A tool used before, and how it went (seed 004 `PreviousToolInfo`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreviousToolInfo {
    pub tool_id: String,
    pub tool_name: String,
    pub step_id: String,
    /// `Success` or `Failed`.
    pub execution_status: String,
    pub failure_reason: Option<String>,
    /// The first 200 characters of the output (or error), `...` when cut.
    pub execution_summary: Option<String>,
}

/// Tool selection at replanning time (seed 004 `ReplanningToolSelectionContext`).
#[derive(Debug, Clone)]
pub struct ReplanningSelection {
    pub previous_tools: Vec<PreviousToolInfo>,
    pub execution_history: String,
    /// What the reflection found (the step failure summary and root causes).
    pub reflection_analysis: String,
    /// The overall reflection's guidance, formatted by [`format_guidance`].
    pub guidance: Option<String>,
}

/// What a step reflection looks at.
#[derive(Debug, Clone)]
pub struct StepFailureContext {
    pub step: StepSpec,
    pub failure: ToolFailure,
    /// This step's attempts, oldest first.
    pub attempts: Vec<AttemptBrief>,
    pub counters: Counters,
    pub untried_alternatives: Vec<String>,
}

/// What an overall reflection looks at.
#[derive(Debug, Clone)]
pub struct OverallContext {
    pub trigger: Trigger,
    pub summary: String,
    pub failed_step: Option<String>,
    pub failure: Option<ToolFailure>,
    pub step_reflection: Option<StepReflection>,
    pub steps: Vec<StepState>,
    pub execution_history: String,
    pub counters: Counters,
    /// The unsuccessful evaluation that started this round, if that is why we ask.
    pub evaluation: Option<Evaluation>,
}

// ---------------------------------------------------------------- formatting helpers

/// The first `SUMMARY_CHARS` characters, with `...` when cut.
pub fn summarize(text: &str) -> String {
    if text.chars().count() > SUMMARY_CHARS {
        let cut: String = text.chars().take(SUMMARY_CHARS).collect();
        format!("{cut}...")
    } else {
        text.to_string()
    }
}

fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn error_message(e: &Value) -> String {
    let msg = e.get("message").and_then(Value::as_str).unwrap_or_default();
    let cat = e
        .get("category")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match (cat.is_empty(), msg.is_empty()) {
        (false, false) => format!("{cat}: {msg}"),
        (true, false) => msg.to_string(),
        _ => compact(e),
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// The tools used before and how they went: one entry per (step, tool) of the given attempts,
/// in order of first use; `Success` if any attempt with that tool succeeded.
pub fn previous_tools(attempts: &[AttemptBrief], tools: &[ToolBrief]) -> Vec<PreviousToolInfo> {
    let mut out: Vec<PreviousToolInfo> = Vec::new();
    for a in attempts {
        let tool_name = tools
            .iter()
            .find(|t| t.id == a.tool)
            .map(|t| t.name.clone())
            .unwrap_or_else(|| a.tool.clone());
        let ok = a.status == "succeeded";
        let summary = if ok {
            a.output.as_ref().map(|o| summarize(&compact(o)))
        } else {
            a.error.as_ref().map(|e| summarize(&compact(e)))
        };
        let entry = PreviousToolInfo {
            tool_id: a.tool.clone(),
            tool_name,
            step_id: a.step_key.clone(),
            execution_status: if ok { "Success" } else { "Failed" }.into(),
            failure_reason: if ok {
                None
            } else {
                a.error.as_ref().map(error_message)
            },
            execution_summary: summary,
        };
        match out
            .iter_mut()
            .find(|p| p.tool_id == a.tool && p.step_id == a.step_key)
        {
            // a later success wins; a later failure updates the reason unless it succeeded
            Some(p) if p.execution_status == "Success" => {}
            Some(p) => *p = entry,
            None => out.push(entry),
        }
    }
    out
}

/// The execution history, one line per attempt.
pub fn execution_history(attempts: &[AttemptBrief]) -> String {
    if attempts.is_empty() {
        return "(nothing has run yet)".into();
    }
    let mut s = String::new();
    for a in attempts {
        let detail = match (&a.output, &a.error) {
            (_, Some(e)) if a.status != "succeeded" => {
                format!("error: {}", summarize(&error_message(e)))
            }
            (Some(o), _) => format!("output: {}", summarize(&compact(o))),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "- plan v{} {} attempt {} with tool {} → {}; parameters: {}; {}",
            a.plan_version,
            a.step_key,
            a.attempt,
            a.tool,
            a.status,
            summarize(&a.parameters.to_string()),
            detail
        );
    }
    s
}

fn strategy_line(s: &Strategy) -> String {
    match s {
        Strategy::FullReplan => "full_replan: start over with a fresh context".into(),
        Strategy::ReplanFromStep { step_id, reason } => format!(
            "replan_from_step {step_id}: keep the successful results before {step_id} and replan from it ({reason})"
        ),
        Strategy::SkipSteps { step_ids, reason } => {
            format!(
                "skip_steps {}: leave them out ({reason})",
                step_ids.join(", ")
            )
        }
        Strategy::AddRemediationSteps { suggestions } => format!(
            "add_remediation: add steps that fix the problem first: {}",
            suggestions.join("; ")
        ),
        Strategy::AdjustDependencies { adjustments } => format!(
            "adjust_dependencies: change how steps depend on each other: {}",
            adjustments.join("; ")
        ),
    }
}

/// The overall reflection as replanning guidance: root causes, incorrect assumptions,
/// alternative approaches, lessons learned and the strategy.
pub fn format_guidance(o: &OverallReflection, strategy: &Strategy) -> String {
    let mut s = String::new();
    let mut list = |title: &str, items: &[String]| {
        let _ = writeln!(s, "{title}:");
        if items.is_empty() {
            let _ = writeln!(s, "- (none given)");
        }
        for i in items {
            let _ = writeln!(s, "- {i}");
        }
    };
    list("Root causes", &o.root_causes);
    list("Incorrect assumptions", &o.incorrect_assumptions);
    list("Alternative approaches", &o.alternative_approaches);
    list("Lessons learned", &o.lessons_learned);
    if !o.optimization_suggestions.is_empty() {
        list("Optimization suggestions", &o.optimization_suggestions);
    }
    let _ = writeln!(s, "Replanning strategy: {}", strategy_line(strategy));
    s
}

/// What the last round's evaluation found: its score, failures and improvement suggestions
/// (the next round's reflection and replan learn from it).
pub fn evaluation_section(e: &Evaluation) -> String {
    let mut s = format!(
        "\n## Last evaluation (unsuccessful)\nOverall score {:.1}; completeness {:.1}, correctness {:.1}, \
         efficiency {:.1}, reliability {:.1}.\n",
        e.overall_score,
        e.dimensions.completeness,
        e.dimensions.correctness,
        e.dimensions.efficiency,
        e.dimensions.reliability
    );
    let mut list = |title: &str, items: &[String]| {
        if !items.is_empty() {
            let _ = writeln!(s, "{title}:");
            for i in items {
                let _ = writeln!(s, "- {i}");
            }
        }
    };
    list("Failures", &e.failures);
    list("Improvement suggestions", &e.improvement_suggestions);
    s
}

fn task_section(t: &TaskBrief) -> String {
    let mut s = format!("## Task\n{}\n", t.description.trim());
    if t.metadata.as_object().is_some_and(|m| !m.is_empty()) {
        let _ = write!(s, "\n## Metadata\n{}\n", pretty(&t.metadata));
    }
    if t.context.as_object().is_some_and(|m| !m.is_empty()) {
        let _ = write!(
            s,
            "\n## Context (readable as ${{context.key}})\n{}\n",
            pretty(&t.context)
        );
    }
    if t.runtime_metadata
        .as_object()
        .is_some_and(|m| !m.is_empty())
    {
        let _ = write!(
            s,
            "\n## Runtime metadata (from earlier tool outputs)\n{}\n",
            pretty(&t.runtime_metadata)
        );
    }
    s
}

fn tools_section(tools: &[ToolBrief], with_schema: bool) -> String {
    let mut s = String::from("## Available tools\n");
    for t in tools {
        let _ = write!(s, "- `{}` ({}): {}", t.id, t.name, t.description);
        if with_schema && t.input_schema.as_object().is_some_and(|o| !o.is_empty()) {
            let _ = write!(s, " — input schema: {}", t.input_schema);
        }
        if !t.alternatives.is_empty() {
            let _ = write!(s, " — alternatives: {}", t.alternatives.join(", "));
        }
        s.push('\n');
    }
    s
}

fn steps_section(steps: &[StepState]) -> String {
    let mut s = String::from("## Current plan\n");
    for st in steps {
        let _ = write!(
            s,
            "- {} \"{}\": tool {}, status {}, dependencies [{}], parameters {}",
            st.spec.id,
            st.spec.name,
            st.spec.tool,
            st.status,
            st.spec.dependencies.join(", "),
            summarize(&st.spec.parameters.to_string()),
        );
        if let Some(o) = &st.output {
            let _ = write!(s, ", output: {}", summarize(&compact(o)));
        }
        if let Some(e) = &st.error
            && st.status != "succeeded"
        {
            let _ = write!(s, ", error: {}", summarize(&error_message(e)));
        }
        s.push('\n');
    }
    s
}

fn failure_section(f: &ToolFailure) -> String {
    let mut s = format!(
        "## The failure\n- message: {}\n- category: {}\n- retryable: {}\n",
        f.message, f.category, f.retryable
    );
    if let Some(h) = f.http_status {
        let _ = writeln!(s, "- HTTP status: {h}");
    }
    if !f.hints.is_empty() {
        let _ = writeln!(
            s,
            "- the tool's hints (parameters to change): {}",
            json!(f.hints)
        );
    }
    if let Some(ms) = f.retry_after_ms {
        let _ = writeln!(
            s,
            "- the tool asked not to be called again for {ms} ms (Retry-After)"
        );
    }
    s
}

/// Parameters that broke the tool's `input_schema` (no call was made): the schema, every
/// violation, and the offending values, so a fix can follow the schema.
fn schema_section(c: &StepFailureContext, tools: &[ToolBrief]) -> String {
    let f = &c.failure;
    if f.schema_violations.is_empty() {
        return String::new();
    }
    let mut s =
        String::from("\n## The parameters break the tool's input schema (no call was made)\n");
    for v in &f.schema_violations {
        let _ = writeln!(s, "- {v}");
    }
    if let Some(a) = c.attempts.iter().rev().find(|a| a.status == "failed") {
        let _ = write!(
            s,
            "The resolved parameters of that attempt (tool `{}`):\n{}\n",
            a.tool,
            pretty(&a.parameters)
        );
        if let Some(t) = tools.iter().find(|t| t.id == a.tool) {
            let _ = write!(s, "Its input schema:\n{}\n", pretty(&t.input_schema));
        }
    }
    s.push_str(
        "Fix only what the schema settles: convert a value to the schema's type when that loses \
         nothing, fill a missing required property from its default, and name every change in your analysis.\n",
    );
    s
}

const JSON_ONLY: &str = "Answer with one JSON object only, no prose and no code fence.";

const PLACEHOLDERS: &str = "Parameters may reference earlier results: \"${step_1.output}\" (a whole output), \
\"${step_1.output.field.path}\" (a JSON path into it), \"${metadata.key}\" (task metadata), \"${context.key}\" (the caller's context). A referenced \
step must be one of the step's (transitive) dependencies. Parameters a tool needs that you leave out are \
filled from the task metadata.";

// ---------------------------------------------------------------- schemas

fn step_schema() -> Value {
    json!({
        "type": "object",
        "required": ["step_id", "name", "tool", "parameters", "dependencies"],
        "properties": {
            "step_id": {"type": "string"},
            "name": {"type": "string"},
            "tool": {"type": "string"},
            "parameters": {"type": "object"},
            "dependencies": {"type": "array", "items": {"type": "string"}},
            "expected_output": {"description": "what the step produces (text)"},
            "optional": {"type": "boolean"},
            "map": {"type": "object", "required": ["over", "max_items"],
                "properties": {"over": {"type": "string"}, "as": {"type": "string"},
                               "max_items": {"type": "integer", "minimum": 1},
                               "max_parallel": {"type": "integer", "minimum": 1},
                               "on_item_failure": {"enum": ["fail", "continue"]}}},
            "actions": {"type": "array", "items": {"type": "object",
                "required": ["action_id", "tool"],
                "properties": {"action_id": {"type": "string"}, "name": {"type": "string"},
                               "tool": {"type": "string"}, "parameters": {"type": "object"}}}}
        }
    })
}

pub fn tool_selection_schema() -> Value {
    json!({
        "type": "object",
        "required": ["selected_tools", "reasoning"],
        "properties": {
            "selected_tools": {"type": "array", "items": {"type": "string"}},
            "reasoning": {"type": "string"},
            "changes_summary": {"type": "string"},
            "task_type": {"type": ["string", "null"]},
            "workflow_id": {"type": ["string", "null"]},
            "workflow_input": {"type": ["object", "null"]}
        }
    })
}

pub fn plan_schema() -> Value {
    json!({
        "type": "object",
        "required": ["reasoning", "steps"],
        "properties": {
            "reasoning": {"type": "string"},
            "estimated_duration": {"type": ["number", "null"], "minimum": 0},
            "steps": {"type": "array", "items": step_schema()}
        }
    })
}

pub const STEP_ACTIONS: [&str; 3] = [
    "retry_with_params",
    "retry_with_tool",
    "trigger_overall_reflection",
];

pub fn step_reflection_schema() -> Value {
    json!({
        "type": "object",
        "required": ["root_cause_category", "root_cause", "analysis", "confidence",
                     "is_recoverable", "alternative_solutions", "suggested_action"],
        "properties": {
            "root_cause_category": {"type": "string"},
            "root_cause": {"type": "string"},
            "analysis": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 100},
            "is_recoverable": {"type": "boolean"},
            "alternative_solutions": {"type": "array", "items": {"type": "string"}},
            "suggested_action": {
                "type": "object",
                "required": ["type", "data"],
                "properties": {
                    "type": {"type": "string", "enum": STEP_ACTIONS},
                    "data": {"type": ["object", "string"]}
                }
            }
        }
    })
}

pub fn step_repair_schema() -> Value {
    step_schema()
}

pub const STRATEGIES: [&str; 5] = [
    "full_replan",
    "replan_from_step",
    "skip_steps",
    "add_remediation",
    "adjust_dependencies",
];

pub fn overall_reflection_schema() -> Value {
    let list = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "required": ["should_replan", "root_causes", "incorrect_assumptions",
                     "alternative_approaches", "lessons_learned", "stop_reason", "replanning_strategy"],
        "properties": {
            "should_replan": {"type": "boolean"},
            "root_causes": list,
            "incorrect_assumptions": list,
            "alternative_approaches": list,
            "lessons_learned": list,
            "optimization_suggestions": list,
            "stop_reason": {"type": "string"},
            "replanning_strategy": {
                "type": ["object", "null"],
                "required": ["strategy_type"],
                "properties": {
                    "strategy_type": {"type": "string", "enum": STRATEGIES},
                    "step_id": {"type": ["string", "null"]},
                    "step_ids": {"type": ["array", "null"], "items": {"type": "string"}},
                    "reason": {"type": ["string", "null"]},
                    "suggestions": {"type": ["array", "null"], "items": {"type": "string"}},
                    "adjustments": {"type": ["array", "null"], "items": {"type": "string"}}
                }
            }
        }
    })
}

pub const DIMENSIONS: [&str; 4] = ["completeness", "correctness", "efficiency", "reliability"];

pub fn evaluation_schema() -> Value {
    let score = json!({"type": "number", "minimum": 0, "maximum": 100});
    let list = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "required": ["overall_score", "is_successful", "dimensions", "successes", "failures",
                     "improvement_suggestions"],
        "properties": {
            "overall_score": score,
            "is_successful": {"type": "boolean"},
            "dimensions": {
                "type": "object",
                "required": DIMENSIONS,
                "properties": {"completeness": score, "correctness": score,
                               "efficiency": score, "reliability": score}
            },
            "successes": list,
            "failures": list,
            "improvement_suggestions": list
        }
    })
}

// ---------------------------------------------------------------- builders

const TOOL_SELECTION_SYSTEM: &str = "You are the planner of a task orchestration system. Stage 1 of \
two-stage planning: choose the tools the plan will need from the registry. This is first-time tool \
selection: there is no execution history to learn from, so predict what the task needs. Prefer few, \
relevant tools; include every tool a reasonable plan would call.";

const REPLANNING_TOOL_SELECTION_SYSTEM: &str = "You are the planner of a task orchestration system. \
This is tool selection for replanning: the task ran and failed, and you have execution feedback. \
Use it: avoid tools that failed for reasons another tool would not have, keep tools that worked, and \
bring in alternatives that address the root causes. Say in changes_summary what you changed and why.";

/// Stage 1: tool selection; with `replanning`, the seed-004 variant with execution feedback.
pub fn tool_selection(
    task: &TaskBrief,
    tools: &[ToolBrief],
    replanning: Option<&ReplanningSelection>,
    templates: &[TemplateDef],
) -> Prompt {
    let mut user = task_section(task);
    user.push('\n');
    user.push_str(&tools_section(tools, false));
    let system = match replanning {
        None if !templates.is_empty() => {
            user.push_str("\n## Workflow templates (ready-made plans)\n");
            for t in templates {
                let _ = writeln!(
                    user,
                    "- `{}`: {}; input_schema: {}",
                    t.id,
                    t.description.replace('\n', " "),
                    t.input_schema
                );
            }
            user.push_str(
                "\nThis is the first plan for this task. If a workflow template does the task, answer its id \
                 as workflow_id with a workflow_input that matches its input_schema; otherwise select tools. \
                 Answer {\"selected_tools\": [tool ids], \"reasoning\": \"...\", \"task_type\": \"...\", \
                 \"workflow_id\": id or null, \"workflow_input\": {} or null}.\n",
            );
            TOOL_SELECTION_SYSTEM
        }
        None => {
            user.push_str(
                "\nThis is the first plan for this task. Answer {\"selected_tools\": [tool ids], \"reasoning\": \"...\"}.\n",
            );
            TOOL_SELECTION_SYSTEM
        }
        Some(r) => {
            user.push_str("\n## Tools used before\n");
            if r.previous_tools.is_empty() {
                user.push_str("- (none ran)\n");
            }
            for p in &r.previous_tools {
                let _ = writeln!(
                    user,
                    "- tool `{}` ({}) in {}: status {}; failure reason: {}; output summary: {}",
                    p.tool_id,
                    p.tool_name,
                    p.step_id,
                    p.execution_status,
                    p.failure_reason.as_deref().unwrap_or("none"),
                    p.execution_summary.as_deref().unwrap_or("(no output)"),
                );
            }
            let _ = write!(
                user,
                "\n## Execution history\n{}\n## Reflection analysis\n{}\n",
                r.execution_history.trim_end(),
                r.reflection_analysis.trim()
            );
            if let Some(g) = &r.guidance {
                let _ = write!(user, "\n## Overall reflection guidance\n{}", g);
            }
            user.push_str(
                "\nAnswer {\"selected_tools\": [tool ids], \"reasoning\": \"...\", \"changes_summary\": \"what changed from the tools used before\"}.\n",
            );
            REPLANNING_TOOL_SELECTION_SYSTEM
        }
    };
    Prompt {
        name: "tool_selection",
        system: format!("{system} Use only tool ids from the list. {JSON_ONLY}"),
        user,
        schema: tool_selection_schema(),
    }
}

const PLAN_RULES: &str = "Rules: step ids are step_1, step_2, … in order; `tool` is one of the listed \
tool ids; `dependencies` lists the step ids whose results a step needs (no cycles); independent steps \
run in parallel; `actions` (optional) are sub-calls run in parallel inside one step, each \
{\"action_id\", \"tool\", \"parameters\"}, referenced as \"{{action_1_1.output}}\". To run one tool \
once per element of a list an earlier step produces, give the step a `map`: {\"over\": \
\"${step_1.output.items}\", \"max_items\": n, \"max_parallel\": n, \"on_item_failure\": \"fail\" or \
\"continue\"}; its parameters read the element as \"${item}\" (\"${item.field}\") and its position as \
\"${item_index}\", and its output is the list of the items' outputs in order. `max_items` is required: \
a longer list fails the step.";

/// Said when the tools offered include the built-in `agent` (the agent issue).
const AGENT_RULE: &str = "Where the path is not known in advance (what to call next depends on \
what earlier calls return), one step may use the tool `agent`: {\"instructions\": \"...\", \
\"input\": ..., \"tools\": [tool ids it may call], \"max_turns\": n, \"output_schema\": {...}}; \
a model then calls those tools turn by turn, each call a step with its own retries, until it \
answers. Prefer plain steps when the calls are known.";

const PLAN_SYSTEM: &str = "You are the planner of a task orchestration system. Turn the task into a \
plan: a DAG of steps, each calling one tool with JSON parameters.";

/// Stage 2 (or the only stage): the plan, with only the selected tools.
pub fn plan(task: &TaskBrief, tools: &[ToolBrief]) -> Prompt {
    let mut user = task_section(task);
    user.push('\n');
    user.push_str(&tools_section(tools, true));
    if tools
        .iter()
        .any(|t| t.id == crate::domain::agent::AGENT_TOOL)
    {
        let _ = write!(user, "\n{AGENT_RULE}");
    }
    let _ = write!(
        user,
        "\n{PLAN_RULES}\n{PLACEHOLDERS}\n\nAnswer {{\"reasoning\": \"...\", \"estimated_duration\": seconds, \
         \"steps\": [{{\"step_id\": \"step_1\", \"name\": \"...\", \"tool\": \"tool id\", \"parameters\": {{}}, \
         \"dependencies\": [], \"expected_output\": \"...\", \"actions\": []}}]}}.\n"
    );
    Prompt {
        name: "plan",
        system: format!("{PLAN_SYSTEM} {JSON_ONLY}"),
        user,
        schema: plan_schema(),
    }
}

const STEP_REFLECTION_SYSTEM: &str = "You analyse why one step of a task failed and suggest exactly one \
action. You may suggest only one of these three actions, nothing else:\n\
1. {\"type\": \"retry_with_params\", \"data\": {\"param\": value, …}} — run the same step again with these \
parameters merged into its parameters;\n\
2. {\"type\": \"retry_with_tool\", \"data\": \"tool_id\"} — run the same step again with another registered tool;\n\
3. {\"type\": \"trigger_overall_reflection\", \"data\": \"summary of the problem\"} — hand the problem to the \
task-level reflection, which alone may replan the task or stop it for a human.\n\
You cannot replan or stop the task yourself. Root-cause categories: parameter_error, tool_error, \
dependency_error, decomposition_error, external_error, unknown_error. Set is_recoverable to false when \
no change to this step can succeed (e.g. a business rule or a missing permission).";

pub fn step_reflection(task: &TaskBrief, c: &StepFailureContext, tools: &[ToolBrief]) -> Prompt {
    let mut user = task_section(task);
    let _ = write!(
        user,
        "\n## The failed step\n{}\n\n{}",
        pretty(&serde_json::to_value(&c.step).unwrap_or_default()),
        failure_section(&c.failure)
    );
    user.push_str(&schema_section(c, tools));
    user.push_str("\n## Attempts of this step\n");
    user.push_str(&execution_history(&c.attempts));
    let _ = write!(
        user,
        "\n## Counters\n- step retries used: {} of {}\n- consecutive failures: {} of {}\n- single-step repairs used: {} of {}\n",
        c.counters.retry_count,
        c.counters.max_step_retries,
        c.counters.consecutive_failures,
        c.counters.max_consecutive_failures,
        c.counters.single_step_repair_count,
        c.counters.max_single_step_repairs,
    );
    let _ = writeln!(
        user,
        "- registered alternative tools not tried yet: {}",
        if c.untried_alternatives.is_empty() {
            "none".to_string()
        } else {
            c.untried_alternatives.join(", ")
        }
    );
    user.push('\n');
    user.push_str(&tools_section(tools, true));
    user.push_str(
        "\nAnswer {\"root_cause_category\", \"root_cause\", \"analysis\", \"confidence\": 0-100, \
         \"is_recoverable\": bool, \"alternative_solutions\": [], \"suggested_action\": {\"type\", \"data\"}}.\n",
    );
    Prompt {
        name: "step_reflection",
        system: format!("{STEP_REFLECTION_SYSTEM} {JSON_ONLY}"),
        user,
        schema: step_reflection_schema(),
    }
}

const STEP_REPAIR_SYSTEM: &str = "You repair one failed step of a task's plan (single-step repair). \
Rewrite only this step: you may change its tool, parameters and dependencies, but keep its step_id. \
Retrying it unchanged will fail again.";

pub fn step_repair(
    task: &TaskBrief,
    c: &StepFailureContext,
    reflection: Option<&StepReflection>,
    steps: &[StepState],
    tools: &[ToolBrief],
) -> Prompt {
    let mut user = task_section(task);
    let _ = write!(
        user,
        "\n## The step to repair ({})\n{}\n\n{}",
        c.step.id,
        pretty(&serde_json::to_value(&c.step).unwrap_or_default()),
        failure_section(&c.failure)
    );
    if let Some(r) = reflection {
        let _ = write!(
            user,
            "\n## Step reflection\n- category: {}\n- root cause: {}\n- analysis: {}\n- alternatives: {}\n",
            r.root_cause_category,
            r.root_cause,
            r.analysis,
            r.alternative_solutions.join("; ")
        );
    }
    user.push_str(&schema_section(c, tools));
    user.push_str("\n## Attempts of this step\n");
    user.push_str(&execution_history(&c.attempts));
    user.push('\n');
    user.push_str(&steps_section(steps));
    user.push('\n');
    user.push_str(&tools_section(tools, true));
    let _ = write!(
        user,
        "\n{PLACEHOLDERS}\n\nAnswer one step: {{\"step_id\": \"{}\", \"name\", \"tool\", \"parameters\": {{}}, \
         \"dependencies\": [], \"expected_output\", \"actions\": []}}.\n",
        c.step.id
    );
    Prompt {
        name: "step_repair",
        system: format!("{STEP_REPAIR_SYSTEM} {JSON_ONLY}"),
        user,
        schema: step_repair_schema(),
    }
}

/// The five strategies and the format of each (in the overall reflection's system prompt).
/// Each is `FORMAT — meaning`, the format being the JSON the answer carries.
pub const STRATEGY_FORMATS: [&str; 5] = [
    r#"{"strategy_type": "full_replan", "reason": "why"} — start over with a fresh context; nothing is kept"#,
    r#"{"strategy_type": "replan_from_step", "step_id": "step_N", "reason": "why"} — keep the successful results before step_N and replan from step_N on"#,
    r#"{"strategy_type": "skip_steps", "step_ids": ["step_N"], "reason": "why"} — leave these steps out (their dependents run without them)"#,
    r#"{"strategy_type": "add_remediation", "suggestions": ["a step that fixes the cause"]} — add steps that fix the cause before running the failed work again"#,
    r#"{"strategy_type": "adjust_dependencies", "adjustments": ["step_3 no longer depends on step_2"]} — change the order or the dependencies between steps"#,
];

const OVERALL_SYSTEM: &str = "You reflect on a whole task after its recovery escalated (or after an \
unsuccessful evaluation). Find the root causes, the incorrect assumptions behind the plan, alternative \
approaches and lessons learned, then decide: should_replan = true with a replanning_strategy, or \
should_replan = false with a stop_reason (a human will look at the task). Stop when no plan can \
succeed (a business rule, a missing permission, an external system refusing). The replanning \
strategies and their formats:";

pub fn overall_reflection(task: &TaskBrief, c: &OverallContext) -> Prompt {
    let mut system = format!("{OVERALL_SYSTEM}\n");
    for f in STRATEGY_FORMATS {
        let _ = writeln!(system, "- {f}");
    }
    system.push_str(JSON_ONLY);
    let mut user = task_section(task);
    let _ = write!(
        user,
        "\n## Why you are asked\n{}: {}\n",
        match c.trigger {
            Trigger::StepFailure => "a step's recovery escalated",
            Trigger::Evaluation => "the finished plan was evaluated as unsuccessful",
        },
        c.summary
    );
    if let Some(k) = &c.failed_step {
        let _ = writeln!(user, "Failed step: {k}");
    }
    if let Some(f) = &c.failure {
        user.push('\n');
        user.push_str(&failure_section(f));
    }
    if let Some(e) = &c.evaluation {
        user.push_str(&evaluation_section(e));
    }
    if let Some(r) = &c.step_reflection {
        let _ = write!(
            user,
            "\n## Step reflection\n- category: {}\n- root cause: {}\n- analysis: {}\n- recoverable: {}\n",
            r.root_cause_category, r.root_cause, r.analysis, r.is_recoverable
        );
    }
    user.push('\n');
    user.push_str(&steps_section(&c.steps));
    let _ = write!(
        user,
        "\n## Execution history\n{}\n## Counters\n- replans used: {} of {}\n- round: {} of {}\n",
        c.execution_history.trim_end(),
        c.counters.task_replan_count,
        c.counters.max_task_replans,
        c.counters.round,
        c.counters.max_reflection_rounds,
    );
    user.push_str(
        "\nAnswer {\"should_replan\": bool, \"root_causes\": [], \"incorrect_assumptions\": [], \
         \"alternative_approaches\": [], \"lessons_learned\": [], \"optimization_suggestions\": [], \
         \"stop_reason\": \"...\", \"replanning_strategy\": {\"strategy_type\": ...} or null}.\n",
    );
    Prompt {
        name: "overall_reflection",
        system,
        user,
        schema: overall_reflection_schema(),
    }
}

const REPLAN_SYSTEM: &str = "You replan a task that failed, following the overall reflection's \
guidance and strategy. Steps that succeeded and that the strategy keeps must keep their step_id, \
tool, parameters and dependencies unchanged: then their results are reused instead of run again.";

/// Replanning: the guidance formatted, the plan as it stands, the tools used before, the
/// execution history, and the tools to plan with.
#[allow(clippy::too_many_arguments)]
pub fn replan(
    task: &TaskBrief,
    guidance: &str,
    strategy: &Strategy,
    evaluation: Option<&Evaluation>,
    steps: &[StepState],
    previous: &[PreviousToolInfo],
    history: &str,
    tools: &[ToolBrief],
) -> Prompt {
    let mut user = task_section(task);
    let _ = write!(user, "\n## Overall reflection guidance\n{guidance}");
    if let Some(e) = evaluation {
        user.push_str(&evaluation_section(e));
    }
    let _ = writeln!(
        user,
        "\nApply the strategy `{}`: {}",
        strategy.name(),
        strategy_line(strategy)
    );
    user.push('\n');
    user.push_str(&steps_section(steps));
    user.push_str("\n## Tools used before\n");
    for p in previous {
        let _ = writeln!(
            user,
            "- `{}` in {}: {}{}",
            p.tool_id,
            p.step_id,
            p.execution_status,
            p.failure_reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        );
    }
    let _ = write!(user, "\n## Execution history\n{}\n", history.trim_end());
    user.push_str(&tools_section(tools, true));
    let _ = write!(
        user,
        "\n{PLAN_RULES}\n{PLACEHOLDERS}\n\nAnswer the whole new plan: {{\"reasoning\": \"...\", \
         \"estimated_duration\": seconds, \"steps\": [{{\"step_id\", \"name\", \"tool\", \"parameters\": {{}}, \
         \"dependencies\": [], \"expected_output\", \"actions\": []}}]}}.\n"
    );
    Prompt {
        name: "replan",
        system: format!("{REPLAN_SYSTEM} {JSON_ONLY}"),
        user,
        schema: plan_schema(),
    }
}

const EVALUATION_SYSTEM: &str = "You evaluate the result of a finished plan against its task. Score \
each of the four dimensions from 0 to 100: completeness (every part of the task done), correctness \
(the results are right), efficiency (few wasted attempts and steps), reliability (the result does not \
hinge on luck or retries). overall_score is 0-100.";

pub fn evaluation(
    task: &TaskBrief,
    steps: &[StepState],
    history: &str,
    success_threshold: f64,
) -> Prompt {
    let mut user = task_section(task);
    user.push('\n');
    user.push_str(&steps_section(steps));
    let _ = write!(
        user,
        "\n## Execution history\n{}\nThe task counts as successful when overall_score ≥ {success_threshold}.\n\
         \nAnswer {{\"overall_score\": 0-100, \"is_successful\": bool, \"dimensions\": {{\"completeness\", \
         \"correctness\", \"efficiency\", \"reliability\"}}, \"successes\": [], \"failures\": [], \
         \"improvement_suggestions\": []}}.\n",
        history.trim_end()
    );
    Prompt {
        name: "evaluation",
        system: format!("{EVALUATION_SYSTEM} {JSON_ONLY}"),
        user,
        schema: evaluation_schema(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::brain::llm::validate;
    use crate::domain::recovery::{Evaluation, StepAction};

    fn task() -> TaskBrief {
        TaskBrief {
            description: "Summarise the quarterly report".into(),
            metadata: json!({"region": "emea"}),
            runtime_metadata: json!({"token": "t-1"}),
            context: json!({"customer": "acme"}),
        }
    }

    fn tool(id: &str, description: &str) -> ToolBrief {
        ToolBrief {
            id: id.into(),
            name: format!("{id} tool"),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": {"url": {"type": "string"}}}),
            alternatives: vec![],
        }
    }

    fn tools() -> Vec<ToolBrief> {
        vec![
            tool("fetch", "downloads a document"),
            tool("mirror", "downloads from the mirror"),
            tool("summarise", "summarises text"),
        ]
    }

    fn spec(id: &str, tool: &str, deps: &[&str]) -> StepSpec {
        StepSpec {
            id: id.into(),
            name: format!("{id} name"),
            tool: tool.into(),
            parameters: json!({"url": "http://x/report"}),
            dependencies: deps.iter().map(|d| d.to_string()).collect(),
            expected_output: "text".into(),
            optional: false,
            actions: vec![],
            map: None,
        }
    }

    fn attempt(key: &str, n: i32, tool: &str, ok: bool, out: Value) -> AttemptBrief {
        AttemptBrief {
            step_key: key.into(),
            plan_version: 1,
            attempt: n,
            tool: tool.into(),
            status: if ok { "succeeded" } else { "failed" }.into(),
            parameters: json!({"url": "http://x/report"}),
            output: ok.then(|| out.clone()),
            error: (!ok).then_some(out),
        }
    }

    fn long_output() -> String {
        // 250 characters; the summary keeps the first 200
        format!("{}{}", "a".repeat(200), "Z".repeat(50))
    }

    fn history() -> Vec<AttemptBrief> {
        vec![
            attempt("step_1", 1, "fetch", true, json!(long_output())),
            attempt(
                "step_2",
                1,
                "summarise",
                false,
                json!({"message": "model overloaded", "category": "tool_error"}),
            ),
            attempt(
                "step_2",
                2,
                "summarise",
                false,
                json!({"message": "quota exceeded", "category": "external_error"}),
            ),
        ]
    }

    fn failure() -> ToolFailure {
        let mut f = ToolFailure::new("parameter_error", "limit must be below 100", false);
        f.hints = BTreeMap::from([("limit".to_string(), json!(50))]);
        f.http_status = Some(400);
        f
    }

    fn counters() -> Counters {
        Counters {
            retry_count: 2,
            max_step_retries: 3,
            single_step_repair_count: 0,
            max_single_step_repairs: 1,
            task_replan_count: 0,
            max_task_replans: 1,
            consecutive_failures: 2,
            max_consecutive_failures: 3,
            round: 1,
            max_reflection_rounds: 5,
            rescue_count: 0,
            max_rescues: 3,
        }
    }

    fn step_states() -> Vec<StepState> {
        vec![
            StepState {
                spec: spec("step_1", "fetch", &[]),
                status: "succeeded".into(),
                retry_count: 0,
                output: Some(json!("the report text")),
                error: None,
            },
            StepState {
                spec: spec("step_2", "summarise", &["step_1"]),
                status: "failed".into(),
                retry_count: 2,
                output: None,
                error: Some(json!({"message": "quota exceeded", "category": "external_error"})),
            },
        ]
    }

    fn overall() -> OverallReflection {
        OverallReflection {
            should_replan: true,
            root_causes: vec!["the summariser's quota is exhausted".into()],
            incorrect_assumptions: vec!["one summariser is enough".into()],
            alternative_approaches: vec!["summarise with the mirror's digest".into()],
            lessons_learned: vec!["check quotas before long runs".into()],
            stop_reason: String::new(),
            optimization_suggestions: vec!["cache the digest between runs".into()],
            replanning_strategy: None,
        }
    }

    fn both(p: &Prompt) -> String {
        format!("{}\n{}", p.system, p.user)
    }

    /// The planner hears about `agent` only when it is offered.
    #[test]
    fn the_plan_prompt_explains_the_agent_only_when_it_is_offered() {
        let p = plan(&task(), &tools());
        assert!(!p.user.contains("tool `agent`"));
        let mut offered = tools();
        offered.push(tool("agent", "an LLM that calls tools in a loop"));
        let p = plan(&task(), &offered);
        assert!(p.user.contains("tool `agent`"), "{}", p.user);
    }

    #[test]
    fn first_time_tool_selection_carries_the_task_metadata_and_every_tool() {
        let p = tool_selection(&task(), &tools(), None, &[]);
        assert_eq!(p.name, "tool_selection");
        assert!(p.user.contains("Summarise the quarterly report"));
        assert!(p.user.contains("\"region\": \"emea\""));
        for t in tools() {
            assert!(p.user.contains(&format!("`{}`", t.id)), "{}", t.id);
            assert!(p.user.contains(&t.description));
        }
        assert!(p.system.contains("first-time tool selection"));
        assert!(!both(&p).contains("Tools used before"));
        assert!(!both(&p).contains("Execution history"));
    }

    #[test]
    fn previous_tools_keep_status_failure_reason_and_a_200_character_summary() {
        let prev = previous_tools(&history(), &tools());
        assert_eq!(prev.len(), 2, "{prev:?}");
        assert_eq!(prev[0].tool_id, "fetch");
        assert_eq!(prev[0].tool_name, "fetch tool");
        assert_eq!(prev[0].step_id, "step_1");
        assert_eq!(prev[0].execution_status, "Success");
        assert_eq!(prev[0].failure_reason, None);
        assert_eq!(
            prev[0].execution_summary.as_deref(),
            Some(format!("{}...", "a".repeat(200)).as_str())
        );
        assert_eq!(prev[1].tool_id, "summarise");
        assert_eq!(prev[1].execution_status, "Failed");
        // the latest failure's reason
        assert_eq!(
            prev[1].failure_reason.as_deref(),
            Some("external_error: quota exceeded")
        );
        // a later success of the same step and tool wins
        let mut h = history();
        h.push(attempt("step_2", 3, "summarise", true, json!("done")));
        let prev = previous_tools(&h, &tools());
        assert_eq!(prev[1].execution_status, "Success");
        assert_eq!(prev[1].failure_reason, None);
        assert_eq!(summarize("short"), "short");
    }

    #[test]
    fn replanning_tool_selection_carries_seed_004s_execution_feedback() {
        let o = overall();
        let strategy = Strategy::ReplanFromStep {
            step_id: "step_2".into(),
            reason: "quota".into(),
        };
        let ctx = ReplanningSelection {
            previous_tools: previous_tools(&history(), &tools()),
            execution_history: execution_history(&history()),
            reflection_analysis: "step step_2 failed: quota exceeded (external_error)".into(),
            guidance: Some(format_guidance(&o, &strategy)),
        };
        let p = tool_selection(&task(), &tools(), Some(&ctx), &[]);
        assert_eq!(p.name, "tool_selection");
        assert!(p.system.contains("replanning"));
        let u = &p.user;
        // previous tools: id, name, status, failure reason, 200-character output summary
        assert!(u.contains("tool `summarise` (summarise tool) in step_2: status Failed; failure reason: external_error: quota exceeded"), "{u}");
        assert!(
            u.contains("tool `fetch` (fetch tool) in step_1: status Success; failure reason: none")
        );
        assert!(u.contains(&format!("output summary: {}...", "a".repeat(200))));
        assert!(!u.contains("ZZZ"), "the summary is cut at 200 characters");
        // the execution history, the reflection analysis and the overall guidance
        assert!(u.contains("## Execution history"));
        assert!(u.contains("step_2 attempt 2 with tool summarise → failed"));
        assert!(u.contains("## Reflection analysis\nstep step_2 failed: quota exceeded"));
        assert!(u.contains("the summariser's quota is exhausted"));
        assert!(u.contains("Replanning strategy: replan_from_step step_2"));
        assert!(u.contains("changes_summary"));
        assert!(tool_selection_schema()["properties"]["changes_summary"].is_object());
    }

    #[test]
    fn the_plan_prompt_offers_only_the_selected_tools() {
        let selected: Vec<ToolBrief> = tools().into_iter().filter(|t| t.id != "mirror").collect();
        let p = plan(&task(), &selected);
        assert_eq!(p.name, "plan");
        assert!(p.user.contains("`fetch`") && p.user.contains("`summarise`"));
        assert!(!p.user.contains("`mirror`"));
        assert!(p.user.contains("input schema"));
        assert!(p.user.contains("${step_1.output.field.path}"));
        assert!(p.user.contains("\"region\": \"emea\""));
        assert!(p.user.contains("\"token\": \"t-1\""), "runtime metadata");
        assert!(
            p.user.contains("## Context") && p.user.contains("\"customer\": \"acme\""),
            "context"
        );
    }

    #[test]
    fn step_reflection_offers_the_three_actions_and_nothing_else() {
        let c = StepFailureContext {
            step: spec("step_2", "summarise", &["step_1"]),
            failure: failure(),
            attempts: history()[1..].to_vec(),
            counters: counters(),
            untried_alternatives: vec!["mirror".into()],
        };
        let p = step_reflection(&task(), &c, &tools());
        assert_eq!(p.name, "step_reflection");
        let text = both(&p);
        for a in STEP_ACTIONS {
            assert!(p.system.contains(&format!("\"type\": \"{a}\"")), "{a}");
        }
        // exactly three actions, in the prompt and in the schema
        assert_eq!(p.system.matches("{\"type\": ").count(), 3);
        let allowed = &p.schema["properties"]["suggested_action"]["properties"]["type"]["enum"];
        assert_eq!(allowed, &json!(STEP_ACTIONS));
        for banned in [
            "replan_entire_task",
            "ReplanEntireTask",
            "skip_steps",
            "full_replan",
            "replan_from_step",
        ] {
            assert!(!text.contains(banned), "{banned} must not be offered");
        }
        // each action's format deserializes into the one Rust enum the recovery understands
        for (a, data) in
            STEP_ACTIONS
                .iter()
                .zip([json!({"limit": 50}), json!("mirror"), json!("why")])
        {
            let v: StepAction = serde_json::from_value(json!({"type": a, "data": data})).unwrap();
            assert_eq!(serde_json::to_value(&v).unwrap()["type"], json!(a));
        }
        // the context: failure, hints, HTTP status, attempts, counters, untried alternatives
        assert!(p.user.contains("limit must be below 100"));
        assert!(p.user.contains("{\"limit\":50}"));
        assert!(p.user.contains("HTTP status: 400"));
        assert!(p.user.contains("quota exceeded"));
        assert!(p.user.contains("step retries used: 2 of 3"));
        assert!(p.user.contains("not tried yet: mirror"));
    }

    /// Parameters that broke the tool's schema: the reflection and the repair see the schema,
    /// each violation and the offending values (and a Retry-After when one was given).
    #[test]
    fn a_schema_violation_shows_the_schema_the_violations_and_the_values() {
        let mut f = ToolFailure::new("parameter_error", "parameters do not match", false);
        f.schema_violations =
            vec!["at /count: \"5\" is not of type \"integer\"".to_string()].into();
        f.retry_after_ms = Some(2000);
        let mut strict = tool("summarise", "summarises text");
        strict.input_schema =
            json!({"type": "object", "properties": {"count": {"type": "integer"}}});
        let mut a = attempt(
            "step_2",
            1,
            "summarise",
            false,
            json!({"category": "parameter_error"}),
        );
        a.parameters = json!({"count": "5"});
        let c = StepFailureContext {
            step: spec("step_2", "summarise", &[]),
            failure: f,
            attempts: vec![a],
            counters: counters(),
            untried_alternatives: vec![],
        };
        for p in [
            step_reflection(&task(), &c, std::slice::from_ref(&strict)),
            step_repair(
                &task(),
                &c,
                None,
                &step_states(),
                std::slice::from_ref(&strict),
            ),
        ] {
            assert!(
                p.user
                    .contains("break the tool's input schema (no call was made)"),
                "{}",
                p.name
            );
            assert!(
                p.user
                    .contains("at /count: \"5\" is not of type \"integer\""),
                "{}",
                p.name
            );
            assert!(
                p.user.contains("\"count\": \"5\""),
                "{}: the offending value",
                p.name
            );
            assert!(p.user.contains("Its input schema:"), "{}", p.name);
            assert!(p.user.contains("for 2000 ms (Retry-After)"), "{}", p.name);
        }
    }

    #[test]
    fn step_repair_carries_the_step_its_failure_the_reflection_and_the_plan() {
        let c = StepFailureContext {
            step: spec("step_2", "summarise", &["step_1"]),
            failure: failure(),
            attempts: vec![],
            counters: counters(),
            untried_alternatives: vec![],
        };
        let r = StepReflection {
            root_cause_category: "tool_error".into(),
            root_cause: "summariser down".into(),
            analysis: "use another tool".into(),
            confidence: 80.0,
            is_recoverable: true,
            alternative_solutions: vec!["mirror".into()],
            suggested_action: StepAction::TriggerOverallReflection("x".into()),
        };
        let p = step_repair(&task(), &c, Some(&r), &step_states(), &tools());
        assert_eq!(p.name, "step_repair");
        assert!(p.system.contains("keep its step_id"));
        assert!(p.user.contains("## The step to repair (step_2)"));
        assert!(p.user.contains("\"step_id\": \"step_2\""));
        assert!(p.user.contains("limit must be below 100"));
        assert!(p.user.contains("root cause: summariser down"));
        assert!(
            p.user
                .contains("step_1 \"step_1 name\": tool fetch, status succeeded")
        );
        assert!(p.user.contains("`mirror`"));
        assert_eq!(p.schema["required"][0], "step_id");
    }

    fn weak_evaluation() -> Evaluation {
        Evaluation {
            overall_score: 41.0,
            is_successful: false,
            dimensions: crate::domain::recovery::Dimensions {
                completeness: 40.0,
                correctness: 50.0,
                efficiency: 30.0,
                reliability: 44.0,
            },
            successes: vec![],
            failures: vec!["the summary misses the totals".into()],
            improvement_suggestions: vec!["sum the columns before summarising".into()],
        }
    }

    #[test]
    fn overall_reflection_carries_the_five_strategies_and_their_formats() {
        let c = OverallContext {
            trigger: Trigger::StepFailure,
            summary: "retries exhausted".into(),
            failed_step: Some("step_2".into()),
            failure: Some(failure()),
            step_reflection: None,
            steps: step_states(),
            execution_history: execution_history(&history()),
            counters: counters(),
            evaluation: None,
        };
        let p = overall_reflection(&task(), &c);
        assert!(!p.user.contains("Last evaluation"));
        let after_eval = overall_reflection(
            &task(),
            &OverallContext {
                trigger: Trigger::Evaluation,
                evaluation: Some(weak_evaluation()),
                ..c.clone()
            },
        );
        for line in [
            "## Last evaluation (unsuccessful)\nOverall score 41.0",
            "Failures:\n- the summary misses the totals",
            "Improvement suggestions:\n- sum the columns before summarising",
        ] {
            assert!(after_eval.user.contains(line), "{}", after_eval.user);
        }
        assert_eq!(p.name, "overall_reflection");
        let mut names = Vec::new();
        for f in STRATEGY_FORMATS {
            assert!(p.system.contains(f));
            // each format is the JSON the answer carries, and parses into the strategy it names
            let (json_part, _) = f.split_once(" — ").unwrap();
            let v: Value = serde_json::from_str(json_part).unwrap();
            let s: Strategy = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(s.name(), v["strategy_type"]);
            names.push(s.name());
        }
        assert_eq!(names, STRATEGIES);
        assert_eq!(
            p.schema["properties"]["replanning_strategy"]["properties"]["strategy_type"]["enum"],
            json!(STRATEGIES)
        );
        assert!(
            p.user
                .contains("a step's recovery escalated: retries exhausted")
        );
        assert!(p.user.contains("Failed step: step_2"));
        assert!(p.user.contains("limit must be below 100"));
        assert!(
            p.user
                .contains("step_2 attempt 2 with tool summarise → failed")
        );
        assert!(p.user.contains("replans used: 0 of 1"));
        assert!(
            p.system
                .contains("should_replan = false with a stop_reason")
        );
    }

    #[test]
    fn replanning_formats_the_guidance() {
        let o = overall();
        let strategy = Strategy::SkipSteps {
            step_ids: vec!["step_2".into()],
            reason: "optional".into(),
        };
        let g = format_guidance(&o, &strategy);
        for (heading, item) in [
            ("Root causes:", "- the summariser's quota is exhausted"),
            ("Incorrect assumptions:", "- one summariser is enough"),
            (
                "Alternative approaches:",
                "- summarise with the mirror's digest",
            ),
            ("Lessons learned:", "- check quotas before long runs"),
        ] {
            let at = g.find(heading).unwrap_or_else(|| panic!("{heading}"));
            assert!(g[at..].starts_with(&format!("{heading}\n{item}")), "{g}");
        }
        assert!(g.contains("Replanning strategy: skip_steps step_2"));
        assert!(g.contains("Optimization suggestions:\n- cache the digest between runs"));
        let empty = format_guidance(
            &OverallReflection {
                root_causes: vec![],
                ..o.clone()
            },
            &Strategy::FullReplan,
        );
        assert!(empty.contains("Root causes:\n- (none given)"));

        let prev = previous_tools(&history(), &tools());
        let hist = execution_history(&history());
        let p = replan(
            &task(),
            &g,
            &strategy,
            Some(&weak_evaluation()),
            &step_states(),
            &prev,
            &hist,
            &tools(),
        );
        assert_eq!(p.name, "replan");
        assert!(p.user.contains(&g));
        assert!(
            p.user
                .contains("Improvement suggestions:\n- sum the columns before summarising")
        );
        assert!(p.user.contains("Apply the strategy `skip_steps`"));
        assert!(
            p.user
                .contains("`summarise` in step_2: Failed (external_error: quota exceeded)")
        );
        assert!(
            p.user
                .contains("step_1 attempt 1 with tool fetch → succeeded")
        );
        assert!(p.system.contains("keep their step_id"));
        assert_eq!(p.schema, plan_schema());
    }

    #[test]
    fn evaluation_asks_for_the_four_dimensions() {
        let p = evaluation(
            &task(),
            &step_states(),
            &execution_history(&history()),
            80.0,
        );
        assert_eq!(p.name, "evaluation");
        for d in DIMENSIONS {
            assert!(p.system.contains(d), "{d}");
            assert!(p.schema["properties"]["dimensions"]["properties"][d].is_object());
        }
        assert_eq!(
            p.schema["properties"]["dimensions"]["required"],
            json!(DIMENSIONS)
        );
        assert!(p.user.contains("overall_score ≥ 80"));
        assert!(p.user.contains("output: the report text"));
    }

    /// The contract's answer shapes validate against our schemas and parse into the types the
    /// recovery understands.
    #[test]
    fn contract_answers_fit_the_schemas() {
        let sel = json!({"selected_tools": ["fetch"], "reasoning": "r", "changes_summary": "c"});
        assert!(validate(&tool_selection_schema(), &sel).is_empty());
        let plan = json!({"reasoning": "r", "estimated_duration": 30, "steps": [
            {"step_id": "step_1", "name": "n", "tool": "fetch", "parameters": {}, "dependencies": [],
             "expected_output": "text", "actions": []}]});
        assert!(validate(&plan_schema(), &plan).is_empty());
        let refl = json!({"root_cause_category": "parameter_error", "root_cause": "r", "analysis": "a",
            "confidence": 80, "is_recoverable": true, "alternative_solutions": [],
            "suggested_action": {"type": "retry_with_params", "data": {"limit": 5}}});
        assert!(validate(&step_reflection_schema(), &refl).is_empty());
        let r: StepReflection = serde_json::from_value(refl).unwrap();
        assert!(matches!(r.suggested_action, StepAction::RetryWithParams(_)));
        let o = json!({"should_replan": true, "root_causes": [], "incorrect_assumptions": [],
            "alternative_approaches": [], "lessons_learned": [], "stop_reason": "",
            "replanning_strategy": {"strategy_type": "full_replan", "step_id": null, "step_ids": [],
                                    "reason": "x", "suggestions": [], "adjustments": []}});
        assert!(validate(&overall_reflection_schema(), &o).is_empty());
        let o: OverallReflection = serde_json::from_value(o).unwrap();
        assert_eq!(o.replanning_strategy, Some(Strategy::FullReplan));
        let e = json!({"overall_score": 91, "is_successful": true, "dimensions": {"completeness": 90,
            "correctness": 95, "efficiency": 80, "reliability": 100}, "successes": [], "failures": [],
            "improvement_suggestions": []});
        assert!(validate(&evaluation_schema(), &e).is_empty());
        let e: Evaluation = serde_json::from_value(e).unwrap();
        assert_eq!(e.overall_score, 91.0);
        // and what they reject
        let bad = json!({"root_cause_category": "x", "root_cause": "r", "analysis": "a", "confidence": 80,
            "is_recoverable": true, "alternative_solutions": [],
            "suggested_action": {"type": "replan_entire_task", "data": "x"}});
        assert!(!validate(&step_reflection_schema(), &bad).is_empty());
    }
}
