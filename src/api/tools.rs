//! `/tools`: the tool registry.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::ApiPath;
use super::auth::Tenancy;
use super::schemas::{BadBody, BadUri, Conflict, Guarded, Missing};
use super::views::{self, ToolView};
use super::{ApiError, ApiJson, AppState};
use crate::domain::circuit::BreakerSpec;
use crate::domain::recovery::RetrySpec;
use crate::domain::tool::ToolDef;
use crate::store::tools::NewTool;

/// `POST /tools`: an HTTP tool (CONTRACT.md "HTTP tools").
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({
    "id": "summarize",
    "description": "Summarise a text",
    "endpoint": "https://tools.example.com/summarize",
    "timeout_ms": 30000,
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "output_schema": {"type": "object", "properties": {"summary": {"type": "string"}}},
    "alternatives": ["echo"],
    "max_concurrency": 4,
    "rate_limit_per_sec": 10.0,
    "rate_limit_burst": 5,
    "retry": {"max_attempts": 5, "initial_interval_ms": 500, "backoff_coefficient": 2.0, "max_interval_ms": 30000, "max_elapsed_secs": 300},
    "circuit_breaker": {"failure_threshold": 5, "cool_down_secs": 30}
})))]
pub(super) struct ToolInput {
    #[schema(pattern = "^[A-Za-z0-9_.:-]{1,128}$")]
    id: String,
    /// Defaults to the id.
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: String,
    /// An absolute http(s) URL the workers POST the call to.
    #[schema(format = "uri")]
    endpoint: String,
    /// Per call (default 30000).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 3600000)]
    timeout_ms: Option<i32>,
    /// JSON Schema of the call's parameters (default `{"type":"object"}`), checked before
    /// every call.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    input_schema: Option<Value>,
    /// JSON Schema a successful output must match (absent or null: any output); a mismatch
    /// fails the attempt with category `output_mismatch`.
    #[serde(default)]
    #[schema(schema_with = super::schemas::optional_json_schema)]
    output_schema: Option<Value>,
    #[serde(default)]
    output_params: Vec<String>,
    /// Tools a retry may switch to.
    #[serde(default)]
    alternatives: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    /// At most this many steps of the tool at once, fleet-wide (null: no limit).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100000)]
    max_concurrency: Option<i32>,
    /// Steps started per second, fleet-wide token bucket (null: no limit).
    #[serde(default)]
    #[schema(exclusive_minimum = 0, maximum = 1000000)]
    rate_limit_per_sec: Option<f64>,
    /// Token-bucket size for `rate_limit_per_sec` (default 1).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100000)]
    rate_limit_burst: Option<i32>,
    /// How the tool's failed calls are retried (absent or null: the workers' defaults).
    #[serde(default)]
    retry: Option<RetrySpec>,
    /// The tool's fleet-wide circuit breaker (absent or null: the workers' defaults).
    #[serde(default)]
    circuit_breaker: Option<BreakerSpec>,
    /// Every call of the tool waits for a person's approval first (`GET /waits`); an approver
    /// may edit its parameters.
    #[serde(default)]
    requires_approval: bool,
    /// `sync` (default): the answer is the output. `async`: the call's body carries a
    /// `callback_url`; a 2xx parks the step, which the tool completes, fails or extends by
    /// `POST {callback_url}/complete`, `/fail` or `/heartbeat`.
    #[serde(default)]
    #[schema(schema_with = super::schemas::tool_mode)]
    mode: Option<String>,
    /// Headers of every call: `{"X-Api-Key": "${secret.search_key}"}` — a value is literal
    /// text, or names secrets (`PUT /secrets/{name}`) that the worker fills in at call time.
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    /// An absolute http(s) URL the workers POST `{tool, task_id, step_id, attempt}` to when a
    /// call in flight is cancelled (its task was cancelled); the call itself is aborted.
    #[serde(default)]
    #[schema(format = "uri")]
    cancel_url: Option<String>,
    /// Rules by which a 2xx answer's body says the call failed (at most 16): a rule matches
    /// when the value at its `pointer` equals `equals`, or is there (`present`, the default) or
    /// not (`present: false`). The well-known envelopes (`{"ok": false}`, a top-level `errors`
    /// list) are read without rules.
    #[serde(default)]
    #[schema(max_items = 16)]
    failure_when: Vec<crate::domain::envelope::FailureRule>,
}

/// An absolute http(s) URL that the outbound policy does not refuse as a literal address (a
/// name is checked when a call resolves it).
fn checked_url(st: &AppState, field: &str, raw: &str) -> Result<(), ApiError> {
    let url = reqwest::Url::parse(raw)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .ok_or_else(|| ApiError::validation(format!("{field} must be an absolute http(s) URL")))?;
    st.outbound
        .check_url(&url)
        .map_err(|b| ApiError::validation(format!("{field}: {b}")))
}

/// Largest `max_concurrency` and `rate_limit_burst` accepted.
const MAX_LIMIT: i32 = 100_000;

/// `(max_concurrency, rate_limit_per_sec, rate_limit_burst)`, checked.
fn limits(t: &ToolInput) -> Result<(Option<i32>, Option<f64>, i32), ApiError> {
    if let Some(n) = t.max_concurrency
        && !(1..=MAX_LIMIT).contains(&n)
    {
        return Err(ApiError::validation(format!(
            "max_concurrency must be between 1 and {MAX_LIMIT} (or null for no limit)"
        )));
    }
    if let Some(r) = t.rate_limit_per_sec
        && !(r.is_finite() && r > 0.0 && r <= 1_000_000.0)
    {
        return Err(ApiError::validation(
            "rate_limit_per_sec must be a number above 0 and at most 1000000 (or null for no limit)",
        ));
    }
    let burst = t.rate_limit_burst.unwrap_or(1);
    if !(1..=MAX_LIMIT).contains(&burst) {
        return Err(ApiError::validation(format!(
            "rate_limit_burst must be between 1 and {MAX_LIMIT}"
        )));
    }
    Ok((t.max_concurrency, t.rate_limit_per_sec, burst))
}

/// A tool's or a template's id: 1-128 letters, digits, `_`, `.`, `:` or `-`.
pub(super) fn check_id(id: &str) -> Result<(), ApiError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(ApiError::validation(
            "id must be 1-128 letters, digits, '_', '.', ':' or '-'",
        ))
    }
}

/// Register an HTTP tool (admin).
#[utoipa::path(post, path = "/tools", operation_id = "create_tool", tag = "tools", security(("bearer" = [])),
    request_body = ToolInput,
    responses(
        (status = 201, description = "registered", body = ToolView, links(
            ("get" = (operation_id = "get_tool", parameters(("id" = "$response.body#/id")))),
            ("delete" = (operation_id = "delete_tool", parameters(("id" = "$response.body#/id")))),
        )),
        Conflict, BadBody, Guarded,
    ),
)]
pub(super) async fn create(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiJson(t): ApiJson<ToolInput>,
) -> Result<Response, ApiError> {
    check_id(&t.id)?;
    checked_url(&st, "endpoint", &t.endpoint)?;
    if let Some(c) = &t.cancel_url {
        checked_url(&st, "cancel_url", c)?;
    }
    let timeout_ms = t.timeout_ms.unwrap_or(30_000);
    if !(1..=3_600_000).contains(&timeout_ms) {
        return Err(ApiError::validation(
            "timeout_ms must be between 1 and 3600000",
        ));
    }
    let (max_concurrency, rate_limit_per_sec, rate_limit_burst) = limits(&t)?;
    check_headers(&t.headers)?;
    let mode = match t.mode.as_deref() {
        None | Some("sync") => "sync".to_string(),
        Some("async") => "async".to_string(),
        Some(m) => {
            return Err(ApiError::validation(format!(
                "mode must be sync or async, not {m:?}"
            )));
        }
    };
    let (input_schema, output_schema) = schemas(t.input_schema, t.output_schema)?;
    if t.alternatives.contains(&t.id) {
        return Err(ApiError::validation("a tool cannot be its own alternative"));
    }
    if let Some(p) = t.retry.as_ref().and_then(RetrySpec::problem) {
        return Err(ApiError::validation(p));
    }
    if let Some(p) = t.circuit_breaker.as_ref().and_then(BreakerSpec::problem) {
        return Err(ApiError::validation(p));
    }
    if let Some(p) = crate::domain::envelope::rules_problem(&t.failure_when) {
        return Err(ApiError::validation(p));
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
            output_schema,
            output_params: t.output_params,
            alternatives: t.alternatives,
            tags: t.tags,
            max_concurrency,
            rate_limit_per_sec,
            rate_limit_burst,
            retry: t.retry,
            circuit_breaker: t.circuit_breaker,
            requires_approval: t.requires_approval,
            mode,
            headers: t.headers,
            tenant: tenancy.home,
            cancel_url: t.cancel_url,
            failure_when: t.failure_when,
        })
        .await?;
    Ok((StatusCode::CREATED, Json(views::tool(&row, None))).into_response())
}

/// A tool's headers: valid names and printable values whose `${secret.NAME}` references name
/// secrets; at most 50, each value at most 4096 bytes.
fn check_headers(headers: &std::collections::BTreeMap<String, String>) -> Result<(), ApiError> {
    for (name, value) in headers {
        let ok_name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok();
        let ok_value = reqwest::header::HeaderValue::from_str(value).is_ok();
        let refs_ok = crate::secretbox::references(value)
            .iter()
            .all(|r| super::secrets::check_secret_name(r).is_ok());
        if !ok_name || !ok_value || !refs_ok || headers.len() > 50 || value.len() > 4096 {
            return Err(ApiError::validation(format!(
                "header {name:?} is not a valid header (a name, and a value of printable text whose ${{secret.NAME}} references name secrets)"
            )));
        }
    }
    Ok(())
}

/// A tool's input schema (an object, `{"type": "object"}` when not given) and output schema
/// (an object or a boolean, if any), each a valid JSON Schema.
fn schemas(
    input: Option<Value>,
    output: Option<Value>,
) -> Result<(Value, Option<Value>), ApiError> {
    let input_schema = input.unwrap_or_else(|| json!({"type": "object"}));
    if !input_schema.is_object() {
        return Err(ApiError::validation("input_schema must be a JSON object"));
    }
    crate::domain::schema::check(&input_schema)
        .map_err(|e| ApiError::validation(format!("input_schema: {e}")))?;
    let output_schema = output.filter(|s| !s.is_null());
    if let Some(s) = &output_schema {
        if !(s.is_object() || s.is_boolean()) {
            return Err(ApiError::validation(
                "output_schema must be a JSON Schema (an object or a boolean)",
            ));
        }
        crate::domain::schema::check(s)
            .map_err(|e| ApiError::validation(format!("output_schema: {e}")))?;
    }
    Ok((input_schema, output_schema))
}

/// `?after=&limit=` of a registry list, in id order (keyset pagination).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// Only entries whose id sorts after this one.
    after: Option<String>,
    /// At most this many entries (default 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<i64>,
    /// An admin key: only this tenant's entries (default: every tenant's); other keys see
    /// their own tenant's only. Read by the key check ([`super::auth::Tenancy`]).
    #[param(pattern = "^[A-Za-z0-9_.-]{1,64}$")]
    #[allow(dead_code)]
    tenant: Option<String>,
}

/// The `{id}` of a registry route (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct RegistryPath {
    /// A tool or template id.
    id: String,
}

impl ListQuery {
    /// `(after, limit)`, the limit defaulted and checked.
    pub(super) fn checked(self) -> Result<(Option<String>, i64), ApiError> {
        let limit = self.limit.unwrap_or(super::input::MAX_PAGE);
        if !(1..=super::input::MAX_PAGE).contains(&limit) {
            return Err(ApiError::bad_request(format!(
                "limit must be between 1 and {}",
                super::input::MAX_PAGE
            )));
        }
        Ok((self.after, limit))
    }
}

/// All tools (built-in and HTTP), in id order.
#[utoipa::path(get, path = "/tools", operation_id = "list_tools", tag = "tools", security(("bearer" = [])), params(ListQuery),
    responses((status = 200, description = "tools", body = Vec<ToolView>), BadUri, Guarded),
)]
pub(super) async fn list(
    State(st): State<AppState>,
    tenancy: Tenancy,
    q: Result<axum::extract::Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<ToolView>>, ApiError> {
    let (after, limit) = super::input::query(q)?.checked()?;
    let tools = st
        .store
        .list_tools(tenancy.filter(), after.as_deref(), limit)
        .await?;
    let circuits = st.store.tool_circuits().await?;
    let circuit_of = |id: &str| {
        circuits
            .iter()
            .find(|(t, ..)| t == id)
            .map(|(_, c, now)| (c, *now))
    };
    Ok(Json(
        tools
            .iter()
            .map(|t| views::tool(t, circuit_of(&t.id)))
            .collect(),
    ))
}

/// One tool.
#[utoipa::path(get, path = "/tools/{id}", operation_id = "get_tool", tag = "tools", security(("bearer" = [])),
    params(RegistryPath),
    responses((status = 200, description = "tool", body = ToolView), Missing, BadUri, Guarded),
)]
pub(super) async fn get(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ToolView>, ApiError> {
    let tool = owned(&st, &tenancy, &id).await?;
    let circuit = st.store.tool_circuit(&id).await?;
    Ok(Json(views::tool(
        &tool,
        circuit.as_ref().map(|(c, now)| (c, *now)),
    )))
}

/// Delete an HTTP tool (admin; built-ins cannot be deleted).
#[utoipa::path(delete, path = "/tools/{id}", operation_id = "delete_tool", tag = "tools", security(("bearer" = [])),
    params(RegistryPath),
    responses((status = 204, description = "deleted"), Missing, Conflict, BadUri, Guarded),
)]
pub(super) async fn delete(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    owned(&st, &tenancy, &id).await?;
    st.store.delete_tool(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Tool `id`, if the caller's tenant may use it (its own, or a built-in; 404 otherwise).
async fn owned(st: &AppState, tenancy: &Tenancy, id: &str) -> Result<ToolDef, ApiError> {
    let tool = st.store.get_tool(id).await?;
    if tool.kind != "builtin" {
        tenancy.owns(&tool.tenant, format_args!("tool {id:?}"))?;
    }
    Ok(tool)
}

/// Pause a tool (operator): the claim starts none of its steps until it is resumed. They wait
/// queued (no attempt, no retry spent) and count in the queue per tool; calls already running
/// finish. A built-in is every tenant's: only an admin pauses one.
#[utoipa::path(post, path = "/tools/{id}/pause", operation_id = "pause_tool", tag = "tools", security(("bearer" = [])),
    params(RegistryPath),
    responses((status = 200, description = "paused", body = ToolView), Missing, BadUri, Guarded),
)]
pub(super) async fn pause(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ToolView>, ApiError> {
    set_paused(&st, &tenancy, &id, true).await
}

/// Resume a paused tool (operator): its queued steps are claimed again, in their places.
#[utoipa::path(post, path = "/tools/{id}/resume", operation_id = "resume_tool", tag = "tools", security(("bearer" = [])),
    params(RegistryPath),
    responses((status = 200, description = "resumed", body = ToolView), Missing, BadUri, Guarded),
)]
pub(super) async fn resume(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ToolView>, ApiError> {
    set_paused(&st, &tenancy, &id, false).await
}

async fn set_paused(
    st: &AppState,
    tenancy: &Tenancy,
    id: &str,
    paused: bool,
) -> Result<Json<ToolView>, ApiError> {
    let tool = owned(st, tenancy, id).await?;
    if tool.kind == "builtin" && !tenancy.admin {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "tool {id:?} is built in, every tenant's: only an admin key pauses or resumes it"
            ),
        ));
    }
    let tool = st.store.set_tool_paused(id, paused).await?;
    let circuit = st.store.tool_circuit(id).await?;
    Ok(Json(views::tool(
        &tool,
        circuit.as_ref().map(|(c, now)| (c, *now)),
    )))
}
