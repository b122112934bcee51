//! Submit as one statement: tasks, plans, steps, plan decisions and first events of a whole
//! batch are inserted by a single `WITH … INSERT` (one statement, one commit), all or nothing.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;
use uuid::Uuid;

use super::{NewTask, Submitted};
use crate::domain::PlanSpec;
use crate::domain::decision::DecisionInput;
use crate::domain::event::{self, Event};
use crate::domain::status::{StepStatus, TaskStatus};
use crate::store::{DECISIONS_PAYLOAD, READY_CHANNEL, Result, StoreError};

const INSERT: &str = sql!("task/submit");

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
const BY_KEY: &str = "SELECT idempotency_key, id, status FROM tasks
     WHERE tenant = $2 AND idempotency_key = ANY($1)";

pub(super) enum Inserted {
    Done(Vec<Row>),
    UnknownTools(Vec<String>),
}

/// A batch rendered as the statement's parameters: one typed array per column (binary arrays
/// cost the server far less to decode than one JSON document with every key spelled out per
/// task). Items whose idempotency key an earlier item of the batch already uses are not sent:
/// they get that item's task.
pub(super) struct Batch {
    tasks: TaskColumns,
    steps: StepColumns,
    tools: Vec<String>,
    /// For each input item: the index of the item sent in its place.
    sent_as: Vec<usize>,
    /// `NOTIFY` the workers in the statement.
    notify: bool,
    /// The weight of a key no pattern of `key_limits` matches.
    default_weight: f64,
    /// The tenant of every task of the batch.
    tenant: String,
}

/// The `t_in` columns of [`INSERT`], one entry per task sent.
#[derive(Default)]
struct TaskColumns {
    /// Not sent: every task of a batch has the batch's tenant ($60).
    tenant: Vec<String>,
    ord: Vec<i32>,
    id: Vec<Uuid>,
    description: Vec<String>,
    metadata: Vec<Value>,
    context: Vec<Value>,
    priority: Vec<i32>,
    idempotency_key: Vec<Option<String>>,
    status: Vec<&'static str>,
    plan_version: Vec<i32>,
    event_seq: Vec<i64>,
    /// `max_step_retries` … `max_concurrent_steps`, in the statement's order.
    counts: [Vec<i32>; 6],
    step_reflection: Vec<bool>,
    auto_reflection: Vec<bool>,
    success_threshold: Vec<f64>,
    max_llm_calls: Vec<Option<i32>>,
    task_timeout_secs: Vec<i32>,
    max_llm_tokens: Vec<Option<i64>>,
    max_cost: Vec<Option<f64>>,
    has_plan: Vec<bool>,
    reasoning: Vec<String>,
    estimated_duration: Vec<Option<i32>>,
    plan_steps: Vec<Option<Value>>,
    decision_id: Vec<Uuid>,
    submitted: Vec<Value>,
    generated: Vec<Option<Value>>,
    origin: Vec<String>,
    run_at: Vec<Option<chrono::DateTime<chrono::Utc>>>,
    delay_secs: Vec<Option<f64>>,
    webhook_url: Vec<Option<String>>,
    /// A child task's parent and the parent's step.
    parent_task_id: Vec<Option<Uuid>>,
    parent_step_id: Vec<Option<Uuid>>,
    /// Joined by the unit separator (split in the statement).
    webhook_events: Vec<String>,
    concurrency_key: Vec<Option<String>>,
}

/// The step columns of [`INSERT`], one entry per step of every plan sent.
#[derive(Default)]
struct StepColumns {
    id: Vec<Uuid>,
    task_id: Vec<Uuid>,
    step_key: Vec<String>,
    position: Vec<i32>,
    name: Vec<String>,
    tool: Vec<String>,
    parameters: Vec<Value>,
    /// Joined by the unit separator (split in the statement).
    dependencies: Vec<String>,
    expected_output: Vec<String>,
    optional: Vec<bool>,
    actions: Vec<Value>,
    status: Vec<&'static str>,
    priority: Vec<i32>,
    /// A map step's `map`, JSON null for the others.
    map: Vec<Value>,
}

impl Batch {
    pub(super) fn new(input: &[NewTask], notify: bool, default_weight: f64) -> Self {
        let mut first_with_key: HashMap<&str, usize> = HashMap::new();
        let mut sent_as = Vec::with_capacity(input.len());
        let (mut tasks, mut steps) = (TaskColumns::default(), StepColumns::default());
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
                for s in &plan.steps {
                    tools.extend(std::iter::once(&s.tool).filter(|t| !t.is_empty()).cloned());
                    tools.extend(s.actions.iter().map(|a| a.tool.clone()));
                }
                steps.push_plan(id, t.priority, plan);
            }
            tasks.push(i, id, t);
        }
        Self {
            tasks,
            steps,
            tools: tools.into_iter().collect(),
            sent_as,
            notify,
            default_weight,
            tenant: input
                .first()
                .map_or(crate::domain::tenant::DEFAULT, |t| t.tenant.as_str())
                .to_owned(),
        }
    }

    pub(super) async fn insert<'c, E>(&self, pool: E) -> Result<Inserted>
    where
        E: sqlx::Executor<'c, Database = sqlx::Postgres>,
    {
        let (t, s) = (&self.tasks, &self.steps);
        if t.tenant.iter().any(|x| *x != self.tenant) {
            return Err(StoreError::Rejected(
                "the tasks of one batch belong to one tenant".into(),
            ));
        }
        let [retries, repairs, replans, consecutive, rounds, concurrent] = &t.counts;
        let rows: Vec<Row> = sqlx::query_as(INSERT)
            .bind(&self.tools)
            .bind(serde_json::to_value(DecisionInput::default()).expect("input serializes"))
            .bind(event::TaskSubmitted::KIND)
            .bind(event::PlanGenerated::KIND)
            .bind(READY_CHANNEL)
            .bind(DECISIONS_PAYLOAD)
            .bind(self.notify)
            .bind(&t.ord)
            .bind(&t.id)
            .bind(&t.description)
            .bind(&t.metadata)
            .bind(&t.context)
            .bind(&t.priority)
            .bind(&t.idempotency_key)
            .bind(&t.status)
            .bind(&t.plan_version)
            .bind(&t.event_seq)
            .bind(retries)
            .bind(repairs)
            .bind(replans)
            .bind(consecutive)
            .bind(rounds)
            .bind(concurrent)
            .bind(&t.step_reflection)
            .bind(&t.auto_reflection)
            .bind(&t.success_threshold)
            .bind(&t.max_llm_calls)
            .bind(&t.task_timeout_secs)
            .bind(&t.max_llm_tokens)
            .bind(&t.has_plan)
            .bind(&t.reasoning)
            .bind(&t.estimated_duration)
            .bind(&t.plan_steps)
            .bind(&t.decision_id)
            .bind(&t.submitted)
            .bind(&t.generated)
            .bind(&t.origin)
            .bind(&s.id)
            .bind(&s.task_id)
            .bind(&s.step_key)
            .bind(&s.position)
            .bind(&s.name)
            .bind(&s.tool)
            .bind(&s.parameters)
            .bind(&s.dependencies)
            .bind(&s.expected_output)
            .bind(&s.optional)
            .bind(&s.actions)
            .bind(&s.status)
            .bind(&s.priority)
            .bind(&t.run_at)
            .bind(&t.delay_secs)
            .bind(&t.webhook_url)
            .bind(&t.webhook_events)
            .bind(&s.map)
            .bind(&t.parent_task_id)
            .bind(&t.parent_step_id)
            .bind(&t.concurrency_key)
            .bind(self.default_weight)
            .bind(&self.tenant)
            .bind(&t.max_cost)
            .fetch_all(pool)
            .await?;
        match rows.first() {
            Some(r) if !r.missing.is_empty() => Ok(Inserted::UnknownTools(r.missing.clone())),
            _ => Ok(Inserted::Done(rows)),
        }
    }

    /// One result per input item, in input order.
    pub(super) async fn results<'c, E>(&self, pool: E, rows: &[Row]) -> Result<Vec<Submitted>>
    where
        E: sqlx::Executor<'c, Database = sqlx::Postgres>,
    {
        let used: Vec<&str> = rows
            .iter()
            .filter(|r| r.task_id.is_none())
            .filter_map(|r| r.idempotency_key.as_deref())
            .collect();
        let holders: HashMap<String, (Uuid, TaskStatus)> = if used.is_empty() {
            HashMap::new()
        } else {
            let found: Vec<(String, Uuid, TaskStatus)> = sqlx::query_as(BY_KEY)
                .bind(&used)
                .bind(&self.tenant)
                .fetch_all(pool)
                .await?;
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

impl TaskColumns {
    /// Task `ord` of the batch (its first events' payloads included).
    fn push(&mut self, ord: usize, id: Uuid, t: &NewTask) {
        let (status, version, events) = match &t.plan {
            Some(_) => (TaskStatus::Running, 1, 2),
            None => (TaskStatus::Pending, 0, 1),
        };
        let origin = match &t.template {
            Some(id) => format!("template:{id}"),
            None => "initial".into(),
        };
        // built here, stored by the statement ($35, $36)
        let submitted = Event::TaskSubmitted(event::TaskSubmitted {
            description: t.description.clone(),
            priority: t.priority,
            limits: t.limits,
            planned_by_brain: t.plan.is_none(),
            template: t.template.clone(),
        });
        self.submitted.push(submitted.payload());
        let generated = t
            .plan
            .as_ref()
            .map(|p| event::plan_generated(1, &origin, p.steps.len()));
        self.generated.push(generated.map(|e| e.payload()));
        self.ord.push(ord as i32);
        self.id.push(id);
        self.description.push(t.description.clone());
        self.concurrency_key.push(t.concurrency_key.clone());
        self.tenant.push(t.tenant.clone());
        self.metadata.push(t.metadata.clone());
        self.context.push(t.context.clone());
        self.priority.push(t.priority);
        self.idempotency_key.push(t.idempotency_key.clone());
        self.status.push(status.as_str());
        self.plan_version.push(version);
        self.event_seq.push(events);
        self.push_limits(&t.limits);
        self.has_plan.push(t.plan.is_some());
        let plan = t.plan.as_ref();
        self.reasoning
            .push(plan.map(|p| p.reasoning.clone()).unwrap_or_default());
        self.estimated_duration
            .push(plan.and_then(|p| p.estimated_duration));
        self.plan_steps
            .push(plan.map(|p| serde_json::to_value(&p.steps).expect("plan serializes")));
        self.decision_id.push(Uuid::now_v7());
        self.origin.push(origin);
        let (at, after) = match t.start {
            super::Start::Now => (None, None),
            super::Start::At(at) => (Some(at), None),
            super::Start::After(s) => (None, Some(s)),
        };
        self.run_at.push(at);
        self.delay_secs.push(after);
        self.webhook_url
            .push(t.webhook.as_ref().map(|w| w.url.clone()));
        self.parent_task_id.push(t.parent.map(|p| p.task_id));
        self.parent_step_id.push(t.parent.map(|p| p.step_id));
        self.webhook_events.push(
            t.webhook
                .as_ref()
                .map(|w| w.events.join("\u{1f}"))
                .unwrap_or_default(),
        );
    }

    /// A task's limits, a column each.
    fn push_limits(&mut self, l: &crate::domain::Limits) {
        let counts = [
            l.max_step_retries,
            l.max_single_step_repairs,
            l.max_task_replans,
            l.max_consecutive_failures,
            l.max_reflection_rounds,
            l.max_concurrent_steps,
        ];
        for (column, n) in self.counts.iter_mut().zip(counts) {
            column.push(n);
        }
        self.step_reflection.push(l.step_reflection);
        self.auto_reflection.push(l.auto_reflection);
        self.success_threshold.push(l.success_threshold);
        self.max_llm_calls.push(l.max_llm_calls);
        self.task_timeout_secs.push(l.task_timeout_secs);
        self.max_llm_tokens.push(l.max_llm_tokens);
        self.max_cost.push(l.max_cost);
    }
}

impl StepColumns {
    /// The steps of task `task_id`'s plan (version 1).
    fn push_plan(&mut self, task_id: Uuid, priority: i32, plan: &PlanSpec) {
        for (pos, s) in plan.steps.iter().enumerate() {
            let status = if s.dependencies.is_empty() {
                StepStatus::Ready
            } else {
                StepStatus::Blocked
            };
            self.id.push(Uuid::now_v7());
            self.task_id.push(task_id);
            self.step_key.push(s.id.clone());
            self.position.push(pos as i32);
            self.name.push(s.name.clone());
            self.tool.push(s.tool.clone());
            self.parameters.push(s.parameters.clone());
            self.dependencies.push(s.dependencies.join("\u{1f}"));
            self.expected_output.push(s.expected_output.clone());
            self.optional.push(s.optional);
            self.actions
                .push(serde_json::to_value(&s.actions).expect("actions serialize"));
            self.status.push(status.as_str());
            self.priority.push(priority);
            self.map
                .push(serde_json::to_value(&s.map).expect("map serializes"));
        }
    }
}
