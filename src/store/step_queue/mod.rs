//! The step queue: claim ([`claim`]), complete ([`complete`]), fail ([`fail`]); and here the
//! leases in between (heartbeat, release, defer) and what a running step reads.
//!
//! Architecture invariant: every state change of a running step is fenced on its
//! [`StepLease`] — `(step id, lease_token, status = 'running')` — a worker whose lease was taken
//! over gets [`StoreError::Fenced`] and changes nothing. No transaction here is held across a
//! tool call.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::steps::moved_one;
use super::{NewEvent, Result, Store, StoreError, Tx, lock_task};
use crate::domain::circuit::{self, AfterWait, Why};
use crate::domain::event::{self, Event};
use crate::domain::model::ToolFailure;
use crate::domain::tool::ToolDef;
use crate::domain::transitions::StepMove;

pub mod claim;
pub mod complete;
pub mod fail;

pub use claim::{Claim, ClaimCaps, ClaimedStep};
pub use complete::{Completed, Cycle, CycleDone, InlineEvaluation};
pub use fail::FailOutcome;

pub use crate::domain::recovery::FailurePolicy;

/// Identifies one lease on one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StepLease {
    pub step_id: Uuid,
    pub task_id: Uuid,
    pub lease_token: i64,
}

impl ClaimedStep {
    pub fn fence(&self) -> StepLease {
        StepLease {
            step_id: self.id,
            task_id: self.task_id,
            lease_token: self.lease_token,
        }
    }
}

#[derive(Debug, Clone)]
pub struct StepSuccess {
    pub fence: StepLease,
    pub worker_id: Uuid,
    pub tool: String,
    pub parameters: Value,
    pub output: Value,
    /// Copied into the task's runtime metadata.
    pub output_params: Map<String, Value>,
    /// What the call cost, as the tool reported it (`usage.cost`).
    pub cost: Option<f64>,
    /// The call's idempotency key, if its tool got one (recorded on the attempt).
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Clone)]
pub struct StepFailure {
    pub fence: StepLease,
    pub worker_id: Uuid,
    pub tool: String,
    pub parameters: Value,
    pub failure: ToolFailure,
    /// The call's idempotency key, if its tool got one (recorded on the attempt).
    pub idempotency_key: Option<String>,
}

/// What a step needs to resolve its parameters.
#[derive(Debug, Clone)]
pub struct StepContext {
    pub outputs: HashMap<String, Value>,
    /// Runtime metadata overlaid on task metadata.
    pub metadata: Map<String, Value>,
    /// The task's `context`.
    pub context: Value,
    pub tools: HashMap<String, ToolDef>,
}

/// A running step as locked by a fenced failure or release.
#[derive(sqlx::FromRow)]
struct LockedStep {
    step_key: String,
    plan_version: i32,
    attempts: i32,
    retry_count: i32,
    rescue_count: i32,
    started_at: Option<DateTime<Utc>>,
    lease_owner: Option<Uuid>,
    tool: String,
    parameters: Value,
    /// An item of a map with `on_item_failure: continue` (given up rather than escalated).
    tolerated_item: bool,
    /// An item of a map (it lends its place while it waits out a backoff).
    item: bool,
}

impl Store {
    /// A listener on the ready channel (LISTEN/NOTIFY wakes idle workers), on a connection of
    /// its own (never one of the pool's: LISTEN is session state). `None` behind a
    /// transaction pooler with no direct URL: the caller polls.
    pub async fn ready_listener(&self) -> Result<Option<sqlx::postgres::PgListener>> {
        let Some(options) = self.listen.clone() else {
            return Ok(None);
        };
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect_lazy_with(options);
        *self.listener_pool.lock().expect("listener pool lock") = Some(pool.clone());
        let mut l = sqlx::postgres::PgListener::connect_with(&pool).await?;
        l.listen(super::READY_CHANNEL).await?;
        Ok(Some(l))
    }

    /// Extend the leases of the given `(id, lease_token)` steps and decisions (the work this
    /// worker is still running) and record its heartbeat, in one statement. Returns the step
    /// leases extended, and the steps among them whose task was cancelled (their calls are to
    /// be aborted).
    pub async fn heartbeat(
        &self,
        worker_id: Uuid,
        lease_secs: f64,
        steps: &[(Uuid, i64)],
        decisions: &[(Uuid, i64)],
    ) -> Result<(u64, Vec<Uuid>)> {
        let (step_ids, step_tokens): (Vec<Uuid>, Vec<i64>) = steps.iter().copied().unzip();
        let (dec_ids, dec_tokens): (Vec<Uuid>, Vec<i64>) = decisions.iter().copied().unzip();
        // The fence is (id, lease token, owner): a row has an owner exactly while it is
        // running (a CHECK constraint), so the status is not repeated here. Spelled out, it let
        // the planner walk the partial index of running steps, whose dead entries grow with
        // every claim until VACUUM (0.5 s a heartbeat at 100,000 queued tasks); by id, a
        // heartbeat reads about what it renews.
        let (n, cancelled): (i64, Vec<Uuid>) = sqlx::query_as(sql!("step/heartbeat"))
            .bind(worker_id)
            .bind(lease_secs)
            .bind(&step_ids)
            .bind(&step_tokens)
            .bind(&dec_ids)
            .bind(&dec_tokens)
            .fetch_one(&self.pool)
            .await?;
        Ok((n as u64, cancelled))
    }

    /// Outputs of the named steps of a plan version that are done (succeeded or skipped).
    pub async fn step_outputs(
        &self,
        task_id: Uuid,
        plan_version: i32,
        step_keys: &[String],
    ) -> Result<HashMap<String, Value>> {
        let outputs: Vec<(String, Value)> = sqlx::query_as(
            "SELECT step_key, coalesce(output, 'null'::jsonb) FROM steps
             WHERE task_id = $1 AND plan_version = $2 AND step_key = ANY($3)
               AND status IN ('succeeded', 'skipped')",
        )
        .bind(task_id)
        .bind(plan_version)
        .bind(step_keys)
        .fetch_all(&self.pool)
        .await?;
        Ok(outputs.into_iter().collect())
    }

    /// Give a step back without burning an attempt (graceful shutdown). Fenced.
    pub async fn release_step(&self, fence: &StepLease, worker_id: Uuid) -> Result<()> {
        in_tx!(self.pool, |tx| {
            lock_task(tx, fence.task_id).await?;
            let step = lock_running_step(tx, fence, false).await?;
            release_running(tx, fence, None).await?;
            tx.event(
                fence.task_id,
                Event::StepReleased(event::StepReleased {
                    step_key: step.step_key,
                    worker_id,
                    reason: "worker shutting down".into(),
                }),
            );
            tx.wake_steps();
            Ok(())
        })
    }

    /// Give a step back before its call, without an attempt, not to be claimed again before
    /// `wait.until`: its tool's circuit is open, another step is its probe, or a rate limit
    /// holds the tool. A step that has waited as long as the tool allows (its
    /// `retry.max_elapsed_secs`, else `policy.max_wait_ms`, from its first failure or first
    /// wait) fails instead, still without an attempt, and so does its task
    /// ([`circuit::after_wait`]). Fenced.
    pub async fn defer_step(
        &self,
        fence: &StepLease,
        worker_id: Uuid,
        wait: &ToolWait,
        policy: &FailurePolicy,
    ) -> Result<AfterWait> {
        in_tx!(self.pool, |tx| {
            let task = lock_task(tx, fence.task_id).await?;
            let step = lock_running_step(tx, fence, false).await?;
            let at = (fence.task_id, fence.step_id, step.step_key.as_str());
            let (waited, limit, now) = waited(tx, at, &wait.tool, policy, true).await?;
            let left = (wait.until - now).num_milliseconds().max(0) as u64;
            let next = circuit::after_wait(&wait.tool, wait.why, waited, limit, left);
            match &next {
                AfterWait::Defer => {
                    // back at the end of the wait, or at the step's limit if that comes first
                    let left = i64::try_from(limit - waited).unwrap_or(i64::MAX);
                    let until = wait.until.min(now + chrono::Duration::milliseconds(left));
                    release_running(tx, fence, Some(until)).await?;
                    let deferred = event::StepDeferred {
                        step_key: step.step_key,
                        worker_id,
                        until,
                        reason: wait.why.as_str().into(),
                        tool: wait.tool.clone(),
                    };
                    let event = NewEvent::new(fence.task_id, Event::StepDeferred(deferred));
                    tx.events([event]);
                }
                AfterWait::Stop { reason } => {
                    fail::stop_waiting(tx, &task, fence, &step, wait, reason).await?;
                }
            }
            Ok(next)
        })
    }
}

/// How long the step `(task id, step id, step key)` has been kept from `tool` — since its
/// streak's first failure or its first wait, whichever came first, or since a person resumed
/// or reran its task — how long it may be (the tool's `retry.max_elapsed_secs`, else
/// `policy.max_wait_ms`), and the database's `now()`. `mark`: this is a wait (its start is kept
/// on the row).
async fn waited(
    tx: &mut Tx,
    (task_id, step_id, step_key): (Uuid, Uuid, &str),
    tool: &str,
    policy: &FailurePolicy,
    mark: bool,
) -> Result<(u64, u64, DateTime<Utc>)> {
    let retry = super::circuits::retry_context(tx, task_id, step_key, tool, policy, false).await?;
    let since_failure = if retry.streak.failures > 0 {
        retry.streak.elapsed_ms
    } else {
        0
    };
    let (waited, now): (Option<i64>, DateTime<Utc>) = sqlx::query_as(if mark {
        sql!("step/waiting_since")
    } else {
        sql!("step/waited")
    })
    .bind(step_id)
    .bind(since_failure as f64)
    .fetch_one(&mut **tx)
    .await?;
    let limit = retry.wait_limit_ms(policy);
    Ok((waited.unwrap_or(0).max(0) as u64, limit, now))
}

/// A person resumed or reran the task: the time its open steps wait on a tool counts from now.
pub(crate) async fn restart_wait_clocks(tx: &mut Tx, task_id: Uuid) -> Result<()> {
    sqlx::query(sql!("step/restart_wait_clocks"))
        .bind(task_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Store {
    /// How many times the step `step_key` of `task_id` was released in its slot after a hold
    /// and refused again without an attempt spent (its `step_deferred` events of reason
    /// `release_refused`).
    pub async fn refused_releases(&self, task_id: Uuid, step_key: &str) -> Result<i64> {
        Ok(sqlx::query_scalar(sql!("step/refused_releases"))
            .bind(task_id)
            .bind(step_key)
            .fetch_one(&self.pool)
            .await?)
    }

    /// Whether a claimed step has waited on `tool` as long as the tool allows (see
    /// [`Store::defer_step`]): such a step is not given a half-open circuit's probe.
    pub async fn wait_used_up(
        &self,
        step: &ClaimedStep,
        tool: &str,
        policy: &FailurePolicy,
    ) -> Result<bool> {
        in_tx!(self.pool, |tx| {
            let at = (step.task_id, step.id, step.step_key.as_str());
            let (waited, limit, _) = waited(tx, at, tool, policy, false).await?;
            Ok(waited >= limit)
        })
    }
}

/// What keeps a step from calling its tool now ([`Store::defer_step`]).
#[derive(Debug, Clone)]
pub struct ToolWait {
    /// The tool that may not be called (the step's, or one of its actions').
    pub tool: String,
    pub until: DateTime<Utc>,
    pub why: Why,
}

/// Lock the running step that carries this lease ([`StoreError::Fenced`] when it does not).
pub(crate) async fn lock_running(tx: &mut Tx, fence: &StepLease) -> Result<()> {
    lock_running_step(tx, fence, false).await.map(|_| ())
}

/// Lock the step row if it still carries this lease. `require_expired` adds the lease deadline
/// to the fence (rescue must not steal a lease its owner just renewed).
async fn lock_running_step(
    tx: &mut Tx,
    fence: &StepLease,
    require_expired: bool,
) -> Result<LockedStep> {
    sqlx::query_as(sql!("step/lock_running"))
        .bind(fence.step_id)
        .bind(fence.task_id)
        .bind(fence.lease_token)
        .bind(require_expired)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(StoreError::Fenced)
}

/// `running → ready` without an attempt (the caller holds the fenced step lock), claimable
/// again at once or, with `until`, not before then.
pub(crate) async fn release_running(
    tx: &mut Tx,
    fence: &StepLease,
    until: Option<DateTime<Utc>>,
) -> Result<()> {
    let n = sqlx::query(sql!("step/release"))
        .bind(fence.step_id)
        .bind(until)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    tx.moved(StepMove::Release, &[fence.task_id]);
    let step_id = fence.step_id;
    moved_one(n, StepMove::Release, step_id)
}
