//! `/tasks`: submit, read, list, cancel, resume.

use std::collections::{BTreeMap, HashSet};

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use utoipa::{IntoParams, ToSchema};

use super::auth::Tenancy;
use super::input::{self, PageQuery};
use super::rules::{
    LimitsInput, PRIORITIES, TaskPath, apply_limits, check_event_kinds, check_plan_size,
    check_webhook_target, named_tools,
};
use super::schemas::{BadBody, BadUri, Conflict, Guarded, Missing};
use super::views::{
    self, Accepted, AttemptView, EvaluationView, LlmUsageView, PlanView, PlanWithHistory,
    ReflectionView, Submitted, SubmittedBatch, TaskResultView, TaskSummaryView, TaskView,
};
use super::{ApiError, ApiJson, AppState, KnownTask, TaskId};
use crate::domain::PlanSpec;
use crate::domain::plan;
use crate::domain::records::StepRow;
use crate::domain::status::{StepStatus, TaskStatus};
use crate::store::reads::ListTasks;
use crate::store::rerun::Rerun;
use crate::store::submit::{NewTask, Resume, Start, StepOverride, TaskWebhook};

/// `POST /tasks`: a task with its plan, a template with its input, or (with an LLM
/// configured) a description alone to be planned.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({
    "description": "Greet, then repeat the greeting",
    "priority": 10,
    "idempotency_key": "greet-2026-11-24",
    "limits": {"max_step_retries": 2, "task_timeout_secs": 600},
    "plan": {"steps": [
        {"id": "greet", "tool": "echo", "parameters": {"text": "hello"}},
        {"id": "repeat", "tool": "echo", "parameters": {"said": "${greet}"}, "dependencies": ["greet"]}
    ]}
})))]
pub(super) struct SubmitTask {
    /// Required unless `template` is given (the template's description is then the default).
    #[serde(default)]
    #[schema(min_length = 1, pattern = "\\S")]
    description: String,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    metadata: Option<Value>,
    /// The caller's context, given to every brain prompt and readable as `${context.key}`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    context: Option<Value>,
    /// A second submit with the same key returns the first task (200, `created` false).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 255)]
    idempotency_key: Option<String>,
    /// Higher runs first.
    #[serde(default)]
    #[schema(minimum = -1000, maximum = 1000)]
    priority: Option<i32>,
    #[serde(default)]
    limits: Option<LimitsInput>,
    /// Optional only when an LLM is configured (`[llm] base_url`): the task is then planned
    /// from its description (status pending → planning → running); otherwise a missing plan
    /// is a 422 `plan_required`.
    #[serde(default)]
    plan: Option<PlanSpec>,
    /// A workflow template's id, instead of `plan`: its plan with `input` put in its
    /// `${input.key}` placeholders becomes version 1 (origin `template:<id>`).
    #[serde(default)]
    template: Option<String>,
    /// The template's input, checked against its `input_schema`; only with `template`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    input: Option<Value>,
    /// Accepted now, but nothing of the task runs before this RFC 3339 time (not with
    /// `delay_secs`); its deadline counts from then.
    #[serde(default)]
    #[schema(format = DateTime)]
    run_at: Option<String>,
    /// As `run_at`, this many seconds from now (the server's clock).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 31622400)]
    delay_secs: Option<f64>,
    /// The task's own completion webhook: a URL, or `{"url", "events": [event kinds]}`
    /// (default: the terminal kinds and `intervention_required`); signed with the server's
    /// `[webhooks] signing_secret` (a 422 when none is configured).
    #[serde(default)]
    webhook: Option<Value>,
    /// The fairness key (1 to 128 characters, e.g. a customer id): within a priority, the claim
    /// serves keys in turn, in proportion to their weights (`/key-limits`), not to their
    /// backlogs. Tasks without one share one key.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 128)]
    concurrency_key: Option<String>,
}

fn task_webhook(st: &AppState, w: Option<Value>) -> Result<Option<TaskWebhook>, ApiError> {
    let Some(w) = w.filter(|w| !w.is_null()) else {
        return Ok(None);
    };
    let (url, events) = match w {
        Value::String(url) => (url, Vec::new()),
        Value::Object(mut m) => {
            if let Some(k) = m.keys().find(|k| !["url", "events"].contains(&k.as_str())) {
                return Err(ApiError::validation(format!("webhook has no field {k:?}")));
            }
            let url = match m.remove("url") {
                Some(Value::String(u)) => u,
                _ => return Err(ApiError::validation("webhook.url must be a URL")),
            };
            let events: Vec<String> = match m.remove("events") {
                None | Some(Value::Null) => Vec::new(),
                Some(v) => serde_json::from_value(v).map_err(|_| {
                    ApiError::validation("webhook.events must be a list of event kinds")
                })?,
            };
            (url, events)
        }
        _ => {
            return Err(ApiError::validation(
                "webhook must be a URL or {\"url\", \"events\"}",
            ));
        }
    };
    check_webhook_target(st, &url)?;
    check_event_kinds(&events)?;
    if st.settings.webhooks.signing_secret.is_none() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "webhook_unavailable",
            "this server signs no task webhooks: set [webhooks] signing_secret (APP_WEBHOOKS__SIGNING_SECRET), or subscribe with POST /api/v1/webhooks",
        ));
    }
    Ok(Some(TaskWebhook { url, events }))
}

/// The longest delayed start (one year), in seconds.
pub const MAX_DELAY_SECS: f64 = 31_622_400.0;

/// `run_at` / `delay_secs` of a submit body.
pub(super) fn start(run_at: Option<&str>, delay_secs: Option<f64>) -> Result<Start, ApiError> {
    match (run_at, delay_secs) {
        (Some(_), Some(_)) => Err(ApiError::validation("give run_at or delay_secs, not both")),
        (Some(t), None) => {
            let at = DateTime::parse_from_rfc3339(t)
                .map_err(|_| ApiError::validation("run_at must be an RFC 3339 time"))?
                .with_timezone(&Utc);
            if at > Utc::now() + chrono::Duration::seconds(MAX_DELAY_SECS as i64) {
                return Err(ApiError::validation("run_at must be within a year"));
            }
            Ok(Start::At(at))
        }
        (None, Some(s)) if s.is_finite() && (0.0..=MAX_DELAY_SECS).contains(&s) => {
            Ok(if s == 0.0 {
                Start::Now
            } else {
                Start::After(s)
            })
        }
        (None, Some(_)) => Err(ApiError::validation(format!(
            "delay_secs must be between 0 and {MAX_DELAY_SECS}"
        ))),
        (None, None) => Ok(Start::Now),
    }
}

/// Check a submit body and turn it into the task to insert. The plan is checked against the
/// tools it names (whether they are registered is checked by the insert itself, in the same
/// round trip: see [`unknown_tools`]).
fn new_task(st: &AppState, tenant: &str, body: SubmitTask) -> Result<NewTask, ApiError> {
    if body.input.is_some() {
        return Err(ApiError::validation(
            "input is only for a submit that names a template",
        ));
    }
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
    if let Some(k) = &body.concurrency_key
        && !(1..=128).contains(&k.chars().count())
    {
        return Err(ApiError::validation(
            "concurrency_key must be 1 to 128 characters (a template's, once filled, too)",
        ));
    }
    let limits = apply_limits(st.default_limits(), body.limits)?;
    let priority = body.priority.unwrap_or(0);
    if !PRIORITIES.contains(&priority) {
        return Err(ApiError::validation(format!(
            "priority must be between {} and {}",
            PRIORITIES.start(),
            PRIORITIES.end()
        )));
    }
    let plan = match body.plan {
        Some(plan) => {
            check_plan_size(st, &plan)?;
            plan::validate(&plan, &named_tools(&plan))?;
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
    let start = start(body.run_at.as_deref(), body.delay_secs)?;
    let webhook = task_webhook(st, body.webhook)?;
    Ok(NewTask {
        description: body.description,
        metadata,
        context,
        priority,
        idempotency_key: body.idempotency_key,
        limits,
        plan,
        template: None,
        start,
        webhook,
        parent: None,
        concurrency_key: body.concurrency_key,
        tenant: tenant.to_owned(),
    })
}

/// A submit body that names a template gets the template's plan (and its description when it
/// has none); then it is checked like any other.
async fn new_task_from(
    st: &AppState,
    tenancy: &Tenancy,
    seen: &mut super::templates::Seen,
    mut body: SubmitTask,
) -> Result<NewTask, ApiError> {
    let Some(id) = body.template.take() else {
        return new_task(st, &tenancy.home, body);
    };
    if body.plan.is_some() {
        return Err(ApiError::validation(
            "give either a plan or a template, not both",
        ));
    }
    let metadata = body.metadata.clone().unwrap_or_else(|| json!({}));
    let (plan, description, key) =
        super::templates::instantiate(st, tenancy, seen, &id, body.input.take(), &metadata).await?;
    if let Some(c) = seen.get(&id).and_then(|t| t.max_cost) {
        let limits = body.limits.get_or_insert_with(LimitsInput::default);
        limits.max_cost.get_or_insert(c);
    }
    if body.concurrency_key.is_none() {
        body.concurrency_key = key;
    }
    if body.description.trim().is_empty() {
        body.description = if description.trim().is_empty() {
            format!("template {id}")
        } else {
            description
        };
    }
    body.plan = Some(plan);
    let mut task = new_task(st, &tenancy.home, body)?;
    task.template = Some(id);
    Ok(task)
}

/// The error for a task whose plan names tools that are not registered: the plan checked
/// against the registry as it is, so the message is the one a registry lookup gives.
fn unknown_tools(t: &NewTask, missing: &[String]) -> Option<ApiError> {
    let plan = t.plan.as_ref()?;
    let known: HashSet<String> = named_tools(plan)
        .into_iter()
        .filter(|id| !missing.contains(id))
        .collect();
    plan::validate(plan, &known).err().map(ApiError::from)
}

/// Submit a task.
#[utoipa::path(post, path = "/tasks", operation_id = "submit_task", tag = "tasks", security(("bearer" = [])),
    request_body = SubmitTask,
    responses(
        (status = 202, description = "accepted", body = Submitted, links(
            ("status" = (operation_id = "task_status", parameters(("id" = "$response.body#/task_id")))),
            ("result" = (operation_id = "task_result", parameters(("id" = "$response.body#/task_id")))),
            ("plan" = (operation_id = "task_plan", parameters(("id" = "$response.body#/task_id")))),
            ("attempts" = (operation_id = "task_attempts", parameters(("id" = "$response.body#/task_id")))),
            ("events" = (operation_id = "task_events", parameters(("id" = "$response.body#/task_id")))),
            ("reflections" = (operation_id = "task_reflections", parameters(("id" = "$response.body#/task_id")))),
            ("evaluations" = (operation_id = "task_evaluations", parameters(("id" = "$response.body#/task_id")))),
            ("cancel" = (operation_id = "cancel_task", parameters(("id" = "$response.body#/task_id")))),
            ("resume" = (operation_id = "resume_task", parameters(("id" = "$response.body#/task_id")))),
            ("rerun" = (operation_id = "rerun_task", parameters(("id" = "$response.body#/task_id")))),
        )),
        (status = 200, description = "idempotency_key already used: the existing task", body = Submitted),
        BadBody, Guarded,
    ),
)]
pub(super) async fn submit(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiJson(body): ApiJson<SubmitTask>,
) -> Result<Response, ApiError> {
    let task = new_task_from(&st, &tenancy, &mut Default::default(), body).await?;
    let submitted = match st
        .store
        .submit_tasks_quietly(std::slice::from_ref(&task))
        .await?
    {
        Ok(mut v) => {
            let s = v.pop().expect("one result per task");
            if s.created {
                st.announcer.ready(task.plan.is_none());
            }
            s
        }
        Err(missing) => {
            return Err(unknown_tools(&task, &missing)
                .unwrap_or_else(|| ApiError::validation("the plan names unregistered tools")));
        }
    };
    let status = if submitted.created {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(Submitted {
            task_id: submitted.task_id,
            status: submitted.status,
            created: submitted.created,
        }),
    )
        .into_response())
}

/// At most this many tasks per `POST /tasks/batch`.
pub const MAX_BATCH: usize = 1000;

/// `POST /tasks/batch`: up to 1000 submit bodies.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SubmitBatch {
    #[schema(value_type = Vec<SubmitTask>, min_items = 1, max_items = 1000)]
    tasks: Vec<Value>,
}

/// Name the item of a batch an error is about.
fn at(i: usize) -> impl Fn(ApiError) -> ApiError {
    move |mut e| {
        e.message = format!("tasks[{i}]: {}", e.message);
        e
    }
}

/// Submit up to 1000 tasks at once, all or nothing.
///
/// One transaction. Results are in request order; an idempotency key already used gives that
/// task with `created` false. Any invalid item: 422 naming its index (`tasks[i]`) and nothing
/// is stored.
#[utoipa::path(post, path = "/tasks/batch", operation_id = "submit_batch", tag = "tasks", security(("bearer" = [])),
    request_body = SubmitBatch,
    responses((status = 202, description = "accepted", body = SubmittedBatch), BadBody, Guarded),
)]
pub(super) async fn submit_batch(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiJson(body): ApiJson<SubmitBatch>,
) -> Result<Response, ApiError> {
    if body.tasks.is_empty() || body.tasks.len() > MAX_BATCH {
        return Err(ApiError::validation(format!(
            "tasks must hold 1 to {MAX_BATCH} submit bodies (got {})",
            body.tasks.len()
        )));
    }
    let mut tasks = Vec::with_capacity(body.tasks.len());
    let mut seen = super::templates::Seen::new();
    for (i, item) in body.tasks.into_iter().enumerate() {
        let parsed: SubmitTask = serde_json::from_value(item).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                format!("tasks[{i}]: {e}"),
            )
        })?;
        tasks.push(
            new_task_from(&st, &tenancy, &mut seen, parsed)
                .await
                .map_err(at(i))?,
        );
    }
    let submitted = match st.store.submit_tasks_quietly(&tasks).await? {
        Ok(v) => {
            if v.iter().any(|s| s.created) {
                st.announcer.ready(tasks.iter().any(|t| t.plan.is_none()));
            }
            v
        }
        Err(missing) => {
            let first = tasks
                .iter()
                .enumerate()
                .find_map(|(i, t)| unknown_tools(t, &missing).map(at(i)));
            return Err(first.unwrap_or_else(|| {
                ApiError::validation(format!("unregistered tools: {}", missing.join(", ")))
            }));
        }
    };
    let tasks = submitted
        .iter()
        .map(|s| Submitted {
            task_id: s.task_id,
            status: s.status,
            created: s.created,
        })
        .collect();
    Ok((StatusCode::ACCEPTED, Json(SubmittedBatch { tasks })).into_response())
}

/// Task status.
#[utoipa::path(get, path = "/tasks/{id}", tag = "tasks", operation_id = "task_status",
    security(("bearer" = [])), params(TaskPath),
    responses((status = 200, description = "status", body = TaskView), Missing, BadUri, Guarded),
)]
pub(super) async fn get(
    State(st): State<AppState>,
    KnownTask(id): KnownTask,
) -> Result<Json<TaskView>, ApiError> {
    let t = st.store.get_task(id).await?;
    let counts = st.store.step_counts(id, t.plan_version).await?;
    let steps = st.store.list_steps(id).await?;
    let current: Vec<&StepRow> = steps
        .iter()
        .filter(|s| s.plan_version == t.plan_version && s.status != StepStatus::Superseded)
        .collect();
    let usage: LlmUsageView = st.store.llm_usage(id).await?;
    let children = st.store.children_of(id).await?;
    Ok(Json(views::task(&t, &counts, &current, usage, &children)))
}

/// Task result.
#[utoipa::path(get, path = "/tasks/{id}/result", tag = "tasks", operation_id = "task_result",
    security(("bearer" = [])), params(TaskPath),
    responses((status = 200, description = "result", body = TaskResultView), Missing, BadUri, Guarded),
)]
pub(super) async fn result(
    State(st): State<AppState>,
    KnownTask(id): KnownTask,
) -> Result<Json<TaskResultView>, ApiError> {
    let t = st.store.get_task(id).await?;
    let steps = st.store.list_steps(id).await?;
    let duration_ms = st.store.task_duration_ms(id).await?;
    let ((tokens, calls), (all_tokens, all_calls)) = st.store.usage_with_descendants(id).await?;
    let usage = (
        views::UsageView {
            llm_tokens: tokens,
            tool_calls: calls,
        },
        views::UsageView {
            llm_tokens: all_tokens,
            tool_calls: all_calls,
        },
    );
    Ok(Json(views::result(&t, &steps, duration_ms, usage)))
}

/// Current plan and plan history.
#[utoipa::path(get, path = "/tasks/{id}/plan", tag = "tasks", operation_id = "task_plan",
    security(("bearer" = [])), params(TaskPath),
    responses((status = 200, description = "plan", body = PlanWithHistory), Missing, BadUri, Guarded),
)]
pub(super) async fn plan(
    State(st): State<AppState>,
    KnownTask(id): KnownTask,
) -> Result<Json<PlanWithHistory>, ApiError> {
    let t = st.store.get_task(id).await?;
    let plans: Vec<PlanView> = st.store.list_plans(id).await?;
    let steps = st.store.list_steps(id).await?;
    let (current, history): (Vec<PlanView>, Vec<PlanView>) = plans
        .into_iter()
        .map(|p| p.with_steps(&steps))
        .partition(|p| p.version == t.plan_version);
    let current = current
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::not_found(format!("task {id} has no plan yet")))?;
    Ok(Json(PlanWithHistory {
        task_id: id,
        current,
        history,
    }))
}

type PageParams = Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>;

/// Every attempt.
#[utoipa::path(get, path = "/tasks/{id}/attempts", tag = "tasks", operation_id = "task_attempts",
    security(("bearer" = [])), params(TaskPath, PageQuery),
    responses((status = 200, description = "attempts", body = Vec<AttemptView>), Missing, BadUri, Guarded),
)]
pub(super) async fn attempts(
    State(st): State<AppState>,
    KnownTask(id): KnownTask,
    q: PageParams,
) -> Result<Json<Vec<AttemptView>>, ApiError> {
    let page = input::query(q)?.page()?;
    let rows = st.store.list_attempts(id, page).await?;
    Ok(Json(rows.iter().map(views::attempt).collect()))
}

/// `POST /tasks/{id}/reschedule`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Reschedule {
    /// Nothing of the task runs before this RFC 3339 time.
    #[schema(format = DateTime)]
    run_at: String,
}

/// Move the start of a task nothing of which has started (409 once anything ran); its
/// deadline moves with it.
#[utoipa::path(post, path = "/tasks/{id}/reschedule", tag = "tasks", operation_id = "reschedule_task",
    security(("bearer" = [])), params(TaskPath), request_body = Reschedule,
    responses((status = 200, description = "rescheduled", body = Accepted), Missing, Conflict, BadBody, BadUri, Guarded),
)]
pub(super) async fn reschedule(
    State(st): State<AppState>,
    TaskId(id): TaskId,
    tenancy: Tenancy,
    ApiJson(r): ApiJson<Reschedule>,
) -> Result<Json<Accepted>, ApiError> {
    let Start::At(at) = start(Some(&r.run_at), None)? else {
        unreachable!("run_at alone is a time")
    };
    own_task(&st, &tenancy, id).await?;
    st.store.reschedule_task(id, at).await?;
    let status = st.store.get_task(id).await?.status;
    Ok(Json(Accepted {
        task_id: id,
        status,
    }))
}

/// Cancel unless terminal.
#[utoipa::path(post, path = "/tasks/{id}/cancel", tag = "tasks", operation_id = "cancel_task",
    security(("bearer" = [])), params(TaskPath),
    responses((status = 200, description = "cancelled", body = Accepted), Missing, Conflict, BadBody, BadUri, Guarded),
)]
pub(super) async fn cancel(
    State(st): State<AppState>,
    KnownTask(id): KnownTask,
) -> Result<Json<Accepted>, ApiError> {
    let status = st.store.cancel_task(id).await?;
    Ok(Json(Accepted {
        task_id: id,
        status,
    }))
}

/// Resume from `needs_intervention`: optional body (`null` is none) `{"plan": {...}}` or
/// `{"step_overrides": {"step_3": {"parameters": {...}, "tool": "..."}}}`; no body retries the
/// failed steps as they are.
#[utoipa::path(post, path = "/tasks/{id}/resume", tag = "tasks", operation_id = "resume_task",
    summary = "Resume from needs_intervention",
    security(("bearer" = [])), params(TaskPath),
    request_body(content = Option<ResumeRequest>, description = "optional: no body retries the failed steps as they are"),
    responses((status = 200, description = "resumed", body = Accepted), Missing, Conflict, BadBody, BadUri, Guarded),
)]
pub(super) async fn resume(
    State(st): State<AppState>,
    TaskId(id): TaskId,
    tenancy: Tenancy,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Result<Json<Accepted>, ApiError> {
    let req: ResumeRequest = if body.iter().all(|b| b.is_ascii_whitespace()) {
        ResumeRequest::default()
    } else {
        super::input::require_json(&headers)?;
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "malformed_json", e.to_string()))?;
        if v.is_null() {
            ResumeRequest::default()
        } else {
            super::input::typed(v)?
        }
    };
    if req.plan.is_some() && !req.step_overrides.is_empty() {
        return Err(ApiError::validation(
            "give either a plan or step_overrides, not both",
        ));
    }
    if let Some(plan) = &req.plan {
        check_plan_size(&st, plan)?;
    }
    let tenant = own_task(&st, &tenancy, id).await?;
    if let Some(plan) = &req.plan {
        // the task's tenant's tools (an admin may resume any tenant's task)
        let known: HashSet<String> = st.store.tool_ids(&tenant).await?.into_iter().collect();
        plan::validate(plan, &known)?;
    }
    let status = st.store.resume_task(id, &req.into()).await?;
    Ok(Json(Accepted {
        task_id: id,
        status,
    }))
}

/// Rerun an ended task (or one in `needs_intervention`) from a step:
/// `{"from_step": "step_2", "step_overrides": {"step_2": {"parameters": {...}, "tool": "..."}}}`.
/// A new plan version (origin `rerun`) keeps every output not downstream of the step.
#[utoipa::path(post, path = "/tasks/{id}/rerun", tag = "tasks", operation_id = "rerun_task",
    summary = "Rerun an ended task (or one in needs_intervention) from a step: a new plan version (origin rerun)",
    security(("bearer" = [])), params(TaskPath), request_body = RerunRequest,
    responses((status = 202, description = "rerun started", body = Accepted), Missing, Conflict, BadBody, BadUri, Guarded),
)]
pub(super) async fn rerun(
    State(st): State<AppState>,
    TaskId(id): TaskId,
    tenancy: Tenancy,
    ApiJson(req): ApiJson<RerunRequest>,
) -> Result<Response, ApiError> {
    own_task(&st, &tenancy, id).await?;
    let status = st.store.rerun_task(id, &req.into()).await?;
    st.announcer.ready(false);
    Ok((
        StatusCode::ACCEPTED,
        Json(Accepted {
            task_id: id,
            status,
        }),
    )
        .into_response())
}

/// Step and overall reflections.
#[utoipa::path(get, path = "/tasks/{id}/reflections", tag = "tasks", operation_id = "task_reflections",
    security(("bearer" = [])), params(TaskPath, PageQuery),
    responses((status = 200, description = "reflections, oldest first", body = Vec<ReflectionView>), Missing, BadUri, Guarded),
)]
pub(super) async fn reflections(
    State(st): State<AppState>,
    KnownTask(id): KnownTask,
    q: PageParams,
) -> Result<Json<Vec<ReflectionView>>, ApiError> {
    let page = input::query(q)?.page()?;
    Ok(Json(
        st.store
            .list_reflections::<ReflectionView>(id, page)
            .await?,
    ))
}

/// Evaluations of finished plans.
#[utoipa::path(get, path = "/tasks/{id}/evaluations", tag = "tasks", operation_id = "task_evaluations",
    security(("bearer" = [])), params(TaskPath, PageQuery),
    responses((status = 200, description = "evaluations, oldest first", body = Vec<EvaluationView>), Missing, BadUri, Guarded),
)]
pub(super) async fn evaluations(
    State(st): State<AppState>,
    KnownTask(id): KnownTask,
    q: PageParams,
) -> Result<Json<Vec<EvaluationView>>, ApiError> {
    let page = input::query(q)?.page()?;
    Ok(Json(
        st.store
            .list_evaluations::<EvaluationView>(id, page)
            .await?,
    ))
}

/// `GET /tasks`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// Only tasks in this status; empty: any status.
    #[param(schema_with = super::schemas::status_filter)]
    status: Option<String>,
    #[param(minimum = 1, maximum = 500, default = 50)]
    limit: Option<i64>,
    /// A task id (cursor) or an RFC 3339 timestamp; empty: no cursor.
    #[param(schema_with = super::schemas::before_cursor)]
    before: Option<String>,
    /// Only tasks created at or after this RFC 3339 time; empty: no bound.
    #[param(schema_with = super::schemas::time_or_empty)]
    since: Option<String>,
    /// Only tasks whose description contains this text, in any case (at most 200 characters);
    /// empty: any.
    #[param(max_length = 200)]
    q: Option<String>,
}

/// List tasks, newest first.
#[utoipa::path(get, path = "/tasks", operation_id = "list_tasks", tag = "tasks", security(("bearer" = [])), params(ListQuery, super::schemas::TenantParam),
    responses((status = 200, description = "tasks", body = Vec<TaskSummaryView>), BadUri, Guarded),
)]
pub(super) async fn list(
    State(st): State<AppState>,
    tenancy: Tenancy,
    q: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<TaskSummaryView>>, ApiError> {
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
        tenant: tenancy.filter().map(str::to_owned),
        ..Default::default()
    };
    if let Some(t) = q.since.as_deref().filter(|t| !t.is_empty()) {
        let ts = DateTime::parse_from_rfc3339(t)
            .map_err(|_| ApiError::bad_request("since must be an RFC 3339 timestamp"))?;
        filter.since = Some(ts.with_timezone(&Utc));
    }
    if let Some(text) = q.q.filter(|t| !t.is_empty()) {
        if text.chars().count() > 200 {
            return Err(ApiError::bad_request("q must be at most 200 characters"));
        }
        filter.text = Some(text);
    }
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
    Ok(Json(st.store.list_tasks::<TaskSummaryView>(&filter).await?))
}

/// `POST /tasks/{id}/resume`: a replacement plan, or parameter/tool overrides for steps.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Resume, examples(json!({"step_overrides": {"fetch": {"parameters": {"timeout_ms": 5000}}}})))]
pub struct ResumeRequest {
    /// A replacement plan (a new version, origin `resume`).
    #[serde(default)]
    pub plan: Option<PlanSpec>,
    /// By step id: parameters merged into the step's, or another tool.
    #[serde(default)]
    pub step_overrides: BTreeMap<String, StepOverrideInput>,
}

/// Body of `POST /tasks/{id}/rerun`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Rerun, examples(json!({"from_step": "repeat", "step_overrides": {"repeat": {"parameters": {"said": "hello again"}}}})))]
pub struct RerunRequest {
    /// The step to start from: it and every step downstream of it run again; other succeeded
    /// steps keep their outputs.
    pub from_step: String,
    /// By step id; only `from_step` or its descendants may be named.
    #[serde(default)]
    pub step_overrides: BTreeMap<String, StepOverrideInput>,
}

impl From<RerunRequest> for Rerun {
    fn from(r: RerunRequest) -> Self {
        Rerun {
            from_step: r.from_step,
            step_overrides: r
                .step_overrides
                .into_iter()
                .map(|(k, o)| (k, o.into()))
                .collect(),
            bulk_action_id: None,
        }
    }
}

impl From<StepOverrideInput> for StepOverride {
    fn from(o: StepOverrideInput) -> Self {
        StepOverride {
            parameters: o.parameters,
            tool: o.tool,
        }
    }
}

/// Overrides for one step in a [`ResumeRequest`] or a [`RerunRequest`].
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = StepOverride)]
pub struct StepOverrideInput {
    /// Merged into the step's parameters.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<serde_json::Map<String, Value>>,
    /// A registered tool id.
    #[serde(default)]
    pub tool: Option<String>,
}

impl From<ResumeRequest> for Resume {
    fn from(r: ResumeRequest) -> Self {
        Resume {
            plan: r.plan,
            step_overrides: r
                .step_overrides
                .into_iter()
                .map(|(k, o)| (k, o.into()))
                .collect(),
            bulk_action_id: None,
        }
    }
}

/// The tenant of task `id`, if the caller's tenant sees it (404 otherwise); for the routes
/// that check their body first ([`KnownTask`] checks before it).
async fn own_task(st: &AppState, tenancy: &Tenancy, id: Uuid) -> Result<String, ApiError> {
    let tenant = st.store.task_tenant(id).await?;
    tenancy.owns(&tenant, format_args!("task {id}"))?;
    Ok(tenant)
}
