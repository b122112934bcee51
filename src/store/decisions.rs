//! Claimable decisions (brain calls) and the transactions that apply their outcome.
//!
//! Architecture invariant: a decision is applied at most once — fenced on its own lease token
//! and status — and only if the state it was made for still holds (the failed step row for step
//! decisions; the task's `state_version` for task decisions). Otherwise it is cancelled and
//! changes nothing. Counters are incremented only when an outcome is applied.

use std::collections::HashSet;

use serde_json::{Value, json};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::steps::{FailurePolicy, insert_steps_for_version};
use super::tasks::{AttemptRow, StepRow, TaskRow, insert_plan, skip_open_steps};
use super::{NewEvent, Result, Store, StoreError, append_events, notify_ready};
use crate::brain::{
    Answer, DecisionContext, DecisionInput, DecisionKind, LlmCallRecord, Meter, Planned,
};
use crate::model::{PlanSpec, StepSpec, event_kind};
use crate::recovery::{
    self, AfterEvaluation, AfterOverall, AfterStepReflection, Carry, Counters, Evaluation, OldStep,
    OverallReflection, StepReflection, Strategy, Trigger,
};
use crate::tools::ToolDef;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedDecision {
    pub id: Uuid,
    pub task_id: Uuid,
    pub kind: String,
    pub step_id: Option<Uuid>,
    pub input: Value,
    pub lease_token: i64,
    pub rescue_count: i32,
}

/// Identifies one lease on one decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DecisionFence {
    pub id: Uuid,
    pub task_id: Uuid,
    pub lease_token: i64,
}

impl ClaimedDecision {
    pub fn fence(&self) -> DecisionFence {
        DecisionFence {
            id: self.id,
            task_id: self.task_id,
            lease_token: self.lease_token,
        }
    }

    pub fn kind(&self) -> DecisionKind {
        DecisionKind::parse(&self.kind).expect("CHECK constraint guarantees the kind")
    }

    pub fn input(&self) -> DecisionInput {
        serde_json::from_value(self.input.clone()).unwrap_or_default()
    }
}

/// Who takes the lease of a decision created inside a transaction (the worker that caused it
/// runs it at once). `None`: it waits, pending, for any worker.
#[derive(Debug, Clone, Copy)]
pub struct Lease {
    pub worker_id: Uuid,
    pub lease_secs: f64,
}

/// The brain's answer to a decision, or what stands in for it.
#[derive(Debug, Clone)]
pub enum DecisionOutcome {
    Plan(Result<Answer<Planned>, String>),
    StepReflection {
        reflection: StepReflection,
        raw: Option<String>,
        fallback: bool,
    },
    Repair(Result<Answer<StepSpec>, String>),
    Overall {
        reflection: OverallReflection,
        raw: Option<String>,
        fallback: bool,
    },
    Replan(Result<Answer<Planned>, String>),
    Evaluation {
        evaluation: Evaluation,
        raw: Option<String>,
    },
}

type Tx<'c> = Transaction<'c, Postgres>;

/// Create a decision; leased to `lease` at once when given (returned), else pending.
pub(crate) async fn create_decision(
    tx: &mut Tx<'_>,
    task_id: Uuid,
    kind: DecisionKind,
    step_id: Option<Uuid>,
    input: &DecisionInput,
    lease: Option<Lease>,
) -> Result<Option<ClaimedDecision>> {
    let d: ClaimedDecision = sqlx::query_as(
        r#"
        INSERT INTO decisions (id, task_id, kind, step_id, task_version, input, status,
                               lease_owner, lease_token, lease_expires_at)
        VALUES ($1, $2, $3, $4, (SELECT state_version FROM tasks WHERE id = $2), $5,
                CASE WHEN $6::uuid IS NULL THEN 'pending' ELSE 'running' END,
                $6, CASE WHEN $6::uuid IS NULL THEN 0 ELSE 1 END,
                CASE WHEN $6::uuid IS NULL THEN NULL ELSE now() + make_interval(secs => $7) END)
        RETURNING id, task_id, kind, step_id, input, lease_token, rescue_count
        "#,
    )
    .bind(Uuid::now_v7())
    .bind(task_id)
    .bind(kind.as_str())
    .bind(step_id)
    .bind(serde_json::to_value(input).expect("input serializes"))
    .bind(lease.map(|l| l.worker_id))
    .bind(lease.map(|l| l.lease_secs).unwrap_or(0.0))
    .fetch_one(&mut **tx)
    .await?;
    if lease.is_some() {
        Ok(Some(d))
    } else {
        notify_ready(tx).await?;
        Ok(None)
    }
}

/// Lock the task row and read all of it.
pub(crate) async fn lock_task_row(tx: &mut Tx<'_>, id: Uuid) -> Result<TaskRow> {
    sqlx::query_as("SELECT * FROM tasks WHERE id = $1 FOR NO KEY UPDATE")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or_else(|| StoreError::NotFound(format!("task {id}")))
}

/// Set a task's status (and bump `state_version`, which fences task decisions).
pub(crate) async fn set_task_status(tx: &mut Tx<'_>, id: Uuid, status: &str) -> Result<()> {
    sqlx::query(
        "UPDATE tasks SET status = $2, updated_at = now(), state_version = state_version + 1,
                finished_at = CASE WHEN $2 IN ('succeeded', 'failed', 'cancelled') THEN now() END
         WHERE id = $1",
    )
    .bind(id)
    .bind(status)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The task fails: error recorded, open steps skipped, open decisions cancelled.
pub(crate) async fn fail_task(
    tx: &mut Tx<'_>,
    task_id: Uuid,
    error: Value,
    events: &mut Vec<NewEvent>,
) -> Result<()> {
    set_task_status(tx, task_id, "failed").await?;
    sqlx::query("UPDATE tasks SET error = $2 WHERE id = $1")
        .bind(task_id)
        .bind(&error)
        .execute(&mut **tx)
        .await?;
    let skipped = skip_open_steps(tx, task_id).await?;
    cancel_open_decisions(tx, task_id).await?;
    let mut payload = error;
    payload["skipped_steps"] = json!(skipped);
    events.push(NewEvent::new(task_id, event_kind::TASK_FAILED, payload));
    Ok(())
}

pub(crate) async fn cancel_open_decisions(tx: &mut Tx<'_>, task_id: Uuid) -> Result<u64> {
    Ok(sqlx::query(
        "UPDATE decisions SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL,
                finished_at = now()
         WHERE task_id = $1 AND status IN ('pending', 'running')",
    )
    .bind(task_id)
    .execute(&mut **tx)
    .await?
    .rows_affected())
}

/// A row in `recoveries`, copied from the failed attempt that started the recovery.
pub(crate) async fn record_recovery(
    tx: &mut Tx<'_>,
    attempt_id: Option<i64>,
    tier: i32,
    action: &str,
    category: Option<&str>,
) -> Result<()> {
    let Some(attempt_id) = attempt_id else {
        return Ok(());
    };
    sqlx::query(
        "INSERT INTO recoveries (task_id, step_key, plan_version, failed_attempt_id, tier, action, tool, category)
         SELECT task_id, step_key, plan_version, id, $2, $3, tool,
                coalesce($4, error_category, 'unknown_error')
         FROM attempts WHERE id = $1",
    )
    .bind(attempt_id)
    .bind(tier)
    .bind(action)
    .bind(category)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A `reflections` row: the reflection (or its fallback) on `step`, at `level`.
async fn insert_reflection<T: serde::Serialize>(
    tx: &mut Tx<'_>,
    task: &TaskRow,
    level: &'static str,
    step: Option<&StepRow>,
    r: &Reflected<'_, T>,
) -> Result<()> {
    let body = serde_json::to_value(r.body).expect("reflection serializes");
    sqlx::query(
        "INSERT INTO reflections (task_id, level, step_id, step_key, plan_version, round,
                root_cause_category, is_recoverable, suggested_action, should_replan,
                replanning_strategy, is_fallback, body, raw)
         VALUES ($1, $2, $3, $4, $5, $6, $7->>'root_cause_category', ($7->>'is_recoverable')::boolean,
                 $7->'suggested_action', ($7->>'should_replan')::boolean, $7->'replanning_strategy',
                 $8, $7, $9)",
    )
    .bind(task.id)
    .bind(level)
    .bind(step.map(|s| s.id))
    .bind(step.map(|s| s.step_key.as_str()))
    .bind(task.plan_version)
    .bind(task.round)
    .bind(&body)
    .bind(r.fallback)
    .bind(r.raw)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub(crate) fn counters_of(task: &TaskRow, step: Option<&StepRow>, max_rescues: i32) -> Counters {
    Counters {
        retry_count: step.map(|s| s.retry_count).unwrap_or(0),
        max_step_retries: task.max_step_retries,
        single_step_repair_count: task.single_step_repair_count,
        max_single_step_repairs: task.max_single_step_repairs,
        task_replan_count: task.task_replan_count,
        max_task_replans: task.max_task_replans,
        consecutive_failures: task.consecutive_failures,
        max_consecutive_failures: task.max_consecutive_failures,
        round: task.round,
        max_reflection_rounds: task.max_reflection_rounds,
        rescue_count: step.map(|s| s.rescue_count).unwrap_or(0),
        max_rescues,
    }
}

/// Task → reflecting, with an overall-reflection decision.
async fn start_overall(
    tx: &mut Tx<'_>,
    task_id: Uuid,
    step_id: Option<Uuid>,
    input: DecisionInput,
    lease: Lease,
) -> Result<Option<ClaimedDecision>> {
    set_task_status(tx, task_id, "reflecting").await?;
    create_decision(
        tx,
        task_id,
        DecisionKind::OverallReflection,
        step_id,
        &input,
        Some(lease),
    )
    .await
}

/// Task → evaluating, with an evaluation decision (all steps of the plan are done).
pub(crate) async fn start_evaluation(
    tx: &mut Tx<'_>,
    task_id: Uuid,
    lease: Option<Lease>,
) -> Result<Option<ClaimedDecision>> {
    set_task_status(tx, task_id, "evaluating").await?;
    create_decision(
        tx,
        task_id,
        DecisionKind::Evaluation,
        None,
        &DecisionInput::default(),
        lease,
    )
    .await
}

impl Store {
    /// Claim pending decisions (`FOR UPDATE SKIP LOCKED`), leasing them to this worker.
    pub async fn claim_decisions(
        &self,
        worker_id: Uuid,
        limit: i64,
        lease_secs: f64,
    ) -> Result<Vec<ClaimedDecision>> {
        Ok(sqlx::query_as(
            r#"
            WITH c AS (
                SELECT id FROM decisions
                WHERE status = 'pending' AND run_after <= now()
                ORDER BY created_at LIMIT $1
                FOR UPDATE SKIP LOCKED
            )
            UPDATE decisions d
            SET status = 'running', lease_owner = $2, lease_token = d.lease_token + 1,
                lease_expires_at = now() + make_interval(secs => $3)
            FROM c WHERE d.id = c.id
            RETURNING d.id, d.task_id, d.kind, d.step_id, d.input, d.lease_token, d.rescue_count
            "#,
        )
        .bind(limit)
        .bind(worker_id)
        .bind(lease_secs)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Decisions whose worker died go back to pending (nothing was applied, nothing counted).
    pub async fn rescue_expired_decisions(&self, limit: i64) -> Result<u64> {
        let mut tx = self.pool.begin().await?;
        let n = sqlx::query(
            r#"
            UPDATE decisions SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL,
                   rescue_count = rescue_count + 1
            WHERE id IN (SELECT id FROM decisions WHERE status = 'running' AND lease_expires_at < now()
                         ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
            "#,
        )
        .bind(limit)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n > 0 {
            notify_ready(&mut tx).await?;
        }
        tx.commit().await?;
        Ok(n)
    }

    /// Give a decision back (graceful shutdown): pending again, nothing applied. Fenced.
    pub async fn release_decision(&self, f: &DecisionFence) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let r = async {
            let n = sqlx::query(
                "UPDATE decisions SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL
                 WHERE id = $1 AND lease_token = $2 AND status = 'running'",
            )
            .bind(f.id)
            .bind(f.lease_token)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if n == 0 {
                return Err(StoreError::Fenced);
            }
            notify_ready(&mut tx).await?;
            Ok(())
        }
        .await;
        super::finish(tx, r).await
    }

    /// Everything a brain may read for this decision.
    pub async fn decision_context(
        &self,
        d: &ClaimedDecision,
        max_rescues: i32,
    ) -> Result<DecisionContext> {
        let task = self.get_task(d.task_id).await?;
        let steps: Vec<StepRow> = sqlx::query_as(
            "SELECT * FROM steps WHERE task_id = $1 AND plan_version = $2 AND status <> 'superseded'
             ORDER BY position",
        )
        .bind(task.id)
        .bind(task.plan_version)
        .fetch_all(&self.pool)
        .await?;
        let step: Option<StepRow> = match d.step_id {
            Some(id) => {
                sqlx::query_as("SELECT * FROM steps WHERE id = $1")
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?
            }
            None => None,
        };
        let attempts: Vec<AttemptRow> = self.list_attempts(task.id).await?;
        let tools: Vec<ToolDef> = self.list_tools().await?;
        let counters = counters_of(&task, step.as_ref(), max_rescues);
        // only a capped task needs the count
        let llm_calls_used: i64 = match task.max_llm_calls {
            Some(_) => {
                sqlx::query_scalar("SELECT count(*) FROM llm_calls WHERE task_id = $1")
                    .bind(task.id)
                    .fetch_one(&self.pool)
                    .await?
            }
            None => 0,
        };
        Ok(DecisionContext {
            task,
            steps,
            step,
            attempts,
            tools: tools.into_iter().map(|t| (t.id.clone(), t)).collect(),
            counters,
            input: d.input(),
            llm_calls_used,
            meter: Meter::default(),
        })
    }

    /// The LLM calls made for a decision (their tokens were spent whether or not the outcome
    /// is applied). Written before the outcome is applied, in its own statement.
    pub async fn record_llm_calls(&self, d: &DecisionFence, calls: &[LlmCallRecord]) -> Result<()> {
        if calls.is_empty() {
            return Ok(());
        }
        let col = |f: fn(&LlmCallRecord) -> i64| calls.iter().map(f).collect::<Vec<i64>>();
        sqlx::query(
            "INSERT INTO llm_calls (task_id, decision_id, name, model, ok, error, requests,
                    prompt_tokens, completion_tokens, total_tokens, latency_ms)
             SELECT $1, $2, * FROM unnest($3::text[], $4::text[], $5::boolean[], $6::text[],
                    $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[])",
        )
        .bind(d.task_id)
        .bind(d.id)
        .bind(calls.iter().map(|c| c.name.clone()).collect::<Vec<_>>())
        .bind(calls.iter().map(|c| c.model.clone()).collect::<Vec<_>>())
        .bind(calls.iter().map(|c| c.ok).collect::<Vec<_>>())
        .bind(calls.iter().map(|c| c.error.clone()).collect::<Vec<_>>())
        .bind(col(|c| c.usage.requests as i64))
        .bind(col(|c| c.usage.prompt_tokens as i64))
        .bind(col(|c| c.usage.completion_tokens as i64))
        .bind(col(|c| c.usage.total_tokens as i64))
        .bind(col(|c| c.latency_ms))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A worker took up a description-only task's plan decision: `pending → planning`.
    pub async fn start_planning(&self, task_id: Uuid) -> Result<()> {
        sqlx::query(
            "UPDATE tasks SET status = 'planning', updated_at = now()
             WHERE id = $1 AND status = 'pending'",
        )
        .bind(task_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Apply a decision's outcome in one transaction. Returns the follow-up decision, leased to
    /// `lease.worker_id`, when the outcome needs another brain call (repair, overall reflection,
    /// replan). A stale decision is cancelled and changes nothing else.
    pub async fn apply_decision(
        &self,
        f: &DecisionFence,
        outcome: &DecisionOutcome,
        policy: &FailurePolicy,
        lease: Lease,
    ) -> Result<Option<ClaimedDecision>> {
        let mut tx = self.pool.begin().await?;
        let r = async {
            let task = lock_task_row(&mut tx, f.task_id).await?;
            let row: Option<(String, Option<Uuid>, i64, Value)> = sqlx::query_as(
                "SELECT kind, step_id, task_version, input FROM decisions
                 WHERE id = $1 AND task_id = $2 AND lease_token = $3 AND status = 'running'
                 FOR UPDATE",
            )
            .bind(f.id)
            .bind(f.task_id)
            .bind(f.lease_token)
            .fetch_optional(&mut *tx)
            .await?;
            let (kind, step_id, task_version, input) = row.ok_or(StoreError::Fenced)?;
            let kind = DecisionKind::parse(&kind).expect("CHECK constraint guarantees the kind");
            let input: DecisionInput = serde_json::from_value(input).unwrap_or_default();
            let step: Option<StepRow> = match step_id {
                Some(id) => {
                    sqlx::query_as("SELECT * FROM steps WHERE id = $1 FOR UPDATE")
                        .bind(id)
                        .fetch_optional(&mut *tx)
                        .await?
                }
                None => None,
            };
            let fresh = match kind {
                // only a cancel competes with planning
                DecisionKind::Plan => matches!(task.status.as_str(), "pending" | "planning"),
                DecisionKind::StepReflection | DecisionKind::StepRepair => {
                    task.status == "running"
                        && step.as_ref().is_some_and(|s| {
                            s.status == "failed" && s.plan_version == task.plan_version
                        })
                }
                DecisionKind::OverallReflection => {
                    task.status == "reflecting" && task.state_version == task_version
                }
                DecisionKind::Replan => {
                    task.status == "replanning" && task.state_version == task_version
                }
                DecisionKind::Evaluation => {
                    task.status == "evaluating" && task.state_version == task_version
                }
            };
            let status = if fresh { "done" } else { "cancelled" };
            sqlx::query(
                "UPDATE decisions SET status = $2, lease_owner = NULL, lease_expires_at = NULL, finished_at = now()
                 WHERE id = $1",
            )
            .bind(f.id)
            .bind(status)
            .execute(&mut *tx)
            .await?;
            if !fresh {
                return Ok(None);
            }
            let mut events = Vec::new();
            let c = Applying {
                task: &task,
                input: &input,
                policy,
                lease,
            };
            let fresh_step = || step.as_ref().expect("fresh step decision has its step");
            let next = match (kind, outcome) {
                (DecisionKind::Plan, DecisionOutcome::Plan(answer)) => {
                    apply_plan(&mut tx, &c, answer, &mut events).await?
                }
                (
                    DecisionKind::StepReflection,
                    DecisionOutcome::StepReflection {
                        reflection,
                        raw,
                        fallback,
                    },
                ) => {
                    let r = Reflected {
                        body: reflection,
                        raw: raw.as_deref(),
                        fallback: *fallback,
                    };
                    apply_step_reflection(&mut tx, &c, fresh_step(), r, &mut events).await?
                }
                (DecisionKind::StepRepair, DecisionOutcome::Repair(answer)) => {
                    apply_repair(&mut tx, &c, fresh_step(), answer, &mut events).await?
                }
                (
                    DecisionKind::OverallReflection,
                    DecisionOutcome::Overall {
                        reflection,
                        raw,
                        fallback,
                    },
                ) => {
                    let r = Reflected {
                        body: reflection,
                        raw: raw.as_deref(),
                        fallback: *fallback,
                    };
                    apply_overall(&mut tx, &c, step.as_ref(), r, &mut events).await?
                }
                (DecisionKind::Replan, DecisionOutcome::Replan(answer)) => {
                    apply_replan(&mut tx, &c, answer, &mut events).await?
                }
                (DecisionKind::Evaluation, DecisionOutcome::Evaluation { evaluation, raw }) => {
                    apply_evaluation(&mut tx, &c, evaluation, raw.as_deref(), &mut events).await?
                }
                (k, _) => {
                    return Err(StoreError::Invalid(format!(
                        "outcome does not match decision kind {}",
                        k.as_str()
                    )));
                }
            };
            append_events(&mut tx, &events).await?;
            Ok(next)
        }
        .await;
        super::finish(tx, r).await
    }
}

/// What every outcome is applied with: the locked task, the decision's input, the policy, and
/// the lease any follow-up decision is created with.
#[derive(Clone, Copy)]
struct Applying<'a> {
    task: &'a TaskRow,
    input: &'a DecisionInput,
    policy: &'a FailurePolicy,
    lease: Lease,
}

/// A reflection answer with the raw text it came from, or the fallback that stands in for it.
struct Reflected<'a, T> {
    body: &'a T,
    raw: Option<&'a str>,
    fallback: bool,
}

async fn apply_step_reflection(
    tx: &mut Tx<'_>,
    c: &Applying<'_>,
    step: &StepRow,
    r: Reflected<'_, StepReflection>,
    events: &mut Vec<NewEvent>,
) -> Result<Option<ClaimedDecision>> {
    let Applying {
        task,
        input,
        policy,
        lease,
    } = *c;
    insert_reflection(tx, task, "step", Some(step), &r).await?;
    let Reflected {
        body: r, fallback, ..
    } = r;
    events.push(NewEvent::new(
        task.id,
        event_kind::STEP_REFLECTED,
        json!({"step_id": step.step_key, "root_cause_category": r.root_cause_category,
               "is_recoverable": r.is_recoverable, "suggested_action": r.suggested_action,
               "fallback": fallback}),
    ));
    let known: HashSet<String> = sqlx::query_scalar("SELECT id FROM tools")
        .fetch_all(&mut **tx)
        .await?
        .into_iter()
        .collect();
    let counters = counters_of(task, Some(step), policy.max_rescues);
    let category = Some(r.root_cause_category.as_str());
    match recovery::after_step_reflection(&counters, r, |t| known.contains(t), policy.backoff) {
        AfterStepReflection::RetryWithParams { params, delay_ms } => {
            retry_step(
                tx,
                step,
                Some(serde_json::to_value(&params).expect("params")),
                None,
                delay_ms,
            )
            .await?;
            record_recovery(tx, input.attempt_id, 1, "retry_with_params", category).await?;
            events.push(NewEvent::new(
                task.id,
                event_kind::RETRY_SCHEDULED,
                json!({"step_id": step.step_key, "tier": 1, "next_attempt": step.attempts + 1,
                       "delay_ms": delay_ms, "adjusted_parameters": params}),
            ));
            Ok(None)
        }
        AfterStepReflection::RetryWithTool { tool, delay_ms } => {
            retry_step(tx, step, None, Some(&tool), delay_ms).await?;
            record_recovery(tx, input.attempt_id, 1, "retry_with_tool", category).await?;
            events.push(NewEvent::new(
                task.id,
                event_kind::RETRY_SCHEDULED,
                json!({"step_id": step.step_key, "tier": 1, "next_attempt": step.attempts + 1,
                       "delay_ms": delay_ms, "alternative_tool": tool}),
            ));
            Ok(None)
        }
        AfterStepReflection::Repair => {
            let mut next = input.clone();
            next.step_reflection = Some(r.clone());
            create_decision(
                tx,
                task.id,
                DecisionKind::StepRepair,
                Some(step.id),
                &next,
                Some(lease),
            )
            .await
        }
        AfterStepReflection::OverallReflection { summary } => {
            let mut next = input.clone();
            next.trigger = Some(Trigger::StepFailure);
            next.step_reflection = Some(r.clone());
            next.summary = Some(summary);
            start_overall(tx, task.id, Some(step.id), next, lease).await
        }
    }
}

/// Tier 1: the same step row runs again (overrides merged), after a backoff.
async fn retry_step(
    tx: &mut Tx<'_>,
    step: &StepRow,
    params: Option<Value>,
    tool: Option<&str>,
    delay_ms: u64,
) -> Result<()> {
    sqlx::query(
        "UPDATE steps SET status = 'ready', param_overrides = param_overrides || coalesce($2, '{}'::jsonb),
                tool_override = coalesce($3, tool_override), finished_at = NULL, updated_at = now(),
                run_after = now() + make_interval(secs => $4 / 1000.0)
         WHERE id = $1",
    )
    .bind(step.id)
    .bind(params)
    .bind(tool)
    .bind(delay_ms as f64)
    .execute(&mut **tx)
    .await?;
    notify_ready(tx).await
}

async fn apply_repair(
    tx: &mut Tx<'_>,
    c: &Applying<'_>,
    step: &StepRow,
    answer: &Result<Answer<StepSpec>, String>,
    events: &mut Vec<NewEvent>,
) -> Result<Option<ClaimedDecision>> {
    let Applying {
        task, input, lease, ..
    } = *c;
    sqlx::query(
        "UPDATE tasks SET single_step_repair_count = single_step_repair_count + 1, updated_at = now()
         WHERE id = $1",
    )
    .bind(task.id)
    .execute(&mut **tx)
    .await?;
    let category = input
        .step_reflection
        .as_ref()
        .map(|r| r.root_cause_category.as_str());
    let checked = match answer {
        Ok(a) => check_repair(tx, task, step, &a.value).await?,
        Err(e) => Err(e.clone()),
    };
    match checked {
        Ok(spec) => {
            sqlx::query(
                "UPDATE steps SET status = 'superseded', finished_at = now(), updated_at = now() WHERE id = $1",
            )
            .bind(step.id)
            .execute(&mut **tx)
            .await?;
            let one = PlanSpec {
                steps: vec![spec.clone()],
                reasoning: String::new(),
                estimated_duration: None,
            };
            insert_steps_for_version(
                tx,
                task,
                task.plan_version,
                &one,
                &Carry::default(),
                step.position,
            )
            .await?;
            record_recovery(tx, input.attempt_id, 2, "repair", category).await?;
            events.push(NewEvent::new(
                task.id,
                event_kind::STEP_REPAIRED,
                json!({"step_id": step.step_key, "ok": true,
                       "old_tool": step.tool_override.clone().unwrap_or_else(|| step.tool.clone()),
                       "new_tool": spec.tool, "new_step": spec}),
            ));
            notify_ready(tx).await?;
            Ok(None)
        }
        Err(reason) => {
            record_recovery(tx, input.attempt_id, 2, "repair_failed", category).await?;
            events.push(NewEvent::new(
                task.id,
                event_kind::STEP_REPAIRED,
                json!({"step_id": step.step_key, "ok": false, "reason": reason}),
            ));
            let mut next = input.clone();
            next.trigger = Some(Trigger::StepFailure);
            next.summary = Some(format!("single-step repair failed: {reason}"));
            start_overall(tx, task.id, Some(step.id), next, lease).await
        }
    }
}

/// A repaired step must keep its id and leave a valid plan.
async fn check_repair(
    tx: &mut Tx<'_>,
    task: &TaskRow,
    step: &StepRow,
    spec: &StepSpec,
) -> Result<Result<StepSpec, String>> {
    if spec.id != step.step_key {
        return Ok(Err(format!(
            "the repaired step is {:?}, not {:?}",
            spec.id, step.step_key
        )));
    }
    let live: Vec<StepRow> = sqlx::query_as(
        "SELECT * FROM steps WHERE task_id = $1 AND plan_version = $2 AND status <> 'superseded'
         ORDER BY position",
    )
    .bind(task.id)
    .bind(task.plan_version)
    .fetch_all(&mut **tx)
    .await?;
    let plan = PlanSpec {
        steps: live
            .iter()
            .map(|s| {
                if s.id == step.id {
                    spec.clone()
                } else {
                    DecisionContext::effective_spec(s)
                }
            })
            .collect(),
        reasoning: String::new(),
        estimated_duration: None,
    };
    let known: HashSet<String> = sqlx::query_scalar("SELECT id FROM tools")
        .fetch_all(&mut **tx)
        .await?
        .into_iter()
        .collect();
    Ok(crate::plan::validate(&plan, &known)
        .map(|_| spec.clone())
        .map_err(|e| format!("the repaired step is invalid: {}", e.message)))
}

async fn apply_overall(
    tx: &mut Tx<'_>,
    c: &Applying<'_>,
    step: Option<&StepRow>,
    r: Reflected<'_, OverallReflection>,
    events: &mut Vec<NewEvent>,
) -> Result<Option<ClaimedDecision>> {
    let Applying {
        task,
        input,
        policy,
        lease,
    } = *c;
    insert_reflection(tx, task, "overall", step, &r).await?;
    let Reflected {
        body: r, fallback, ..
    } = r;
    let trigger = input.trigger.unwrap_or(Trigger::StepFailure);
    events.push(NewEvent::new(
        task.id,
        event_kind::OVERALL_REFLECTED,
        json!({"trigger": trigger, "step_id": input.step_key, "should_replan": r.should_replan,
               "replanning_strategy": r.replanning_strategy, "stop_reason": r.stop_reason,
               "root_causes": r.root_causes, "fallback": fallback}),
    ));
    let counters = counters_of(task, step, policy.max_rescues);
    let category = input
        .step_reflection
        .as_ref()
        .map(|r| r.root_cause_category.as_str());
    match recovery::after_overall(&counters, trigger, r) {
        AfterOverall::Replan { strategy } => {
            set_task_status(tx, task.id, "replanning").await?;
            let mut next = input.clone();
            next.overall = Some(r.clone());
            next.strategy = Some(strategy);
            create_decision(
                tx,
                task.id,
                DecisionKind::Replan,
                step.map(|s| s.id),
                &next,
                Some(lease),
            )
            .await
        }
        AfterOverall::Intervention { reason } => {
            set_task_status(tx, task.id, "needs_intervention").await?;
            sqlx::query("UPDATE tasks SET stop_reason = $2 WHERE id = $1")
                .bind(task.id)
                .bind(&reason)
                .execute(&mut **tx)
                .await?;
            record_recovery(tx, input.attempt_id, 3, "intervention", category).await?;
            events.push(NewEvent::new(
                task.id,
                event_kind::INTERVENTION_REQUIRED,
                json!({"step_id": input.step_key, "reason": reason}),
            ));
            Ok(None)
        }
        AfterOverall::Fail { reason } => {
            record_recovery(tx, input.attempt_id, 3, "fail", category).await?;
            fail_task(
                tx,
                task.id,
                json!({"step_id": input.step_key, "reason": reason}),
                events,
            )
            .await?;
            Ok(None)
        }
    }
}

async fn apply_replan(
    tx: &mut Tx<'_>,
    c: &Applying<'_>,
    answer: &Result<Answer<Planned>, String>,
    events: &mut Vec<NewEvent>,
) -> Result<Option<ClaimedDecision>> {
    let Applying {
        task, input, lease, ..
    } = *c;
    let strategy = input.strategy.clone().unwrap_or(Strategy::FullReplan);
    let trigger = input.trigger.unwrap_or(Trigger::StepFailure);
    let category = input
        .step_reflection
        .as_ref()
        .map(|r| r.root_cause_category.as_str());
    let plan = match checked_plan(tx, answer, "the new plan").await? {
        Ok(p) => {
            if let Some(sel) = &p.selection {
                events.push(tools_selected(task.id, sel, "replanning"));
            }
            p.plan
        }
        Err(reason) => {
            record_recovery(tx, input.attempt_id, 3, "replan_failed", category).await?;
            fail_task(
                tx,
                task.id,
                json!({"step_id": input.step_key, "reason": format!("replanning failed: {reason}")}),
                events,
            )
            .await?;
            return Ok(None);
        }
    };
    let origin = format!("replan:{}", strategy.name());
    let next = replace_plan(tx, task, &plan, &strategy, &origin, Some(lease), events).await?;
    let counter = match trigger {
        Trigger::StepFailure => "task_replan_count = task_replan_count + 1",
        Trigger::Evaluation => "round = round + 1",
    };
    let sql = format!("UPDATE tasks SET {counter} WHERE id = $1");
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(task.id)
        .execute(&mut **tx)
        .await?;
    record_recovery(tx, input.attempt_id, 3, &origin, category).await?;
    Ok(next)
}

/// The brain's plan if it is valid against the tool registry as it stands in this
/// transaction; else why not.
async fn checked_plan(
    tx: &mut Tx<'_>,
    answer: &Result<Answer<Planned>, String>,
    what: &str,
) -> Result<std::result::Result<Planned, String>> {
    let a = match answer {
        Ok(a) => a,
        Err(e) => return Ok(Err(e.clone())),
    };
    let known: HashSet<String> = sqlx::query_scalar("SELECT id FROM tools")
        .fetch_all(&mut **tx)
        .await?
        .into_iter()
        .collect();
    Ok(crate::plan::validate(&a.value.plan, &known)
        .map(|_| a.value.clone())
        .map_err(|e| format!("{what} is invalid: {}", e.message)))
}

fn tools_selected(task_id: Uuid, sel: &crate::brain::ToolSelection, phase: &str) -> NewEvent {
    NewEvent::new(
        task_id,
        event_kind::TOOLS_SELECTED,
        json!({"phase": phase, "selected_tools": sel.selected_tools, "reasoning": sel.reasoning,
               "changes_summary": sel.changes_summary}),
    )
}

/// A description-only task's first plan: validated against the registry, installed as
/// version 1, the task `running`. A brain error or an invalid plan fails the task.
async fn apply_plan(
    tx: &mut Tx<'_>,
    c: &Applying<'_>,
    answer: &Result<Answer<Planned>, String>,
    events: &mut Vec<NewEvent>,
) -> Result<Option<ClaimedDecision>> {
    let Applying { task, lease, .. } = *c;
    let planned = match checked_plan(tx, answer, "the plan").await? {
        Ok(p) => p,
        Err(reason) => {
            fail_task(
                tx,
                task.id,
                json!({"reason": format!("planning failed: {reason}")}),
                events,
            )
            .await?;
            return Ok(None);
        }
    };
    if let Some(sel) = &planned.selection {
        events.push(tools_selected(task.id, sel, "planning"));
    }
    let plan = &planned.plan;
    insert_plan(tx, task.id, 1, "initial", plan).await?;
    sqlx::query("UPDATE tasks SET plan_version = 1, updated_at = now() WHERE id = $1")
        .bind(task.id)
        .execute(&mut **tx)
        .await?;
    let runnable = insert_steps_for_version(tx, task, 1, plan, &Carry::default(), 0).await?;
    events.push(NewEvent::new(
        task.id,
        event_kind::PLAN_GENERATED,
        json!({"version": 1, "origin": "initial", "steps": plan.steps.len(),
               "reasoning": plan.reasoning, "estimated_duration": plan.estimated_duration}),
    ));
    if runnable == 0 {
        return start_evaluation(tx, task.id, Some(lease)).await;
    }
    set_task_status(tx, task.id, "running").await?;
    notify_ready(tx).await?;
    Ok(None)
}

/// Install `plan` as the task's next version: what the strategy keeps is copied (not run
/// again), the old version's open steps are superseded, counters of the new steps start at
/// zero, `consecutive_failures` resets, and a full replan starts a fresh runtime context.
pub(crate) async fn replace_plan(
    tx: &mut Tx<'_>,
    task: &TaskRow,
    plan: &PlanSpec,
    strategy: &Strategy,
    origin: &str,
    lease: Option<Lease>,
    events: &mut Vec<NewEvent>,
) -> Result<Option<ClaimedDecision>> {
    let old: Vec<StepRow> = sqlx::query_as(
        "SELECT * FROM steps WHERE task_id = $1 AND plan_version = $2 AND status <> 'superseded'
         ORDER BY position",
    )
    .bind(task.id)
    .bind(task.plan_version)
    .fetch_all(&mut **tx)
    .await?;
    let old_specs: Vec<OldStep> = old
        .iter()
        .map(|s| OldStep {
            spec: DecisionContext::effective_spec(s),
            succeeded: s.status == "succeeded",
        })
        .collect();
    let carry = recovery::carry_over(&old_specs, &plan.steps, strategy);
    let version = task.plan_version + 1;
    insert_plan(tx, task.id, version, origin, plan).await?;
    sqlx::query(
        "UPDATE steps SET status = 'superseded', updated_at = now(), finished_at = coalesce(finished_at, now())
         WHERE task_id = $1 AND plan_version = $2 AND status IN ('blocked', 'ready', 'failed')",
    )
    .bind(task.id)
    .bind(task.plan_version)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "UPDATE tasks SET plan_version = $2, consecutive_failures = 0, stop_reason = NULL,
                runtime_metadata = CASE WHEN $3 THEN '{}'::jsonb ELSE runtime_metadata END,
                updated_at = now()
         WHERE id = $1",
    )
    .bind(task.id)
    .bind(version)
    .bind(matches!(strategy, Strategy::FullReplan))
    .execute(&mut **tx)
    .await?;
    let runnable = insert_steps_for_version(tx, task, version, plan, &carry, 0).await?;
    let mut kept: Vec<&String> = carry.kept.iter().collect();
    kept.sort();
    let mut skipped: Vec<&String> = carry.skipped.iter().collect();
    skipped.sort();
    events.push(NewEvent::new(
        task.id,
        event_kind::REPLANNED,
        json!({"from_version": task.plan_version, "to_version": version, "strategy": strategy,
               "kept": kept, "skipped": skipped, "steps": plan.steps.len()}),
    ));
    events.push(NewEvent::new(
        task.id,
        event_kind::PLAN_GENERATED,
        json!({"version": version, "origin": origin, "steps": plan.steps.len()}),
    ));
    if runnable == 0 {
        // everything was kept or skipped: the plan is already done
        return start_evaluation(tx, task.id, lease).await;
    }
    set_task_status(tx, task.id, "running").await?;
    notify_ready(tx).await?;
    Ok(None)
}

async fn apply_evaluation(
    tx: &mut Tx<'_>,
    c: &Applying<'_>,
    e: &Evaluation,
    raw: Option<&str>,
    events: &mut Vec<NewEvent>,
) -> Result<Option<ClaimedDecision>> {
    let Applying {
        task,
        policy,
        lease,
        ..
    } = *c;
    let d = &e.dimensions;
    let successful = e.overall_score >= task.success_threshold;
    sqlx::query(
        "INSERT INTO evaluations (task_id, round, plan_version, overall_score, completeness, correctness,
                efficiency, reliability, is_successful, successes, failures, improvement_suggestions, raw)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(task.id)
    .bind(task.round)
    .bind(task.plan_version)
    .bind(e.overall_score.clamp(0.0, 100.0))
    .bind(d.completeness)
    .bind(d.correctness)
    .bind(d.efficiency)
    .bind(d.reliability)
    .bind(successful)
    .bind(json!(e.successes))
    .bind(json!(e.failures))
    .bind(json!(e.improvement_suggestions))
    .bind(raw)
    .execute(&mut **tx)
    .await?;
    sqlx::query("UPDATE tasks SET final_score = $2 WHERE id = $1")
        .bind(task.id)
        .bind(e.overall_score.clamp(0.0, 100.0))
        .execute(&mut **tx)
        .await?;
    events.push(NewEvent::new(
        task.id,
        event_kind::EVALUATION_COMPLETED,
        json!({"round": task.round, "overall_score": e.overall_score, "is_successful": successful,
               "dimensions": e.dimensions}),
    ));
    let counters = counters_of(task, None, policy.max_rescues);
    match recovery::after_evaluation(&counters, e, task.success_threshold, task.auto_reflection) {
        AfterEvaluation::Succeed => {
            set_task_status(tx, task.id, "succeeded").await?;
            events.push(NewEvent::new(
                task.id,
                event_kind::TASK_SUCCEEDED,
                json!({"plan_version": task.plan_version, "final_score": e.overall_score, "round": task.round}),
            ));
            Ok(None)
        }
        AfterEvaluation::Reflect => {
            let input = DecisionInput {
                trigger: Some(Trigger::Evaluation),
                summary: Some(format!(
                    "evaluation scored {:.1}, below {:.1}",
                    e.overall_score, task.success_threshold
                )),
                ..Default::default()
            };
            start_overall(tx, task.id, None, input, lease).await
        }
        AfterEvaluation::Fail { reason } => {
            fail_task(
                tx,
                task.id,
                json!({"reason": reason, "final_score": e.overall_score}),
                events,
            )
            .await?;
            Ok(None)
        }
    }
}
