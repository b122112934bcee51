//! Cost in money: the price map (`model_prices`), the LLM calls priced as they are written,
//! tools' reported costs, and a task's `max_cost` (a warning once, then a stop).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::lifecycle::fail_task;
use super::steps::fence_running_steps;
use super::{NewEvent, Result, Store, Tx, lock_task};
use crate::domain::ToolFailure;
use crate::domain::decision::LlmCallRecord;
use crate::domain::event::{self, Event, TaskError};
use crate::domain::limits::{CostCheck, check_cost, warns};
use crate::store::decision_queue::DecisionFence;

/// Error category and task error code of a task stopped at its `max_cost`.
pub const COST_LIMIT_EXCEEDED: &str = "cost_limit_exceeded";

/// One model's prices per million tokens, valid from a time.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ModelPrice {
    pub model: String,
    pub valid_from: DateTime<Utc>,
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// None: cached input tokens cost the input price.
    pub cached_input_per_mtok: Option<f64>,
    pub updated_at: DateTime<Utc>,
}

/// A price to set: `valid_from` none is now (the database's clock).
#[derive(Debug, Clone, PartialEq)]
pub struct NewPrice {
    pub model: String,
    pub valid_from: Option<DateTime<Utc>>,
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    pub cached_input_per_mtok: Option<f64>,
}

/// What recording a decision's LLM calls charged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Charged {
    /// Each priced call's model and cost.
    pub calls: Vec<(String, f64)>,
    /// The task's cost after, and its cap (none when nothing was priced).
    pub task: Option<(f64, Option<f64>)>,
}

#[derive(sqlx::FromRow)]
struct ChargedRow {
    model: String,
    cost: Option<f64>,
    task_cost: Option<f64>,
    max_cost: Option<f64>,
}

impl Store {
    /// Set a model's price from `valid_from` on (insert or replace that row).
    pub async fn put_price(&self, p: &NewPrice) -> Result<ModelPrice> {
        Ok(sqlx::query_as(sql!("cost/put_price"))
            .bind(&p.model)
            .bind(p.valid_from)
            .bind(p.input_per_mtok)
            .bind(p.output_per_mtok)
            .bind(p.cached_input_per_mtok)
            .fetch_one(&self.pool)
            .await?)
    }

    /// The price map: every model's prices, by model, then newest first.
    pub async fn prices(&self) -> Result<Vec<ModelPrice>> {
        Ok(sqlx::query_as(
            "SELECT model, valid_from, input_per_mtok::float8, output_per_mtok::float8,
                    cached_input_per_mtok::float8, updated_at
             FROM model_prices ORDER BY model, valid_from DESC",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Record the LLM calls made for a decision (their tokens were spent whether or not the
    /// outcome is applied), before the outcome is applied, in one statement: each is priced
    /// from its model's price valid now, and the priced ones are added to the task's cost.
    pub async fn record_llm_calls(
        &self,
        d: &DecisionFence,
        calls: &[LlmCallRecord],
    ) -> Result<Charged> {
        charge_llm(&self.pool, d.task_id, Some(d.id), calls).await
    }

    /// Keep a task's `max_cost`: past `warn_fraction` of it a `cost_warning` event (once, and
    /// always before a stop); at it, the task stops: its running steps fail with a
    /// `cost_limit_exceeded` attempt (their leases move on: a late result is fenced), open
    /// steps are skipped, and it ends `failed` with `error.code` `cost_limit_exceeded`. A task
    /// that has ended is left as it is.
    pub async fn keep_cost_limit(&self, task_id: Uuid, warn_fraction: f64) -> Result<CostCheck> {
        in_tx!(self.pool, |tx| {
            let check = keep_cost_in(tx, task_id, warn_fraction).await?;
            Ok(check)
        })
    }
}

/// Record LLM calls of a task (of decision `decision_id`, or none: an agent step's turn) in
/// one statement, each priced from its model's price valid now, the priced ones added to the
/// task's cost.
pub(crate) async fn charge_llm<'c, E>(
    conn: E,
    task_id: Uuid,
    decision_id: Option<Uuid>,
    calls: &[LlmCallRecord],
) -> Result<Charged>
where
    E: sqlx::Executor<'c, Database = sqlx::Postgres>,
{
    if calls.is_empty() {
        return Ok(Charged::default());
    }
    let col = |f: fn(&LlmCallRecord) -> i64| calls.iter().map(f).collect::<Vec<i64>>();
    let rows: Vec<ChargedRow> = sqlx::query_as(sql!("cost/charge_llm"))
        .bind(task_id)
        .bind(decision_id)
        .bind(calls.iter().map(|c| c.name.clone()).collect::<Vec<_>>())
        .bind(calls.iter().map(|c| c.model.clone()).collect::<Vec<_>>())
        .bind(calls.iter().map(|c| c.ok).collect::<Vec<_>>())
        .bind(calls.iter().map(|c| c.error.clone()).collect::<Vec<_>>())
        .bind(col(|c| c.usage.requests as i64))
        .bind(col(|c| c.usage.prompt_tokens as i64))
        .bind(col(|c| c.usage.completion_tokens as i64))
        .bind(col(|c| c.usage.total_tokens as i64))
        .bind(col(|c| c.latency_ms))
        .bind(calls.iter().map(|c| c.exchange.clone()).collect::<Vec<_>>())
        .bind(col(|c| c.usage.cached_tokens as i64))
        .fetch_all(conn)
        .await?;
    let task = rows
        .first()
        .and_then(|r| r.task_cost.map(|c| (c, r.max_cost)));
    Ok(Charged {
        calls: rows
            .into_iter()
            .filter_map(|r| r.cost.map(|c| (r.model, c)))
            .collect(),
        task,
    })
}

/// [`Store::keep_cost_limit`] inside a transaction, its events added to `events`: a
/// completion that charged a tool's cost keeps the limit in its own commit, so no step is
/// promoted past it.
pub(crate) async fn keep_cost_in(
    tx: &mut Tx,
    task_id: Uuid,
    warn_fraction: f64,
) -> Result<CostCheck> {
    let task = lock_task(tx, task_id).await?;
    if task.status.is_terminal() {
        return Ok(CostCheck::Within);
    }
    let warned: bool =
        sqlx::query_scalar("SELECT cost_warned_at IS NOT NULL FROM tasks WHERE id = $1")
            .bind(task_id)
            .fetch_one(&mut **tx)
            .await?;
    let check = check_cost(task.cost, task.max_cost, warned, warn_fraction);
    let max_cost = task.max_cost.unwrap_or_default();
    if warns(check, warned) {
        sqlx::query(sql!("cost/warn"))
            .bind(task_id)
            .execute(&mut **tx)
            .await?;
        tx.push(NewEvent::new(
            task_id,
            Event::CostWarning(event::CostWarning {
                cost: task.cost,
                max_cost,
                fraction: warn_fraction,
            }),
        ));
    }
    if check == CostCheck::Stop {
        let failure = ToolFailure::new(
            COST_LIMIT_EXCEEDED,
            "the task reached its max_cost while this attempt ran",
            false,
        );
        let step_error = serde_json::to_value(&failure).expect("a failure serializes");
        let fenced = fence_running_steps(tx, task_id, &step_error, COST_LIMIT_EXCEEDED).await?;
        let error = TaskError {
            code: Some(COST_LIMIT_EXCEEDED.into()),
            message: Some(format!(
                "the task's cost ({:.6}) reached its max_cost ({max_cost})",
                task.cost
            )),
            fenced_steps: Some(fenced),
            ..Default::default()
        };
        fail_task(tx, task_id, error).await?;
    }
    Ok(check)
}
