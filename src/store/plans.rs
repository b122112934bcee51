//! Plan versions and their step rows: insert a version's steps (kept, skipped, ready or
//! blocked), and install a replacement plan (replan or resume).

use std::collections::HashMap;

use serde_json::{Value, json};
use uuid::Uuid;

use super::decision_queue::{ClaimedDecision, Lease};
use super::lifecycle::start_evaluation;
use super::steps::supersede_version;
use super::tasks::move_task;
use super::{NewEvent, Result, Tx};
use crate::domain::event::{self, Event};
use crate::domain::model::PlanSpec;
use crate::domain::records::{StepRow, TaskRow};
use crate::domain::recovery::{self, Carry, OldStep, Strategy};
use crate::domain::status::StepStatus;
use crate::domain::transitions::TaskMove;

/// Live (not superseded) steps of one plan version, in plan order.
pub(crate) async fn live_steps(
    db: impl sqlx::PgExecutor<'_>,
    task_id: Uuid,
    version: i32,
) -> Result<Vec<StepRow>> {
    Ok(sqlx::query_as(
        "SELECT * FROM steps WHERE task_id = $1 AND plan_version = $2 AND status <> 'superseded'
           AND map_step_id IS NULL
         ORDER BY position",
    )
    .bind(task_id)
    .bind(version)
    .fetch_all(db)
    .await?)
}

/// A `plans` row (immutable).
pub(crate) async fn insert_plan(
    tx: &mut Tx,
    task_id: Uuid,
    version: i32,
    origin: &str,
    plan: &PlanSpec,
) -> Result<()> {
    sqlx::query(sql!("plan/insert"))
        .bind(task_id)
        .bind(version)
        .bind(origin)
        .bind(&plan.reasoning)
        .bind(plan.estimated_duration)
        .bind(serde_json::to_value(&plan.steps).expect("plan serializes"))
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// A repair's plan version: `plan` is stored as version N+1 and the live rows of version N move
/// to it unchanged (a running step keeps running: its fence is id + lease token + status, and
/// its completion reads the row's version afresh), so the stored plan of every version matches
/// the rows that ran under it and the current version never lists a replaced row. The caller
/// has superseded the replaced row (it stays in version N) and inserts its replacement.
pub(crate) async fn next_version(
    tx: &mut Tx,
    task: &TaskRow,
    plan: &PlanSpec,
    origin: &str,
) -> Result<i32> {
    let version = task.plan_version + 1;
    insert_plan(tx, task.id, version, origin, plan).await?;
    sqlx::query(sql!("plan/move_live_steps"))
        .bind(task.id)
        .bind(task.plan_version)
        .bind(version)
        .execute(&mut **tx)
        .await?;
    sqlx::query(sql!("task/set_plan_version"))
        .bind(task.id)
        .bind(version)
        .execute(&mut **tx)
        .await?;
    Ok(version)
}

/// Highest attempt number per step key, over every plan version of a task.
async fn max_attempts_by_key(tx: &mut Tx, task_id: Uuid) -> Result<HashMap<String, i32>> {
    let rows: Vec<(String, i32)> = sqlx::query_as(
        "SELECT step_key, max(attempts) FROM steps WHERE task_id = $1 GROUP BY step_key",
    )
    .bind(task_id)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().collect())
}

/// Outputs of the succeeded steps of a plan version, by key.
async fn succeeded_outputs(
    tx: &mut Tx,
    task_id: Uuid,
    version: i32,
) -> Result<HashMap<String, Value>> {
    let rows: Vec<(String, Value)> = sqlx::query_as(
        "SELECT step_key, coalesce(output, 'null'::jsonb) FROM steps
         WHERE task_id = $1 AND plan_version = $2 AND status = 'succeeded'",
    )
    .bind(task_id)
    .bind(version)
    .fetch_all(&mut **tx)
    .await?;
    Ok(rows.into_iter().collect())
}

/// Insert steps into a plan version in one statement. Kept steps (`carry.kept`) copy their
/// output from the previous version and are not run again; skipped ones are `skipped`; the rest
/// start `ready` when every dependency is already done, else `blocked`. Attempt numbers continue
/// from earlier rows of the same step key, so a tool never sees an idempotency key twice.
/// Returns how many steps will run.
pub(crate) async fn insert_steps_for_version(
    tx: &mut Tx,
    task: &TaskRow,
    version: i32,
    plan: &PlanSpec,
    carry: &Carry,
    base_position: i32,
) -> Result<usize> {
    let floors = max_attempts_by_key(tx, task.id).await?;
    let done_in_version: Vec<String> = sqlx::query_scalar(
        "SELECT step_key FROM steps WHERE task_id = $1 AND plan_version = $2
           AND status IN ('succeeded', 'skipped')",
    )
    .bind(task.id)
    .bind(version)
    .fetch_all(&mut **tx)
    .await?;
    let kept_outputs = if carry.kept.is_empty() {
        HashMap::new()
    } else {
        succeeded_outputs(tx, task.id, version - 1).await?
    };
    let done = |k: &String| {
        carry.kept.contains(k) || carry.skipped.contains(k) || done_in_version.contains(k)
    };
    let mut runnable = 0;
    let records: Vec<Value> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let status = if carry.kept.contains(&s.id) {
                StepStatus::Succeeded
            } else if carry.skipped.contains(&s.id) {
                StepStatus::Skipped
            } else {
                runnable += 1;
                if s.dependencies.iter().all(done) {
                    StepStatus::Ready
                } else {
                    StepStatus::Blocked
                }
            };
            json!({
                "id": Uuid::now_v7(),
                "step_key": s.id,
                "position": base_position + i as i32,
                "name": s.name,
                "tool": s.tool,
                "parameters": s.parameters,
                "dependencies": s.dependencies,
                "expected_output": s.expected_output,
                "optional": s.optional,
                "actions": s.actions,
                "map": s.map,
                "status": status,
                "attempts": floors.get(&s.id).copied().unwrap_or(0),
                "output": if status == StepStatus::Succeeded { kept_outputs.get(&s.id).cloned() } else { None },
                "finished": status.is_done(),
            })
        })
        .collect();
    sqlx::query(sql!("plan/insert_steps"))
        .bind(task.id)
        .bind(version)
        .bind(task.priority)
        .bind(Value::Array(records))
        .execute(&mut **tx)
        .await?;
    Ok(runnable)
}

/// Install `plan` as the task's next version: what the strategy keeps is copied (not run
/// again), the old version's open steps are superseded, counters of the new steps start at
/// zero, `consecutive_failures` resets, and a full replan starts a fresh runtime context.
pub(crate) async fn replace_plan(
    tx: &mut Tx,
    task: &TaskRow,
    plan: &PlanSpec,
    strategy: &Strategy,
    origin: &str,
    lease: Option<Lease>,
) -> Result<Option<ClaimedDecision>> {
    let live = live_steps(&mut **tx, task.id, task.plan_version).await?;
    let carry = recovery::carry_over(&old_steps(&live), &plan.steps, strategy);
    let version = task.plan_version + 1;
    tx.events(replanned_events(
        task, version, origin, plan, strategy, &carry,
    ));
    let fresh = matches!(strategy, Strategy::FullReplan);
    install_version(tx, task, plan, &carry, origin, fresh, lease).await
}

/// Live steps of the task's current version, as a carry-over sees them.
pub(crate) fn old_steps(live: &[StepRow]) -> Vec<OldStep> {
    live.iter()
        .map(|s| OldStep {
            spec: s.effective_spec(),
            succeeded: s.status == StepStatus::Succeeded,
        })
        .collect()
}

/// Store `plan` as version N+1 with `carry` (kept steps copied, skipped ones skipped), supersede
/// version N's open rows, and run it (or evaluate it when nothing is left to run). The task is
/// in a status `Run` starts from.
pub(crate) async fn install_version(
    tx: &mut Tx,
    task: &TaskRow,
    plan: &PlanSpec,
    carry: &Carry,
    origin: &str,
    fresh_context: bool,
    lease: Option<Lease>,
) -> Result<Option<ClaimedDecision>> {
    let version = task.plan_version + 1;
    insert_plan(tx, task.id, version, origin, plan).await?;
    supersede_version(tx, task.id, task.plan_version).await?;
    sqlx::query(sql!("task/install_version"))
        .bind(task.id)
        .bind(version)
        .bind(fresh_context)
        .execute(&mut **tx)
        .await?;
    let runnable = insert_steps_for_version(tx, task, version, plan, carry, 0).await?;
    if runnable == 0 {
        // everything was kept or skipped: the plan is already done
        return start_evaluation(tx, task.id, lease).await;
    }
    move_task(tx, task.id, TaskMove::Run).await?;
    tx.wake_steps();
    Ok(None)
}

fn replanned_events(
    task: &TaskRow,
    version: i32,
    origin: &str,
    plan: &PlanSpec,
    strategy: &Strategy,
    carry: &Carry,
) -> [NewEvent; 2] {
    let mut kept: Vec<&String> = carry.kept.iter().collect();
    kept.sort();
    let mut skipped: Vec<&String> = carry.skipped.iter().collect();
    skipped.sort();
    [
        NewEvent::new(
            task.id,
            Event::Replanned(event::Replanned {
                from_version: task.plan_version,
                to_version: version,
                strategy: strategy.clone(),
                kept: kept.into_iter().cloned().collect(),
                skipped: skipped.into_iter().cloned().collect(),
                steps: plan.steps.len(),
            }),
        ),
        NewEvent::new(
            task.id,
            event::plan_generated(version, origin, plan.steps.len()),
        ),
    ]
}
