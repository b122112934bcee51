//! Rerun an ended task from one of its steps: a new plan version (origin `rerun`) that keeps
//! every output not downstream of the step and runs the step and its descendants again, with
//! overrides.

use std::collections::BTreeMap;

use serde_json::Value;
use uuid::Uuid;

use super::plans::{install_version, live_steps, old_steps};
use super::submit::StepOverride;
use super::tasks::move_task;
use super::{NewEvent, Result, Store, StoreError, Tx, known_tools, lock_task, task_status};
use crate::domain::event::{self, Event};
use crate::domain::model::{PlanSpec, StepSpec};
use crate::domain::plan::{self, downstream};
use crate::domain::records::StepRow;
use crate::domain::recovery::rerun_carry;
use crate::domain::status::TaskStatus;
use crate::domain::transitions::TaskMove;

/// What to rerun: the step to start from, and overrides for it or its descendants.
#[derive(Debug, Clone, Default)]
pub struct Rerun {
    pub from_step: String,
    pub step_overrides: BTreeMap<String, StepOverride>,
    /// The bulk action rerunning it (named in the event).
    pub bulk_action_id: Option<Uuid>,
}

impl Store {
    /// Rerun a task that has ended (`succeeded`, `failed`, `cancelled`) or waits in
    /// `needs_intervention`, from `r.from_step`. Steps that are neither `from_step` nor
    /// downstream of it and succeeded keep their outputs (their tools are not called again);
    /// the rest run, with the overrides merged. The task's deadline, if it had one, starts
    /// again. All or nothing; returns the task's new status.
    pub async fn rerun_task(&self, id: Uuid, r: &Rerun) -> Result<TaskStatus> {
        in_tx!(self.pool, |tx| rerun_in(tx, id, r).await)
    }
}

/// [`Store::rerun_task`] in `tx`.
pub(crate) async fn rerun_in(tx: &mut Tx, id: Uuid, r: &Rerun) -> Result<TaskStatus> {
    let task = lock_task(tx, id).await?;
    if !TaskMove::Rerun.allows(task.status) {
        return Err(StoreError::Conflict(format!(
            "task {id} is {}; only a task that has ended or needs intervention can be rerun",
            task.status
        )));
    }
    let live = live_steps(&mut **tx, id, task.plan_version).await?;
    let plan = rerun_plan(tx, id, &live, r).await?;
    let carry = rerun_carry(&old_steps(&live), &plan.steps, &r.from_step);
    let mut kept: Vec<&String> = carry.kept.iter().collect();
    kept.sort();
    let rerun: Vec<&String> = plan
        .steps
        .iter()
        .map(|s| &s.id)
        .filter(|k| !carry.kept.contains(*k))
        .collect();
    let version = task.plan_version + 1;
    let events = [
        NewEvent::new(
            id,
            Event::TaskRerun(event::TaskRerun {
                from_status: task.status,
                from_step: r.from_step.clone(),
                from_version: task.plan_version,
                to_version: version,
                kept: kept.into_iter().cloned().collect(),
                rerun: rerun.into_iter().cloned().collect(),
                step_overrides: r.step_overrides.keys().cloned().collect(),
                bulk_action_id: r.bulk_action_id,
            }),
        ),
        NewEvent::new(
            id,
            event::plan_generated(version, "rerun", plan.steps.len()),
        ),
    ];
    move_task(tx, id, TaskMove::Rerun).await?;
    sqlx::query(sql!("task/reset_for_rerun"))
        .bind(id)
        .execute(&mut **tx)
        .await?;
    install_version(tx, &task, &plan, &carry, "rerun", false, None).await?;
    super::step_queue::restart_wait_clocks(tx, task.id).await?;
    tx.touch(&[id]);
    tx.events(events);
    task_status(tx, id).await
}

/// The current plan as it ran (recovery overrides included) with the rerun's overrides merged;
/// checked: `from_step` exists, overrides only name steps that run again, tools are registered.
async fn rerun_plan(tx: &mut Tx, task: Uuid, live: &[StepRow], r: &Rerun) -> Result<PlanSpec> {
    let mut steps: Vec<StepSpec> = live.iter().map(|s| s.effective_spec()).collect();
    if !steps.iter().any(|s| s.id == r.from_step) {
        return Err(StoreError::Rejected(format!(
            "from_step {:?} is not a step of the task's current plan",
            r.from_step
        )));
    }
    let runs_again = downstream(&steps, &r.from_step);
    for (key, o) in &r.step_overrides {
        if !runs_again.contains(key) {
            return Err(StoreError::Rejected(format!(
                "step_overrides names step {key:?}, which is neither from_step nor downstream of it"
            )));
        }
        let s = steps
            .iter_mut()
            .find(|s| &s.id == key)
            .expect("a downstream step is in the plan");
        if let Some(p) = &o.parameters {
            let mut merged = s.parameters.as_object().cloned().unwrap_or_default();
            merged.extend(p.clone());
            s.parameters = Value::Object(merged);
        }
        if let Some(t) = &o.tool {
            s.tool = t.clone();
        }
    }
    let plan = PlanSpec {
        steps,
        reasoning: format!("rerun from step {}", r.from_step),
        estimated_duration: None,
    };
    let known = known_tools(tx, task).await?;
    plan::validate(&plan, &known)
        .map_err(|e| StoreError::Rejected(format!("the rerun plan is invalid: {}", e.message)))?;
    Ok(plan)
}
