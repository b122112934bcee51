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

pub(super) async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

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

/// Prometheus text exposition of task and step counts by status.
pub(super) async fn metrics(State(st): State<AppState>) -> Result<Response, ApiError> {
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
