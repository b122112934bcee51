//! Batched completions: every success that arrives while the previous batch is being written
//! goes into the next one, recorded in one transaction (one commit) — together with the claim
//! of the next steps for the permits those successes free, so a busy worker's steady state is
//! one transaction per cycle.

use tokio::sync::{OwnedSemaphorePermit, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{Held, InFlight, with_retries};
use crate::store::decision_queue::ClaimedDecision;
use crate::store::step_queue::{
    Claim, ClaimedStep, Cycle, CycleDone, InlineEvaluation, StepSuccess,
};
use crate::store::{Store, StoreError};

/// What a completion resolves to: the decision it started (run by the caller with the permit
/// handed back), or nothing (the permit went to a step claimed in the same transaction, or was
/// released).
pub(super) type Reply = (
    Result<Option<ClaimedDecision>, StoreError>,
    Option<OwnedSemaphorePermit>,
);

type Item = (
    StepSuccess,
    Option<OwnedSemaphorePermit>,
    oneshot::Sender<Reply>,
);

/// A step claimed by a completion cycle, with the permit it runs under.
pub(super) type Handoff = (ClaimedStep, OwnedSemaphorePermit);

/// How the completer records and claims.
pub(super) struct CompleterConfig {
    pub worker_id: Uuid,
    pub lease_secs: f64,
    /// `[orchestrator] max_concurrent_tasks` (0: no cap).
    pub max_running_tasks: i64,
    pub inline: Option<InlineEvaluation>,
    /// `[limits] cost_warn_fraction`.
    pub cost_warn_fraction: f64,
    pub in_flight: InFlight,
    /// Claimed steps go to the claim loop, which runs them.
    pub handoff: mpsc::UnboundedSender<Handoff>,
    /// After shutdown, cycles claim nothing.
    pub shutdown: CancellationToken,
}

/// Collects successful steps and records them in batches.
#[derive(Clone)]
pub struct Completer {
    tx: mpsc::UnboundedSender<Item>,
}

impl Completer {
    /// Successes one cycle records at most: as many as the default concurrency runs, so a
    /// busy worker's steps go through one transaction per round (64 made four: through a
    /// transaction pooler, where each statement is planned at every execution, that cost a
    /// fifth of the drain rate; docs/benchmarks-history.md, "Fleets and poolers").
    pub const MAX_BATCH: usize = crate::config::DEFAULT_CONCURRENCY as usize;

    pub(super) fn start(store: Store, cfg: CompleterConfig) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Item>();
        let handle = tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                let mut batch = vec![first];
                while batch.len() < Self::MAX_BATCH {
                    match rx.try_recv() {
                        Ok(item) => batch.push(item),
                        Err(_) => break,
                    }
                }
                cycle(&store, &cfg, batch).await;
            }
        });
        (Self { tx }, handle)
    }

    /// Record a success (its permit may be reused for the next claim); resolves when its
    /// batch is committed.
    pub(super) async fn complete(
        &self,
        s: StepSuccess,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Reply {
        let (reply, rx) = oneshot::channel();
        if self.tx.send((s, permit, reply)).is_err() {
            // the completer stopped: as if the store had closed
            return (Err(StoreError::Db(sqlx::Error::PoolClosed)), None);
        }
        rx.await
            .unwrap_or_else(|_| (Err(StoreError::Db(sqlx::Error::PoolClosed)), None))
    }
}

/// One transaction: the batch's completions, then a claim for the permits they free.
async fn cycle(store: &Store, cfg: &CompleterConfig, batch: Vec<Item>) {
    let mut items = Vec::with_capacity(batch.len());
    let mut permits = Vec::with_capacity(batch.len());
    let mut replies = Vec::with_capacity(batch.len());
    for (s, p, r) in batch {
        items.push(s);
        permits.push(p);
        replies.push(r);
    }
    metrics::histogram!(crate::metrics::COMPLETION_BATCH).record(items.len() as f64);
    let available = permits.iter().filter(|p| p.is_some()).count() as i64;
    let claim = (available > 0 && !cfg.shutdown.is_cancelled()).then_some(Claim {
        worker_id: cfg.worker_id,
        limit: available,
        lease_secs: cfg.lease_secs,
        max_running_tasks: cfg.max_running_tasks,
    });
    let c = Cycle {
        items: &items,
        lease_secs: cfg.lease_secs,
        inline: cfg.inline,
        claim,
        cost_warn_fraction: cfg.cost_warn_fraction,
    };
    match store.complete_and_claim(&c).await {
        Ok(CycleDone { completed, claimed }) => {
            // a started decision keeps its step's permit; the others run the claimed steps
            let mut spare = Vec::new();
            let mut answers = Vec::with_capacity(replies.len());
            for (r, p) in completed.into_iter().zip(permits) {
                if matches!(r, Ok(Some(_))) {
                    answers.push((r, p));
                } else {
                    spare.extend(p);
                    answers.push((r, None));
                }
            }
            for step in claimed {
                let permit = spare
                    .pop()
                    .expect("claimed at most one step per spare permit");
                cfg.in_flight
                    .lock()
                    .expect("in-flight lock")
                    .insert(step.id, Held::Step(step.fence()));
                if let Err(mpsc::error::SendError((step, _))) = cfg.handoff.send((step, permit)) {
                    // the claim loop is gone: the drain releases what is left in flight
                    tracing::debug!(step = %step.id, "claimed step not handed off; released at drain");
                }
            }
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(answer);
            }
        }
        Err(e) => {
            // the batch rolled back: record each step on its own (with retries), claim nothing
            tracing::warn!(error = %e, size = items.len(), "batched completion failed; completing one by one");
            for ((s, reply), p) in items.into_iter().zip(replies).zip(permits) {
                let one = Cycle {
                    items: std::slice::from_ref(&s),
                    lease_secs: cfg.lease_secs,
                    inline: cfg.inline,
                    claim: None,
                    cost_warn_fraction: cfg.cost_warn_fraction,
                };
                let r = with_retries(|| store.complete_and_claim(&one))
                    .await
                    .map(|mut done| done.completed.pop().expect("one result per item"))
                    .and_then(|r| r);
                let _ = reply.send((r, p));
            }
        }
    }
}
