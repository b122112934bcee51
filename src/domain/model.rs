//! Plan definitions as clients submit them, and tool errors as tools report them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// Map the step over a list: one item step per element (CONTRACT.md "Fan-out and child
    /// tasks"); the step itself is their join.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<MapSpec>,
}

/// A step's `map`: the list it runs over and how.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = StepMap)]
pub struct MapSpec {
    /// One placeholder that resolves to an array: `${a.output.items}`, `${context.docs}` or
    /// `${metadata.ids}`.
    pub over: String,
    /// The name the step's parameters read each item by (`${item}`, `${item.field}`).
    #[serde(rename = "as", default = "default_item_name")]
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub item_name: String,
    /// At most this many items run at once (default: all, within the task's
    /// `max_concurrent_steps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub max_parallel: Option<u32>,
    /// More items than this fail the step (none is started). Required when `over` reads a
    /// step's output; otherwise `[limits] max_steps_per_plan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub max_items: Option<u32>,
    #[serde(default)]
    pub on_item_failure: ItemFailure,
}

fn default_item_name() -> String {
    "item".into()
}

/// What an item that fails for good does to its map.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemFailure {
    /// The item goes through the recovery tiers like any step; the map waits for it.
    #[default]
    Fail,
    /// After its retries and repair, the item is given up: `null` in the output, its error
    /// listed, and the map goes on.
    Continue,
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

fn is_zero(n: &u16) -> bool {
    *n == 0
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
    /// After that wait, one call per this many ms: the rate the answer announced
    /// ([`super::failure::announced_pace_ms`]; 0: none, at most
    /// [`super::circuit::MAX_PACE_MS`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pace_ms: u16,
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
            pace_ms: 0,
            detail: None,
            schema_violations: Box::default(),
        }
    }
}

/// Error category of an attempt lost with its worker.
pub const WORKER_LOST: &str = "worker_lost";
/// Error category of a call aborted in flight because its task was cancelled.
pub const CANCELLED: &str = "cancelled";
/// The task's deadline passed while the attempt ran (its result, if it comes, is fenced).
pub const DEADLINE_EXCEEDED: &str = "deadline_exceeded";
