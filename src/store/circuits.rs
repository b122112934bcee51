//! Recovery's view of a tool: its retry policy and circuit breaker (the `tools` row over the
//! worker's defaults), a step's failure streak, and the fleet-wide circuit row
//! (`tool_circuits`, migration `20261126000019_recovery_faults.sql`). The decisions are
//! [`crate::domain::circuit`] and [`crate::domain::recovery::RetryPolicy`]; this file reads and
//! writes their rows.
//!
//! Lock order: a circuit row is locked after the task and step rows (failures, completions),
//! or alone (the gate before a call).

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use uuid::Uuid;

use super::{Result, Store, Tx};
use crate::domain::ToolFailure;
use crate::domain::circuit::{Breaker, BreakerSpec, Circuit, DEFAULT_PACE_MS, Gate, Hold};
use crate::domain::failure;
use crate::domain::recovery::{FailurePolicy, RetryPolicy, RetrySpec, Streak};

/// When a map's item waiting out a backoff may lend its place: while its tool's failures in a
/// row are below `outage_threshold`, or a success reset such a count within the last
/// `healed_within_secs` (the service is up, its calls are flaky).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LendGuard {
    pub outage_threshold: i32,
    pub healed_within_secs: f64,
}

/// What recovery needs to know about a failed step's tool and history.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryContext {
    pub policy: RetryPolicy,
    pub breaker: Breaker,
    pub streak: Streak,
    /// An HTTP tool: only those have a circuit (a built-in runs in the worker, and
    /// `http_request` calls whatever URL its step names).
    pub http: bool,
}

impl RetryContext {
    /// The tool's failures in a row, fleet-wide, from which it may be down (its breaker's
    /// threshold; none for a tool without a circuit or with the breaker off), and how recent
    /// a success between failures shows it up all the same (its cool-down): what a map's
    /// item waiting out a backoff checks before it lends its place ([`super::maps::lend`]).
    pub fn lend_guard(&self) -> LendGuard {
        LendGuard {
            outage_threshold: match self.breaker.failure_threshold {
                t if self.http && t > 0 => t,
                _ => i32::MAX,
            },
            healed_within_secs: self.breaker.cool_down_ms as f64 / 1000.0,
        }
    }

    /// How long the step may wait on its tool: the tool's `retry.max_elapsed_secs`, else the
    /// workers' `max_wait_ms`.
    pub fn wait_limit_ms(&self, defaults: &FailurePolicy) -> u64 {
        self.policy.max_elapsed_ms.unwrap_or(defaults.max_wait_ms)
    }
}

/// The step key's failed attempts since its last success (a lost worker's excepted), and the
/// tool's `retry` and `circuit_breaker`, in one statement (`attempts_task_step_idx`).
const CONTEXT: &str = sql!("circuit/retry_context");

/// The retry context of a failure of `step_key` on `tool`. `pending`: the failure is not yet
/// recorded as an attempt (it counts in the streak all the same).
pub(crate) async fn retry_context(
    tx: &mut Tx,
    task_id: Uuid,
    step_key: &str,
    tool: &str,
    defaults: &FailurePolicy,
    pending: bool,
) -> Result<RetryContext> {
    type Row = (
        i32,
        i64,
        Option<Json<RetrySpec>>,
        Option<Json<BreakerSpec>>,
        Option<bool>,
        Option<bool>,
    );
    let (failures, elapsed_ms, retry, breaker, http, alternative): Row = sqlx::query_as(CONTEXT)
        .bind(task_id)
        .bind(step_key)
        .bind(tool)
        .fetch_one(&mut **tx)
        .await?;
    Ok(RetryContext {
        policy: defaults.retry.with(retry.as_ref().map(|j| &j.0)),
        breaker: defaults
            .breaker
            .with(breaker.as_ref().map(|j| &j.0), alternative == Some(true)),
        streak: Streak {
            failures: failures + i32::from(pending),
            elapsed_ms: elapsed_ms.max(0) as u64,
        },
        http: http.unwrap_or(false),
    })
}

type Time = Option<DateTime<Utc>>;

/// A `tool_circuits` row as read with the database's `now()`.
#[derive(sqlx::FromRow)]
struct Row {
    consecutive_failures: i32,
    open_until: Time,
    probe_until: Time,
    held_until: Time,
    pace_ms: i32,
    next_slot: Time,
    last_release: Time,
    now: DateTime<Utc>,
}

impl Row {
    fn split(self) -> (Circuit, DateTime<Utc>) {
        let c = Circuit {
            consecutive_failures: self.consecutive_failures,
            open_until: self.open_until,
            probe_until: self.probe_until,
            held_until: self.held_until,
            pace_ms: self.pace_ms,
            next_slot: self.next_slot,
            last_release: self.last_release,
        };
        (c, self.now)
    }
}

macro_rules! read_circuit {
    () => {
        "SELECT consecutive_failures, open_until, probe_until, held_until, pace_ms, next_slot,
                last_release, now() AS now
         FROM tool_circuits WHERE tool_id = $1"
    };
}
const READ: &str = read_circuit!();
const LOCK: &str = concat!(read_circuit!(), " FOR UPDATE");

/// A circuit row, locked, with the database's `now()`.
async fn lock(tx: &mut Tx, tool: &str) -> Result<Option<(Circuit, DateTime<Utc>)>> {
    let row: Option<Row> = sqlx::query_as(LOCK)
        .bind(tool)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(row.map(Row::split))
}

async fn write(tx: &mut Tx, tool: &str, c: &Circuit) -> Result<()> {
    sqlx::query(sql!("circuit/write"))
        .bind(tool)
        .bind(c.consecutive_failures)
        .bind(c.open_until)
        .bind(c.probe_until)
        .bind(c.held_until)
        .bind(c.pace_ms)
        .bind(c.next_slot)
        .bind(c.last_release)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Count a failed call of an HTTP tool on its circuit: an outage (toward opening it), a
/// `Retry-After` (a hold on the whole tool until then, at most
/// [`crate::domain::circuit::MAX_HOLD_MS`]). Nothing else touches the row.
pub(crate) async fn record_failure(
    tx: &mut Tx,
    tool: &str,
    ctx: &RetryContext,
    f: &ToolFailure,
) -> Result<()> {
    if !ctx.http {
        return Ok(());
    }
    let outage = failure::is_outage(f) && ctx.breaker.failure_threshold > 0;
    let asked = f.retry_after_ms.map(u64::from).filter(|ms| *ms > 0);
    if !outage && asked.is_none() {
        return Ok(());
    }
    let hold = asked.map(|ms| Hold {
        ms,
        pace_ms: pace((f.pace_ms > 0).then_some(u32::from(f.pace_ms))),
    });
    change(tx, tool, |c, now| {
        c.after_failure(ctx.breaker, outage, ctx.streak.failures, hold, now)
    })
    .await
}

/// The pace of a release after a hold: the announced one, else the default.
fn pace(announced: Option<u32>) -> u64 {
    announced.map_or(DEFAULT_PACE_MS, u64::from)
}

/// Make `tool`'s circuit row if it has none, lock it, and write what `next` makes of it (with
/// the database's `now()`) when that differs. A tool deleted meanwhile changes nothing.
async fn change(
    tx: &mut Tx,
    tool: &str,
    next: impl FnOnce(&Circuit, DateTime<Utc>) -> Circuit,
) -> Result<()> {
    sqlx::query(sql!("circuit/ensure"))
        .bind(tool)
        .execute(&mut **tx)
        .await?;
    let Some((c, now)) = lock(tx, tool).await? else {
        return Ok(());
    };
    let next = next(&c, now);
    if next != c {
        write(tx, tool, &next).await?;
    }
    Ok(())
}

impl Store {
    /// May a step call `tool` now? Only asked for a tool whose circuit is not closed or that a
    /// `Retry-After` holds (the worker's tool cache knows which): a half-open circuit grants
    /// one probe (for `probe_lease_ms`; not to a step that `may_probe` no longer), a passed
    /// hold is cleared; after a hold, `step` (its `run_after`) calls in the release slot it
    /// was given, or is given the next one. Returns the gate and the database's `now()`.
    pub async fn gate_tool(
        &self,
        tool: &str,
        probe_lease_ms: i64,
        may_probe: bool,
        step: Uuid,
    ) -> Result<(Gate, DateTime<Utc>)> {
        in_tx!(self.pool, |tx| {
            let Some((c, now)) = lock(tx, tool).await? else {
                // no row: closed (the time goes with a call and is never compared)
                return Ok((Gate::Call, DateTime::<Utc>::MIN_UTC));
            };
            let woke_at = match c.held_until {
                Some(_) => {
                    sqlx::query_scalar("SELECT run_after FROM steps WHERE id = $1")
                        .bind(step)
                        .fetch_optional(&mut **tx)
                        .await?
                }
                None => None,
            };
            let (gate, next) = c.gate_for(now, probe_lease_ms, may_probe, woke_at);
            if next != c {
                write(tx, tool, &next).await?;
            }
            Ok((gate, now))
        })
    }

    /// Hold `tool` fleet-wide for `ms` (a successful answer that used up its rate limit, or a
    /// call released after a hold that was refused again): no step calls it before then, and
    /// after it they go one per the `pace_ms` announced (else the default). Only HTTP tools
    /// have a circuit; for others nothing changes.
    pub async fn hold_tool(&self, tool: &str, ms: u64, pace_ms: Option<u32>) -> Result<()> {
        self.hold_tool_as(tool, ms, pace_ms, false).await
    }

    /// [`Store::hold_tool`] for a call released in its slot and refused again (`refused`):
    /// the release after this hold goes at least twice as slowly
    /// ([`Circuit::refused_release`]).
    pub async fn hold_tool_as(
        &self,
        tool: &str,
        ms: u64,
        pace_ms: Option<u32>,
        refused: bool,
    ) -> Result<()> {
        in_tx!(self.pool, |tx| {
            let http: Option<bool> =
                sqlx::query_scalar("SELECT kind = 'http' FROM tools WHERE id = $1")
                    .bind(tool)
                    .fetch_optional(&mut **tx)
                    .await?;
            if http != Some(true) {
                return Ok(());
            }
            change(tx, tool, |c, now| match refused {
                true => c.refused_release(ms, pace(pace_ms), now),
                false => c.hold(ms, pace(pace_ms), now),
            })
            .await
        })
    }

    /// A tool's circuit as of the database's `now()` (None: it never failed with an outage
    /// nor asked to wait).
    pub async fn tool_circuit(&self, tool: &str) -> Result<Option<(Circuit, DateTime<Utc>)>> {
        let row: Option<Row> = sqlx::query_as(READ)
            .bind(tool)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(Row::split))
    }

    /// Every tool's circuit (the tools that never failed with an outage nor asked to wait have
    /// none), with the database's `now()`.
    pub async fn tool_circuits(&self) -> Result<Vec<(String, Circuit, DateTime<Utc>)>> {
        #[derive(sqlx::FromRow)]
        struct Named {
            tool_id: String,
            #[sqlx(flatten)]
            row: Row,
        }
        let rows: Vec<Named> = sqlx::query_as(
            "SELECT tool_id, consecutive_failures, open_until, probe_until, held_until, pace_ms,
                    next_slot, last_release, now() AS now
             FROM tool_circuits ORDER BY tool_id",
        )
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|n| {
                let (c, now) = n.row.split();
                (n.tool_id, c, now)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_closing_success_paces_at_the_default() {
        // step/complete closes a circuit in SQL: its pace is the domain's default
        let sql = sql!("step/complete");
        let want = format!("THEN {} ELSE c.pace_ms END", super::DEFAULT_PACE_MS);
        assert!(sql.contains(&want), "{want}");
    }
}
