//! Map steps (the fan-out issue): expansion, the sliding window, the join and giving up an
//! item, each inside the transaction that causes it (migration `20261127000030_maps.sql`).
//!
//! A map step is claimed like any step; its worker resolves the list and calls
//! [`Store::expand_map`], which in one transaction moves the step `running → waiting`, writes
//! its `step_maps` row (the list and its counters) and inserts the first `max_parallel` items
//! ready. A worker killed before the commit leaves nothing: the step's lease expires, it is
//! rescued and expanded again. From then on every item that ends, in the transaction that ends
//! it (`items_ended`), releases the next item, and the one that ends the list joins the map
//! step (`waiting → succeeded`). Nothing sweeps, and a completion batch without items runs no
//! statement of this module.

use serde_json::Value;
use uuid::Uuid;

use super::circuits::LendGuard;
use super::decision_queue::{ClaimedDecision, Lease};
use super::lifecycle::start_evaluation;
use super::steps::{moved_one, promote_and_count};
use super::{NewEvent, Result, Store, StoreError, Tx, lock_task};
use crate::domain::event::{self, Event};
use crate::domain::limits::MAP_LEND_WINDOWS;
use crate::domain::transitions::StepMove;

impl Store {
    /// Expand a claimed map step over `items` (a JSON array), `max_parallel` of them at once
    /// (at most the task's `max_concurrent_steps`): one transaction, fenced on the step's
    /// lease (`Err(Fenced)` when it was taken over).
    pub async fn expand_map(
        &self,
        fence: MapFence<'_>,
        items: &Value,
        max_parallel: i32,
    ) -> Result<()> {
        let total = items.as_array().map_or(0, Vec::len) as i64;
        let step_key = fence.step_key;
        in_tx!(self.pool, |tx| {
            let task = lock_task(tx, fence.task_id).await?;
            // no more items exist ahead of the ones done than the task may run at once: a
            // larger window would only make every promotion and claim queue sync read more
            let window = max_parallel.min(task.max_concurrent_steps).max(1);
            // the step, if it still carries this lease (`step_queue`'s fenced lock)
            sqlx::query(sql!("step/lock_running"))
                .bind(fence.step_id)
                .bind(fence.task_id)
                .bind(fence.lease_token)
                .bind(false)
                .fetch_optional(&mut **tx)
                .await?
                .ok_or(StoreError::Fenced)?;
            let version: Option<i32> = sqlx::query_scalar(sql!("map/expand"))
                .bind(fence.step_id)
                .fetch_optional(&mut **tx)
                .await?;
            let Some(version) = version else {
                return Err(super::steps::illegal(StepMove::Expand, fence.step_id));
            };
            // its slot is free, and its items (inserted next) are the task's steps to claim
            tx.moved(StepMove::Expand, &[fence.task_id]);
            let (complete, kept): (bool, i64) = sqlx::query_as(sql!("map/start"))
                .bind(fence.step_id)
                .bind(items)
                .bind(window)
                .fetch_one(&mut **tx)
                .await?;
            tx.event(
                fence.task_id,
                Event::MapExpanded(event::MapExpanded {
                    step_key: step_key.to_string(),
                    items: total,
                    max_parallel: i64::from(window).min(total),
                    kept,
                }),
            );
            if complete {
                // a replan kept every item: the map joins at once (and its dependents go on)
                join(tx, &[fence.step_id]).await?;
                after_items(tx, fence.task_id, version, None).await?;
            } else {
                tx.wake_steps();
            }
            Ok(())
        })
    }
}

/// A claimed map step, as its lease fences it.
#[derive(Debug, Clone, Copy)]
pub struct MapFence<'a> {
    pub step_id: Uuid,
    pub task_id: Uuid,
    pub lease_token: i64,
    pub step_key: &'a str,
}

#[derive(sqlx::FromRow)]
struct Moved {
    step_id: Uuid,
    task_id: Uuid,
    complete: bool,
    /// An agent step's calls: it wakes for its next turn instead of joining.
    wakes: bool,
}

#[derive(sqlx::FromRow)]
struct Joined {
    task_id: Uuid,
    step_key: String,
    attempts: i32,
}

/// Items among `step_ids` that ended (succeeded or given up; the others are ignored) move
/// their maps on: the next items are released, and each map whose items have all ended is
/// joined (its `step_completed` event added to the transaction's), or, an agent step's,
/// woken for its next turn. The caller holds the tasks' row
/// locks, promotes afterwards (a joined map step's dependents) and syncs the claim queue of
/// the tasks returned (those whose maps moved).
pub(crate) async fn items_ended(tx: &mut Tx, step_ids: &[Uuid]) -> Result<Vec<Uuid>> {
    let moved: Vec<Moved> = sqlx::query_as(sql!("map/items_ended"))
        .bind(step_ids)
        .fetch_all(&mut **tx)
        .await?;
    let complete: Vec<Uuid> = moved
        .iter()
        .filter(|m| m.complete && !m.wakes)
        .map(|m| m.step_id)
        .collect();
    let woken: Vec<Uuid> = moved
        .iter()
        .filter(|m| m.complete && m.wakes)
        .map(|m| m.step_id)
        .collect();
    let mut out: Vec<Uuid> = Vec::new();
    for m in &moved {
        if !out.contains(&m.task_id) {
            out.push(m.task_id);
        }
    }
    if !complete.is_empty() {
        join(tx, &complete).await?;
    }
    if !woken.is_empty() {
        wake(tx, &woken).await?;
    }
    Ok(out)
}

/// A map's item (`step_id`) went to wait out its backoff: it lends its place in the window,
/// so the map's next item is released now when the window is its task's own cap (the claim
/// keeps the items running at once within it) and fewer than a window of the items are live
/// and not waiting (`map/lend`, at most [`MAP_LEND_WINDOWS`] windows live in all), while its
/// tool's failures in a row, fleet-wide, are below the guard's threshold (its breaker's: past
/// it the service may be down) or a success between failures was recent (the service is up,
/// its calls flaky). The caller holds the task's row lock and syncs its claim queue
/// afterwards. Returns whether an item was released.
pub(crate) async fn lend(tx: &mut Tx, step_id: Uuid, guard: LendGuard) -> Result<bool> {
    let released: Option<i32> = sqlx::query_scalar(sql!("map/lend"))
        .bind(step_id)
        .bind(MAP_LEND_WINDOWS)
        .bind(guard.outage_threshold)
        .bind(guard.healed_within_secs)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(released.is_some())
}

/// Join these map steps (their items have all ended): `waiting → succeeded` with the items'
/// outputs, a `step_completed` event each.
async fn join(tx: &mut Tx, map_steps: &[Uuid]) -> Result<()> {
    let joined: Vec<Joined> = sqlx::query_as(sql!("map/join"))
        .bind(map_steps)
        .fetch_all(&mut **tx)
        .await?;
    for j in joined {
        tx.moved(StepMove::Join, &[j.task_id]);
        tx.push(NewEvent::new(
            j.task_id,
            Event::StepCompleted(event::StepCompleted {
                step_key: j.step_key,
                attempt: j.attempts,
                tool: String::new(),
                promoted: vec![],
            }),
        ));
    }
    Ok(())
}

/// After a map moved outside a completion batch: promote the task's steps (a joined map
/// step's dependents), start the evaluation when nothing of the plan is left (leased to
/// `lease` when given), and sync its claim queue entries.
async fn after_items(
    tx: &mut Tx,
    task_id: Uuid,
    plan_version: i32,
    lease: Option<Lease>,
) -> Result<Option<ClaimedDecision>> {
    let mut decision = None;
    for p in promote_and_count(tx, &[task_id], &[plan_version]).await? {
        if !p.open {
            decision = start_evaluation(tx, task_id, lease).await?;
        }
    }
    tx.touch(&[task_id]);
    tx.wake_steps();
    Ok(decision)
}

/// An item of a map with `on_item_failure: continue` that failed past its retries and repair
/// (the task still runs its plan version): `failed → skipped`, its map goes on (the next item
/// released, or the join), the map step's dependents are promoted, and when nothing of the
/// plan is left the evaluation starts, leased to `lease` when given. The caller holds the
/// task's row lock.
pub(crate) async fn give_up(
    tx: &mut Tx,
    task_id: Uuid,
    plan_version: i32,
    step_id: Uuid,
    lease: Option<Lease>,
) -> Result<Option<ClaimedDecision>> {
    let n = sqlx::query(sql!("map/give_up"))
        .bind(step_id)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    moved_one(n, StepMove::GiveUp, step_id)?;
    tx.moved(StepMove::GiveUp, &[task_id]);
    items_ended(tx, &[step_id]).await?;
    after_items(tx, task_id, plan_version, lease).await
}

/// Agent steps whose turn's calls have all ended: `waiting → ready`, for their next turn. The
/// caller holds their tasks' row locks.
pub(crate) async fn wake(tx: &mut Tx, step_ids: &[Uuid]) -> Result<()> {
    let tasks: Vec<Uuid> = sqlx::query_scalar(sql!("agent/wake"))
        .bind(step_ids)
        .fetch_all(&mut **tx)
        .await?;
    if !tasks.is_empty() {
        tx.moved(StepMove::Wake, &tasks);
        tx.wake_steps();
    }
    Ok(())
}
