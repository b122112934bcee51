//! The events clients read (`GET /tasks/{id}/events`, the SSE stream, the dashboard): one
//! variant per kind with a typed payload, serialized in one place ([`Event::kind`],
//! [`Event::payload`]). The wire names are the contract's (CONTRACT.md, `docs/events.md`):
//! a field the code calls `step_key` is `step_id` on the wire, as clients have always read it.
//! `tests/it/events.rs` checks that every stored event of a run of every path parses as its
//! variant (those the claim and the submit statement build in SQL included) and that
//! `docs/events.md` lists every kind with its fields.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::limits::Limits;
use super::model::StepSpec;
use super::recovery::{Dimensions, StepAction, Strategy, Trigger};
use super::status::TaskStatus;

/// One event: its kind (the wire name of the variant) and its payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload", rename_all = "snake_case")]
pub enum Event {
    TaskSubmitted(TaskSubmitted),
    ToolsSelected(ToolsSelected),
    PlanGenerated(PlanGenerated),
    StepStarted(StepStarted),
    StepCompleted(StepCompleted),
    StepFailed(StepFailed),
    RetryScheduled(RetryScheduled),
    StepReleased(StepReleased),
    StepDeferred(StepDeferred),
    StepRescued(StepRescued),
    StepReflected(StepReflected),
    StepRepaired(StepRepaired),
    OverallReflected(OverallReflected),
    Replanned(Replanned),
    EvaluationCompleted(EvaluationCompleted),
    RoundStarted(RoundStarted),
    InterventionRequired(InterventionRequired),
    TaskResumed(TaskResumed),
    TaskRerun(TaskRerun),
    TaskSucceeded(TaskSucceeded),
    TaskFailed(TaskFailed),
    TaskCancelled(TaskCancelled),
    StepWaiting(StepWaiting),
    WaitResolved(WaitResolved),
    TaskRescheduled(TaskRescheduled),
    MapExpanded(MapExpanded),
    ChildTaskStarted(ChildTaskStarted),
    ChildTaskEnded(ChildTaskEnded),
    CostWarning(CostWarning),
    AgentTurnCompleted(AgentTurnCompleted),
}

/// A task was accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSubmitted {
    pub description: String,
    pub priority: i32,
    pub limits: Limits,
    /// No plan was given: the planning brain makes one.
    pub planned_by_brain: bool,
    /// The workflow template it was submitted with.
    pub template: Option<String>,
}

/// The planning brain chose the tools it plans with (`phase`: `planning` or `replanning`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsSelected {
    pub phase: String,
    pub selected_tools: Vec<String>,
    pub reasoning: String,
    pub changes_summary: Option<String>,
    pub task_type: Option<String>,
    pub workflow_id: Option<String>,
}

/// A plan version was installed (`origin`: `initial`, `template:<id>`, `repair`, `rerun`,
/// `replan:<strategy>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanGenerated {
    pub version: i32,
    pub origin: String,
    /// Steps in the plan.
    pub steps: usize,
    /// The planning brain's reasoning (a brain-made first plan only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_duration: Option<Value>,
}

/// A step was leased to a worker (built by the claim statement, `sql/step/_claim_lease.sql`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepStarted {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub attempt: i32,
    pub tool: String,
    pub worker_id: Uuid,
}

/// A step's attempt succeeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepCompleted {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub attempt: i32,
    pub tool: String,
    /// Steps of the task this completion made ready (on the task's last completion of a batch).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub promoted: Vec<String>,
}

/// A step's attempt failed (`error`: the `ToolFailure`), with the counters after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepFailed {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub attempt: i32,
    pub error: Value,
    pub retry_count: i32,
    pub rescue_count: i32,
    pub consecutive_failures: i32,
    /// The parameters refused, by the input schema (no call was made) or by the tool's own
    /// answer: where each is and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
}

/// A refused parameter: a JSON pointer into the call's parameters and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Violation {
    pub path: String,
    pub message: String,
}

impl Violation {
    /// The violations of a failure as stored (`error.schema_violations`, each `at <pointer>:
    /// <message>`; one that names no place has an empty path).
    pub fn of(error: &Value) -> Vec<Violation> {
        let Some(list) = error.get("schema_violations").and_then(Value::as_array) else {
            return Vec::new();
        };
        list.iter()
            .filter_map(Value::as_str)
            .map(|v| match super::envelope::split_violation(v) {
                Some((path, message)) => Violation {
                    path: path.into(),
                    message: message.into(),
                },
                None => Violation {
                    path: String::new(),
                    message: v.into(),
                },
            })
            .collect()
    }
}

/// The step runs again (tier 1; `tier` 0 for a lost worker's step), after `delay_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryScheduled {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub next_attempt: i32,
    pub delay_ms: u64,
    pub tier: i32,
    /// Parameters merged over the step's (a retry with adjusted parameters, a schema repair).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adjusted_parameters: Option<Value>,
    /// The tool it switches to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternative_tool: Option<String>,
}

/// A worker gave the step back on shutdown (no attempt).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepReleased {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub worker_id: Uuid,
    pub reason: String,
}

/// A step was given back before its call (no attempt): a rate limit holds its tool, its tool's
/// circuit is open, or another step is the half-open circuit's probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepDeferred {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub worker_id: Uuid,
    pub until: chrono::DateTime<chrono::Utc>,
    /// `retry_after`, `circuit_open`, `circuit_probe` or `release_refused`.
    pub reason: String,
    pub tool: String,
}

/// The worker holding the step stopped renewing its lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRescued {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub lost_worker_id: Option<Uuid>,
}

/// The brain reflected on a failed step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepReflected {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub root_cause_category: String,
    pub is_recoverable: bool,
    pub suggested_action: StepAction,
    /// The brain gave no usable answer: the rules fallback stands in.
    pub fallback: bool,
}

/// Tier 2: the step was rewritten (`ok`), or the repair gave nothing usable (`reason`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRepaired {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_step: Option<StepSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_version: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Tier 3 (or an unsuccessful evaluation): the brain reflected on the whole task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverallReflected {
    pub trigger: Trigger,
    /// The failed step that escalated, if one did.
    #[serde(rename = "step_id")]
    pub step_key: Option<String>,
    pub should_replan: bool,
    pub replanning_strategy: Option<Strategy>,
    pub stop_reason: String,
    pub root_causes: Vec<String>,
    pub fallback: bool,
}

/// A new plan version replaced the current one (what it kept and skipped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replanned {
    pub from_version: i32,
    pub to_version: i32,
    pub strategy: Strategy,
    pub kept: Vec<String>,
    pub skipped: Vec<String>,
    pub steps: usize,
}

/// A finished plan was evaluated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvaluationCompleted {
    pub round: i32,
    pub overall_score: f64,
    pub is_successful: bool,
    pub dimensions: Dimensions,
}

/// An unsuccessful round ended; the next begins with a new plan version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundStarted {
    pub round: i32,
    pub plan_version: i32,
    pub strategy: String,
}

/// The task stopped for a person (`needs_intervention`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterventionRequired {
    #[serde(rename = "step_id")]
    pub step_key: Option<String>,
    pub reason: String,
}

/// A person resumed the task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskResumed {
    pub stop_reason: Option<String>,
    pub with_plan: bool,
    /// Keys of the steps given overrides.
    pub step_overrides: Vec<String>,
    /// The bulk action that did it, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulk_action_id: Option<Uuid>,
}

/// An ended task runs again from a step (a new plan version).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRerun {
    pub from_status: TaskStatus,
    pub from_step: String,
    pub from_version: i32,
    pub to_version: i32,
    pub kept: Vec<String>,
    pub rerun: Vec<String>,
    pub step_overrides: Vec<String>,
    /// The bulk action that did it, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulk_action_id: Option<Uuid>,
}

/// The task succeeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSucceeded {
    pub plan_version: i32,
    pub final_score: f64,
    pub round: i32,
}

/// The task failed: its error (what the task's `error` holds) and the steps skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFailed {
    #[serde(flatten)]
    pub error: TaskError,
    pub skipped_steps: u64,
}

/// Why a task failed (`GET /tasks/{id}/result` `error`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskError {
    /// `deadline_exceeded` for a task past its deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The step whose failure ended it.
    #[serde(default, rename = "step_id", skip_serializing_if = "Option::is_none")]
    pub step_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// That step's last error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<Value>,
    /// Steps whose running attempts were fenced (a deadline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fenced_steps: Option<Vec<String>>,
    /// The last evaluation's score (an unsuccessful evaluation with no round left).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_score: Option<f64>,
}

impl TaskError {
    /// The step `step_key` ended the task, for `reason`.
    pub fn at_step(step_key: Option<&str>, reason: impl Into<String>) -> TaskError {
        TaskError {
            step_key: step_key.map(str::to_string),
            reason: Some(reason.into()),
            ..Default::default()
        }
    }
}

/// A plan version was installed, without a brain's reasoning.
pub fn plan_generated(version: i32, origin: &str, steps: usize) -> Event {
    Event::PlanGenerated(PlanGenerated {
        version,
        origin: origin.to_string(),
        steps,
        reasoning: None,
        estimated_duration: None,
    })
}

/// The task was cancelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskCancelled {
    pub previous_status: TaskStatus,
    pub skipped_steps: u64,
    /// The bulk action that did it, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulk_action_id: Option<Uuid>,
}

/// A step waits (an approval, an event, an async tool's callback, a time), holding no worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepWaiting {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub wait_id: Uuid,
    /// `approval`, `event`, `callback` or `sleep`.
    pub wait_kind: String,
    pub attempt: i32,
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    pub worker_id: Uuid,
}

/// A map step's list was resolved and its first items started; the step waits for them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapExpanded {
    #[serde(rename = "step_id")]
    pub step_key: String,
    /// How many items the list has.
    pub items: i64,
    /// How many run at once (`max_parallel`, or all).
    pub max_parallel: i64,
    /// Items that succeeded before a replan, kept (not run again).
    pub kept: i64,
}

/// A step's `task` call started a child task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildTaskStarted {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub child_task_id: Uuid,
}

/// A child task a step waited for ended; the step runs on with its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildTaskEnded {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub child_task_id: Uuid,
    /// The child's status: `succeeded`, `failed` or `cancelled`.
    pub status: String,
}

/// A wait was resolved, expired into its timeout, or cancelled with its task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitResolved {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub wait_id: Uuid,
    pub wait_kind: String,
    /// `approved`, `rejected`, `event`, `completed`, `failed`, `slept` or `timeout`.
    pub outcome: String,
    /// The API key that decided (approvals).
    pub resolved_by: Option<Uuid>,
    /// An approver's edited parameters (the step's overrides from now on).
    pub parameters: Option<Value>,
    /// Seconds from the wait's start to its resolution.
    pub waited_secs: f64,
    /// The step was waiting and is claimable again (false: the resolution is kept for the
    /// step's running call to find).
    pub woke_step: bool,
}

/// `POST /tasks/{id}/reschedule`: nothing of the task runs before `run_at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRescheduled {
    pub run_at: chrono::DateTime<chrono::Utc>,
    pub previous_run_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// The task has spent `[limits] cost_warn_fraction` of its `max_cost` (once).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostWarning {
    pub cost: f64,
    pub max_cost: f64,
    pub fraction: f64,
}

/// A turn of an agent step was answered and stored: the model asked for these calls (the
/// keys of their steps; none when it answered or was asked again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentTurnCompleted {
    #[serde(rename = "step_id")]
    pub step_key: String,
    pub turn: i32,
    pub tool_calls: Vec<String>,
}

/// The kinds the claim and the submit statement write in SQL (bound as parameters).
impl StepStarted {
    pub const KIND: &'static str = "step_started";
}
impl TaskSubmitted {
    pub const KIND: &'static str = "task_submitted";
}
impl PlanGenerated {
    pub const KIND: &'static str = "plan_generated";
}

impl Event {
    /// Every kind, in the order of the enum.
    pub const KINDS: [&'static str; 30] = [
        "task_submitted",
        "tools_selected",
        "plan_generated",
        "step_started",
        "step_completed",
        "step_failed",
        "retry_scheduled",
        "step_released",
        "step_deferred",
        "step_rescued",
        "step_reflected",
        "step_repaired",
        "overall_reflected",
        "replanned",
        "evaluation_completed",
        "round_started",
        "intervention_required",
        "task_resumed",
        "task_rerun",
        "task_succeeded",
        "task_failed",
        "task_cancelled",
        "step_waiting",
        "wait_resolved",
        "task_rescheduled",
        "map_expanded",
        "child_task_started",
        "child_task_ended",
        "cost_warning",
        "agent_turn_completed",
    ];

    /// The kind's wire name.
    pub fn kind(&self) -> &'static str {
        use Event::*;
        match self {
            TaskSubmitted(_) => "task_submitted",
            ToolsSelected(_) => "tools_selected",
            PlanGenerated(_) => "plan_generated",
            StepStarted(_) => "step_started",
            StepCompleted(_) => "step_completed",
            StepFailed(_) => "step_failed",
            RetryScheduled(_) => "retry_scheduled",
            StepReleased(_) => "step_released",
            StepDeferred(_) => "step_deferred",
            StepRescued(_) => "step_rescued",
            StepReflected(_) => "step_reflected",
            StepRepaired(_) => "step_repaired",
            OverallReflected(_) => "overall_reflected",
            Replanned(_) => "replanned",
            EvaluationCompleted(_) => "evaluation_completed",
            RoundStarted(_) => "round_started",
            InterventionRequired(_) => "intervention_required",
            TaskResumed(_) => "task_resumed",
            TaskRerun(_) => "task_rerun",
            TaskSucceeded(_) => "task_succeeded",
            TaskFailed(_) => "task_failed",
            TaskCancelled(_) => "task_cancelled",
            StepWaiting(_) => "step_waiting",
            WaitResolved(_) => "wait_resolved",
            TaskRescheduled(_) => "task_rescheduled",
            MapExpanded(_) => "map_expanded",
            ChildTaskStarted(_) => "child_task_started",
            ChildTaskEnded(_) => "child_task_ended",
            CostWarning(_) => "cost_warning",
            AgentTurnCompleted(_) => "agent_turn_completed",
        }
    }

    /// The payload as stored and sent.
    pub fn payload(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut m)) => m.remove("payload").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }

    /// One event of every kind, every optional field filled: what `docs/events.md` documents
    /// (a test compares them).
    pub fn examples() -> Vec<Event> {
        let mut out = examples_a();
        out.extend(examples_b());
        out.extend(examples_c());
        out.extend(examples_d());
        out
    }

    /// A stored event read back as its variant.
    pub fn parse(kind: &str, payload: &Value) -> Result<Event, serde_json::Error> {
        serde_json::from_value(serde_json::json!({"kind": kind, "payload": payload}))
    }
}

/// [`Event::examples`], in three parts.
fn examples_a() -> Vec<Event> {
    use serde_json::json;
    let key = || "step_1".to_string();
    vec![
        Event::TaskSubmitted(TaskSubmitted {
            description: "d".into(),
            priority: 0,
            limits: Limits {
                max_step_retries: 3,
                max_single_step_repairs: 1,
                max_task_replans: 1,
                max_consecutive_failures: 3,
                max_reflection_rounds: 5,
                max_concurrent_steps: 8,
                step_reflection: true,
                auto_reflection: true,
                success_threshold: 80.0,
                max_llm_calls: None,
                max_llm_tokens: None,
                max_cost: Some(1.5),
                task_timeout_secs: 0,
            },
            planned_by_brain: false,
            template: Some("t".into()),
        }),
        Event::ToolsSelected(ToolsSelected {
            phase: "planning".into(),
            selected_tools: vec!["echo".into()],
            reasoning: "r".into(),
            changes_summary: Some("c".into()),
            task_type: Some("t".into()),
            workflow_id: Some("w".into()),
        }),
        Event::PlanGenerated(PlanGenerated {
            version: 1,
            origin: "initial".into(),
            steps: 1,
            reasoning: Some("r".into()),
            estimated_duration: Some(json!(60)),
        }),
        Event::StepStarted(StepStarted {
            step_key: key(),
            attempt: 1,
            tool: "echo".into(),
            worker_id: Uuid::nil(),
        }),
        Event::StepCompleted(StepCompleted {
            step_key: key(),
            attempt: 1,
            tool: "echo".into(),
            promoted: vec!["step_2".into()],
        }),
        Event::StepFailed(StepFailed {
            step_key: key(),
            attempt: 1,
            error: json!({"message": "m", "category": "tool_error", "retryable": true}),
            retry_count: 1,
            rescue_count: 0,
            consecutive_failures: 1,
            violations: vec![Violation {
                path: "/items/3/qty".into(),
                message: "must be an integer".into(),
            }],
        }),
        Event::RetryScheduled(RetryScheduled {
            step_key: key(),
            next_attempt: 2,
            delay_ms: 500,
            tier: 1,
            adjusted_parameters: Some(json!({"limit": 10})),
            alternative_tool: Some("backup".into()),
        }),
    ]
}

fn examples_b() -> Vec<Event> {
    use serde_json::json;
    let key = || "step_1".to_string();
    let step = StepSpec {
        id: key(),
        name: "fetch".into(),
        tool: "backup".into(),
        parameters: json!({}),
        dependencies: vec![],
        expected_output: String::new(),
        optional: false,
        actions: vec![],
        map: None,
    };
    vec![
        Event::StepReleased(StepReleased {
            step_key: key(),
            worker_id: Uuid::nil(),
            reason: "worker shutting down".into(),
        }),
        Event::StepDeferred(StepDeferred {
            step_key: key(),
            worker_id: Uuid::nil(),
            until: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            reason: "retry_after".into(),
            tool: "t".into(),
        }),
        Event::StepRescued(StepRescued {
            step_key: key(),
            lost_worker_id: Some(Uuid::nil()),
        }),
        Event::StepReflected(StepReflected {
            step_key: key(),
            root_cause_category: "tool_error".into(),
            is_recoverable: true,
            suggested_action: StepAction::RetryWithTool("backup".into()),
            fallback: false,
        }),
        Event::StepRepaired(StepRepaired {
            step_key: key(),
            ok: true,
            old_tool: Some("echo".into()),
            new_tool: Some("backup".into()),
            new_step: Some(step),
            plan_version: Some(2),
            reason: Some("r".into()),
        }),
        Event::OverallReflected(OverallReflected {
            trigger: Trigger::StepFailure,
            step_key: Some(key()),
            should_replan: true,
            replanning_strategy: Some(Strategy::FullReplan),
            stop_reason: String::new(),
            root_causes: vec![],
            fallback: false,
        }),
        Event::Replanned(Replanned {
            from_version: 1,
            to_version: 2,
            strategy: Strategy::FullReplan,
            kept: vec![],
            skipped: vec![],
            steps: 1,
        }),
    ]
}

fn examples_c() -> Vec<Event> {
    use serde_json::json;
    let key = || "step_1".to_string();
    vec![
        Event::EvaluationCompleted(EvaluationCompleted {
            round: 1,
            overall_score: 100.0,
            is_successful: true,
            dimensions: Dimensions {
                completeness: 100.0,
                correctness: 100.0,
                efficiency: 100.0,
                reliability: 100.0,
            },
        }),
        Event::RoundStarted(RoundStarted {
            round: 2,
            plan_version: 2,
            strategy: "full_replan".into(),
        }),
        Event::InterventionRequired(InterventionRequired {
            step_key: Some(key()),
            reason: "r".into(),
        }),
        Event::TaskResumed(TaskResumed {
            stop_reason: Some("r".into()),
            with_plan: false,
            step_overrides: vec![],
            bulk_action_id: Some(Uuid::nil()),
        }),
        Event::TaskRerun(TaskRerun {
            from_status: TaskStatus::Failed,
            from_step: key(),
            from_version: 1,
            to_version: 2,
            kept: vec![],
            rerun: vec![key()],
            step_overrides: vec![],
            bulk_action_id: Some(Uuid::nil()),
        }),
        Event::TaskSucceeded(TaskSucceeded {
            plan_version: 1,
            final_score: 100.0,
            round: 1,
        }),
        Event::TaskFailed(TaskFailed {
            error: TaskError {
                code: Some("deadline_exceeded".into()),
                message: Some("m".into()),
                step_key: Some(key()),
                reason: Some("r".into()),
                last_error: Some(json!({})),
                fenced_steps: Some(vec![]),
                final_score: Some(0.0),
            },
            skipped_steps: 0,
        }),
        Event::TaskCancelled(TaskCancelled {
            previous_status: TaskStatus::Running,
            skipped_steps: 0,
            bulk_action_id: Some(Uuid::nil()),
        }),
    ]
}

fn examples_d() -> Vec<Event> {
    use serde_json::json;
    let key = || "step_1".to_string();
    vec![
        Event::StepWaiting(StepWaiting {
            step_key: key(),
            wait_id: Uuid::nil(),
            wait_kind: "approval".into(),
            attempt: 1,
            expires_at: Some(chrono::DateTime::UNIX_EPOCH),
            worker_id: Uuid::nil(),
        }),
        Event::WaitResolved(WaitResolved {
            step_key: key(),
            wait_id: Uuid::nil(),
            wait_kind: "approval".into(),
            outcome: "approved".into(),
            resolved_by: Some(Uuid::nil()),
            parameters: Some(json!({"env": "production"})),
            waited_secs: 1.5,
            woke_step: true,
        }),
        Event::TaskRescheduled(TaskRescheduled {
            run_at: chrono::DateTime::UNIX_EPOCH,
            previous_run_at: Some(chrono::DateTime::UNIX_EPOCH),
        }),
        Event::MapExpanded(MapExpanded {
            step_key: key(),
            items: 3,
            max_parallel: 2,
            kept: 1,
        }),
        Event::ChildTaskStarted(ChildTaskStarted {
            step_key: key(),
            child_task_id: Uuid::nil(),
        }),
        Event::ChildTaskEnded(ChildTaskEnded {
            step_key: key(),
            child_task_id: Uuid::nil(),
            status: "succeeded".into(),
        }),
        Event::CostWarning(CostWarning {
            cost: 0.8,
            max_cost: 1.0,
            fraction: 0.8,
        }),
        Event::AgentTurnCompleted(AgentTurnCompleted {
            step_key: key(),
            turn: 1,
            tool_calls: vec!["step_1.1.1".into()],
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_variant_has_its_kind_and_round_trips() {
        let e = Event::StepStarted(StepStarted {
            step_key: "s1".into(),
            attempt: 2,
            tool: "echo".into(),
            worker_id: Uuid::nil(),
        });
        assert_eq!(e.kind(), "step_started");
        let p = e.payload();
        assert_eq!(p["step_id"], "s1", "the key is step_id on the wire");
        assert!(p.get("step_key").is_none());
        assert_eq!(Event::parse("step_started", &p).unwrap(), e);
        // an unknown field is an error, not ignored
        let mut extra = p.clone();
        extra["surprise"] = json!(1);
        assert!(Event::parse("step_started", &extra).is_err());
        // the failure's error object flattens into the payload
        let f = Event::TaskFailed(TaskFailed {
            error: TaskError {
                code: Some("deadline_exceeded".into()),
                message: Some("late".into()),
                fenced_steps: Some(vec!["s1".into()]),
                ..Default::default()
            },
            skipped_steps: 2,
        });
        assert_eq!(
            f.payload(),
            json!({"code": "deadline_exceeded", "message": "late", "fenced_steps": ["s1"], "skipped_steps": 2})
        );
        assert_eq!(e.kind(), StepStarted::KIND);
        assert_eq!(Event::KINDS[0], TaskSubmitted::KIND);
        assert_eq!(plan_generated(1, "initial", 1).kind(), PlanGenerated::KIND);
        let examples: Vec<&str> = Event::examples().iter().map(Event::kind).collect();
        assert_eq!(
            examples,
            Event::KINDS,
            "one example of every kind, in order"
        );
        let mut kinds: Vec<&str> = Event::KINDS.to_vec();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), Event::KINDS.len());
    }
}
