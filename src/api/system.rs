//! Statistics, the OpenAPI document, health, readiness and metrics.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::auth::Tenancy;
use super::schemas::{BadUri, Guarded, Internal, NotReady, TenantScoped};
use super::views::{ActivityView, Health, RecoveryStatsView, StatsView, WorkerView};
use super::{ApiError, AppState};

/// Task and step counts by status.
#[utoipa::path(get, path = "/stats", operation_id = "stats", tag = "system", security(("bearer" = [])),
    params(super::schemas::TenantParam),
    responses((status = 200, description = "counts", body = StatsView), BadUri, Guarded),
)]
pub(super) async fn stats(
    State(st): State<AppState>,
    tenancy: Tenancy,
) -> Result<Json<StatsView>, ApiError> {
    let (tasks, steps) = st.store.stats(tenancy.filter()).await?;
    Ok(Json(StatsView { tasks, steps }))
}

/// The recovery views (docs/sql-reporting.md): the caller's tenant's work (an admin's key:
/// every tenant's, or `?tenant=`'s).
#[utoipa::path(get, path = "/stats/recovery", operation_id = "recovery_stats", tag = "system", security(("bearer" = [])),
    params(super::schemas::TenantParam),
    responses((status = 200, description = "views", body = RecoveryStatsView), BadUri, Guarded),
)]
pub(super) async fn recovery_stats(
    State(st): State<AppState>,
    tenancy: Tenancy,
) -> Result<Json<RecoveryStatsView>, ApiError> {
    use crate::store::reports::ReportView;
    let mut out = RecoveryStatsView::default();
    for (view, rows) in st.store.reports(tenancy.filter()).await? {
        match view {
            ReportView::RecoveryByTool => out.recovery_by_tool = rows,
            ReportView::RecoveryByCategory => out.recovery_by_category = rows,
            ReportView::RecoveryByTier => out.recovery_by_tier = rows,
            ReportView::RecoveryByAction => out.recovery_by_action = rows,
            ReportView::RecoveryByTemplate => out.recovery_by_template = rows,
            ReportView::TaskOutcomes => out.task_outcomes = rows,
            ReportView::RecoveryCostByTier => out.recovery_cost_by_tier = rows,
            ReportView::CostByTemplateDay => out.cost_by_template_day = rows,
            ReportView::CostByToolDay => out.cost_by_tool_day = rows,
        }
    }
    Ok(Json(out))
}

/// Where the activity's counts of the last hour's tasks stop (per status).
const RECENT_CAP: i64 = 100_000;

/// The last hour's work and the queue now.
///
/// Attempts finished per minute over the last hour (succeeded and failed), each tool's attempts,
/// failures and durations over that hour, ready and running steps per tool with the oldest
/// ready step's wait, the live workers with what they hold, unfinished tasks by status, and
/// the tasks submitted in the last hour by status (each count stops above `recent_cap`).
/// Its cost follows the last hour's work and the live queue, not the history.
#[utoipa::path(get, path = "/stats/activity", operation_id = "activity", tag = "system", security(("bearer" = [])),
    params(super::schemas::TenantParam),
    responses((status = 200, description = "activity", body = ActivityView), BadUri, Guarded),
)]
pub(super) async fn activity(
    State(st): State<AppState>,
    tenancy: Tenancy,
) -> Result<Json<ActivityView>, ApiError> {
    let read = st.store.activity(60, RECENT_CAP, tenancy.filter()).await?;
    Ok(Json(super::views::activity(read, RECENT_CAP)))
}

/// The live worker fleet: workers not stopped whose last heartbeat is younger than their lease.
#[utoipa::path(get, path = "/workers", operation_id = "list_workers", tag = "system", security(("bearer" = [])),
    responses((status = 200, description = "workers, longest running first", body = Vec<WorkerView>), Internal, Guarded),
)]
pub(super) async fn workers(State(st): State<AppState>) -> Result<Json<Vec<WorkerView>>, ApiError> {
    let rows = st.store.live_workers().await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}

/// Liveness.
#[utoipa::path(get, path = "/health", operation_id = "health", tag = "system",
    responses((status = 200, description = "ok", body = Health)),
)]
pub(super) async fn health() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// Readiness: database reachable, migrations applied.
#[utoipa::path(get, path = "/ready", operation_id = "ready", tag = "system",
    responses((status = 200, description = "ready", body = Health), NotReady),
)]
pub(super) async fn ready(State(st): State<AppState>) -> Response {
    match st.store.ready().await {
        Ok(true) => Json(Health { status: "ready" }).into_response(),
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

/// `GET /metrics?tenant=`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct MetricsQuery {
    /// Only this tenant's tasks, steps and circuits in the database gauges (the process's own
    /// histograms and counters stay the process's). Needs an API key that sees the tenant (its
    /// own, or an admin's).
    #[param(pattern = "^[A-Za-z0-9_.-]{1,64}$")]
    tenant: Option<String>,
}

/// Prometheus metrics.
///
/// Prometheus text: what this process recorded (the request histogram; in `--dev`, the
/// in-process worker's histograms and counters too — a worker process serves its own on
/// `[worker] metrics_port`), then the gauges of one bounded statement whatever the history
/// holds.
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "system", params(MetricsQuery),
    security((), ("bearer" = [])),
    responses((status = 200, description = "text exposition", content_type = "text/plain", body = String), BadUri, TenantScoped),
)]
pub(super) async fn metrics(
    State(st): State<AppState>,
    headers: axum::http::HeaderMap,
    q: Result<axum::extract::Query<MetricsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let axum::extract::Query(q) = q.map_err(|e| ApiError::bad_request(e.body_text()))?;
    if let Some(t) = &q.tenant {
        crate::domain::tenant::check(t).map_err(ApiError::bad_request)?;
        // one tenant's counts and tool ids are that tenant's to read
        if let Err(refused) = super::auth::sees_tenant(&st, &headers, t).await {
            return Ok(refused);
        }
    }
    let rows = st.store.metrics_gauges(q.tenant.as_deref()).await?;
    let mut out = crate::metrics::render_with(&st.store);
    out.push_str(&gauges_text(&rows));
    Ok(([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], out).into_response())
}

/// The database gauges: every unfinished task status (zero when none), ready and running
/// steps per tool, the oldest ready step's wait per tool, the live workers and what they hold,
/// the age of the oldest open transaction.
fn gauges_text(rows: &[crate::store::reads::GaugeRow]) -> String {
    use crate::domain::status::TaskStatus;
    use std::fmt::Write;
    let mut out = String::new();
    let mut tasks: std::collections::BTreeMap<&str, i64> = TaskStatus::ALL
        .iter()
        .filter(|s| !s.is_terminal())
        .map(|s| (s.as_str(), 0))
        .collect();
    let (mut steps, mut oldest, mut workers) = (String::new(), String::new(), (0, 0.0));
    let mut oldest_tx = 0.0;
    let (mut circuits, mut outages) = (String::new(), String::new());
    for r in rows {
        match r.family.as_str() {
            "tasks" => {
                tasks.insert(r.status.as_str(), r.n);
            }
            "steps" => {
                let tool = escape(&r.tool);
                let _ = writeln!(
                    steps,
                    "trellis_steps{{status=\"{}\",tool=\"{tool}\"}} {}",
                    r.status, r.n
                );
                if r.status == "ready" {
                    let _ = writeln!(
                        oldest,
                        "trellis_ready_oldest_seconds{{tool=\"{tool}\"}} {:.3}",
                        r.oldest_secs
                    );
                }
            }
            "workers" => workers = (r.n, r.oldest_secs),
            "db" => oldest_tx = r.oldest_secs,
            "circuits" => {
                let tool = escape(&r.tool);
                let open = u8::from(r.status != "closed");
                let _ = writeln!(
                    circuits,
                    "trellis_tool_circuit_open{{tool=\"{tool}\",state=\"{}\"}} {open}",
                    r.status
                );
                let _ = writeln!(
                    outages,
                    "trellis_tool_circuit_consecutive_failures{{tool=\"{tool}\"}} {}",
                    r.n
                );
            }
            _ => {}
        }
    }
    out.push_str("# HELP trellis_tasks Unfinished tasks by status.\n# TYPE trellis_tasks gauge\n");
    for (s, n) in tasks {
        let _ = writeln!(out, "trellis_tasks{{status=\"{s}\"}} {n}");
    }
    out.push_str(
        "# HELP trellis_steps Ready and running steps by tool.\n# TYPE trellis_steps gauge\n",
    );
    out.push_str(&steps);
    out.push_str("# HELP trellis_ready_oldest_seconds How long the oldest ready step of each tool has waited.\n# TYPE trellis_ready_oldest_seconds gauge\n");
    out.push_str(&oldest);
    let _ = write!(
        out,
        "# HELP trellis_workers Live workers.\n# TYPE trellis_workers gauge\ntrellis_workers {}\n\
         # HELP trellis_workers_in_flight Steps and decisions the live workers hold.\n# TYPE trellis_workers_in_flight gauge\ntrellis_workers_in_flight {}\n",
        workers.0, workers.1
    );
    let _ = write!(
        out,
        "# HELP trellis_db_oldest_transaction_seconds Age of the oldest open transaction on the database (any session): dead rows younger than it cannot be vacuumed.\n# TYPE trellis_db_oldest_transaction_seconds gauge\ntrellis_db_oldest_transaction_seconds {oldest_tx:.3}\n"
    );
    // only tools that ever failed with an outage or asked to wait have a circuit row
    out.push_str("# HELP trellis_tool_circuit_open Whether a tool's fleet-wide circuit breaker is open or half open (1) or closed (0).\n# TYPE trellis_tool_circuit_open gauge\n");
    out.push_str(&circuits);
    out.push_str("# HELP trellis_tool_circuit_consecutive_failures A tool's outages in a row across the fleet.\n# TYPE trellis_tool_circuit_consecutive_failures gauge\n");
    out.push_str(&outages);
    out
}

/// A Prometheus label value: backslash, quote and newline escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
