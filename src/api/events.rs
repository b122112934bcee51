//! `/tasks/{id}/events`: the audit log as JSON, or live over Server-Sent Events.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use super::schemas::{BadUri, Guarded, LastEventId, Missing};

use super::views::EventView;
use super::{ApiError, AppState, KnownTask};
use crate::store::Store;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct EventsQuery {
    /// Only events with a larger seq (default 0).
    #[param(schema_with = super::schemas::event_seq)]
    after: Option<i64>,
    /// At most this many events (default 1000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<i64>,
}

/// Events after `after` (or `Last-Event-ID`): a JSON list, or with `Accept: text/event-stream`
/// a live Server-Sent Events stream (`id` = seq, `event` = kind) that ends once the task is
/// finished and every event has been sent.
#[utoipa::path(get, path = "/tasks/{id}/events", tag = "tasks", operation_id = "task_events",
    summary = "Events after a sequence number; live Server-Sent Events with Accept: text/event-stream (resumable with Last-Event-ID)",
    security(("bearer" = [])), params(super::rules::TaskPath, EventsQuery, LastEventId),
    responses(
        (status = 200, description = "events, oldest first",
            content((Vec<EventView> = "application/json"), (String = "text/event-stream"))),
        Missing, BadUri, Guarded,
    ),
)]
pub(super) async fn list_or_stream(
    State(st): State<AppState>,
    KnownTask(id): KnownTask,
    headers: axum::http::HeaderMap,
    q: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
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
    let events: Vec<EventView> = st.store.list_events(id, after, limit).await?;
    Ok(Json(events).into_response())
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
        pending: std::collections::VecDeque<EventView>,
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
                let (id, kind) = (e.seq.to_string(), e.kind.clone());
                let data = serde_json::to_string(&e).expect("event serializes");
                let event = Event::default().id(id).event(kind).data(data);
                return Some((Ok(event), st));
            }
            if st.done {
                return None;
            }
            // read the status before the events: a terminal status seen here means every
            // event it produced is already visible to the read below
            let finished = match st.store.get_task(st.task).await {
                Ok(t) => t.status.is_terminal(),
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
