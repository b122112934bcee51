//! Running decisions: load the context, ask the brain with no transaction open, record the
//! LLM calls, apply the outcome (fenced); repeat while the outcome starts another decision.

use super::{Held, InFlight, WorkerConfig, with_retries};
use crate::brain;
use crate::domain::DecisionKind;
use crate::store::decision_queue::{ClaimedDecision, Lease};
use crate::store::{Store, StoreError};
use tracing::Instrument;

/// Run a decision chain to its end outside the worker loop (tests, tools).
pub async fn run_decision_chain(store: &Store, cfg: &WorkerConfig, first: Option<ClaimedDecision>) {
    run(store, cfg, &InFlight::default(), first).await
}

/// Run a decision and whatever decisions its outcome starts, one after the other.
pub(super) async fn run(
    store: &Store,
    cfg: &WorkerConfig,
    in_flight: &InFlight,
    mut next: Option<ClaimedDecision>,
) {
    while let Some(d) = next.take() {
        in_flight
            .lock()
            .expect("in-flight lock")
            .insert(d.id, Held::Decision(d.fence()));
        let span = tracing::info_span!("decision", decision_id = %d.id, kind = %d.kind);
        let result = decide_and_apply(store, cfg, &d).instrument(span).await;
        in_flight.lock().expect("in-flight lock").remove(&d.id);
        match result {
            Ok(n) => next = n,
            Err(StoreError::Fenced) => tracing::warn!(
                decision = %d.id, kind = %d.kind,
                "decision lease was taken over; outcome discarded"
            ),
            Err(e) => tracing::error!(
                decision = %d.id, kind = %d.kind, error = %e,
                "could not apply the decision; its lease will expire and it will be retried"
            ),
        }
    }
}

/// Load the context, ask the brain (no transaction open), apply the outcome (fenced).
async fn decide_and_apply(
    store: &Store,
    cfg: &WorkerConfig,
    d: &ClaimedDecision,
) -> Result<Option<ClaimedDecision>, StoreError> {
    if d.kind == DecisionKind::Plan {
        store.start_planning(d.task_id).await?;
    }
    let ctx = store.decision_context(d, cfg.policy.max_rescues).await?;
    let skip_brain = d.rescue_count >= cfg.policy.max_rescues;
    let outcome = brain::decide(cfg.brain.as_ref(), &ctx, d.kind, skip_brain).await;
    let lease = Lease {
        worker_id: cfg.id,
        lease_secs: cfg.lease.as_secs_f64(),
    };
    let fence = d.fence();
    let calls = ctx.meter.take();
    if let Err(e) = with_retries(|| store.record_llm_calls(&fence, &calls)).await {
        tracing::error!(decision = %d.id, error = %e, calls = calls.len(), "could not record LLM usage");
    }
    with_retries(|| store.apply_decision(&fence, &outcome, &cfg.policy, lease)).await
}
