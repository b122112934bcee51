//! The claim queue (`claim_queue`): one narrow row per claimable step, so that a claim reads
//! about what it takes, whatever the depth (migration `20261125000018_claim_queue.sql`).
//!
//! Architecture invariant: for every task, its entries plus its running steps never exceed
//! its `max_concurrent_steps`. Entries are the task's first ready steps of its current plan
//! version, in plan order (a step of a replaced plan is never started anew), as many as it has
//! room for; `sync` rewrites them under the task's row lock wherever a step becomes
//! ready, stops running or leaves `ready`, or the task's status changes. A claim turns entries
//! into running steps one for one, so it needs no count to keep the per-task cap.
//!
//! Claim order: priority (higher first), then the task's age, then plan order. A task holds at
//! most `max_concurrent_steps` entries, so a task with thousands of ready steps takes that
//! many slots of the head and a task submitted after it is served in the same claim.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use uuid::Uuid;

use super::db::Conn;
use super::{Result, Tx};

/// Rewrite the claim queue entries of these tasks (their rows locked by the caller) from
/// their steps: a running task gets its first ready steps of its current plan version, in plan
/// order, as many as its `max_concurrent_steps` minus its running steps; any other task gets
/// none. Entries that are already right are left as they are. One statement; per task, its
/// cost is bounded by its room, not by its number of steps. Run by the write context
/// ([`super::write`]) only, for the tasks a transaction touched.
pub(super) async fn sync(conn: &mut Conn, task_ids: &[Uuid]) -> Result<()> {
    sqlx::query(SYNC).bind(task_ids).execute(conn).await?;
    Ok(())
}

const SYNC: &str = sql!("queue/sync");

/// Whether a tool with limits exists, as of a version of the tool registry. Claims read only
/// lane '' (one statement) while none does; with one, they take the checked path, which walks
/// the limited lanes. Learned from the registry version every claimed step and every idle
/// poll carries, so it costs no statement of its own but when the registry changed.
#[derive(Debug)]
pub(crate) struct LaneCache {
    /// The registry version `limited` was read at (-1: not yet read).
    version: AtomicI64,
    limited: AtomicBool,
    /// A newer registry version was seen: read again before the next claim.
    stale: AtomicBool,
}

impl Default for LaneCache {
    fn default() -> Self {
        Self {
            version: AtomicI64::new(-1),
            limited: AtomicBool::new(false),
            stale: AtomicBool::new(true),
        }
    }
}

impl LaneCache {
    /// Whether claims must take the checked path: a limited tool, a key pattern with a
    /// `max_running`, or a tenant with caps (read afresh when the registry changed).
    pub(crate) async fn limited(&self, tx: &mut Tx) -> Result<bool> {
        if self.stale.load(Ordering::Acquire) {
            let (version, limited): (i64, bool) = sqlx::query_as(sql!("queue/limited"))
                .fetch_one(&mut **tx)
                .await?;
            self.limited.store(limited, Ordering::Release);
            self.version.store(version, Ordering::Release);
            self.stale.store(false, Ordering::Release);
        }
        Ok(self.limited.load(Ordering::Acquire))
    }

    /// A claim or a poll saw the registry at `version`.
    pub(crate) fn saw(&self, version: i64) {
        if version != self.version.load(Ordering::Acquire) {
            self.stale.store(true, Ordering::Release);
        }
    }
}

/// Slots of the claim ring (partitions `claim_queue_0` … `claim_queue_3`).
pub const RING_SLOTS: i16 = 4;

/// A drained slot is truncated once at most this many entries are left in it (they move to
/// the current slot first): a slot still holding a deep backlog is left to VACUUM.
const MOVE_AT_MOST: i64 = 2_000;

/// A slot smaller than this is neither truncated nor turned from (unless the ring must turn to
/// it): its few dead entries are VACUUM's, and a claim walks at most these few pages of them.
/// A `TRUNCATE` makes every session plan its claim statements anew (4–9 ms each on a stock
/// server), so on a quiet queue, where a slot never grows this large, the ring stays still and
/// the plans stay made; under load a slot passes it within its turn (docs/benchmarks-history.md, "Stock first").
const TRUNCATE_AT_BYTES: i64 = 128 * 1024;

/// What [`super::Store::claim_ring_upkeep`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RingUpkeep {
    /// Slots truncated (their dead entries freed).
    pub truncated: u32,
    /// Entries moved out of truncated slots into the current one.
    pub moved: u64,
    /// The ring turned to its next slot.
    pub turned: bool,
}

impl super::Store {
    /// Keep the claim queue's ring (migration `20261125000018_claim_queue.sql`): truncate every
    /// slot but the current one that holds 128 KiB or more (`TRUNCATE_AT_BYTES`) but few live
    /// entries (moving those to the current slot first, under the slot's exclusive lock, taken
    /// with a 50 ms lock timeout so that claims never wait longer; a slot whose lock is not
    /// granted is left for the next round), then turn the ring when the current slot is
    /// `turn_secs` old, holds 128 KiB or more, and the next slot is empty (truncated first if it
    /// must be). Safe to run from every worker at once.
    pub async fn claim_ring_upkeep(&self, turn_secs: f64) -> Result<RingUpkeep> {
        let (current, age, sizes): (i16, f64, Vec<i64>) = sqlx::query_as(sql!("queue/ring_state"))
            .bind(i32::from(RING_SLOTS))
            .fetch_one(&self.pool)
            .await?;
        let size = |slot: i16| sizes.get(slot as usize).copied().unwrap_or(0);
        let next = (current + 1) % RING_SLOTS;
        let turn = age >= turn_secs && size(current) >= TRUNCATE_AT_BYTES;
        let mut done = RingUpkeep::default();
        for slot in 0..RING_SLOTS {
            if slot == current || size(slot) == 0 {
                continue;
            }
            if size(slot) < TRUNCATE_AT_BYTES && !(turn && slot == next) {
                continue;
            }
            if let Some(moved) = self.truncate_slot(slot).await? {
                done.truncated += 1;
                done.moved += moved;
            }
        }
        let next_empty = size(next) == 0 || done.truncated > 0;
        if turn && next_empty {
            let n = sqlx::query(sql!("queue/turn_ring"))
                .bind(current)
                .bind(next)
                .execute(&self.pool)
                .await?
                .rows_affected();
            done.turned = n == 1;
        }
        Ok(done)
    }

    /// Truncate one slot of the ring if few entries are left in it: Some(entries moved), or
    /// None when it still holds many or its lock was not granted in time.
    async fn truncate_slot(&self, slot: i16) -> Result<Option<u64>> {
        // a first look without the lock (a sequential read of the slot, dead rows included)
        let live: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM (SELECT 1 FROM claim_queue_{slot} LIMIT {}) AS x",
            MOVE_AT_MOST + 1
        )))
        .fetch_one(&self.pool)
        .await?;
        if live > MOVE_AT_MOST {
            return Ok(None);
        }
        let r: Result<u64> = in_tx!(self.pool, |tx| {
            sqlx::query("SET LOCAL lock_timeout = '50ms'")
                .execute(&mut **tx)
                .await?;
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "LOCK TABLE claim_queue_{slot} IN ACCESS EXCLUSIVE MODE"
            )))
            .execute(&mut **tx)
            .await?;
            // another worker may have truncated this slot meanwhile and turned the ring to it;
            // once it is not the current slot, the ring cannot turn to it while it holds rows
            let current: i16 = sqlx::query_scalar("SELECT slot FROM claim_ring")
                .fetch_one(&mut **tx)
                .await?;
            if current == slot {
                return Err(super::StoreError::Conflict("the current slot".into()));
            }
            // under the lock every committed entry is seen, and none can change; the moved
            // entries take the ring's current slot
            let moved = sqlx::query(sql!("queue/move_live_entries"))
                .bind(slot)
                .execute(&mut **tx)
                .await?
                .rows_affected();
            sqlx::query(sqlx::AssertSqlSafe(format!("TRUNCATE claim_queue_{slot}")))
                .execute(&mut **tx)
                .await?;
            Ok(moved)
        });
        match r {
            Ok(moved) => Ok(Some(moved)),
            Err(super::StoreError::Conflict(_)) => Ok(None),
            Err(super::StoreError::Db(sqlx::Error::Database(e)))
                if e.code().as_deref() == Some(LOCK_NOT_AVAILABLE) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// SQLSTATE of a lock not granted within `lock_timeout`.
const LOCK_NOT_AVAILABLE: &str = "55P03";
