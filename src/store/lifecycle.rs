//! Task-level consequences shared by the step queue, the decision appliers and resume: fail a
//! task, start its evaluation, start its overall reflection, log a recovery action.

use uuid::Uuid;

use super::decision_queue::cancel_open_decisions;
use super::decision_queue::{ClaimedDecision, Lease, create_decision};
use super::steps::skip_open_steps;
use super::tasks::move_task;
use super::{NewEvent, Result, Tx};
use crate::domain::decision::DecisionInput;
use crate::domain::event::{self, Event, TaskError};
use crate::domain::recovery::RecoveryAction;
use crate::domain::status::DecisionKind;
use crate::domain::transitions::TaskMove;

/// The task fails: error recorded, open steps skipped, open decisions cancelled.
pub(crate) async fn fail_task(tx: &mut Tx, task_id: Uuid, error: TaskError) -> Result<()> {
    move_task(tx, task_id, TaskMove::Fail).await?;
    sqlx::query(sql!("task/set_error"))
        .bind(task_id)
        .bind(sqlx::types::Json(&error))
        .execute(&mut **tx)
        .await?;
    let skipped = skip_open_steps(tx, task_id).await?;
    cancel_open_decisions(tx, task_id).await?;
    let failed = event::TaskFailed {
        error,
        skipped_steps: skipped,
    };
    tx.push(NewEvent::new(task_id, Event::TaskFailed(failed)));
    Ok(())
}

/// Task → evaluating, with an evaluation decision (all steps of the plan are done).
pub(crate) async fn start_evaluation(
    tx: &mut Tx,
    task_id: Uuid,
    lease: Option<Lease>,
) -> Result<Option<ClaimedDecision>> {
    move_task(tx, task_id, TaskMove::Evaluate).await?;
    let input = DecisionInput::default();
    create_decision(tx, task_id, DecisionKind::Evaluation, None, &input, lease).await
}

/// Task → reflecting, with an overall-reflection decision leased to `lease`.
pub(crate) async fn start_overall(
    tx: &mut Tx,
    task_id: Uuid,
    step_id: Option<Uuid>,
    input: DecisionInput,
    lease: Lease,
) -> Result<Option<ClaimedDecision>> {
    move_task(tx, task_id, TaskMove::Reflect).await?;
    let kind = DecisionKind::OverallReflection;
    create_decision(tx, task_id, kind, step_id, &input, Some(lease)).await
}

/// A row in `recoveries`, copied from the failed attempt that started the recovery.
pub(crate) async fn record_recovery(
    tx: &mut Tx,
    attempt_id: Option<i64>,
    action: RecoveryAction,
    category: Option<&str>,
) -> Result<()> {
    let Some(attempt_id) = attempt_id else {
        return Ok(());
    };
    sqlx::query(sql!("recovery/record"))
        .bind(attempt_id)
        .bind(action.tier())
        .bind(action.label())
        .bind(category)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
