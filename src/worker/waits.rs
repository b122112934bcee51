//! A step's tool that waits: the built-ins `approval`, `wait_event` and `sleep_until`, a tool
//! with `requires_approval`, and an async HTTP tool. The first run parks the step on its wait
//! (the worker lets it go); the run after its resolution reads it and goes on
//! ([`crate::domain::wait::after_wait`]): an output, a failure for recovery, or the call.

use serde_json::Value;
use sha2::Digest;

use super::Runtime;
use super::call::{Call, Env, Ran, call_tool};
use crate::domain::ToolFailure;
use crate::domain::child::ChildSpec;
use crate::domain::status::WaitStatus;
use crate::domain::wait::{AfterWait, TASK_TOOL, WaitKind, WaitSpec, after_wait};
use crate::store::StoreError;
use crate::store::children::ChildOf;
use crate::store::step_queue::ClaimedStep;
use crate::store::waits::{Parked, WaitRow, Waiter};
use crate::tools::{ToolDef, ToolOutput};

/// What the step's tool does now.
pub(super) enum Next {
    /// Call it (synchronously).
    Call,
    /// Call it with a callback URL, then park until the callback.
    Async,
    /// Its outcome, with no call.
    Done(Result<ToolOutput, ToolFailure>),
}

/// An agent's call of a tool its `approval_for` names: it waits for an approval as a
/// `requires_approval` tool's call does.
fn agent_gated(step: &ClaimedStep) -> bool {
    let Some(item) = &step.item else {
        return false;
    };
    item.get("tool_call_id").is_some() && item.get("approval") == Some(&Value::Bool(true))
}

/// The step parked (or lost its lease): the worker records nothing.
pub(super) struct Parks;

impl From<Parks> for super::call::Hold {
    fn from(_: Parks) -> Self {
        super::call::Hold::Parked
    }
}

fn output(v: Value) -> Result<ToolOutput, ToolFailure> {
    Ok(ToolOutput {
        output: v,
        output_params: Default::default(),
        hold_ms: None,
        pace_ms: None,
        cost: None,
    })
}

fn unavailable(e: StoreError) -> ToolFailure {
    ToolFailure::new(
        "tool_error",
        format!("could not record the wait: {e}"),
        true,
    )
}

/// Before the step's own tool runs: wait first, if it is a tool that waits.
/// `call_key`: the call's idempotency key (the built-in `task` names its child by it).
pub(super) async fn before_call(
    rt: &Runtime,
    step: &ClaimedStep,
    def: &ToolDef,
    resolved: &Value,
    call_key: Option<&str>,
) -> Result<Next, Parks> {
    if def.kind == "builtin" && def.id == TASK_TOOL {
        let key = call_key.expect("a task call has a key (Env::call_key)");
        return child(rt, step, resolved, key).await;
    }
    if def.kind == "builtin"
        && let Some(spec) = WaitSpec::of_builtin(&def.id, resolved)
    {
        return Ok(match spec {
            Err(f) => Next::Done(Err(f)),
            Ok(spec) => match wait(rt, step, &spec, false).await? {
                AfterWait::Output(v) => Next::Done(output(v)),
                AfterWait::Fail(f) => Next::Done(Err(f)),
                AfterWait::Call => Next::Call,
            },
        });
    }
    if def.requires_approval || agent_gated(step) {
        match wait(rt, step, &WaitSpec::gate(&def.id, resolved), true).await? {
            AfterWait::Call => {}
            AfterWait::Output(v) => return Ok(Next::Done(output(v))),
            AfterWait::Fail(f) => return Ok(Next::Done(Err(f))),
        }
    }
    Ok(if def.mode == "async" {
        Next::Async
    } else {
        Next::Call
    })
}

/// The step's wait of `spec.kind` in this attempt: resolved already (read it), or written
/// now and the step parked.
async fn wait(
    rt: &Runtime,
    step: &ClaimedStep,
    spec: &WaitSpec,
    gated: bool,
) -> Result<AfterWait, Parks> {
    let row = match rt.store.wait_of(step.id, step.attempt, spec.kind).await {
        Ok(Some(row)) if row.status != WaitStatus::Open => row,
        Ok(_) => match park(rt, step, spec).await? {
            Ok(row) => row,
            Err(f) => return Ok(AfterWait::Fail(f)),
        },
        Err(e) => return Ok(AfterWait::Fail(unavailable(e))),
    };
    Ok(resolved(&row, spec.kind, gated))
}

/// Park the step; `Ok(row)`: its wait was resolved already and it did not park.
async fn park(
    rt: &Runtime,
    step: &ClaimedStep,
    spec: &WaitSpec,
) -> Result<Result<WaitRow, ToolFailure>, Parks> {
    let fence = step.fence();
    let w = Waiter {
        fence: &fence,
        step_key: &step.step_key,
        attempt: step.attempt,
        worker_id: rt.cfg.id,
    };
    match rt.store.park_step(w, spec).await {
        Ok(Parked::Waiting(row)) => {
            tracing::debug!(step = %step.step_key, task = %step.task_id, wait = %row.id,
                kind = row.kind, "step waits");
            Err(Parks)
        }
        Ok(Parked::Resolved(row)) => Ok(Ok(row)),
        Err(StoreError::Fenced) => {
            tracing::warn!(step = %step.step_key, task = %step.task_id,
                "lease was taken over before the step could wait");
            Err(Parks)
        }
        Err(e) => Ok(Err(unavailable(e))),
    }
}

fn resolved(row: &WaitRow, kind: WaitKind, gated: bool) -> AfterWait {
    match row.resolution() {
        Ok(Some(r)) => after_wait(kind, gated, &r, row.resolved_by),
        Ok(None) => AfterWait::Fail(ToolFailure::new(
            "tool_error",
            "the wait was cancelled",
            false,
        )),
        Err(e) => AfterWait::Fail(ToolFailure::new("tool_error", e.to_string(), false)),
    }
}

/// An async tool: its wait is written first (so a callback that beats the call's answer is
/// kept), the call carries the callback URL, and a 2xx parks the step.
pub(super) async fn call_async(
    rt: &Runtime,
    env: Env<'_>,
    call: &Call<'_>,
    def: &ToolDef,
    resolved_params: Value,
) -> Result<Ran, Parks> {
    let step = env.step;
    let done = |result| Ran::new(call.tool, resolved_params.clone(), result);
    let spec = WaitSpec::callback(rt.cfg.async_timeout_secs);
    // a callback that came before a release of this attempt is read, not called again
    match rt
        .store
        .wait_of(step.id, step.attempt, WaitKind::Callback)
        .await
    {
        Ok(Some(row)) if row.status != WaitStatus::Open => {
            return Ok(done(after(resolved(&row, WaitKind::Callback, false))));
        }
        Ok(_) => {}
        Err(e) => return Ok(done(Err(unavailable(e)))),
    }
    // 244 random bits (two v4 UUIDs, from the OS's generator)
    let token = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let hash = sha2::Sha256::digest(token.as_bytes()).to_vec();
    let fence = step.fence();
    let w = Waiter {
        fence: &fence,
        step_key: &step.step_key,
        attempt: step.attempt,
        worker_id: rt.cfg.id,
    };
    if let Err(e) = rt.store.open_callback_wait(w, &spec, &hash).await {
        return Ok(done(Err(unavailable(e))));
    }
    let url = format!("{}/api/v1/callbacks/{token}", rt.cfg.callback_base_url);
    let called = call_tool(env, call, def, resolved_params.clone(), Some(&url)).await;
    if called.result.is_err() {
        return Ok(called);
    }
    let ran = match park(rt, step, &spec).await? {
        Ok(row) => done(after(resolved(&row, WaitKind::Callback, false))),
        Err(f) => done(Err(f)),
    };
    Ok(Ran {
        call_key: called.call_key,
        ..ran
    })
}

/// The built-in `task`: start the child (or find the one a lost attempt of this call started)
/// and wait for it to end; once it has, its outcome is the step's.
async fn child(
    rt: &Runtime,
    step: &ClaimedStep,
    params: &Value,
    call_key: &str,
) -> Result<Next, Parks> {
    match rt
        .store
        .wait_of(step.id, step.attempt, WaitKind::Child)
        .await
    {
        Ok(Some(row)) if row.status != WaitStatus::Open => {
            return Ok(Next::Done(after(resolved(&row, WaitKind::Child, false))));
        }
        Ok(_) => {}
        Err(e) => return Ok(Next::Done(Err(unavailable(e)))),
    }
    let spec = match ChildSpec::from_params(params) {
        Ok(s) => s,
        Err(f) => return Ok(Next::Done(Err(f))),
    };
    let fence = step.fence();
    let parent = ChildOf {
        fence: &fence,
        step_key: &step.step_key,
        attempt: step.attempt,
        call_key,
        bounds: rt.cfg.plan_bounds,
        tree: rt.cfg.tree,
    };
    let child = match rt.store.start_child(parent, &spec).await {
        Ok(Ok(id)) => id,
        Ok(Err(f)) => return Ok(Next::Done(Err(f))),
        Err(StoreError::Fenced) => {
            tracing::warn!(step = %step.step_key, task = %step.task_id,
                "lease was taken over before the child task could start");
            return Err(Parks);
        }
        Err(e) => return Ok(Next::Done(Err(unavailable(e)))),
    };
    if !spec.wait {
        return Ok(Next::Done(output(serde_json::json!({ "task_id": child }))));
    }
    Ok(Next::Done(
        match park(rt, step, &WaitSpec::child(child)).await? {
            Ok(row) => after(resolved(&row, WaitKind::Child, false)),
            Err(f) => Err(f),
        },
    ))
}

fn after(a: AfterWait) -> Result<ToolOutput, ToolFailure> {
    match a {
        AfterWait::Output(v) => output(v),
        AfterWait::Fail(f) => Err(f),
        AfterWait::Call => Err(ToolFailure::new(
            "tool_error",
            "a callback cannot approve a call",
            false,
        )),
    }
}
