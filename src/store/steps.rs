//! The step moves that recovery and plan changes make (the queue's own — claim, complete,
//! fail, release — live in [`super::step_queue`]): a tier 1 retry, a resume, supersede and skip,
//! and failing a task's running steps. One named statement each in `sql/step/`.
//!
//! No index of `steps` reads its status (so a claim and a completion are HOT updates; the
//! running steps are listed in `running_steps`, kept by triggers); a move of one step by id
//! checks its status through an expression no index matches (see [`super::tasks`] for why).

use serde_json::Value;
use uuid::Uuid;

use super::{Result, StoreError, Tx};
use crate::domain::transitions::StepMove;

/// A single-row move that matched no row: the caller checked the row's status under its lock,
/// so this is our bug, never a state to overwrite.
pub(crate) fn illegal(m: impl std::fmt::Debug, id: Uuid) -> StoreError {
    StoreError::Corrupt(format!(
        "{m:?} of {id} matched no row in its source statuses"
    ))
}

/// A move of one row by id: `n` rows moved must be 1, else [`illegal`].
pub(crate) fn moved_one(n: u64, m: impl std::fmt::Debug, id: Uuid) -> Result<()> {
    match n {
        0 => Err(illegal(m, id)),
        _ => Ok(()),
    }
}

/// Tier 1: `failed → ready` on the same row, overrides merged, after `delay_ms`.
pub(crate) async fn rerun_failed(
    tx: &mut Tx,
    (task_id, step_id): (Uuid, Uuid),
    params: Option<Value>,
    tool: Option<&str>,
    delay_ms: u64,
) -> Result<()> {
    let n = sqlx::query(sql!("step/rerun"))
        .bind(step_id)
        .bind(params)
        .bind(tool)
        .bind(delay_ms as f64)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    tx.moved(StepMove::Rerun, &[task_id]);
    moved_one(n, StepMove::Rerun, step_id)
}

/// Resume: every failed step of the plan version `failed → ready` with a fresh retry count.
/// Returns (steps rerun, steps already open).
pub(crate) async fn rerun_all_failed(
    tx: &mut Tx,
    task_id: Uuid,
    version: i32,
) -> Result<(i64, i64)> {
    tx.moved(StepMove::Rerun, &[task_id]);
    Ok(sqlx::query_as(sql!("step/rerun_all_failed"))
        .bind(task_id)
        .bind(version)
        .fetch_one(&mut **tx)
        .await?)
}

/// Tier 2: the failed row makes way for its repaired definition.
pub(crate) async fn supersede_step(tx: &mut Tx, (task_id, step_id): (Uuid, Uuid)) -> Result<()> {
    let n = sqlx::query(sql!("step/supersede"))
        .bind(step_id)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    tx.moved(StepMove::Supersede, &[task_id]);
    moved_one(n, StepMove::Supersede, step_id)
}

/// A new plan version replaces this one: its open and failed rows are superseded.
pub(crate) async fn supersede_version(tx: &mut Tx, task_id: Uuid, version: i32) -> Result<()> {
    sqlx::query(sql!("step/supersede_version"))
        .bind(task_id)
        .bind(version)
        .execute(&mut **tx)
        .await?;
    tx.moved(StepMove::Supersede, &[task_id]);
    Ok(())
}

/// Blocked, ready and waiting steps of a task become skipped, and its open waits are
/// cancelled (a late resolution then changes nothing). Returns how many steps.
pub(crate) async fn skip_open_steps(tx: &mut Tx, task_id: Uuid) -> Result<u64> {
    let n = sqlx::query(sql!("step/skip_open"))
        .bind(task_id)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    tx.moved(StepMove::Skip, &[task_id]);
    sqlx::query(sql!("wait/cancel_open"))
        .bind(task_id)
        .execute(&mut **tx)
        .await?;
    Ok(n)
}

/// Every running step of a task fails with `error` (its `category`), its lease token bumped so
/// the holder's late result matches nothing; one failed attempt each. Returns their step keys.
pub(crate) async fn fence_running_steps(
    tx: &mut Tx,
    task_id: Uuid,
    error: &Value,
    category: &str,
) -> Result<Vec<String>> {
    tx.moved(StepMove::Fail, &[task_id]);
    Ok(sqlx::query_scalar(sql!("step/fence_running"))
        .bind(task_id)
        .bind(error)
        .bind(category)
        .fetch_one(&mut **tx)
        .await?)
}

/// What promotion left of one task's plan version.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct Promoted {
    pub task_id: Uuid,
    /// Whether a step is still blocked, ready, running, failed or waiting.
    pub open: bool,
    /// Whether a step is ready (promoted now or before).
    pub ready: bool,
    /// Keys of the steps just promoted, in plan order.
    pub promoted: Vec<String>,
}

/// `blocked → ready` for the steps of these (task, plan version)s whose dependencies are all
/// done; per task, what is left open. Only the tasks it reports `ready` have new claimable
/// steps or room: the caller touches those (the completion cycle, whose sync is on the hot
/// path, touches no more).
pub(crate) async fn promote_and_count(
    tx: &mut Tx,
    task_ids: &[Uuid],
    versions: &[i32],
) -> Result<Vec<Promoted>> {
    Ok(sqlx::query_as(sql!("step/promote"))
        .bind(task_ids)
        .bind(versions)
        .fetch_all(&mut **tx)
        .await?)
}
