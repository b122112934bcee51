//! A claimed map step: resolve its list and expand it ([`Store::expand_map`]), or fail it
//! with a clear error (a list that is not one, or too long: never a partial map). The step's
//! tool is not called; its items call it.
//!
//! [`Store::expand_map`]: crate::store::Store::expand_map

use serde_json::{Value, json};

use super::Runtime;
use super::call::{Ran, load_context, param_error};
use crate::domain::model::MapSpec;
use crate::domain::params::{self, Scope};
use crate::domain::{ActionSpec, ToolFailure};
use crate::store::StoreError;
use crate::store::maps::MapFence;
use crate::store::step_queue::ClaimedStep;
use crate::tools::ToolOutput;

/// Expand `step`; `None` once expanded (or when its lease was lost meanwhile), else what to
/// record as its attempt: the failure, or the success of an empty list (output `[]`).
pub(super) async fn expand(rt: &Runtime, step: &ClaimedStep, map: &MapSpec) -> Option<Ran> {
    let recorded = json!({ "map": map });
    let items = match resolve_list(rt, step, map).await {
        Ok(items) => items,
        Err(f) => {
            return Some(Ran::failed("", recorded, f));
        }
    };
    let n = items.as_array().map_or(0, Vec::len);
    if n == 0 {
        return Some(Ran::new(
            "",
            recorded,
            Ok(ToolOutput {
                output: json!([]),
                output_params: Default::default(),
                hold_ms: None,
                pace_ms: None,
                cost: None,
            }),
        ));
    }
    let window = map.max_parallel.map_or(n, |p| p as usize).min(n) as i32;
    let fence = MapFence {
        step_id: step.id,
        task_id: step.task_id,
        lease_token: step.lease_token,
        step_key: &step.step_key,
    };
    let store = &rt.store;
    match super::with_retries(|| Box::pin(store.expand_map(fence, &items, window))).await {
        Ok(()) => {
            tracing::debug!(step = %step.step_key, task = %step.task_id, items = n, "map expanded");
        }
        Err(StoreError::Fenced) => {
            tracing::warn!(step = %step.step_key, task = %step.task_id,
                "lease was taken over before the map was expanded; nothing written");
        }
        Err(e) => {
            tracing::error!(step = %step.step_key, task = %step.task_id, error = %e,
                "could not expand the map; the lease will expire and the step be rescued");
        }
    }
    None
}

/// The map's list: `over` resolved, an array of at most `max_items` (or
/// `[limits] max_steps_per_plan`, and never more than `[limits] max_map_items`) items.
async fn resolve_list(
    rt: &Runtime,
    step: &ClaimedStep,
    map: &MapSpec,
) -> Result<Value, ToolFailure> {
    let probe = Value::String(map.over.clone());
    let no_actions: &[ActionSpec] = &[];
    let ctx = load_context(rt, step, &probe, no_actions).await?;
    let scope = Scope {
        steps: &ctx.outputs,
        metadata: &ctx.metadata,
        context: &ctx.context,
        actions: None,
        item: None,
    };
    let list = params::resolve(&probe, &scope).map_err(|e| param_error(e.0))?;
    let Some(items) = list.as_array() else {
        return Err(param_error(format!(
            "map.over {} resolved to {}, not a list",
            map.over,
            kind_of(&list)
        )));
    };
    let (limit, why) = crate::domain::plan::map_item_limit(map.max_items, rt.cfg.plan_bounds);
    if items.len() > limit {
        // the list will not shrink on a retry: recovery must change the plan or stop
        return Err(ToolFailure::new(
            crate::domain::failure::category::PARAMETER_ERROR,
            format!(
                "map.over {} has {} items, more than {why} ({limit}); no item was started",
                map.over,
                items.len()
            ),
            false,
        ));
    }
    Ok(list)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
