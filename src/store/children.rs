//! Child tasks (the fan-out issue): a step's `task` call starts a task with its parent recorded
//! (`tasks.parent_task_id`, `parent_step_id`), idempotent per step and attempt (the child's
//! idempotency key), and the step waits for it on a `child` wait (`store::waits`). Cancelling
//! a task cancels its unfinished descendants in the same transaction.

use uuid::Uuid;

use super::submit::{NewTask, ParentRef};
use super::{NewEvent, Result, Store, StoreError, Tx, append_events, known_tools, lock_task};
use crate::domain::Limits;
use crate::domain::child::{ChildSpec, Source};
use crate::domain::event::{self, Event};
use crate::domain::model::ToolFailure;
use crate::domain::status::TaskStatus;

/// The step whose `task` call starts a child.
#[derive(Debug, Clone, Copy)]
pub struct ChildOf<'a> {
    pub task_id: Uuid,
    pub step_id: Uuid,
    pub step_key: &'a str,
    pub attempt: i32,
    /// `[limits] max_steps_per_plan`: the child's plan is held to it like a submitted one.
    pub max_steps: usize,
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
    /// Start the child task of a step's `task` call, or find the one this attempt started
    /// before (a retry after a crash); `Err(failure)` when the call is wrong (an unknown
    /// template or tool, an invalid plan): the step fails with it.
    pub async fn start_child(
        &self,
        parent: ChildOf<'_>,
        spec: &ChildSpec,
    ) -> Result<std::result::Result<Uuid, ToolFailure>> {
        let template = match &spec.source {
            Source::Template(id) => match self.get_template(id).await {
                // another tenant's template is not there for this task
                Ok(t) if t.tenant == self.task_tenant(parent.task_id).await? => Some(t),
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
        if plan.steps.len() > parent.max_steps {
            return Ok(Err(bad(format!(
                "task: the child's plan has {} steps; at most {} are allowed ([limits] max_steps_per_plan)",
                plan.steps.len(),
                parent.max_steps
            ))));
        }
        let known = in_tx!(self.pool, |tx| known_tools(tx, parent.task_id).await)?;
        if let Err(e) = crate::domain::plan::validate(&plan, &known) {
            return Ok(Err(bad(format!("task: the child's plan: {}", e.message))));
        }
        let p = self.get_task(parent.task_id).await?;
        // the child inherits its parent's limits, and what is left of its deadline
        let left = self.seconds_left(parent.task_id).await?;
        let task = NewTask {
            description,
            metadata: p.metadata.clone(),
            context: spec.input.clone(),
            priority: p.priority,
            idempotency_key: Some(format!("child:{}:{}", parent.step_id, parent.attempt)),
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
                task_id: parent.task_id,
                step_id: parent.step_id,
            }),
            // a child takes its parent's turns
            concurrency_key: p.concurrency_key.clone(),
            tenant: p.tenant.clone(),
        };
        let submitted = match self.submit_tasks(std::slice::from_ref(&task)).await? {
            Ok(mut v) => v.pop().expect("one result per task"),
            Err(missing) => {
                return Ok(Err(bad(format!(
                    "task: the child's plan names unknown tools: {}",
                    missing.join(", ")
                ))));
            }
        };
        let child = submitted.task_id;
        in_tx!(self.pool, |tx| announce(
            tx,
            parent,
            child,
            submitted.created
        )
        .await)?;
        Ok(Ok(child))
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

/// Announce a new child on its parent. A parent that ended while the child was being
/// submitted (a cancel that did not see the child yet) takes the child with it.
async fn announce(tx: &mut Tx, parent: ChildOf<'_>, child: Uuid, created: bool) -> Result<()> {
    let p = lock_task(tx, parent.task_id).await?;
    if created {
        let e = Event::ChildTaskStarted(event::ChildTaskStarted {
            step_key: parent.step_key.to_string(),
            child_task_id: child,
        });
        append_events(tx, &[NewEvent::new(parent.task_id, e)]).await?;
    }
    if p.status == TaskStatus::Cancelled {
        let status = lock_task(tx, child).await?.status;
        if !status.is_terminal() {
            super::submit::cancel_locked(tx, child, status, None).await?;
        }
    }
    Ok(())
}
