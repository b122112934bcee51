//! Child tasks (the fan-out issue): a step's `task` call starts a task with its parent recorded
//! (`tasks.parent_task_id`, `parent_step_id`), one per call (the child's idempotency key names
//! the call's key and the attempt that started it; a later attempt of the same call takes over
//! a child no attempt waited on), and the step waits for it on a `child` wait (`store::waits`).
//!
//! Bounded (the guarantees issue): a child is inserted in one transaction with its parent
//! locked, the parent's step still leased, the parent not ended or cancelled, the tree within
//! `[limits] max_child_depth` (a walk up the parents) and `max_descendants` (`task_trees`, a
//! counter per root taken under its row's lock). Cancelling a task locks and cancels its
//! unfinished descendants in one transaction ([`super::submit`]), so after it commits no task
//! of the tree starts another.

use uuid::Uuid;

use super::step_queue::StepLease;
use super::submit::{NewTask, ParentRef};
use super::{NewEvent, Result, Store, StoreError, Tx, known_tools, lock_task};
use crate::domain::Limits;
use crate::domain::child::{ChildSpec, Source, TreeLimits};
use crate::domain::event::{self, Event};
use crate::domain::model::ToolFailure;
use crate::domain::plan::Bounds;

/// The step whose `task` call starts a child.
#[derive(Debug, Clone, Copy)]
pub struct ChildOf<'a> {
    /// The parent step's lease: the child is started only while it holds.
    pub fence: &'a StepLease,
    pub step_key: &'a str,
    /// The attempt that starts it.
    pub attempt: i32,
    /// The call's idempotency key ([`crate::domain::call_key`]): one child per call, found
    /// again by an attempt that repeats the call after a lost one.
    pub call_key: &'a str,
    /// `[limits]`: the child's plan is held to them like a submitted one.
    pub bounds: Bounds,
    /// `[limits] max_child_depth`, `max_descendants`.
    pub tree: TreeLimits,
}

/// A task's child, as its parent's view lists it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ChildRow {
    pub task_id: Uuid,
    pub step_key: String,
    pub status: crate::domain::status::TaskStatus,
}

fn bad(message: String) -> ToolFailure {
    ToolFailure::new("parameter_error", message, false)
}

impl Store {
    /// Start the child task of a step's `task` call, or find the one an earlier attempt of
    /// the same call started and never waited on (its worker was lost before it parked);
    /// `Err(failure)` when the call is wrong (an unknown template or tool, an invalid plan),
    /// when the parent has ended or been cancelled, or when the tree is at a limit: the step
    /// fails with it. One transaction under the parent's lock, fenced on its step's lease: a
    /// cancel that commits first is seen, and one that comes after sees the child.
    pub async fn start_child(
        &self,
        parent: ChildOf<'_>,
        spec: &ChildSpec,
    ) -> Result<std::result::Result<Uuid, ToolFailure>> {
        let task_id = parent.fence.task_id;
        let template = match &spec.source {
            Source::Template(id) => match self.get_template(id).await {
                // another tenant's template is not there for this task
                Ok(t) if t.tenant == self.task_tenant(task_id).await? => Some(t),
                Ok(_) => None,
                Err(StoreError::NotFound(_)) => None,
                Err(e) => return Err(e),
            },
            Source::Plan(_) => None,
        };
        let (plan, description) = match spec.plan(template.as_ref()) {
            Ok(p) => p,
            Err(f) => return Ok(Err(f)),
        };
        if let Err(e) = crate::domain::plan::check_bounds(&plan, parent.bounds) {
            return Ok(Err(bad(format!("task: the child's plan: {}", e.message))));
        }
        let known = in_tx!(self.pool, |tx| known_tools(tx, task_id).await)?;
        if let Err(e) = crate::domain::plan::validate(&plan, &known) {
            return Ok(Err(bad(format!("task: the child's plan: {}", e.message))));
        }
        let p = self.get_task(task_id).await?;
        // the child inherits its parent's limits, and what is left of its deadline
        let left = self.seconds_left(task_id).await?;
        let task = NewTask {
            description,
            metadata: p.metadata.clone(),
            context: spec.input.clone(),
            priority: p.priority,
            idempotency_key: Some(format!("child:{}:{}", parent.call_key, parent.attempt)),
            limits: Limits {
                max_step_retries: p.max_step_retries,
                max_single_step_repairs: p.max_single_step_repairs,
                max_task_replans: p.max_task_replans,
                max_consecutive_failures: p.max_consecutive_failures,
                max_reflection_rounds: p.max_reflection_rounds,
                max_concurrent_steps: p.max_concurrent_steps,
                step_reflection: p.step_reflection,
                auto_reflection: p.auto_reflection,
                success_threshold: p.success_threshold,
                max_llm_calls: p.max_llm_calls,
                max_llm_tokens: p.max_llm_tokens,
                max_cost: p.max_cost,
                task_timeout_secs: left.map_or(0, |s| s.ceil().max(1.0) as i32),
            },
            plan: Some(plan),
            template: match &spec.source {
                Source::Template(id) => Some(id.clone()),
                Source::Plan(_) => None,
            },
            start: Default::default(),
            webhook: None,
            parent: Some(ParentRef {
                task_id,
                step_id: parent.fence.step_id,
            }),
            // a child takes its parent's turns
            concurrency_key: p.concurrency_key.clone(),
            tenant: p.tenant.clone(),
        };
        in_tx!(self.pool, |tx| self.start_child_in(tx, parent, &task).await)
    }
    /// A task's usage on its own and with every descendant: (LLM tokens, tool calls) each.
    pub async fn usage_with_descendants(&self, task_id: Uuid) -> Result<((i64, i64), (i64, i64))> {
        let (a, b, c, d): (i64, i64, i64, i64) = sqlx::query_as(sql!("read/usage"))
            .bind(task_id)
            .fetch_one(&self.pool)
            .await?;
        Ok(((a, b), (c, d)))
    }

    /// Cancel up to `limit` unfinished children of parents that ended failed or cancelled (and
    /// their descendants with them): a child ends with its parent. Each in its own transaction,
    /// as a cancel of that child; one that ended meanwhile is left as it is. How many.
    pub async fn cancel_orphans(&self, limit: i64) -> Result<usize> {
        let orphans: Vec<Uuid> = sqlx::query_scalar(sql!("task/orphans"))
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        let mut n = 0;
        for id in orphans {
            match self.cancel_task(id).await {
                Ok(_) => n += 1,
                Err(StoreError::Conflict(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    /// A task's children, oldest first.
    pub async fn children_of(&self, task_id: Uuid) -> Result<Vec<ChildRow>> {
        Ok(sqlx::query_as(sql!("task/children"))
            .bind(task_id)
            .fetch_all(&self.pool)
            .await?)
    }

    async fn seconds_left(&self, task_id: Uuid) -> Result<Option<f64>> {
        Ok(sqlx::query_scalar(
            "SELECT extract(epoch FROM deadline_at - now())::float8 FROM tasks WHERE id = $1",
        )
        .bind(task_id)
        .fetch_one(&self.pool)
        .await?)
    }
}

impl Store {
    /// [`Store::start_child`]'s transaction: the parent locked and still running its step,
    /// the child of a lost attempt of this call found again, or the tree's limits checked
    /// and the child inserted and announced.
    async fn start_child_in(
        &self,
        tx: &mut Tx,
        parent: ChildOf<'_>,
        task: &NewTask,
    ) -> Result<std::result::Result<Uuid, ToolFailure>> {
        let fence = parent.fence;
        let p = lock_task(tx, fence.task_id).await?;
        if p.status.is_terminal() {
            return Ok(Err(crate::domain::child::refused(p.status.as_str())));
        }
        let holds: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM steps WHERE id = $1 AND task_id = $2 AND lease_token = $3
             AND (status = 'running') IS NOT FALSE",
        )
        .bind(fence.step_id)
        .bind(fence.task_id)
        .bind(fence.lease_token)
        .fetch_optional(&mut **tx)
        .await?;
        if holds.is_none() {
            return Err(StoreError::Fenced);
        }
        let found: Option<Uuid> = sqlx::query_scalar(sql!("task/unwaited_child"))
            .bind(fence.task_id)
            .bind(fence.step_id)
            .bind(format!("child:{}:", parent.call_key))
            .fetch_optional(&mut **tx)
            .await?;
        if let Some(child) = found {
            return Ok(Ok(child));
        }
        let (root, depth): (Uuid, i32) = sqlx::query_as(sql!("task/tree_place"))
            .bind(fence.task_id)
            .bind(parent.tree.max_depth)
            .fetch_one(&mut **tx)
            .await?;
        if let Err(f) = crate::domain::child::check_depth(depth + 1, parent.tree) {
            return Ok(Err(f));
        }
        let counted: Option<i32> = sqlx::query_scalar(sql!("task/count_descendant"))
            .bind(root)
            .bind(parent.tree.max_descendants)
            .fetch_optional(&mut **tx)
            .await?;
        if counted.is_none() {
            return Ok(Err(crate::domain::child::descendants_exceeded(parent.tree)));
        }
        let submitted = match self.submit_in(tx, std::slice::from_ref(task)).await? {
            Ok(mut v) => v.pop().expect("one result per task"),
            Err(missing) => {
                return Ok(Err(bad(format!(
                    "task: the child's plan names unknown tools: {}",
                    missing.join(", ")
                ))));
            }
        };
        if submitted.created {
            let e = Event::ChildTaskStarted(event::ChildTaskStarted {
                step_key: parent.step_key.to_string(),
                child_task_id: submitted.task_id,
            });
            tx.events([NewEvent::new(fence.task_id, e)]);
        }
        Ok(Ok(submitted.task_id))
    }
}
