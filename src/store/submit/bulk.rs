//! Submit as one statement: tasks, plans, steps, plan decisions and first events of a whole
//! batch are inserted by a single `WITH … INSERT` (one round trip, one commit), all or nothing.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Value, json};
use uuid::Uuid;

use super::{NewTask, Submitted};
use crate::domain::decision::DecisionInput;
use crate::domain::event_kind;
use crate::domain::status::{StepStatus, TaskStatus};
use crate::store::{DECISIONS_PAYLOAD, READY_CHANNEL, Result, StoreError};

const INSERT: &str = r#"
WITH missing AS (
    SELECT coalesce(array_agg(x ORDER BY x), '{}') AS ids
    FROM unnest($3::text[]) AS x WHERE NOT EXISTS (SELECT 1 FROM tools WHERE id = x)
), t_in AS (
    SELECT * FROM jsonb_to_recordset($1) AS t(
        ord int, id uuid, description text, metadata jsonb, context jsonb, priority int,
        idempotency_key text, status text, plan_version int, event_seq bigint,
        max_step_retries int, max_single_step_repairs int, max_task_replans int,
        max_consecutive_failures int, max_reflection_rounds int, max_concurrent_steps int,
        step_reflection boolean, auto_reflection boolean, success_threshold float8, max_llm_calls int,
        task_timeout_secs int, max_llm_tokens bigint, has_plan boolean, reasoning text, estimated_duration int, plan_steps jsonb,
        decision_id uuid, submitted jsonb, generated jsonb, origin text)
), ins AS (
    INSERT INTO tasks (id, description, metadata, context, priority, idempotency_key, status,
                       plan_version, event_seq, max_step_retries, max_single_step_repairs,
                       max_task_replans, max_consecutive_failures, max_reflection_rounds,
                       max_concurrent_steps, step_reflection, auto_reflection, success_threshold,
                       max_llm_calls, deadline_at, max_llm_tokens)
    SELECT id, description, metadata, context, priority, idempotency_key, status, plan_version,
           event_seq, max_step_retries, max_single_step_repairs, max_task_replans,
           max_consecutive_failures, max_reflection_rounds, max_concurrent_steps, step_reflection,
           auto_reflection, success_threshold, max_llm_calls,
           CASE WHEN task_timeout_secs > 0 THEN now() + make_interval(secs => task_timeout_secs) END,
           max_llm_tokens
    FROM t_in
    WHERE cardinality((SELECT ids FROM missing)) = 0
    ORDER BY ord
    ON CONFLICT (idempotency_key) DO NOTHING
    RETURNING id
), new AS (
    SELECT t_in.* FROM t_in JOIN ins USING (id)
), plans_in AS (
    INSERT INTO plans (task_id, version, origin, reasoning, estimated_duration, steps)
    SELECT id, 1, origin, reasoning, estimated_duration, plan_steps FROM new WHERE has_plan
), steps_in AS (
    INSERT INTO steps (id, task_id, plan_version, step_key, position, name, tool, parameters,
                       dependencies, expected_output, optional, actions, status, priority)
    SELECT r.id, r.task_id, 1, r.step_key, r.position, r.name, r.tool, r.parameters,
           r.dependencies, r.expected_output, r.optional, r.actions, r.status, r.priority
    FROM jsonb_to_recordset($2) AS r(id uuid, task_id uuid, step_key text, position int, name text,
         tool text, parameters jsonb, dependencies text[], expected_output text, optional boolean,
         actions jsonb, status text, priority int)
    JOIN ins ON ins.id = r.task_id
), decisions_in AS (
    INSERT INTO decisions (id, task_id, kind, task_version, input, status)
    SELECT decision_id, id, 'plan', 0, $4, 'pending' FROM new WHERE NOT has_plan
), events_in AS (
    INSERT INTO events (task_id, seq, kind, payload)
    SELECT id, 1, $5, submitted FROM new
    UNION ALL
    SELECT id, 2, $6, generated FROM new WHERE has_plan
), woken AS (
    SELECT pg_notify($7, CASE WHEN bool_and(has_plan) THEN '' ELSE $8 END)
    FROM new WHERE $9 HAVING count(*) > 0
)
SELECT (SELECT ids FROM missing) AS missing, t_in.ord,
       ins.id AS task_id, t_in.status, t_in.idempotency_key,
       (SELECT count(*) FROM woken) AS woken
FROM t_in
LEFT JOIN ins USING (id)
ORDER BY t_in.ord
"#;

/// One result row of [`INSERT`]: the task inserted, or (`task_id` None) an item whose
/// idempotency key was already used.
#[derive(sqlx::FromRow)]
pub(super) struct Row {
    missing: Vec<String>,
    ord: i32,
    task_id: Option<Uuid>,
    status: TaskStatus,
    idempotency_key: Option<String>,
}

/// The tasks already holding some idempotency keys: (task, status) by key. A separate read,
/// made only when a key was already used: the insert waited for any concurrent holder of the
/// key to commit, so this read sees it.
const BY_KEY: &str =
    "SELECT idempotency_key, id, status FROM tasks WHERE idempotency_key = ANY($1)";

pub(super) enum Inserted {
    Done(Vec<Row>),
    UnknownTools(Vec<String>),
}

/// A batch rendered as the statement's parameters. Items whose idempotency key an earlier item
/// of the batch already uses are not sent: they get that item's task.
pub(super) struct Batch {
    tasks: Value,
    steps: Value,
    tools: Vec<String>,
    /// For each input item: the index of the item sent in its place.
    sent_as: Vec<usize>,
    /// `NOTIFY` the workers in the statement.
    notify: bool,
}

impl Batch {
    pub(super) fn new(input: &[NewTask], notify: bool) -> Self {
        let mut first_with_key: HashMap<&str, usize> = HashMap::new();
        let mut sent_as = Vec::with_capacity(input.len());
        let (mut tasks, mut steps) = (Vec::new(), Vec::new());
        let mut tools = BTreeSet::new();
        for (i, t) in input.iter().enumerate() {
            if let Some(k) = t.idempotency_key.as_deref() {
                if let Some(&first) = first_with_key.get(k) {
                    sent_as.push(first);
                    continue;
                }
                first_with_key.insert(k, i);
            }
            sent_as.push(i);
            let id = Uuid::now_v7();
            if let Some(plan) = &t.plan {
                for (pos, s) in plan.steps.iter().enumerate() {
                    tools.extend(std::iter::once(&s.tool).filter(|t| !t.is_empty()).cloned());
                    tools.extend(s.actions.iter().map(|a| a.tool.clone()));
                    let status = if s.dependencies.is_empty() {
                        StepStatus::Ready
                    } else {
                        StepStatus::Blocked
                    };
                    steps.push(json!({
                        "id": Uuid::now_v7(), "task_id": id, "step_key": s.id, "position": pos,
                        "name": s.name, "tool": s.tool, "parameters": s.parameters,
                        "dependencies": s.dependencies, "expected_output": s.expected_output,
                        "optional": s.optional, "actions": s.actions, "status": status,
                        "priority": t.priority,
                    }));
                }
            }
            tasks.push(task_record(i, id, t));
        }
        Self {
            tasks: Value::Array(tasks),
            steps: Value::Array(steps),
            tools: tools.into_iter().collect(),
            sent_as,
            notify,
        }
    }

    pub(super) async fn insert(&self, pool: &sqlx::PgPool) -> Result<Inserted> {
        let rows: Vec<Row> = sqlx::query_as(INSERT)
            .bind(&self.tasks)
            .bind(&self.steps)
            .bind(&self.tools)
            .bind(serde_json::to_value(DecisionInput::default()).expect("input serializes"))
            .bind(event_kind::TASK_SUBMITTED)
            .bind(event_kind::PLAN_GENERATED)
            .bind(READY_CHANNEL)
            .bind(DECISIONS_PAYLOAD)
            .bind(self.notify)
            .fetch_all(pool)
            .await?;
        match rows.first() {
            Some(r) if !r.missing.is_empty() => Ok(Inserted::UnknownTools(r.missing.clone())),
            _ => Ok(Inserted::Done(rows)),
        }
    }

    /// One result per input item, in input order.
    pub(super) async fn results(
        &self,
        pool: &sqlx::PgPool,
        rows: &[Row],
    ) -> Result<Vec<Submitted>> {
        let used: Vec<&str> = rows
            .iter()
            .filter(|r| r.task_id.is_none())
            .filter_map(|r| r.idempotency_key.as_deref())
            .collect();
        let holders: HashMap<String, (Uuid, TaskStatus)> = if used.is_empty() {
            HashMap::new()
        } else {
            let found: Vec<(String, Uuid, TaskStatus)> =
                sqlx::query_as(BY_KEY).bind(&used).fetch_all(pool).await?;
            found.into_iter().map(|(k, id, st)| (k, (id, st))).collect()
        };
        let by_ord: HashMap<usize, &Row> = rows.iter().map(|r| (r.ord as usize, r)).collect();
        self.sent_as
            .iter()
            .enumerate()
            .map(|(i, &sent)| {
                let r = by_ord
                    .get(&sent)
                    .ok_or_else(|| StoreError::Corrupt(format!("no result for item {sent}")))?;
                let (task_id, status) = match r.task_id {
                    Some(id) => (id, r.status),
                    None => r
                        .idempotency_key
                        .as_ref()
                        .and_then(|k| holders.get(k).copied())
                        .ok_or_else(|| {
                            StoreError::Corrupt(format!(
                                "item {sent}: neither inserted nor found by key"
                            ))
                        })?,
                };
                Ok(Submitted {
                    task_id,
                    status,
                    created: r.task_id.is_some() && sent == i,
                })
            })
            .collect()
    }
}

/// The `t_in` record of one task (its first events' payloads included).
fn task_record(ord: usize, id: Uuid, t: &NewTask) -> Value {
    let l = &t.limits;
    let (status, version, events) = match &t.plan {
        Some(_) => (TaskStatus::Running, 1, 2),
        None => (TaskStatus::Pending, 0, 1),
    };
    let submitted = json!({"description": t.description, "priority": t.priority, "limits": t.limits,
                           "planned_by_brain": t.plan.is_none(), "template": t.template});
    let origin = match &t.template {
        Some(id) => format!("template:{id}"),
        None => "initial".into(),
    };
    let generated = t
        .plan
        .as_ref()
        .map(|p| json!({"version": 1, "origin": origin, "steps": p.steps.len()}));
    json!({
        "ord": ord, "id": id, "description": t.description, "metadata": t.metadata,
        "context": t.context, "priority": t.priority, "idempotency_key": t.idempotency_key,
        "status": status, "plan_version": version, "event_seq": events,
        "max_step_retries": l.max_step_retries, "max_single_step_repairs": l.max_single_step_repairs,
        "max_task_replans": l.max_task_replans, "max_consecutive_failures": l.max_consecutive_failures,
        "max_reflection_rounds": l.max_reflection_rounds, "max_concurrent_steps": l.max_concurrent_steps,
        "step_reflection": l.step_reflection, "auto_reflection": l.auto_reflection,
        "success_threshold": l.success_threshold, "max_llm_calls": l.max_llm_calls,
        "task_timeout_secs": l.task_timeout_secs, "max_llm_tokens": l.max_llm_tokens,
        "has_plan": t.plan.is_some(),
        "reasoning": t.plan.as_ref().map(|p| p.reasoning.clone()).unwrap_or_default(),
        "estimated_duration": t.plan.as_ref().and_then(|p| p.estimated_duration),
        "plan_steps": t.plan.as_ref().map(|p| serde_json::to_value(&p.steps).expect("plan serializes")),
        "decision_id": Uuid::now_v7(), "submitted": submitted, "generated": generated,
        "origin": origin,
    })
}
