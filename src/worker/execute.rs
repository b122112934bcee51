//! Running one claimed step: resolve its placeholders, run its actions in parallel and then
//! its tool, with no transaction open; record the outcome (fenced).

use std::collections::HashMap;

use futures::future::join_all;
use serde_json::{Map, Value, json};
use tokio::sync::OwnedSemaphorePermit;

use super::call::{Call, Env, Hold, Ran, call_tool, load_context, param_error};
use super::{Runtime, with_retries};
use crate::domain::circuit::{AfterWait, Gate, MAX_FREE_REFUSALS, Why};
use crate::domain::params::{self, Scope};
use crate::domain::{ActionSpec, ToolFailure};
use crate::store::StoreError;
use crate::store::decision_queue::ClaimedDecision;
use crate::store::step_queue::{ClaimedStep, StepContext, StepFailure, StepSuccess, ToolWait};
use crate::tools::{ToolDef, ToolOutput};

/// Run a claimed step and record its outcome; returns the decision that outcome started
/// (a step reflection or an evaluation), leased to this worker, and the permit to run it
/// under (a success hands its permit to the completer, which may reuse it for the next claim).
pub(super) async fn execute(
    rt: &Runtime,
    step: ClaimedStep,
    permit: OwnedSemaphorePermit,
) -> (Option<ClaimedDecision>, Option<OwnedSemaphorePermit>) {
    let (store, cfg) = (&rt.store, &rt.cfg);
    let began = std::time::Instant::now();
    // the heartbeat cancels this when the step's task is cancelled: the call is dropped
    let abort = super::cancel::token(rt, step.id);
    let ran = tokio::select! {
        ran = run_or_expand(rt, &step) => ran,
        () = abort.cancelled() => Some(Ok(super::cancel::aborted(&step))),
    };
    let ran = match ran {
        None => return (None, Some(permit)),
        Some(ran) => ran,
    };
    let ran = match ran {
        Ok(ran) => ran,
        Err(Hold::Parked) => return (None, Some(permit)),
        Err(Hold::Defer(wait)) => {
            defer(rt, &step, &wait).await;
            return (None, Some(permit));
        }
    };
    let outcome = match &ran.result {
        Ok(_) => "succeeded".to_string(),
        Err(f) => crate::metrics::outcome_label(&f.category).to_string(),
    };
    // one copy of the name, shared by both labels
    let tool = metrics::SharedString::from_shared(std::sync::Arc::from(ran.tool.as_str()));
    metrics::histogram!(crate::metrics::STEP_SECONDS, "tool" => tool.clone())
        .record(began.elapsed().as_secs_f64());
    metrics::counter!(crate::metrics::ATTEMPTS, "tool" => tool, "outcome" => outcome).increment(1);
    let fence = step.fence();
    let mut permit = Some(permit);
    let outcome = match ran.result {
        Ok(out) => {
            hold_tool(rt, &ran.tool, out.hold_ms, out.pace_ms).await;
            let s = StepSuccess {
                fence,
                worker_id: cfg.id,
                tool: ran.tool,
                parameters: ran.parameters,
                output: out.output,
                output_params: out.output_params,
                cost: out.cost,
                idempotency_key: ran.call_key,
            };
            // the completion keeps the task's max_cost in its own commit
            let (r, back) = rt.completer.complete(s, permit.take()).await;
            permit = back;
            r.map(|d| ("succeeded", d))
        }
        Err(failure) => {
            let f = StepFailure {
                fence,
                worker_id: cfg.id,
                tool: ran.tool,
                parameters: ran.parameters,
                failure,
                idempotency_key: ran.call_key,
            };
            // boxed: the failure path's transaction is a large future, and inline it would
            // size every running step's task for it (the success path hands off to the
            // completer and stays small)
            with_retries(|| Box::pin(store.fail_step(&f, cfg.policy)))
                .await
                .map(|o| ("failed", o.decision))
        }
    };
    if abort.is_cancelled() {
        super::cancel::tell_tool(rt, &step).await;
    }
    match outcome {
        Ok((what, next)) => {
            tracing::debug!(step = %step.step_key, task = %step.task_id, what, "step recorded");
            (next, permit)
        }
        Err(StoreError::Fenced) => {
            tracing::warn!(
                step = %step.step_key, task = %step.task_id,
                "lease was taken over while the step ran; outcome discarded"
            );
            (None, permit)
        }
        Err(e) => {
            tracing::error!(
                step = %step.step_key, task = %step.task_id, error = %e,
                "could not record the outcome; the lease will expire and the step be rescued"
            );
            (None, permit)
        }
    }
}

/// The answer used up the tool's rate limit: no call before its reset, fleet-wide.
async fn hold_tool(rt: &Runtime, tool: &str, hold_ms: Option<u32>, pace_ms: Option<u32>) {
    let Some(ms) = hold_ms else {
        return;
    };
    let ms = u64::from(ms);
    if let Err(e) = with_retries(|| Box::pin(rt.store.hold_tool(tool, ms, pace_ms))).await {
        tracing::warn!(tool = %tool, error = %e, "could not hold the rate-limited tool");
    }
}

/// Hand the step back to wait for its tool (no attempt, no retry spent).
async fn defer(rt: &Runtime, step: &ClaimedStep, wait: &ToolWait) {
    let (store, cfg) = (&rt.store, &rt.cfg);
    let fence = step.fence();
    let defer = || Box::pin(store.defer_step(&fence, cfg.id, wait, &cfg.policy));
    match with_retries(defer).await {
        Ok(AfterWait::Defer) => {}
        Ok(AfterWait::Stop { reason }) => {
            tracing::info!(step = %step.step_key, task = %step.task_id, %reason, "the step stopped waiting for its tool");
        }
        Err(e) => {
            tracing::warn!(step = %step.step_key, task = %step.task_id, error = %e,
                "could not defer the step; its lease will expire and it be rescued");
        }
    }
}

/// Run the step, expand it when it is a map, or run an agent step's turn (`None`: expanded,
/// or parked on its calls: nothing to record).
async fn run_or_expand(rt: &Runtime, step: &ClaimedStep) -> Option<Result<Ran, Hold>> {
    match &step.map {
        Some(map) => super::maps::expand(rt, step, &map.0).await.map(Ok),
        None if step.tool == crate::domain::agent::AGENT_TOOL => super::agent::turn(rt, step).await,
        None => Some(run_step(rt, step).await),
    }
}

/// An item step's item, as its placeholders read it.
fn item_of<'a>(step: &'a ClaimedStep, index: &'a Option<Value>) -> Option<params::Item<'a>> {
    const NULL: &Value = &Value::Null;
    match (&step.item_name, index) {
        (Some(name), Some(index)) => Some(params::Item {
            name,
            value: step.item.as_ref().unwrap_or(NULL),
            index,
        }),
        _ => None,
    }
}

async fn run_step(rt: &Runtime, step: &ClaimedStep) -> Result<Ran, Hold> {
    let mut parameters = step.parameters.clone();
    params::merge_overrides(&mut parameters, &step.param_overrides);
    let actions: &[ActionSpec] = &step.actions.0;
    let mut ctx = match load_context(rt, step, &parameters, actions).await {
        Ok(c) => c,
        Err(f) => return Ok(Ran::failed(&step.tool, parameters, f)),
    };
    let gated = gate(rt, step, &mut ctx).await?;
    let main_tool = gated.instead.as_deref().unwrap_or(&step.tool);
    let env = Env {
        runner: &rt.runner,
        step,
        ctx: &ctx,
        store: &rt.store,
        secrets: rt.cfg.secret_box.as_ref(),
        keys: &rt.keys,
    };
    // Actions run in parallel; the step's own tool may read their outputs.
    let mut action_outputs: HashMap<String, Value> = HashMap::new();
    let mut output_params = Map::new();
    if !actions.is_empty() {
        let done = match run_actions(env, actions).await {
            Ok(done) => done,
            Err(ran) => return Ok(ran),
        };
        output_params = done.output_params;
        if step.tool.is_empty() {
            return Ok(Ran::new(
                "",
                json!({ "actions": done.parameters }),
                Ok(ToolOutput {
                    output: Value::Object(done.outputs.into_iter().collect()),
                    output_params,
                    hold_ms: None,
                    pace_ms: None,
                    cost: None,
                }),
            ));
        }
        action_outputs = done.outputs;
    }
    let index = step.item_index.map(Value::from);
    let scope = Scope {
        steps: &ctx.outputs,
        metadata: &ctx.metadata,
        context: &ctx.context,
        actions: Some(&action_outputs),
        item: item_of(step, &index),
    };
    let call = Call {
        tool: main_tool,
        key: &step.step_key,
        parameters: &parameters,
    };
    let mut ran = run_main(rt, env, call, &scope).await?;
    if gated.paced {
        refused_again(rt, step, &ran).await?;
    }
    if let Ok(out) = &mut ran.result {
        output_params.extend(std::mem::take(&mut out.output_params));
        out.output_params = output_params;
    }
    Ok(ran)
}

/// What the gate let a step do.
struct Gated {
    /// The step's tool is open: call this alternative instead.
    instead: Option<String>,
    /// The step's own tool let it through in a release slot after a hold.
    paced: bool,
}

/// Before any call: ask the database about each of the step's tools whose circuit is not
/// closed or that a rate limit holds (the tool cache knows which; the others cost nothing).
/// A half-open circuit lets this step through as its probe; after a hold, the step calls in
/// its release slot or is given one. Otherwise the step waits ([`ToolWait`]): no call, no
/// attempt, no retry spent, no tier escalated; only real calls count. When the step's own tool
/// is open and it has a registered alternative that may be called now, the step takes it at
/// once: the alternative's id is returned (and its definition added to `ctx`).
async fn gate(rt: &Runtime, step: &ClaimedStep, ctx: &mut StepContext) -> Result<Gated, ToolWait> {
    let gated: Vec<(String, i64)> = ctx
        .tools
        .values()
        .filter(|d| d.gated)
        .map(|d| (d.id.clone(), probe_lease_ms(d)))
        .collect();
    let mut paced = false;
    for (tool, lease_ms) in gated {
        // a step that has waited as long as its tool allows is not the probe: it stops
        let may_probe = match rt.store.wait_used_up(step, &tool, &rt.cfg.policy).await {
            Ok(used_up) => !used_up,
            Err(_) => true,
        };
        let asked = rt.store.gate_tool(&tool, lease_ms, may_probe, step.id);
        let (until, why) = match asked.await {
            Ok((Gate::Paced, _)) => {
                paced |= tool == step.tool;
                continue;
            }
            Ok((Gate::Call | Gate::Probe, _)) => continue,
            Ok((Gate::Wait(until, why), _)) => (until, why),
            Err(e) => {
                // the database is what decides; without it the call goes ahead as before
                tracing::warn!(%tool, error = %e, "could not read the tool's circuit");
                continue;
            }
        };
        if !matches!(why, Why::Held | Why::Refused)
            && tool == step.tool
            && let Some(alt) = open_alternative(rt, step, ctx).await
        {
            tracing::debug!(step = %step.step_key, task = %step.task_id, %tool, alternative = %alt,
                "the tool's circuit is open: calling its alternative");
            return Ok(Gated {
                instead: Some(alt),
                paced: false,
            });
        }
        return Err(ToolWait { tool, until, why });
    }
    Ok(Gated {
        instead: None,
        paced,
    })
}

/// A step released in its slot after a hold whose call is refused with a 429 again (the
/// service's limit shrank meanwhile): that is Trellis's release coming too soon, not the
/// step's failure. The tool is held again for the time the answer asks and the step waits
/// for a new slot, with no attempt spent (its wait limit still bounds it).
async fn refused_again(rt: &Runtime, step: &ClaimedStep, ran: &Ran) -> Result<(), Hold> {
    let Err(f) = &ran.result else {
        return Ok(());
    };
    let Some(ms) = f.retry_after_ms.filter(|ms| *ms > 0) else {
        return Ok(());
    };
    if f.http_status != Some(429) || ran.tool != step.tool {
        return Ok(());
    }
    // a step refused every time it is released is charged after a few: bounded by attempts
    match rt
        .store
        .refused_releases(step.task_id, &step.step_key)
        .await
    {
        Ok(n) if n < MAX_FREE_REFUSALS => {}
        _ => return Ok(()),
    }
    let pace = (f.pace_ms > 0).then_some(u32::from(f.pace_ms));
    let hold = || Box::pin(rt.store.hold_tool_as(&ran.tool, u64::from(ms), pace, true));
    if let Err(e) = with_retries(hold).await {
        tracing::warn!(tool = %ran.tool, error = %e, "could not hold the rate-limited tool");
        return Ok(());
    }
    // not a probe (a hold, not an open circuit): no lease to give
    match rt.store.gate_tool(&ran.tool, 0, false, step.id).await {
        Ok((Gate::Wait(until, _), _)) => Err(Hold::Defer(ToolWait {
            tool: ran.tool.clone(),
            until,
            why: Why::Refused,
        })),
        // the hold could not be read back: the failure is recorded as any other
        _ => Ok(()),
    }
}

/// The first registered alternative of the step's tool that may be called now (its circuit
/// closed, or this step its probe), added to `ctx`.
async fn open_alternative(
    rt: &Runtime,
    step: &ClaimedStep,
    ctx: &mut StepContext,
) -> Option<String> {
    let alternatives = ctx.tools.get(&step.tool)?.alternatives.clone();
    for alt in alternatives {
        let Ok(mut found) = rt.tools.get(&rt.store, step.tools_version, &[&alt]).await else {
            continue;
        };
        let Some(def) = found.remove(&alt) else {
            continue;
        };
        if def.gated {
            match rt
                .store
                .gate_tool(&alt, probe_lease_ms(&def), true, step.id)
                .await
            {
                Ok((Gate::Call | Gate::Probe, _)) => {}
                _ => continue,
            }
        }
        ctx.tools.insert(alt.clone(), def);
        return Some(alt);
    }
    None
}

fn probe_lease_ms(def: &ToolDef) -> i64 {
    i64::from(def.timeout_ms) + PROBE_MARGIN_MS
}

/// A probe's lease: the tool's timeout and this much more.
const PROBE_MARGIN_MS: i64 = 5_000;

/// What a step's actions produced, all of them having succeeded.
struct ActionsDone {
    outputs: HashMap<String, Value>,
    /// Resolved parameters by action id (recorded on the attempt).
    parameters: Map<String, Value>,
    output_params: Map<String, Value>,
}

/// Run every action of a step in parallel. The first failure fails the step (as a [`Ran`]).
async fn run_actions(env: Env<'_>, actions: &[ActionSpec]) -> Result<ActionsDone, Ran> {
    let Env { step, ctx, .. } = env;
    let scope = Scope {
        steps: &ctx.outputs,
        metadata: &ctx.metadata,
        context: &ctx.context,
        actions: None,
        item: None,
    };
    let calls = actions.iter().map(|a| {
        let scope = &scope;
        async move {
            if !ctx.tools.contains_key(&a.tool) {
                return (a, Ran::failed(&a.tool, Value::Null, unknown_tool(&a.tool)));
            }
            let key = format!("{}.{}", step.step_key, a.id);
            let call = Call {
                tool: &a.tool,
                key: &key,
                parameters: &a.parameters,
            };
            (a, run_tool(env, call, scope).await)
        }
    });
    let mut done = ActionsDone {
        outputs: HashMap::new(),
        parameters: Map::new(),
        output_params: Map::new(),
    };
    let mut first_failure = None;
    for (a, ran) in join_all(calls).await {
        done.parameters.insert(a.id.clone(), ran.parameters);
        match ran.result {
            Ok(out) => {
                done.output_params.extend(out.output_params);
                done.outputs.insert(a.id.clone(), out.output);
            }
            Err(mut f) => {
                if first_failure.is_none() {
                    f.message = format!("action {}: {}", a.id, f.message);
                    first_failure = Some(f);
                }
            }
        }
    }
    match first_failure {
        Some(f) => Err(Ran::failed(
            &step.tool,
            json!({ "actions": done.parameters }),
            f,
        )),
        None => Ok(done),
    }
}

/// Resolve `parameters` in `scope`, fill what the tool's input schema names from metadata,
/// and run `tool` under the idempotency key `key`.
async fn run_tool(env: Env<'_>, call: Call<'_>, scope: &Scope<'_>) -> Ran {
    let (def, resolved) = match prepare(env, &call, scope) {
        Ok(p) => p,
        Err(ran) => return *ran,
    };
    call_tool(env, &call, def, resolved, None).await
}

/// The step's own tool: as [`run_tool`], but a tool that waits parks the step
/// ([`super::waits`]).
async fn run_main(
    rt: &Runtime,
    env: Env<'_>,
    call: Call<'_>,
    scope: &Scope<'_>,
) -> Result<Ran, Hold> {
    let (def, resolved) = match prepare(env, &call, scope) {
        Ok(p) => p,
        Err(ran) => return Ok(*ran),
    };
    let call_key = env.call_key(&call, def, &resolved);
    let outcome = super::waits::before_call(rt, env.step, def, &resolved, call_key.as_deref());
    Ok(match outcome.await? {
        super::waits::Next::Call => call_tool(env, &call, def, resolved, None).await,
        super::waits::Next::Async => {
            super::waits::call_async(rt, env, &call, def, resolved).await?
        }
        super::waits::Next::Done(result) => Ran {
            call_key,
            ..Ran::new(call.tool, resolved, result)
        },
    })
}

/// Resolve a call's parameters and check them against its tool's input schema: the tool and
/// the parameters to call it with, or the failed [`Ran`].
fn prepare<'e>(
    env: Env<'e>,
    call: &Call<'_>,
    scope: &Scope<'_>,
) -> Result<(&'e ToolDef, Value), Box<Ran>> {
    let Env { ctx, .. } = env;
    let Call {
        tool, parameters, ..
    } = *call;
    let Some(def) = ctx.tools.get(tool) else {
        return Err(Box::new(Ran::failed(
            tool,
            parameters.clone(),
            unknown_tool(tool),
        )));
    };
    let mut resolved = match params::resolve_call(tool, parameters, scope) {
        Ok(p) => p,
        Err(e) => {
            return Err(Box::new(Ran::failed(
                tool,
                parameters.clone(),
                param_error(e.0),
            )));
        }
    };
    params::fill_from_metadata(&mut resolved, &def.input_schema, &ctx.metadata);
    // `5.0` where the schema asks for an integer is sent as `5` (lossless; strict servers
    // refuse the float)
    crate::domain::schema_repair::integers_as_integers(&def.input_schema, &mut resolved);
    let wrong = def.checks.input.violations(&resolved);
    if !wrong.is_empty() {
        // no call: recovery repairs the parameters (tier 1) or the step
        let message = format!(
            "parameters do not match the input schema of {tool:?}: {}",
            wrong.join("; ")
        );
        let mut f = param_error(message);
        f.schema_violations = wrong.into();
        return Err(Box::new(Ran::failed(tool, resolved, f)));
    }
    Ok((def, resolved))
}

fn unknown_tool(id: &str) -> ToolFailure {
    ToolFailure::new(
        "tool_error",
        format!("tool {id:?} is not registered"),
        false,
    )
}
