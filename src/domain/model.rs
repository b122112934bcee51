//! Plan definitions as clients submit them, event kinds, and tool errors as tools report them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Event kinds written to the `events` table (CONTRACT.md lists the binding ones).
pub mod event_kind {
    pub const TASK_SUBMITTED: &str = "task_submitted";
    pub const TOOLS_SELECTED: &str = "tools_selected";
    pub const PLAN_GENERATED: &str = "plan_generated";
    pub const STEP_STARTED: &str = "step_started";
    pub const STEP_COMPLETED: &str = "step_completed";
    pub const STEP_FAILED: &str = "step_failed";
    pub const RETRY_SCHEDULED: &str = "retry_scheduled";
    pub const STEP_RELEASED: &str = "step_released";
    /// A step given back before its call because its tool's circuit is open or a `Retry-After`
    /// holds the tool: no attempt, its next claim not before `until`.
    pub const STEP_DEFERRED: &str = "step_deferred";
    pub const STEP_RESCUED: &str = "step_rescued";
    pub const STEP_REFLECTED: &str = "step_reflected";
    pub const STEP_REPAIRED: &str = "step_repaired";
    pub const OVERALL_REFLECTED: &str = "overall_reflected";
    pub const REPLANNED: &str = "replanned";
    pub const EVALUATION_COMPLETED: &str = "evaluation_completed";
    /// A reflection round ended unsuccessfully and the next one begins with a new plan.
    pub const ROUND_STARTED: &str = "round_started";
    pub const INTERVENTION_REQUIRED: &str = "intervention_required";
    pub const TASK_RESUMED: &str = "task_resumed";
    /// `POST /tasks/{id}/rerun`: a new plan version from a step of an ended task.
    pub const TASK_RERUN: &str = "task_rerun";
    pub const TASK_SUCCEEDED: &str = "task_succeeded";
    pub const TASK_FAILED: &str = "task_failed";
    pub const TASK_CANCELLED: &str = "task_cancelled";
}

/// A plan as submitted by a client (CONTRACT.md `plan`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Plan)]
pub struct PlanSpec {
    #[schema(min_items = 1)]
    pub steps: Vec<StepSpec>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_duration: Option<i32>,
}

/// One step of a plan: a tool call, or `actions` run in order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Step)]
pub struct StepSpec {
    /// The step key, e.g. `step_1` (the LLM wire format calls it `step_id`).
    #[serde(alias = "step_id")]
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// Tool id; may be empty when the step only runs `actions`.
    #[serde(default)]
    pub tool: String,
    #[serde(default = "empty_object")]
    #[schema(value_type = Object)]
    pub parameters: Value,
    #[serde(default)]
    pub dependencies: Vec<String>,
    #[serde(default)]
    pub expected_output: String,
    #[serde(default)]
    pub optional: bool,
    #[serde(default)]
    pub actions: Vec<ActionSpec>,
}

/// One call of a step's `actions`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Action)]
pub struct ActionSpec {
    #[serde(alias = "action_id")]
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub id: String,
    #[serde(default)]
    pub name: String,
    pub tool: String,
    #[serde(default = "empty_object")]
    #[schema(value_type = Object)]
    pub parameters: Value,
}

pub fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// A failed tool call as tools report it (CONTRACT.md "HTTP tools").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolFailure {
    pub message: String,
    pub category: String,
    pub retryable: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hints: BTreeMap<String, Value>,
    /// HTTP status when the tool answered with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The earliest next call the tool asked for (`Retry-After`), in milliseconds (at most
    /// `u32::MAX`, 49 days; the workers cap it far lower).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u32>,
    /// An answer's body that was not JSON (a proxy's HTML page), at most 8 KB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Box<str>>,
    /// The resolved parameters broke the tool's `input_schema` (no call was made): each
    /// violation with where it is.
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    pub schema_violations: Box<[String]>,
}

impl ToolFailure {
    pub fn new(category: &str, message: impl Into<String>, retryable: bool) -> Self {
        Self {
            message: message.into(),
            category: category.into(),
            retryable,
            hints: BTreeMap::new(),
            http_status: None,
            retry_after_ms: None,
            detail: None,
            schema_violations: Box::default(),
        }
    }
}

/// Error category of an attempt lost with its worker.
pub const WORKER_LOST: &str = "worker_lost";
/// The task's deadline passed while the attempt ran (its result, if it comes, is fenced).
pub const DEADLINE_EXCEEDED: &str = "deadline_exceeded";
