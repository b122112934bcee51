//! The JSON shapes clients see (CONTRACT.md). Only this module derives `Serialize` for
//! responses; the store's records never reach a client as they are. Rows that exist only to be
//! shown are decoded straight into a view here (`sqlx::FromRow`, by column name); the rows
//! Trellis reasons about (task, step, attempt, tool) are turned into JSON by a function.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::circuit::{self, BreakerSpec, Circuit};
use crate::domain::records::{AttemptRow, StepRow, TaskRow};
use crate::domain::recovery::RetrySpec;
use crate::domain::secrets::redacted;
use crate::domain::status::{AttemptStatus, StepStatus, TaskStatus};
use crate::domain::tool::ToolDef;

/// `GET /tasks/{id}`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = TaskStatusView)]
pub struct TaskView {
    pub task_id: Uuid,
    pub status: TaskStatus,
    pub description: String,
    pub priority: i32,
    /// The reflection round (1 until the first evaluation asks for another).
    pub round: i32,
    pub plan_version: i32,
    /// The step to look at: the first failed one, else running, else ready.
    pub current_step: Option<String>,
    pub counters: CountersView,
    pub limits: TaskLimitsView,
    /// LLM calls spent on this task (zeros with the rules brain).
    /// What its LLM calls (priced by `/model-prices`) and its tools' reported costs came to.
    pub cost: f64,
    pub llm_usage: LlmUsageView,
    pub steps: StepCountsView,
    #[schema(value_type = Object)]
    pub metadata: Value,
    /// The caller's context, readable as `${context.key}`.
    #[schema(value_type = Object)]
    pub context: Value,
    #[schema(value_type = Object)]
    pub runtime_metadata: Value,
    /// Wall-time deadline (`limits.task_timeout_secs` after submission, or after `run_at`),
    /// if any.
    pub deadline_at: Option<DateTime<Utc>>,
    /// A delayed start (`run_at` / `delay_secs`): nothing of the task runs before it.
    pub run_at: Option<DateTime<Utc>>,
    /// Why the task failed, when it did (`code`, `message`).
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
    pub stop_reason: Option<String>,
    pub final_score: Option<f64>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// The task whose step started this one (the built-in `task`), if any.
    pub parent_task_id: Option<Uuid>,
    /// Tasks this task's steps started, oldest first.
    pub children: Vec<ChildView>,
    /// The fairness key the claim takes turns between (none: the shared key).
    pub concurrency_key: Option<String>,
}

/// A child task, as its parent lists it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ChildTask)]
pub struct ChildView {
    pub task_id: Uuid,
    /// The parent's step that started it.
    pub step_id: String,
    pub status: TaskStatus,
}

/// The recovery counters of a task (and of its current step).
#[derive(Debug, Serialize, ToSchema)]
pub struct CountersView {
    pub step_retry_count: i32,
    pub task_replan_count: i32,
    pub single_step_repair_count: i32,
    pub consecutive_failures: i32,
}

/// The limits a task runs under (the submit's `limits` over the configured defaults).
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskLimitsView {
    pub max_step_retries: i32,
    pub max_single_step_repairs: i32,
    pub max_task_replans: i32,
    pub max_consecutive_failures: i32,
    pub max_reflection_rounds: i32,
    pub max_concurrent_steps: i32,
    pub max_llm_calls: Option<i32>,
    pub max_llm_tokens: Option<i64>,
    /// Money it may spend (none: no cap).
    pub max_cost: Option<f64>,
}

/// Steps of the current plan version by status (`total` leaves superseded ones out).
#[derive(Debug, Serialize, ToSchema)]
pub struct StepCountsView {
    pub total: i64,
    pub succeeded: i64,
    pub failed: i64,
    pub running: i64,
    pub ready: i64,
    pub blocked: i64,
    pub skipped: i64,
    pub superseded: i64,
    /// Waiting for an approval, an event, a callback or a time (holding no worker).
    pub waiting: i64,
}

/// `GET /tasks/{id}`.
pub fn task(
    t: &TaskRow,
    counts: &BTreeMap<StepStatus, i64>,
    current: &[&StepRow],
    usage: LlmUsageView,
    children: &[crate::store::children::ChildRow],
) -> TaskView {
    let n = |s: StepStatus| counts.get(&s).copied().unwrap_or(0);
    let focus = current
        .iter()
        .find(|s| s.status == StepStatus::Failed)
        .or_else(|| current.iter().find(|s| s.status == StepStatus::Running))
        .or_else(|| current.iter().find(|s| s.status == StepStatus::Ready));
    TaskView {
        task_id: t.id,
        status: t.status,
        description: t.description.clone(),
        priority: t.priority,
        round: t.round,
        plan_version: t.plan_version,
        current_step: focus.map(|s| s.step_key.clone()),
        counters: CountersView {
            step_retry_count: focus.map(|s| s.retry_count).unwrap_or(0),
            task_replan_count: t.task_replan_count,
            single_step_repair_count: t.single_step_repair_count,
            consecutive_failures: t.consecutive_failures,
        },
        limits: TaskLimitsView {
            max_step_retries: t.max_step_retries,
            max_single_step_repairs: t.max_single_step_repairs,
            max_task_replans: t.max_task_replans,
            max_consecutive_failures: t.max_consecutive_failures,
            max_reflection_rounds: t.max_reflection_rounds,
            max_concurrent_steps: t.max_concurrent_steps,
            max_llm_calls: t.max_llm_calls,
            max_llm_tokens: t.max_llm_tokens,
            max_cost: t.max_cost,
        },
        cost: t.cost,
        llm_usage: usage,
        steps: StepCountsView {
            total: counts.values().sum::<i64>() - n(StepStatus::Superseded),
            succeeded: n(StepStatus::Succeeded),
            failed: n(StepStatus::Failed),
            running: n(StepStatus::Running),
            ready: n(StepStatus::Ready),
            blocked: n(StepStatus::Blocked),
            skipped: n(StepStatus::Skipped),
            superseded: n(StepStatus::Superseded),
            waiting: n(StepStatus::Waiting),
        },
        metadata: t.metadata.clone(),
        context: t.context.clone(),
        runtime_metadata: t.runtime_metadata.clone(),
        deadline_at: t.deadline_at,
        run_at: t.run_at,
        error: t.error.clone(),
        stop_reason: t.stop_reason.clone(),
        final_score: t.final_score,
        created_at: t.created_at,
        updated_at: t.updated_at,
        finished_at: t.finished_at,
        parent_task_id: t.parent_task_id,
        concurrency_key: t.concurrency_key.clone(),
        children: children
            .iter()
            .map(|c| ChildView {
                task_id: c.task_id,
                step_id: c.step_key.clone(),
                status: c.status,
            })
            .collect(),
    }
}

/// `GET /tasks/{id}/result`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = TaskResult)]
pub struct TaskResultView {
    pub task_id: Uuid,
    pub status: TaskStatus,
    pub is_success: bool,
    pub final_score: Option<f64>,
    pub stop_reason: Option<String>,
    pub total_rounds: i32,
    /// Each succeeded step's output of the current plan version, by step id.
    #[schema(value_type = Object)]
    pub outputs: serde_json::Map<String, Value>,
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
    pub duration_ms: i64,
    /// Whether the task has ended (succeeded, failed or cancelled).
    pub finished: bool,
    /// This task's own LLM tokens and tool calls.
    pub usage: UsageView,
    /// With every descendant's (its child tasks, theirs, …).
    pub usage_total: UsageView,
}

/// LLM tokens and tool calls (attempts of a tool).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[schema(as = Usage)]
pub struct UsageView {
    pub llm_tokens: i64,
    pub tool_calls: i64,
}

/// `GET /tasks/{id}/result`.
pub fn result(
    t: &TaskRow,
    steps: &[StepRow],
    duration_ms: i64,
    (usage, usage_total): (UsageView, UsageView),
) -> TaskResultView {
    let outputs = steps
        .iter()
        // a map's items are in its joined output, not listed on their own
        .filter(|s| {
            s.plan_version == t.plan_version && s.status == StepStatus::Succeeded && !s.is_item()
        })
        .map(|s| (s.step_key.clone(), s.output.clone().unwrap_or(Value::Null)))
        .collect();
    TaskResultView {
        task_id: t.id,
        status: t.status,
        is_success: t.status == TaskStatus::Succeeded,
        final_score: t.final_score,
        stop_reason: t.stop_reason.clone(),
        total_rounds: t.round,
        outputs,
        error: t.error.clone(),
        duration_ms,
        finished: t.status.is_terminal(),
        usage,
        usage_total,
    }
}

/// A step of a plan version (`GET /tasks/{id}/plan`).
#[derive(Debug, Serialize, ToSchema)]
pub struct PlanStepView {
    pub id: String,
    pub name: String,
    /// The tool it runs (a recovery may have switched it).
    pub tool: String,
    /// Credential-like values are redacted.
    #[schema(value_type = Object)]
    pub parameters: Value,
    pub dependencies: Vec<String>,
    pub expected_output: String,
    pub optional: bool,
    #[schema(value_type = Vec<Object>)]
    pub actions: Value,
    pub status: StepStatus,
    pub retry_count: i32,
    pub attempts: i32,
    #[schema(schema_with = super::schemas::any_output)]
    pub output: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
    /// Parameters merged over `parameters` at its next attempt: a tier 1 retry's, a resume's
    /// overrides, or an approver's edit (redacted like `parameters`).
    #[schema(value_type = Object)]
    pub param_overrides: Value,
    /// A map step's `map` (its items are the steps `<id>[<index>]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map: Option<crate::domain::model::MapSpec>,
    /// An item of a map: its index in the map's list (its map step is the id before `[`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_index: Option<i32>,
    /// An expanded map step: how far its items are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_progress: Option<MapProgressView>,
}

/// How far an expanded map step's items are.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = MapProgress)]
pub struct MapProgressView {
    /// Items in the map's list.
    pub total: i32,
    /// Items that succeeded or were given up.
    pub ended: i32,
    /// Items given up (`on_item_failure: continue`).
    pub given_up: i32,
}

/// A step of a plan version (`GET /tasks/{id}/plan`).
pub fn step(s: &StepRow) -> PlanStepView {
    PlanStepView {
        id: s.step_key.clone(),
        name: s.name.clone(),
        tool: s.effective_tool().to_string(),
        parameters: redacted(&s.parameters),
        param_overrides: redacted(&s.param_overrides),
        dependencies: s.dependencies.clone(),
        expected_output: s.expected_output.clone(),
        optional: s.optional,
        actions: redacted(&serde_json::to_value(&s.actions.0).unwrap_or_default()),
        status: s.status,
        retry_count: s.retry_count,
        attempts: s.attempts,
        output: s.output.clone(),
        error: s.error.clone(),
        map: s.map.as_ref().map(|m| m.0.clone()),
        item_index: s.item_index,
        map_progress: match (s.map_total, s.map_ended, s.map_given_up) {
            (Some(total), Some(ended), Some(given_up)) => Some(MapProgressView {
                total,
                ended,
                given_up,
            }),
            _ => None,
        },
    }
}

/// One plan version with its steps (decoded from a `plans` row; `steps` filled by [`PlanView::with_steps`]).
#[derive(Debug, Serialize, sqlx::FromRow, ToSchema)]
#[schema(as = PlanVersion)]
pub struct PlanView {
    pub version: i32,
    /// `initial`, `template:<id>`, `repair`, `resume`, `rerun` or `replan:<strategy>`.
    pub origin: String,
    pub reasoning: String,
    pub estimated_duration: Option<i32>,
    pub created_at: DateTime<Utc>,
    #[sqlx(skip)]
    pub steps: Vec<PlanStepView>,
}

impl PlanView {
    /// This version with its step rows (superseded ones included), in plan order.
    pub fn with_steps(mut self, steps: &[StepRow]) -> Self {
        self.steps = steps
            .iter()
            .filter(|s| s.plan_version == self.version)
            .map(step)
            .collect();
        self
    }
}

/// `GET /tasks/{id}/plan`: the current version, and the others as history.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = PlanView)]
pub struct PlanWithHistory {
    pub task_id: Uuid,
    #[serde(flatten)]
    pub current: PlanView,
    pub history: Vec<PlanView>,
}

/// An attempt (`GET /tasks/{id}/attempts`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Attempt)]
pub struct AttemptView {
    pub step_id: String,
    pub plan_version: i32,
    pub attempt: i32,
    pub tool: String,
    /// Credential-like values are redacted.
    #[schema(value_type = Object)]
    pub parameters: Value,
    pub status: AttemptStatus,
    #[schema(schema_with = super::schemas::any_output)]
    pub output: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub error: Option<Value>,
    pub worker_id: Option<Uuid>,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub duration_ms: Option<i64>,
    /// The `Idempotency-Key` the call carried: the same for every attempt of one call (HTTP
    /// and MCP tools, `http_request`, `task`; null for the others).
    pub idempotency_key: Option<String>,
}

/// An attempt (`GET /tasks/{id}/attempts`).
pub fn attempt(a: &AttemptRow) -> AttemptView {
    AttemptView {
        step_id: a.step_key.clone(),
        plan_version: a.plan_version,
        attempt: a.attempt,
        tool: a.tool.clone(),
        parameters: redacted(&a.parameters),
        status: a.status,
        output: a.output.clone(),
        error: a.error.clone(),
        worker_id: a.worker_id,
        started_at: a.started_at,
        finished_at: a.finished_at,
        duration_ms: a.duration_ms,
        idempotency_key: a.idempotency_key.clone(),
    }
}

/// An event (`GET /tasks/{id}/events`, and the data of a Server-Sent Event).
#[derive(Debug, Serialize, sqlx::FromRow, ToSchema)]
#[schema(as = Event)]
pub struct EventView {
    pub seq: i64,
    pub kind: String,
    pub at: DateTime<Utc>,
    /// Credential-like values are redacted.
    #[serde(serialize_with = "serialize_redacted")]
    #[schema(value_type = Object)]
    pub payload: Value,
}

fn serialize_redacted<S: serde::Serializer>(v: &Value, s: S) -> Result<S::Ok, S::Error> {
    redacted(v).serialize(s)
}

/// `GET /tasks/{id}/reflections`.
#[derive(Debug, Serialize, sqlx::FromRow, ToSchema)]
#[schema(as = Reflection)]
pub struct ReflectionView {
    /// `step` or `overall`.
    pub level: String,
    pub step_key: Option<String>,
    pub plan_version: i32,
    pub round: i32,
    /// Whether the rules brain decided because the LLM could not.
    pub is_fallback: bool,
    /// The decision: tier, strategy, reasoning and its parameters.
    #[schema(value_type = Object)]
    pub body: Value,
    pub raw: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// `GET /tasks/{id}/evaluations`.
#[derive(Debug, Serialize, sqlx::FromRow, ToSchema)]
#[schema(as = Evaluation)]
pub struct EvaluationView {
    pub round: i32,
    pub plan_version: i32,
    pub overall_score: f64,
    pub completeness: f64,
    pub correctness: f64,
    pub efficiency: f64,
    pub reliability: f64,
    pub is_successful: bool,
    #[schema(value_type = Vec<String>)]
    pub successes: Value,
    #[schema(value_type = Vec<String>)]
    pub failures: Value,
    #[schema(value_type = Vec<String>)]
    pub improvement_suggestions: Value,
    pub created_at: DateTime<Utc>,
}

/// One line of `GET /tasks`.
#[derive(Debug, Serialize, sqlx::FromRow, ToSchema)]
#[schema(as = TaskSummary)]
pub struct TaskSummaryView {
    #[sqlx(rename = "id")]
    pub task_id: Uuid,
    pub status: TaskStatus,
    pub description: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A task's LLM usage.
#[derive(Debug, Serialize, sqlx::FromRow, ToSchema)]
pub struct LlmUsageView {
    pub calls: i64,
    pub failed_calls: i64,
    pub requests: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
}

/// A tool of the registry (`/tools`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Tool)]
pub struct ToolView {
    pub id: String,
    pub name: String,
    pub description: String,
    /// `builtin`, `http` or `mcp` (a tool of a registered MCP server).
    #[schema(schema_with = super::schemas::tool_kind)]
    pub kind: String,
    /// Credentials in the URL are redacted; null for a built-in.
    pub endpoint: Option<String>,
    pub timeout_ms: i32,
    #[schema(value_type = Object)]
    pub input_schema: Value,
    /// JSON Schema a successful output must match (null: any output); a mismatch fails the
    /// attempt with category `output_mismatch`.
    #[schema(schema_with = super::schemas::optional_json_schema)]
    pub output_schema: Option<Value>,
    pub output_params: Vec<String>,
    pub alternatives: Vec<String>,
    pub tags: Vec<String>,
    /// At most this many steps of the tool run at once, fleet-wide (null: no limit).
    pub max_concurrency: Option<i32>,
    /// Steps started per second, fleet-wide token bucket (null: no limit).
    pub rate_limit_per_sec: Option<f64>,
    /// Token-bucket size for `rate_limit_per_sec`.
    pub rate_limit_burst: i32,
    /// The tool's retry policy (null: the workers' defaults).
    pub retry: Option<RetrySpec>,
    /// The tool's circuit breaker settings (null: the workers' defaults).
    pub circuit_breaker: Option<BreakerSpec>,
    /// The circuit breaker's state, fleet-wide, now.
    pub circuit: CircuitView,
    /// Every call waits for a person's approval first (`GET /waits`).
    pub requires_approval: bool,
    /// `sync`: the answer is the output; `async`: a 2xx parks the step until the tool calls
    /// back at the `callback_url` its call carries.
    #[schema(schema_with = super::schemas::tool_mode)]
    pub mode: String,
    /// Call headers: `${secret.NAME}` references as given; a literal credential-like value is
    /// redacted.
    pub headers: std::collections::BTreeMap<String, String>,
    /// Where a cancellation of a call in flight is POSTed (null: none).
    pub cancel_url: Option<String>,
    /// Rules by which a 2xx answer's body says the call failed.
    pub failure_when: Vec<crate::domain::envelope::FailureRule>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The tenant whose plans may name it (a built-in: every tenant's; shown as `default`).
    pub tenant: String,
    /// Held (`POST /tools/{id}/pause`): the claim starts none of its steps; they wait queued.
    pub paused: bool,
}

/// A tool's circuit breaker as the fleet sees it now.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Circuit)]
pub struct CircuitView {
    /// `closed`: calls go through; `open`: no call until `until` (steps wait or switch to an
    /// alternative tool); `half_open`: the cool-down is over and one probe call decides.
    #[schema(schema_with = super::schemas::circuit_state)]
    pub state: String,
    /// When an open circuit lets its probe through (null unless open).
    pub until: Option<DateTime<Utc>>,
    /// Outages in a row, fleet-wide, since the last success.
    pub consecutive_failures: i32,
    /// A `Retry-After` the tool answered holds every call until this time (null: none).
    pub held_until: Option<DateTime<Utc>>,
    /// After a hold (or a probe that closed the circuit), the steps that waited go out one per
    /// this many ms, each in a release slot of its own (null: no release under way).
    pub pace_ms: Option<i32>,
    /// The end of the release slots given so far (null: no release under way).
    pub released_until: Option<DateTime<Utc>>,
}

fn circuit(c: Option<(&Circuit, DateTime<Utc>)>) -> CircuitView {
    let Some((c, now)) = c else {
        return CircuitView {
            state: circuit::State::Closed.as_str().into(),
            until: None,
            consecutive_failures: 0,
            held_until: None,
            pace_ms: None,
            released_until: None,
        };
    };
    let state = c.state(now);
    let released_until = match (c.held_until, c.pace_ms > 0) {
        (Some(h), true) => Some(c.next_slot.unwrap_or(h)).filter(|t| *t > now),
        _ => None,
    };
    CircuitView {
        state: state.as_str().into(),
        until: c.open_until.filter(|_| state == circuit::State::Open),
        consecutive_failures: c.consecutive_failures,
        held_until: c.held_until.filter(|h| *h > now),
        pace_ms: released_until.map(|_| c.pace_ms),
        released_until,
    }
}

/// A tool of the registry (`/tools`), with its circuit and the database's `now()` (None: it
/// has no circuit row: closed).
pub fn tool(t: &ToolDef, c: Option<(&Circuit, DateTime<Utc>)>) -> ToolView {
    ToolView {
        id: t.id.clone(),
        name: t.name.clone(),
        description: t.description.clone(),
        kind: t.kind.clone(),
        endpoint: t.endpoint.as_deref().map(crate::net::redact_url_text),
        timeout_ms: t.timeout_ms,
        input_schema: t.input_schema.clone(),
        output_schema: t.output_schema.clone(),
        output_params: t.output_params.clone(),
        alternatives: t.alternatives.clone(),
        tags: t.tags.clone(),
        max_concurrency: t.max_concurrency,
        rate_limit_per_sec: t.rate_limit_per_sec,
        rate_limit_burst: t.rate_limit_burst,
        retry: t.retry.as_ref().map(|j| j.0),
        circuit_breaker: t.circuit_breaker.as_ref().map(|j| j.0),
        circuit: circuit(c),
        requires_approval: t.requires_approval,
        mode: t.mode.clone(),
        headers: crate::secretbox::shown_headers(&t.headers.0),
        cancel_url: t.cancel_url.clone(),
        failure_when: t.failure_when.0.clone(),
        created_at: t.created_at,
        updated_at: t.updated_at,
        tenant: t.tenant.clone(),
        paused: t.paused,
    }
}

/// An API key (`/keys`): never the key itself, except in the answer to `POST /keys`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Key)]
pub struct KeyView {
    pub id: Uuid,
    pub name: String,
    #[schema(schema_with = super::schemas::role)]
    pub role: &'static str,
    /// The key's first characters, to tell keys apart.
    pub key_prefix: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// The tenant whose rows the key's calls see (an admin's: every tenant's).
    pub tenant: String,
    /// The key: only in the answer to `POST /keys`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// `GET /keys` (never the key itself).
pub fn key(k: &crate::store::keys::KeyRow) -> KeyView {
    KeyView {
        id: k.id,
        name: k.name.clone(),
        role: k.role.as_str(),
        key_prefix: k.key_prefix.clone(),
        created_at: k.created_at,
        revoked_at: k.revoked_at,
        tenant: k.tenant.clone(),
        key: None,
    }
}

/// A task's id and status: the answer to a submit (`created` false when the idempotency key
/// was already used: the existing task).
#[derive(Debug, Serialize, ToSchema)]
pub struct Submitted {
    pub task_id: Uuid,
    pub status: TaskStatus,
    pub created: bool,
}

/// `POST /tasks/batch`: one [`Submitted`] per task, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubmittedBatch {
    pub tasks: Vec<Submitted>,
}

/// A task's id and its status after a cancel, resume or rerun.
#[derive(Debug, Serialize, ToSchema)]
pub struct Accepted {
    pub task_id: Uuid,
    pub status: TaskStatus,
}

/// `GET /stats`: tasks and steps by status.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatsView {
    pub tasks: BTreeMap<String, i64>,
    pub steps: BTreeMap<String, i64>,
}

/// `GET /stats/recovery`: every row of each recovery view (docs/sql-reporting.md).
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct RecoveryStatsView {
    #[schema(value_type = Vec<Object>)]
    pub recovery_by_tool: Vec<Value>,
    #[schema(value_type = Vec<Object>)]
    pub recovery_by_category: Vec<Value>,
    #[schema(value_type = Vec<Object>)]
    pub recovery_by_tier: Vec<Value>,
    /// Per day, tier and action (`replan:<strategy>` for replans).
    #[schema(value_type = Vec<Object>)]
    pub recovery_by_action: Vec<Value>,
    /// Per day, template, tier and action; `item_actions` counts those on map items.
    #[schema(value_type = Vec<Object>)]
    pub recovery_by_template: Vec<Value>,
    #[schema(value_type = Vec<Object>)]
    pub task_outcomes: Vec<Value>,
    /// What recovery cost by tier and strategy, against the steps and tasks it saved (in the
    /// price map's currency).
    #[schema(value_type = Vec<Object>)]
    pub recovery_cost_by_tier: Vec<Value>,
    /// LLM and tool cost per day and template (`""`: none).
    #[schema(value_type = Vec<Object>)]
    pub cost_by_template_day: Vec<Value>,
    /// Tool cost per day and tool.
    #[schema(value_type = Vec<Object>)]
    pub cost_by_tool_day: Vec<Value>,
}

/// `GET /stats/activity`: the last hour's work and the queue now (the dashboard's overview).
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityView {
    /// Attempts finished per minute over the last hour, oldest first; minutes with none are
    /// left out.
    pub minutes: Vec<MinuteView>,
    /// Ready and running steps per tool, with how long the oldest ready one has waited (the
    /// queue lag).
    pub queue: Vec<QueueView>,
    /// Ready and running steps per concurrency key: the 20 keys with the most, then
    /// `others` (the rest summed).
    pub queue_by_key: Vec<KeyQueueView>,
    /// Ready and running steps per tenant (`key` is the tenant): the 20 with the most, then
    /// `others`.
    pub queue_by_tenant: Vec<KeyQueueView>,
    /// Per tool: attempts finished over the last hour, failures, and their duration.
    pub tools: Vec<ToolActivityView>,
    /// Live workers.
    pub workers: i64,
    /// Steps and decisions the live workers held at their last heartbeat.
    pub in_flight: i64,
    /// Unfinished tasks by status, every unfinished status present (exact, through the status
    /// index: the cost follows the live work).
    pub unfinished_tasks: BTreeMap<String, i64>,
    /// Tasks submitted in the last hour by their status now, every status present. A count
    /// above `recent_cap` is reported as `recent_cap + 1` (shown as "more than").
    pub recent_tasks: BTreeMap<String, i64>,
    /// Where the counts of `recent_tasks` stop.
    pub recent_cap: i64,
    /// Age in seconds of the oldest open transaction on the database, any session the
    /// server's role may see (0 when none): rows a newer transaction deleted or updated cannot
    /// be vacuumed while it stays open, and a long one slows every queue (docs/sql-reporting.md, "Long reports").
    pub oldest_transaction_secs: f64,
}

/// One minute of [`ActivityView`].
#[derive(Debug, Serialize, ToSchema)]
pub struct MinuteView {
    pub minute: DateTime<Utc>,
    pub succeeded: i64,
    pub failed: i64,
}

/// One tool's last hour in [`ActivityView`].
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolActivityView {
    pub tool: String,
    pub attempts: i64,
    pub failed: i64,
    pub median_ms: f64,
    pub mean_ms: f64,
}

/// One concurrency key's queue in [`ActivityView`].
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct KeyQueueView {
    /// The concurrency key (`""` for tasks without one; `others` sums the keys past the top 20).
    pub key: String,
    pub ready: i64,
    pub running: i64,
}

/// One tool's queue in [`ActivityView`].
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct QueueView {
    pub tool: String,
    pub ready: i64,
    pub running: i64,
    /// Seconds the oldest ready step of the tool has waited (0 when none is ready).
    pub oldest_ready_secs: f64,
}

/// The activity view from the store's rows.
pub fn activity(read: crate::store::reads::Activity, recent_cap: i64) -> ActivityView {
    let crate::store::reads::Activity {
        minutes,
        tools,
        by_key,
        by_tenant,
        gauges,
        recent_tasks,
    } = read;
    let queues = |rows: Vec<(String, i64, i64)>| -> Vec<KeyQueueView> {
        rows.into_iter()
            .map(|(key, ready, running)| KeyQueueView {
                key,
                ready,
                running,
            })
            .collect()
    };
    let Gauges {
        queue,
        workers,
        in_flight,
        oldest_transaction_secs,
        unfinished_tasks,
    } = gauges_of(&gauges);
    ActivityView {
        minutes: minutes
            .into_iter()
            .map(|m| MinuteView {
                minute: m.minute,
                succeeded: m.succeeded,
                failed: m.failed,
            })
            .collect(),
        tools: tools
            .into_iter()
            .map(|t| ToolActivityView {
                tool: t.tool,
                attempts: t.attempts,
                failed: t.failed,
                median_ms: t.median_ms,
                mean_ms: t.mean_ms,
            })
            .collect(),
        queue,
        queue_by_key: queues(by_key),
        queue_by_tenant: queues(by_tenant),
        workers,
        in_flight,
        unfinished_tasks,
        recent_tasks,
        recent_cap,
        oldest_transaction_secs,
    }
}

/// What the activity view reads from the store's gauges.
struct Gauges {
    queue: Vec<QueueView>,
    workers: i64,
    in_flight: i64,
    oldest_transaction_secs: f64,
    unfinished_tasks: BTreeMap<String, i64>,
}

fn gauges_of(gauges: &[crate::store::reads::GaugeRow]) -> Gauges {
    let mut queue: BTreeMap<&str, QueueView> = BTreeMap::new();
    let (mut workers, mut in_flight) = (0, 0);
    let mut oldest_transaction_secs = 0.0;
    let mut unfinished_tasks: BTreeMap<String, i64> = TaskStatus::ALL
        .iter()
        .filter(|s| !s.is_terminal())
        .map(|s| (s.to_string(), 0))
        .collect();
    for g in gauges {
        match (g.family.as_str(), g.status.as_str()) {
            ("tasks", status) => {
                if let Some(n) = unfinished_tasks.get_mut(status) {
                    *n = g.n;
                }
            }
            ("steps", status) => {
                let q = queue.entry(&g.tool).or_insert_with(|| QueueView {
                    tool: g.tool.clone(),
                    ..Default::default()
                });
                if status == "ready" {
                    q.ready = g.n;
                    q.oldest_ready_secs = g.oldest_secs;
                } else {
                    q.running = g.n;
                }
            }
            ("workers", _) => {
                workers = g.n;
                in_flight = g.oldest_secs as i64;
            }
            ("db", _) => oldest_transaction_secs = g.oldest_secs,
            _ => {}
        }
    }
    Gauges {
        queue: queue.into_values().collect(),
        workers,
        in_flight,
        oldest_transaction_secs,
        unfinished_tasks,
    }
}

/// `GET /whoami`: what the presented key may do (the dashboard shows only those actions).
#[derive(Debug, Serialize, ToSchema)]
pub struct WhoAmI {
    /// `admin`, `operator` or `reader` (`admin` when access control is off).
    #[schema(schema_with = super::schemas::role)]
    pub role: &'static str,
    /// Whether keys are checked at all (`[auth]`).
    pub access_control: bool,
    /// The key's tenant (with an admin's `?tenant=`, that one).
    pub tenant: String,
}

/// `GET /health` and `GET /ready`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` (alive) or `ready`.
    pub status: &'static str,
}

/// A live worker of the fleet (`GET /workers`).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Worker)]
pub struct WorkerView {
    pub worker_id: Uuid,
    pub host: String,
    pub pid: i32,
    pub started_at: DateTime<Utc>,
    pub last_heartbeat_at: DateTime<Utc>,
    pub concurrency: i32,
    /// Steps and decisions held at the last heartbeat.
    pub in_flight: i32,
}

impl From<crate::store::workers::WorkerRow> for WorkerView {
    fn from(w: crate::store::workers::WorkerRow) -> Self {
        Self {
            worker_id: w.id,
            host: w.host,
            pid: w.pid,
            started_at: w.started_at,
            last_heartbeat_at: w.last_heartbeat,
            concurrency: w.concurrency,
            in_flight: w.in_flight,
        }
    }
}

/// A wait (`GET /waits`): a step waiting for an approval, an event, a callback or a time.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Wait)]
pub struct WaitView {
    pub wait_id: Uuid,
    pub task_id: Uuid,
    /// The step's key in its plan.
    pub step_id: String,
    pub attempt: i32,
    /// `approval`, `event`, `callback` or `sleep`.
    #[schema(schema_with = super::schemas::wait_kind)]
    pub kind: String,
    /// What the approver is asked (approvals).
    pub prompt: Option<String>,
    /// JSON Schema of the answer an approver may give (approvals; null: none).
    #[schema(schema_with = super::schemas::optional_json_schema)]
    pub form: Option<Value>,
    /// The least role that may decide (approvals).
    pub role: Option<String>,
    /// `reject` or `approve`: what the approval's timeout means.
    pub on_timeout: String,
    /// A gated call: the tool that runs once approved, and the parameters it would run with.
    pub tool: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<Value>,
    /// The key a `wait_event` waits for, and what its payload must contain.
    pub event_key: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub r#match: Option<Value>,
    pub expires_at: Option<DateTime<Utc>>,
    /// `open`, `resolved`, `expired` or `cancelled`.
    #[schema(schema_with = super::schemas::wait_status)]
    pub status: String,
    /// How it was resolved: `{"outcome": "approved" | "rejected" | "event" | "completed" |
    /// "failed" | "slept" | "timeout", …}` (null while open).
    #[schema(value_type = Option<Object>)]
    pub resolution: Option<Value>,
    /// The API key that decided (approvals).
    pub resolved_by: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
}

pub fn wait(w: &crate::store::waits::WaitRow) -> WaitView {
    WaitView {
        wait_id: w.id,
        task_id: w.task_id,
        step_id: w.step_key.clone(),
        attempt: w.attempt,
        kind: w.kind.clone(),
        prompt: w.prompt.clone(),
        form: w.form.clone(),
        role: w.role.clone(),
        on_timeout: w.on_timeout.clone(),
        tool: w.gated_tool.clone(),
        parameters: w.parameters.clone(),
        event_key: w.event_key.clone(),
        r#match: w.matcher.clone(),
        expires_at: w.expires_at,
        status: w.status.as_str().to_string(),
        resolution: w.resolution.clone(),
        resolved_by: w.resolved_by,
        created_at: w.created_at,
        resolved_at: w.resolved_at,
    }
}

/// `POST /events`: how many open waits the event resolved.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventsResolved {
    pub resolved: usize,
}

/// A callback's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallbackAccepted {
    /// False: the wait was resolved, expired or cancelled before; nothing changed.
    pub accepted: bool,
    /// A heartbeat: the wait's new expiry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}
