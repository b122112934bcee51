//! Task-level outcomes: the first plan of a description-only task, the overall reflection
//! (tier 3), the replan, and the evaluation that ends a round.

use serde_json::json;
use uuid::Uuid;

use super::{Applying, Reflected, category, insert_reflection, keep_backing_off};
use crate::domain::decision::{Answer, DecisionInput, Planned, ToolSelection};
use crate::domain::event::{self, Event, TaskError};
use crate::domain::records::{StepRow, TaskRow};
use crate::domain::recovery::{
    self, AfterEvaluation, AfterOverall, Carry, Evaluation, FailurePolicy, OverallReflection,
    RecoveryAction, Strategy, Trigger,
};
use crate::domain::status::DecisionKind;
use crate::domain::transitions::TaskMove;
use crate::store::decision_queue::{ClaimedDecision, Lease, create_decision};
use crate::store::lifecycle::{fail_task, record_recovery, start_evaluation, start_overall};
use crate::store::plans::{insert_plan, insert_steps_for_version, replace_plan};
use crate::store::tasks::{
    evaluate_tasks, move_task, succeed_at_once, succeed_tasks, try_move_task,
};
use crate::store::{NewEvent, Result, Tx, known_tools};

pub(super) async fn apply_overall(
    tx: &mut Tx,
    c: &Applying<'_>,
    step: Option<&StepRow>,
    r: Reflected<'_, OverallReflection>,
) -> Result<Option<ClaimedDecision>> {
    let (task, input, policy, lease) = (c.task, c.input, c.policy, c.lease);
    insert_reflection(tx, task, "overall", step, &r).await?;
    let Reflected {
        body: r, fallback, ..
    } = r;
    let trigger = input.trigger.unwrap_or(Trigger::StepFailure);
    tx.push(NewEvent::new(
        task.id,
        Event::OverallReflected(event::OverallReflected {
            trigger,
            step_key: input.step_key.clone(),
            should_replan: r.should_replan,
            replanning_strategy: r.replanning_strategy.clone(),
            stop_reason: r.stop_reason.clone(),
            root_causes: r.root_causes.clone(),
            fallback,
        }),
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
            sqlx::query(sql!("task/set_stop_reason"))
                .bind(task.id)
                .bind(&reason)
                .execute(&mut **tx)
                .await?;
            record_recovery(tx, input.attempt_id, RecoveryAction::Intervention, category).await?;
            tx.push(NewEvent::new(
                task.id,
                Event::InterventionRequired(event::InterventionRequired {
                    step_key: input.step_key.clone(),
                    reason,
                }),
            ));
            Ok(None)
        }
        AfterOverall::Fail { reason } => {
            record_recovery(tx, input.attempt_id, RecoveryAction::Fail, category).await?;
            let error = TaskError::at_step(input.step_key.as_deref(), reason);
            fail_task(tx, task.id, error).await?;
            Ok(None)
        }
    }
}

pub(super) async fn apply_replan(
    tx: &mut Tx,
    c: &Applying<'_>,
    answer: &Result<Answer<Planned>, String>,
) -> Result<Option<ClaimedDecision>> {
    let (task, input, lease) = (c.task, c.input, c.lease);
    let strategy = input.strategy.clone().unwrap_or(Strategy::FullReplan);
    let trigger = input.trigger.unwrap_or(Trigger::StepFailure);
    let category = category(input);
    let plan = match checked_plan(tx, task.id, answer, "the new plan").await? {
        Ok(p) => {
            if let Some(sel) = &p.selection {
                tx.push(tools_selected(task.id, sel, "replanning"));
            }
            p.plan
        }
        Err(reason) => {
            record_recovery(tx, input.attempt_id, RecoveryAction::ReplanFailed, category).await?;
            let reason = format!("replanning failed: {reason}");
            let error = TaskError::at_step(input.step_key.as_deref(), reason);
            fail_task(tx, task.id, error).await?;
            return Ok(None);
        }
    };
    let origin = format!("replan:{}", strategy.name());
    let next = replace_plan(tx, task, &plan, &strategy, &origin, Some(lease)).await?;
    tell_the_producer(tx, task, input, &strategy).await?;
    if trigger == Trigger::StepFailure {
        keep_backing_off(tx, c, task.plan_version + 1).await?;
    }
    let counter = match trigger {
        Trigger::StepFailure => sql!("task/count_replan"),
        Trigger::Evaluation => {
            tx.push(NewEvent::new(
                task.id,
                Event::RoundStarted(event::RoundStarted {
                    round: task.round + 1,
                    plan_version: task.plan_version + 1,
                    strategy: strategy.name().into(),
                }),
            ));
            sql!("task/next_round")
        }
    };
    sqlx::query(counter)
        .bind(task.id)
        .execute(&mut **tx)
        .await?;
    let action = RecoveryAction::Replan(strategy.name());
    record_recovery(tx, input.attempt_id, action, category).await?;
    Ok(next)
}

/// A replan that restarts from an earlier step than the one that failed (healing upstream: the
/// failing step's parameter came from that step's output) tells that step why: the failed
/// step, the strategy's reason and the failure, as its `feedback` (sent to its tool).
async fn tell_the_producer(
    tx: &mut Tx,
    task: &TaskRow,
    input: &DecisionInput,
    strategy: &Strategy,
) -> Result<()> {
    let (Strategy::ReplanFromStep { step_id, reason }, Some(failed)) =
        (strategy, input.step_key.as_deref())
    else {
        return Ok(());
    };
    if step_id == failed {
        return Ok(());
    }
    let feedback = json!({
        "step_id": failed,
        "reason": reason,
        "error": input.failure,
    });
    sqlx::query(sql!("plan/feedback"))
        .bind(task.id)
        .bind(task.plan_version + 1)
        .bind(step_id)
        .bind(feedback)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The brain's plan if it is valid against the tool registry as it stands in this
/// transaction; else why not.
async fn checked_plan(
    tx: &mut Tx,
    task: uuid::Uuid,
    answer: &Result<Answer<Planned>, String>,
    what: &str,
) -> Result<std::result::Result<Planned, String>> {
    let a = match answer {
        Ok(a) => a,
        Err(e) => return Ok(Err(e.clone())),
    };
    let known = known_tools(tx, task).await?;
    Ok(crate::domain::plan::validate(&a.value.plan, &known)
        .map(|_| a.value.clone())
        .map_err(|e| format!("{what} is invalid: {}", e.message)))
}

fn tools_selected(task_id: Uuid, sel: &ToolSelection, phase: &str) -> NewEvent {
    NewEvent::new(
        task_id,
        Event::ToolsSelected(event::ToolsSelected {
            phase: phase.into(),
            selected_tools: sel.selected_tools.clone(),
            reasoning: sel.reasoning.clone(),
            changes_summary: sel.changes_summary.clone(),
            task_type: sel.task_type.clone(),
            workflow_id: sel.workflow_id.clone(),
        }),
    )
}

/// A description-only task's first plan: validated against the registry, installed as
/// version 1, the task `running`. A brain error or an invalid plan fails the task.
pub(super) async fn apply_plan(
    tx: &mut Tx,
    (task, lease): (&TaskRow, Lease),
    answer: &Result<Answer<Planned>, String>,
) -> Result<Option<ClaimedDecision>> {
    // a plan applied before its claim recorded `planning` passes through it
    try_move_task(&mut **tx, task.id, TaskMove::StartPlanning).await?;
    let planned = match checked_plan(tx, task.id, answer, "the plan").await? {
        Ok(p) => p,
        Err(reason) => {
            let error = TaskError::at_step(None, format!("planning failed: {reason}"));
            fail_task(tx, task.id, error).await?;
            return Ok(None);
        }
    };
    if let Some(sel) = &planned.selection {
        tx.push(tools_selected(task.id, sel, "planning"));
    }
    let plan = &planned.plan;
    let origin = match &planned.template {
        Some(id) => format!("template:{id}"),
        None => "initial".into(),
    };
    insert_plan(tx, task.id, 1, &origin, plan).await?;
    sqlx::query(sql!("task/first_plan_version"))
        .bind(task.id)
        .execute(&mut **tx)
        .await?;
    let runnable = insert_steps_for_version(tx, task, 1, plan, &Carry::default(), 0).await?;
    tx.push(NewEvent::new(
        task.id,
        Event::PlanGenerated(event::PlanGenerated {
            version: 1,
            origin,
            steps: plan.steps.len(),
            reasoning: Some(plan.reasoning.clone()),
            estimated_duration: Some(json!(plan.estimated_duration)),
        }),
    ));
    if runnable == 0 {
        return start_evaluation(tx, task.id, Some(lease)).await;
    }
    move_task(tx, task.id, TaskMove::Run).await?;
    tx.wake_steps();
    Ok(None)
}

pub(super) async fn apply_evaluation(
    tx: &mut Tx,
    c: &Applying<'_>,
    e: &Evaluation,
    raw: Option<&str>,
) -> Result<Option<ClaimedDecision>> {
    let item = Evaluated {
        task: c.task,
        evaluation: e,
        raw,
        lease: c.lease,
    };
    let mut next = apply_evaluations(tx, &[item], c.policy, Stage::Evaluating).await?;
    Ok(next.pop().map(|(_, d)| d))
}

/// Where the tasks of [`apply_evaluations`] stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// `evaluating`: an evaluation decision's task.
    Evaluating,
    /// Still `running`: the completion that finished the plan evaluates it at once (a pure
    /// evaluation). A task that passes goes straight to `succeeded` (one write of its row);
    /// the others are moved to `evaluating` first, as a decision would have found them.
    Running,
}

/// One evaluation to apply: the task (locked by the caller, in the [`Stage`] given), the
/// evaluation, the raw answer it was parsed from, and the lease a follow-up decision is created
/// with.
pub(crate) struct Evaluated<'a> {
    pub task: &'a TaskRow,
    pub evaluation: &'a Evaluation,
    pub raw: Option<&'a str>,
    pub lease: Lease,
}

/// Apply evaluations that end their tasks' rounds: every `evaluations` row and final score in
/// one statement, the tasks that succeed moved in one more; a task below its threshold
/// reflects again or fails ([`recovery::after_evaluation`]). The follow-up decisions, by task.
/// Also how a completion applies pure evaluations (the rules brain's) of the tasks it finished.
pub(crate) async fn apply_evaluations(
    tx: &mut Tx,
    items: &[Evaluated<'_>],
    policy: &FailurePolicy,
    stage: Stage,
) -> Result<Vec<(Uuid, ClaimedDecision)>> {
    let outcomes: Vec<AfterEvaluation> = items
        .iter()
        .map(|i| {
            let counters = i.task.counters(None, policy.max_rescues);
            recovery::after_evaluation(
                &counters,
                i.evaluation,
                i.task.success_threshold,
                i.task.auto_reflection,
            )
        })
        .collect();
    let at_once: Vec<bool> = outcomes
        .iter()
        .map(|o| stage == Stage::Running && *o == AfterEvaluation::Succeed)
        .collect();
    let at_once = |k: usize| at_once[k];
    if stage == Stage::Running {
        let resting: Vec<Uuid> = (0..items.len())
            .filter(|k| !at_once(*k))
            .map(|k| items[k].task.id)
            .collect();
        evaluate_tasks(tx, &resting).await?;
    }
    let scored_here: Vec<Uuid> = (0..items.len())
        .filter(|k| !at_once(*k))
        .map(|k| items[k].task.id)
        .collect();
    record_evaluations(tx, items, &scored_here).await?;
    let (mut succeeded, mut next) = (Vec::new(), Vec::new());
    let (mut at_once_ids, mut at_once_scores) = (Vec::new(), Vec::new());
    for (k, (item, outcome)) in items.iter().zip(outcomes).enumerate() {
        let (task, e) = (item.task, item.evaluation);
        let successful = e.overall_score >= task.success_threshold;
        tx.push(NewEvent::new(
            task.id,
            Event::EvaluationCompleted(event::EvaluationCompleted {
                round: task.round,
                overall_score: e.overall_score,
                is_successful: successful,
                dimensions: e.dimensions.clone(),
            }),
        ));
        match outcome {
            AfterEvaluation::Succeed => {
                if at_once(k) {
                    at_once_ids.push(task.id);
                    at_once_scores.push(e.overall_score.clamp(0.0, 100.0));
                } else {
                    succeeded.push(task.id);
                }
                tx.push(NewEvent::new(
                    task.id,
                    Event::TaskSucceeded(event::TaskSucceeded {
                        plan_version: task.plan_version,
                        final_score: e.overall_score,
                        round: task.round,
                    }),
                ));
            }
            AfterEvaluation::Reflect => {
                if let Some(d) = reflect_again(tx, item).await? {
                    next.push((task.id, d));
                }
            }
            AfterEvaluation::Fail { reason } => {
                let error = TaskError {
                    reason: Some(reason),
                    final_score: Some(e.overall_score),
                    ..Default::default()
                };
                fail_task(tx, task.id, error).await?;
            }
        }
    }
    succeed_tasks(tx, &succeeded).await?;
    succeed_at_once(tx, &at_once_ids, &at_once_scores).await?;
    Ok(next)
}

/// Another round: the overall reflection of a task whose evaluation fell short.
async fn reflect_again(tx: &mut Tx, item: &Evaluated<'_>) -> Result<Option<ClaimedDecision>> {
    let (task, e) = (item.task, item.evaluation);
    let input = DecisionInput {
        trigger: Some(Trigger::Evaluation),
        summary: Some(format!(
            "evaluation scored {:.1}, below {:.1}",
            e.overall_score, task.success_threshold
        )),
        evaluation: Some(e.clone()),
        ..Default::default()
    };
    start_overall(tx, task.id, None, input, item.lease).await
}

/// The `evaluations` rows, and the `final_score` of the tasks in `scored_here`, in one
/// statement (a task that succeeds at once gets its score with its move).
async fn record_evaluations(
    tx: &mut Tx,
    items: &[Evaluated<'_>],
    scored_here: &[Uuid],
) -> Result<()> {
    let col = |f: fn(&Evaluated<'_>) -> f64| items.iter().map(f).collect::<Vec<f64>>();
    let list = |f: fn(&Evaluation) -> &Vec<String>| {
        items
            .iter()
            .map(|i| json!(f(i.evaluation)))
            .collect::<Vec<_>>()
    };
    sqlx::query(sql!("decision/insert_evaluations"))
        .bind(items.iter().map(|i| i.task.id).collect::<Vec<_>>())
        .bind(items.iter().map(|i| i.task.round).collect::<Vec<_>>())
        .bind(
            items
                .iter()
                .map(|i| i.task.plan_version)
                .collect::<Vec<_>>(),
        )
        .bind(col(|i| i.evaluation.overall_score.clamp(0.0, 100.0)))
        .bind(col(|i| i.evaluation.dimensions.completeness))
        .bind(col(|i| i.evaluation.dimensions.correctness))
        .bind(col(|i| i.evaluation.dimensions.efficiency))
        .bind(col(|i| i.evaluation.dimensions.reliability))
        .bind(
            items
                .iter()
                .map(|i| i.evaluation.overall_score >= i.task.success_threshold)
                .collect::<Vec<_>>(),
        )
        .bind(list(|e| &e.successes))
        .bind(list(|e| &e.failures))
        .bind(list(|e| &e.improvement_suggestions))
        .bind(items.iter().map(|i| i.raw).collect::<Vec<_>>())
        .bind(scored_here)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
