//! Tasks, plans and events: submit, read models, cancel.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::steps::insert_steps_for_version;
use super::{NewEvent, Result, Store, StoreError, append_events, notify_ready};
use crate::model::{PlanSpec, StepStatus, TaskStatus, event_kind};
use crate::recovery::Carry;

/// Limits in force for one task (config defaults, overridden per task at submit time).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limits {
    pub max_step_retries: i32,
    pub max_single_step_repairs: i32,
    pub max_task_replans: i32,
    pub max_consecutive_failures: i32,
    pub max_reflection_rounds: i32,
    /// 1 runs the task's steps one at a time in plan order.
    pub max_concurrent_steps: i32,
    /// Step-level reflection (three-tier recovery) on; off = plain retries then fail.
    pub step_reflection: bool,
    /// Reflect and replan when a finished plan is evaluated as unsuccessful.
    pub auto_reflection: bool,
    pub success_threshold: f64,
    /// LLM calls allowed per task (`None`: no cap).
    pub max_llm_calls: Option<i32>,
}

impl Limits {
    /// The limits configuration puts in force for new tasks.
    pub fn from_settings(s: &crate::config::Settings) -> Self {
        let r = &s.reflection;
        let o = &s.orchestrator;
        Limits {
            max_step_retries: r.max_step_retries as i32,
            max_single_step_repairs: r.max_single_step_repairs as i32,
            max_task_replans: r.max_task_replans as i32,
            max_consecutive_failures: r.max_consecutive_failures as i32,
            max_reflection_rounds: o.max_reflection_rounds as i32,
            max_concurrent_steps: if o.enable_parallel_execution {
                o.parallel_max_concurrent as i32
            } else {
                1
            },
            step_reflection: r.enable_step_level_reflection,
            auto_reflection: o.enable_auto_reflection,
            success_threshold: o.success_threshold,
            max_llm_calls: s.llm.max_calls_per_task.map(|n| n as i32),
        }
    }
}

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

#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct TaskRow {
    pub id: Uuid,
    pub description: String,
    pub metadata: Value,
    pub context: Value,
    pub runtime_metadata: Value,
    pub priority: i32,
    pub idempotency_key: Option<String>,
    pub status: String,
    pub round: i32,
    pub plan_version: i32,
    pub task_replan_count: i32,
    pub single_step_repair_count: i32,
    pub consecutive_failures: i32,
    pub max_step_retries: i32,
    pub max_single_step_repairs: i32,
    pub max_task_replans: i32,
    pub max_consecutive_failures: i32,
    pub max_reflection_rounds: i32,
    pub max_concurrent_steps: i32,
    pub state_version: i64,
    pub error: Option<Value>,
    pub step_reflection: bool,
    pub auto_reflection: bool,
    pub success_threshold: f64,
    pub final_score: Option<f64>,
    pub stop_reason: Option<String>,
    pub max_llm_calls: Option<i32>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct TaskSummary {
    pub id: Uuid,
    pub status: String,
    pub description: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct StepRow {
    pub id: Uuid,
    pub task_id: Uuid,
    pub plan_version: i32,
    pub step_key: String,
    pub position: i32,
    pub name: String,
    pub tool: String,
    pub parameters: Value,
    pub dependencies: Vec<String>,
    pub expected_output: String,
    pub optional: bool,
    pub actions: Value,
    pub status: String,
    pub retry_count: i32,
    pub attempts: i32,
    pub rescue_count: i32,
    pub lease_owner: Option<Uuid>,
    pub lease_token: i64,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub param_overrides: Value,
    pub tool_override: Option<String>,
    pub output: Option<Value>,
    pub error: Option<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct PlanRow {
    pub version: i32,
    pub origin: String,
    pub reasoning: String,
    pub estimated_duration: Option<i32>,
    pub steps: Value,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct AttemptRow {
    pub step_id: Uuid,
    pub step_key: String,
    pub plan_version: i32,
    pub attempt: i32,
    pub tool: String,
    pub parameters: Value,
    pub status: String,
    pub output: Option<Value>,
    pub error: Option<Value>,
    pub error_category: Option<String>,
    pub worker_id: Option<Uuid>,
    pub started_at: DateTime<Utc>,
    pub finished_at: DateTime<Utc>,
    pub duration_ms: Option<i64>,
}

#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct EventRow {
    pub seq: i64,
    pub kind: String,
    pub at: DateTime<Utc>,
    pub payload: Value,
}

/// `GET /api/v1/tasks` filters.
#[derive(Debug, Clone, Default)]
pub struct ListTasks {
    pub status: Option<TaskStatus>,
    pub limit: i64,
    /// Only tasks created before this one (cursor) ...
    pub before_task: Option<Uuid>,
    /// ... or before this instant.
    pub before_time: Option<DateTime<Utc>>,
}

impl Store {
    /// Insert a task with its first plan version and steps, in one transaction. With an
    /// idempotency key that already exists, nothing is written and the existing task is returned.
    pub async fn submit_task(&self, t: &NewTask) -> Result<Submitted> {
        let mut tx = self.pool.begin().await?;
        let id = Uuid::now_v7();
        let inserted: Option<TaskRow> = sqlx::query_as(
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
        .bind(id)
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
        .bind(if t.plan.is_some() { "running" } else { "pending" })
        .bind(if t.plan.is_some() { 1 } else { 0 })
        .bind(t.limits.max_llm_calls)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(task) = inserted else {
            tx.rollback().await?;
            let key = t.idempotency_key.as_deref().unwrap_or_default();
            let (task_id, status): (Uuid, String) =
                sqlx::query_as("SELECT id, status FROM tasks WHERE idempotency_key = $1")
                    .bind(key)
                    .fetch_one(&self.pool)
                    .await?;
            return Ok(Submitted {
                task_id,
                status: parse_status(&status)?,
                created: false,
            });
        };
        let submitted = NewEvent::new(
            id,
            event_kind::TASK_SUBMITTED,
            json!({"description": t.description, "priority": t.priority, "limits": t.limits,
                   "planned_by_brain": t.plan.is_none()}),
        );
        let Some(plan) = &t.plan else {
            // planned by the brain: a claimable `plan` decision, any worker may take it
            super::decisions::create_decision(
                &mut tx,
                id,
                crate::brain::DecisionKind::Plan,
                None,
                &crate::brain::DecisionInput::default(),
                None,
            )
            .await?;
            append_events(&mut tx, &[submitted]).await?;
            tx.commit().await?;
            return Ok(Submitted {
                task_id: id,
                status: TaskStatus::Pending,
                created: true,
            });
        };
        insert_plan(&mut tx, id, 1, "initial", plan).await?;
        insert_steps_for_version(&mut tx, &task, 1, plan, &Carry::default(), 0).await?;
        let ready = plan.steps.iter().any(|s| s.dependencies.is_empty());
        append_events(
            &mut tx,
            &[
                submitted,
                NewEvent::new(
                    id,
                    event_kind::PLAN_GENERATED,
                    json!({"version": 1, "origin": "initial", "steps": plan.steps.len()}),
                ),
            ],
        )
        .await?;
        if ready {
            notify_ready(&mut tx).await?;
        }
        tx.commit().await?;
        Ok(Submitted {
            task_id: id,
            status: TaskStatus::Running,
            created: true,
        })
    }

    pub async fn get_task(&self, id: Uuid) -> Result<TaskRow> {
        sqlx::query_as("SELECT * FROM tasks WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("task {id}")))
    }

    /// Step counts of one plan version by status.
    pub async fn step_counts(
        &self,
        task_id: Uuid,
        plan_version: i32,
    ) -> Result<BTreeMap<String, i64>> {
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT status, count(*) FROM steps WHERE task_id = $1 AND plan_version = $2 GROUP BY status",
        )
        .bind(task_id)
        .bind(plan_version)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().collect())
    }

    /// Steps of a task, all plan versions, in plan order.
    pub async fn list_steps(&self, task_id: Uuid) -> Result<Vec<StepRow>> {
        Ok(
            sqlx::query_as(
                "SELECT * FROM steps WHERE task_id = $1 ORDER BY plan_version, position",
            )
            .bind(task_id)
            .fetch_all(&self.pool)
            .await?,
        )
    }

    pub async fn list_plans(&self, task_id: Uuid) -> Result<Vec<PlanRow>> {
        Ok(sqlx::query_as(
            "SELECT version, origin, reasoning, estimated_duration, steps, created_at
             FROM plans WHERE task_id = $1 ORDER BY version",
        )
        .bind(task_id)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn list_attempts(&self, task_id: Uuid) -> Result<Vec<AttemptRow>> {
        Ok(sqlx::query_as(
            "SELECT step_id, step_key, plan_version, attempt, tool, parameters, status, output, error,
                    error_category, worker_id, started_at, finished_at, duration_ms
             FROM attempts WHERE task_id = $1 ORDER BY id",
        )
        .bind(task_id)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn list_events(
        &self,
        task_id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<EventRow>> {
        Ok(sqlx::query_as(
            "SELECT seq, kind, at, payload FROM events WHERE task_id = $1 AND seq > $2
             ORDER BY seq LIMIT $3",
        )
        .bind(task_id)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn list_tasks(&self, q: &ListTasks) -> Result<Vec<TaskSummary>> {
        Ok(sqlx::query_as(
            r#"
            SELECT id, status, description, created_at, updated_at FROM tasks
            WHERE ($1::text IS NULL OR status = $1)
              AND ($2::uuid IS NULL OR (created_at, id) < (SELECT c.created_at, c.id FROM tasks c WHERE c.id = $2))
              AND ($3::timestamptz IS NULL OR created_at < $3)
            ORDER BY created_at DESC, id DESC
            LIMIT $4
            "#,
        )
        .bind(q.status.map(|s| s.as_str()))
        .bind(q.before_task)
        .bind(q.before_time)
        .bind(q.limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Task and step counts by status, every status present (zero when none).
    pub async fn stats(&self) -> Result<(BTreeMap<String, i64>, BTreeMap<String, i64>)> {
        let tasks: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, count(*) FROM tasks GROUP BY status")
                .fetch_all(&self.pool)
                .await?;
        let steps: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, count(*) FROM steps GROUP BY status")
                .fetch_all(&self.pool)
                .await?;
        let mut t: BTreeMap<String, i64> =
            TaskStatus::ALL.iter().map(|s| (s.to_string(), 0)).collect();
        t.extend(tasks);
        let mut s: BTreeMap<String, i64> =
            StepStatus::ALL.iter().map(|s| (s.to_string(), 0)).collect();
        s.extend(steps);
        Ok((t, s))
    }

    /// Cancel a task unless it is terminal: open steps are skipped; running steps finish but
    /// nothing after them starts.
    pub async fn cancel_task(&self, id: Uuid) -> Result<TaskStatus> {
        let mut tx = self.pool.begin().await?;
        let r = async {
            let status = lock_task(&mut tx, id).await?;
            if status.is_terminal() {
                return Err(StoreError::Conflict(format!(
                    "task {id} is already {status}; only unfinished tasks can be cancelled"
                )));
            }
            sqlx::query(
                "UPDATE tasks SET status = 'cancelled', finished_at = now(), updated_at = now(),
                        state_version = state_version + 1
                 WHERE id = $1",
            )
            .bind(id)
            .execute(&mut *tx)
            .await?;
            let skipped = skip_open_steps(&mut tx, id).await?;
            super::decisions::cancel_open_decisions(&mut tx, id).await?;
            append_events(
                &mut tx,
                &[NewEvent::new(
                    id,
                    event_kind::TASK_CANCELLED,
                    json!({"previous_status": status, "skipped_steps": skipped}),
                )],
            )
            .await?;
            Ok(TaskStatus::Cancelled)
        }
        .await;
        super::finish(tx, r).await
    }

    /// Known tool ids (for plan validation).
    pub async fn tool_ids(&self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar("SELECT id FROM tools")
            .fetch_all(&self.pool)
            .await?)
    }
}

pub(crate) fn parse_status(s: &str) -> Result<TaskStatus> {
    s.parse()
        .map_err(|e: String| StoreError::Invalid(format!("corrupt task status: {e}")))
}

/// Lock the task row (always the first lock a transaction takes) and return its status.
pub(crate) async fn lock_task(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    id: Uuid,
) -> Result<TaskStatus> {
    let status: Option<String> =
        sqlx::query_scalar("SELECT status FROM tasks WHERE id = $1 FOR NO KEY UPDATE")
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
    parse_status(&status.ok_or_else(|| StoreError::NotFound(format!("task {id}")))?)
}

/// Blocked and ready steps of a task become skipped. Returns how many.
pub(crate) async fn skip_open_steps(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    task_id: Uuid,
) -> Result<u64> {
    Ok(sqlx::query(
        "UPDATE steps SET status = 'skipped', updated_at = now(), finished_at = now()
         WHERE task_id = $1 AND status IN ('blocked', 'ready')",
    )
    .bind(task_id)
    .execute(&mut **tx)
    .await?
    .rows_affected())
}

pub(crate) async fn insert_plan(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    task_id: Uuid,
    version: i32,
    origin: &str,
    plan: &PlanSpec,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO plans (task_id, version, origin, reasoning, estimated_duration, steps)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
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

/// LLM usage of one task (cost reporting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow, Serialize)]
pub struct LlmUsage {
    pub calls: i64,
    pub failed_calls: i64,
    pub requests: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
}

/// `POST /tasks/{id}/resume`: a replacement plan, or parameter/tool overrides for steps.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeRequest {
    #[serde(default)]
    pub plan: Option<PlanSpec>,
    #[serde(default)]
    pub step_overrides: BTreeMap<String, StepOverride>,
}

#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepOverride {
    #[serde(default)]
    pub parameters: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    pub tool: Option<String>,
}

#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct ReflectionRecord {
    pub level: String,
    pub step_key: Option<String>,
    pub plan_version: i32,
    pub round: i32,
    pub is_fallback: bool,
    pub body: Value,
    pub raw: Option<String>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, sqlx::FromRow, Serialize)]
pub struct EvaluationRecord {
    pub round: i32,
    pub plan_version: i32,
    pub overall_score: f64,
    pub completeness: f64,
    pub correctness: f64,
    pub efficiency: f64,
    pub reliability: f64,
    pub is_successful: bool,
    pub successes: Value,
    pub failures: Value,
    pub improvement_suggestions: Value,
    pub created_at: DateTime<Utc>,
}

impl Store {
    /// Resume a task stopped in `needs_intervention`. With a plan: it becomes the next plan
    /// version (unchanged succeeded steps are kept). Otherwise the overrides are merged into the
    /// named steps and the failed steps run again with fresh retry counts. All or nothing.
    pub async fn resume_task(&self, id: Uuid, r: &ResumeRequest) -> Result<TaskStatus> {
        use super::decisions::{lock_task_row, replace_plan, set_task_status, start_evaluation};
        let mut tx = self.pool.begin().await?;
        let r: Result<()> = async {
            let task = lock_task_row(&mut tx, id).await?;
            if task.status != TaskStatus::NeedsIntervention.as_str() {
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
            .execute(&mut *tx)
            .await?;
            if let Some(plan) = &r.plan {
                let strategy = crate::recovery::Strategy::AdjustDependencies {
                    adjustments: vec![],
                };
                replace_plan(&mut tx, &task, plan, &strategy, "resume", None, &mut events).await?;
            } else {
                let live: Vec<(Uuid, String)> = sqlx::query_as(
                    "SELECT id, step_key FROM steps
                     WHERE task_id = $1 AND plan_version = $2 AND status <> 'superseded'",
                )
                .bind(id)
                .bind(task.plan_version)
                .fetch_all(&mut *tx)
                .await?;
                let tools: Vec<String> = sqlx::query_scalar("SELECT id FROM tools")
                    .fetch_all(&mut *tx)
                    .await?;
                for (key, o) in &r.step_overrides {
                    let Some((step_id, _)) = live.iter().find(|(_, k)| k == key) else {
                        return Err(StoreError::Invalid(format!(
                            "step_overrides names step {key:?}, which is not in the current plan"
                        )));
                    };
                    if let Some(t) = &o.tool
                        && !tools.contains(t)
                    {
                        return Err(StoreError::Invalid(format!(
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
                    .execute(&mut *tx)
                    .await?;
                }
                let (rerun, open): (i64, i64) = sqlx::query_as(
                    "WITH r AS (
                         UPDATE steps SET status = 'ready', retry_count = 0, run_after = now(),
                                finished_at = NULL, updated_at = now()
                         WHERE task_id = $1 AND plan_version = $2 AND status = 'failed'
                         RETURNING 1)
                     SELECT (SELECT count(*) FROM r),
                            (SELECT count(*) FROM steps WHERE task_id = $1 AND plan_version = $2
                               AND status IN ('blocked', 'ready', 'running'))",
                )
                .bind(id)
                .bind(task.plan_version)
                .fetch_one(&mut *tx)
                .await?;
                if rerun == 0 && open == 0 {
                    start_evaluation(&mut tx, id, None).await?;
                } else {
                    set_task_status(&mut tx, id, "running").await?;
                    notify_ready(&mut tx).await?;
                }
            }
            append_events(&mut tx, &events).await?;
            Ok(())
        }
        .await;
        super::finish(tx, r).await?;
        let status: String = sqlx::query_scalar("SELECT status FROM tasks WHERE id = $1")
            .bind(id)
            .fetch_one(&self.pool)
            .await?;
        parse_status(&status)
    }

    pub async fn list_reflections(&self, task_id: Uuid) -> Result<Vec<ReflectionRecord>> {
        Ok(sqlx::query_as(
            "SELECT level, step_key, plan_version, round, is_fallback, body, raw, created_at
             FROM reflections WHERE task_id = $1 ORDER BY id",
        )
        .bind(task_id)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn list_evaluations(&self, task_id: Uuid) -> Result<Vec<EvaluationRecord>> {
        Ok(sqlx::query_as(
            "SELECT round, plan_version, overall_score, completeness, correctness, efficiency,
                    reliability, is_successful, successes, failures, improvement_suggestions, created_at
             FROM evaluations WHERE task_id = $1 ORDER BY id",
        )
        .bind(task_id)
        .fetch_all(&self.pool)
        .await?)
    }
}

impl Store {
    /// LLM calls and tokens spent on a task (the `llm_usage_by_task` view; zeros when none).
    pub async fn llm_usage(&self, task_id: Uuid) -> Result<LlmUsage> {
        Ok(sqlx::query_as(
            "SELECT count(*) AS calls, count(*) FILTER (WHERE NOT ok) AS failed_calls,
                    coalesce(sum(requests), 0)::bigint AS requests,
                    coalesce(sum(prompt_tokens), 0)::bigint AS prompt_tokens,
                    coalesce(sum(completion_tokens), 0)::bigint AS completion_tokens,
                    coalesce(sum(total_tokens), 0)::bigint AS total_tokens
             FROM llm_calls WHERE task_id = $1",
        )
        .bind(task_id)
        .fetch_one(&self.pool)
        .await?)
    }

    /// LLM usage over all tasks by json_schema name: (name, ok calls, failed calls, prompt
    /// tokens, completion tokens), for `/metrics`.
    pub async fn llm_totals(&self) -> Result<Vec<(String, i64, i64, i64, i64)>> {
        Ok(sqlx::query_as(
            "SELECT name, count(*) FILTER (WHERE ok), count(*) FILTER (WHERE NOT ok),
                    coalesce(sum(prompt_tokens), 0)::bigint, coalesce(sum(completion_tokens), 0)::bigint
             FROM llm_calls GROUP BY name ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Created → finished (or → now, database clock, while unfinished), in milliseconds.
    pub async fn task_duration_ms(&self, id: Uuid) -> Result<i64> {
        sqlx::query_scalar(
            "SELECT (extract(epoch FROM (coalesce(finished_at, now()) - created_at)) * 1000)::bigint
             FROM tasks WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("task {id}")))
    }
}
