//! A failed attempt, from its record to what follows, in one transaction: lock the task and
//! the step (fenced), read the tool's retry policy and the step's streak, count the failure on
//! the tool's circuit, count it on the step and the task ([`recovery::count_failure`]), move
//! the step (`sql/step/fail.sql` or `fail_retry.sql`), insert the attempt, and follow up: a
//! retry after its backoff, a step reflection leased to the failing worker, or the task's
//! failure. Rescue of a lost worker's step is the same path with category `worker_lost`.

use serde_json::Value;
use uuid::Uuid;

use super::super::decision_queue::{ClaimedDecision, Lease, create_decision};
use super::super::lifecycle::{fail_task, record_recovery};
use super::super::{NewEvent, Result, Store, StoreError, Tx, lock_task};
use super::super::{circuits, maps};
use super::{FailurePolicy, LockedStep, StepFailure, StepLease, lock_running_step};
use crate::domain::decision::DecisionInput;
use crate::domain::event::{self, Event, TaskError};
use crate::domain::model::{CANCELLED, ToolFailure, WORKER_LOST};
use crate::domain::records::TaskRow;
use crate::domain::recovery::{
    self, AfterFailure, Counted, Counters, Failed, RecoveryAction, RetryPolicy,
};
use crate::domain::status::{DecisionKind, TaskStatus};
use crate::domain::transitions::StepMove;

/// What a failed attempt led to.
#[derive(Debug, Clone)]
pub struct FailOutcome {
    pub transition: AfterFailure,
    /// A step reflection, leased to the failing worker, to run now.
    pub decision: Option<ClaimedDecision>,
}

impl Store {
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
            call_key: f.idempotency_key.as_deref(),
        };
        in_tx!(hot self, |tx| fail_locked(tx, input, policy).await)
    }

    /// Re-queue steps whose lease expired (their worker is presumed dead) as failed attempts
    /// with category `worker_lost`. Safe to run from many workers at once: each rescue is fenced
    /// on the expired lease. Returns how many steps were rescued.
    pub async fn rescue_expired(&self, limit: i64, policy: FailurePolicy) -> Result<u64> {
        let expired: Vec<(Uuid, Uuid, i64)> = sqlx::query_as(
            "SELECT s.id, s.task_id, s.lease_token FROM running_steps r JOIN steps s ON s.id = r.step_id
             WHERE s.status = 'running' AND s.lease_expires_at < now()
             ORDER BY s.lease_expires_at LIMIT $1",
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
            let fence = StepLease {
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
                call_key: None,
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

/// A failed attempt's row.
struct NewAttempt<'a> {
    fence: &'a StepLease,
    step: &'a LockedStep,
    attempt: i32,
    tool: &'a str,
    parameters: &'a Value,
    error: &'a ToolFailure,
    worker_id: Option<Uuid>,
    call_key: Option<&'a str>,
}

async fn insert_failed_attempt(tx: &mut Tx, a: &NewAttempt<'_>) -> Result<i64> {
    Ok(sqlx::query_scalar(sql!("step/insert_failed_attempt"))
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
        .bind(a.call_key)
        .fetch_one(&mut **tx)
        .await?)
}

#[derive(Clone, Copy)]
struct FailureInput<'a> {
    fence: &'a StepLease,
    /// None: the lease owner recorded on the step (rescue).
    worker_id: Option<Uuid>,
    tool: Option<&'a str>,
    parameters: Option<&'a Value>,
    failure: &'a ToolFailure,
    require_expired: bool,
    /// The call's idempotency key (recorded on the attempt).
    call_key: Option<&'a str>,
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
    // a wait that ends past the step's limit is said now, not after waiting the limit out
    let limit = retry.wait_limit_ms(&policy);
    let past = RetryPolicy::past_wait_limit(&retry.streak, f.failure, limit);
    let f = FailureInput {
        failure: past.as_ref().unwrap_or(f.failure),
        ..f
    };
    // neither a lost worker nor a cancelled call is the tool's failure
    if f.failure.category != WORKER_LOST && f.failure.category != CANCELLED {
        circuits::record_failure(tx, tool, &retry, f.failure).await?;
    }
    let counted = count_failure(&task, &step, &f, (&retry, policy.max_rescues));
    sqlx::query(sql!("task/set_consecutive_failures"))
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
            task_id: f.fence.task_id,
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
    if step.item && delay_ms > 0.0 {
        // the item waits its backoff out: the map's next item may go meanwhile
        maps::lend(tx, f.fence.step_id, retry.lend_guard()).await?;
    }
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
            call_key: f.call_key,
        },
    )
    .await?;
    // the step's slot is free (its move says so): it (a retry) or the task's next ready step is
    // claimable again; a failed task's entries go
    let decision = follow_failure(tx, &f, &step, &counted, attempt_id, &error, policy).await?;
    Ok(FailOutcome {
        transition: counted.transition,
        decision,
    })
}

/// The failure as [`recovery::count_failure`] counts it.
fn count_failure(
    task: &TaskRow,
    step: &LockedStep,
    f: &FailureInput<'_>,
    (retry, max_rescues): (&circuits::RetryContext, i32),
) -> Counted {
    let active = task.status == TaskStatus::Running && step.plan_version == task.plan_version;
    let why = format!(
        "task is {} (plan version {})",
        task.status, task.plan_version
    );
    let counters = task.counters(None, max_rescues);
    // a map's item recovers on its own tiers: the task's failures in a row, which items failing
    // side by side run up together, never stop its retries (`TaskRow::counters` for an item),
    // but they still count for the task
    let task_streak = counters.consecutive_failures;
    let failed = Failed {
        failure: f.failure,
        counters: Counters {
            retry_count: step.retry_count,
            rescue_count: step.rescue_count,
            consecutive_failures: if step.item { 0 } else { task_streak },
            ..counters
        },
        attempts: step.attempts,
        active: if active { Ok(()) } else { Err(&why) },
        step_reflection: task.step_reflection,
    };
    let mut counted = recovery::count_failure(&failed, (&retry.policy, &retry.streak));
    if step.item {
        counted.counters.consecutive_failures += task_streak;
    }
    counted
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
    tx.push(NewEvent::new(
        task_id,
        Event::StepFailed(event::StepFailed {
            step_key: step.step_key.clone(),
            attempt,
            error: error.clone(),
            retry_count: c.retry_count,
            rescue_count: c.rescue_count,
            consecutive_failures: c.consecutive_failures,
            violations: event::Violation::of(error),
        }),
    ));
    if lost {
        tx.push(NewEvent::new(
            task_id,
            Event::StepRescued(event::StepRescued {
                step_key: step.step_key.clone(),
                lost_worker_id: step.lease_owner,
            }),
        ));
    }
    let mut decision = None;
    match &counted.transition {
        AfterFailure::Retry { delay_ms } => {
            if !lost {
                record_recovery(tx, Some(attempt_id), RecoveryAction::Retry, None).await?;
            }
            tx.push(NewEvent::new(
                task_id,
                Event::RetryScheduled(event::RetryScheduled {
                    step_key: step.step_key.clone(),
                    next_attempt: attempt + 1,
                    delay_ms: *delay_ms,
                    tier: if lost { 0 } else { 1 },
                    adjusted_parameters: None,
                    alternative_tool: None,
                }),
            ));
            tx.wake_steps();
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
        AfterFailure::FailTask { .. } if counted.active && step.tolerated_item => {
            // an item of a map that goes on without it: its map's next item, or the join
            let lease = f.worker_id.map(|worker_id| Lease {
                worker_id,
                lease_secs: policy.lease_secs,
            });
            let (version, id) = (step.plan_version, f.fence.step_id);
            decision = maps::give_up(tx, task_id, version, id, lease).await?;
        }
        AfterFailure::FailTask { reason } if counted.active => {
            // a tree at its limit: the category is the task's stop reason
            let stop = crate::domain::failure::stops_task(&f.failure.category)
                .then(|| f.failure.category.clone());
            let error = TaskError {
                last_error: Some(error.clone()),
                code: stop.clone(),
                ..TaskError::at_step(Some(&step.step_key), reason.as_str())
            };
            fail_task(tx, task_id, error).await?;
            if let Some(code) = stop {
                sqlx::query(sql!("task/set_stop_reason"))
                    .bind(task_id)
                    .bind(code)
                    .execute(&mut **tx)
                    .await?;
            }
        }
        AfterFailure::FailTask { .. } => {}
    }
    Ok(decision)
}

/// How a failed attempt leaves its (locked, running) step.
pub(crate) struct FailedRun<'a> {
    pub task_id: Uuid,
    pub step_id: Uuid,
    /// [`StepMove::RetryAfterFailure`] (after `delay_ms`) or [`StepMove::Fail`].
    pub step_move: StepMove,
    pub error: &'a Value,
    pub attempts: i32,
    pub retry_count: i32,
    pub rescue_count: i32,
    pub delay_ms: f64,
}

/// `running → ready` (plain retry) or `running → failed`, with the attempt counted.
pub(crate) async fn fail_running(tx: &mut Tx, f: &FailedRun<'_>) -> Result<()> {
    let sql = match f.step_move {
        StepMove::RetryAfterFailure => sql!("step/fail_retry"),
        StepMove::Fail => sql!("step/fail"),
        other => {
            return Err(StoreError::Corrupt(format!(
                "{other:?} is not a move after a failed attempt"
            )));
        }
    };
    let n = sqlx::query(sql)
        .bind(f.step_id)
        .bind(f.error)
        .bind(f.attempts)
        .bind(f.retry_count)
        .bind(f.rescue_count)
        .bind(f.delay_ms)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    if n == 0 {
        return Err(StoreError::Fenced);
    }
    tx.moved(f.step_move, &[f.task_id]);
    Ok(())
}

/// A step that has waited on its tool's circuit or rate limit as long as the tool allows: it
/// fails without an attempt (none was made: its counters stay), and its task fails with the
/// reason, when the task still runs the step's plan.
pub(super) async fn stop_waiting(
    tx: &mut Tx,
    task: &TaskRow,
    fence: &StepLease,
    step: &LockedStep,
    wait: &super::ToolWait,
    reason: &str,
) -> Result<()> {
    let category = match wait.why {
        crate::domain::circuit::Why::Held | crate::domain::circuit::Why::Refused => {
            crate::domain::failure::category::TOOL_ERROR
        }
        _ => crate::domain::failure::category::CIRCUIT_OPEN,
    };
    let failure = ToolFailure::new(category, reason, false);
    let error = serde_json::to_value(&failure).expect("failure serializes");
    fail_running(
        tx,
        &FailedRun {
            task_id: fence.task_id,
            step_id: fence.step_id,
            step_move: StepMove::Fail,
            error: &error,
            attempts: step.attempts,
            retry_count: step.retry_count,
            rescue_count: step.rescue_count,
            delay_ms: 0.0,
        },
    )
    .await?;
    tx.push(NewEvent::new(
        task.id,
        Event::StepFailed(event::StepFailed {
            step_key: step.step_key.clone(),
            attempt: step.attempts,
            error: error.clone(),
            retry_count: step.retry_count,
            rescue_count: step.rescue_count,
            consecutive_failures: task.consecutive_failures,
            violations: event::Violation::of(&error),
        }),
    ));
    if task.status == TaskStatus::Running && step.plan_version == task.plan_version {
        let error = TaskError {
            last_error: Some(error),
            ..TaskError::at_step(Some(&step.step_key), reason)
        };
        fail_task(tx, task.id, error).await?;
    }
    Ok(())
}
