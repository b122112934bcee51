//! The REST API (CONTRACT.md). `app(state)` builds the router; [`crate::startup`] serves it,
//! and tests drive it with `oneshot` or a real listener. [`views`] holds every response shape
//! clients see, and the request types live beside their handlers.
//!
//! - one module per resource: `tasks`, `events` (JSON and SSE), `tools`, `templates`,
//!   `schedules`, `waits` (approvals, events in), `webhooks`, `bulk`, `secrets`, `agent` (an
//!   agent step's turns),
//!   `mcp_servers`, `key_limits`, `tenants`, `prices`, `system` (stats, health, metrics);
//! - `openapi` (the document, from the handlers' types, and the route serving it); the leaves
//!   the resources share: `schemas` (statuses, parameters and error answers in the document),
//!   `rules` (input rules: limits, priorities, plan size, webhook targets), `error`
//!   (`ApiError`), `input` (hostile input), `auth` (keys and roles); `answers` (answers
//!   checked against the document, in tests);
//! - `mcp` (Trellis as an MCP server), `dashboard` (the page), `docs` (Swagger UI).
//!
//! Architecture invariant: validation happens before the first write, so a rejected request
//! changes nothing; store errors become JSON errors without SQL text ([`ApiError`]).

use axum::extract::{DefaultBodyLimit, FromRequest, Request};
use axum::routing::get;
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::config::Settings;
use crate::domain::Limits;
use crate::store::Store;

mod agent;
pub mod answers;
pub mod auth;
mod bulk;
mod dashboard;
mod docs;
mod error;
mod events;
pub mod input;
mod key_limits;
mod mcp;
mod mcp_servers;
pub mod openapi;
mod prices;
mod rules;
mod schedules;
mod schemas;
mod secrets;
mod system;
mod tasks;
mod templates;
mod tenants;
mod tools;
pub mod views;
mod waits;
mod webhooks;

pub use error::ApiError;
pub use openapi::document as openapi_document;
pub use tasks::{RerunRequest, ResumeRequest, StepOverrideInput};

pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// Request body cap of `POST /tasks/batch` (up to 1000 submit bodies).
pub const MAX_BATCH_BODY_BYTES: usize = 8 * 1024 * 1024;

/// What every handler gets; cloned for each request, so everything in it is cheap to clone.
#[derive(Debug, Clone)]
pub struct AppState {
    pub store: Store,
    pub settings: std::sync::Arc<Settings>,
    announcer: Announcer,
    auth: auth::Auth,
    outbound: crate::net::Outbound,
}

impl AppState {
    /// Must be called inside a tokio runtime (it starts the submit announcer).
    pub fn new(store: Store, settings: Settings) -> Self {
        let announcer = Announcer::start(store.clone());
        let auth = auth::Auth::from_settings(&settings.auth);
        let outbound = crate::net::Outbound::from_settings(&settings.tools);
        Self {
            store,
            settings: std::sync::Arc::new(settings),
            announcer,
            auth,
            outbound,
        }
    }

    pub(crate) fn default_limits(&self) -> Limits {
        Limits::from_settings(&self.settings)
    }
}

/// Wakes the workers after submits, off the submit's transaction. A `NOTIFY` inside a
/// transaction holds PostgreSQL's notification lock until that transaction's commit is flushed,
/// so concurrent submits that notify commit one at a time; announcing after the commit, from one
/// task, lets submits commit together (group commit) and sends one notification per burst
/// (coalesced while the previous one is being sent). If the process dies in between, workers
/// find the tasks at their poll interval.
#[derive(Debug, Clone)]
struct Announcer {
    /// Capacity one: a signal sent while one is pending is merged into it. The task ends when
    /// the last `AppState` clone is dropped.
    wake: tokio::sync::mpsc::Sender<()>,
    decisions: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Announcer {
    fn start(store: Store) -> Self {
        let (wake, mut woken) = tokio::sync::mpsc::channel(1);
        let a = Self {
            wake,
            decisions: Default::default(),
        };
        let decisions = a.decisions.clone();
        tokio::spawn(async move {
            while woken.recv().await.is_some() {
                let d = decisions.swap(false, std::sync::atomic::Ordering::AcqRel);
                if let Err(e) = store.announce_ready(d).await {
                    tracing::warn!(error = %e, "could not notify workers; they will poll");
                }
            }
        });
        a
    }

    /// New ready work (and, with `decisions`, a pending decision) was committed.
    fn ready(&self, decisions: bool) {
        if decisions {
            self.decisions
                .store(true, std::sync::atomic::Ordering::Release);
        }
        // full: a signal is already pending, and it will carry this one
        let _ = self.wake.try_send(());
    }
}

pub fn app(state: AppState) -> Router {
    use axum::middleware::from_fn_with_state;
    let (v1, root) = openapi::routes();
    let v1 = v1.layer(from_fn_with_state(state.clone(), auth::require_key));
    let (router, _) = openapi::assemble(v1, root).split_for_parts();
    // the MCP endpoint calls the REST routes above, with the caller's key
    let rest = router.clone().with_state(state.clone());
    let mcp = {
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        };
        let service: StreamableHttpService<mcp::TrellisMcp, LocalSessionManager> =
            StreamableHttpService::new(
                move || Ok(mcp::TrellisMcp { rest: rest.clone() }),
                Default::default(),
                // every request carries an API key (checked below), which a DNS-rebinding page
                // cannot: any Host is accepted, as for the REST routes
                StreamableHttpServerConfig::default().disable_allowed_hosts(),
            );
        Router::new()
            .nest_service("/mcp", service)
            .layer(from_fn_with_state(state.clone(), auth::require_any_key))
    };
    let router = router
        .merge(mcp.with_state(state.clone()))
        .route("/", get(dashboard::index))
        .route("/ui/{file}", get(dashboard::asset))
        .route("/docs", get(docs::redirect))
        .route("/docs/", get(docs::index))
        .route("/docs/openapi.json", get(openapi::serve))
        .route("/docs/{file}", get(docs::asset))
        .fallback(not_found)
        .layer(axum::middleware::from_fn(input::reject_nul_in_uri))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state);
    request_log(router)
}

/// The request log: every request gets an `x-request-id` (the client's, or a new UUID), echoed
/// in the response and carried by a `request` span around everything the request logs; one
/// line per response (target `trellis::access`: method, path, status, latency).
fn request_log(router: Router) -> Router {
    use axum::http::{HeaderName, Request};
    use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
    use tower_http::trace::TraceLayer;
    const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
    let trace = TraceLayer::new_for_http()
        .make_span_with(|req: &Request<_>| {
            let id = req
                .headers()
                .get(&X_REQUEST_ID)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            tracing::info_span!(
                "request",
                request_id = %id,
                method = %req.method(),
                path = %req.uri().path(),
            )
        })
        .on_request(())
        .on_response(
            |res: &axum::http::Response<_>, latency: std::time::Duration, _: &tracing::Span| {
                tracing::info!(
                    target: "trellis::access",
                    status = res.status().as_u16(),
                    latency_ms = latency.as_secs_f64() * 1000.0,
                    "response"
                );
            },
        )
        .on_failure(());
    crate::metrics::handle();
    router
        .layer(axum::middleware::from_fn(record_request))
        .layer(PropagateRequestIdLayer::new(X_REQUEST_ID))
        .layer(trace)
        .layer(SetRequestIdLayer::new(X_REQUEST_ID, MakeRequestUuid))
}

/// Counts every answer by method and status and times it by method (`trellis_http_…`).
async fn record_request(req: Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::http::Method;
    let method = match *req.method() {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        _ => "other",
    };
    let began = std::time::Instant::now();
    let res = next.run(req).await;
    metrics::histogram!(crate::metrics::HTTP_SECONDS, "method" => method)
        .record(began.elapsed().as_secs_f64());
    metrics::counter!(crate::metrics::HTTP_REQUESTS, "method" => method,
        "status" => status_label(res.status()))
    .increment(1);
    res
}

/// A status as a metric label: the codes this API answers with need no allocation.
fn status_label(status: axum::http::StatusCode) -> metrics::SharedString {
    let code: &'static str = match status.as_u16() {
        200 => "200",
        201 => "201",
        202 => "202",
        204 => "204",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        409 => "409",
        413 => "413",
        415 => "415",
        422 => "422",
        429 => "429",
        500 => "500",
        503 => "503",
        other => return metrics::SharedString::from(other.to_string()),
    };
    metrics::SharedString::const_str(code)
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
        let Json(v) = Json::<serde_json::Value>::from_request(req, state).await?;
        // every body is an object: serde would take an array for a struct whose fields are all
        // optional (`[null, null]` as `{}`)
        if !v.is_object() {
            return Err(ApiError::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                "the body must be a JSON object",
            ));
        }
        input::typed(v).map(ApiJson)
    }
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route")
}

/// `Path<T>` whose rejection is our JSON error: a segment that is not what the route takes (a
/// malformed percent-encoding such as `%FF`, which is not UTF-8) is a 400 that says so.
pub struct ApiPath<T>(pub T);

impl<S, T> axum::extract::FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(v)| ApiPath(v))
            .map_err(|e| ApiError::bad_request(e.body_text()))
    }
}

/// A task id from the route's `{id}`; a malformed one is a 400 that names it.
pub struct TaskId(pub Uuid);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for TaskId {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let ApiPath(raw) = ApiPath::<String>::from_request_parts(parts, state).await?;
        task_id(&raw).map(TaskId)
    }
}

/// A task id from the route's `{id}` that names an existing task of the caller's tenant (404
/// otherwise: another tenant's task is not there for this caller).
pub struct KnownTask(pub Uuid);

impl axum::extract::FromRequestParts<AppState> for KnownTask {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let TaskId(id) = TaskId::from_request_parts(parts, state).await?;
        let tenancy = auth::Tenancy::from_request_parts(parts, state).await?;
        let tenant = state.store.task_tenant(id).await?;
        tenancy.owns(&tenant, format_args!("task {id}"))?;
        Ok(KnownTask(id))
    }
}

fn task_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw)
        .map_err(|_| ApiError::bad_request(format!("{raw:?} is not a task id (UUID)")))
}
