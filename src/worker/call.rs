//! One tool call of a claimed step, and what it runs with: the step's context loaded
//! (`load_context`), the call's idempotency key and header secrets, the call itself
//! (`call_tool`: its output scrubbed of secrets and checked against the output schema), and
//! what a run comes to (`Ran`, or `Hold` when it records no attempt). `execute` runs a step
//! with it; `waits`, `maps` and `cancel` use it without `execute`.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::Runtime;
use crate::domain::params;
use crate::domain::plan::{self, Reference};
use crate::domain::{ActionSpec, ToolFailure};
use crate::store::StoreError;
use crate::store::step_queue::{ClaimedStep, StepContext, ToolWait};
use crate::tools::{Invocation, ToolDef, ToolOutput, ToolRunner};

/// Outcome of running a step's tool(s).
pub(super) struct Ran {
    pub(super) tool: String,
    pub(super) parameters: Value,
    pub(super) result: Result<ToolOutput, ToolFailure>,
    /// The call's idempotency key, when its tool got one (HTTP and MCP tools, `http_request`).
    pub(super) call_key: Option<String>,
}

impl Ran {
    pub(super) fn failed(tool: &str, parameters: Value, f: ToolFailure) -> Self {
        Ran::new(tool, parameters, Err(f))
    }

    pub(super) fn new(
        tool: &str,
        parameters: Value,
        result: Result<ToolOutput, ToolFailure>,
    ) -> Self {
        Ran {
            tool: tool.to_string(),
            parameters,
            result,
            call_key: None,
        }
    }
}

/// A step that records no attempt now.
pub(super) enum Hold {
    /// Given back until a time: its tool's circuit is open or a rate limit holds it.
    Defer(ToolWait),
    /// Parked on its wait (or its lease was lost meanwhile): nothing more to do here.
    Parked,
}

impl From<ToolWait> for Hold {
    fn from(w: ToolWait) -> Self {
        Hold::Defer(w)
    }
}

/// What every tool call of one claimed step runs with.
#[derive(Clone, Copy)]
pub(super) struct Env<'a> {
    pub(super) runner: &'a ToolRunner,
    pub(super) step: &'a ClaimedStep,
    pub(super) ctx: &'a StepContext,
    /// Where a tool's header secrets are read at call time, and the key that opens them.
    pub(super) store: &'a crate::store::Store,
    pub(super) secrets: Option<&'a crate::secretbox::SecretBox>,
    /// Derives each call's idempotency key.
    pub(super) keys: &'a crate::domain::call_key::CallKeys,
}

/// One tool call: the tool, its name (the step's key, `<step>.<action>` for an action: what
/// its idempotency key is derived from with the rest of the call), its unresolved parameters.
#[derive(Clone, Copy)]
pub(super) struct Call<'a> {
    pub(super) tool: &'a str,
    pub(super) key: &'a str,
    pub(super) parameters: &'a Value,
}

impl Env<'_> {
    /// The idempotency key of `call` to `def` with `resolved`: the same for every attempt of
    /// the same call ([`crate::domain::call_key`]). Only tools that are sent one get one.
    pub(super) fn call_key(
        &self,
        call: &Call<'_>,
        def: &ToolDef,
        resolved: &Value,
    ) -> Option<String> {
        use crate::domain::tool::ToolKind;
        let sent = match ToolKind::parse(&def.kind) {
            Some(ToolKind::Http | ToolKind::Mcp) => true,
            _ => def.id == "http_request" || def.id == crate::domain::wait::TASK_TOOL,
        };
        sent.then(|| {
            self.keys.key(&crate::domain::call_key::Call {
                task_id: self.step.task_id,
                step_row: self.step.id,
                name: call.key,
                tool: &def.id,
                parameters: resolved,
                feedback: self.step.feedback.as_ref(),
            })
        })
    }
}

/// What the placeholders and tools of a step need. The claim brought the merged metadata and
/// the outputs of the step's direct dependencies, and the tools come from the worker's cache;
/// only a placeholder naming a transitive dependency costs a read.
pub(super) async fn load_context(
    rt: &Runtime,
    step: &ClaimedStep,
    parameters: &Value,
    actions: &[ActionSpec],
) -> Result<StepContext, ToolFailure> {
    let unavailable = |e: StoreError| {
        ToolFailure::new(
            "tool_error",
            format!("could not load the step's context: {e}"),
            true,
        )
    };
    let mut keys = HashSet::new();
    let mut tool_ids: Vec<&str> = actions.iter().map(|a| a.tool.as_str()).collect();
    if !step.tool.is_empty() {
        tool_ids.push(&step.tool);
    }
    let own = params::resolvable(&step.tool, parameters);
    for v in std::iter::once(own.as_ref()).chain(actions.iter().map(|a| &a.parameters)) {
        let refs = plan::references_in(v, step.item_name.as_deref())
            .map_err(|e| param_error(e.message))?;
        keys.extend(refs.into_iter().filter_map(|r| match r {
            Reference::Step { key, .. } => Some(key),
            _ => None,
        }));
    }
    let mut outputs: HashMap<String, Value> = match &step.outputs {
        Value::Object(m) => m.clone().into_iter().collect(),
        _ => HashMap::new(),
    };
    let missing: Vec<String> = keys
        .into_iter()
        .filter(|k| !outputs.contains_key(k))
        .collect();
    if !missing.is_empty() {
        let read = rt
            .store
            .step_outputs(step.task_id, step.plan_version, &missing)
            .await
            .map_err(unavailable)?;
        outputs.extend(read);
    }
    let tools = rt
        .tools
        .get(&rt.store, step.tools_version, &tool_ids)
        .await
        .map_err(unavailable)?;
    Ok(StepContext {
        outputs,
        metadata: match &step.metadata {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        },
        context: step.context.clone(),
        tools,
    })
}

/// Call `def` with `resolved` under the call's idempotency key, and check its output.
pub(super) async fn call_tool(
    env: Env<'_>,
    call: &Call<'_>,
    def: &ToolDef,
    resolved: Value,
    callback_url: Option<&str>,
) -> Ran {
    let Env { runner, step, .. } = env;
    let Call { tool, key, .. } = *call;
    let call_key = env.call_key(call, def, &resolved);
    let (headers, values) = match call_headers(env.store, env.secrets, def).await {
        Ok(h) => h,
        Err(f) => return Ran::failed(tool, resolved, f),
    };
    let invocation = Invocation {
        task_id: step.task_id,
        step_key: key,
        attempt: step.attempt,
        parameters: &resolved,
        callback_url,
        headers: &headers,
        feedback: step.feedback.as_ref(),
        idempotency_key: call_key.as_deref(),
    };
    let mut result = runner.run(def, &invocation).await;
    if !values.is_empty() {
        // a tool that echoes its credential gets it redacted before anything is stored
        result = scrubbed(result, &values);
    }
    if let (Ok(out), Some(schema)) = (&result, &def.checks.output) {
        let wrong = schema.violations(&out.output);
        if !wrong.is_empty() {
            result = Err(ToolFailure::new(
                OUTPUT_MISMATCH,
                format!(
                    "the output does not match the output schema of {tool:?}: {}",
                    wrong.join("; ")
                ),
                false,
            ));
        }
    }
    Ran {
        tool: tool.to_string(),
        parameters: resolved,
        result,
        call_key,
    }
}

/// A tool's call headers with their `${secret.NAME}` references filled in (read and opened
/// now, so a rotated secret takes effect on the next call), and the secret values used.
pub(super) async fn call_headers(
    store: &crate::store::Store,
    secrets: Option<&crate::secretbox::SecretBox>,
    def: &ToolDef,
) -> Result<crate::secretbox::OpenedHeaders, ToolFailure> {
    let headers = &def.headers.0;
    let names = crate::secretbox::referenced(headers);
    let sealed = if names.is_empty() {
        Vec::new()
    } else {
        store.sealed_secrets(&names).await.map_err(|e| {
            let why = format!("could not read the tool's secrets: {e}");
            ToolFailure::new("tool_error", why, true)
        })?
    };
    crate::secretbox::open_headers(headers, secrets, sealed).map_err(|why| {
        ToolFailure::new("secret_missing", format!("tool {:?}: {why}", def.id), false)
    })
}

/// `result` with every secret value replaced by `[redacted]`, wherever it appears.
fn scrubbed(
    result: Result<ToolOutput, ToolFailure>,
    values: &[String],
) -> Result<ToolOutput, ToolFailure> {
    use crate::domain::secrets::scrub;
    let scrub_json = |v: &Value| -> Value {
        serde_json::from_str(&scrub(&v.to_string(), values)).unwrap_or(Value::Null)
    };
    match result {
        Ok(mut out) => {
            out.output = scrub_json(&out.output);
            for v in out.output_params.values_mut() {
                *v = scrub_json(v);
            }
            Ok(out)
        }
        Err(mut f) => {
            f.message = scrub(&f.message, values);
            f.detail = f.detail.map(|d| scrub(&d, values).into());
            for v in f.hints.values_mut() {
                *v = scrub_json(v);
            }
            Err(f)
        }
    }
}

/// A tool's output did not match its `output_schema` (the seeds' step evaluation).
pub const OUTPUT_MISMATCH: &str = "output_mismatch";

pub(super) fn param_error(message: String) -> ToolFailure {
    ToolFailure::new("parameter_error", message, false)
}
