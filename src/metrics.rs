//! Prometheus metrics: the names, the process's recorder, and the listener a worker serves its
//! `/metrics` on (`[worker] metrics_port`).
//!
//! Everything measured in process goes through the `metrics` crate's macros into one recorder
//! per process (`metrics-exporter-prometheus`), installed by [`handle`]: the workers' claim,
//! queue lag, step, completion and decision histograms and their counters; the API's request
//! histogram. The API's `/metrics` adds a few gauges read from the database with one bounded
//! statement (the active tasks and the ready and running steps, through partial indexes), so
//! a scrape costs the same whatever the history holds.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tokio_util::sync::CancellationToken;

/// Seconds from the claim statement's start to its commit (histogram; `worker`).
pub const CLAIM_SECONDS: &str = "trellis_claim_duration_seconds";
/// Steps one claim statement leased (histogram).
pub const CLAIM_BATCH: &str = "trellis_claim_batch_size";
/// Seconds from a step becoming ready (or its backoff ending) to its start, database clock
/// (histogram).
pub const QUEUE_LAG_SECONDS: &str = "trellis_queue_lag_seconds";
/// Seconds a step's run took, actions and tool call included (histogram; `tool`).
pub const STEP_SECONDS: &str = "trellis_step_duration_seconds";
/// Successes recorded by one completion transaction (histogram).
pub const COMPLETION_BATCH: &str = "trellis_completion_batch_size";
/// Seconds from a decision's claim to its outcome applied (histogram; `kind`).
pub const DECISION_SECONDS: &str = "trellis_decision_duration_seconds";
/// Attempts finished (counter; `tool`, `outcome` = `succeeded` or the failure category).
pub const ATTEMPTS: &str = "trellis_attempts_total";
/// Recovery decisions taken (counter; `tier` 1–3, `strategy`).
pub const RECOVERIES: &str = "trellis_recoveries_total";
/// Steps and decisions taken back from workers whose lease expired (counter; `what`).
pub const RESCUES: &str = "trellis_rescues_total";
/// LLM calls (counter; `name` = the decision's schema name, `ok`).
pub const LLM_CALLS: &str = "trellis_llm_calls_total";
/// LLM tokens (counter; `name`, `kind` = `prompt` or `completion`).
pub const LLM_TOKENS: &str = "trellis_llm_tokens_total";
/// What LLM calls cost, in the price map's currency (`model`): a sum that only grows, per
/// process (a gauge: the metrics facade's counters count whole units).
pub const LLM_COST: &str = "trellis_llm_cost_total";
/// HTTP requests answered by the API (counter; `method`, `status`).
pub const HTTP_REQUESTS: &str = "trellis_http_requests_total";
/// Seconds the API took to answer (histogram; `method`).
pub const HTTP_SECONDS: &str = "trellis_http_request_duration_seconds";

const SECONDS_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0,
];
const SIZE_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// The process's recorder, installed on first use (later calls return the same handle). If
/// another recorder was installed first, the handle renders nothing of what is recorded.
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
            .expect("non-empty buckets")
            .set_buckets_for_metric(Matcher::Suffix("_size".into()), SIZE_BUCKETS)
            .expect("non-empty buckets")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_ok() {
            describe();
        }
        // histograms are folded into their buckets by the upkeep (or a render)
        let upkeep = handle.clone();
        std::thread::Builder::new()
            .name("metrics-upkeep".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_secs(5));
                    upkeep.run_upkeep();
                }
            })
            .expect("a thread for the metrics upkeep");
        handle
    })
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_histogram};
    describe_histogram!(CLAIM_SECONDS, Unit::Seconds, "Claim transaction duration.");
    describe_histogram!(CLAIM_BATCH, Unit::Count, "Steps leased by one claim.");
    describe_histogram!(
        QUEUE_LAG_SECONDS,
        Unit::Seconds,
        "Ready (or backoff over) to started."
    );
    describe_histogram!(STEP_SECONDS, Unit::Seconds, "Step run time by tool.");
    describe_histogram!(
        COMPLETION_BATCH,
        Unit::Count,
        "Successes per completion transaction."
    );
    describe_histogram!(
        DECISION_SECONDS,
        Unit::Seconds,
        "Decision time by kind, brain included."
    );
    describe_counter!(ATTEMPTS, "Attempts finished by tool and outcome.");
    describe_counter!(RECOVERIES, "Recovery decisions by tier and strategy.");
    metrics::describe_gauge!(
        LLM_COST,
        "What LLM calls cost by model, in the price map's currency (only grows)."
    );
    describe_counter!(RESCUES, "Work taken back from workers whose lease expired.");
    describe_counter!(LLM_CALLS, "LLM calls by decision name and outcome.");
    describe_counter!(LLM_TOKENS, "LLM tokens by decision name and kind.");
    describe_counter!(HTTP_REQUESTS, "API requests by method and status.");
    describe_histogram!(HTTP_SECONDS, Unit::Seconds, "API answer time by method.");
}

/// Failure categories the `outcome` label of [`ATTEMPTS`] names as they are; any other (a
/// tool may answer any text) is `other`, so the label's values stay few.
pub fn outcome_label(category: &str) -> &str {
    const KNOWN: &[&str] = &[
        "tool_error",
        "timeout",
        "parameter_error",
        "dependency_error",
        "decomposition_error",
        "external_error",
        "unknown_error",
        "output_mismatch",
        "output_too_large",
        "invalid_output",
        "blocked_destination",
        "worker_lost",
        "deadline_exceeded",
        "cancelled",
    ];
    KNOWN
        .iter()
        .find(|k| **k == category)
        .copied()
        .unwrap_or("other")
}

/// Server connections this process holds (gauge; `state` = `open` or `idle`).
pub const DB_CONNECTIONS: &str = "trellis_db_connections";

/// The recorded metrics in Prometheus text format.
pub fn render() -> String {
    handle().render()
}

/// [`render`], with the process's database connections as they are now ([`DB_CONNECTIONS`]).
pub fn render_with(store: &crate::store::Store) -> String {
    let (open, idle) = store.connections();
    metrics::gauge!(DB_CONNECTIONS, "state" => "open").set(f64::from(open));
    metrics::gauge!(DB_CONNECTIONS, "state" => "idle").set(f64::from(idle));
    render()
}

/// Serve `GET /metrics` on `addr` until `stop`, with `store`'s connections; returns the
/// bound address (port 0 picks one).
pub async fn serve(
    addr: SocketAddr,
    store: crate::store::Store,
    stop: CancellationToken,
) -> std::io::Result<SocketAddr> {
    use axum::routing::get;
    handle();
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = axum::Router::new().route(
        "/metrics",
        get(move || async move {
            (
                [(axum::http::header::CONTENT_TYPE, CONTENT_TYPE)],
                render_with(&store),
            )
        }),
    );
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "the metrics listener stopped");
        }
    });
    Ok(bound)
}

/// Prometheus text exposition 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4";
