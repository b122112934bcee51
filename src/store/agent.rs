//! Agent steps (the agent issue; migration `20261208000052_agent_turns.sql`): an agent step's
//! turns, each stored with the calls it asked for in one fenced transaction
//! ([`Store::record_agent_turn`]), and the wake that makes it claimable again when the last
//! of a turn's calls ends (`maps::items_ended`).
//!
//! A turn's calls are items of the agent step, as a map's are: `map_step_id` the agent step,
//! tolerant, ready at once, on the normal claim path with their own attempts and recovery.
//! The agent step waits meanwhile (`running → waiting`, the map's `Expand`: no slot, no
//! lease). A worker killed before the turn's commit leaves nothing (the turn is asked again);
//! after it, the turn's calls exist once, under keys unique per turn.

use serde_json::{Value, json};
use uuid::Uuid;

use super::cost::{charge_llm, keep_cost_in};
use super::maps::MapFence;
use super::{Result, Store, StoreError, Tx, lock_task};
use crate::domain::decision::LlmCallRecord;
use crate::domain::event::{self, Event};
use crate::domain::transitions::StepMove;

/// A stored turn.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TurnRow {
    pub turn: i32,
    /// The messages the turn added to the transcript.
    pub messages: Value,
    /// `[{"id", "tool", "parameters", "step_id", "refused"?}]`.
    pub tool_calls: Value,
    pub usage: Value,
    pub cost: Option<f64>,
    pub asked_again: bool,
    /// The turn ended the step: `{"output"}` or `{"stop", "message"}`.
    pub ended: Option<Value>,
}

/// How a call's step stands.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CallRow {
    pub step_key: String,
    pub status: String,
    pub output: Option<Value>,
    pub error: Option<Value>,
}

/// A task's LLM calls and tokens so far, and its caps on them.
#[derive(Debug, Clone, Copy, Default, sqlx::FromRow)]
pub struct LlmBudget {
    pub calls: i64,
    pub tokens: i64,
    pub max_llm_calls: Option<i32>,
    pub max_llm_tokens: Option<i64>,
}

/// A call to run as a step of the agent step.
#[derive(Debug, Clone)]
pub struct NewCall {
    /// `<agent step>.<turn>.<n>`.
    pub key: String,
    pub tool: String,
    pub parameters: Value,
    /// `{"tool_call_id", "approval"}`: what its run reads of the call.
    pub item: Value,
}

/// One answered turn, to store.
#[derive(Debug, Clone)]
pub struct NewTurn<'a> {
    pub fence: MapFence<'a>,
    pub turn: i32,
    pub messages: Value,
    pub tool_calls: Value,
    /// The calls that run (the refused ones are only in `tool_calls`).
    pub calls: Vec<NewCall>,
    /// The turn's LLM call, charged to the task.
    pub llm: LlmCallRecord,
    pub asked_again: bool,
    pub ended: Option<Value>,
}

impl Store {
    /// An agent step's turns so far, in order.
    pub async fn agent_turns(&self, step_id: Uuid) -> Result<Vec<TurnRow>> {
        Ok(sqlx::query_as(sql!("agent/turns"))
            .bind(step_id)
            .fetch_all(&self.pool)
            .await?)
    }

    /// How the agent step's calls named by `keys` stand (their live rows).
    pub async fn agent_calls(&self, step_id: Uuid, keys: &[String]) -> Result<Vec<CallRow>> {
        Ok(sqlx::query_as(sql!("agent/results"))
            .bind(step_id)
            .bind(keys)
            .fetch_all(&self.pool)
            .await?)
    }

    /// The task's LLM calls and tokens so far, against its caps.
    pub async fn llm_budget(&self, task_id: Uuid) -> Result<LlmBudget> {
        Ok(sqlx::query_as(sql!("agent/budget"))
            .bind(task_id)
            .fetch_optional(&self.pool)
            .await?
            .unwrap_or_default())
    }

    /// An agent turn's LLM call that gave no answer: its tokens were spent all the same.
    pub async fn charge_agent_llm(&self, task_id: Uuid, call: &LlmCallRecord) -> Result<()> {
        charge_llm(&self.pool, task_id, None, std::slice::from_ref(call)).await?;
        Ok(())
    }

    /// Store an answered turn, fenced on the agent step's lease (`Err(Fenced)` when it was
    /// taken over): its LLM call charged to the task (whose `max_cost` is kept in the same
    /// commit), its row, an `agent_turn_completed` event, and, when it asked for calls, the
    /// calls inserted ready as the step's items while the step goes `running → waiting`.
    /// Returns what the turn's LLM call cost (none: its model has no price).
    pub async fn record_agent_turn(
        &self,
        t: &NewTurn<'_>,
        warn_fraction: f64,
    ) -> Result<Option<f64>> {
        let f = t.fence;
        in_tx!(self.pool, |tx| {
            lock_task(tx, f.task_id).await?;
            sqlx::query(sql!("step/lock_running"))
                .bind(f.step_id)
                .bind(f.task_id)
                .bind(f.lease_token)
                .bind(false)
                .fetch_optional(&mut **tx)
                .await?
                .ok_or(StoreError::Fenced)?;
            let charged =
                charge_llm(&mut **tx, f.task_id, None, std::slice::from_ref(&t.llm)).await?;
            let cost = charged.calls.first().map(|c| c.1);
            let u = &t.llm.usage;
            let usage = json!({
                "model": t.llm.model,
                "requests": u.requests,
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens,
                "total_tokens": u.total_tokens,
                "cached_tokens": u.cached_tokens,
                "latency_ms": t.llm.latency_ms,
            });
            sqlx::query(sql!("agent/record_turn"))
                .bind(f.step_id)
                .bind(f.task_id)
                .bind(t.turn)
                .bind(&t.messages)
                .bind(&t.tool_calls)
                .bind(&usage)
                .bind(cost)
                .bind(t.asked_again)
                .bind(&t.ended)
                .execute(&mut **tx)
                .await?;
            if !t.calls.is_empty() {
                insert_calls(tx, f, &t.calls).await?;
            }
            tx.event(
                f.task_id,
                Event::AgentTurnCompleted(event::AgentTurnCompleted {
                    step_key: f.step_key.to_string(),
                    turn: t.turn,
                    tool_calls: t.calls.iter().map(|c| c.key.clone()).collect(),
                }),
            );
            if charged.task.is_some() {
                keep_cost_in(tx, f.task_id, warn_fraction).await?;
            }
            Ok(cost)
        })
    }
}

/// The agent step waits (`Expand`: its slot is free) and its calls are inserted ready.
async fn insert_calls(tx: &mut Tx, f: MapFence<'_>, calls: &[NewCall]) -> Result<()> {
    let version: Option<i32> = sqlx::query_scalar(sql!("map/expand"))
        .bind(f.step_id)
        .fetch_optional(&mut **tx)
        .await?;
    if version.is_none() {
        return Err(super::steps::illegal(StepMove::Expand, f.step_id));
    }
    tx.moved(StepMove::Expand, &[f.task_id]);
    let col = |g: fn(&NewCall) -> &Value| calls.iter().map(g).cloned().collect::<Vec<Value>>();
    sqlx::query(sql!("agent/calls"))
        .bind(f.step_id)
        .bind(calls.iter().map(|c| c.key.clone()).collect::<Vec<_>>())
        .bind(calls.iter().map(|c| c.tool.clone()).collect::<Vec<_>>())
        .bind(col(|c| &c.parameters))
        .bind(col(|c| &c.item))
        .execute(&mut **tx)
        .await?;
    tx.wake_steps();
    Ok(())
}

/// A turn as clients read it (`GET /tasks/{id}/steps/{step_id}/turns`): its calls carry their
/// steps' statuses.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TurnRead {
    pub turn: i32,
    pub messages: Value,
    pub usage: Value,
    pub cost: Option<f64>,
    pub tool_calls: Value,
}

impl Store {
    /// The turns of the task's step `step_key` (its latest plan version); `None` when the task
    /// has no such step.
    pub async fn read_turns(&self, task_id: Uuid, step_key: &str) -> Result<Option<Vec<TurnRead>>> {
        let exists: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM steps WHERE task_id = $1 AND step_key = $2)",
        )
        .bind(task_id)
        .bind(step_key)
        .fetch_one(&self.pool)
        .await?;
        if !exists {
            return Ok(None);
        }
        Ok(Some(
            sqlx::query_as(sql!("agent/read_turns"))
                .bind(task_id)
                .bind(step_key)
                .fetch_all(&self.pool)
                .await?,
        ))
    }
}
