//! Cancelling a call in flight: a cancelled task's running steps are named by the heartbeat
//! (`step/heartbeat`), whose loop cancels their tokens here. The step's call is dropped (the
//! HTTP request with it), the attempt is recorded as failed with category `cancelled` through
//! the fenced failure path (a cancelled task starts nothing after it), and a tool that declares
//! a `cancel_url` is told.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::Runtime;
use super::call::Ran;
use crate::domain::model::{CANCELLED, ToolFailure};
use crate::store::step_queue::ClaimedStep;
use crate::tools::Invocation;

/// The abort token of each step this worker runs, by step id.
pub(super) type Aborts = Arc<Mutex<HashMap<Uuid, CancellationToken>>>;

/// A new abort token for the step (dropped by [`forget`] when the step is recorded).
pub(super) fn token(rt: &Runtime, step: Uuid) -> CancellationToken {
    let t = CancellationToken::new();
    rt.aborts
        .lock()
        .expect("aborts lock")
        .insert(step, t.clone());
    t
}

pub(super) fn forget(rt: &Runtime, step: Uuid) {
    rt.aborts.lock().expect("aborts lock").remove(&step);
}

/// Abort the calls of these steps (their tasks were cancelled).
pub(super) fn abort(aborts: &Aborts, steps: &[Uuid]) {
    let held = aborts.lock().expect("aborts lock");
    for s in steps {
        if let Some(t) = held.get(s) {
            tracing::info!(step = %s, "the task was cancelled: aborting its call in flight");
            t.cancel();
        }
    }
}

/// What an aborted call records: a failure of category `cancelled`, not retried.
pub(super) fn aborted(step: &ClaimedStep) -> Ran {
    Ran::failed(
        &step.tool,
        step.parameters.clone(),
        ToolFailure::new(
            CANCELLED,
            "the task was cancelled while the call ran; the call was aborted",
            false,
        ),
    )
}

/// POST the cancellation to the step's tool's `cancel_url`, if it declares one (with the
/// tool's headers, secrets filled in). A failure is logged: the task is cancelled whatever
/// the tool answers.
pub(super) async fn tell_tool(rt: &Runtime, step: &ClaimedStep) {
    let defs = match rt
        .tools
        .get(&rt.store, step.tools_version, &[&step.tool])
        .await
    {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(tool = %step.tool, error = %e, "could not read the tool to tell it of a cancellation");
            return;
        }
    };
    let Some(def) = defs.get(&step.tool).filter(|d| d.cancel_url.is_some()) else {
        return;
    };
    let secrets = rt.cfg.secret_box.as_ref();
    let headers = match super::call::call_headers(&rt.store, secrets, def).await {
        Ok((h, _)) => h,
        Err(f) => {
            tracing::warn!(tool = %def.id, error = %f.message, "cannot tell the tool of a cancellation");
            return;
        }
    };
    let inv = Invocation {
        task_id: step.task_id,
        step_key: &step.step_key,
        attempt: step.attempt,
        parameters: &step.parameters,
        callback_url: None,
        headers: &headers,
        feedback: None,
        idempotency_key: None,
    };
    match rt.runner.cancel(def, &inv).await {
        Ok(true) => {
            tracing::info!(tool = %def.id, step = %step.step_key, "the tool was told of the cancellation")
        }
        Ok(false) => tracing::warn!(tool = %def.id, "the tool's cancel_url answered with an error"),
        Err(f) => {
            tracing::warn!(tool = %def.id, error = %f.message, "could not tell the tool of the cancellation")
        }
    }
}
