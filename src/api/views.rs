//! The JSON shapes clients see (CONTRACT.md). Only this module derives `Serialize` for
//! responses; the store's records never reach a client as they are.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::domain::records::{
    AttemptRow, EvaluationRecord, EventRow, LlmUsage, PlanRow, ReflectionRecord, StepRow, TaskRow,
    TaskSummary,
};
use crate::domain::status::{AttemptStatus, StepStatus, TaskStatus};
use crate::domain::tool::ToolDef;

/// `GET /tasks/{id}`.
pub fn task(
    t: &TaskRow,
    counts: &BTreeMap<StepStatus, i64>,
    current: &[&StepRow],
    usage: LlmUsage,
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
        },
        "llm_usage": LlmUsageView::from(usage),
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
        "runtime_metadata": t.runtime_metadata,
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
#[derive(Debug, Serialize)]
pub struct StepView {
    pub id: String,
    pub name: String,
    pub tool: String,
    pub parameters: Value,
    pub dependencies: Vec<String>,
    pub expected_output: String,
    pub optional: bool,
    pub actions: Value,
    pub status: StepStatus,
    pub retry_count: i32,
    pub attempts: i32,
    pub output: Option<Value>,
    pub error: Option<Value>,
}

impl From<&StepRow> for StepView {
    fn from(s: &StepRow) -> Self {
        Self {
            id: s.step_key.clone(),
            name: s.name.clone(),
            tool: s.effective_tool().to_string(),
            parameters: s.parameters.clone(),
            dependencies: s.dependencies.clone(),
            expected_output: s.expected_output.clone(),
            optional: s.optional,
            actions: s.actions.clone(),
            status: s.status,
            retry_count: s.retry_count,
            attempts: s.attempts,
            output: s.output.clone(),
            error: s.error.clone(),
        }
    }
}

/// One plan version with its steps.
#[derive(Debug, Serialize)]
pub struct PlanView {
    pub version: i32,
    pub origin: String,
    pub reasoning: String,
    pub estimated_duration: Option<i32>,
    pub created_at: DateTime<Utc>,
    pub steps: Vec<StepView>,
}

impl PlanView {
    pub fn new(p: &PlanRow, steps: &[StepRow]) -> Self {
        Self {
            version: p.version,
            origin: p.origin.clone(),
            reasoning: p.reasoning.clone(),
            estimated_duration: p.estimated_duration,
            created_at: p.created_at,
            steps: steps
                .iter()
                .filter(|s| s.plan_version == p.version)
                .map(StepView::from)
                .collect(),
        }
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

/// `GET /tasks/{id}/attempts`.
#[derive(Debug, Serialize)]
pub struct AttemptView {
    pub step_id: String,
    pub plan_version: i32,
    pub attempt: i32,
    pub tool: String,
    pub parameters: Value,
    pub status: AttemptStatus,
    pub output: Option<Value>,
    pub error: Option<Value>,
    pub worker_id: Option<Uuid>,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub duration_ms: Option<i64>,
}

impl From<AttemptRow> for AttemptView {
    fn from(a: AttemptRow) -> Self {
        Self {
            step_id: a.step_key,
            plan_version: a.plan_version,
            attempt: a.attempt,
            tool: a.tool,
            parameters: a.parameters,
            status: a.status,
            output: a.output,
            error: a.error,
            worker_id: a.worker_id,
            started_at: a.started_at,
            finished_at: a.finished_at,
            duration_ms: a.duration_ms,
        }
    }
}

/// An event (`GET /tasks/{id}/events`, and the data of a Server-Sent Event).
#[derive(Debug, Serialize)]
pub struct EventView {
    pub seq: i64,
    pub kind: String,
    pub at: DateTime<Utc>,
    pub payload: Value,
}

impl From<EventRow> for EventView {
    fn from(e: EventRow) -> Self {
        Self {
            seq: e.seq,
            kind: e.kind,
            at: e.at,
            payload: e.payload,
        }
    }
}

/// `GET /tasks/{id}/reflections`.
#[derive(Debug, Serialize)]
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

impl From<ReflectionRecord> for ReflectionView {
    fn from(r: ReflectionRecord) -> Self {
        Self {
            level: r.level,
            step_key: r.step_key,
            plan_version: r.plan_version,
            round: r.round,
            is_fallback: r.is_fallback,
            body: r.body,
            raw: r.raw,
            created_at: r.created_at,
        }
    }
}

/// `GET /tasks/{id}/evaluations`.
#[derive(Debug, Serialize)]
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

impl From<EvaluationRecord> for EvaluationView {
    fn from(e: EvaluationRecord) -> Self {
        Self {
            round: e.round,
            plan_version: e.plan_version,
            overall_score: e.overall_score,
            completeness: e.completeness,
            correctness: e.correctness,
            efficiency: e.efficiency,
            reliability: e.reliability,
            is_successful: e.is_successful,
            successes: e.successes,
            failures: e.failures,
            improvement_suggestions: e.improvement_suggestions,
            created_at: e.created_at,
        }
    }
}

/// One line of `GET /tasks`.
#[derive(Debug, Serialize)]
pub struct TaskSummaryView {
    pub task_id: Uuid,
    pub status: TaskStatus,
    pub description: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<TaskSummary> for TaskSummaryView {
    fn from(t: TaskSummary) -> Self {
        Self {
            task_id: t.id,
            status: t.status,
            description: t.description,
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}

/// A task's LLM usage.
#[derive(Debug, Serialize)]
pub struct LlmUsageView {
    pub calls: i64,
    pub failed_calls: i64,
    pub requests: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
}

impl From<LlmUsage> for LlmUsageView {
    fn from(u: LlmUsage) -> Self {
        Self {
            calls: u.calls,
            failed_calls: u.failed_calls,
            requests: u.requests,
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: u.total_tokens,
        }
    }
}

/// A tool of the registry (`/tools`).
#[derive(Debug, Serialize)]
pub struct ToolView {
    pub id: String,
    pub name: String,
    pub description: String,
    pub kind: String,
    pub endpoint: Option<String>,
    pub timeout_ms: i32,
    pub input_schema: Value,
    pub output_params: Vec<String>,
    pub alternatives: Vec<String>,
    pub tags: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<ToolDef> for ToolView {
    fn from(t: ToolDef) -> Self {
        Self {
            id: t.id,
            name: t.name,
            description: t.description,
            kind: t.kind,
            endpoint: t.endpoint,
            timeout_ms: t.timeout_ms,
            input_schema: t.input_schema,
            output_params: t.output_params,
            alternatives: t.alternatives,
            tags: t.tags,
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}
