//! Background loops of a worker: LISTEN for ready work, heartbeat leases, rescue the work of
//! dead workers, keep the claim queue's ring.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{Held, InFlight, WorkerConfig};
use crate::store::{DECISIONS_PAYLOAD, Store};

/// Start the loops; they stop when `stop` is cancelled. They share the worker's pool with
/// the work (a few connections whatever the concurrency: every transaction is short, so the
/// heartbeat waits behind at most a few); LISTEN has a connection of its own.
pub(super) fn spawn(
    store: &Store,
    cfg: &WorkerConfig,
    wake: &Wake,
    in_flight: &InFlight,
    stop: &CancellationToken,
) -> JoinSet<()> {
    let mut helpers = JoinSet::new();
    helpers.spawn(listen_loop(store.clone(), wake.clone(), stop.clone()));
    helpers.spawn(heartbeat_loop(
        store.clone(),
        cfg.clone(),
        in_flight.clone(),
        stop.clone(),
    ));
    helpers.spawn(rescue_loop(
        store.clone(),
        cfg.clone(),
        wake.clone(),
        stop.clone(),
    ));
    helpers.spawn(ring_loop(store.clone(), stop.clone()));
    helpers.spawn(schedule_loop(store.clone(), wake.clone(), stop.clone()));
    helpers.spawn(super::webhooks::run(
        store.clone(),
        cfg.clone(),
        stop.clone(),
    ));
    helpers.spawn(wait_loop(
        store.clone(),
        cfg.clone(),
        wake.clone(),
        stop.clone(),
    ));
    if cfg.retention.finished_task_ttl_secs > 0 {
        helpers.spawn(retention_loop(store.clone(), cfg.clone(), stop.clone()));
    }
    helpers
}

/// Delete expired finished tasks: batch after batch (each its own short transaction) until
/// none is left or the round's budget is spent, then sleep for the interval.
async fn retention_loop(store: Store, cfg: WorkerConfig, stop: CancellationToken) {
    const BATCHES_PER_ROUND: usize = 20;
    let r = cfg.retention;
    let ttl = r.finished_task_ttl_secs as f64;
    loop {
        let jitter = Duration::from_millis(u64::from(Uuid::new_v4().as_bytes()[0]) * 4);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(r.interval + jitter) => {}
        }
        let mut deleted = 0;
        for _ in 0..BATCHES_PER_ROUND {
            if stop.is_cancelled() {
                return;
            }
            match store.prune_finished(ttl, r.batch_size).await {
                Ok(n) => {
                    deleted += n;
                    if (n as i64) < r.batch_size {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "retention prune failed");
                    break;
                }
            }
        }
        if deleted > 0 {
            tracing::info!(deleted, "deleted finished tasks past their retention");
        }
    }
}

/// How often the claim ring turns: each slot holds about this many seconds of new entries,
/// so a claim walks at most a couple of slots' worth of dead entries while a long transaction
/// keeps VACUUM from removing them.
const RING_TURN_SECS: f64 = 2.0;

/// Keep the claim queue's ring: truncate drained slots, turn to the next
/// ([`Store::claim_ring_upkeep`]).
async fn ring_loop(store: Store, stop: CancellationToken) {
    loop {
        let jitter = Duration::from_millis(u64::from(Uuid::new_v4().as_bytes()[0]) * 2);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_millis(500) + jitter) => {}
        }
        match store.claim_ring_upkeep(RING_TURN_SECS).await {
            Ok(u) if u.truncated > 0 => {
                tracing::debug!(
                    truncated = u.truncated,
                    moved = u.moved,
                    "claim ring upkeep"
                )
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "claim ring upkeep failed"),
        }
    }
}

/// How the background loops wake the claim loop: `notify` for ready steps, and `decisions`
/// set when a decision may be pending (the claim loop asks for decisions only then, or at its
/// poll interval).
#[derive(Clone, Default)]
pub(super) struct Wake {
    pub notify: Arc<Notify>,
    pub decisions: Arc<AtomicBool>,
}

impl Wake {
    fn decisions(&self) {
        self.decisions.store(true, Ordering::Release);
        self.notify.notify_one();
    }
}

/// LISTEN for ready work and pending decisions. With nowhere to listen (a transaction pooler
/// and no `listen_url`) it says so once and ends: the claim loop polls every `poll_ms`.
async fn listen_loop(store: Store, wake: Wake, stop: CancellationToken) {
    loop {
        let mut listener = match store.ready_listener().await {
            Ok(Some(l)) => l,
            Ok(None) => {
                tracing::warn!(
                    "no LISTEN behind a transaction pooler without database.listen_url: \
                     new work is found by polling every worker.poll_ms"
                );
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "LISTEN failed; polling until it works");
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                }
            }
        };
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                msg = listener.recv() => match msg {
                    Ok(n) if n.payload() == DECISIONS_PAYLOAD => wake.decisions(),
                    Ok(_) => wake.notify.notify_one(),
                    Err(e) => {
                        tracing::warn!(error = %e, "notification stream broke; reconnecting");
                        // notifications may have been missed
                        wake.decisions();
                        break;
                    }
                }
            }
        }
    }
}

/// Renew the leases of the work still in flight, and only those: a step whose outcome could
/// not be recorded has left the set, so its lease runs out and another worker takes it.
async fn heartbeat_loop(
    store: Store,
    cfg: WorkerConfig,
    in_flight: InFlight,
    stop: CancellationToken,
) {
    let period = cfg.heartbeat.max(Duration::from_millis(100));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
        let (mut steps, mut decisions) = (Vec::new(), Vec::new());
        for held in in_flight.lock().expect("in-flight lock").values() {
            match held {
                Held::Step(f) => steps.push((f.step_id, f.lease_token)),
                Held::Decision(f) => decisions.push((f.id, f.lease_token)),
            }
        }
        let beat = store.heartbeat(cfg.id, cfg.lease.as_secs_f64(), &steps, &decisions);
        match tokio::time::timeout(period, beat).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "heartbeat failed"),
            Err(_) => tracing::warn!("heartbeat timed out"),
        }
    }
}

/// Fire due cron schedules: wake at the earliest next tick (at most a second apart, so a new
/// schedule is seen within a second), fire what is due under the rows' locks.
async fn schedule_loop(store: Store, wake: Wake, stop: CancellationToken) {
    let mut pause = Duration::from_millis(200);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(pause) => {}
        }
        match store.fire_due_schedules(20).await {
            Ok(fired) if !fired.is_empty() => {
                for f in &fired {
                    tracing::info!(schedule = %f.schedule_id, tick = %f.tick,
                        task = ?f.task_id, "schedule fired");
                }
                wake.notify.notify_one();
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "schedule sweep failed"),
        }
        let next = store.next_schedule_in().await.ok().flatten();
        pause = Duration::from_secs_f64(next.unwrap_or(1.0).clamp(0.02, 1.0));
    }
}

/// Waits whose time has come: a sleep ends, an unanswered wait times out (its step then fails
/// with `wait_timeout`, or an approval with `on_timeout: approve` is approved). The scan reads
/// the partial index of open waits by expiry: nothing when no step waits.
async fn wait_loop(store: Store, cfg: WorkerConfig, wake: Wake, stop: CancellationToken) {
    loop {
        let jitter = Duration::from_millis(u64::from(Uuid::new_v4().as_bytes()[0]) % 50);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(cfg.wait_check + jitter) => {}
        }
        match store.expire_due_waits(100).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::debug!(waits = n, "waits whose time came");
                wake.notify.notify_one();
            }
            Err(e) => tracing::warn!(error = %e, "wait sweep failed"),
        }
    }
}

async fn rescue_loop(store: Store, cfg: WorkerConfig, wake: Wake, stop: CancellationToken) {
    loop {
        // jitter so that a fleet does not scan in lockstep
        let jitter = Duration::from_millis(u64::from(Uuid::new_v4().as_bytes()[0]) % 250);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(cfg.rescue_interval + jitter) => {}
        }
        match store.rescue_expired(100, cfg.policy).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::warn!(rescued = n, "re-queued steps of lost workers");
                metrics::counter!(crate::metrics::RESCUES, "what" => "step").increment(n);
                wake.notify.notify_one();
            }
            Err(e) => tracing::warn!(error = %e, "rescue scan failed"),
        }
        match store.expire_deadlines(100).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(failed = n, "failed tasks past their deadline"),
            Err(e) => tracing::warn!(error = %e, "deadline sweep failed"),
        }
        match store.rescue_expired_decisions(100).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::warn!(rescued = n, "re-queued decisions of lost workers");
                metrics::counter!(crate::metrics::RESCUES, "what" => "decision").increment(n);
                wake.decisions();
            }
            Err(e) => tracing::warn!(error = %e, "decision rescue scan failed"),
        }
    }
}
