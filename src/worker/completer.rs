//! Batched completions: every success that arrives while the previous batch is being written
//! goes into the next one, recorded in one transaction (one commit).

use tokio::sync::{mpsc, oneshot};

use super::with_retries;
use crate::store::decision_queue::ClaimedDecision;
use crate::store::step_queue::StepSuccess;
use crate::store::{Store, StoreError};

type CompletionReply = oneshot::Sender<Result<Option<ClaimedDecision>, StoreError>>;

/// Collects successful steps and records them in batches: one transaction (one commit) for all
/// the completions that arrived while the previous batch was being written.
#[derive(Clone)]
pub struct Completer {
    tx: mpsc::UnboundedSender<(StepSuccess, CompletionReply)>,
}

impl Completer {
    pub const MAX_BATCH: usize = 64;

    pub fn start(store: Store, lease_secs: f64) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, mut rx) = mpsc::unbounded_channel::<(StepSuccess, CompletionReply)>();
        let handle = tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                let mut batch = vec![first];
                while batch.len() < Self::MAX_BATCH {
                    match rx.try_recv() {
                        Ok(item) => batch.push(item),
                        Err(_) => break,
                    }
                }
                let (items, replies): (Vec<StepSuccess>, Vec<CompletionReply>) =
                    batch.into_iter().unzip();
                match store.complete_steps(&items, lease_secs).await {
                    Ok(results) => {
                        for (reply, r) in replies.into_iter().zip(results) {
                            let _ = reply.send(r);
                        }
                    }
                    Err(e) => {
                        // the batch rolled back: record each step on its own (with retries)
                        tracing::warn!(error = %e, size = items.len(), "batched completion failed; completing one by one");
                        for (s, reply) in items.into_iter().zip(replies) {
                            let r = with_retries(|| store.complete_step(&s, lease_secs)).await;
                            let _ = reply.send(r);
                        }
                    }
                }
            }
        });
        (Self { tx }, handle)
    }

    /// Record a success; resolves when its batch is committed.
    pub async fn complete(&self, s: StepSuccess) -> Result<Option<ClaimedDecision>, StoreError> {
        let (reply, rx) = oneshot::channel();
        if self.tx.send((s, reply)).is_err() {
            return Err(StoreError::Db(sqlx::Error::PoolClosed));
        }
        // the completer stopped: as if the store had closed
        rx.await
            .unwrap_or_else(|_| Err(StoreError::Db(sqlx::Error::PoolClosed)))
    }
}
