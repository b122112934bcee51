//! A claimed `agent` step (the agent issue): its next turn. The transcript is read back from
//! its stored turns, the previous turn's calls' results (or errors, after Trellis's own
//! recovery) are added as `tool` messages, and the model is asked, with no transaction open.
//! One fenced transaction then stores the turn and, when the model asked for calls, inserts
//! them as steps and parks the agent step until they end ([`Store::record_agent_turn`]).
//! An answer ends the step (its output), a stop fails it (the task stops with the reason).
//! Turns that run no call (every call refused, or an answer asked again for its schema) go on
//! in the same claim.
//!
//! [`Store::record_agent_turn`]: crate::store::Store::record_agent_turn

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use super::Runtime;
use super::call::{Hold, Ran, load_context, param_error};
use crate::brain::llm::LlmClient;
use crate::domain::ToolFailure;
use crate::domain::agent::{
    AGENT_TOOL, AgentSpec, Answer, CallResult, FunctionNames, Next, OfferedTool, Progress,
    after_answer, call_step_key, openai_tools, read_answer, tool_message,
};
use crate::domain::decision::{LlmCallRecord, Usage};
use crate::domain::params::{self, Scope};
use crate::store::StoreError;
use crate::store::agent::{NewCall, NewTurn, TurnRow};
use crate::store::maps::MapFence;
use crate::store::step_queue::ClaimedStep;
use crate::tools::ToolOutput;

/// What every turn of one claim runs with.
struct Agent {
    spec: AgentSpec,
    names: FunctionNames,
    /// The chat-completions `tools`.
    tools: Value,
    llm: Arc<LlmClient>,
    /// The step's parameters, resolved (recorded on its attempt).
    resolved: Value,
}

/// Where the step stands before its next turn.
struct State {
    /// The transcript so far.
    messages: Vec<Value>,
    /// What the next turn adds before the model answers.
    next: Vec<Value>,
    /// The next turn's number.
    turn: i32,
    cost: f64,
    asked_again: bool,
}

/// Run the step's next turn(s): `None` once its calls were inserted and it parked (or its
/// lease was lost), else what to record as its attempt.
pub(super) async fn turn(rt: &Runtime, step: &ClaimedStep) -> Option<Result<Ran, Hold>> {
    let agent = match prepare(rt, step).await {
        Ok(a) => a,
        Err((resolved, f)) => return Some(Ok(Ran::failed(AGENT_TOOL, resolved, f))),
    };
    let state = match resume(rt, step, &agent).await {
        Ok(Ok(state)) => state,
        Ok(Err(ended)) => return Some(Ok(Ran::new(AGENT_TOOL, agent.resolved, ended))),
        Err(f) => return Some(Ok(Ran::failed(AGENT_TOOL, agent.resolved, f))),
    };
    run_turns(rt, step, &agent, state).await
}

fn unavailable(e: StoreError) -> ToolFailure {
    ToolFailure::new(
        "tool_error",
        format!("agent: could not read or store its turn: {e}"),
        true,
    )
}

/// The step's parameters resolved and read, its tools' definitions, the endpoint.
async fn prepare(rt: &Runtime, step: &ClaimedStep) -> Result<Agent, (Value, ToolFailure)> {
    let mut parameters = step.parameters.clone();
    params::merge_overrides(&mut parameters, &step.param_overrides);
    let ctx = load_context(rt, step, &parameters, &[])
        .await
        .map_err(|f| (parameters.clone(), f))?;
    let scope = Scope {
        steps: &ctx.outputs,
        metadata: &ctx.metadata,
        context: &ctx.context,
        actions: None,
        item: None,
    };
    let resolved =
        params::resolve(&parameters, &scope).map_err(|e| (parameters.clone(), param_error(e.0)))?;
    let spec = AgentSpec::from_params(&resolved).map_err(|f| (resolved.clone(), f))?;
    let Some(llm) = rt.cfg.agent_llm.clone() else {
        let f = ToolFailure::new(
            "tool_unavailable",
            "agent: no LLM endpoint is configured ([llm] base_url)",
            false,
        );
        return Err((resolved, f));
    };
    let ids: Vec<&str> = spec.tools.iter().map(String::as_str).collect();
    let defs = rt
        .tools
        .get(&rt.store, step.tools_version, &ids)
        .await
        .map_err(|e| (resolved.clone(), unavailable(e)))?;
    if let Some(t) = spec.tools.iter().find(|t| !defs.contains_key(*t)) {
        let f = param_error(format!("agent: tools names {t:?}, which is not registered"));
        return Err((resolved, f));
    }
    let offered: Vec<OfferedTool> = spec
        .tools
        .iter()
        .map(|t| {
            let d = &defs[t];
            OfferedTool {
                id: d.id.clone(),
                description: d.description.clone(),
                input_schema: Some(d.input_schema.clone()),
            }
        })
        .collect();
    let names = FunctionNames::new(&spec.tools);
    let tools = openai_tools(&names, &offered);
    Ok(Agent {
        spec,
        names,
        tools,
        llm,
        resolved,
    })
}

/// The stored turns read back: where the step stands, or how it ended (a turn that ended it
/// was stored, and its worker lost before the outcome was).
async fn resume(
    rt: &Runtime,
    step: &ClaimedStep,
    agent: &Agent,
) -> Result<Result<State, Result<ToolOutput, ToolFailure>>, ToolFailure> {
    let rows = rt.store.agent_turns(step.id).await.map_err(unavailable)?;
    if let Some(ended) = rows.last().and_then(|r| r.ended.as_ref()) {
        return Ok(Err(ended_as(ended)));
    }
    let mut state = State {
        messages: Vec::new(),
        next: Vec::new(),
        turn: rows.last().map_or(1, |r| r.turn + 1),
        cost: rows.iter().filter_map(|r| r.cost).sum(),
        asked_again: rows.iter().any(|r| r.asked_again),
    };
    for r in &rows {
        if let Value::Array(m) = &r.messages {
            state.messages.extend(m.iter().cloned());
        }
    }
    state.next = match rows.last() {
        None => agent.spec.opening(),
        Some(last) => results(rt, step, last).await?,
    };
    Ok(Ok(state))
}

fn ended_as(ended: &Value) -> Result<ToolOutput, ToolFailure> {
    match ended.get("output") {
        Some(v) => Ok(output(v.clone())),
        None => Err(ToolFailure::new(
            ended["stop"].as_str().unwrap_or("agent_max_turns"),
            ended["message"].as_str().unwrap_or("agent: stopped"),
            false,
        )),
    }
}

fn output(v: Value) -> ToolOutput {
    ToolOutput {
        output: v,
        output_params: Default::default(),
        hold_ms: None,
        pace_ms: None,
        cost: None,
    }
}

/// The `tool` messages answering the last turn's calls, in the order it asked for them.
async fn results(
    rt: &Runtime,
    step: &ClaimedStep,
    last: &TurnRow,
) -> Result<Vec<Value>, ToolFailure> {
    let asked: &[Value] = last.tool_calls.as_array().map_or(&[], Vec::as_slice);
    let keys: Vec<String> = asked
        .iter()
        .filter_map(|c| c["step_id"].as_str().map(str::to_string))
        .collect();
    let rows = match keys.is_empty() {
        true => Vec::new(),
        false => rt
            .store
            .agent_calls(step.id, &keys)
            .await
            .map_err(unavailable)?,
    };
    let message = |c: &Value| {
        let id = c["id"].as_str().unwrap_or_default();
        let result = match (c["refused"].as_str(), c["step_id"].as_str()) {
            (Some(why), _) => CallResult::Refused(why.to_string()),
            (None, Some(key)) => match rows.iter().find(|r| r.step_key == key) {
                Some(r) if r.status == "succeeded" => {
                    CallResult::Output(r.output.clone().unwrap_or(Value::Null))
                }
                Some(r) => CallResult::Failed {
                    category: r
                        .error
                        .as_ref()
                        .and_then(|e| e["category"].as_str())
                        .unwrap_or("tool_error")
                        .to_string(),
                    message: r
                        .error
                        .as_ref()
                        .and_then(|e| e["message"].as_str())
                        .unwrap_or("the call did not succeed")
                        .to_string(),
                },
                None => CallResult::Refused("the call did not run".into()),
            },
            (None, None) => CallResult::Refused("the call did not run".into()),
        };
        tool_message(id, &result)
    };
    Ok(asked.iter().map(message).collect())
}

/// Ask, store, go on: until calls run (parked), the step ends, or its lease is lost.
async fn run_turns(
    rt: &Runtime,
    step: &ClaimedStep,
    agent: &Agent,
    mut st: State,
) -> Option<Result<Ran, Hold>> {
    let fail = |f: ToolFailure| Some(Ok(Ran::failed(AGENT_TOOL, agent.resolved.clone(), f)));
    loop {
        if let Err(f) = within_budget(rt, step).await {
            return fail(f);
        }
        let mut added = std::mem::take(&mut st.next);
        st.messages.extend(added.iter().cloned());
        let asked = added.len();
        let (answer, llm) = match ask(rt, step, agent, &st.messages).await {
            Ok(a) => a,
            Err(f) => return fail(f),
        };
        let at = Progress {
            turn: st.turn,
            cost: st.cost,
            asked_again: st.asked_again,
        };
        let next = after_answer(&agent.spec, &answer, at);
        let assistant = match &answer {
            Answer::Calls { message, .. } | Answer::Final { message, .. } => message.clone(),
        };
        added.push(assistant);
        let (calls, tool_calls) = match (&next, &answer) {
            (Next::Run, Answer::Calls { message, .. }) => {
                calls_of(step, agent, &st, message, &answer)
            }
            _ => (Vec::new(), json!([])),
        };
        if let Next::AskAgain(m) = &next {
            added.push(m.clone());
        }
        let ended = match &next {
            Next::Done(v) => Some(json!({"output": v})),
            Next::Stop { reason, message } => Some(json!({"stop": reason, "message": message})),
            _ => None,
        };
        let t = NewTurn {
            fence: fence(step),
            turn: st.turn,
            messages: Value::Array(added.clone()),
            tool_calls,
            calls,
            llm,
            asked_again: matches!(next, Next::AskAgain(_)),
            ended,
        };
        match store_turn(rt, step, &t).await {
            Ok(cost) => st.cost += cost.unwrap_or(0.0),
            Err(None) => return None,
            Err(Some(f)) => return fail(f),
        }
        st.messages.extend(added.into_iter().skip(asked));
        match next {
            Next::Done(v) => {
                return Some(Ok(Ran::new(
                    AGENT_TOOL,
                    agent.resolved.clone(),
                    Ok(output(v)),
                )));
            }
            Next::Stop { reason, message } => {
                return fail(ToolFailure::new(reason, message, false));
            }
            Next::AskAgain(_) => st.asked_again = true,
            Next::Run if t.calls.is_empty() => st.next = refused_now(&t.tool_calls),
            Next::Run => return None,
        }
        st.turn += 1;
    }
}

/// The turn's calls to run as steps (numbered from 1 in the order asked), and its
/// `tool_calls` record (refused calls included, in order).
fn calls_of(
    step: &ClaimedStep,
    agent: &Agent,
    st: &State,
    message: &Value,
    answer: &Answer,
) -> (Vec<NewCall>, Value) {
    let Answer::Calls { calls, refused, .. } = answer else {
        return (Vec::new(), json!([]));
    };
    let order: Vec<&str> = message["tool_calls"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["id"].as_str()).collect())
        .unwrap_or_default();
    let (mut run, mut record) = (Vec::new(), Vec::new());
    for id in order {
        if let Some(c) = calls.iter().find(|c| c.id == id) {
            let key = call_step_key(&step.step_key, st.turn, run.len() + 1);
            let approval = agent.spec.approval_for.contains(&c.tool);
            record.push(
                json!({"id": c.id, "tool": c.tool, "parameters": c.parameters,
                               "step_id": key}),
            );
            run.push(NewCall {
                key,
                tool: c.tool.clone(),
                parameters: c.parameters.clone(),
                item: json!({"tool_call_id": c.id, "approval": approval}),
            });
        } else if let Some(r) = refused.iter().find(|r| r.id == id) {
            record.push(
                json!({"id": r.id, "tool": null, "parameters": null, "step_id": null,
                               "refused": r.message}),
            );
        }
    }
    (run, Value::Array(record))
}

/// The `tool` messages of a turn whose every call was refused.
fn refused_now(tool_calls: &Value) -> Vec<Value> {
    tool_calls
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    let why = c["refused"].as_str().unwrap_or("refused").to_string();
                    tool_message(
                        c["id"].as_str().unwrap_or_default(),
                        &CallResult::Refused(why),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn fence(step: &ClaimedStep) -> MapFence<'_> {
    MapFence {
        step_id: step.id,
        task_id: step.task_id,
        lease_token: step.lease_token,
        step_key: &step.step_key,
    }
}

/// Store the turn: its LLM call's cost, or `Err(None)` when the lease was lost (nothing
/// stored), `Err(Some(_))` when it could not be stored (the step's attempt fails, retryably).
async fn store_turn(
    rt: &Runtime,
    step: &ClaimedStep,
    t: &NewTurn<'_>,
) -> Result<Option<f64>, Option<ToolFailure>> {
    let store = &rt.store;
    let warn = rt.cfg.cost_warn_fraction;
    match super::with_retries(|| Box::pin(store.record_agent_turn(t, warn))).await {
        Ok(cost) => Ok(cost),
        Err(StoreError::Fenced) => {
            tracing::warn!(step = %step.step_key, task = %step.task_id,
                "lease was taken over before the agent's turn was stored; nothing written");
            Err(None)
        }
        Err(e) => Err(Some(unavailable(e))),
    }
}

/// The task's caps on LLM calls and tokens, which its turns count against.
async fn within_budget(rt: &Runtime, step: &ClaimedStep) -> Result<(), ToolFailure> {
    let b = rt
        .store
        .llm_budget(step.task_id)
        .await
        .map_err(unavailable)?;
    let over = match (b.max_llm_calls, b.max_llm_tokens) {
        (Some(cap), _) if b.calls >= i64::from(cap) => Some(format!(
            "the task's LLM call cap is reached ({} of {cap} calls)",
            b.calls
        )),
        (_, Some(cap)) if b.tokens >= cap => Some(format!(
            "the task's LLM token cap is reached ({} of {cap} tokens)",
            b.tokens
        )),
        _ => None,
    };
    match over {
        Some(why) => Err(ToolFailure::new(
            "tool_error",
            format!("agent: {why}"),
            false,
        )),
        None => Ok(()),
    }
}

/// One LLM call: the model's answer, read, and the call's record. A call that gave no answer
/// is charged (its tokens were spent) and fails the attempt, retryably: the next claim asks
/// again from the same turn.
async fn ask(
    rt: &Runtime,
    step: &ClaimedStep,
    agent: &Agent,
    messages: &[Value],
) -> Result<(Answer, LlmCallRecord), ToolFailure> {
    let began = Instant::now();
    let parallel = agent.spec.parallel_tool_calls;
    let (usage, answer) = agent.llm.chat_tools(messages, &agent.tools, parallel).await;
    let record = |usage: Usage, error: Option<String>| LlmCallRecord {
        name: "agent_turn".into(),
        model: match &agent.llm.config().fallback {
            Some(f) if usage.by_fallback => f.model.clone(),
            _ => agent.llm.config().model.clone(),
        },
        ok: error.is_none(),
        error,
        usage,
        latency_ms: began.elapsed().as_millis() as i64,
        exchange: None,
    };
    match answer {
        Ok(message) => {
            let answer = read_answer(&message, &agent.names, parallel);
            Ok((answer, record(usage, None)))
        }
        Err(e) => {
            let why = e.to_string();
            if let Err(e) = rt
                .store
                .charge_agent_llm(step.task_id, &record(usage, Some(why.clone())))
                .await
            {
                tracing::warn!(task = %step.task_id, error = %e, "could not record the agent's LLM call");
            }
            Err(ToolFailure::new(
                "tool_error",
                format!("agent: the model gave no answer: {why}"),
                true,
            ))
        }
    }
}
