//! Statistics, the OpenAPI document, health, readiness and metrics.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{ApiError, AppState};

pub(super) async fn stats(State(st): State<AppState>) -> Result<Json<Value>, ApiError> {
    let (tasks, steps) = st.store.stats().await?;
    Ok(Json(json!({"tasks": tasks, "steps": steps})))
}

/// The four recovery-statistics views (docs/sql-reporting.md).
pub(super) async fn recovery_stats(State(st): State<AppState>) -> Result<Json<Value>, ApiError> {
    let mut out = serde_json::Map::new();
    for view in crate::store::reports::ReportView::ALL {
        out.insert(
            view.name().into(),
            Value::Array(st.store.report(view).await?),
        );
    }
    Ok(Json(Value::Object(out)))
}

/// The live worker fleet: workers not stopped whose heartbeat is younger than their lease.
pub(super) async fn workers(
    State(st): State<AppState>,
) -> Result<Json<Vec<super::views::WorkerView>>, ApiError> {
    let rows = st.store.live_workers().await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}

/// The OpenAPI document (docs/openapi.json, compiled in).
pub const OPENAPI: &str = include_str!("../../docs/openapi.json");

pub(super) async fn openapi(State(st): State<AppState>) -> Response {
    let doc: &'static str = if st.settings.llm.enabled() {
        OPENAPI
    } else {
        OPENAPI_WITHOUT_PLANNER.as_str()
    };
    ([(header::CONTENT_TYPE, "application/json")], doc).into_response()
}

/// The document as a server without a planning brain serves it: a task there needs a plan or
/// a template (a description alone is a 422 `plan_required`), so a request the document
/// describes as valid is one this server accepts.
static OPENAPI_WITHOUT_PLANNER: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let mut doc: Value = serde_json::from_str(OPENAPI).expect("docs/openapi.json is JSON");
    if let Some(submit) = doc.pointer_mut("/components/schemas/SubmitTask") {
        submit["anyOf"] = json!([
            {"required": ["template"]},
            {"required": ["description", "plan"], "not": {"required": ["input"]}}
        ]);
    }
    doc.to_string()
});

pub(super) async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

pub(super) async fn ready(State(st): State<AppState>) -> Response {
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

/// Prometheus text: what this process recorded (the request histogram; in `--dev`, the
/// in-process worker's histograms and counters too — a worker process serves its own on
/// `[worker] metrics_port`), then the gauges of [`crate::store::Store::metrics_gauges`], one
/// bounded statement whatever the history holds.
pub(super) async fn metrics(State(st): State<AppState>) -> Result<Response, ApiError> {
    let rows = st.store.metrics_gauges().await?;
    let mut out = crate::metrics::render();
    out.push_str(&gauges_text(&rows));
    Ok(([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], out).into_response())
}

/// The database gauges: every unfinished task status (zero when none), ready and running
/// steps per tool, the oldest ready step's wait per tool, the live workers and what they hold.
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
    out
}

/// A Prometheus label value: backslash, quote and newline escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
