//! Task deadlines (`limits.task_timeout_secs`): a task still unfinished when its `deadline_at`
//! passes fails with `deadline_exceeded`. Claims already skip such a task; the workers'
//! maintenance calls [`Store::expire_deadlines`] to end it.

use super::lifecycle::fail_task;
use super::steps::fence_running_steps;
use super::tasks::lock_past_deadline;
use super::{Result, Store};
use crate::domain::ToolFailure;
use crate::domain::event::TaskError;
use crate::domain::model::DEADLINE_EXCEEDED;

impl Store {
    /// Fail up to `limit` tasks past their deadline, in one transaction: each task's running
    /// steps fail with a `deadline_exceeded` attempt (their lease tokens move on, so a result
    /// that arrives later is fenced), open steps are skipped, open decisions cancelled, and the
    /// task ends `failed` with `error.code` `deadline_exceeded`. Tasks another transaction
    /// holds are left for the next sweep. Returns how many tasks failed.
    pub async fn expire_deadlines(&self, limit: i64) -> Result<u64> {
        in_tx!(self.pool, |tx| {
            let due = lock_past_deadline(tx, limit).await?;
            let failure = ToolFailure::new(
                DEADLINE_EXCEEDED,
                "the task's deadline passed while this attempt ran",
                false,
            );
            let step_error = serde_json::to_value(&failure).expect("a failure serializes");
            for task_id in &due {
                let fenced =
                    fence_running_steps(tx, *task_id, &step_error, DEADLINE_EXCEEDED).await?;
                let error = TaskError {
                    code: Some(DEADLINE_EXCEEDED.into()),
                    message: Some(
                        "the task's deadline (limits.task_timeout_secs) passed before it finished"
                            .into(),
                    ),
                    fenced_steps: Some(fenced),
                    ..Default::default()
                };
                fail_task(tx, *task_id, error).await?;
            }
            Ok(due.len() as u64)
        })
    }
}
