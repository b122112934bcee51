//! Records: the rows Trellis reasons about (task, step, attempt), as the store reads them, with
//! typed statuses. They derive `sqlx::FromRow` and never `Serialize`: what clients see is a view
//! owned by `api/`. Rows that exist only to be shown (events, reflections, evaluations, plan
//! versions, task summaries, LLM usage) have no record here: the store's reads are generic over
//! the row type, and the API decodes them straight into its views.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::model::{ActionSpec, MapSpec, StepSpec};
use super::params::merge_overrides;
use super::recovery::Counters;
use super::status::{AttemptStatus, StepStatus, TaskStatus};

/// A `tasks` row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TaskRow {
    pub id: Uuid,
    pub description: String,
    pub metadata: Value,
    pub context: Value,
    pub runtime_metadata: Value,
    pub priority: i32,
    pub idempotency_key: Option<String>,
    pub status: TaskStatus,
    pub round: i32,
    pub plan_version: i32,
    pub task_replan_count: i32,
    pub single_step_repair_count: i32,
    pub consecutive_failures: i32,
    pub max_step_retries: i32,
    pub max_single_step_repairs: i32,
    pub max_task_replans: i32,
    pub max_consecutive_failures: i32,
    pub max_reflection_rounds: i32,
    pub max_concurrent_steps: i32,
    /// Bumped by every status or plan change; fences task-level decisions.
    pub state_version: i64,
    pub error: Option<Value>,
    pub step_reflection: bool,
    pub auto_reflection: bool,
    pub success_threshold: f64,
    pub final_score: Option<f64>,
    pub stop_reason: Option<String>,
    pub max_llm_calls: Option<i32>,
    pub max_llm_tokens: Option<i64>,
    /// Money the task may spend (`limits.max_cost`).
    #[sqlx(default)]
    pub max_cost: Option<f64>,
    /// What its LLM calls and tool attempts cost so far.
    #[sqlx(default)]
    pub cost: f64,
    /// When the task fails with `deadline_exceeded` unless it ended before.
    pub deadline_at: Option<DateTime<Utc>>,
    /// A delayed start: nothing of the task runs before it.
    #[sqlx(default)]
    pub run_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// The task whose step started this one (a child task).
    #[sqlx(default)]
    pub parent_task_id: Option<Uuid>,
    /// The fairness key the claim takes turns between (none: the shared key).
    #[sqlx(default)]
    pub concurrency_key: Option<String>,
    /// Who owns it ([`crate::domain::tenant`]); empty where a hot-path read leaves it out.
    #[sqlx(default)]
    pub tenant: String,
}

impl TaskRow {
    /// The recovery counters and limits of this task (and of `step`, when a step is concerned).
    pub fn counters(&self, step: Option<&StepRow>, max_rescues: i32) -> Counters {
        Counters {
            retry_count: step.map(|s| s.retry_count).unwrap_or(0),
            max_step_retries: self.max_step_retries,
            // a map's item has its own repairs (forty items failing alike each need theirs;
            // the map's `max_items` bounds them), a step of the plan spends the task's
            single_step_repair_count: match step {
                Some(s) if s.is_item() => s.repair_count,
                _ => self.single_step_repair_count,
            },
            max_single_step_repairs: self.max_single_step_repairs,
            task_replan_count: self.task_replan_count,
            max_task_replans: self.max_task_replans,
            // a map's items recover each on its own tiers: the task's failures in a row, which
            // items failing side by side run up together, never stop an item's retries (its
            // own retry count bounds them); the failure path still counts them for the task
            consecutive_failures: match step {
                Some(s) if s.is_item() => 0,
                _ => self.consecutive_failures,
            },
            max_consecutive_failures: self.max_consecutive_failures,
            round: self.round,
            max_reflection_rounds: self.max_reflection_rounds,
            rescue_count: step.map(|s| s.rescue_count).unwrap_or(0),
            max_rescues,
        }
    }
}

/// A `steps` row: one step of one plan version.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StepRow {
    pub id: Uuid,
    pub task_id: Uuid,
    pub plan_version: i32,
    pub step_key: String,
    pub position: i32,
    pub name: String,
    pub tool: String,
    pub parameters: Value,
    pub dependencies: Vec<String>,
    pub expected_output: String,
    pub optional: bool,
    /// The step's actions (a decode failure is `Corrupt`, never an empty list).
    pub actions: sqlx::types::Json<Vec<ActionSpec>>,
    pub status: StepStatus,
    pub retry_count: i32,
    pub attempts: i32,
    pub rescue_count: i32,
    /// A map item's repairs so far (its own budget); 0 for a step of the plan.
    #[sqlx(default)]
    pub repair_count: i32,
    pub lease_owner: Option<Uuid>,
    pub lease_token: i64,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub param_overrides: Value,
    pub tool_override: Option<String>,
    pub output: Option<Value>,
    pub error: Option<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// A map step's `map` (null for any other step).
    #[sqlx(default)]
    pub map: Option<sqlx::types::Json<MapSpec>>,
    /// An item step's map step (null for any other step).
    #[sqlx(default)]
    pub map_step_id: Option<Uuid>,
    /// An item step's index in its map's list.
    #[sqlx(default)]
    pub item_index: Option<i32>,
    /// An expanded map step's items, those ended and those given up (read with its
    /// `step_maps` row by the task's step list only).
    #[sqlx(default)]
    pub map_total: Option<i32>,
    #[sqlx(default)]
    pub map_ended: Option<i32>,
    #[sqlx(default)]
    pub map_given_up: Option<i32>,
}

impl StepRow {
    /// Whether the step is an item of a map (not a step of the plan).
    pub fn is_item(&self) -> bool {
        self.map_step_id.is_some()
    }

    /// The tool the step runs with (a recovery override wins).
    pub fn effective_tool(&self) -> &str {
        self.tool_override.as_deref().unwrap_or(&self.tool)
    }

    /// The step's definition as it stands (recovery overrides applied).
    pub fn effective_spec(&self) -> StepSpec {
        let mut parameters = self.parameters.clone();
        merge_overrides(&mut parameters, &self.param_overrides);
        StepSpec {
            id: self.step_key.clone(),
            name: self.name.clone(),
            tool: self.effective_tool().to_string(),
            parameters,
            dependencies: self.dependencies.clone(),
            expected_output: self.expected_output.clone(),
            optional: self.optional,
            actions: self.actions.0.clone(),
            map: self.map.as_ref().map(|m| m.0.clone()),
        }
    }
}

/// An `attempts` row (append-only).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AttemptRow {
    pub step_id: Uuid,
    pub step_key: String,
    pub plan_version: i32,
    pub attempt: i32,
    pub tool: String,
    pub parameters: Value,
    pub status: AttemptStatus,
    pub output: Option<Value>,
    pub error: Option<Value>,
    pub error_category: Option<String>,
    pub worker_id: Option<Uuid>,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub duration_ms: Option<i64>,
    /// The `Idempotency-Key` the call carried (HTTP and MCP tools, `http_request`, `task`).
    #[sqlx(default)]
    pub idempotency_key: Option<String>,
}
