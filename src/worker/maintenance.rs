//! Background loops of a worker: LISTEN for ready work, heartbeat leases, rescue the work of
//! dead workers, keep the claim queue's ring.

use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::sweep::{Pace, Sweep, Wake};
use super::{Held, InFlight, WorkerConfig};
use crate::store::{DECISIONS_PAYLOAD, Store};

/// Start the loops; they stop when `stop` is cancelled. They share the worker's pool with
/// the work (a few connections whatever the concurrency: every transaction is short, so the
/// heartbeat waits behind at most a few); LISTEN has a connection of its own.
pub(super) fn spawn(
    store: &Store,
    cfg: &WorkerConfig,
    wake: &Wake,
    (in_flight, aborts): (&InFlight, &super::cancel::Aborts),
    stop: &CancellationToken,
) -> JoinSet<()> {
    let mut helpers = JoinSet::new();
    let pace = Pace::default();
    let sweep = |pace: &Pace| Sweep {
        store: store.clone(),
        cfg: cfg.clone(),
        wake: wake.clone(),
        pace: pace.clone(),
        stop: stop.clone(),
    };
    helpers.spawn(listen_loop(store.clone(), wake.clone(), stop.clone()));
    helpers.spawn(heartbeat_loop(
        sweep(&pace),
        in_flight.clone(),
        aborts.clone(),
    ));
    helpers.spawn(rescue_loop(sweep(&pace)));
    helpers.spawn(ring_loop(sweep(&pace)));
    helpers.spawn(schedule_loop(sweep(&pace)));
    helpers.spawn(super::webhooks::run(sweep(&pace)));
    helpers.spawn(wait_loop(sweep(&pace)));
    helpers.spawn(bulk_loop(sweep(&pace)));
    if cfg.retention.finished_task_ttl_secs > 0 {
        helpers.spawn(retention_loop(sweep(&pace)));
    }
    if let Some(aging) = cfg.aging {
        helpers.spawn(aging_loop(sweep(&pace), aging));
    }
    helpers
}

/// Priority aging: a pass every twentieth of the interval, jittered by as much again (so a task
/// rises within 1.1 intervals of its due time), batch after batch while a pass finds work; one
/// worker of the fleet at a time.
async fn aging_loop(s: Sweep, aging: super::Aging) {
    let interval = aging.interval.as_secs_f64();
    let max_boost = i32::try_from(aging.max_boost).unwrap_or(i32::MAX);
    loop {
        // not stretched by the fleet's size (the bound is the interval's): one worker at a
        // time runs a pass, the others' tries cost a lock probe
        let jitter = aging.interval / 20 * u32::from(Uuid::new_v4().as_bytes()[0]) / 255;
        tokio::select! {
            _ = s.stop.cancelled() => return,
            _ = tokio::time::sleep(aging.interval / 20 + jitter) => {}
        }
        loop {
            match s.store.age_priorities(interval, max_boost, 1000).await {
                Ok(1000) => continue,
                Ok(0) => {}
                Ok(n) => tracing::debug!(tasks = n, "aged"),
                Err(e) => tracing::warn!(error = %e, "aging pass failed"),
            }
            break;
        }
    }
}

/// Bulk actions: a look every `bulk_poll` (stretched by the fleet's size; it reads the partial
/// index of running actions, empty when none runs), then batch after batch while one runs;
/// the workers share an action's batches (its row is each batch's lock).
async fn bulk_loop(s: Sweep) {
    loop {
        let jitter = s.cfg.bulk_poll / 4 * u32::from(Uuid::new_v4().as_bytes()[0]) / 255;
        if !s.pause(s.cfg.bulk_poll, jitter).await {
            return;
        }
        while !s.stop.is_cancelled() {
            match s.store.run_bulk_batch(s.cfg.bulk_batch).await {
                Ok(Some(b)) => {
                    tracing::debug!(bulk_action = %b.bulk_action_id, done = b.done,
                        failed = b.failed, finished = b.finished, "bulk batch applied");
                    if b.done > 0 {
                        s.wake.notify.notify_one();
                    }
                    if b.finished {
                        tracing::info!(bulk_action = %b.bulk_action_id, "bulk action done");
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "bulk batch failed; tried again later");
                    break;
                }
            }
        }
    }
}

/// Delete expired finished tasks, then delivered or given-up webhook deliveries as old: batch
/// after batch (each its own short transaction) until none is left or the round's budget is
/// spent, then sleep for the interval. The first round runs soon after start (a jitter's
/// wait), so a fleet whose workers restart more often than the interval still prunes.
async fn retention_loop(s: Sweep) {
    let r = s.cfg.retention;
    let ttl = r.finished_task_ttl_secs as f64;
    let mut first = true;
    loop {
        let jitter = Duration::from_millis(u64::from(Uuid::new_v4().as_bytes()[0]) * 4);
        let base = if std::mem::take(&mut first) {
            Duration::ZERO
        } else {
            r.interval
        };
        if !s.pause(base, jitter).await {
            return;
        }
        let tasks = prune_round(&s, Pruned::Tasks, ttl).await;
        if tasks > 0 {
            tracing::info!(
                deleted = tasks,
                "deleted finished tasks past their retention"
            );
        }
        // and their webhook deliveries, once delivered or given up
        let deliveries = prune_round(&s, Pruned::Deliveries, ttl).await;
        if deliveries > 0 {
            tracing::info!(
                deleted = deliveries,
                "deleted webhook deliveries past their retention"
            );
        }
    }
}

/// What a retention round deletes.
#[derive(Clone, Copy)]
enum Pruned {
    Tasks,
    Deliveries,
}

/// One retention round of one kind: batch after batch until a batch comes back short, the
/// round's budget is spent, the worker stops or the database fails; how many went.
async fn prune_round(s: &Sweep, what: Pruned, ttl: f64) -> u64 {
    const BATCHES_PER_ROUND: usize = 20;
    let batch = s.cfg.retention.batch_size;
    let mut gone = 0;
    for _ in 0..BATCHES_PER_ROUND {
        if s.stop.is_cancelled() {
            break;
        }
        let pruned = match what {
            Pruned::Tasks => s.store.prune_finished(ttl, batch).await,
            Pruned::Deliveries => s.store.prune_deliveries(ttl, batch).await,
        };
        match pruned {
            Ok(n) => {
                gone += n;
                if (n as i64) < batch {
                    break;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "retention prune failed");
                break;
            }
        }
    }
    gone
}

/// How often the claim ring turns: each slot holds about this many seconds of new entries,
/// so a claim walks at most a couple of slots' worth of dead entries while a long transaction
/// keeps VACUUM from removing them.
const RING_TURN_SECS: f64 = 2.0;

/// Keep the claim queue's ring: truncate drained slots, turn to the next
/// ([`Store::claim_ring_upkeep`]).
async fn ring_loop(s: Sweep) {
    loop {
        let jitter = Duration::from_millis(u64::from(Uuid::new_v4().as_bytes()[0]) * 2);
        if !s.pause(Duration::from_millis(500), jitter).await {
            return;
        }
        match s.store.claim_ring_upkeep(RING_TURN_SECS).await {
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
async fn heartbeat_loop(s: Sweep, in_flight: InFlight, aborts: super::cancel::Aborts) {
    let (store, cfg) = (&s.store, &s.cfg);
    let period = cfg.heartbeat.max(Duration::from_millis(100));
    loop {
        tokio::select! {
            _ = s.stop.cancelled() => return,
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
            // a cancelled task's calls in flight are aborted
            Ok(Ok((_, cancelled))) => super::cancel::abort(&aborts, &cancelled),
            Ok(Err(e)) => tracing::warn!(error = %e, "heartbeat failed"),
            Err(_) => tracing::warn!("heartbeat timed out"),
        }
        if let Ok(n) = store.fleet_size(cfg.lease.as_secs_f64()).await {
            s.pace.set(n);
        }
    }
}

/// Fire due cron schedules: wake at the earliest next tick (at most a second apart, so a new
/// schedule is seen within a second), fire what is due under the rows' locks.
async fn schedule_loop(s: Sweep) {
    let (store, wake) = (&s.store, &s.wake);
    let mut pause = Duration::from_millis(200);
    loop {
        tokio::select! {
            _ = s.stop.cancelled() => return,
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
        // a tick due soon is waited for; with none, a look every second (stretched by the
        // fleet's size: a new schedule is still seen within about a second)
        pause = match store.next_schedule_in().await.ok().flatten() {
            Some(next) if next < 1.0 => Duration::from_secs_f64(next.max(0.02)),
            _ => s.pace.of(Duration::from_secs(1)),
        };
    }
}

/// Waits whose time has come: a sleep ends, an unanswered wait times out (its step then fails
/// with `wait_timeout`, or an approval with `on_timeout: approve` is approved). The scan reads
/// the partial index of open waits by expiry: nothing when no step waits.
async fn wait_loop(s: Sweep) {
    loop {
        let jitter = Duration::from_millis(u64::from(Uuid::new_v4().as_bytes()[0]) % 50);
        if !s.pause(s.cfg.wait_check, jitter).await {
            return;
        }
        match s.store.expire_due_waits(100).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::debug!(waits = n, "waits whose time came");
                s.wake.notify.notify_one();
            }
            Err(e) => tracing::warn!(error = %e, "wait sweep failed"),
        }
        match s
            .store
            .resolve_ended_children(100, s.cfg.child_intervention_wait_secs)
            .await
        {
            Ok(0) => {}
            Ok(n) => {
                tracing::debug!(waits = n, "child tasks that ended");
                s.wake.notify.notify_one();
            }
            Err(e) => tracing::warn!(error = %e, "child wait sweep failed"),
        }
        match s.store.cancel_orphans(100).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(tasks = n, "cancelled the children of ended parents"),
            Err(e) => tracing::warn!(error = %e, "orphan sweep failed"),
        }
    }
}

async fn rescue_loop(s: Sweep) {
    let (store, cfg, wake) = (&s.store, &s.cfg, &s.wake);
    loop {
        // jitter so that a fleet does not scan in lockstep
        let jitter = Duration::from_millis(u64::from(Uuid::new_v4().as_bytes()[0]) % 250);
        if !s.pause(cfg.rescue_interval, jitter).await {
            return;
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
