//! A task's status moves ([`TaskMove`]): one named statement each in `sql/task/`, its status
//! literals checked against the move by `tests/it/architecture.rs`. A move of one task that
//! matches nothing is [`StoreError::Corrupt`], never an overwrite; a move of a set moves every
//! task of the set or none (the transaction rolls back).
//!
//! A move names its task by id and checks the status as `(status IN (…)) IS NOT FALSE`: the
//! same test (a status is never NULL), but one no index matches, so the planner reaches the row
//! by its key. A generic plan made while the tables were empty once walked the status index
//! instead, and kept doing it as the queue grew (a move of 34 tasks took 16 ms behind 60,000
//! queued tasks).

use uuid::Uuid;

use super::{Result, StoreError, Tx};
use crate::domain::records::TaskRow;
use crate::domain::transitions::{Claimable, TaskMove};

/// The statement of a move of one task (`$1`: its id); None for the moves only ever made on
/// a set ([`succeed_tasks`], [`succeed_at_once`]).
fn one(m: TaskMove) -> Option<&'static str> {
    Some(match m {
        TaskMove::StartPlanning => sql!("task/start_planning"),
        TaskMove::Run => sql!("task/run"),
        TaskMove::Evaluate => sql!("task/evaluate"),
        TaskMove::Reflect => sql!("task/reflect"),
        TaskMove::Replan => sql!("task/replan"),
        TaskMove::Rerun => sql!("task/rerun"),
        TaskMove::Fail => sql!("task/fail"),
        TaskMove::NeedIntervention => sql!("task/need_intervention"),
        TaskMove::Cancel => sql!("task/cancel"),
        TaskMove::Succeed | TaskMove::SucceedAtOnce => return None,
    })
}

/// Move a task (and bump `state_version`, which fences task decisions). The task must be in
/// one of the move's source statuses; otherwise nothing changes and the move is an error.
pub(crate) async fn move_task(tx: &mut Tx, task_id: Uuid, m: TaskMove) -> Result<()> {
    if run_one(&mut **tx, task_id, m).await? {
        tx.moved(m, &[task_id]);
        Ok(())
    } else {
        Err(StoreError::Corrupt(format!(
            "task {task_id}: {m:?} (to {}) is not allowed from its status",
            m.to()
        )))
    }
}

/// Move a task if it is in one of the move's source statuses; false when it was not. On any
/// executor, so only for a move that changes nothing claimable ([`move_task`] says what the
/// others touch).
pub(crate) async fn try_move_task(
    db: impl sqlx::PgExecutor<'_>,
    task_id: Uuid,
    m: TaskMove,
) -> Result<bool> {
    debug_assert!(
        !m.changes_claimable(),
        "{m:?} changes what is claimable: move it with move_task"
    );
    run_one(db, task_id, m).await
}

/// Run the statement of a move of one task; whether it moved.
async fn run_one(db: impl sqlx::PgExecutor<'_>, task_id: Uuid, m: TaskMove) -> Result<bool> {
    let sql = one(m)
        .ok_or_else(|| StoreError::Corrupt(format!("{m:?} moves a set of tasks, not one")))?;
    let n = sqlx::query(sql)
        .bind(task_id)
        .execute(db)
        .await?
        .rows_affected();
    Ok(n == 1)
}

/// [`TaskMove::Evaluate`] for every task of `task_ids` (distinct ids); their rows after it.
pub(crate) async fn evaluate_tasks(tx: &mut Tx, task_ids: &[Uuid]) -> Result<Vec<TaskRow>> {
    move_set(tx, task_ids, TaskMove::Evaluate, sql!("task/evaluate_many")).await
}

/// [`TaskMove::Succeed`] for every task of `task_ids` (distinct ids); their rows after it.
pub(crate) async fn succeed_tasks(tx: &mut Tx, task_ids: &[Uuid]) -> Result<Vec<TaskRow>> {
    move_set(tx, task_ids, TaskMove::Succeed, sql!("task/succeed_many")).await
}

/// Every task must be in one of the move's source statuses; otherwise the move is an error
/// (the transaction is rolled back).
async fn move_set(
    tx: &mut Tx,
    task_ids: &[Uuid],
    m: TaskMove,
    sql: &'static str,
) -> Result<Vec<TaskRow>> {
    if task_ids.is_empty() {
        return Ok(vec![]);
    }
    let rows: Vec<TaskRow> = sqlx::query_as(sql)
        .bind(task_ids)
        .fetch_all(&mut **tx)
        .await?;
    if rows.len() != task_ids.len() {
        return Err(StoreError::Corrupt(format!(
            "{m:?} (to {}) moved {} of {} tasks: the others are not in its source statuses",
            m.to(),
            rows.len(),
            task_ids.len()
        )));
    }
    tx.moved(m, task_ids);
    Ok(rows)
}

/// `running → succeeded` with the final score, for tasks whose pure evaluation passed (each must
/// be `running`; otherwise the move is an error and the transaction rolls back): one write of
/// each task row.
pub(crate) async fn succeed_at_once(tx: &mut Tx, task_ids: &[Uuid], scores: &[f64]) -> Result<()> {
    if task_ids.is_empty() {
        return Ok(());
    }
    let n = sqlx::query(sql!("task/succeed_at_once"))
        .bind(task_ids)
        .bind(scores)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    if n as usize != task_ids.len() {
        return Err(StoreError::Corrupt(format!(
            "{:?} moved {n} of {} tasks: the others are not running",
            TaskMove::SucceedAtOnce,
            task_ids.len()
        )));
    }
    // the plan is done: nothing claimable changed (`changes_claimable`)
    Ok(())
}

/// Up to `limit` unfinished tasks whose deadline passed (those a [`TaskMove::Fail`] may
/// leave), oldest deadline first, locked, skipping tasks another transaction holds.
pub(crate) async fn lock_past_deadline(tx: &mut Tx, limit: i64) -> Result<Vec<Uuid>> {
    Ok(sqlx::query_scalar(sql!("task/lock_past_deadline"))
        .bind(limit)
        .fetch_all(&mut **tx)
        .await?)
}
