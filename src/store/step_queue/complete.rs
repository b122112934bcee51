//! Completion cycles: every success that arrived since the last cycle recorded in one
//! transaction with a fixed number of statements (`sql/step/complete.sql`, `promote.sql`),
//! evaluations that need no model applied inline, and the next claim in the same commit.

use std::collections::HashMap;

use serde_json::{Map, Value};
use uuid::Uuid;

use super::super::apply::{Evaluated, Stage, apply_evaluations};
use super::super::cost::keep_cost_in;
use super::super::decision_queue::{ClaimedDecision, Lease};
use super::super::lifecycle::start_evaluation;
use super::super::maps;
use super::super::steps::promote_and_count;
use super::super::{NewEvent, Result, Store, StoreError, Tx};
use super::claim::{Claim, ClaimedStep, claim_in};
use super::{FailurePolicy, StepSuccess};
use crate::domain::decision::{DecisionContext, DecisionInput};
use crate::domain::event::{self, Event};
use crate::domain::limits::{CostCheck, DEFAULT_COST_WARN_FRACTION};
use crate::domain::records::{AttemptRow, StepRow, TaskRow};
use crate::domain::recovery::Evaluation;
use crate::domain::status::TaskStatus;

/// One result per item of a completion batch: the evaluation it started, if any.
pub type Completed = Result<Option<ClaimedDecision>>;

impl Store {
    /// Record a successful attempt; promote dependents whose dependencies are all done; when
    /// nothing of the plan is left, start its evaluation (returned, leased to this worker).
    /// One transaction, fenced. (The one-item case of [`Store::complete_steps`].)
    pub async fn complete_step(&self, s: &StepSuccess, lease_secs: f64) -> Completed {
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
    ) -> Result<Vec<Completed>> {
        let cycle = Cycle {
            items,
            lease_secs,
            inline: None,
            claim: None,
            cost_warn_fraction: DEFAULT_COST_WARN_FRACTION,
        };
        Ok(self.complete_and_claim(&cycle).await?.completed)
    }
}

/// The items of a batch whose lease held, with their rows.
type DoneItems<'a> = Vec<(&'a StepSuccess, &'a DoneStep)>;

/// Status, plan version and consecutive failures of each locked task of a batch.
type TaskState = HashMap<Uuid, (TaskStatus, i32, i32)>;

/// A pure evaluation applied inside the completion that finishes a plan (the rules brain's),
/// instead of an evaluation decision going through the decision queue.
#[derive(Clone, Copy)]
pub struct InlineEvaluation {
    pub evaluate: fn(&DecisionContext) -> Evaluation,
    pub policy: FailurePolicy,
}

/// What a worker's completion cycle records and claims in one transaction.
pub struct Cycle<'a> {
    pub items: &'a [StepSuccess],
    pub lease_secs: f64,
    pub inline: Option<InlineEvaluation>,
    /// Claim up to `limit` ready steps after the completions, less one per evaluation or
    /// reflection the batch started (those keep their worker's permit).
    pub claim: Option<Claim>,
    /// `[limits] cost_warn_fraction`: a task whose tool reported a cost is warned past this
    /// fraction of its `max_cost`, and stopped at it, in this transaction.
    pub cost_warn_fraction: f64,
}

/// What a cycle did: one result per item, and the steps it claimed.
pub struct CycleDone {
    pub completed: Vec<Completed>,
    pub claimed: Vec<ClaimedStep>,
}

impl Store {
    /// Record completions and claim the next steps in one transaction (one commit): see
    /// [`Store::complete_steps`] for the completions and [`Store::claim_steps`] for the claim.
    pub async fn complete_and_claim(&self, c: &Cycle<'_>) -> Result<CycleDone> {
        in_tx!(hot self, |tx| {
            let (completed, any_ready) = complete_batch(tx, c).await?;
            // the claim reads the claim queue and writes its own `step_started` events: the
            // completions' chores go first
            tx.sync_now().await?;
            let started = completed
                .iter()
                .filter(|r| matches!(r, Ok(Some(_))))
                .count() as i64;
            let claimed = match &c.claim {
                Some(claim) if claim.limit > started => {
                    let mut claimed = Vec::new();
                    // a second round takes tasks the first skipped (locked by another
                    // transaction when it looked): no extra commit for them
                    for _ in 0..2 {
                        let round = Claim {
                            limit: claim.limit - started - claimed.len() as i64,
                            ..claim.clone()
                        };
                        let got = claim_in(tx, &round, false, &self.lanes, self.claim_caps).await?;
                        let short = got.is_empty() || (got.len() as i64) == round.limit;
                        claimed.extend(got);
                        if short {
                            break;
                        }
                    }
                    claimed
                }
                _ => vec![],
            };
            // wake the fleet for ready steps this transaction did not take: there are none
            // left it could claim when it claimed fewer than it asked for
            let nothing_left = c
                .claim
                .as_ref()
                .is_some_and(|cl| claimed.len() < cl.limit as usize);
            if any_ready && !nothing_left {
                tx.wake_steps();
            }
            Ok(CycleDone { completed, claimed })
        })
    }
}

/// The batch's results, and whether any of its tasks has ready steps now (promoted, or room
/// freed under a concurrency cap).
async fn complete_batch(tx: &mut Tx, c: &Cycle<'_>) -> Result<(Vec<Completed>, bool)> {
    let items = c.items;
    let task_state = lock_batch_tasks(tx, items).await?;
    let successes: Vec<Success<'_>> = items
        .iter()
        .map(|s| Success {
            step_id: s.fence.step_id,
            task_id: s.fence.task_id,
            lease_token: s.fence.lease_token,
            output: &s.output,
            tool: &s.tool,
            parameters: &s.parameters,
            worker_id: s.worker_id,
            cost: s.cost,
            call_key: s.idempotency_key.as_deref(),
        })
        .collect();
    let done = complete_running(tx, &successes).await?;
    let done_by_id: HashMap<Uuid, &DoneStep> = done.iter().map(|d| (d.id, d)).collect();
    let done_items: DoneItems<'_> = items
        .iter()
        .filter_map(|s| done_by_id.get(&s.fence.step_id).map(|d| (s, *d)))
        .collect();
    if done_items.is_empty() {
        return Ok((
            items.iter().map(|_| Err(StoreError::Fenced)).collect(),
            false,
        ));
    }
    let events: Vec<NewEvent> = done_items
        .iter()
        .map(|(s, d)| {
            NewEvent::new(
                d.task_id,
                Event::StepCompleted(event::StepCompleted {
                    step_key: d.step_key.clone(),
                    attempt: d.attempts,
                    tool: s.tool.clone(),
                    promoted: vec![],
                }),
            )
        })
        .collect();
    tx.events(events);
    let task_state = keep_cost_limits(tx, c, &done_items, task_state).await?;
    let (decisions, any_ready) = advance_tasks(tx, c, &done_items, &task_state).await?;
    Ok((batch_results(items, &done_by_id, decisions), any_ready))
}

/// Lock the batch's tasks in id order (concurrent batches cannot deadlock).
async fn lock_batch_tasks(tx: &mut Tx, items: &[StepSuccess]) -> Result<TaskState> {
    let mut task_ids: Vec<Uuid> = items.iter().map(|s| s.fence.task_id).collect();
    task_ids.sort();
    task_ids.dedup();
    let tasks: Vec<(Uuid, TaskStatus, i32, i32)> = sqlx::query_as(sql!("step/lock_batch_tasks"))
        .bind(&task_ids)
        .fetch_all(&mut **tx)
        .await?;
    Ok(tasks
        .into_iter()
        .map(|(id, st, v, f)| (id, (st, v, f)))
        .collect())
}

/// Keep the `max_cost` of every task a tool's reported cost was charged to, before anything
/// is promoted: a task stopped at its limit promotes nothing more (its state now says so).
/// Tasks nothing was charged to cost no statement.
async fn keep_cost_limits(
    tx: &mut Tx,
    c: &Cycle<'_>,
    done: &DoneItems<'_>,
    mut task_state: TaskState,
) -> Result<TaskState> {
    let mut paid: Vec<Uuid> = done
        .iter()
        .filter(|(s, _)| s.cost.is_some_and(|c| c > 0.0))
        .map(|(_, d)| d.task_id)
        .collect();
    paid.sort();
    paid.dedup();
    for task_id in paid {
        if keep_cost_in(tx, task_id, c.cost_warn_fraction).await? == CostCheck::Stop
            && let Some(state) = task_state.get_mut(&task_id)
        {
            state.0 = TaskStatus::Failed;
        }
    }
    Ok(task_state)
}

/// Output params to merge into each task's runtime metadata.
type OutputParams = HashMap<Uuid, Map<String, Value>>;

/// Tasks still running the plan version their completed steps belong to, with the output
/// params to merge. Steps of a replaced plan, or of a task that stopped running, only record
/// their result.
fn active_tasks(done: &DoneItems<'_>, task_state: &TaskState) -> (Vec<(Uuid, i32)>, OutputParams) {
    let mut active: Vec<(Uuid, i32)> = Vec::new();
    let mut params: OutputParams = HashMap::new();
    for (s, d) in done {
        let Some((status, version, _)) = task_state.get(&d.task_id) else {
            continue;
        };
        if *status == TaskStatus::Running && *version == d.plan_version {
            if !active.iter().any(|(t, _)| *t == d.task_id) {
                active.push((d.task_id, d.plan_version));
            }
            params
                .entry(d.task_id)
                .or_default()
                .extend(s.output_params.clone());
        }
    }
    (active, params)
}

/// Running tasks of the batch whose completed steps belong to an older plan version (a repair
/// moved on while they ran): their room grew, though nothing of theirs is promoted.
fn stale_version_tasks(done: &DoneItems<'_>, task_state: &TaskState) -> Vec<Uuid> {
    let mut out: Vec<Uuid> = Vec::new();
    for (_, d) in done {
        if let Some((TaskStatus::Running, version, _)) = task_state.get(&d.task_id)
            && *version != d.plan_version
            && !out.contains(&d.task_id)
        {
            out.push(d.task_id);
        }
    }
    out
}

/// Reset consecutive failures and merge output params into runtime metadata, for the tasks
/// where either changes anything (no write to a task row a success leaves as it was).
async fn update_task_rows(
    tx: &mut Tx,
    active: &[(Uuid, i32)],
    task_state: &TaskState,
    mut params: OutputParams,
) -> Result<()> {
    let (mut ids, mut merged) = (Vec::new(), Vec::new());
    for (t, _) in active {
        let p = params.remove(t).unwrap_or_default();
        let failures = task_state.get(t).map(|s| s.2).unwrap_or(0);
        if failures != 0 || !p.is_empty() {
            ids.push(*t);
            merged.push(Value::Object(p));
        }
    }
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query(sql!("task/merge_successes"))
        .bind(&ids)
        .bind(&merged)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// For the active tasks of a batch: update their rows, promote unblocked steps, and evaluate
/// every task whose plan is done — inline when the evaluation is pure, else through an
/// evaluation decision leased to the worker that finished it.
async fn advance_tasks(
    tx: &mut Tx,
    c: &Cycle<'_>,
    done: &DoneItems<'_>,
    task_state: &TaskState,
) -> Result<(HashMap<Uuid, ClaimedDecision>, bool)> {
    let (active, params) = active_tasks(done, task_state);
    let mut decisions = HashMap::new();
    // a running task whose finished step belonged to an older plan version has room again too
    let mut resync: Vec<Uuid> = stale_version_tasks(done, task_state);
    if active.is_empty() {
        tx.touch(&resync);
        return Ok((decisions, false));
    }
    update_task_rows(tx, &active, task_state, params).await?;
    // items move their maps on (the next released, a finished map joined) before promotion,
    // so a joined map step's dependents are promoted with the rest
    let items: Vec<Uuid> = done
        .iter()
        .filter(|(_, d)| d.map_step_id.is_some() && active.iter().any(|(t, _)| *t == d.task_id))
        .map(|(_, d)| d.id)
        .collect();
    if !items.is_empty() {
        resync.extend(maps::items_ended(tx, &items).await?);
    }
    let ids: Vec<Uuid> = active.iter().map(|(t, _)| *t).collect();
    let versions: Vec<i32> = active.iter().map(|(_, v)| *v).collect();
    let mut any_ready = false;
    let mut finished = Vec::new();
    for p in promote_and_count(tx, &ids, &versions).await? {
        note_promoted(tx.pending_events(), p.task_id, &p.promoted);
        any_ready |= p.ready;
        if p.ready {
            // room freed, or steps promoted: the task's next ready steps become claimable
            resync.push(p.task_id);
        }
        if !p.open {
            finished.push(p.task_id);
        }
    }
    tx.touch(&resync);
    match &c.inline {
        _ if finished.is_empty() => {}
        None => {
            for task_id in &finished {
                let lease = finisher_lease(done, *task_id, c.lease_secs);
                if let Some(d) = start_evaluation(tx, *task_id, Some(lease)).await? {
                    decisions.insert(*task_id, d);
                }
            }
        }
        Some(inline) => {
            for (task_id, d) in evaluate_inline(tx, inline, &finished, c.lease_secs, done).await? {
                decisions.insert(task_id, d);
            }
        }
    }
    Ok((decisions, any_ready))
}

/// The lease a finished task's evaluation is taken or applied under: the worker that
/// completed its last step in this batch runs it.
fn finisher_lease(done: &DoneItems<'_>, task_id: Uuid, lease_secs: f64) -> Lease {
    let worker_id = done
        .iter()
        .rev()
        .find(|(_, d)| d.task_id == task_id)
        .map(|(s, _)| s.worker_id)
        .expect("a finished task has a completed step");
    Lease {
        worker_id,
        lease_secs,
    }
}

/// Read the finished tasks, evaluate each with the pure evaluation and apply the outcomes as
/// the evaluation decisions would have been (same rows, same events), set-based: a task that
/// passes goes `running → succeeded` with its final score in one write of its row
/// ([`crate::domain::transitions::TaskMove::SucceedAtOnce`]); the others rest in `evaluating` on their way on. Five
/// statements for the whole batch when every task succeeds.
async fn evaluate_inline(
    tx: &mut Tx,
    inline: &InlineEvaluation,
    finished: &[Uuid],
    lease_secs: f64,
    done: &DoneItems<'_>,
) -> Result<Vec<(Uuid, ClaimedDecision)>> {
    let tasks = read_tasks(tx, finished).await?;
    let mut steps = live_steps_of(tx, &tasks).await?;
    let mut attempts = attempts_of(tx, &tasks).await?;
    let mut evaluated = Vec::with_capacity(tasks.len());
    for task in &tasks {
        let ctx = DecisionContext {
            steps: steps.remove(&task.id).unwrap_or_default(),
            step: None,
            attempts: attempts.remove(&task.id).unwrap_or_default(),
            tools: HashMap::new(),
            counters: task.counters(None, inline.policy.max_rescues),
            input: DecisionInput::default(),
            llm_calls_used: 0,
            llm_tokens_used: 0,
            meter: Default::default(),
            evidence: HashMap::new(),
            templates: vec![],
            repaired_versions: vec![],
            task: task.clone(),
        };
        let lease = finisher_lease(done, task.id, lease_secs);
        evaluated.push(((inline.evaluate)(&ctx), lease));
    }
    let items: Vec<Evaluated<'_>> = tasks
        .iter()
        .zip(&evaluated)
        .map(|(task, (evaluation, lease))| Evaluated {
            task,
            evaluation,
            raw: None,
            lease: *lease,
        })
        .collect();
    apply_evaluations(tx, &items, &inline.policy, Stage::Running).await
}

/// The rows of tasks this transaction holds locked (by primary key).
async fn read_tasks(tx: &mut Tx, task_ids: &[Uuid]) -> Result<Vec<TaskRow>> {
    Ok(sqlx::query_as(sql!("step/tasks_of_finished"))
        .bind(task_ids)
        .fetch_all(&mut **tx)
        .await?)
}

/// Live steps of each task's current plan version, by task, in plan order.
async fn live_steps_of(tx: &mut Tx, tasks: &[TaskRow]) -> Result<HashMap<Uuid, Vec<StepRow>>> {
    let rows: Vec<StepRow> = sqlx::query_as(sql!("step/live_steps_of_finished"))
        .bind(tasks.iter().map(|t| t.id).collect::<Vec<_>>())
        .bind(tasks.iter().map(|t| t.plan_version).collect::<Vec<_>>())
        .fetch_all(&mut **tx)
        .await?;
    let mut by_task: HashMap<Uuid, Vec<StepRow>> = HashMap::new();
    for r in rows {
        by_task.entry(r.task_id).or_default().push(r);
    }
    Ok(by_task)
}

/// Every attempt of each task, by task, in order. One index probe per task (a lateral join
/// over the ids): a plain `task_id = ANY($1)` got a generic plan made while the table was
/// empty, a sequential scan kept for the session's life while the history grew (6.5 ms a call
/// at 100,000 attempts, against 0.2 ms).
async fn attempts_of(tx: &mut Tx, tasks: &[TaskRow]) -> Result<HashMap<Uuid, Vec<AttemptRow>>> {
    let rows: Vec<(Uuid, AttemptRow)> = {
        use sqlx::{FromRow, Row};
        let raw = sqlx::query(sql!("step/attempts_of_finished"))
            .bind(tasks.iter().map(|t| t.id).collect::<Vec<_>>())
            .fetch_all(&mut **tx)
            .await?;
        raw.iter()
            .map(|r| Ok((r.try_get("task_id")?, AttemptRow::from_row(r)?)))
            .collect::<std::result::Result<_, sqlx::Error>>()?
    };
    let mut by_task: HashMap<Uuid, Vec<AttemptRow>> = HashMap::new();
    for (t, a) in rows {
        by_task.entry(t).or_default().push(a);
    }
    Ok(by_task)
}

/// Add a task's promoted steps to the `promoted` list of its last `step_completed` event.
fn note_promoted(events: &mut [NewEvent], task_id: Uuid, promoted: &[String]) {
    if promoted.is_empty() {
        return;
    }
    let last = events.iter_mut().rev().find_map(|e| match &mut e.event {
        Event::StepCompleted(c) if e.task_id == task_id => Some(c),
        _ => None,
    });
    if let Some(c) = last {
        c.promoted = promoted.to_vec();
    }
}

/// One result per item; a task's evaluation goes to the last of its items in the batch.
fn batch_results(
    items: &[StepSuccess],
    done_by_id: &HashMap<Uuid, &DoneStep>,
    mut decisions: HashMap<Uuid, ClaimedDecision>,
) -> Vec<Completed> {
    let mut out: Vec<Completed> = Vec::with_capacity(items.len());
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
    out
}

/// A step a completion batch marked succeeded.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct DoneStep {
    pub id: Uuid,
    pub task_id: Uuid,
    pub step_key: String,
    pub plan_version: i32,
    pub attempts: i32,
    /// An item's map step.
    pub map_step_id: Option<Uuid>,
}

/// One fenced success: (step, task, lease token, output), and what its attempt records.
pub(crate) struct Success<'a> {
    pub step_id: Uuid,
    pub task_id: Uuid,
    pub lease_token: i64,
    pub output: &'a Value,
    pub tool: &'a str,
    pub parameters: &'a Value,
    pub worker_id: Uuid,
    pub cost: Option<f64>,
    pub call_key: Option<&'a str>,
}

/// `running → succeeded` for every item whose lease still holds, with its attempt row (one
/// statement); a taken-over lease is simply not matched.
pub(crate) async fn complete_running(tx: &mut Tx, items: &[Success<'_>]) -> Result<Vec<DoneStep>> {
    Ok(sqlx::query_as(sql!("step/complete"))
        .bind(items.iter().map(|i| i.step_id).collect::<Vec<_>>())
        .bind(items.iter().map(|i| i.task_id).collect::<Vec<_>>())
        .bind(items.iter().map(|i| i.lease_token).collect::<Vec<_>>())
        .bind(items.iter().map(|i| i.output.clone()).collect::<Vec<_>>())
        .bind(items.iter().map(|i| i.tool).collect::<Vec<_>>())
        .bind(
            items
                .iter()
                .map(|i| i.parameters.clone())
                .collect::<Vec<_>>(),
        )
        .bind(items.iter().map(|i| i.worker_id).collect::<Vec<_>>())
        .bind(items.iter().map(|i| i.cost).collect::<Vec<_>>())
        .bind(items.iter().map(|i| i.call_key).collect::<Vec<_>>())
        .fetch_all(&mut **tx)
        .await?)
}
