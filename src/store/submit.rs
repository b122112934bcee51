//! Writes a client starts: submit a task, cancel it, resume it from `needs_intervention`;
//! `bulk`: a batch of tasks in one statement.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use uuid::Uuid;

mod bulk;

use super::decision_queue::cancel_open_decisions;
use super::lifecycle::start_evaluation;
use super::plans::replace_plan;
use super::steps::{rerun_all_failed, skip_open_steps};
use super::tasks::move_task;
use super::{NewEvent, Result, Store, StoreError, Tx, known_tools, lock_task, task_status};
use crate::domain::event::{self, Event};
use crate::domain::limits::Limits;
use crate::domain::model::PlanSpec;
use crate::domain::records::TaskRow;
use crate::domain::recovery::Strategy;
use crate::domain::status::TaskStatus;
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
    /// The workflow template `plan` was made from (its origin is then `template:<id>`).
    pub template: Option<String>,
    /// Nothing of the task runs before this (`run_at`, or now plus `delay_secs` on the
    /// database's clock); its deadline counts from then.
    pub start: Start,
    /// The task's own completion webhook.
    pub webhook: Option<TaskWebhook>,
    /// A child task's parent (the built-in `task`), recorded as it is inserted.
    pub parent: Option<ParentRef>,
    /// The fairness key: within a priority, the claim serves keys in turn by weight.
    pub concurrency_key: Option<String>,
    /// The tenant that owns it (its plan may only name this tenant's tools).
    pub tenant: String,
}

/// The task and step that start a child task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParentRef {
    pub task_id: Uuid,
    pub step_id: Uuid,
}

/// A task's own webhook: where its events go, and which kinds (empty: the terminal kinds and
/// `intervention_required`). Signed with `[webhooks] signing_secret`.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskWebhook {
    pub url: String,
    pub events: Vec<String>,
}

/// When a task may start.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Start {
    #[default]
    Now,
    At(chrono::DateTime<chrono::Utc>),
    /// Seconds from now, on the database's clock.
    After(f64),
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
    /// The bulk action resuming it (named in the event).
    pub bulk_action_id: Option<Uuid>,
}

/// Parameters merged into a step, and/or the tool it runs with.
#[derive(Debug, Clone, Default)]
pub struct StepOverride {
    pub parameters: Option<Map<String, Value>>,
    pub tool: Option<String>,
}

impl Store {
    /// Insert a task with its first plan version and steps (one statement, see
    /// [`Store::submit_tasks`]). With an idempotency key that already exists, nothing is
    /// written and the existing task is returned. A tool the plan names that is not registered
    /// is [`StoreError::Rejected`].
    pub async fn submit_task(&self, t: &NewTask) -> Result<Submitted> {
        match self.submit_tasks(std::slice::from_ref(t)).await? {
            Ok(mut v) => Ok(v.pop().expect("one result per task")),
            Err(missing) => Err(StoreError::Rejected(format!(
                "the plan names tools that are not registered: {}",
                missing.join(", ")
            ))),
        }
    }

    /// Insert tasks with their first plan versions, steps, plan decisions (tasks without a
    /// plan) and first events, all or nothing, in one statement and one commit (in a hot
    /// transaction: the statement's generic plan is made once per session). Results are in
    /// input order; an idempotency key already used (before, or earlier in
    /// the same batch) gives that task with `created: false`. `Ok(Err(tools))`: the plans name
    /// tools that are not registered, and nothing was written.
    pub async fn submit_tasks(
        &self,
        tasks: &[NewTask],
    ) -> Result<std::result::Result<Vec<Submitted>, Vec<String>>> {
        self.insert_tasks(tasks, true).await
    }

    /// [`Store::submit_tasks`] without waking the workers: the caller announces the new work
    /// after the commit ([`Store::announce_ready`]), so concurrent submits are not serialized
    /// by PostgreSQL's notification lock.
    pub async fn submit_tasks_quietly(
        &self,
        tasks: &[NewTask],
    ) -> Result<std::result::Result<Vec<Submitted>, Vec<String>>> {
        self.insert_tasks(tasks, false).await
    }

    /// Wake the workers: ready steps, and with `decisions` a pending decision. Its own
    /// statement and transaction, which writes nothing (no commit to flush).
    pub async fn announce_ready(&self, decisions: bool) -> Result<()> {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(super::READY_CHANNEL)
            .bind(if decisions {
                super::DECISIONS_PAYLOAD
            } else {
                ""
            })
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn insert_tasks(
        &self,
        tasks: &[NewTask],
        notify: bool,
    ) -> Result<std::result::Result<Vec<Submitted>, Vec<String>>> {
        let batch = bulk::Batch::new(tasks, notify, self.default_weight);
        // A hot transaction: its generic plan is made once per session. Planned anew at every
        // execution (`plan_cache_mode = auto` keeps the custom plans: their estimates know the
        // arrays' lengths) the statement took 2 ms to plan and 1 ms to run for one task, the
        // largest part of a client's submit → start (docs/benchmarks-history.md, "Stock first").
        in_tx!(hot self, |tx| {
            match batch.insert(&mut **tx).await? {
                bulk::Inserted::UnknownTools(t) => Ok(Err(t)),
                bulk::Inserted::Done(rows) => Ok(Ok(batch.results(&mut **tx, &rows).await?)),
            }
        })
    }

    /// [`Store::submit_tasks`] inside `tx` (a child task, inserted under its parent's lock).
    pub(crate) async fn submit_in(
        &self,
        tx: &mut Tx,
        tasks: &[NewTask],
    ) -> Result<std::result::Result<Vec<Submitted>, Vec<String>>> {
        let batch = bulk::Batch::new(tasks, true, self.default_weight);
        match batch.insert(&mut **tx).await? {
            bulk::Inserted::UnknownTools(t) => Ok(Err(t)),
            bulk::Inserted::Done(rows) => Ok(Ok(batch.results(&mut **tx, &rows).await?)),
        }
    }

    /// Move the start of a task nothing of which has started (`run_at`); its deadline moves
    /// with it. A conflict once anything ran, or when the task has ended.
    pub async fn reschedule_task(
        &self,
        id: Uuid,
        run_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<()> {
        in_tx!(self.pool, |tx| {
            let task = lock_task(tx, id).await?;
            if !matches!(task.status, TaskStatus::Running | TaskStatus::Pending) {
                return Err(StoreError::Conflict(format!(
                    "task {id} is {}: only a task that has not started can be rescheduled",
                    task.status
                )));
            }
            let started: bool = sqlx::query_scalar(sql!("task/started"))
                .bind(id)
                .fetch_one(&mut **tx)
                .await?;
            if started {
                return Err(StoreError::Conflict(format!(
                    "task {id} has started: only a task nothing of which ran can be rescheduled"
                )));
            }
            sqlx::query(sql!("task/reschedule"))
                .bind(id)
                .bind(run_at)
                .execute(&mut **tx)
                .await?;
            tx.touch(&[id]);
            let e = event::TaskRescheduled {
                run_at,
                previous_run_at: task.run_at,
            };
            tx.event(id, Event::TaskRescheduled(e));
            tx.wake_steps();
            Ok(())
        })
    }

    /// Cancel a task unless it is terminal, and its unfinished descendants (child tasks, theirs,
    /// …) with it: open steps are skipped; running steps finish but nothing after them starts.
    /// Every task is locked in id order before any changes.
    pub async fn cancel_task(&self, id: Uuid) -> Result<TaskStatus> {
        in_tx!(self.pool, |tx| cancel_in(tx, id, None).await)
    }

    /// Resume a task stopped in `needs_intervention`. With a plan: it becomes the next plan
    /// version (unchanged succeeded steps are kept). Otherwise the overrides are merged into the
    /// named steps and the failed steps run again with fresh retry counts. All or nothing.
    pub async fn resume_task(&self, id: Uuid, r: &Resume) -> Result<TaskStatus> {
        in_tx!(self.pool, |tx| resume_in(tx, id, r).await)
    }
}

/// [`Store::cancel_task`] in `tx` (a bulk action's batch names itself in the event).
pub(crate) async fn cancel_in(tx: &mut Tx, id: Uuid, bulk: Option<Uuid>) -> Result<TaskStatus> {
    let (all, status) = lock_tree(tx, id).await?;
    let root = status[&id];
    if root.is_terminal() {
        return Err(StoreError::Conflict(format!(
            "task {id} is already {root}; only unfinished tasks can be cancelled"
        )));
    }
    for t in &all {
        if !status[t].is_terminal() {
            cancel_locked(tx, *t, status[t], bulk.filter(|_| *t == id)).await?;
        }
    }
    Ok(TaskStatus::Cancelled)
}

/// Lock a task and its unfinished descendants (children, theirs, …), in id order. A child is
/// only started under its parent's lock, and never under a task that has ended
/// ([`super::children`]); so once every task read is locked, the descendants are read again
/// (each statement sees what committed before it) and any child started before its parent was
/// locked is locked too, until none is new. After a cancel commits, no task of the tree can
/// start one. The ids in lock order, and each one's status.
async fn lock_tree(
    tx: &mut Tx,
    id: Uuid,
) -> Result<(Vec<Uuid>, std::collections::HashMap<Uuid, TaskStatus>)> {
    let (mut all, mut status) = (Vec::new(), std::collections::HashMap::new());
    let mut new = vec![id];
    loop {
        let found: Vec<Uuid> = sqlx::query_scalar(sql!("task/open_descendants"))
            .bind(id)
            .fetch_all(&mut **tx)
            .await?;
        new.extend(found.into_iter().filter(|t| !status.contains_key(t)));
        if new.is_empty() {
            return Ok((all, status));
        }
        new.sort();
        new.dedup();
        for t in new.drain(..) {
            status.insert(t, lock_task(tx, t).await?.status);
            all.push(t);
        }
    }
}

/// [`Store::resume_task`] in `tx`.
pub(crate) async fn resume_in(tx: &mut Tx, id: Uuid, r: &Resume) -> Result<TaskStatus> {
    let task = lock_task(tx, id).await?;
    if task.status != TaskStatus::NeedsIntervention {
        return Err(StoreError::Conflict(format!(
            "task {id} is {}; only a task in needs_intervention can be resumed",
            task.status
        )));
    }
    tx.push(NewEvent::new(
        id,
        Event::TaskResumed(event::TaskResumed {
            stop_reason: task.stop_reason.clone(),
            with_plan: r.plan.is_some(),
            step_overrides: r.step_overrides.keys().cloned().collect(),
            bulk_action_id: r.bulk_action_id,
        }),
    ));
    sqlx::query(sql!("task/reset_for_resume"))
        .bind(id)
        .execute(&mut **tx)
        .await?;
    if let Some(plan) = &r.plan {
        let strategy = Strategy::AdjustDependencies {
            adjustments: vec![],
        };
        replace_plan(tx, &task, plan, &strategy, "resume", None).await?;
    } else {
        apply_overrides(tx, &task, &r.step_overrides).await?;
        rerun_failed_steps(tx, &task).await?;
    }
    super::step_queue::restart_wait_clocks(tx, id).await?;
    tx.touch(&[id]);
    task_status(tx, id).await
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
    let tools = known_tools(tx, task.id).await?;
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
        sqlx::query(sql!("step/override_parameters"))
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
        tx.wake_steps();
    }
    Ok(())
}

/// Cancel the task `id` (locked by the caller, in `status`, not terminal).
pub(crate) async fn cancel_locked(
    tx: &mut super::Tx,
    id: Uuid,
    status: TaskStatus,
    bulk_action_id: Option<Uuid>,
) -> Result<()> {
    move_task(tx, id, TaskMove::Cancel).await?;
    let skipped = skip_open_steps(tx, id).await?;
    cancel_open_decisions(tx, id).await?;
    tx.event(
        id,
        Event::TaskCancelled(event::TaskCancelled {
            previous_status: status,
            skipped_steps: skipped,
            bulk_action_id,
        }),
    );
    Ok(())
}
