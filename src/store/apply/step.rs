//! Step-level outcomes: the step reflection (tier 1 retry, or on to a repair or the task's
//! reflection) and the single-step repair (tier 2).

use serde_json::Value;

use super::{Applying, Reflected, category, insert_reflection, keep_backing_off};
use crate::domain::decision::{Answer, DecisionInput};
use crate::domain::event::{self, Event};
use crate::domain::model::{PlanSpec, StepSpec};
use crate::domain::records::StepRow;
use crate::domain::recovery::{
    self, AfterStepReflection, Carry, RecoveryAction, StepReflection, Trigger,
};
use crate::domain::status::DecisionKind;
use crate::store::circuits::retry_context;
use crate::store::decision_queue::{ClaimedDecision, create_decision};
use crate::store::lifecycle::{record_recovery, start_overall};
use crate::store::maps;
use crate::store::plans::{insert_steps_for_version, live_steps, next_version};
use crate::store::steps::{rerun_failed, supersede_step};
use crate::store::{NewEvent, Result, Tx, known_tools};

pub(super) async fn apply_step_reflection(
    tx: &mut Tx,
    c: &Applying<'_>,
    step: &StepRow,
    r: Reflected<'_, StepReflection>,
) -> Result<Option<ClaimedDecision>> {
    let (task, input, policy, lease) = (c.task, c.input, c.policy, c.lease);
    insert_reflection(tx, task, "step", Some(step), &r).await?;
    let Reflected {
        body: r, fallback, ..
    } = r;
    tx.push(NewEvent::new(
        task.id,
        Event::StepReflected(event::StepReflected {
            step_key: step.step_key.clone(),
            root_cause_category: r.root_cause_category.clone(),
            is_recoverable: r.is_recoverable,
            suggested_action: r.suggested_action.clone(),
            fallback,
        }),
    ));
    let known = known_tools(tx, task.id).await?;
    let counters = task.counters(Some(step), policy.max_rescues);
    let category = Some(r.root_cause_category.as_str());
    let tool = step.effective_tool();
    let retry = retry_context(tx, task.id, &step.step_key, tool, policy, false).await?;
    let failure = input.failure.as_ref();
    let tier1 = (&retry.policy, &retry.streak, failure);
    match recovery::after_step_reflection(&counters, r, |t| known.contains(t), tier1) {
        AfterStepReflection::RetryWithParams { params, delay_ms } => {
            let params = serde_json::to_value(&params).expect("params");
            let guard = retry.lend_guard();
            // parameters that broke the tool's schema, fixed before any call
            let retry = match failure.is_some_and(|f| !f.schema_violations.is_empty()) {
                true => Retry::Schema(params),
                false => Retry::Params(params),
            };
            let next = retry_step(tx, c, step, retry, delay_ms, category).await?;
            if delay_ms > 0 {
                // a map's item waits its backoff out: the map's next item may go meanwhile
                maps::lend(tx, step.id, guard).await?;
            }
            Ok(next)
        }
        AfterStepReflection::RetryWithTool { tool, delay_ms } => {
            retry_step(tx, c, step, Retry::Tool(tool), delay_ms, category).await
        }
        AfterStepReflection::Repair => {
            let next = DecisionInput {
                step_reflection: Some(r.clone()),
                ..input.clone()
            };
            let kind = DecisionKind::StepRepair;
            create_decision(tx, task.id, kind, Some(step.id), &next, Some(lease)).await
        }
        AfterStepReflection::OverallReflection { .. } if tolerated(step) => {
            give_up(tx, c, step).await
        }
        AfterStepReflection::OverallReflection { summary } => {
            let next = DecisionInput {
                trigger: Some(Trigger::StepFailure),
                step_reflection: Some(r.clone()),
                summary: Some(summary),
                ..input.clone()
            };
            start_overall(tx, task.id, Some(step.id), next, lease).await
        }
    }
}

/// An item of a map with `on_item_failure: continue`: past its retries and repair it is given
/// up (its map goes on) instead of escalating to the task's reflection.
fn tolerated(step: &StepRow) -> bool {
    step.is_item() && step.optional
}

async fn give_up(tx: &mut Tx, c: &Applying<'_>, step: &StepRow) -> Result<Option<ClaimedDecision>> {
    let (task, version) = (c.task.id, step.plan_version);
    crate::store::maps::give_up(tx, task, version, step.id, Some(c.lease)).await
}

/// What a tier 1 retry changes.
enum Retry {
    Params(Value),
    /// Parameters repaired from the tool's `input_schema`.
    Schema(Value),
    Tool(String),
}

/// Tier 1: the same step row runs again (overrides merged) after a backoff; logged and
/// announced (`retry_scheduled`).
async fn retry_step(
    tx: &mut Tx,
    c: &Applying<'_>,
    step: &StepRow,
    retry: Retry,
    delay_ms: u64,
    category: Option<&str>,
) -> Result<Option<ClaimedDecision>> {
    let (action, params, tool) = match retry {
        Retry::Params(p) => (RecoveryAction::RetryWithParams, Some(p), None),
        Retry::Schema(p) => (RecoveryAction::SchemaRepair, Some(p), None),
        Retry::Tool(t) => (RecoveryAction::RetryWithTool, None, Some(t)),
    };
    rerun_failed(
        tx,
        (step.task_id, step.id),
        params.clone(),
        tool.as_deref(),
        delay_ms,
    )
    .await?;
    tx.wake_steps();
    record_recovery(tx, c.input.attempt_id, action, category).await?;
    tx.push(NewEvent::new(
        c.task.id,
        Event::RetryScheduled(event::RetryScheduled {
            step_key: step.step_key.clone(),
            next_attempt: step.attempts + 1,
            delay_ms,
            tier: 1,
            adjusted_parameters: params,
            alternative_tool: tool,
        }),
    ));
    Ok(None)
}

pub(super) async fn apply_repair(
    tx: &mut Tx,
    c: &Applying<'_>,
    step: &StepRow,
    answer: &Result<Answer<StepSpec>, String>,
) -> Result<Option<ClaimedDecision>> {
    let (task, input, lease) = (c.task, c.input, c.lease);
    sqlx::query(sql!("task/count_repair"))
        .bind(task.id)
        .execute(&mut **tx)
        .await?;
    let category = category(input);
    let checked = match answer {
        Ok(a) => check_repair(tx, c, step, &a.value).await?,
        Err(e) => Err(e.clone()),
    };
    match checked {
        Ok((spec, plan)) => {
            supersede_step(tx, (step.task_id, step.id)).await?;
            let version = next_version(tx, task, &plan, "repair").await?;
            let one = PlanSpec {
                steps: vec![spec.clone()],
                reasoning: String::new(),
                estimated_duration: None,
            };
            let at = step.position;
            insert_steps_for_version(tx, task, version, &one, &Carry::default(), at).await?;
            if step.is_item() {
                // the repaired item stays its map's item, with its item
                sqlx::query(sql!("map/repaired_item"))
                    .bind(step.id)
                    .bind(version)
                    .execute(&mut **tx)
                    .await?;
            }
            keep_backing_off(tx, c, version).await?;
            record_recovery(tx, input.attempt_id, RecoveryAction::Repair, category).await?;
            tx.push(NewEvent::new(
                task.id,
                Event::StepRepaired(event::StepRepaired {
                    step_key: step.step_key.clone(),
                    ok: true,
                    old_tool: Some(step.effective_tool().to_string()),
                    new_tool: Some(spec.tool.clone()),
                    new_step: Some(spec.clone()),
                    plan_version: Some(version),
                    reason: None,
                }),
            ));
            tx.push(NewEvent::new(
                task.id,
                event::plan_generated(version, "repair", plan.steps.len()),
            ));
            tx.wake_steps();
            Ok(None)
        }
        Err(reason) => {
            record_recovery(tx, input.attempt_id, RecoveryAction::RepairFailed, category).await?;
            tx.push(NewEvent::new(
                task.id,
                Event::StepRepaired(event::StepRepaired {
                    step_key: step.step_key.clone(),
                    ok: false,
                    old_tool: None,
                    new_tool: None,
                    new_step: None,
                    plan_version: None,
                    reason: Some(reason.clone()),
                }),
            ));
            if tolerated(step) {
                return give_up(tx, c, step).await;
            }
            let next = DecisionInput {
                trigger: Some(Trigger::StepFailure),
                summary: Some(format!("single-step repair failed: {reason}")),
                ..input.clone()
            };
            start_overall(tx, task.id, Some(step.id), next, lease).await
        }
    }
}

/// A repaired step must keep its id and leave a valid plan; the repaired step and the whole
/// plan it leaves.
async fn check_repair(
    tx: &mut Tx,
    c: &Applying<'_>,
    step: &StepRow,
    spec: &StepSpec,
) -> Result<Result<(StepSpec, PlanSpec), String>> {
    if spec.id != step.step_key {
        return Ok(Err(format!(
            "the repaired step is {:?}, not {:?}",
            spec.id, step.step_key
        )));
    }
    let live = live_steps(&mut **tx, c.task.id, c.task.plan_version).await?;
    let known = known_tools(tx, c.task.id).await?;
    if step.is_item() {
        // an item is not a step of the plan (its parameters read `${item}`): the plan stays
        // as it is, and only the item changes
        let plan = PlanSpec {
            steps: live.iter().map(StepRow::effective_spec).collect(),
            reasoning: format!("repair of item {}", step.step_key),
            estimated_duration: None,
        };
        return Ok(match (&spec.map, spec.actions.is_empty()) {
            (None, true) if known.contains(&spec.tool) => Ok((spec.clone(), plan)),
            (None, true) => Err(format!(
                "the repaired item's tool {:?} is unknown",
                spec.tool
            )),
            _ => Err("a repaired item calls one tool: no map, no actions".into()),
        });
    }
    let plan = PlanSpec {
        steps: live
            .iter()
            .map(|s| {
                if s.id == step.id {
                    spec.clone()
                } else {
                    s.effective_spec()
                }
            })
            .collect(),
        reasoning: format!("repair of step {}", step.step_key),
        estimated_duration: None,
    };
    Ok(match crate::domain::plan::validate(&plan, &known) {
        Ok(_) => Ok((spec.clone(), plan)),
        Err(e) => Err(format!("the repaired step is invalid: {}", e.message)),
    })
}
