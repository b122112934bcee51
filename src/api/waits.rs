//! Waits: the approvals inbox (`/waits`), events that resolve `wait_event` steps (`/events`),
//! and async tools' callbacks (`/callbacks/{token}/…`, no API key: the token is the credential,
//! stored only as its SHA-256).

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use sha2::Digest;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::ApiPath;
use super::auth::{Caller, CallerKey, Tenancy};
use super::schemas::{BadBody, BadUri, Conflict, Guarded, Missing};
use super::views::{self, CallbackAccepted, EventsResolved, WaitView};
use super::{ApiError, ApiJson, AppState};
use crate::domain::auth::Role;
use crate::domain::schema::Schema;
use crate::domain::status::WaitStatus;
use crate::domain::wait::{Resolution, WaitKind};
use crate::store::waits::{WaitFilter, WaitRow};

/// `GET /waits`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct WaitQuery {
    /// An admin key: only this tenant's waits (default: every tenant's). Read by the key check.
    #[param(pattern = "^[A-Za-z0-9_.-]{1,64}$")]
    #[allow(dead_code)]
    tenant: Option<String>,
    /// `open`, `resolved`, `expired` or `cancelled`; empty: any.
    #[param(schema_with = wait_status_filter)]
    status: Option<String>,
    /// `approval`, `event`, `callback` or `sleep`; empty: any.
    #[param(schema_with = wait_kind_filter)]
    kind: Option<String>,
    /// Only this task's waits.
    task_id: Option<Uuid>,
    #[param(minimum = 1, maximum = 500, default = 100)]
    limit: Option<i64>,
}

fn wait_status_filter() -> utoipa::openapi::schema::Object {
    enum_or_empty(WaitStatus::ALL.iter().map(|s| s.as_str()))
}

fn wait_kind_filter() -> utoipa::openapi::schema::Object {
    enum_or_empty(WaitKind::ALL.iter().map(|k| k.as_str()))
}

fn enum_or_empty(values: impl Iterator<Item = &'static str>) -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(std::iter::once("").chain(values)))
        .build()
}

/// The waits, newest first: `?status=open&kind=approval` is the approvals inbox.
#[utoipa::path(get, path = "/waits", operation_id = "list_waits", tag = "waits", security(("bearer" = [])),
    params(WaitQuery),
    responses((status = 200, description = "waits", body = Vec<WaitView>), BadUri, Guarded),
)]
pub(super) async fn list(
    State(st): State<AppState>,
    tenancy: Tenancy,
    q: Result<Query<WaitQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<WaitView>>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let status = match q.status.as_deref() {
        None | Some("") => None,
        Some(s) => Some(WaitStatus::parse(s).ok_or_else(|| {
            ApiError::bad_request(format!(
                "unknown status {s:?}; one of open, resolved, expired, cancelled"
            ))
        })?),
    };
    let kind = match q.kind.as_deref() {
        None | Some("") => None,
        Some(k) => Some(WaitKind::parse(k).ok_or_else(|| {
            ApiError::bad_request(format!(
                "unknown kind {k:?}; one of approval, event, callback, sleep"
            ))
        })?),
    };
    let limit = q.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::bad_request("limit must be between 1 and 500"));
    }
    let rows = st
        .store
        .list_waits(&WaitFilter {
            status,
            kind,
            task_id: q.task_id,
            limit,
            tenant: tenancy.filter().map(str::to_owned),
        })
        .await?;
    Ok(Json(rows.iter().map(views::wait).collect()))
}

/// The `{id}` of a wait route (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct WaitPath {
    /// A wait id.
    id: Uuid,
}

fn wait_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw)
        .map_err(|_| ApiError::bad_request(format!("{raw:?} is not a wait id (UUID)")))
}

/// One wait.
#[utoipa::path(get, path = "/waits/{id}", operation_id = "get_wait", tag = "waits", security(("bearer" = [])),
    params(WaitPath),
    responses((status = 200, description = "the wait", body = WaitView), Missing, BadUri, Guarded),
)]
pub(super) async fn get(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(raw): ApiPath<String>,
) -> Result<Json<WaitView>, ApiError> {
    Ok(Json(views::wait(
        &owned(&st, &tenancy, wait_id(&raw)?).await?,
    )))
}

/// Wait `id`, if the caller's tenant sees it (404 otherwise).
async fn owned(st: &AppState, tenancy: &Tenancy, id: Uuid) -> Result<WaitRow, ApiError> {
    let w = st.store.get_wait(id).await?;
    tenancy.owns(&w.tenant, format_args!("wait {id}"))?;
    Ok(w)
}

/// `POST /waits/{id}/approve`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Approve {
    /// An `approval` step: the form's answer (checked against its `form`). A gated call: the
    /// parameters it runs with instead (checked against the tool's `input_schema`; recorded as
    /// the step's overrides).
    #[schema(value_type = Option<Object>)]
    parameters: Option<Value>,
    #[schema(max_length = 4000)]
    comment: Option<String>,
}

/// `POST /waits/{id}/reject`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Reject {
    #[schema(max_length = 4000)]
    comment: Option<String>,
}

/// The open approval `id`, and a check that `role` may decide it.
async fn decidable(
    st: &AppState,
    tenancy: &Tenancy,
    id: Uuid,
    role: Role,
) -> Result<WaitRow, ApiError> {
    let w = owned(st, tenancy, id).await?;
    if w.kind != WaitKind::Approval.as_str() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            format!("wait {id} is a {} wait, not an approval", w.kind),
        ));
    }
    let needed: Role = w
        .role
        .as_deref()
        .and_then(|r| r.parse().ok())
        .unwrap_or(Role::Operator);
    if !role.allows(needed) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("a {role} key may not decide this approval; it needs a {needed} key"),
        ));
    }
    if w.status != WaitStatus::Open {
        return Err(not_open(&w));
    }
    Ok(w)
}

fn not_open(w: &WaitRow) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "conflict",
        format!("wait {} is {}, not open: nothing changed", w.id, w.status),
    )
}

fn comment(c: Option<String>) -> Result<Option<String>, ApiError> {
    match c {
        Some(c) if c.chars().count() > 4000 => Err(ApiError::validation(
            "comment must be at most 4000 characters",
        )),
        c => Ok(c),
    }
}

/// Approve an open approval (the wait's role or higher), optionally with edited parameters.
#[utoipa::path(post, path = "/waits/{id}/approve", operation_id = "approve_wait", tag = "waits",
    security(("bearer" = [])), params(WaitPath), request_body = Approve,
    responses((status = 200, description = "approved", body = WaitView), Missing, Conflict, BadBody, BadUri, Guarded),
)]
pub(super) async fn approve(
    State(st): State<AppState>,
    axum::Extension(Caller(role)): axum::Extension<Caller>,
    axum::Extension(CallerKey(key)): axum::Extension<CallerKey>,
    tenancy: Tenancy,
    ApiPath(raw): ApiPath<String>,
    ApiJson(a): ApiJson<Approve>,
) -> Result<Json<WaitView>, ApiError> {
    let id = wait_id(&raw)?;
    let w = decidable(&st, &tenancy, id, role).await?;
    let comment = comment(a.comment)?;
    if let Some(p) = &a.parameters {
        if !p.is_object() {
            return Err(ApiError::validation("parameters must be an object"));
        }
        check_parameters(&st, &w, p).await?;
    }
    let r = Resolution::Approved {
        parameters: a.parameters,
        comment,
        by_timeout: false,
    };
    match st.store.resolve_wait(id, &r, key).await? {
        Some(row) => Ok(Json(views::wait(&row))),
        None => Err(not_open(&st.store.get_wait(id).await?)),
    }
}

/// Edited parameters must fit what they feed: the approval's form, or the gated tool's schema.
async fn check_parameters(st: &AppState, w: &WaitRow, p: &Value) -> Result<(), ApiError> {
    let schema = match &w.gated_tool {
        Some(tool) => Some(st.store.get_tool(tool).await?.input_schema),
        None => w.form.clone(),
    };
    let Some(schema) = schema else {
        return Ok(());
    };
    // a gated call's parameters are merged over the step's: check the merged result
    let merged = match (&w.gated_tool, &w.parameters) {
        (Some(_), Some(Value::Object(base))) => {
            let mut m = base.clone();
            m.extend(p.as_object().cloned().unwrap_or_default());
            Value::Object(m)
        }
        _ => p.clone(),
    };
    let compiled = Schema::compile(&schema)
        .map_err(|e| ApiError::validation(format!("the wait's schema does not compile: {e}")))?;
    let wrong = compiled.violations(&merged);
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation(format!(
            "parameters do not match the schema: {}",
            wrong.join("; ")
        )))
    }
}

/// Reject an open approval (the wait's role or higher): its step fails with
/// `approval_rejected` and recovery takes over.
#[utoipa::path(post, path = "/waits/{id}/reject", operation_id = "reject_wait", tag = "waits",
    security(("bearer" = [])), params(WaitPath), request_body = Reject,
    responses((status = 200, description = "rejected", body = WaitView), Missing, Conflict, BadBody, BadUri, Guarded),
)]
pub(super) async fn reject(
    State(st): State<AppState>,
    axum::Extension(Caller(role)): axum::Extension<Caller>,
    axum::Extension(CallerKey(key)): axum::Extension<CallerKey>,
    tenancy: Tenancy,
    ApiPath(raw): ApiPath<String>,
    ApiJson(r): ApiJson<Reject>,
) -> Result<Json<WaitView>, ApiError> {
    let id = wait_id(&raw)?;
    decidable(&st, &tenancy, id, role).await?;
    let r = Resolution::Rejected {
        comment: comment(r.comment)?,
    };
    match st.store.resolve_wait(id, &r, key).await? {
        Some(row) => Ok(Json(views::wait(&row))),
        None => Err(not_open(&st.store.get_wait(id).await?)),
    }
}

/// `POST /events`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PostEvent {
    /// The key `wait_event` steps wait for.
    #[schema(min_length = 1, max_length = 500)]
    key: String,
    /// The event's payload: the output of every step it resolves; a wait's `match` must be
    /// contained in it.
    #[schema(value_type = Option<Object>)]
    payload: Option<Value>,
}

/// Post an event: every open `wait_event` wait with this key whose `match` the payload
/// contains is resolved (the payload is its step's output). Kept a while, so a wait registered
/// just after it still finds it.
#[utoipa::path(post, path = "/events", operation_id = "post_event", tag = "waits", security(("bearer" = [])),
    request_body = PostEvent,
    responses((status = 202, description = "recorded", body = EventsResolved), BadBody, Guarded),
)]
pub(super) async fn post_event(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiJson(e): ApiJson<PostEvent>,
) -> Result<(StatusCode, Json<EventsResolved>), ApiError> {
    let key = e.key.as_str();
    if key.is_empty() || key.chars().count() > 500 {
        return Err(ApiError::validation("key must be 1 to 500 characters"));
    }
    let payload = e.payload.unwrap_or_else(|| serde_json::json!({}));
    if !payload.is_object() {
        return Err(ApiError::validation("payload must be an object"));
    }
    let resolved = st.store.post_event(&tenancy.home, key, &payload).await?;
    Ok((StatusCode::ACCEPTED, Json(EventsResolved { resolved })))
}

/// The `{token}` of a callback route (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct TokenPath {
    /// The token of the callback URL the call carried.
    token: String,
}

fn token_hash(token: &str) -> Result<Vec<u8>, ApiError> {
    if token.is_empty() || token.len() > 200 {
        return Err(ApiError::not_found("callback not found"));
    }
    Ok(sha2::Sha256::digest(token.as_bytes()).to_vec())
}

/// `POST /callbacks/{token}/complete`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CallbackComplete {
    /// The step's output.
    #[schema(value_type = Object)]
    output: Option<Value>,
}

/// `POST /callbacks/{token}/fail`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CallbackFail {
    /// As an HTTP tool's error: `{"message", "category", "retryable", "hints"}`.
    #[schema(value_type = Object)]
    error: Value,
}

/// `POST /callbacks/{token}/heartbeat`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CallbackHeartbeat {
    /// The wait lasts this many more seconds from now (default: the worker's
    /// `async_timeout_secs`).
    #[schema(minimum = 1, maximum = 2592000)]
    extend_secs: Option<f64>,
}

async fn callback(
    st: &AppState,
    headers: &axum::http::HeaderMap,
    token: &str,
    r: Resolution,
) -> Result<Json<CallbackAccepted>, ApiError> {
    let hash = token_hash(token)?;
    same_tenant(st, headers, &hash).await?;
    let done = st.store.resolve_callback(&hash, &r).await?;
    Ok(Json(CallbackAccepted {
        accepted: done.is_some(),
        expires_at: None,
    }))
}

/// An async tool's result: its step succeeds with `output`. A duplicate is a no-op
/// (`accepted: false`); an unknown token is a 404.
#[utoipa::path(post, path = "/api/v1/callbacks/{token}/complete", operation_id = "callback_complete",
    tag = "waits", params(TokenPath), request_body = CallbackComplete,
    responses((status = 200, description = "recorded (accepted false: it was resolved before, nothing changed)", body = CallbackAccepted), Missing, BadBody),
)]
pub(super) async fn complete(
    State(st): State<AppState>,
    headers: axum::http::HeaderMap,
    ApiPath(token): ApiPath<String>,
    ApiJson(c): ApiJson<CallbackComplete>,
) -> Result<Json<CallbackAccepted>, ApiError> {
    let output = c.output.unwrap_or(Value::Null);
    callback(&st, &headers, &token, Resolution::Completed { output }).await
}

/// An async tool's failure: its step's attempt fails with `error` and recovery takes over.
#[utoipa::path(post, path = "/api/v1/callbacks/{token}/fail", operation_id = "callback_fail",
    tag = "waits", params(TokenPath), request_body = CallbackFail,
    responses((status = 200, description = "recorded (accepted false: it was resolved before, nothing changed)", body = CallbackAccepted), Missing, BadBody),
)]
pub(super) async fn fail(
    State(st): State<AppState>,
    headers: axum::http::HeaderMap,
    ApiPath(token): ApiPath<String>,
    ApiJson(f): ApiJson<CallbackFail>,
) -> Result<Json<CallbackAccepted>, ApiError> {
    if !f.error.is_object() {
        return Err(ApiError::validation(
            "error must be an object: {\"message\", \"category\", \"retryable\", \"hints\"}",
        ));
    }
    callback(&st, &headers, &token, Resolution::Failed { error: f.error }).await
}

/// An async tool is still working: its wait lasts `extend_secs` more.
#[utoipa::path(post, path = "/api/v1/callbacks/{token}/heartbeat", operation_id = "callback_heartbeat",
    tag = "waits", params(TokenPath), request_body = CallbackHeartbeat,
    responses((status = 200, description = "extended", body = CallbackAccepted), Missing, BadBody),
)]
pub(super) async fn heartbeat(
    State(st): State<AppState>,
    headers: axum::http::HeaderMap,
    ApiPath(token): ApiPath<String>,
    ApiJson(h): ApiJson<CallbackHeartbeat>,
) -> Result<Json<CallbackAccepted>, ApiError> {
    let secs = h
        .extend_secs
        .unwrap_or(st.settings.worker.async_timeout_secs);
    if !(1.0..=crate::domain::wait::MAX_WAIT_SECS).contains(&secs) {
        return Err(ApiError::validation(
            "extend_secs must be between 1 and 2592000",
        ));
    }
    let hash = token_hash(&token)?;
    same_tenant(&st, &headers, &hash).await?;
    let at = st.store.extend_callback(&hash, secs).await?;
    Ok(Json(CallbackAccepted {
        accepted: true,
        expires_at: Some(at),
    }))
}

/// A callback needs no key (its token is the credential), but a caller that presents another
/// tenant's key is told the callback is not there (404), and nothing changes.
async fn same_tenant(
    st: &AppState,
    headers: &axum::http::HeaderMap,
    hash: &[u8],
) -> Result<(), ApiError> {
    let Some(tenant) = super::auth::presented_tenant(st, headers).await? else {
        return Ok(());
    };
    match st.store.callback_tenant(hash).await? {
        Some(t) if t != tenant => Err(ApiError::not_found("callback not found")),
        _ => Ok(()),
    }
}
