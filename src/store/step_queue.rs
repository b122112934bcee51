//! The step queue: claim, heartbeat, complete, fail, release, rescue.
//!
//! Architecture invariant: every state change of a running step is fenced on
//! `(step id, lease_token, status = 'running')`; a worker whose lease was taken over gets
//! [`StoreError::Fenced`] and changes nothing. No transaction here is held across a tool call.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::apply::{Evaluated, Stage, apply_evaluations};
use super::circuits;
use super::claim_queue::{self, LaneCache};
use super::decision_queue::{ClaimedDecision, Lease, create_decision};
use super::lifecycle::{fail_task, record_recovery, start_evaluation};
use super::transitions::{
    DoneStep, FailedRun, Success, claim_checked, claim_plain, complete_running, fail_running,
    promote_and_count, release_running,
};
use super::{NewEvent, Result, Store, StoreError, Tx, append_events, lock_task, notify_ready};
use crate::domain::decision::{DecisionContext, DecisionInput};
use crate::domain::model::{ToolFailure, WORKER_LOST, event_kind};
use crate::domain::records::{AttemptRow, StepRow, TaskRow};
use crate::domain::recovery::{self, AfterFailure, Counters, Evaluation, RecoveryAction};
use crate::domain::status::{DecisionKind, TaskStatus};
use crate::domain::tool::ToolDef;
use crate::domain::transitions::StepMove;

pub use super::transitions::{Claim, ClaimedStep};

pub use crate::domain::recovery::FailurePolicy;

/// Identifies one lease on one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fence {
    pub step_id: Uuid,
    pub task_id: Uuid,
    pub lease_token: i64,
}

impl ClaimedStep {
    pub fn fence(&self) -> Fence {
        Fence {
            step_id: self.id,
            task_id: self.task_id,
            lease_token: self.lease_token,
        }
    }
}

#[derive(Debug, Clone)]
pub struct StepSuccess {
    pub fence: Fence,
    pub worker_id: Uuid,
    pub tool: String,
    pub parameters: Value,
    pub output: Value,
    /// Copied into the task's runtime metadata.
    pub output_params: Map<String, Value>,
}

#[derive(Debug, Clone)]
pub struct StepFailure {
    pub fence: Fence,
    pub worker_id: Uuid,
    pub tool: String,
    pub parameters: Value,
    pub failure: ToolFailure,
}

/// What a failed attempt led to.
#[derive(Debug, Clone)]
pub struct FailOutcome {
    pub transition: AfterFailure,
    /// A step reflection, leased to the failing worker, to run now.
    pub decision: Option<ClaimedDecision>,
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
}

/// One result per item of a completion batch: the evaluation it started, if any.
pub type Completed = Result<Option<ClaimedDecision>>;

impl Store {
    /// Claim up to `c.limit` ready steps, honouring each task's `max_concurrent_steps`.
    ///
    /// One short transaction, two statements: lock tasks that have ready steps
    /// (`FOR NO KEY UPDATE SKIP LOCKED`), then lease their ready steps in plan order up to each
    /// task's free room and append their `step_started` events ([`super::transitions`]).
    /// The commit is asynchronous: losing it in a crash loses only the claim (ARCHITECTURE.md,
    /// "The step queue").
    pub async fn claim_steps(&self, c: &Claim) -> Result<Vec<ClaimedStep>> {
        in_tx!(hot self, |tx| claim_in(tx, c, true, &self.lanes).await)
    }

    /// [`Store::claim_steps`]; when it claimed fewer than asked, also the milliseconds until
    /// the earliest ready step in backoff falls due (read in the same transaction: an idle
    /// worker's poll costs no extra commit).
    pub async fn claim_steps_or_next_due(
        &self,
        c: &Claim,
    ) -> Result<(Vec<ClaimedStep>, Option<f64>)> {
        in_tx!(hot self, |tx| {
            let claimed = claim_in(tx, c, true, &self.lanes).await?;
            let due = if (claimed.len() as i64) < c.limit {
                let (due, registry) = next_due(&mut **tx).await?;
                // an idle worker learns of a tool that gained limits (its steps moved to a
                // lane the plain claim does not read) at its next poll
                self.lanes.saw(registry);
                due
            } else {
                None
            };
            Ok((claimed, due))
        })
    }

    /// Milliseconds until the earliest ready step in backoff becomes due (None: none waiting).
    pub async fn next_due_ms(&self) -> Result<Option<f64>> {
        Ok(next_due(&self.pool).await?.0)
    }

    /// A listener on the ready channel (LISTEN/NOTIFY wakes idle workers).
    pub async fn ready_listener(&self) -> Result<sqlx::postgres::PgListener> {
        let mut l = sqlx::postgres::PgListener::connect_with(&self.pool).await?;
        l.listen(super::READY_CHANNEL).await?;
        Ok(l)
    }

    /// Extend the leases of the given `(id, lease_token)` steps and decisions (the work this
    /// worker is still running) and record its heartbeat, in one statement. Returns the step
    /// leases extended.
    pub async fn heartbeat(
        &self,
        worker_id: Uuid,
        lease_secs: f64,
        steps: &[(Uuid, i64)],
        decisions: &[(Uuid, i64)],
    ) -> Result<u64> {
        let (step_ids, step_tokens): (Vec<Uuid>, Vec<i64>) = steps.iter().copied().unzip();
        let (dec_ids, dec_tokens): (Vec<Uuid>, Vec<i64>) = decisions.iter().copied().unzip();
        // The fence is (id, lease token, owner): a row has an owner exactly while it is
        // running (a CHECK constraint), so the status is not repeated here. Spelled out, it let
        // the planner walk the partial index of running steps, whose dead entries grow with
        // every claim until VACUUM (0.5 s a heartbeat at 100,000 queued tasks); by id, a
        // heartbeat reads about what it renews.
        let n: i64 = sqlx::query_scalar(
            "WITH s AS (
                 UPDATE steps SET lease_expires_at = now() + make_interval(secs => $2)
                 FROM unnest($3::uuid[], $4::bigint[]) AS f(id, token)
                 WHERE steps.id = f.id AND steps.lease_token = f.token AND steps.lease_owner = $1
                 RETURNING 1),
             d AS (
                 UPDATE decisions SET lease_expires_at = now() + make_interval(secs => $2)
                 FROM unnest($5::uuid[], $6::bigint[]) AS f(id, token)
                 WHERE decisions.id = f.id AND decisions.lease_token = f.token
                   AND decisions.lease_owner = $1
                 RETURNING 1),
             w AS (UPDATE workers SET last_heartbeat = now(),
                       in_flight = cardinality($3::uuid[]) + cardinality($5::uuid[])
                   WHERE id = $1)
             SELECT count(*) FROM s",
        )
        .bind(worker_id)
        .bind(lease_secs)
        .bind(&step_ids)
        .bind(&step_tokens)
        .bind(&dec_ids)
        .bind(&dec_tokens)
        .fetch_one(&self.pool)
        .await?;
        Ok(n as u64)
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

    /// Record a successful attempt; promote dependents whose dependencies are all done; when
    /// nothing of the plan is left, start its evaluation (returned, leased to this worker).
    /// One transaction, fenced. (The one-item case of [`Store::complete_steps`].)
    pub async fn complete_step(&self, s: &StepSuccess, lease_secs: f64) -> Completed {
        self.complete_steps(std::slice::from_ref(s), lease_secs)
            .await?
            .pop()
            .expect("one result per item")
    }

    /// Complete many steps in one transaction with a fixed number of statements, whatever the
    /// batch size: lock their tasks (in id order, so concurrent batches cannot deadlock), mark
    /// every step whose lease still holds `succeeded` (fenced `UPDATE … FROM unnest`), insert
    /// their attempts, merge output params into runtime metadata, promote blocked steps whose
    /// dependencies are all done, and start the evaluation of every task whose plan is done.
    /// A step whose lease was taken over gets `Err(Fenced)` and changes nothing.
    pub async fn complete_steps(
        &self,
        items: &[StepSuccess],
        lease_secs: f64,
    ) -> Result<Vec<Completed>> {
        let cycle = Cycle {
            items,
            lease_secs,
            inline: None,
            claim: None,
        };
        Ok(self.complete_and_claim(&cycle).await?.completed)
    }

    /// Record a failed attempt, count it, and apply the failure decision
    /// ([`recovery::after_failure`]) in the same transaction. Fenced.
    pub async fn fail_step(&self, f: &StepFailure, policy: FailurePolicy) -> Result<FailOutcome> {
        let input = FailureInput {
            fence: &f.fence,
            worker_id: Some(f.worker_id),
            tool: Some(&f.tool),
            parameters: Some(&f.parameters),
            failure: &f.failure,
            require_expired: false,
        };
        in_tx!(hot self, |tx| fail_locked(tx, input, policy).await)
    }

    /// Give a step back without burning an attempt (graceful shutdown). Fenced.
    pub async fn release_step(&self, fence: &Fence, worker_id: Uuid) -> Result<()> {
        in_tx!(self.pool, |tx| {
            lock_task(tx, fence.task_id).await?;
            let step = lock_running_step(tx, fence, false).await?;
            release_running(tx, fence.step_id, None).await?;
            claim_queue::sync(tx, &[fence.task_id]).await?;
            append_events(
                tx,
                &[NewEvent::new(
                    fence.task_id,
                    event_kind::STEP_RELEASED,
                    json!({"step_id": step.step_key, "worker_id": worker_id, "reason": "worker shutting down"}),
                )],
            )
            .await?;
            notify_ready(tx).await
        })
    }

    /// Give a step back before its call, without an attempt, not to be claimed again before
    /// `until`: its tool's circuit is open, another step is its probe, or a `Retry-After`
    /// holds the tool (`why`). Fenced.
    pub async fn defer_step(
        &self,
        fence: &Fence,
        worker_id: Uuid,
        until: DateTime<Utc>,
        why: &str,
    ) -> Result<()> {
        in_tx!(self.pool, |tx| {
            lock_task(tx, fence.task_id).await?;
            let step = lock_running_step(tx, fence, false).await?;
            release_running(tx, fence.step_id, Some(until)).await?;
            claim_queue::sync(tx, &[fence.task_id]).await?;
            let payload = json!({"step_id": step.step_key, "worker_id": worker_id,
                                 "until": until, "reason": why, "tool": step.tool});
            let event = NewEvent::new(fence.task_id, event_kind::STEP_DEFERRED, payload);
            append_events(tx, &[event]).await
        })
    }

    /// Re-queue steps whose lease expired (their worker is presumed dead) as failed attempts
    /// with category `worker_lost`. Safe to run from many workers at once: each rescue is fenced
    /// on the expired lease. Returns how many steps were rescued.
    pub async fn rescue_expired(&self, limit: i64, policy: FailurePolicy) -> Result<u64> {
        let expired: Vec<(Uuid, Uuid, i64)> = sqlx::query_as(
            "SELECT id, task_id, lease_token FROM steps
             WHERE status = 'running' AND lease_expires_at < now()
             ORDER BY lease_expires_at LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        let failure = ToolFailure::new(
            WORKER_LOST,
            "the worker holding this step stopped renewing its lease",
            true,
        );
        let mut rescued = 0;
        for (step_id, task_id, lease_token) in expired {
            let fence = Fence {
                step_id,
                task_id,
                lease_token,
            };
            let input = FailureInput {
                fence: &fence,
                worker_id: None,
                tool: None,
                parameters: None,
                failure: &failure,
                require_expired: true,
            };
            match in_tx!(self.pool, |tx| fail_locked(tx, input, policy).await) {
                Ok(_) => rescued += 1,
                // another worker rescued it first, or its owner came back in time
                Err(StoreError::Fenced) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(rescued)
    }
}

/// Milliseconds until the earliest claimable step in backoff falls due, or an empty rate-limit
/// bucket gets its next token (None: neither); and the tool registry's version.
async fn next_due(db: impl sqlx::PgExecutor<'_>) -> Result<(Option<f64>, i64)> {
    // also when the next token of an empty rate-limit bucket arrives (its steps may wait)
    Ok(sqlx::query_as(
        "SELECT least(
             (SELECT (extract(epoch FROM min(run_after) - now()) * 1000)::float8 FROM claim_queue
              WHERE delayed AND run_after > now()),
             (SELECT min((1 - b.tokens - extract(epoch FROM now() - b.refilled_at) * t.rate_limit_per_sec)
                         / t.rate_limit_per_sec * 1000)::float8
              FROM tool_buckets b JOIN tools t ON t.id = b.tool_id
              WHERE t.rate_limit_per_sec IS NOT NULL
                AND b.tokens + extract(epoch FROM now() - b.refilled_at) * t.rate_limit_per_sec < 1)),
             (SELECT version FROM tool_registry)",
    )
    .fetch_one(db)
    .await?)
}

/// Claim inside `tx` from the claim queue ([`super::claim_queue`]).
///
/// With no task cap and no tool limits in play, one statement ([`claim_plain`]); otherwise
/// the checked claim: the admission lock (under a cap), the candidates and their tasks and
/// tools locked ([`claim_queue::pick`]), then a statement with a later snapshot that counts
/// and claims ([`claim_checked`]).
///
/// With `async_commit` (a claim on its own) the transaction commits with
/// `synchronous_commit = off`: its commit returns before its WAL
/// is flushed, so the task rows it locked are free again after microseconds rather than after an
/// fsync. Losing such a commit in a crash loses only the claim: the steps are `ready` again and
/// are claimed anew (the worker's completion of a step whose claim was lost is fenced). Any later
/// durable commit (a completion) flushes the WAL up to it, claims included.
pub(crate) async fn claim_in(
    tx: &mut Tx,
    c: &Claim,
    async_commit: bool,
    lanes: &LaneCache,
) -> Result<Vec<ClaimedStep>> {
    let claimed = if c.max_running_tasks > 0 || lanes.limited(tx).await? {
        let admission = c.max_running_tasks > 0 && try_admission_lock(tx).await?;
        let picked = claim_queue::pick(tx, c, async_commit, admission).await?;
        if picked.tasks.is_empty() {
            return Ok(vec![]);
        }
        claim_checked(tx, &picked, c).await?
    } else {
        claim_plain(tx, c, async_commit).await?
    };
    if let Some(s) = claimed.first() {
        lanes.saw(s.tools_version);
    }
    Ok(claimed)
}

#[cfg(feature = "testing")]
impl Store {
    /// The claim's statements under `EXPLAIN (ANALYZE, BUFFERS)` for a claim of `limit` steps
    /// (the plain claim, or with a task cap the checked claim's two), in a transaction rolled
    /// back afterwards: (shared buffers hit or read, the plan) per statement.
    pub async fn explain_claim(
        &self,
        limit: i64,
        max_running_tasks: i64,
    ) -> Result<Vec<(i64, String)>> {
        let mut out = Vec::new();
        let c = Claim {
            worker_id: Uuid::nil(),
            limit,
            lease_secs: 30.0,
            max_running_tasks,
        };
        // planned as the workers' hot transactions plan it
        let r: Result<()> = in_tx!(hot self, |tx| {
            if max_running_tasks > 0 {
                let admission = try_admission_lock(tx).await?;
                let sql = format!("EXPLAIN (ANALYZE, BUFFERS) {}", claim_queue::PICK);
                let lines: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                    .bind(limit)
                    .bind(false)
                    .bind(max_running_tasks)
                    .bind(admission)
                    .fetch_all(&mut **tx)
                    .await?;
                out.push((super::transitions::buffers_of(&lines), lines.join("\n")));
                let picked = claim_queue::pick(tx, &c, false, admission).await?;
                out.push(super::transitions::explain_claim_checked(tx, &picked, &c).await?);
            } else {
                out.push(super::transitions::explain_claim_plain(tx, &c).await?);
            }
            Err(StoreError::Conflict("explained; rolled back".into()))
        });
        match r {
            Err(StoreError::Conflict(_)) | Ok(()) => Ok(out),
            Err(e) => Err(e),
        }
    }
}

/// Under `max_running_tasks`, only one claim at a time may start tasks that have no running
/// steps (others claim only for tasks already running steps): a transaction-scoped advisory
/// lock, tried without waiting. Taken in a statement of its own, so that the count of running
/// tasks the next statement makes sees every admission committed before.
async fn try_admission_lock(tx: &mut Tx) -> Result<bool> {
    Ok(sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
        .bind(ADMISSION_LOCK)
        .fetch_one(&mut **tx)
        .await?)
}

/// The advisory lock key of task admissions under `max_concurrent_tasks` ("trellis" in ASCII).
const ADMISSION_LOCK: i64 = 0x0074_7265_6c6c_6973;

/// The items of a batch whose lease held, with their rows.
type DoneItems<'a> = Vec<(&'a StepSuccess, &'a DoneStep)>;

/// Status, plan version and consecutive failures of each locked task of a batch.
type TaskState = HashMap<Uuid, (TaskStatus, i32, i32)>;

/// A pure evaluation applied inside the completion that finishes a plan (the rules brain's),
/// instead of an evaluation decision going through the decision queue.
#[derive(Clone, Copy)]
pub struct InlineEvaluation {
    pub evaluate: fn(&DecisionContext) -> Evaluation,
    pub policy: FailurePolicy,
}

/// What a worker's completion cycle records and claims in one transaction.
pub struct Cycle<'a> {
    pub items: &'a [StepSuccess],
    pub lease_secs: f64,
    pub inline: Option<InlineEvaluation>,
    /// Claim up to `limit` ready steps after the completions, less one per evaluation or
    /// reflection the batch started (those keep their worker's permit).
    pub claim: Option<Claim>,
}

/// What a cycle did: one result per item, and the steps it claimed.
pub struct CycleDone {
    pub completed: Vec<Completed>,
    pub claimed: Vec<ClaimedStep>,
}

impl Store {
    /// Record completions and claim the next steps in one transaction (one commit): see
    /// [`Store::complete_steps`] for the completions and [`Store::claim_steps`] for the claim.
    pub async fn complete_and_claim(&self, c: &Cycle<'_>) -> Result<CycleDone> {
        in_tx!(hot self, |tx| {
            let (completed, any_ready) = complete_batch(tx, c).await?;
            let started = completed
                .iter()
                .filter(|r| matches!(r, Ok(Some(_))))
                .count() as i64;
            let claimed = match &c.claim {
                Some(claim) if claim.limit > started => {
                    let mut claimed = Vec::new();
                    // a second round takes tasks the first skipped (locked by another
                    // transaction when it looked): no extra commit for them
                    for _ in 0..2 {
                        let round = Claim {
                            limit: claim.limit - started - claimed.len() as i64,
                            ..claim.clone()
                        };
                        let got = claim_in(tx, &round, false, &self.lanes).await?;
                        let short = got.is_empty() || (got.len() as i64) == round.limit;
                        claimed.extend(got);
                        if short {
                            break;
                        }
                    }
                    claimed
                }
                _ => vec![],
            };
            // wake the fleet for ready steps this transaction did not take: there are none
            // left it could claim when it claimed fewer than it asked for
            let nothing_left = c
                .claim
                .as_ref()
                .is_some_and(|cl| claimed.len() < cl.limit as usize);
            if any_ready && !nothing_left {
                notify_ready(tx).await?;
            }
            Ok(CycleDone { completed, claimed })
        })
    }
}

/// The batch's results, and whether any of its tasks has ready steps now (promoted, or room
/// freed under a concurrency cap).
async fn complete_batch(tx: &mut Tx, c: &Cycle<'_>) -> Result<(Vec<Completed>, bool)> {
    let items = c.items;
    let task_state = lock_batch_tasks(tx, items).await?;
    let successes: Vec<Success<'_>> = items
        .iter()
        .map(|s| Success {
            step_id: s.fence.step_id,
            task_id: s.fence.task_id,
            lease_token: s.fence.lease_token,
            output: &s.output,
            tool: &s.tool,
            parameters: &s.parameters,
            worker_id: s.worker_id,
        })
        .collect();
    let done = complete_running(tx, &successes).await?;
    let done_by_id: HashMap<Uuid, &DoneStep> = done.iter().map(|d| (d.id, d)).collect();
    let done_items: DoneItems<'_> = items
        .iter()
        .filter_map(|s| done_by_id.get(&s.fence.step_id).map(|d| (s, *d)))
        .collect();
    if done_items.is_empty() {
        return Ok((
            items.iter().map(|_| Err(StoreError::Fenced)).collect(),
            false,
        ));
    }
    let mut events: Vec<NewEvent> = done_items
        .iter()
        .map(|(s, d)| {
            NewEvent::new(
                d.task_id,
                event_kind::STEP_COMPLETED,
                json!({"step_id": d.step_key, "attempt": d.attempts, "tool": s.tool}),
            )
        })
        .collect();
    let (decisions, any_ready) =
        advance_tasks(tx, c, &done_items, &task_state, &mut events).await?;
    append_events(tx, &events).await?;
    Ok((batch_results(items, &done_by_id, decisions), any_ready))
}

/// Lock the batch's tasks in id order (concurrent batches cannot deadlock).
async fn lock_batch_tasks(tx: &mut Tx, items: &[StepSuccess]) -> Result<TaskState> {
    let mut task_ids: Vec<Uuid> = items.iter().map(|s| s.fence.task_id).collect();
    task_ids.sort();
    task_ids.dedup();
    let tasks: Vec<(Uuid, TaskStatus, i32, i32)> = sqlx::query_as(
        "SELECT id, status, plan_version, consecutive_failures FROM tasks
         WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE",
    )
    .bind(&task_ids)
    .fetch_all(&mut **tx)
    .await?;
    Ok(tasks
        .into_iter()
        .map(|(id, st, v, f)| (id, (st, v, f)))
        .collect())
}

/// Output params to merge into each task's runtime metadata.
type OutputParams = HashMap<Uuid, Map<String, Value>>;

/// Tasks still running the plan version their completed steps belong to, with the output
/// params to merge. Steps of a replaced plan, or of a task that stopped running, only record
/// their result.
fn active_tasks(done: &DoneItems<'_>, task_state: &TaskState) -> (Vec<(Uuid, i32)>, OutputParams) {
    let mut active: Vec<(Uuid, i32)> = Vec::new();
    let mut params: OutputParams = HashMap::new();
    for (s, d) in done {
        let Some((status, version, _)) = task_state.get(&d.task_id) else {
            continue;
        };
        if *status == TaskStatus::Running && *version == d.plan_version {
            if !active.iter().any(|(t, _)| *t == d.task_id) {
                active.push((d.task_id, d.plan_version));
            }
            params
                .entry(d.task_id)
                .or_default()
                .extend(s.output_params.clone());
        }
    }
    (active, params)
}

/// Running tasks of the batch whose completed steps belong to an older plan version (a repair
/// moved on while they ran): their room grew, though nothing of theirs is promoted.
fn stale_version_tasks(done: &DoneItems<'_>, task_state: &TaskState) -> Vec<Uuid> {
    let mut out: Vec<Uuid> = Vec::new();
    for (_, d) in done {
        if let Some((TaskStatus::Running, version, _)) = task_state.get(&d.task_id)
            && *version != d.plan_version
            && !out.contains(&d.task_id)
        {
            out.push(d.task_id);
        }
    }
    out
}

/// Reset consecutive failures and merge output params into runtime metadata, for the tasks
/// where either changes anything (no write to a task row a success leaves as it was).
async fn update_task_rows(
    tx: &mut Tx,
    active: &[(Uuid, i32)],
    task_state: &TaskState,
    mut params: OutputParams,
) -> Result<()> {
    let (mut ids, mut merged) = (Vec::new(), Vec::new());
    for (t, _) in active {
        let p = params.remove(t).unwrap_or_default();
        let failures = task_state.get(t).map(|s| s.2).unwrap_or(0);
        if failures != 0 || !p.is_empty() {
            ids.push(*t);
            merged.push(Value::Object(p));
        }
    }
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "UPDATE tasks t SET consecutive_failures = 0, runtime_metadata = t.runtime_metadata || m.params,
                updated_at = now()
         FROM unnest($1::uuid[], $2::jsonb[]) AS m(id, params)
         WHERE t.id = m.id",
    )
    .bind(&ids)
    .bind(&merged)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// For the active tasks of a batch: update their rows, promote unblocked steps, and evaluate
/// every task whose plan is done — inline when the evaluation is pure, else through an
/// evaluation decision leased to the worker that finished it.
async fn advance_tasks(
    tx: &mut Tx,
    c: &Cycle<'_>,
    done: &DoneItems<'_>,
    task_state: &TaskState,
    events: &mut Vec<NewEvent>,
) -> Result<(HashMap<Uuid, ClaimedDecision>, bool)> {
    let (active, params) = active_tasks(done, task_state);
    let mut decisions = HashMap::new();
    // a running task whose finished step belonged to an older plan version has room again too
    let mut resync: Vec<Uuid> = stale_version_tasks(done, task_state);
    if active.is_empty() {
        claim_queue::sync(tx, &resync).await?;
        return Ok((decisions, false));
    }
    update_task_rows(tx, &active, task_state, params).await?;
    let ids: Vec<Uuid> = active.iter().map(|(t, _)| *t).collect();
    let versions: Vec<i32> = active.iter().map(|(_, v)| *v).collect();
    let mut any_ready = false;
    let mut finished = Vec::new();
    for p in promote_and_count(tx, &ids, &versions).await? {
        note_promoted(events, p.task_id, &p.promoted);
        any_ready |= p.ready > 0;
        if p.ready > 0 {
            // room freed, or steps promoted: the task's next ready steps become claimable
            resync.push(p.task_id);
        }
        if p.open == 0 {
            finished.push(p.task_id);
        }
    }
    claim_queue::sync(tx, &resync).await?;
    match &c.inline {
        _ if finished.is_empty() => {}
        None => {
            for task_id in &finished {
                let lease = finisher_lease(done, *task_id, c.lease_secs);
                if let Some(d) = start_evaluation(tx, *task_id, Some(lease)).await? {
                    decisions.insert(*task_id, d);
                }
            }
        }
        Some(inline) => {
            for (task_id, d) in
                evaluate_inline(tx, inline, &finished, c.lease_secs, done, events).await?
            {
                decisions.insert(task_id, d);
            }
        }
    }
    Ok((decisions, any_ready))
}

/// The lease a finished task's evaluation is taken or applied under: the worker that
/// completed its last step in this batch runs it.
fn finisher_lease(done: &DoneItems<'_>, task_id: Uuid, lease_secs: f64) -> Lease {
    let worker_id = done
        .iter()
        .rev()
        .find(|(_, d)| d.task_id == task_id)
        .map(|(s, _)| s.worker_id)
        .expect("a finished task has a completed step");
    Lease {
        worker_id,
        lease_secs,
    }
}

/// Read the finished tasks, evaluate each with the pure evaluation and apply the outcomes as
/// the evaluation decisions would have been (same rows, same events), set-based: a task that
/// passes goes `running → succeeded` with its final score in one write of its row
/// ([`crate::domain::transitions::TaskMove::SucceedAtOnce`]); the others rest in `evaluating` on their way on. Five
/// statements for the whole batch when every task succeeds.
async fn evaluate_inline(
    tx: &mut Tx,
    inline: &InlineEvaluation,
    finished: &[Uuid],
    lease_secs: f64,
    done: &DoneItems<'_>,
    events: &mut Vec<NewEvent>,
) -> Result<Vec<(Uuid, ClaimedDecision)>> {
    let tasks = read_tasks(tx, finished).await?;
    let mut steps = live_steps_of(tx, &tasks).await?;
    let mut attempts = attempts_of(tx, &tasks).await?;
    let mut evaluated = Vec::with_capacity(tasks.len());
    for task in &tasks {
        let ctx = DecisionContext {
            steps: steps.remove(&task.id).unwrap_or_default(),
            step: None,
            attempts: attempts.remove(&task.id).unwrap_or_default(),
            tools: HashMap::new(),
            counters: task.counters(None, inline.policy.max_rescues),
            input: DecisionInput::default(),
            llm_calls_used: 0,
            llm_tokens_used: 0,
            meter: Default::default(),
            evidence: HashMap::new(),
            templates: vec![],
            repaired_versions: vec![],
            task: task.clone(),
        };
        let lease = finisher_lease(done, task.id, lease_secs);
        evaluated.push(((inline.evaluate)(&ctx), lease));
    }
    let items: Vec<Evaluated<'_>> = tasks
        .iter()
        .zip(&evaluated)
        .map(|(task, (evaluation, lease))| Evaluated {
            task,
            evaluation,
            raw: None,
            lease: *lease,
        })
        .collect();
    apply_evaluations(tx, &items, &inline.policy, events, Stage::Running).await
}

/// The rows of tasks this transaction holds locked (by primary key).
async fn read_tasks(tx: &mut Tx, task_ids: &[Uuid]) -> Result<Vec<TaskRow>> {
    Ok(sqlx::query_as("SELECT * FROM tasks WHERE id = ANY($1)")
        .bind(task_ids)
        .fetch_all(&mut **tx)
        .await?)
}

/// Live steps of each task's current plan version, by task, in plan order.
async fn live_steps_of(tx: &mut Tx, tasks: &[TaskRow]) -> Result<HashMap<Uuid, Vec<StepRow>>> {
    let rows: Vec<StepRow> = sqlx::query_as(
        "SELECT s.* FROM steps s JOIN unnest($1::uuid[], $2::int[]) AS a(task_id, plan_version)
           ON s.task_id = a.task_id AND s.plan_version = a.plan_version
         WHERE s.status <> 'superseded' ORDER BY s.task_id, s.position",
    )
    .bind(tasks.iter().map(|t| t.id).collect::<Vec<_>>())
    .bind(tasks.iter().map(|t| t.plan_version).collect::<Vec<_>>())
    .fetch_all(&mut **tx)
    .await?;
    let mut by_task: HashMap<Uuid, Vec<StepRow>> = HashMap::new();
    for r in rows {
        by_task.entry(r.task_id).or_default().push(r);
    }
    Ok(by_task)
}

/// Every attempt of each task, by task, in order. One index probe per task (a lateral join
/// over the ids): a plain `task_id = ANY($1)` got a generic plan made while the table was
/// empty, a sequential scan kept for the session's life while the history grew (6.5 ms a call
/// at 100,000 attempts, against 0.2 ms).
async fn attempts_of(tx: &mut Tx, tasks: &[TaskRow]) -> Result<HashMap<Uuid, Vec<AttemptRow>>> {
    let rows: Vec<(Uuid, AttemptRow)> = {
        use sqlx::{FromRow, Row};
        let raw = sqlx::query(
            "SELECT a.task_id, a.step_id, a.step_key, a.plan_version, a.attempt, a.tool, a.parameters,
                    a.status, a.output, a.error, a.error_category, a.worker_id, a.started_at,
                    a.finished_at, a.duration_ms
             FROM unnest($1::uuid[]) AS t(id)
             CROSS JOIN LATERAL (SELECT * FROM attempts a WHERE a.task_id = t.id ORDER BY a.id) a",
        )
        .bind(tasks.iter().map(|t| t.id).collect::<Vec<_>>())
        .fetch_all(&mut **tx)
        .await?;
        raw.iter()
            .map(|r| Ok((r.try_get("task_id")?, AttemptRow::from_row(r)?)))
            .collect::<std::result::Result<_, sqlx::Error>>()?
    };
    let mut by_task: HashMap<Uuid, Vec<AttemptRow>> = HashMap::new();
    for (t, a) in rows {
        by_task.entry(t).or_default().push(a);
    }
    Ok(by_task)
}

/// Add a task's promoted steps to the `promoted` list of its last `step_completed` event.
fn note_promoted(events: &mut [NewEvent], task_id: Uuid, promoted: &[String]) {
    if promoted.is_empty() {
        return;
    }
    if let Some(e) = events
        .iter_mut()
        .rev()
        .find(|e| e.task_id == task_id && e.kind == event_kind::STEP_COMPLETED)
    {
        e.payload["promoted"] = json!(promoted);
    }
}

/// One result per item; a task's evaluation goes to the last of its items in the batch.
fn batch_results(
    items: &[StepSuccess],
    done_by_id: &HashMap<Uuid, &DoneStep>,
    mut decisions: HashMap<Uuid, ClaimedDecision>,
) -> Vec<Completed> {
    let mut out: Vec<Completed> = Vec::with_capacity(items.len());
    for (i, s) in items.iter().enumerate() {
        if !done_by_id.contains_key(&s.fence.step_id) {
            out.push(Err(StoreError::Fenced));
            continue;
        }
        let last_of_task = !items[i + 1..].iter().any(|o| {
            o.fence.task_id == s.fence.task_id && done_by_id.contains_key(&o.fence.step_id)
        });
        out.push(Ok(if last_of_task {
            decisions.remove(&s.fence.task_id)
        } else {
            None
        }));
    }
    out
}

/// Lock the step row if it still carries this lease. `require_expired` adds the lease deadline
/// to the fence (rescue must not steal a lease its owner just renewed).
async fn lock_running_step(
    tx: &mut Tx,
    fence: &Fence,
    require_expired: bool,
) -> Result<LockedStep> {
    sqlx::query_as(
        "SELECT step_key, plan_version, attempts, retry_count, rescue_count, started_at, lease_owner,
                coalesce(tool_override, tool) AS tool, parameters || param_overrides AS parameters
         FROM steps
         WHERE id = $1 AND task_id = $2 AND lease_token = $3 AND (status = 'running') IS NOT FALSE
           AND (NOT $4 OR lease_expires_at < now())
         FOR UPDATE",
    )
    .bind(fence.step_id)
    .bind(fence.task_id)
    .bind(fence.lease_token)
    .bind(require_expired)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or(StoreError::Fenced)
}

/// A failed attempt's row.
struct NewAttempt<'a> {
    fence: &'a Fence,
    step: &'a LockedStep,
    attempt: i32,
    tool: &'a str,
    parameters: &'a Value,
    error: &'a ToolFailure,
    worker_id: Option<Uuid>,
}

async fn insert_failed_attempt(tx: &mut Tx, a: &NewAttempt<'_>) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "INSERT INTO attempts (task_id, step_id, step_key, plan_version, attempt, tool, parameters,
                               status, output, error, error_category, worker_id, started_at, finished_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'failed', NULL, $8, $9, $10, coalesce($11, now()), clock_timestamp())
         RETURNING id",
    )
    .bind(a.fence.task_id)
    .bind(a.fence.step_id)
    .bind(&a.step.step_key)
    .bind(a.step.plan_version)
    .bind(a.attempt)
    .bind(a.tool)
    .bind(a.parameters)
    .bind(serde_json::to_value(a.error).expect("failure serializes"))
    .bind(a.error.category.as_str())
    .bind(a.worker_id)
    .bind(a.step.started_at)
    .fetch_one(&mut **tx)
    .await?)
}

#[derive(Clone, Copy)]
struct FailureInput<'a> {
    fence: &'a Fence,
    /// None: the lease owner recorded on the step (rescue).
    worker_id: Option<Uuid>,
    tool: Option<&'a str>,
    parameters: Option<&'a Value>,
    failure: &'a ToolFailure,
    require_expired: bool,
}

/// What a failed attempt counts, and what follows from it.
struct Counted {
    /// The worker was lost: a rescue, not the step's fault.
    lost: bool,
    attempt: i32,
    counters: Counters,
    /// The task still runs this step's plan version.
    active: bool,
    transition: AfterFailure,
}

async fn fail_locked(
    tx: &mut Tx,
    f: FailureInput<'_>,
    policy: FailurePolicy,
) -> Result<FailOutcome> {
    let task = lock_task(tx, f.fence.task_id).await?;
    let step = lock_running_step(tx, f.fence, f.require_expired).await?;
    let tool = f.tool.unwrap_or(&step.tool);
    let retry = circuits::retry_context(tx, task.id, &step.step_key, tool, &policy, true).await?;
    if f.failure.category != WORKER_LOST {
        circuits::record_failure(tx, tool, &retry, f.failure).await?;
    }
    let counted = count_failure(&task, &step, &f, (&retry, policy.max_rescues));
    sqlx::query("UPDATE tasks SET consecutive_failures = $2, updated_at = now() WHERE id = $1")
        .bind(task.id)
        .bind(counted.counters.consecutive_failures)
        .execute(&mut **tx)
        .await?;
    let error = serde_json::to_value(f.failure).expect("failure serializes");
    let (step_move, delay_ms) = match &counted.transition {
        AfterFailure::Retry { delay_ms } => (StepMove::RetryAfterFailure, *delay_ms as f64),
        AfterFailure::Reflect | AfterFailure::FailTask { .. } => (StepMove::Fail, 0.0),
    };
    let c = &counted.counters;
    fail_running(
        tx,
        &FailedRun {
            step_id: f.fence.step_id,
            step_move,
            error: &error,
            attempts: counted.attempt,
            retry_count: c.retry_count,
            rescue_count: c.rescue_count,
            delay_ms,
        },
    )
    .await?;
    let attempt_id = insert_failed_attempt(
        tx,
        &NewAttempt {
            fence: f.fence,
            step: &step,
            attempt: counted.attempt,
            tool: f.tool.unwrap_or(&step.tool),
            parameters: f.parameters.unwrap_or(&step.parameters),
            error: f.failure,
            worker_id: f.worker_id.or(step.lease_owner),
        },
    )
    .await?;
    let decision = follow_failure(tx, &f, &step, &counted, attempt_id, &error, policy).await?;
    // the step's slot is free: it (a retry) or the task's next ready step is claimable again;
    // a failed task's entries go
    claim_queue::sync(tx, &[task.id]).await?;
    Ok(FailOutcome {
        transition: counted.transition,
        decision,
    })
}

/// Count the failure ([`Counters`]) and ask [`recovery::after_failure`] what follows.
fn count_failure(
    task: &TaskRow,
    step: &LockedStep,
    f: &FailureInput<'_>,
    (retry, max_rescues): (&circuits::RetryContext, i32),
) -> Counted {
    let lost = f.failure.category == WORKER_LOST;
    // A lost worker is not the step's fault: it counts as a rescue, not as a retry or a failure.
    let counters = Counters {
        retry_count: step.retry_count + i32::from(!lost),
        rescue_count: step.rescue_count + i32::from(lost),
        consecutive_failures: task.consecutive_failures + i32::from(!lost),
        ..task.counters(None, max_rescues)
    };
    let active = task.status == TaskStatus::Running && step.plan_version == task.plan_version;
    let transition = if active {
        let r = (&retry.policy, &retry.streak);
        recovery::after_failure(&counters, f.failure, task.step_reflection, r)
    } else {
        // the task was cancelled, stopped or replanned while this step ran: record, start nothing
        AfterFailure::FailTask {
            reason: format!(
                "task is {} (plan version {})",
                task.status, task.plan_version
            ),
        }
    };
    Counted {
        lost,
        attempt: step.attempts + 1,
        counters,
        active,
        transition,
    }
}

/// Events of a failed attempt, and its follow-up: a scheduled retry, a step reflection (leased
/// to the failing worker), or the task's failure.
async fn follow_failure(
    tx: &mut Tx,
    f: &FailureInput<'_>,
    step: &LockedStep,
    counted: &Counted,
    attempt_id: i64,
    error: &Value,
    policy: FailurePolicy,
) -> Result<Option<ClaimedDecision>> {
    let task_id = f.fence.task_id;
    let (lost, attempt, c) = (counted.lost, counted.attempt, &counted.counters);
    let mut events = vec![NewEvent::new(
        task_id,
        event_kind::STEP_FAILED,
        json!({"step_id": step.step_key, "attempt": attempt, "error": error,
               "retry_count": c.retry_count, "rescue_count": c.rescue_count,
               "consecutive_failures": c.consecutive_failures}),
    )];
    if lost {
        events.push(NewEvent::new(
            task_id,
            event_kind::STEP_RESCUED,
            json!({"step_id": step.step_key, "lost_worker_id": step.lease_owner}),
        ));
    }
    let mut decision = None;
    match &counted.transition {
        AfterFailure::Retry { delay_ms } => {
            if !lost {
                record_recovery(tx, Some(attempt_id), RecoveryAction::Retry, None).await?;
            }
            events.push(NewEvent::new(
                task_id,
                event_kind::RETRY_SCHEDULED,
                json!({"step_id": step.step_key, "next_attempt": attempt + 1, "delay_ms": delay_ms,
                       "tier": if lost { 0 } else { 1 }}),
            ));
            notify_ready(tx).await?;
        }
        AfterFailure::Reflect => {
            let input = DecisionInput {
                step_key: Some(step.step_key.clone()),
                attempt_id: Some(attempt_id),
                failure: Some(f.failure.clone()),
                ..Default::default()
            };
            let lease = f.worker_id.map(|worker_id| Lease {
                worker_id,
                lease_secs: policy.lease_secs,
            });
            let kind = DecisionKind::StepReflection;
            decision =
                create_decision(tx, task_id, kind, Some(f.fence.step_id), &input, lease).await?;
        }
        AfterFailure::FailTask { reason } if counted.active => {
            let error = json!({"step_id": step.step_key, "reason": reason, "last_error": error});
            fail_task(tx, task_id, error, &mut events).await?;
        }
        AfterFailure::FailTask { .. } => {}
    }
    append_events(tx, &events).await?;
    Ok(decision)
}
