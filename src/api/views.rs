//! The JSON shapes clients see (CONTRACT.md). Only this module derives `Serialize` for
//! responses; the store's records never reach a client as they are. Rows that exist only to be
//! shown are decoded straight into a view here (`sqlx::FromRow`, by column name); the rows
//! Trellis reasons about (task, step, attempt, tool) are turned into JSON by a function.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::domain::records::{AttemptRow, StepRow, TaskRow};
use crate::domain::secrets::redacted;
use crate::domain::status::{StepStatus, TaskStatus};
use crate::domain::tool::ToolDef;

/// `GET /tasks/{id}`.
pub fn task(
    t: &TaskRow,
    counts: &BTreeMap<StepStatus, i64>,
    current: &[&StepRow],
    usage: LlmUsageView,
) -> Value {
    let n = |s: StepStatus| counts.get(&s).copied().unwrap_or(0);
    let focus = current
        .iter()
        .find(|s| s.status == StepStatus::Failed)
        .or_else(|| current.iter().find(|s| s.status == StepStatus::Running))
        .or_else(|| current.iter().find(|s| s.status == StepStatus::Ready));
    json!({
        "task_id": t.id,
        "status": t.status,
        "description": t.description,
        "priority": t.priority,
        "round": t.round,
        "plan_version": t.plan_version,
        "current_step": focus.map(|s| s.step_key.clone()),
        "counters": {
            "step_retry_count": focus.map(|s| s.retry_count).unwrap_or(0),
            "task_replan_count": t.task_replan_count,
            "single_step_repair_count": t.single_step_repair_count,
            "consecutive_failures": t.consecutive_failures,
        },
        "limits": {
            "max_step_retries": t.max_step_retries,
            "max_single_step_repairs": t.max_single_step_repairs,
            "max_task_replans": t.max_task_replans,
            "max_consecutive_failures": t.max_consecutive_failures,
            "max_reflection_rounds": t.max_reflection_rounds,
            "max_concurrent_steps": t.max_concurrent_steps,
            "max_llm_calls": t.max_llm_calls,
            "max_llm_tokens": t.max_llm_tokens,
        },
        "llm_usage": usage,
        "steps": {
            "total": counts.values().sum::<i64>() - n(StepStatus::Superseded),
            "succeeded": n(StepStatus::Succeeded),
            "failed": n(StepStatus::Failed),
            "running": n(StepStatus::Running),
            "ready": n(StepStatus::Ready),
            "blocked": n(StepStatus::Blocked),
            "skipped": n(StepStatus::Skipped),
            "superseded": n(StepStatus::Superseded),
        },
        "metadata": t.metadata,
        "context": t.context,
        "runtime_metadata": t.runtime_metadata,
        "deadline_at": t.deadline_at,
        "error": t.error,
        "stop_reason": t.stop_reason,
        "final_score": t.final_score,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
        "finished_at": t.finished_at,
    })
}

/// `GET /tasks/{id}/result`.
pub fn result(t: &TaskRow, steps: &[StepRow], duration_ms: i64) -> Value {
    let outputs: serde_json::Map<String, Value> = steps
        .iter()
        .filter(|s| s.plan_version == t.plan_version && s.status == StepStatus::Succeeded)
        .map(|s| (s.step_key.clone(), s.output.clone().unwrap_or(Value::Null)))
        .collect();
    json!({
        "task_id": t.id,
        "status": t.status,
        "is_success": t.status == TaskStatus::Succeeded,
        "final_score": t.final_score,
        "stop_reason": t.stop_reason,
        "total_rounds": t.round,
        "outputs": outputs,
        "error": t.error,
        "duration_ms": duration_ms,
        "finished": t.status.is_terminal(),
    })
}

/// A step of a plan version (`GET /tasks/{id}/plan`).
pub fn step(s: &StepRow) -> Value {
    json!({
        "id": s.step_key,
        "name": s.name,
        "tool": s.effective_tool(),
        "parameters": redacted(&s.parameters),
        "dependencies": s.dependencies,
        "expected_output": s.expected_output,
        "optional": s.optional,
        "actions": redacted(&s.actions),
        "status": s.status,
        "retry_count": s.retry_count,
        "attempts": s.attempts,
        "output": s.output,
        "error": s.error,
    })
}

/// One plan version with its steps (decoded from a `plans` row; `steps` filled by [`PlanView::with_steps`]).
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct PlanView {
    pub version: i32,
    pub origin: String,
    pub reasoning: String,
    pub estimated_duration: Option<i32>,
    pub created_at: DateTime<Utc>,
    #[sqlx(skip)]
    pub steps: Vec<Value>,
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
#[derive(Debug, Serialize)]
pub struct PlanWithHistory {
    pub task_id: Uuid,
    #[serde(flatten)]
    pub current: PlanView,
    pub history: Vec<PlanView>,
}

/// An attempt (`GET /tasks/{id}/attempts`).
pub fn attempt(a: &AttemptRow) -> Value {
    json!({
        "step_id": a.step_key,
        "plan_version": a.plan_version,
        "attempt": a.attempt,
        "tool": a.tool,
        "parameters": redacted(&a.parameters),
        "status": a.status,
        "output": a.output,
        "error": a.error,
        "worker_id": a.worker_id,
        "started_at": a.started_at,
        "finished_at": a.finished_at,
        "duration_ms": a.duration_ms,
    })
}

/// An event (`GET /tasks/{id}/events`, and the data of a Server-Sent Event).
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct EventView {
    pub seq: i64,
    pub kind: String,
    pub at: DateTime<Utc>,
    #[serde(serialize_with = "serialize_redacted")]
    pub payload: Value,
}

fn serialize_redacted<S: serde::Serializer>(v: &Value, s: S) -> Result<S::Ok, S::Error> {
    redacted(v).serialize(s)
}

/// `GET /tasks/{id}/reflections`.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct ReflectionView {
    pub level: String,
    pub step_key: Option<String>,
    pub plan_version: i32,
    pub round: i32,
    pub is_fallback: bool,
    pub body: Value,
    pub raw: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// `GET /tasks/{id}/evaluations`.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct EvaluationView {
    pub round: i32,
    pub plan_version: i32,
    pub overall_score: f64,
    pub completeness: f64,
    pub correctness: f64,
    pub efficiency: f64,
    pub reliability: f64,
    pub is_successful: bool,
    pub successes: Value,
    pub failures: Value,
    pub improvement_suggestions: Value,
    pub created_at: DateTime<Utc>,
}

/// One line of `GET /tasks`.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct TaskSummaryView {
    #[sqlx(rename = "id")]
    pub task_id: Uuid,
    pub status: TaskStatus,
    pub description: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A task's LLM usage.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct LlmUsageView {
    pub calls: i64,
    pub failed_calls: i64,
    pub requests: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
}

/// A tool of the registry (`/tools`).
pub fn tool(t: &ToolDef) -> Value {
    json!({
        "id": t.id,
        "name": t.name,
        "description": t.description,
        "kind": t.kind,
        "endpoint": t.endpoint.as_deref().map(crate::net::redact_url_text),
        "timeout_ms": t.timeout_ms,
        "input_schema": t.input_schema,
        "output_schema": t.output_schema,
        "output_params": t.output_params,
        "alternatives": t.alternatives,
        "tags": t.tags,
        "max_concurrency": t.max_concurrency,
        "rate_limit_per_sec": t.rate_limit_per_sec,
        "rate_limit_burst": t.rate_limit_burst,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
    })
}

/// `GET /keys` (never the key itself).
pub fn key(k: &crate::store::keys::KeyRow) -> Value {
    json!({
        "id": k.id,
        "name": k.name,
        "role": k.role.as_str(),
        "key_prefix": k.key_prefix,
        "created_at": k.created_at,
        "revoked_at": k.revoked_at,
    })
}

/// A live worker of the fleet (`GET /workers`).
#[derive(Debug, Serialize)]
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
