//! Task-level outcomes: the first plan of a description-only task, the overall reflection
//! (tier 3), the replan, and the evaluation that ends a round.

use serde_json::json;
use uuid::Uuid;

use super::{Applying, Reflected, category, insert_reflection};
use crate::domain::decision::{Answer, DecisionInput, Planned, ToolSelection};
use crate::domain::event_kind;
use crate::domain::records::{StepRow, TaskRow};
use crate::domain::recovery::{
    self, AfterEvaluation, AfterOverall, Carry, Evaluation, OverallReflection, RecoveryAction,
    Strategy, Trigger,
};
use crate::domain::status::DecisionKind;
use crate::domain::transitions::TaskMove;
use crate::store::decision_queue::{ClaimedDecision, Lease, create_decision};
use crate::store::lifecycle::{fail_task, record_recovery, start_evaluation, start_overall};
use crate::store::plans::{insert_plan, insert_steps_for_version, replace_plan};
use crate::store::transitions::{move_task, try_move_task};
use crate::store::{NewEvent, Result, Tx, known_tools, notify_ready};

pub(super) async fn apply_overall(
    tx: &mut Tx,
    c: &Applying<'_>,
    step: Option<&StepRow>,
    r: Reflected<'_, OverallReflection>,
    events: &mut Vec<NewEvent>,
) -> Result<Option<ClaimedDecision>> {
    let (task, input, policy, lease) = (c.task, c.input, c.policy, c.lease);
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
    let counters = task.counters(step, policy.max_rescues);
    let category = category(input);
    match recovery::after_overall(&counters, trigger, r) {
        AfterOverall::Replan { strategy } => {
            move_task(tx, task.id, TaskMove::Replan).await?;
            let next = DecisionInput {
                overall: Some(r.clone()),
                strategy: Some(strategy),
                ..input.clone()
            };
            let step_id = step.map(|s| s.id);
            create_decision(
                tx,
                task.id,
                DecisionKind::Replan,
                step_id,
                &next,
                Some(lease),
            )
            .await
        }
        AfterOverall::Intervention { reason } => {
            move_task(tx, task.id, TaskMove::NeedIntervention).await?;
            sqlx::query("UPDATE tasks SET stop_reason = $2 WHERE id = $1")
                .bind(task.id)
                .bind(&reason)
                .execute(&mut **tx)
                .await?;
            record_recovery(tx, input.attempt_id, RecoveryAction::Intervention, category).await?;
            events.push(NewEvent::new(
                task.id,
                event_kind::INTERVENTION_REQUIRED,
                json!({"step_id": input.step_key, "reason": reason}),
            ));
            Ok(None)
        }
        AfterOverall::Fail { reason } => {
            record_recovery(tx, input.attempt_id, RecoveryAction::Fail, category).await?;
            let error = json!({"step_id": input.step_key, "reason": reason});
            fail_task(tx, task.id, error, events).await?;
            Ok(None)
        }
    }
}

pub(super) async fn apply_replan(
    tx: &mut Tx,
    c: &Applying<'_>,
    answer: &Result<Answer<Planned>, String>,
    events: &mut Vec<NewEvent>,
) -> Result<Option<ClaimedDecision>> {
    let (task, input, lease) = (c.task, c.input, c.lease);
    let strategy = input.strategy.clone().unwrap_or(Strategy::FullReplan);
    let trigger = input.trigger.unwrap_or(Trigger::StepFailure);
    let category = category(input);
    let plan = match checked_plan(tx, answer, "the new plan").await? {
        Ok(p) => {
            if let Some(sel) = &p.selection {
                events.push(tools_selected(task.id, sel, "replanning"));
            }
            p.plan
        }
        Err(reason) => {
            record_recovery(tx, input.attempt_id, RecoveryAction::ReplanFailed, category).await?;
            let reason = format!("replanning failed: {reason}");
            let error = json!({"step_id": input.step_key, "reason": reason});
            fail_task(tx, task.id, error, events).await?;
            return Ok(None);
        }
    };
    let origin = format!("replan:{}", strategy.name());
    let next = replace_plan(tx, task, &plan, &strategy, &origin, Some(lease), events).await?;
    let counter = match trigger {
        Trigger::StepFailure => "task_replan_count = task_replan_count + 1",
        Trigger::Evaluation => {
            events.push(NewEvent::new(
                task.id,
                event_kind::ROUND_STARTED,
                json!({"round": task.round + 1, "plan_version": task.plan_version + 1,
                       "strategy": strategy.name()}),
            ));
            "round = round + 1"
        }
    };
    let sql = format!("UPDATE tasks SET {counter} WHERE id = $1");
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(task.id)
        .execute(&mut **tx)
        .await?;
    let action = RecoveryAction::Replan(strategy.name());
    record_recovery(tx, input.attempt_id, action, category).await?;
    Ok(next)
}

/// The brain's plan if it is valid against the tool registry as it stands in this
/// transaction; else why not.
async fn checked_plan(
    tx: &mut Tx,
    answer: &Result<Answer<Planned>, String>,
    what: &str,
) -> Result<std::result::Result<Planned, String>> {
    let a = match answer {
        Ok(a) => a,
        Err(e) => return Ok(Err(e.clone())),
    };
    let known = known_tools(tx).await?;
    Ok(crate::domain::plan::validate(&a.value.plan, &known)
        .map(|_| a.value.clone())
        .map_err(|e| format!("{what} is invalid: {}", e.message)))
}

fn tools_selected(task_id: Uuid, sel: &ToolSelection, phase: &str) -> NewEvent {
    NewEvent::new(
        task_id,
        event_kind::TOOLS_SELECTED,
        json!({"phase": phase, "selected_tools": sel.selected_tools, "reasoning": sel.reasoning,
               "changes_summary": sel.changes_summary, "task_type": sel.task_type,
               "workflow_id": sel.workflow_id}),
    )
}

/// A description-only task's first plan: validated against the registry, installed as
/// version 1, the task `running`. A brain error or an invalid plan fails the task.
pub(super) async fn apply_plan(
    tx: &mut Tx,
    (task, lease): (&TaskRow, Lease),
    answer: &Result<Answer<Planned>, String>,
    events: &mut Vec<NewEvent>,
) -> Result<Option<ClaimedDecision>> {
    // a plan applied before its claim recorded `planning` passes through it
    try_move_task(&mut **tx, task.id, TaskMove::StartPlanning).await?;
    let planned = match checked_plan(tx, answer, "the plan").await? {
        Ok(p) => p,
        Err(reason) => {
            let error = json!({"reason": format!("planning failed: {reason}")});
            fail_task(tx, task.id, error, events).await?;
            return Ok(None);
        }
    };
    if let Some(sel) = &planned.selection {
        events.push(tools_selected(task.id, sel, "planning"));
    }
    let plan = &planned.plan;
    let origin = match &planned.template {
        Some(id) => format!("template:{id}"),
        None => "initial".into(),
    };
    insert_plan(tx, task.id, 1, &origin, plan).await?;
    sqlx::query("UPDATE tasks SET plan_version = 1, updated_at = now() WHERE id = $1")
        .bind(task.id)
        .execute(&mut **tx)
        .await?;
    let runnable = insert_steps_for_version(tx, task, 1, plan, &Carry::default(), 0).await?;
    events.push(NewEvent::new(
        task.id,
        event_kind::PLAN_GENERATED,
        json!({"version": 1, "origin": origin, "steps": plan.steps.len(),
               "reasoning": plan.reasoning, "estimated_duration": plan.estimated_duration}),
    ));
    if runnable == 0 {
        return start_evaluation(tx, task.id, Some(lease)).await;
    }
    move_task(tx, task.id, TaskMove::Run).await?;
    notify_ready(tx).await?;
    Ok(None)
}

pub(super) async fn apply_evaluation(
    tx: &mut Tx,
    c: &Applying<'_>,
    e: &Evaluation,
    raw: Option<&str>,
    events: &mut Vec<NewEvent>,
) -> Result<Option<ClaimedDecision>> {
    let (task, policy, lease) = (c.task, c.policy, c.lease);
    let successful = e.overall_score >= task.success_threshold;
    insert_evaluation(tx, c, e, successful, raw).await?;
    events.push(NewEvent::new(
        task.id,
        event_kind::EVALUATION_COMPLETED,
        json!({"round": task.round, "overall_score": e.overall_score, "is_successful": successful,
               "dimensions": e.dimensions}),
    ));
    let counters = task.counters(None, policy.max_rescues);
    match recovery::after_evaluation(&counters, e, task.success_threshold, task.auto_reflection) {
        AfterEvaluation::Succeed => {
            move_task(tx, task.id, TaskMove::Succeed).await?;
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
                evaluation: Some(e.clone()),
                ..Default::default()
            };
            start_overall(tx, task.id, None, input, lease).await
        }
        AfterEvaluation::Fail { reason } => {
            let error = json!({"reason": reason, "final_score": e.overall_score});
            fail_task(tx, task.id, error, events).await?;
            Ok(None)
        }
    }
}

/// The `evaluations` row, and the task's `final_score`.
async fn insert_evaluation(
    tx: &mut Tx,
    c: &Applying<'_>,
    e: &Evaluation,
    successful: bool,
    raw: Option<&str>,
) -> Result<()> {
    let task = c.task;
    let d = &e.dimensions;
    sqlx::query(
        "WITH e AS (
             INSERT INTO evaluations (task_id, round, plan_version, overall_score, completeness,
                     correctness, efficiency, reliability, is_successful, successes, failures,
                     improvement_suggestions, raw)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
             RETURNING task_id, overall_score)
         UPDATE tasks t SET final_score = e.overall_score FROM e WHERE t.id = e.task_id",
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
    Ok(())
}
