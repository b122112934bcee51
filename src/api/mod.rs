//! The REST API (CONTRACT.md). `app(state)` builds the router; the `trellis-api` binary serves
//! it, and tests drive it with `oneshot` or a real listener.

use std::collections::{BTreeMap, HashSet};

use axum::extract::{DefaultBodyLimit, FromRequest, Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::config::Settings;
use crate::model::{PlanSpec, TaskStatus};
use crate::plan;
use crate::store::Store;
use crate::store::tasks::{Limits, ListTasks, NewTask, ResumeRequest, StepRow};
use crate::store::tools::NewTool;

pub mod error;
pub use error::ApiError;

pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
const MAX_LIMIT_VALUE: i32 = 100;

#[derive(Debug, Clone)]
pub struct AppState {
    pub store: Store,
    pub settings: Settings,
}

impl AppState {
    pub fn new(store: Store, settings: Settings) -> Self {
        Self { store, settings }
    }

    fn default_limits(&self) -> Limits {
        Limits::from_settings(&self.settings)
    }
}

pub fn app(state: AppState) -> Router {
    let v1 = Router::new()
        .route("/tasks", post(submit_task).get(list_tasks))
        .route("/tasks/{id}", get(get_task))
        .route("/tasks/{id}/result", get(get_result))
        .route("/tasks/{id}/plan", get(get_plan))
        .route("/tasks/{id}/attempts", get(get_attempts))
        .route("/tasks/{id}/events", get(get_events))
        .route("/tasks/{id}/cancel", post(cancel_task))
        .route("/tasks/{id}/resume", post(resume_task))
        .route("/tasks/{id}/reflections", get(get_reflections))
        .route("/tasks/{id}/evaluations", get(get_evaluations))
        .route("/tools", post(create_tool).get(list_tools))
        .route("/tools/{id}", get(get_tool).delete(delete_tool))
        .route("/stats", get(stats))
        .route("/stats/recovery", get(recovery_stats))
        .route("/openapi.json", get(openapi));
    Router::new()
        .nest("/api/v1", v1)
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// `Json<T>` whose rejections are our JSON errors.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(ApiJson(v)),
            Err(r) => Err(r.into()),
        }
    }
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route")
}

fn task_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw)
        .map_err(|_| ApiError::bad_request(format!("{raw:?} is not a task id (UUID)")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubmitTask {
    description: String,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    context: Option<Value>,
    #[serde(default)]
    idempotency_key: Option<String>,
    #[serde(default)]
    priority: Option<i32>,
    #[serde(default)]
    limits: Option<LimitsInput>,
    #[serde(default)]
    plan: Option<PlanSpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsInput {
    max_step_retries: Option<i32>,
    max_single_step_repairs: Option<i32>,
    max_task_replans: Option<i32>,
    max_consecutive_failures: Option<i32>,
    /// Cap on LLM calls for this task.
    max_llm_calls: Option<i32>,
}

const MAX_LLM_CALLS: i32 = 10_000;

fn apply_limits(mut base: Limits, input: Option<LimitsInput>) -> Result<Limits, ApiError> {
    let Some(l) = input else { return Ok(base) };
    let fields = [
        (
            "max_step_retries",
            l.max_step_retries,
            &mut base.max_step_retries,
        ),
        (
            "max_single_step_repairs",
            l.max_single_step_repairs,
            &mut base.max_single_step_repairs,
        ),
        (
            "max_task_replans",
            l.max_task_replans,
            &mut base.max_task_replans,
        ),
        (
            "max_consecutive_failures",
            l.max_consecutive_failures,
            &mut base.max_consecutive_failures,
        ),
    ];
    if let Some(n) = l.max_llm_calls {
        if !(0..=MAX_LLM_CALLS).contains(&n) {
            return Err(ApiError::validation(format!(
                "limits.max_llm_calls must be between 0 and {MAX_LLM_CALLS}"
            )));
        }
        base.max_llm_calls = Some(n);
    }
    for (name, value, slot) in fields {
        if let Some(v) = value {
            if !(0..=MAX_LIMIT_VALUE).contains(&v) {
                return Err(ApiError::validation(format!(
                    "limits.{name} must be between 0 and {MAX_LIMIT_VALUE}"
                )));
            }
            *slot = v;
        }
    }
    Ok(base)
}

async fn submit_task(
    State(st): State<AppState>,
    ApiJson(body): ApiJson<SubmitTask>,
) -> Result<Response, ApiError> {
    if body.description.trim().is_empty() {
        return Err(ApiError::validation("description must be non-empty text"));
    }
    let metadata = body.metadata.unwrap_or_else(|| json!({}));
    if !metadata.is_object() {
        return Err(ApiError::validation("metadata must be a JSON object"));
    }
    let context = body.context.unwrap_or_else(|| json!({}));
    if !context.is_object() {
        return Err(ApiError::validation("context must be a JSON object"));
    }
    if let Some(k) = &body.idempotency_key
        && (k.is_empty() || k.len() > 255)
    {
        return Err(ApiError::validation(
            "idempotency_key must be 1 to 255 characters",
        ));
    }
    let limits = apply_limits(st.default_limits(), body.limits)?;
    let plan = match body.plan {
        Some(plan) => {
            let known: HashSet<String> = st.store.tool_ids().await?.into_iter().collect();
            plan::validate(&plan, &known)?;
            Some(plan)
        }
        // planned by the brain (a `plan` decision any worker takes)
        None if st.settings.llm.enabled() => None,
        None => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "plan_required",
                "no plan given and no planning brain configured: submit a plan, or configure an LLM ([llm] base_url)",
            ));
        }
    };
    let submitted = st
        .store
        .submit_task(&NewTask {
            description: body.description,
            metadata,
            context,
            priority: body.priority.unwrap_or(0),
            idempotency_key: body.idempotency_key,
            limits,
            plan,
        })
        .await?;
    let status = if submitted.created {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(json!({"task_id": submitted.task_id, "status": submitted.status, "created": submitted.created})),
    )
        .into_response())
}

async fn get_task(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = task_id(&id)?;
    let t = st.store.get_task(id).await?;
    let counts = st.store.step_counts(id, t.plan_version).await?;
    let n = |s: &str| counts.get(s).copied().unwrap_or(0);
    let steps = st.store.list_steps(id).await?;
    let current: Vec<&StepRow> = steps
        .iter()
        .filter(|s| s.plan_version == t.plan_version)
        .collect();
    let current: Vec<&StepRow> = current
        .into_iter()
        .filter(|s| s.status != "superseded")
        .collect();
    let focus = current
        .iter()
        .find(|s| s.status == "failed")
        .or_else(|| current.iter().find(|s| s.status == "running"))
        .or_else(|| current.iter().find(|s| s.status == "ready"));
    let current_step = focus.map(|s| s.step_key.clone());
    let usage = st.store.llm_usage(id).await?;
    let current_retry_count = focus.map(|s| s.retry_count).unwrap_or(0);
    Ok(Json(json!({
        "task_id": t.id,
        "status": t.status,
        "description": t.description,
        "priority": t.priority,
        "round": t.round,
        "plan_version": t.plan_version,
        "current_step": current_step,
        "counters": {
            "step_retry_count": current_retry_count,
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
        "llm_usage": usage,
        "steps": {
            "total": counts.values().sum::<i64>() - n("superseded"),
            "succeeded": n("succeeded"),
            "failed": n("failed"),
            "running": n("running"),
            "ready": n("ready"),
            "blocked": n("blocked"),
            "skipped": n("skipped"),
            "superseded": n("superseded"),
        },
        "metadata": t.metadata,
        "runtime_metadata": t.runtime_metadata,
        "error": t.error,
        "stop_reason": t.stop_reason,
        "final_score": t.final_score,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
        "finished_at": t.finished_at,
    })))
}

async fn get_result(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = task_id(&id)?;
    let t = st.store.get_task(id).await?;
    let steps = st.store.list_steps(id).await?;
    let outputs: serde_json::Map<String, Value> = steps
        .iter()
        .filter(|s| s.plan_version == t.plan_version && s.status == "succeeded")
        .map(|s| (s.step_key.clone(), s.output.clone().unwrap_or(Value::Null)))
        .collect();
    let duration_ms = st.store.task_duration_ms(id).await?;
    Ok(Json(json!({
        "task_id": t.id,
        "status": t.status,
        "is_success": t.status == TaskStatus::Succeeded.as_str(),
        "final_score": t.final_score,
        "stop_reason": t.stop_reason,
        "total_rounds": t.round,
        "outputs": outputs,
        "error": t.error,
        "duration_ms": duration_ms,
        "finished": t.status.parse::<TaskStatus>().map(|s| s.is_terminal()).unwrap_or(false),
    })))
}

fn step_view(s: &StepRow) -> Value {
    json!({
        "id": s.step_key,
        "name": s.name,
        "tool": s.tool_override.clone().unwrap_or_else(|| s.tool.clone()),
        "parameters": s.parameters,
        "dependencies": s.dependencies,
        "expected_output": s.expected_output,
        "optional": s.optional,
        "actions": s.actions,
        "status": s.status,
        "retry_count": s.retry_count,
        "attempts": s.attempts,
        "output": s.output,
        "error": s.error,
    })
}

async fn get_plan(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = task_id(&id)?;
    let t = st.store.get_task(id).await?;
    let plans = st.store.list_plans(id).await?;
    let steps = st.store.list_steps(id).await?;
    let mut by_version: BTreeMap<i32, Vec<Value>> = BTreeMap::new();
    for s in &steps {
        by_version
            .entry(s.plan_version)
            .or_default()
            .push(step_view(s));
    }
    let view = |p: &crate::store::tasks::PlanRow| {
        json!({
            "version": p.version,
            "origin": p.origin,
            "reasoning": p.reasoning,
            "estimated_duration": p.estimated_duration,
            "created_at": p.created_at,
            "steps": by_version.get(&p.version).cloned().unwrap_or_default(),
        })
    };
    let current = plans
        .iter()
        .find(|p| p.version == t.plan_version)
        .ok_or_else(|| ApiError::not_found(format!("task {id} has no plan yet")))?;
    let mut out = view(current);
    out["task_id"] = json!(id);
    out["history"] = Value::Array(
        plans
            .iter()
            .filter(|p| p.version != t.plan_version)
            .map(view)
            .collect(),
    );
    Ok(Json(out))
}

async fn get_attempts(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = task_id(&id)?;
    st.store.get_task(id).await?;
    let rows = st.store.list_attempts(id).await?;
    Ok(Json(Value::Array(
        rows.into_iter()
            .map(|a| {
                json!({
                    "step_id": a.step_key,
                    "plan_version": a.plan_version,
                    "attempt": a.attempt,
                    "tool": a.tool,
                    "parameters": a.parameters,
                    "status": a.status,
                    "output": a.output,
                    "error": a.error,
                    "worker_id": a.worker_id,
                    "started_at": a.started_at,
                    "finished_at": a.finished_at,
                    "duration_ms": a.duration_ms,
                })
            })
            .collect(),
    )))
}

#[derive(Debug, Deserialize)]
struct EventsQuery {
    after: Option<i64>,
    limit: Option<i64>,
}

/// Events after `after` (or `Last-Event-ID`): a JSON list, or with `Accept: text/event-stream`
/// a live Server-Sent Events stream (`id` = seq, `event` = kind) that ends once the task is
/// finished and every event has been sent.
async fn get_events(
    State(st): State<AppState>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    q: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let id = task_id(&id)?;
    let Query(q) = q.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let last_event_id = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .ok_or_else(|| {
                    ApiError::bad_request("Last-Event-ID must be an event sequence number")
                })?,
        ),
    };
    let after = last_event_id.or(q.after).unwrap_or(0);
    let limit = q.limit.unwrap_or(1000);
    if after < 0 || !(1..=10_000).contains(&limit) {
        return Err(ApiError::bad_request(
            "after must be ≥ 0 and limit between 1 and 10000",
        ));
    }
    st.store.get_task(id).await?;
    let wants_stream = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    if wants_stream {
        return Ok(event_stream(st.store.clone(), id, after).into_response());
    }
    let events = st.store.list_events(id, after, limit).await?;
    Ok(Json(serde_json::to_value(events).expect("events serialize")).into_response())
}

/// How often a live stream looks for new events.
const STREAM_POLL: std::time::Duration = std::time::Duration::from_millis(100);

fn event_stream(
    store: Store,
    task: Uuid,
    after: i64,
) -> axum::response::sse::Sse<
    impl futures::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>,
> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    struct State {
        store: Store,
        task: Uuid,
        last: i64,
        pending: std::collections::VecDeque<crate::store::tasks::EventRow>,
        done: bool,
    }
    let state = State {
        store,
        task,
        last: after,
        pending: Default::default(),
        done: false,
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(e) = st.pending.pop_front() {
                st.last = e.seq;
                let data = json!({"seq": e.seq, "kind": e.kind, "at": e.at, "payload": e.payload});
                let event = Event::default()
                    .id(e.seq.to_string())
                    .event(e.kind.clone())
                    .data(data.to_string());
                return Some((Ok(event), st));
            }
            if st.done {
                return None;
            }
            // read the status before the events: a terminal status seen here means every
            // event it produced is already visible to the read below
            let finished = match st.store.get_task(st.task).await {
                Ok(t) => t
                    .status
                    .parse::<TaskStatus>()
                    .map(|s| s.is_terminal())
                    .unwrap_or(false),
                Err(_) => true,
            };
            match st.store.list_events(st.task, st.last, 1000).await {
                Ok(rows) if !rows.is_empty() => st.pending.extend(rows),
                Ok(_) if finished => st.done = true,
                Ok(_) => tokio::time::sleep(STREAM_POLL).await,
                Err(e) => {
                    tracing::warn!(error = %e, "event stream read failed; ending the stream");
                    return None;
                }
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn cancel_task(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = task_id(&id)?;
    let status = st.store.cancel_task(id).await?;
    Ok(Json(json!({"task_id": id, "status": status})))
}

/// Resume from `needs_intervention`: optional body `{"plan": {...}}` or
/// `{"step_overrides": {"step_3": {"parameters": {...}, "tool": "..."}}}`; no body retries the
/// failed steps as they are.
async fn resume_task(
    State(st): State<AppState>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Json<Value>, ApiError> {
    let id = task_id(&id)?;
    let req: ResumeRequest = if body.iter().all(|b| b.is_ascii_whitespace()) {
        ResumeRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                e.to_string(),
            )
        })?
    };
    if req.plan.is_some() && !req.step_overrides.is_empty() {
        return Err(ApiError::validation(
            "give either a plan or step_overrides, not both",
        ));
    }
    if let Some(plan) = &req.plan {
        let known: HashSet<String> = st.store.tool_ids().await?.into_iter().collect();
        plan::validate(plan, &known)?;
    }
    let status = st.store.resume_task(id, &req).await?;
    Ok(Json(json!({"task_id": id, "status": status})))
}

async fn get_reflections(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = task_id(&id)?;
    st.store.get_task(id).await?;
    let rows = st.store.list_reflections(id).await?;
    Ok(Json(
        serde_json::to_value(rows).expect("reflections serialize"),
    ))
}

async fn get_evaluations(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id = task_id(&id)?;
    st.store.get_task(id).await?;
    let rows = st.store.list_evaluations(id).await?;
    Ok(Json(
        serde_json::to_value(rows).expect("evaluations serialize"),
    ))
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    status: Option<String>,
    limit: Option<i64>,
    before: Option<String>,
}

async fn list_tasks(
    State(st): State<AppState>,
    q: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let status = match q.status.as_deref() {
        None | Some("") => None,
        Some(s) => Some(s.parse::<TaskStatus>().map_err(|_| {
            ApiError::bad_request(format!(
                "unknown status {s:?}; one of {}",
                TaskStatus::ALL
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?),
    };
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::bad_request("limit must be between 1 and 500"));
    }
    let mut filter = ListTasks {
        status,
        limit,
        ..Default::default()
    };
    if let Some(b) = q.before.as_deref().filter(|b| !b.is_empty()) {
        if let Ok(id) = Uuid::parse_str(b) {
            filter.before_task = Some(id);
        } else if let Ok(ts) = DateTime::parse_from_rfc3339(b) {
            filter.before_time = Some(ts.with_timezone(&Utc));
        } else {
            return Err(ApiError::bad_request(
                "before must be a task id or an RFC 3339 timestamp",
            ));
        }
    }
    let rows = st.store.list_tasks(&filter).await?;
    Ok(Json(Value::Array(
        rows.into_iter()
            .map(|t| {
                json!({"task_id": t.id, "status": t.status, "description": t.description,
                       "created_at": t.created_at, "updated_at": t.updated_at})
            })
            .collect(),
    )))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolInput {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: String,
    endpoint: String,
    #[serde(default)]
    timeout_ms: Option<i32>,
    #[serde(default)]
    input_schema: Option<Value>,
    #[serde(default)]
    output_params: Vec<String>,
    #[serde(default)]
    alternatives: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
}

async fn create_tool(
    State(st): State<AppState>,
    ApiJson(t): ApiJson<ToolInput>,
) -> Result<Response, ApiError> {
    let id_ok = !t.id.is_empty()
        && t.id.len() <= 128
        && t.id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c));
    if !id_ok {
        return Err(ApiError::validation(
            "id must be 1-128 letters, digits, '_', '.', ':' or '-'",
        ));
    }
    let url_ok = reqwest::Url::parse(&t.endpoint)
        .map(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .unwrap_or(false);
    if !url_ok {
        return Err(ApiError::validation(
            "endpoint must be an absolute http(s) URL",
        ));
    }
    let timeout_ms = t.timeout_ms.unwrap_or(30_000);
    if !(1..=3_600_000).contains(&timeout_ms) {
        return Err(ApiError::validation(
            "timeout_ms must be between 1 and 3600000",
        ));
    }
    let input_schema = t.input_schema.unwrap_or_else(|| json!({"type": "object"}));
    if !input_schema.is_object() {
        return Err(ApiError::validation("input_schema must be a JSON object"));
    }
    if t.alternatives.contains(&t.id) {
        return Err(ApiError::validation("a tool cannot be its own alternative"));
    }
    let row = st
        .store
        .create_tool(&NewTool {
            name: t.name.unwrap_or_else(|| t.id.clone()),
            id: t.id,
            description: t.description,
            endpoint: t.endpoint,
            timeout_ms,
            input_schema,
            output_params: t.output_params,
            alternatives: t.alternatives,
            tags: t.tags,
        })
        .await?;
    Ok((StatusCode::CREATED, Json(row)).into_response())
}

async fn list_tools(State(st): State<AppState>) -> Result<Json<Value>, ApiError> {
    Ok(Json(
        serde_json::to_value(st.store.list_tools().await?).expect("tools serialize"),
    ))
}

async fn get_tool(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(
        serde_json::to_value(st.store.get_tool(&id).await?).expect("tool serializes"),
    ))
}

async fn delete_tool(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    st.store.delete_tool(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn stats(State(st): State<AppState>) -> Result<Json<Value>, ApiError> {
    let (tasks, steps) = st.store.stats().await?;
    Ok(Json(json!({"tasks": tasks, "steps": steps})))
}

/// The four recovery-statistics views (docs/sql-reporting.md).
async fn recovery_stats(State(st): State<AppState>) -> Result<Json<Value>, ApiError> {
    let mut out = serde_json::Map::new();
    for view in crate::store::reports::ReportView::ALL {
        out.insert(
            view.name().into(),
            Value::Array(st.store.report(view).await?),
        );
    }
    Ok(Json(Value::Object(out)))
}

/// The OpenAPI document (docs/openapi.json, compiled in).
pub const OPENAPI: &str = include_str!("../../docs/openapi.json");

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn ready(State(st): State<AppState>) -> Response {
    match st.store.ready().await {
        Ok(true) => Json(json!({"status": "ready"})).into_response(),
        Ok(false) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            "migrations are not applied yet",
        )
        .into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "not_ready",
                "the database is not reachable",
            )
            .into_response()
        }
    }
}

/// Prometheus text exposition of task and step counts by status.
async fn metrics(State(st): State<AppState>) -> Result<Response, ApiError> {
    let (tasks, steps) = st.store.stats().await?;
    let mut out =
        String::from("# HELP trellis_tasks Tasks by status.\n# TYPE trellis_tasks gauge\n");
    for (s, n) in &tasks {
        out.push_str(&format!("trellis_tasks{{status=\"{s}\"}} {n}\n"));
    }
    out.push_str("# HELP trellis_steps Steps by status.\n# TYPE trellis_steps gauge\n");
    for (s, n) in &steps {
        out.push_str(&format!("trellis_steps{{status=\"{s}\"}} {n}\n"));
    }
    let llm = st.store.llm_totals().await?;
    out.push_str("# HELP trellis_llm_calls_total LLM calls by decision and outcome.\n# TYPE trellis_llm_calls_total counter\n");
    for (name, ok, failed, _, _) in &llm {
        out.push_str(&format!(
            "trellis_llm_calls_total{{name=\"{name}\",ok=\"true\"}} {ok}\ntrellis_llm_calls_total{{name=\"{name}\",ok=\"false\"}} {failed}\n"
        ));
    }
    out.push_str("# HELP trellis_llm_tokens_total LLM tokens by decision and kind.\n# TYPE trellis_llm_tokens_total counter\n");
    for (name, _, _, prompt, completion) in &llm {
        out.push_str(&format!(
            "trellis_llm_tokens_total{{name=\"{name}\",kind=\"prompt\"}} {prompt}\ntrellis_llm_tokens_total{{name=\"{name}\",kind=\"completion\"}} {completion}\n"
        ));
    }
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response())
}
