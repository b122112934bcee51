//! Applying a decision's outcome, in one transaction fenced on the decision's lease:
//! `step` for step-level outcomes (step reflection → tier 1 retry, tier 2 repair), `task`
//! for task-level ones (plan, overall reflection, replan, evaluation).
//!
//! Architecture invariant: a decision is applied at most once — fenced on its own lease token
//! and status — and only if the state it was made for still holds (the failed step row for step
//! decisions; the task's `state_version` for task decisions). Otherwise it is cancelled and
//! changes nothing. Counters are incremented only when an outcome is applied.

use uuid::Uuid;

use super::decision_queue::finish_decision;
use super::decision_queue::{ClaimedDecision, DecisionFence, Lease};
use super::{Result, Store, StoreError, Tx, lock_task};
use crate::domain::decision::{DecisionInput, DecisionOutcome};
use crate::domain::records::{StepRow, TaskRow};
use crate::domain::recovery::FailurePolicy;
use crate::domain::status::{DecisionKind, StepStatus, TaskStatus};

mod step;
mod task;

/// The failed step's key, in a new version (a repair or a replan): when it still calls the tool
/// that failed, its row waits out its streak's backoff and the tool's `Retry-After`, so the
/// backoff keeps growing across the tiers instead of starting over at each.
async fn keep_backing_off(tx: &mut Tx, c: &Applying<'_>, version: i32) -> Result<()> {
    let input = c.input;
    let (Some(key), Some(f), Some(attempt)) = (
        input.step_key.as_deref(),
        input.failure.as_ref(),
        input.attempt_id,
    ) else {
        return Ok(());
    };
    let tool: String = sqlx::query_scalar("SELECT tool FROM attempts WHERE id = $1")
        .bind(attempt)
        .fetch_one(&mut **tx)
        .await?;
    let tool = tool.as_str();
    let retry = super::circuits::retry_context(tx, c.task.id, key, tool, c.policy, false).await?;
    let delay_ms = retry.policy.delay_ms(&retry.streak, f);
    if delay_ms == 0 {
        return Ok(());
    }
    sqlx::query(sql!("step/keep_backing_off"))
        .bind(c.task.id)
        .bind(version)
        .bind(key)
        .bind(tool)
        .bind(delay_ms as f64)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

pub(crate) use task::{Evaluated, Stage, apply_evaluations};

/// What every outcome is applied with: the locked task, the decision's input, the policy, and
/// the lease any follow-up decision is created with.
#[derive(Clone, Copy)]
struct Applying<'a> {
    task: &'a TaskRow,
    input: &'a DecisionInput,
    policy: &'a FailurePolicy,
    lease: Lease,
}

/// A reflection answer with the raw text it came from, or the fallback that stands in for it.
struct Reflected<'a, T> {
    body: &'a T,
    raw: Option<&'a str>,
    fallback: bool,
}

impl<'a, T> Reflected<'a, T> {
    fn new(body: &'a T, raw: &'a Option<String>, fallback: bool) -> Self {
        Self {
            body,
            raw: raw.as_deref(),
            fallback,
        }
    }
}

/// The decision row as locked for applying.
struct Locked {
    kind: DecisionKind,
    task_version: i64,
    input: DecisionInput,
    step: Option<StepRow>,
}

impl Store {
    /// Apply a decision's outcome in one transaction. Returns the follow-up decision, leased to
    /// `lease.worker_id`, when the outcome needs another brain call (repair, overall reflection,
    /// replan). A stale decision is cancelled and changes nothing else.
    pub async fn apply_decision(
        &self,
        f: &DecisionFence,
        outcome: &DecisionOutcome,
        policy: &FailurePolicy,
        lease: Lease,
    ) -> Result<Option<ClaimedDecision>> {
        in_tx!(hot self, |tx| {
            let task = lock_task(tx, f.task_id).await?;
            let d = lock_decision(tx, f).await?;
            let fresh = is_fresh(&d, &task);
            finish_decision(tx, f.id, fresh).await?;
            if !fresh {
                return Ok(None);
            }
            let c = Applying {
                task: &task,
                input: &d.input,
                policy,
                lease,
            };
            let next = dispatch(tx, &c, &d, outcome).await?;
            // a retry, a repair, a new plan or the task's end changed what is claimable
            tx.touch(&[f.task_id]);
            Ok(next)
        })
    }
}

/// Lock the decision if it still carries this lease, and the step it concerns.
async fn lock_decision(tx: &mut Tx, f: &DecisionFence) -> Result<Locked> {
    type Row = (
        DecisionKind,
        Option<Uuid>,
        i64,
        sqlx::types::Json<DecisionInput>,
    );
    let row: Option<Row> = sqlx::query_as(
        "SELECT kind, step_id, task_version, input FROM decisions
         WHERE id = $1 AND task_id = $2 AND lease_token = $3 AND (status = 'running') IS NOT FALSE
         FOR UPDATE",
    )
    .bind(f.id)
    .bind(f.task_id)
    .bind(f.lease_token)
    .fetch_optional(&mut **tx)
    .await?;
    let (kind, step_id, task_version, input) = row.ok_or(StoreError::Fenced)?;
    let step: Option<StepRow> = match step_id {
        Some(id) => {
            sqlx::query_as("SELECT * FROM steps WHERE id = $1 FOR UPDATE")
                .bind(id)
                .fetch_optional(&mut **tx)
                .await?
        }
        None => None,
    };
    Ok(Locked {
        kind,
        task_version,
        input: input.0,
        step,
    })
}

/// Whether the state the decision was made for still holds.
fn is_fresh(d: &Locked, task: &TaskRow) -> bool {
    let same_version = task.state_version == d.task_version;
    match d.kind {
        // only a cancel competes with planning
        DecisionKind::Plan => matches!(task.status, TaskStatus::Pending | TaskStatus::Planning),
        DecisionKind::StepReflection | DecisionKind::StepRepair => {
            task.status == TaskStatus::Running
                && d.step.as_ref().is_some_and(|s| {
                    s.status == StepStatus::Failed && s.plan_version == task.plan_version
                })
        }
        DecisionKind::OverallReflection => task.status == TaskStatus::Reflecting && same_version,
        DecisionKind::Replan => task.status == TaskStatus::Replanning && same_version,
        DecisionKind::Evaluation => task.status == TaskStatus::Evaluating && same_version,
    }
}

/// Hand the outcome to the applier of its kind.
async fn dispatch(
    tx: &mut Tx,
    c: &Applying<'_>,
    d: &Locked,
    outcome: &DecisionOutcome,
) -> Result<Option<ClaimedDecision>> {
    let fresh_step = || d.step.as_ref().expect("fresh step decision has its step");
    match (d.kind, outcome) {
        (DecisionKind::Plan, DecisionOutcome::Plan(answer)) => {
            task::apply_plan(tx, (c.task, c.lease), answer).await
        }
        (
            DecisionKind::StepReflection,
            DecisionOutcome::StepReflection {
                reflection: b,
                raw,
                fallback,
            },
        ) => {
            let r = Reflected::new(b, raw, *fallback);
            step::apply_step_reflection(tx, c, fresh_step(), r).await
        }
        (DecisionKind::StepRepair, DecisionOutcome::Repair(answer)) => {
            step::apply_repair(tx, c, fresh_step(), answer).await
        }
        (
            DecisionKind::OverallReflection,
            DecisionOutcome::Overall {
                reflection: b,
                raw,
                fallback,
            },
        ) => {
            let r = Reflected::new(b, raw, *fallback);
            task::apply_overall(tx, c, d.step.as_ref(), r).await
        }
        (DecisionKind::Replan, DecisionOutcome::Replan(answer)) => {
            task::apply_replan(tx, c, answer).await
        }
        (DecisionKind::Evaluation, DecisionOutcome::Evaluation { evaluation, raw }) => {
            task::apply_evaluation(tx, c, evaluation, raw.as_deref()).await
        }
        (k, _) => Err(StoreError::Corrupt(format!(
            "outcome does not match decision kind {k}"
        ))),
    }
}

/// A `reflections` row: the reflection (or its fallback) on `step`, at `level`.
async fn insert_reflection<T: serde::Serialize>(
    tx: &mut Tx,
    task: &TaskRow,
    level: &'static str,
    step: Option<&StepRow>,
    r: &Reflected<'_, T>,
) -> Result<()> {
    let body = serde_json::to_value(r.body).expect("reflection serializes");
    sqlx::query(sql!("decision/insert_reflection"))
        .bind(task.id)
        .bind(level)
        .bind(step.map(|s| s.id))
        .bind(step.map(|s| s.step_key.as_str()))
        .bind(task.plan_version)
        .bind(task.round)
        .bind(&body)
        .bind(r.fallback)
        .bind(r.raw)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The root-cause category of the step reflection that started this recovery, if any.
fn category(input: &DecisionInput) -> Option<&str> {
    input
        .step_reflection
        .as_ref()
        .map(|r| r.root_cause_category.as_str())
}
