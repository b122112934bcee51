//! Bulk actions: cancel, resume or rerun every task a filter (or a list of ids) matched when the
//! action was created. The workers apply them in keyset batches (`bulk/batch`), one short
//! transaction per batch holding the action's row, that records each task's outcome with the
//! progress: a worker killed at any instant loses or repeats nothing, and an abort waits for at
//! most the batch in progress.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::rerun::{Rerun, rerun_in};
use super::submit::{Resume, cancel_in, resume_in};
use super::{Result, Store, StoreError, Tx};
use crate::domain::bulk::{BulkKind, DEFAULT_SPAN_SECS, FromStep, TimeBound};
use crate::domain::status::{StepStatus, TaskStatus};

/// The tasks a new bulk action is for.
#[derive(Debug, Clone, Default)]
pub struct BulkFilter {
    pub status: Option<TaskStatus>,
    pub since: Option<TimeBound>,
    pub until: Option<TimeBound>,
    /// The description contains this text (any case).
    pub q: Option<String>,
    pub template: Option<String>,
    /// The task's metadata contains this object.
    pub metadata: Option<Value>,
}

/// Which tasks: a filter or ids.
#[derive(Debug, Clone)]
pub enum BulkTarget {
    Filter(BulkFilter),
    Ids(Vec<Uuid>),
}

/// A bulk action to create (or, with `dry_run`, only to count).
#[derive(Debug, Clone)]
pub struct NewBulkAction {
    pub id: Uuid,
    /// The creator's tenant: who may read it back.
    pub tenant: String,
    /// Only this tenant's tasks (none: every tenant's; an admin's).
    pub scope: Option<String>,
    pub name: Option<String>,
    pub action: BulkKind,
    pub target: BulkTarget,
    /// The filter as the caller gave it (stored with its bounds).
    pub filter_json: Option<Value>,
    pub from_step: Option<FromStep>,
    pub dry_run: bool,
}

/// What creating (or counting) matched.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Matched {
    pub matched: i64,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
}

/// A bulk action as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BulkActionRow {
    pub id: Uuid,
    pub tenant: String,
    pub name: Option<String>,
    pub action: String,
    pub filter: Option<Value>,
    pub from_step: Option<String>,
    pub state: String,
    pub matched: i32,
    pub done: i32,
    pub failed: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// One batch applied.
#[derive(Debug, Clone, Copy)]
pub struct BulkBatch {
    pub bulk_action_id: Uuid,
    pub done: usize,
    pub failed: usize,
    /// The batch was the action's last.
    pub finished: bool,
}

const COLUMNS: &str = "id, tenant::text, name, action, filter, from_step, state, matched, done, \
                       failed, created_at, updated_at, finished_at";

impl Store {
    /// Create a bulk action with the tasks it matches now (or, with `dry_run`, only count them).
    pub async fn create_bulk_action(&self, a: &NewBulkAction) -> Result<Matched> {
        let empty = BulkFilter::default();
        let (f, ids) = match &a.target {
            BulkTarget::Filter(f) => (f, None),
            BulkTarget::Ids(ids) => (&empty, Some(ids)),
        };
        // a filter without a time bound covers the last 7 days
        let since = match (&a.target, f.since, f.until) {
            (BulkTarget::Filter(_), None, None) => Some(TimeBound::Ago(DEFAULT_SPAN_SECS)),
            _ => f.since,
        };
        let (since_at, since_ago) = TimeBound::split(since);
        let (until_at, until_ago) = TimeBound::split(f.until);
        Ok(sqlx::query_as(sql!("bulk/create"))
            .bind(a.id)
            .bind(&a.scope)
            .bind(&a.tenant)
            .bind(&a.name)
            .bind(ids)
            .bind(since_at)
            .bind(since_ago)
            .bind(until_at)
            .bind(until_ago)
            .bind(f.status.map(|s| s.as_str()))
            .bind(f.q.as_deref().map(super::reads::contains_pattern))
            .bind(&f.template)
            .bind(&f.metadata)
            .bind(a.action.as_str())
            .bind(&a.filter_json)
            .bind(a.from_step.as_ref().map(|s| s.as_str()))
            .bind(a.dry_run)
            .fetch_one(&self.pool)
            .await?)
    }

    /// A bulk action, if it is in `scope` (none: any tenant's).
    pub async fn bulk_action(&self, id: Uuid, scope: Option<&str>) -> Result<BulkActionRow> {
        let sql = format!(
            "SELECT {COLUMNS} FROM bulk_actions WHERE id = $1 AND ($2::text IS NULL OR tenant = $2)"
        );
        sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .bind(scope)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("bulk action {id}")))
    }

    /// Bulk actions in `scope`, newest first.
    pub async fn list_bulk_actions(
        &self,
        scope: Option<&str>,
        limit: i64,
    ) -> Result<Vec<BulkActionRow>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM bulk_actions WHERE $1::text IS NULL OR tenant = $1
             ORDER BY created_at DESC, id DESC LIMIT $2"
        );
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(scope)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?)
    }

    /// The first `limit` tasks the action could not be applied to, and why.
    pub async fn bulk_failures(&self, id: Uuid, limit: i64) -> Result<Vec<(Uuid, String)>> {
        Ok(sqlx::query_as(
            "SELECT task_id, coalesce(error, '') FROM bulk_action_tasks
             WHERE bulk_action_id = $1 AND outcome = 'failed' ORDER BY task_id LIMIT $2",
        )
        .bind(id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Stop a running action: no batch starts after this returns (it waits for the one in
    /// progress). 404 outside `scope`, 409 when it is no longer running.
    pub async fn abort_bulk_action(&self, id: Uuid, scope: Option<&str>) -> Result<BulkActionRow> {
        let aborted: Option<Uuid> = sqlx::query_scalar(sql!("bulk/abort"))
            .bind(id)
            .bind(scope)
            .fetch_optional(&self.pool)
            .await?;
        let row = self.bulk_action(id, scope).await?;
        if aborted.is_none() {
            return Err(StoreError::Conflict(format!(
                "bulk action {id} is {}; only a running one can be aborted",
                row.state
            )));
        }
        Ok(row)
    }

    /// Apply the next batch (up to `size` tasks) of the oldest running bulk action no other
    /// worker holds; `None` when there is none.
    pub async fn run_bulk_batch(&self, size: i64) -> Result<Option<BulkBatch>> {
        in_tx!(self.pool, |tx| {
            let next: Option<(Uuid, String, Option<String>, Option<Uuid>)> =
                sqlx::query_as(sql!("bulk/lock_next"))
                    .fetch_optional(&mut **tx)
                    .await?;
            let Some((id, action, from_step, after)) = next else {
                return Ok(None);
            };
            let kind: BulkKind = action.parse().map_err(StoreError::Corrupt)?;
            let from = FromStep::parse(from_step.as_deref().unwrap_or("first_failed"));
            let tasks: Vec<Uuid> = sqlx::query_scalar(sql!("bulk/batch"))
                .bind(id)
                .bind(after)
                .bind(size)
                .fetch_all(&mut **tx)
                .await?;
            let (mut outcomes, mut errors) = (Vec::new(), Vec::new());
            for task in &tasks {
                // each task in a savepoint: a refusal (it is no longer failed, say) undoes
                // only its own changes
                let mark = tx.savepoint().await?;
                match apply(tx, kind, *task, &from, id).await {
                    Ok(()) => {
                        tx.release(mark).await?;
                        outcomes.push("done");
                        errors.push(None);
                    }
                    Err(e @ StoreError::Db(_)) if !refusal(&e) => return Err(e),
                    Err(e) => {
                        tx.rollback_to(mark).await?;
                        outcomes.push("failed");
                        errors.push(Some(e.to_string()));
                    }
                }
            }
            let done = outcomes.iter().filter(|o| **o == "done").count();
            let failed = outcomes.len() - done;
            let finished = (tasks.len() as i64) < size;
            sqlx::query(sql!("bulk/record"))
                .bind(id)
                .bind(&tasks)
                .bind(&outcomes)
                .bind(&errors)
                .bind(tasks.last())
                .bind(done as i32)
                .bind(failed as i32)
                .bind(finished)
                .execute(&mut **tx)
                .await?;
            if done > 0 && kind != BulkKind::Cancel {
                tx.wake_steps();
            }
            Ok(Some(BulkBatch {
                bulk_action_id: id,
                done,
                failed,
                finished,
            }))
        })
    }
}

/// A database error that is the task's, not the database's: the batch goes on without it.
fn refusal(e: &StoreError) -> bool {
    match e {
        StoreError::Db(sqlx::Error::Database(d)) => {
            // a constraint or a value the task's rows refuse; not a deadlock, a lost
            // connection or a serialization failure (the batch is then tried again)
            !matches!(d.code().as_deref(), Some("40001" | "40P01" | "57014"))
        }
        _ => false,
    }
}

/// Apply the action to one task, in the batch's transaction.
async fn apply(tx: &mut Tx, kind: BulkKind, task: Uuid, from: &FromStep, bulk: Uuid) -> Result<()> {
    match kind {
        BulkKind::Cancel => cancel_in(tx, task, Some(bulk)).await.map(drop),
        BulkKind::Resume => {
            let r = Resume {
                bulk_action_id: Some(bulk),
                ..Resume::default()
            };
            resume_in(tx, task, &r).await.map(drop)
        }
        BulkKind::Rerun => {
            let t = super::lock_task(tx, task).await?;
            let live = super::plans::live_steps(&mut **tx, task, t.plan_version).await?;
            let steps: Vec<(String, StepStatus)> =
                live.into_iter().map(|s| (s.step_key, s.status)).collect();
            let Some(step) = from.pick(&steps) else {
                return Err(StoreError::Rejected(match from {
                    FromStep::FirstFailed => "every step succeeded".to_string(),
                    FromStep::Key(k) => format!("the task has no step {k:?}"),
                }));
            };
            let r = Rerun {
                from_step: step.to_string(),
                bulk_action_id: Some(bulk),
                ..Rerun::default()
            };
            rerun_in(tx, task, &r).await.map(drop)
        }
    }
}
