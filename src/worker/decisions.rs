//! Running decisions: load the context, ask the brain with no transaction open, record the
//! LLM calls, apply the outcome (fenced); repeat while the outcome starts another decision.

use super::{Held, InFlight, WorkerConfig, with_retries};
use crate::brain;
use crate::domain::DecisionKind;
use crate::domain::decision::{DecisionOutcome, LlmCallRecord};
use crate::domain::limits::CostCheck;
use crate::store::cost::Charged;
use crate::store::decision_queue::{ClaimedDecision, Lease};
use crate::store::{Store, StoreError};
use tracing::Instrument;

/// Run a decision chain to its end outside the worker loop (tests, tools).
pub async fn run_decision_chain(store: &Store, cfg: &WorkerConfig, first: Option<ClaimedDecision>) {
    run(store, cfg, &InFlight::default(), first).await
}

/// Run a decision and whatever decisions its outcome starts, one after the other.
pub(super) async fn run(
    store: &Store,
    cfg: &WorkerConfig,
    in_flight: &InFlight,
    mut next: Option<ClaimedDecision>,
) {
    while let Some(d) = next.take() {
        in_flight
            .lock()
            .expect("in-flight lock")
            .insert(d.id, Held::Decision(d.fence()));
        let span = tracing::info_span!("decision", decision_id = %d.id, kind = %d.kind);
        let began = std::time::Instant::now();
        // boxed: a decision (brain call, then its transaction) is a large future, and most
        // steps start none; inline, every running step's task would be sized for one
        let result = Box::pin(decide_and_apply(store, cfg, &d))
            .instrument(span)
            .await;
        metrics::histogram!(crate::metrics::DECISION_SECONDS, "kind" => d.kind.as_str())
            .record(began.elapsed().as_secs_f64());
        in_flight.lock().expect("in-flight lock").remove(&d.id);
        match result {
            Ok(n) => next = n,
            Err(StoreError::Fenced) => tracing::warn!(
                decision = %d.id, kind = %d.kind,
                "decision lease was taken over; outcome discarded"
            ),
            Err(e) => tracing::error!(
                decision = %d.id, kind = %d.kind, error = %e,
                "could not apply the decision; its lease will expire and it will be retried"
            ),
        }
    }
}

/// Load the context, ask the brain (no transaction open), apply the outcome (fenced).
async fn decide_and_apply(
    store: &Store,
    cfg: &WorkerConfig,
    d: &ClaimedDecision,
) -> Result<Option<ClaimedDecision>, StoreError> {
    if d.kind == DecisionKind::Plan {
        store.start_planning(d.task_id).await?;
    }
    let ctx = store.decision_context(d, cfg.policy.max_rescues).await?;
    let skip_brain = d.rescue_count >= cfg.policy.max_rescues;
    let outcome = brain::decide(cfg.brain.as_ref(), &ctx, d.kind, skip_brain).await;
    let lease = Lease {
        worker_id: cfg.id,
        lease_secs: cfg.lease.as_secs_f64(),
    };
    let fence = d.fence();
    let calls = ctx.meter.take();
    record_metrics(&outcome, &calls);
    match with_retries(|| store.record_llm_calls(&fence, &calls)).await {
        Ok(charged) => keep_cost(store, cfg, d.task_id, &charged).await,
        Err(e) => {
            tracing::error!(decision = %d.id, error = %e, calls = calls.len(), "could not record LLM usage");
        }
    }
    with_retries(|| store.apply_decision(&fence, &outcome, &cfg.policy, lease)).await
}

/// Count what the calls cost, and keep the task's `max_cost`: a warning, or a stop (the
/// decision's outcome then finds the task ended, and changes nothing).
async fn keep_cost(store: &Store, cfg: &WorkerConfig, task: uuid::Uuid, charged: &Charged) {
    for (model, cost) in &charged.calls {
        metrics::gauge!(crate::metrics::LLM_COST, "model" => model.clone()).increment(*cost);
    }
    if let Some((_, Some(_))) = charged.task {
        keep_cost_limit(store, cfg, task).await;
    }
}

/// Warn or stop a task that spent (a fraction of) its `max_cost`.
pub(super) async fn keep_cost_limit(store: &Store, cfg: &WorkerConfig, task: uuid::Uuid) {
    let keep = || Box::pin(store.keep_cost_limit(task, cfg.cost_warn_fraction));
    match with_retries(keep).await {
        Ok(CostCheck::Stop) => tracing::info!(%task, "the task reached its max_cost: stopped"),
        Ok(_) => {}
        Err(e) => tracing::warn!(%task, error = %e, "could not keep the task's max_cost"),
    }
}

/// The recovery decision taken and the LLM calls made, as counters.
fn record_metrics(outcome: &DecisionOutcome, calls: &[LlmCallRecord]) {
    use crate::metrics::{LLM_CALLS, LLM_TOKENS, RECOVERIES};
    if let Some((tier, strategy)) = recovery_label(outcome) {
        metrics::counter!(RECOVERIES, "tier" => tier, "strategy" => strategy).increment(1);
    }
    for c in calls {
        let name = c.name.clone();
        let ok = if c.ok { "true" } else { "false" };
        metrics::counter!(LLM_CALLS, "name" => name.clone(), "ok" => ok).increment(1);
        metrics::counter!(LLM_TOKENS, "name" => name.clone(), "kind" => "prompt")
            .increment(c.usage.prompt_tokens);
        metrics::counter!(LLM_TOKENS, "name" => name, "kind" => "completion")
            .increment(c.usage.completion_tokens);
    }
}

/// Tier and strategy of a recovery decision's outcome: tier 1 the step reflection's suggested
/// action, tier 2 a repair (or its failure), tier 3 the overall reflection's strategy (or
/// `stop`). Plans, replans and evaluations are not recoveries.
fn recovery_label(outcome: &DecisionOutcome) -> Option<(&'static str, &'static str)> {
    use crate::domain::recovery::StepAction;
    match outcome {
        DecisionOutcome::StepReflection { reflection, .. } => Some((
            "1",
            match reflection.suggested_action {
                StepAction::RetryWithParams(_) => "retry_with_params",
                StepAction::RetryWithTool(_) => "retry_with_tool",
                StepAction::TriggerOverallReflection(_) => "trigger_overall_reflection",
            },
        )),
        DecisionOutcome::Repair(r) => {
            Some(("2", if r.is_ok() { "repair" } else { "repair_failed" }))
        }
        DecisionOutcome::Overall { reflection, .. } => Some((
            "3",
            match (&reflection.replanning_strategy, reflection.should_replan) {
                (Some(s), true) => s.name(),
                (None, true) => "full_replan",
                (_, false) => "stop",
            },
        )),
        _ => None,
    }
}
