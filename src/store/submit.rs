//! Writes a client starts: submit a task, cancel it, resume it from `needs_intervention`.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::decision_queue::create_decision;
use super::lifecycle::start_evaluation;
use super::plans::{insert_plan, insert_steps_for_version, replace_plan};
use super::transitions::{cancel_open_decisions, move_task, rerun_all_failed, skip_open_steps};
use super::{
    NewEvent, Result, Store, StoreError, Tx, append_events, known_tools, lock_task, notify_ready,
};
use crate::domain::decision::DecisionInput;
use crate::domain::event_kind;
use crate::domain::limits::Limits;
use crate::domain::model::PlanSpec;
use crate::domain::records::TaskRow;
use crate::domain::recovery::{Carry, Strategy};
use crate::domain::status::{DecisionKind, TaskStatus};
use crate::domain::transitions::TaskMove;

/// A task to insert.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub description: String,
    pub metadata: Value,
    pub context: Value,
    pub priority: i32,
    pub idempotency_key: Option<String>,
    pub limits: Limits,
    /// `None`: the task is planned from its description by the brain (a `plan` decision).
    pub plan: Option<PlanSpec>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub task_id: Uuid,
    pub status: TaskStatus,
    /// False when the idempotency key named an existing task.
    pub created: bool,
}

/// How to resume a task: a replacement plan, or overrides for named steps of the current one.
#[derive(Debug, Clone, Default)]
pub struct Resume {
    pub plan: Option<PlanSpec>,
    pub step_overrides: BTreeMap<String, StepOverride>,
}

/// Parameters merged into a step, and/or the tool it runs with.
#[derive(Debug, Clone, Default)]
pub struct StepOverride {
    pub parameters: Option<Map<String, Value>>,
    pub tool: Option<String>,
}

impl Store {
    /// Insert a task with its first plan version and steps, in one transaction. With an
    /// idempotency key that already exists, nothing is written and the existing task is returned.
    pub async fn submit_task(&self, t: &NewTask) -> Result<Submitted> {
        let inserted = in_tx!(self.pool, |tx| {
            let Some(task) = insert_task(tx, t).await? else {
                return Ok(None);
            };
            let submitted = NewEvent::new(
                task.id,
                event_kind::TASK_SUBMITTED,
                json!({"description": t.description, "priority": t.priority, "limits": t.limits,
                           "planned_by_brain": t.plan.is_none()}),
            );
            match &t.plan {
                Some(plan) => install_first_plan(tx, &task, plan, submitted).await?,
                None => {
                    // planned by the brain: a claimable `plan` decision, any worker may take it
                    let input = DecisionInput::default();
                    create_decision(tx, task.id, DecisionKind::Plan, None, &input, None).await?;
                    append_events(tx, &[submitted]).await?;
                }
            }
            Ok(Some(Submitted {
                task_id: task.id,
                status: task.status,
                created: true,
            }))
        })?;
        match inserted {
            Some(s) => Ok(s),
            None => {
                let key = t.idempotency_key.as_deref().unwrap_or_default();
                let (task_id, status): (Uuid, TaskStatus) =
                    sqlx::query_as("SELECT id, status FROM tasks WHERE idempotency_key = $1")
                        .bind(key)
                        .fetch_one(&self.pool)
                        .await?;
                Ok(Submitted {
                    task_id,
                    status,
                    created: false,
                })
            }
        }
    }

    /// Cancel a task unless it is terminal: open steps are skipped; running steps finish but
    /// nothing after them starts.
    pub async fn cancel_task(&self, id: Uuid) -> Result<TaskStatus> {
        in_tx!(self.pool, |tx| {
            let status = lock_task(tx, id).await?.status;
            if status.is_terminal() {
                return Err(StoreError::Conflict(format!(
                    "task {id} is already {status}; only unfinished tasks can be cancelled"
                )));
            }
            move_task(tx, id, TaskMove::Cancel).await?;
            let skipped = skip_open_steps(tx, id).await?;
            cancel_open_decisions(tx, id).await?;
            append_events(
                tx,
                &[NewEvent::new(
                    id,
                    event_kind::TASK_CANCELLED,
                    json!({"previous_status": status, "skipped_steps": skipped}),
                )],
            )
            .await?;
            Ok(TaskStatus::Cancelled)
        })
    }

    /// Resume a task stopped in `needs_intervention`. With a plan: it becomes the next plan
    /// version (unchanged succeeded steps are kept). Otherwise the overrides are merged into the
    /// named steps and the failed steps run again with fresh retry counts. All or nothing.
    pub async fn resume_task(&self, id: Uuid, r: &Resume) -> Result<TaskStatus> {
        in_tx!(self.pool, |tx| {
            let task = lock_task(tx, id).await?;
            if task.status != TaskStatus::NeedsIntervention {
                return Err(StoreError::Conflict(format!(
                    "task {id} is {}; only a task in needs_intervention can be resumed",
                    task.status
                )));
            }
            let mut events = vec![NewEvent::new(
                id,
                event_kind::TASK_RESUMED,
                json!({"stop_reason": task.stop_reason, "with_plan": r.plan.is_some(),
                       "step_overrides": r.step_overrides.keys().collect::<Vec<_>>()}),
            )];
            sqlx::query(
                "UPDATE tasks SET consecutive_failures = 0, stop_reason = NULL WHERE id = $1",
            )
            .bind(id)
            .execute(&mut **tx)
            .await?;
            if let Some(plan) = &r.plan {
                let strategy = Strategy::AdjustDependencies {
                    adjustments: vec![],
                };
                replace_plan(tx, &task, plan, &strategy, "resume", None, &mut events).await?;
            } else {
                apply_overrides(tx, &task, &r.step_overrides).await?;
                rerun_failed_steps(tx, &task).await?;
            }
            append_events(tx, &events).await?;
            Ok(())
        })?;
        let status: TaskStatus = sqlx::query_scalar("SELECT status FROM tasks WHERE id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await?;
        Ok(status)
    }
}

/// Insert the task row; `None` when its idempotency key already exists.
async fn insert_task(tx: &mut Tx, t: &NewTask) -> Result<Option<TaskRow>> {
    let status = if t.plan.is_some() {
        TaskStatus::Running
    } else {
        TaskStatus::Pending
    };
    Ok(sqlx::query_as(
        r#"
        INSERT INTO tasks (id, description, metadata, context, priority, idempotency_key, status,
                           plan_version, max_step_retries, max_single_step_repairs, max_task_replans,
                           max_consecutive_failures, max_reflection_rounds, max_concurrent_steps,
                           step_reflection, auto_reflection, success_threshold, max_llm_calls)
        VALUES ($1, $2, $3, $4, $5, $6, $16, $17, $7, $8, $9, $10, $11, $12, $13, $14, $15, $18)
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING *
        "#,
    )
    .bind(Uuid::now_v7())
    .bind(&t.description)
    .bind(&t.metadata)
    .bind(&t.context)
    .bind(t.priority)
    .bind(&t.idempotency_key)
    .bind(t.limits.max_step_retries)
    .bind(t.limits.max_single_step_repairs)
    .bind(t.limits.max_task_replans)
    .bind(t.limits.max_consecutive_failures)
    .bind(t.limits.max_reflection_rounds)
    .bind(t.limits.max_concurrent_steps)
    .bind(t.limits.step_reflection)
    .bind(t.limits.auto_reflection)
    .bind(t.limits.success_threshold)
    .bind(status)
    .bind(if t.plan.is_some() { 1 } else { 0 })
    .bind(t.limits.max_llm_calls)
    .fetch_optional(&mut **tx)
    .await?)
}

/// Plan version 1 of a task submitted with a plan, its steps and events.
async fn install_first_plan(
    tx: &mut Tx,
    task: &TaskRow,
    plan: &PlanSpec,
    submitted: NewEvent,
) -> Result<()> {
    insert_plan(tx, task.id, 1, "initial", plan).await?;
    insert_steps_for_version(tx, task, 1, plan, &Carry::default(), 0).await?;
    let generated = NewEvent::new(
        task.id,
        event_kind::PLAN_GENERATED,
        json!({"version": 1, "origin": "initial", "steps": plan.steps.len()}),
    );
    append_events(tx, &[submitted, generated]).await?;
    if plan.steps.iter().any(|s| s.dependencies.is_empty()) {
        notify_ready(tx).await?;
    }
    Ok(())
}

/// Merge resume overrides into the named live steps of the current plan version.
async fn apply_overrides(
    tx: &mut Tx,
    task: &TaskRow,
    overrides: &BTreeMap<String, StepOverride>,
) -> Result<()> {
    let live: Vec<(Uuid, String)> = sqlx::query_as(
        "SELECT id, step_key FROM steps
         WHERE task_id = $1 AND plan_version = $2 AND status <> 'superseded'",
    )
    .bind(task.id)
    .bind(task.plan_version)
    .fetch_all(&mut **tx)
    .await?;
    let tools = known_tools(tx).await?;
    for (key, o) in overrides {
        let Some((step_id, _)) = live.iter().find(|(_, k)| k == key) else {
            return Err(StoreError::Rejected(format!(
                "step_overrides names step {key:?}, which is not in the current plan"
            )));
        };
        if let Some(t) = &o.tool
            && !tools.contains(t)
        {
            return Err(StoreError::Rejected(format!(
                "step_overrides.{key}.tool {t:?} is not a registered tool"
            )));
        }
        sqlx::query(
            "UPDATE steps SET param_overrides = param_overrides || $2,
                    tool_override = coalesce($3, tool_override), updated_at = now()
             WHERE id = $1",
        )
        .bind(step_id)
        .bind(Value::Object(o.parameters.clone().unwrap_or_default()))
        .bind(&o.tool)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// The failed steps run again; with nothing left to run, the plan is evaluated.
async fn rerun_failed_steps(tx: &mut Tx, task: &TaskRow) -> Result<()> {
    let (rerun, open) = rerun_all_failed(tx, task.id, task.plan_version).await?;
    if rerun == 0 && open == 0 {
        start_evaluation(tx, task.id, None).await?;
    } else {
        move_task(tx, task.id, TaskMove::Run).await?;
        notify_ready(tx).await?;
    }
    Ok(())
}
