//! The step queue: claim, heartbeat, complete, fail, release, rescue.
//!
//! Architecture invariant: every state change of a running step is fenced on
//! `(step id, lease_token, status = 'running')`; a worker whose lease was taken over gets
//! [`StoreError::Fenced`] and changes nothing. No transaction here is held across a tool call.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::decisions::{
    ClaimedDecision, Lease, create_decision, fail_task, lock_task_row, start_evaluation,
};
use super::tasks::{TaskRow, lock_task};
use super::{NewEvent, Result, Store, StoreError, append_events, notify_ready};
use crate::brain::{DecisionInput, DecisionKind};
use crate::model::{PlanSpec, ToolFailure, WORKER_LOST, event_kind};
use crate::recovery::{self, AfterFailure, Backoff, Carry, Counters};
use crate::tools::ToolDef;

/// A step this worker now holds a lease on.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedStep {
    pub id: Uuid,
    pub task_id: Uuid,
    pub plan_version: i32,
    pub step_key: String,
    /// Effective tool (a recovery override wins).
    pub tool: String,
    pub parameters: Value,
    pub param_overrides: Value,
    pub actions: Value,
    /// Number of the attempt this run will record.
    pub attempt: i32,
    pub lease_token: i64,
    pub started_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub struct Claim {
    pub worker_id: Uuid,
    pub limit: i64,
    pub lease_secs: f64,
}

/// Identifies one lease on one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fence {
    pub step_id: Uuid,
    pub task_id: Uuid,
    pub lease_token: i64,
}

impl ClaimedStep {
    pub fn fence(&self) -> Fence {
        Fence {
            step_id: self.id,
            task_id: self.task_id,
            lease_token: self.lease_token,
        }
    }
}

#[derive(Debug, Clone)]
pub struct StepSuccess {
    pub fence: Fence,
    pub worker_id: Uuid,
    pub tool: String,
    pub parameters: Value,
    pub output: Value,
    /// Copied into the task's runtime metadata.
    pub output_params: Map<String, Value>,
}

#[derive(Debug, Clone)]
pub struct StepFailure {
    pub fence: Fence,
    pub worker_id: Uuid,
    pub tool: String,
    pub parameters: Value,
    pub failure: ToolFailure,
}

/// Knobs of the failure path that come from worker configuration.
#[derive(Debug, Clone, Copy)]
pub struct FailurePolicy {
    pub backoff: Backoff,
    pub max_rescues: i32,
    /// Lease length of decisions this worker creates and runs at once.
    pub lease_secs: f64,
}

/// What a failed attempt led to.
#[derive(Debug, Clone)]
pub struct FailOutcome {
    pub transition: AfterFailure,
    /// A step reflection, leased to the failing worker, to run now.
    pub decision: Option<ClaimedDecision>,
}

/// What a step needs to resolve its parameters.
#[derive(Debug, Clone)]
pub struct StepContext {
    pub outputs: HashMap<String, Value>,
    /// Runtime metadata overlaid on task metadata.
    pub metadata: Map<String, Value>,
    pub tools: HashMap<String, ToolDef>,
}

#[derive(sqlx::FromRow)]
struct LockedStep {
    step_key: String,
    plan_version: i32,
    attempts: i32,
    retry_count: i32,
    rescue_count: i32,
    started_at: Option<DateTime<Utc>>,
    lease_owner: Option<Uuid>,
    tool: String,
    parameters: Value,
}

impl Store {
    /// Claim up to `limit` ready steps, honouring each task's `max_concurrent_steps`.
    ///
    /// One short transaction, two statements: lock tasks that have ready steps
    /// (`FOR NO KEY UPDATE SKIP LOCKED`), then — with a snapshot taken after those locks, so the
    /// running counts are exact — pick each task's ready steps in plan order up to its free room
    /// and `UPDATE … RETURNING` them as running with a new lease token.
    pub async fn claim_steps(&self, c: &Claim) -> Result<Vec<ClaimedStep>> {
        let mut tx = self.pool.begin().await?;
        let task_ids: Vec<Uuid> = sqlx::query_scalar(
            r#"
            SELECT t.id FROM tasks t
            WHERE t.status = 'running'
              -- correlated probes with LIMIT 1 stay index lookups per task (a semi-join here
              -- degenerates into rescanning every ready step for every running task)
              AND (SELECT true FROM steps s
                   WHERE s.task_id = t.id AND s.status = 'ready' AND s.run_after <= now() LIMIT 1)
              AND t.max_concurrent_steps
                  > (SELECT count(*) FROM steps r WHERE r.task_id = t.id AND r.status = 'running')
            ORDER BY t.priority DESC, t.created_at, t.id
            LIMIT $1
            FOR NO KEY UPDATE OF t SKIP LOCKED
            "#,
        )
        .bind(c.limit)
        .fetch_all(&mut *tx)
        .await?;
        if task_ids.is_empty() {
            tx.rollback().await?;
            return Ok(vec![]);
        }
        let claimed: Vec<ClaimedStep> = sqlx::query_as(
            r#"
            WITH room AS (
                SELECT t.id AS task_id, t.priority, t.created_at,
                       t.max_concurrent_steps
                         - (SELECT count(*) FROM steps r WHERE r.task_id = t.id AND r.status = 'running') AS room
                FROM tasks t WHERE t.id = ANY($1)
            ), picked AS (
                SELECT p.id FROM room
                CROSS JOIN LATERAL (
                    SELECT s.id, s.position FROM steps s
                    WHERE s.task_id = room.task_id AND s.status = 'ready' AND s.run_after <= now()
                    ORDER BY s.position
                    LIMIT greatest(room.room, 0)
                ) p
                ORDER BY room.priority DESC, room.created_at, room.task_id, p.position
                LIMIT $2
            )
            UPDATE steps s
            SET status = 'running', lease_owner = $3, lease_token = s.lease_token + 1,
                lease_expires_at = now() + make_interval(secs => $4), started_at = clock_timestamp(), updated_at = now()
            FROM picked
            WHERE s.id = picked.id AND s.status = 'ready'
            RETURNING s.id, s.task_id, s.plan_version, s.step_key, coalesce(s.tool_override, s.tool) AS tool,
                      s.parameters, s.param_overrides, s.actions, s.attempts + 1 AS attempt,
                      s.lease_token, s.started_at
            "#,
        )
        .bind(&task_ids)
        .bind(c.limit)
        .bind(c.worker_id)
        .bind(c.lease_secs)
        .fetch_all(&mut *tx)
        .await?;
        let events: Vec<NewEvent> = claimed
            .iter()
            .map(|s| {
                NewEvent::new(
                    s.task_id,
                    event_kind::STEP_STARTED,
                    json!({"step_id": s.step_key, "attempt": s.attempt, "tool": s.tool, "worker_id": c.worker_id}),
                )
            })
            .collect();
        append_events(&mut tx, &events).await?;
        tx.commit().await?;
        Ok(claimed)
    }

    /// Milliseconds until the earliest ready step in backoff becomes due (None: none waiting).
    pub async fn next_due_ms(&self) -> Result<Option<f64>> {
        Ok(sqlx::query_scalar(
            "SELECT (extract(epoch FROM min(run_after) - now()) * 1000)::float8 FROM steps
             WHERE status = 'ready' AND run_after > now()",
        )
        .fetch_one(&self.pool)
        .await?)
    }

    /// A listener on the ready channel (LISTEN/NOTIFY wakes idle workers).
    pub async fn ready_listener(&self) -> Result<sqlx::postgres::PgListener> {
        let mut l = sqlx::postgres::PgListener::connect_with(&self.pool).await?;
        l.listen(super::READY_CHANNEL).await?;
        Ok(l)
    }

    /// Extend every lease this worker holds and record its heartbeat. Returns leases extended.
    pub async fn heartbeat(&self, worker_id: Uuid, lease_secs: f64) -> Result<u64> {
        let n = sqlx::query(
            "UPDATE steps SET lease_expires_at = now() + make_interval(secs => $2)
             WHERE lease_owner = $1 AND status = 'running'",
        )
        .bind(worker_id)
        .bind(lease_secs)
        .execute(&self.pool)
        .await?
        .rows_affected();
        sqlx::query(
            "UPDATE decisions SET lease_expires_at = now() + make_interval(secs => $2)
             WHERE lease_owner = $1 AND status = 'running'",
        )
        .bind(worker_id)
        .bind(lease_secs)
        .execute(&self.pool)
        .await?;
        sqlx::query("UPDATE workers SET last_heartbeat = now() WHERE id = $1")
            .bind(worker_id)
            .execute(&self.pool)
            .await?;
        Ok(n)
    }

    /// Everything a claimed step needs to resolve its parameters: outputs of the named steps
    /// of its plan version, merged metadata, and the tool definitions.
    pub async fn step_context(
        &self,
        task_id: Uuid,
        plan_version: i32,
        step_keys: &[String],
        tool_ids: &[String],
    ) -> Result<StepContext> {
        let outputs: Vec<(String, Value)> = sqlx::query_as(
            "SELECT step_key, coalesce(output, 'null'::jsonb) FROM steps
             WHERE task_id = $1 AND plan_version = $2 AND step_key = ANY($3)
               AND status IN ('succeeded', 'skipped')",
        )
        .bind(task_id)
        .bind(plan_version)
        .bind(step_keys)
        .fetch_all(&self.pool)
        .await?;
        let metadata: Value =
            sqlx::query_scalar("SELECT metadata || runtime_metadata FROM tasks WHERE id = $1")
                .bind(task_id)
                .fetch_optional(&self.pool)
                .await?
                .ok_or_else(|| StoreError::NotFound(format!("task {task_id}")))?;
        let tools: Vec<ToolDef> = sqlx::query_as("SELECT * FROM tools WHERE id = ANY($1)")
            .bind(tool_ids)
            .fetch_all(&self.pool)
            .await?;
        Ok(StepContext {
            outputs: outputs.into_iter().collect(),
            metadata: match metadata {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            tools: tools.into_iter().map(|t| (t.id.clone(), t)).collect(),
        })
    }

    /// Record a successful attempt; promote dependents whose dependencies are all done; when
    /// nothing of the plan is left, start its evaluation (returned, leased to this worker).
    /// One transaction, fenced. (The one-item case of [`Store::complete_steps`].)
    pub async fn complete_step(
        &self,
        s: &StepSuccess,
        lease_secs: f64,
    ) -> Result<Option<ClaimedDecision>> {
        self.complete_steps(std::slice::from_ref(s), lease_secs)
            .await?
            .pop()
            .expect("one result per item")
    }

    /// Complete many steps in one transaction with a fixed number of statements, whatever the
    /// batch size: lock their tasks (in id order, so concurrent batches cannot deadlock), mark
    /// every step whose lease still holds `succeeded` (fenced `UPDATE … FROM unnest`), insert
    /// their attempts, merge output params into runtime metadata, promote blocked steps whose
    /// dependencies are all done, and start the evaluation of every task whose plan is done.
    /// A step whose lease was taken over gets `Err(Fenced)` and changes nothing.
    pub async fn complete_steps(
        &self,
        items: &[StepSuccess],
        lease_secs: f64,
    ) -> Result<Vec<Result<Option<ClaimedDecision>>>> {
        let mut tx = self.pool.begin().await?;
        let r = complete_batch(&mut tx, items, lease_secs).await;
        super::finish(tx, r).await
    }

    /// Record a failed attempt, count it, and apply the failure decision
    /// ([`recovery::decide`]) in the same transaction. Fenced.
    pub async fn fail_step(&self, f: &StepFailure, policy: FailurePolicy) -> Result<FailOutcome> {
        let mut tx = self.pool.begin().await?;
        let r = async {
            let outcome = fail_locked(
                &mut tx,
                FailureInput {
                    fence: &f.fence,
                    worker_id: Some(f.worker_id),
                    tool: Some(&f.tool),
                    parameters: Some(&f.parameters),
                    failure: &f.failure,
                    require_expired: false,
                },
                policy,
            )
            .await?;
            Ok(outcome)
        }
        .await;
        super::finish(tx, r).await
    }

    /// Give a step back without burning an attempt (graceful shutdown). Fenced.
    pub async fn release_step(&self, fence: &Fence, worker_id: Uuid) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let r = async {
            lock_task(&mut tx, fence.task_id).await?;
            let step = lock_running_step(&mut tx, fence, false).await?;
            sqlx::query(
                "UPDATE steps SET status = 'ready', lease_owner = NULL, lease_expires_at = NULL,
                        started_at = NULL, run_after = now(), updated_at = now()
                 WHERE id = $1",
            )
            .bind(fence.step_id)
            .execute(&mut *tx)
            .await?;
            append_events(
                &mut tx,
                &[NewEvent::new(
                    fence.task_id,
                    event_kind::STEP_RELEASED,
                    json!({"step_id": step.step_key, "worker_id": worker_id, "reason": "worker shutting down"}),
                )],
            )
            .await?;
            notify_ready(&mut tx).await?;
            Ok(())
        }
        .await;
        super::finish(tx, r).await
    }

    /// Re-queue steps whose lease expired (their worker is presumed dead) as failed attempts
    /// with category `worker_lost`. Safe to run from many workers at once: each rescue is fenced
    /// on the expired lease. Returns how many steps were rescued.
    pub async fn rescue_expired(&self, limit: i64, policy: FailurePolicy) -> Result<u64> {
        let expired: Vec<(Uuid, Uuid, i64)> = sqlx::query_as(
            "SELECT id, task_id, lease_token FROM steps
             WHERE status = 'running' AND lease_expires_at < now()
             ORDER BY lease_expires_at LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        let mut rescued = 0;
        for (step_id, task_id, lease_token) in expired {
            let fence = Fence {
                step_id,
                task_id,
                lease_token,
            };
            let failure = ToolFailure::new(
                WORKER_LOST,
                "the worker holding this step stopped renewing its lease",
                true,
            );
            let mut tx = self.pool.begin().await?;
            let r = fail_locked(
                &mut tx,
                FailureInput {
                    fence: &fence,
                    worker_id: None,
                    tool: None,
                    parameters: None,
                    failure: &failure,
                    require_expired: true,
                },
                policy,
            )
            .await;
            match r {
                Ok(_) => {
                    tx.commit().await?;
                    rescued += 1;
                }
                // another worker rescued it first, or its owner came back in time
                Err(StoreError::Fenced) => tx.rollback().await?,
                Err(e) => return Err(e),
            }
        }
        Ok(rescued)
    }
}

#[derive(sqlx::FromRow)]
struct DoneStep {
    id: Uuid,
    task_id: Uuid,
    step_key: String,
    plan_version: i32,
    attempts: i32,
    started_at: Option<DateTime<Utc>>,
}

async fn complete_batch(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    items: &[StepSuccess],
    lease_secs: f64,
) -> Result<Vec<Result<Option<ClaimedDecision>>>> {
    let mut task_ids: Vec<Uuid> = items.iter().map(|s| s.fence.task_id).collect();
    task_ids.sort();
    task_ids.dedup();
    let tasks: Vec<(Uuid, String, i32)> = sqlx::query_as(
        "SELECT id, status, plan_version FROM tasks WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE",
    )
    .bind(&task_ids)
    .fetch_all(&mut **tx)
    .await?;
    let task_state: HashMap<Uuid, (String, i32)> =
        tasks.into_iter().map(|(id, st, v)| (id, (st, v))).collect();

    let ids: Vec<Uuid> = items.iter().map(|s| s.fence.step_id).collect();
    let task_of: Vec<Uuid> = items.iter().map(|s| s.fence.task_id).collect();
    let tokens: Vec<i64> = items.iter().map(|s| s.fence.lease_token).collect();
    let outputs: Vec<Value> = items.iter().map(|s| s.output.clone()).collect();
    let done: Vec<DoneStep> = sqlx::query_as(
        r#"
        UPDATE steps s
        SET status = 'succeeded', output = i.output, error = NULL, attempts = s.attempts + 1,
            lease_owner = NULL, lease_expires_at = NULL, finished_at = clock_timestamp(), updated_at = now()
        FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::jsonb[]) AS i(step_id, task_id, token, output)
        WHERE s.id = i.step_id AND s.task_id = i.task_id AND s.lease_token = i.token AND s.status = 'running'
        RETURNING s.id, s.task_id, s.step_key, s.plan_version, s.attempts, s.started_at
        "#,
    )
    .bind(&ids)
    .bind(&task_of)
    .bind(&tokens)
    .bind(&outputs)
    .fetch_all(&mut **tx)
    .await?;
    let done_by_id: HashMap<Uuid, &DoneStep> = done.iter().map(|d| (d.id, d)).collect();
    let done_items: Vec<(&StepSuccess, &DoneStep)> = items
        .iter()
        .filter_map(|s| done_by_id.get(&s.fence.step_id).map(|d| (s, *d)))
        .collect();
    if done_items.is_empty() {
        return Ok(items.iter().map(|_| Err(StoreError::Fenced)).collect());
    }

    // attempts, one statement
    sqlx::query(
        r#"
        INSERT INTO attempts (task_id, step_id, step_key, plan_version, attempt, tool, parameters,
                              status, output, worker_id, started_at, finished_at)
        SELECT a.task_id, a.step_id, a.step_key, a.plan_version, a.attempt, a.tool, a.parameters,
               'succeeded', a.output, a.worker_id, coalesce(a.started_at, now()), clock_timestamp()
        FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::int[], $6::text[], $7::jsonb[],
                    $8::jsonb[], $9::uuid[], $10::timestamptz[])
             AS a(task_id, step_id, step_key, plan_version, attempt, tool, parameters, output, worker_id, started_at)
        "#,
    )
    .bind(done_items.iter().map(|(_, d)| d.task_id).collect::<Vec<_>>())
    .bind(done_items.iter().map(|(_, d)| d.id).collect::<Vec<_>>())
    .bind(done_items.iter().map(|(_, d)| d.step_key.clone()).collect::<Vec<_>>())
    .bind(done_items.iter().map(|(_, d)| d.plan_version).collect::<Vec<_>>())
    .bind(done_items.iter().map(|(_, d)| d.attempts).collect::<Vec<_>>())
    .bind(done_items.iter().map(|(s, _)| s.tool.clone()).collect::<Vec<_>>())
    .bind(done_items.iter().map(|(s, _)| s.parameters.clone()).collect::<Vec<_>>())
    .bind(done_items.iter().map(|(s, _)| s.output.clone()).collect::<Vec<_>>())
    .bind(done_items.iter().map(|(s, _)| s.worker_id).collect::<Vec<_>>())
    .bind(done_items.iter().map(|(_, d)| d.started_at).collect::<Vec<_>>())
    .execute(&mut **tx)
    .await?;

    let mut events: Vec<NewEvent> = done_items
        .iter()
        .map(|(s, d)| {
            NewEvent::new(
                d.task_id,
                event_kind::STEP_COMPLETED,
                json!({"step_id": d.step_key, "attempt": d.attempts, "tool": s.tool}),
            )
        })
        .collect();

    // Steps of a replaced plan, or of a task that stopped running, only record their result.
    let mut active: Vec<(Uuid, i32)> = Vec::new();
    let mut params: HashMap<Uuid, Map<String, Value>> = HashMap::new();
    for (s, d) in &done_items {
        let Some((status, version)) = task_state.get(&d.task_id) else {
            continue;
        };
        if status == "running" && *version == d.plan_version {
            if !active.iter().any(|(t, _)| *t == d.task_id) {
                active.push((d.task_id, d.plan_version));
            }
            params
                .entry(d.task_id)
                .or_default()
                .extend(s.output_params.clone());
        }
    }
    let mut decisions: HashMap<Uuid, ClaimedDecision> = HashMap::new();
    if !active.is_empty() {
        let active_ids: Vec<Uuid> = active.iter().map(|(t, _)| *t).collect();
        let active_versions: Vec<i32> = active.iter().map(|(_, v)| *v).collect();
        sqlx::query(
            "UPDATE tasks t SET consecutive_failures = 0, runtime_metadata = t.runtime_metadata || m.params,
                    updated_at = now()
             FROM unnest($1::uuid[], $2::jsonb[]) AS m(id, params)
             WHERE t.id = m.id",
        )
        .bind(&active_ids)
        .bind(
            active_ids
                .iter()
                .map(|t| Value::Object(params.remove(t).unwrap_or_default()))
                .collect::<Vec<_>>(),
        )
        .execute(&mut **tx)
        .await?;
        let promoted: Vec<(Uuid, String)> = sqlx::query_as(
            r#"
            UPDATE steps d SET status = 'ready', run_after = now(), updated_at = now()
            FROM unnest($1::uuid[], $2::int[]) AS a(task_id, plan_version)
            WHERE d.task_id = a.task_id AND d.plan_version = a.plan_version AND d.status = 'blocked'
              AND NOT EXISTS (
                  SELECT 1 FROM steps p
                  WHERE p.task_id = d.task_id AND p.plan_version = d.plan_version
                    AND p.step_key = ANY(d.dependencies)
                    AND p.status NOT IN ('succeeded', 'skipped', 'superseded'))
            RETURNING d.task_id, d.step_key
            "#,
        )
        .bind(&active_ids)
        .bind(&active_versions)
        .fetch_all(&mut **tx)
        .await?;
        for (task_id, key) in &promoted {
            if let Some(e) = events
                .iter_mut()
                .rev()
                .find(|e| e.task_id == *task_id && e.kind == event_kind::STEP_COMPLETED)
            {
                let list = e.payload["promoted"].as_array_mut();
                match list {
                    Some(l) => l.push(json!(key)),
                    None => e.payload["promoted"] = json!([key]),
                }
            }
        }
        let counts: Vec<(Uuid, i64, i64)> = sqlx::query_as(
            r#"
            SELECT s.task_id,
                   count(*) FILTER (WHERE s.status IN ('blocked', 'ready', 'running', 'failed')),
                   count(*) FILTER (WHERE s.status = 'ready')
            FROM steps s JOIN unnest($1::uuid[], $2::int[]) AS a(task_id, plan_version)
              ON s.task_id = a.task_id AND s.plan_version = a.plan_version
            GROUP BY s.task_id
            "#,
        )
        .bind(&active_ids)
        .bind(&active_versions)
        .fetch_all(&mut **tx)
        .await?;
        let mut any_ready = false;
        for (task_id, open, ready) in counts {
            any_ready |= ready > 0;
            if open == 0 {
                // the worker that finished the plan runs its evaluation
                let worker_id = done_items
                    .iter()
                    .rev()
                    .find(|(_, d)| d.task_id == task_id)
                    .map(|(s, _)| s.worker_id)
                    .expect("an active task has a completed step");
                if let Some(d) = start_evaluation(
                    tx,
                    task_id,
                    Some(Lease {
                        worker_id,
                        lease_secs,
                    }),
                )
                .await?
                {
                    decisions.insert(task_id, d);
                }
            }
        }
        if any_ready {
            // promoted steps, or room freed under a task's concurrency cap
            notify_ready(tx).await?;
        }
    }
    append_events(tx, &events).await?;

    // one result per item; a task's evaluation goes to the last of its items in the batch
    let mut out: Vec<Result<Option<ClaimedDecision>>> = Vec::with_capacity(items.len());
    for (i, s) in items.iter().enumerate() {
        if !done_by_id.contains_key(&s.fence.step_id) {
            out.push(Err(StoreError::Fenced));
            continue;
        }
        let last_of_task = !items[i + 1..].iter().any(|o| {
            o.fence.task_id == s.fence.task_id && done_by_id.contains_key(&o.fence.step_id)
        });
        out.push(Ok(if last_of_task {
            decisions.remove(&s.fence.task_id)
        } else {
            None
        }));
    }
    Ok(out)
}

/// Lock the step row if it still carries this lease. `require_expired` adds the lease deadline
/// to the fence (rescue must not steal a lease its owner just renewed).
async fn lock_running_step(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    fence: &Fence,
    require_expired: bool,
) -> Result<LockedStep> {
    sqlx::query_as(
        "SELECT step_key, plan_version, attempts, retry_count, rescue_count, started_at, lease_owner,
                coalesce(tool_override, tool) AS tool, parameters || param_overrides AS parameters
         FROM steps
         WHERE id = $1 AND task_id = $2 AND lease_token = $3 AND status = 'running'
           AND (NOT $4 OR lease_expires_at < now())
         FOR UPDATE",
    )
    .bind(fence.step_id)
    .bind(fence.task_id)
    .bind(fence.lease_token)
    .bind(require_expired)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or(StoreError::Fenced)
}

struct NewAttempt<'a> {
    fence: &'a Fence,
    step: &'a LockedStep,
    attempt: i32,
    tool: &'a str,
    parameters: &'a Value,
    succeeded: bool,
    output: Option<&'a Value>,
    error: Option<&'a ToolFailure>,
    worker_id: Option<Uuid>,
}

async fn insert_attempt(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    a: &NewAttempt<'_>,
) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "INSERT INTO attempts (task_id, step_id, step_key, plan_version, attempt, tool, parameters,
                               status, output, error, error_category, worker_id, started_at, finished_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, coalesce($13, now()), clock_timestamp())
         RETURNING id",
    )
    .bind(a.fence.task_id)
    .bind(a.fence.step_id)
    .bind(&a.step.step_key)
    .bind(a.step.plan_version)
    .bind(a.attempt)
    .bind(a.tool)
    .bind(a.parameters)
    .bind(if a.succeeded { "succeeded" } else { "failed" })
    .bind(a.output)
    .bind(a.error.map(|e| serde_json::to_value(e).expect("failure serializes")))
    .bind(a.error.map(|e| e.category.as_str()))
    .bind(a.worker_id)
    .bind(a.step.started_at)
    .fetch_one(&mut **tx)
    .await?)
}

struct FailureInput<'a> {
    fence: &'a Fence,
    /// None: the lease owner recorded on the step (rescue).
    worker_id: Option<Uuid>,
    tool: Option<&'a str>,
    parameters: Option<&'a Value>,
    failure: &'a ToolFailure,
    require_expired: bool,
}

async fn fail_locked(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    f: FailureInput<'_>,
    policy: FailurePolicy,
) -> Result<FailOutcome> {
    let task = lock_task_row(tx, f.fence.task_id).await?;
    let step = lock_running_step(tx, f.fence, f.require_expired).await?;
    let lost = f.failure.category == WORKER_LOST;
    let attempt = step.attempts + 1;
    // A lost worker is not the step's fault: it counts as a rescue, not as a retry or a failure.
    let retry_count = step.retry_count + i32::from(!lost);
    let rescue_count = step.rescue_count + i32::from(lost);
    let consecutive_failures = task.consecutive_failures + i32::from(!lost);
    sqlx::query("UPDATE tasks SET consecutive_failures = $2, updated_at = now() WHERE id = $1")
        .bind(task.id)
        .bind(consecutive_failures)
        .execute(&mut **tx)
        .await?;
    let counters = Counters {
        retry_count,
        rescue_count,
        consecutive_failures,
        ..super::decisions::counters_of(&task, None, policy.max_rescues)
    };
    let active = task.status == "running" && step.plan_version == task.plan_version;
    let transition = if active {
        recovery::after_failure(&counters, f.failure, task.step_reflection, policy.backoff)
    } else {
        // the task was cancelled, stopped or replanned while this step ran: record, start nothing
        AfterFailure::FailTask {
            reason: format!(
                "task is {} (plan version {})",
                task.status, task.plan_version
            ),
        }
    };
    let error = serde_json::to_value(f.failure).expect("failure serializes");
    let (step_status, delay_ms) = match &transition {
        AfterFailure::Retry { delay_ms } => ("ready", *delay_ms as f64),
        AfterFailure::Reflect | AfterFailure::FailTask { .. } => ("failed", 0.0),
    };
    sqlx::query(
        "UPDATE steps SET status = $2, error = $3, attempts = $4, retry_count = $5, rescue_count = $6,
                lease_owner = NULL, lease_expires_at = NULL, started_at = NULL, updated_at = now(),
                run_after = now() + make_interval(secs => $7 / 1000.0),
                finished_at = CASE WHEN $2 = 'failed' THEN now() END
         WHERE id = $1",
    )
    .bind(f.fence.step_id)
    .bind(step_status)
    .bind(&error)
    .bind(attempt)
    .bind(retry_count)
    .bind(rescue_count)
    .bind(delay_ms)
    .execute(&mut **tx)
    .await?;
    let parameters = f.parameters.unwrap_or(&step.parameters);
    let attempt_id = insert_attempt(
        tx,
        &NewAttempt {
            fence: f.fence,
            step: &step,
            attempt,
            tool: f.tool.unwrap_or(&step.tool),
            parameters,
            succeeded: false,
            output: None,
            error: Some(f.failure),
            worker_id: f.worker_id.or(step.lease_owner),
        },
    )
    .await?;
    let task_id = f.fence.task_id;
    let mut events = vec![NewEvent::new(
        task_id,
        event_kind::STEP_FAILED,
        json!({"step_id": step.step_key, "attempt": attempt, "error": error,
               "retry_count": retry_count, "rescue_count": rescue_count,
               "consecutive_failures": consecutive_failures}),
    )];
    if lost {
        events.push(NewEvent::new(
            task_id,
            event_kind::STEP_RESCUED,
            json!({"step_id": step.step_key, "lost_worker_id": step.lease_owner}),
        ));
    }
    let mut decision = None;
    match &transition {
        AfterFailure::Retry { delay_ms } => {
            if !lost {
                super::decisions::record_recovery(tx, Some(attempt_id), 1, "retry", None).await?;
            }
            events.push(NewEvent::new(
                task_id,
                event_kind::RETRY_SCHEDULED,
                json!({"step_id": step.step_key, "next_attempt": attempt + 1, "delay_ms": delay_ms,
                       "tier": if lost { 0 } else { 1 }}),
            ));
            notify_ready(tx).await?;
        }
        AfterFailure::Reflect => {
            let input = DecisionInput {
                step_key: Some(step.step_key.clone()),
                attempt_id: Some(attempt_id),
                failure: Some(f.failure.clone()),
                ..Default::default()
            };
            let lease = f.worker_id.map(|worker_id| Lease {
                worker_id,
                lease_secs: policy.lease_secs,
            });
            decision = create_decision(
                tx,
                task_id,
                DecisionKind::StepReflection,
                Some(f.fence.step_id),
                &input,
                lease,
            )
            .await?;
        }
        AfterFailure::FailTask { reason } if active => {
            fail_task(
                tx,
                task_id,
                json!({"step_id": step.step_key, "reason": reason, "last_error": error}),
                &mut events,
            )
            .await?;
        }
        AfterFailure::FailTask { .. } => {}
    }
    append_events(tx, &events).await?;
    Ok(FailOutcome {
        transition,
        decision,
    })
}

/// Highest attempt number per step key, over every plan version of a task.
pub(crate) async fn max_attempts_by_key(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    task_id: Uuid,
) -> Result<HashMap<String, i32>> {
    let rows: Vec<(String, i32)> = sqlx::query_as(
        "SELECT step_key, max(attempts) FROM steps WHERE task_id = $1 GROUP BY step_key",
    )
    .bind(task_id)
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
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
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
    let kept_outputs: HashMap<String, Value> = if carry.kept.is_empty() {
        HashMap::new()
    } else {
        let rows: Vec<(String, Value)> = sqlx::query_as(
            "SELECT step_key, coalesce(output, 'null'::jsonb) FROM steps
             WHERE task_id = $1 AND plan_version = $2 AND status = 'succeeded'",
        )
        .bind(task.id)
        .bind(version - 1)
        .fetch_all(&mut **tx)
        .await?;
        rows.into_iter().collect()
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
                "succeeded"
            } else if carry.skipped.contains(&s.id) {
                "skipped"
            } else {
                runnable += 1;
                if s.dependencies.iter().all(done) { "ready" } else { "blocked" }
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
                "status": status,
                "attempts": floors.get(&s.id).copied().unwrap_or(0),
                "output": if status == "succeeded" { kept_outputs.get(&s.id).cloned() } else { None },
                "finished": status == "succeeded" || status == "skipped",
            })
        })
        .collect();
    sqlx::query(
        r#"
        INSERT INTO steps (id, task_id, plan_version, step_key, position, name, tool, parameters,
                           dependencies, expected_output, optional, actions, status, priority,
                           attempts, output, finished_at)
        SELECT r.id, $1, $2, r.step_key, r.position, r.name, r.tool, r.parameters,
               r.dependencies, r.expected_output, r.optional, r.actions, r.status, $3,
               r.attempts, r.output, CASE WHEN r.finished THEN now() END
        FROM jsonb_to_recordset($4) AS r(id uuid, step_key text, position int, name text, tool text,
             parameters jsonb, dependencies text[], expected_output text, optional boolean,
             actions jsonb, status text, attempts int, output jsonb, finished boolean)
        "#,
    )
    .bind(task.id)
    .bind(version)
    .bind(task.priority)
    .bind(Value::Array(records))
    .execute(&mut **tx)
    .await?;
    Ok(runnable)
}
