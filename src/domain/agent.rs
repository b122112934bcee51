//! The agent step (pure): what the built-in `agent` asks for (`{"instructions", "input"?,
//! "tools", "max_turns"?, "max_cost"?, "output_schema"?, "parallel_tool_calls"?,
//! "approval_for"?}`), the OpenAI chat-completions `tools` its model is offered, how one
//! answer of the model is read (tool calls to run as steps keyed `<agent step>.<turn>.<n>`, or
//! a final answer), and what follows a turn: more calls, the answer, one more ask when the
//! answer breaks `output_schema`, or a stop (`agent_max_turns`, `agent_output_invalid`,
//! `agent_max_cost`).
//!
//! The transcript is OpenAI messages (`system`, `user`, `assistant` with `tool_calls`, `tool`
//! with `tool_call_id`), stored a turn at a time; nothing here calls anything.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::model::ToolFailure;

/// The built-in tool's id.
pub const AGENT_TOOL: &str = "agent";
/// `max_turns` when none is given.
pub const DEFAULT_MAX_TURNS: i32 = 10;
/// The most turns an agent step may ask for.
pub const MAX_TURNS: i32 = 100;
/// The most tools one agent may be offered.
pub const MAX_AGENT_TOOLS: usize = 64;
/// The most tool calls one turn may run (a model asking for more gets the rest refused).
pub const MAX_CALLS_PER_TURN: usize = 16;
/// The longest `instructions`, in characters.
pub const MAX_INSTRUCTIONS_CHARS: usize = 20_000;
/// The longest text of one tool result given back to the model, in characters (a longer one
/// is cut, and says so).
pub const MAX_RESULT_CHARS: usize = 16_000;

/// Why an agent step stopped without an answer.
pub const STOP_MAX_TURNS: &str = "agent_max_turns";
pub const STOP_OUTPUT_INVALID: &str = "agent_output_invalid";
pub const STOP_COST: &str = "agent_max_cost";

/// What an `agent` call asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    pub instructions: String,
    /// What the model is given to work on (its first `user` message).
    pub input: Value,
    /// Registered tool ids it may call, in the order given.
    pub tools: Vec<String>,
    pub max_turns: i32,
    /// The most its LLM calls may cost (the price map's units), beside the task's own limit.
    pub max_cost: Option<f64>,
    /// A JSON Schema the final answer must match (it is then parsed as JSON).
    pub output_schema: Option<Value>,
    /// Whether one turn may ask for several calls, run side by side.
    pub parallel_tool_calls: bool,
    /// Tools whose calls wait for an approval before they run.
    pub approval_for: Vec<String>,
}

fn bad(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new("parameter_error", message, false)
}

/// A list of tool ids (`what` names it in the error).
fn ids(v: &Value, what: &str) -> Result<Vec<String>, ToolFailure> {
    let Value::Array(list) = v else {
        return Err(bad(format!("agent: {what} must be a list of tool ids")));
    };
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for t in list {
        match t.as_str() {
            Some(id) if !id.is_empty() && id.len() <= 200 => {
                if !out.iter().any(|o| o == id) {
                    out.push(id.to_string());
                }
            }
            _ => return Err(bad(format!("agent: {what} must be a list of tool ids"))),
        }
    }
    Ok(out)
}

/// The parameters as an object that names only known parameters.
fn known(p: &Value) -> Result<&Map<String, Value>, ToolFailure> {
    const KNOWN: [&str; 8] = [
        "instructions",
        "input",
        "tools",
        "max_turns",
        "max_cost",
        "output_schema",
        "parallel_tool_calls",
        "approval_for",
    ];
    let Value::Object(map) = p else {
        return Err(bad("agent: parameters must be an object"));
    };
    match map.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        Some(k) => Err(bad(format!("agent: unknown parameter {k:?}"))),
        None => Ok(map),
    }
}

/// `max_turns` (default [`DEFAULT_MAX_TURNS`]) and `max_cost`, checked.
fn bounds(map: &Map<String, Value>) -> Result<(i32, Option<f64>), ToolFailure> {
    let max_turns = match map.get("max_turns") {
        None | Some(Value::Null) => DEFAULT_MAX_TURNS,
        Some(v) => match v.as_i64() {
            Some(n) if (1..=i64::from(MAX_TURNS)).contains(&n) => n as i32,
            _ => {
                return Err(bad(format!(
                    "agent: max_turns must be an integer between 1 and {MAX_TURNS}"
                )));
            }
        },
    };
    let max_cost = match map.get("max_cost") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(c) if c.is_finite() && c > 0.0 => Some(c),
            _ => return Err(bad("agent: max_cost must be a number above 0")),
        },
    };
    Ok((max_turns, max_cost))
}

impl AgentSpec {
    /// The call's parameters, read (a parameter error names what is wrong).
    pub fn from_params(p: &Value) -> Result<AgentSpec, ToolFailure> {
        let map = known(p)?;
        let instructions = match map.get("instructions") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => return Err(bad("agent needs \"instructions\" (a non-empty string)")),
        };
        if instructions.chars().count() > MAX_INSTRUCTIONS_CHARS {
            return Err(bad(format!(
                "agent: instructions must be at most {MAX_INSTRUCTIONS_CHARS} characters"
            )));
        }
        let tools = ids(map.get("tools").unwrap_or(&Value::Null), "tools")?;
        if tools.is_empty() || tools.len() > MAX_AGENT_TOOLS {
            return Err(bad(format!(
                "agent: tools must name between 1 and {MAX_AGENT_TOOLS} tools"
            )));
        }
        if tools.iter().any(|t| t == AGENT_TOOL) {
            return Err(bad("agent: an agent cannot call \"agent\""));
        }
        let (max_turns, max_cost) = bounds(map)?;
        let output_schema = match map.get("output_schema") {
            None | Some(Value::Null) => None,
            Some(s @ Value::Object(_)) => {
                super::schema::check(s).map_err(|e| bad(format!("agent: output_schema is {e}")))?;
                Some(s.clone())
            }
            Some(_) => return Err(bad("agent: output_schema must be a JSON Schema object")),
        };
        let parallel_tool_calls = match map.get("parallel_tool_calls") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(bad("agent: parallel_tool_calls must be true or false")),
        };
        let approval_for = match map.get("approval_for") {
            None | Some(Value::Null) => vec![],
            Some(v) => ids(v, "approval_for")?,
        };
        if let Some(t) = approval_for.iter().find(|t| !tools.contains(t)) {
            return Err(bad(format!(
                "agent: approval_for names {t:?}, which is not in its tools"
            )));
        }
        Ok(AgentSpec {
            instructions,
            input: map.get("input").cloned().unwrap_or(Value::Null),
            tools,
            max_turns,
            max_cost,
            output_schema,
            parallel_tool_calls,
            approval_for,
        })
    }

    /// The first turn's messages: the instructions, then the input.
    pub fn opening(&self) -> Vec<Value> {
        let mut system = self.instructions.clone();
        if let Some(s) = &self.output_schema {
            system.push_str(&format!(
                "\n\nWhen you are done, answer with only one JSON value matching this JSON \
                 Schema: {s}"
            ));
        }
        let input = match &self.input {
            Value::Null => "Begin.".to_string(),
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        vec![
            json!({"role": "system", "content": system}),
            json!({"role": "user", "content": input}),
        ]
    }
}

/// The key of the `n`-th (from 1) call of turn `turn` (from 1) of the agent step `agent`.
pub fn call_step_key(agent: &str, turn: i32, n: usize) -> String {
    format!("{agent}.{turn}.{n}")
}

/// A tool as the model is offered it.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    pub id: String,
    pub description: String,
    /// Its `input_schema` (none: any object).
    pub input_schema: Option<Value>,
}

/// The function names the model sees for an agent's tools, one each: OpenAI's names are
/// `[a-zA-Z0-9_-]{1,64}`, a tool id may be longer or hold other characters (`.`, `:`, an MCP
/// server's prefix). A name that would repeat another gets a number.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FunctionNames {
    by_name: BTreeMap<String, String>,
    by_tool: BTreeMap<String, String>,
}

impl FunctionNames {
    pub fn new(tools: &[String]) -> FunctionNames {
        let mut names = FunctionNames::default();
        for t in tools {
            let base: String = t
                .chars()
                .map(|c| match c {
                    'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
                    _ => '_',
                })
                .take(60)
                .collect();
            let mut name = base.clone();
            let mut n = 2;
            while names.by_name.contains_key(&name) {
                name = format!("{base}_{n}");
                n += 1;
            }
            names.by_name.insert(name.clone(), t.clone());
            names.by_tool.insert(t.clone(), name);
        }
        names
    }

    /// The tool a function name stands for.
    pub fn tool(&self, name: &str) -> Option<&str> {
        self.by_name.get(name).map(String::as_str)
    }

    /// The function name of a tool.
    pub fn name(&self, tool: &str) -> Option<&str> {
        self.by_tool.get(tool).map(String::as_str)
    }
}

/// The chat-completions `tools` array for these tools.
pub fn openai_tools(names: &FunctionNames, tools: &[OfferedTool]) -> Value {
    let defs: Vec<Value> = tools
        .iter()
        .filter_map(|t| {
            let name = names.name(&t.id)?;
            let parameters = match &t.input_schema {
                Some(s @ Value::Object(_)) => s.clone(),
                _ => json!({"type": "object"}),
            };
            Some(json!({
                "type": "function",
                "function": {"name": name, "description": t.description, "parameters": parameters},
            }))
        })
        .collect();
    Value::Array(defs)
}

/// A tool call the model asked for, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The model's `tool_call_id`.
    pub id: String,
    pub tool: String,
    pub parameters: Value,
}

/// A tool call that cannot run, with the message the model is given for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub id: String,
    pub message: String,
}

/// One answer of the model, read.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Calls to run (and calls refused at once, answered to the model as errors).
    Calls {
        /// The assistant message as it goes into the transcript.
        message: Value,
        calls: Vec<Call>,
        refused: Vec<Refused>,
    },
    /// No call: its text is the final answer.
    Final { message: Value, text: String },
}

/// Read an assistant `message` (the `choices[0].message` of a chat completion). A call to a
/// function not offered, or whose arguments are not a JSON object, is refused (the model is
/// told why); calls past [`MAX_CALLS_PER_TURN`], or past the first when `parallel` is off,
/// are refused too.
pub fn read_answer(message: &Value, names: &FunctionNames, parallel: bool) -> Answer {
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let asked = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if asked.is_empty() {
        return Answer::Final {
            message: json!({"role": "assistant", "content": text}),
            text,
        };
    }
    let most = if parallel { MAX_CALLS_PER_TURN } else { 1 };
    let (mut calls, mut refused) = (Vec::new(), Vec::new());
    let mut kept = Vec::with_capacity(asked.len());
    let mut seen = BTreeSet::new();
    for (i, c) in asked.iter().enumerate() {
        let mut id = c
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|s| s.chars().take(100).collect::<String>())
            .unwrap_or_else(|| format!("call_{}", i + 1));
        if !seen.insert(id.clone()) {
            id = format!("{id}_{}", i + 1);
            seen.insert(id.clone());
        }
        let name = c
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let raw_args = c.pointer("/function/arguments");
        kept.push(json!({
            "id": id,
            "type": "function",
            "function": {"name": name, "arguments": raw_args.cloned().unwrap_or(json!("{}"))},
        }));
        let read = match calls.len() >= most {
            true if parallel => Err(format!(
                "refused: at most {MAX_CALLS_PER_TURN} calls in one turn"
            )),
            true => Err("refused: one call per turn; ask for it again next turn".into()),
            false => read_call(names, name, raw_args),
        };
        match read {
            Ok((tool, parameters)) => calls.push(Call {
                id,
                tool,
                parameters,
            }),
            Err(message) => refused.push(Refused { id, message }),
        }
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    // a string even when empty: OpenAI takes null beside tool_calls, llama-cpp-python's server
    // refuses it (its assistant message's content is a string), and every server takes ""
    message.insert("content".into(), json!(text));
    message.insert("tool_calls".into(), Value::Array(kept));
    Answer::Calls {
        message: Value::Object(message),
        calls,
        refused,
    }
}

/// One call's tool and parameters, or why it is refused.
fn read_call(
    names: &FunctionNames,
    name: &str,
    raw_args: Option<&Value>,
) -> Result<(String, Value), String> {
    let Some(tool) = names.tool(name) else {
        return Err(format!("refused: there is no tool named {name:?}"));
    };
    // arguments come as JSON text; some servers send the object itself
    let parameters = match raw_args {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(s)) if s.trim().is_empty() => json!({}),
        Some(Value::String(s)) => serde_json::from_str::<Value>(s)
            .map_err(|e| format!("refused: arguments are not JSON: {e}"))?,
        Some(v) => v.clone(),
    };
    match parameters {
        p @ Value::Object(_) => Ok((tool.to_string(), p)),
        _ => Err("refused: arguments must be a JSON object".into()),
    }
}

/// How a call ended, as the model is told in its `tool` message.
#[derive(Debug, Clone, PartialEq)]
pub enum CallResult {
    Output(Value),
    /// After Trellis's own recovery did what it could.
    Failed {
        category: String,
        message: String,
    },
    Refused(String),
}

/// The `tool` message answering call `id`.
pub fn tool_message(id: &str, result: &CallResult) -> Value {
    let content = match result {
        CallResult::Output(Value::String(s)) => s.clone(),
        CallResult::Output(v) => v.to_string(),
        CallResult::Failed { category, message } => format!("error ({category}): {message}"),
        CallResult::Refused(m) => m.clone(),
    };
    let content = match content.chars().count() > MAX_RESULT_CHARS {
        true => {
            let cut: String = content.chars().take(MAX_RESULT_CHARS).collect();
            format!("{cut}… [cut at {MAX_RESULT_CHARS} characters]")
        }
        false => content,
    };
    json!({"role": "tool", "tool_call_id": id, "content": content})
}

/// What follows a model's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Run these calls; the next turn sends their results.
    Run,
    /// The step succeeds with this output.
    Done(Value),
    /// The answer breaks `output_schema`: ask once more with this `user` message.
    AskAgain(Value),
    /// The step fails, not retryable, with this category and message.
    Stop {
        reason: &'static str,
        message: String,
    },
}

/// Where an agent step stands after an answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// The turn just answered (from 1).
    pub turn: i32,
    /// What its LLM calls cost so far.
    pub cost: f64,
    /// Whether a final answer was already asked again for its schema.
    pub asked_again: bool,
}

/// Parse a final answer as JSON: the whole text, else the one fenced block it holds.
fn parse_json(text: &str) -> Option<Value> {
    let t = text.trim();
    if let Ok(v) = serde_json::from_str(t) {
        return Some(v);
    }
    let inner = t.split("```").nth(1)?;
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    serde_json::from_str(inner.trim()).ok()
}

/// What follows `answer` for `spec`, given where the step stands. Its cost is checked first
/// (a call past `max_cost` is not run), then the answer: calls run while turns are left (the
/// last turn's calls are not run: no turn would read them), a final answer is the output when
/// it matches `output_schema` (parsed), and is asked again once when it does not.
pub fn after_answer(spec: &AgentSpec, answer: &Answer, at: Progress) -> Next {
    if let Some(max) = spec.max_cost
        && at.cost >= max
    {
        return Next::Stop {
            reason: STOP_COST,
            message: format!(
                "agent: its LLM calls cost {:.4}, its max_cost is {max}",
                at.cost
            ),
        };
    }
    match answer {
        Answer::Calls { .. } if at.turn >= spec.max_turns => Next::Stop {
            reason: STOP_MAX_TURNS,
            message: format!(
                "agent: still calling tools after {} turns (max_turns {})",
                at.turn, spec.max_turns
            ),
        },
        Answer::Calls { .. } => Next::Run,
        Answer::Final { text, .. } => {
            let problems = match (&spec.output_schema, parse_json(text)) {
                // an empty answer answers nothing: a small model's way of giving up
                _ if text.trim().is_empty() => vec!["the answer is empty".to_string()],
                (None, _) => return Next::Done(Value::String(text.clone())),
                (Some(_), None) => vec!["the answer is not JSON".to_string()],
                (Some(schema), Some(v)) => match super::schema::violations(schema, &v) {
                    p if p.is_empty() => return Next::Done(v),
                    p => p,
                },
            };
            if at.asked_again || at.turn >= spec.max_turns {
                return Next::Stop {
                    reason: STOP_OUTPUT_INVALID,
                    message: format!(
                        "agent: the final answer is not valid: {}",
                        problems.join("; ")
                    ),
                };
            }
            let asked = match spec.output_schema {
                Some(_) => "Answer again with only one JSON value that matches the output schema.",
                None => "Answer again: call a tool, or give your final answer.",
            };
            Next::AskAgain(json!({
                "role": "user",
                "content": format!("That answer is not valid: {}. {asked}", problems.join("; ")),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(p: Value) -> AgentSpec {
        AgentSpec::from_params(&p).unwrap()
    }

    fn base() -> Value {
        json!({"instructions": "find it", "tools": ["search", "fetch"]})
    }

    fn with(extra: Value) -> Value {
        let mut p = base();
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        p
    }

    #[test]
    fn parameters_take_their_defaults() {
        let s = spec(base());
        assert_eq!(s.max_turns, DEFAULT_MAX_TURNS);
        assert!(s.parallel_tool_calls);
        assert_eq!(s.tools, vec!["search", "fetch"]);
        assert!(s.approval_for.is_empty() && s.max_cost.is_none() && s.output_schema.is_none());
        assert_eq!(s.input, Value::Null);
    }

    #[test]
    fn bad_parameters_are_named() {
        let cases = [
            (json!({"tools": ["a"]}), "instructions"),
            (json!({"instructions": " ", "tools": ["a"]}), "instructions"),
            (json!({"instructions": "x"}), "tools"),
            (json!({"instructions": "x", "tools": []}), "tools"),
            (json!({"instructions": "x", "tools": [1]}), "tools"),
            (
                json!({"instructions": "x", "tools": ["agent"]}),
                "\"agent\"",
            ),
            (with(json!({"max_turns": 0})), "max_turns"),
            (with(json!({"max_turns": 101})), "max_turns"),
            (with(json!({"max_turns": 2.5})), "max_turns"),
            (with(json!({"max_cost": -1})), "max_cost"),
            (with(json!({"output_schema": "x"})), "output_schema"),
            (with(json!({"output_schema": {"type": 5}})), "output_schema"),
            (
                with(json!({"parallel_tool_calls": "yes"})),
                "parallel_tool_calls",
            ),
            (with(json!({"approval_for": ["other"]})), "approval_for"),
            (with(json!({"surprise": 1})), "surprise"),
            (json!([1]), "object"),
        ];
        for (p, names) in cases {
            let e = AgentSpec::from_params(&p).expect_err(&p.to_string());
            assert_eq!(e.category, "parameter_error");
            assert!(!e.retryable);
            assert!(e.message.contains(names), "{p}: {}", e.message);
        }
        let long = "x".repeat(MAX_INSTRUCTIONS_CHARS + 1);
        assert!(AgentSpec::from_params(&json!({"instructions": long, "tools": ["a"]})).is_err());
        let many: Vec<String> = (0..=MAX_AGENT_TOOLS).map(|i| format!("t{i}")).collect();
        assert!(AgentSpec::from_params(&json!({"instructions": "x", "tools": many})).is_err());
    }

    #[test]
    fn repeated_tools_are_offered_once() {
        let s = spec(json!({"instructions": "x", "tools": ["a", "b", "a"]}));
        assert_eq!(s.tools, vec!["a", "b"]);
    }

    #[test]
    fn the_opening_gives_instructions_input_and_the_schema() {
        let s = spec(with(
            json!({"input": {"q": 1}, "output_schema": {"type": "object"}}),
        ));
        let m = s.opening();
        assert_eq!(m[0]["role"], "system");
        assert!(m[0]["content"].as_str().unwrap().starts_with("find it"));
        assert!(
            m[0]["content"]
                .as_str()
                .unwrap()
                .contains("\"type\":\"object\"")
        );
        assert_eq!(m[1], json!({"role": "user", "content": "{\"q\":1}"}));
        let text = spec(with(json!({"input": "plain words"}))).opening();
        assert_eq!(text[1]["content"], "plain words");
    }

    #[test]
    fn call_keys_name_step_turn_and_call() {
        assert_eq!(call_step_key("research", 2, 1), "research.2.1");
    }

    #[test]
    fn function_names_are_valid_distinct_and_map_back() {
        let tools: Vec<String> = [
            "mcp:files.read",
            "mcp_files_read",
            "ok-name",
            &"x".repeat(90),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let n = FunctionNames::new(&tools);
        let mut seen = BTreeSet::new();
        for t in &tools {
            let name = n.name(t).unwrap();
            assert!(
                !name.is_empty()
                    && name.len() <= 64
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{name}"
            );
            assert!(seen.insert(name.to_string()), "{name} twice");
            assert_eq!(n.tool(name), Some(t.as_str()));
        }
        assert_eq!(n.name("ok-name"), Some("ok-name"));
        assert_eq!(n.tool("nothing"), None);
    }

    #[test]
    fn tools_are_offered_with_their_input_schemas() {
        let tools = vec![
            OfferedTool {
                id: "search".into(),
                description: "finds".into(),
                input_schema: Some(json!({"type": "object", "required": ["q"]})),
            },
            OfferedTool {
                id: "fetch".into(),
                description: "gets".into(),
                input_schema: None,
            },
        ];
        let names = FunctionNames::new(&["search".to_string(), "fetch".to_string()]);
        let v = openai_tools(&names, &tools);
        assert_eq!(v[0]["type"], "function");
        assert_eq!(v[0]["function"]["name"], "search");
        assert_eq!(v[0]["function"]["parameters"]["required"], json!(["q"]));
        assert_eq!(v[1]["function"]["parameters"], json!({"type": "object"}));
    }

    fn call(id: &str, name: &str, args: Value) -> Value {
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
    }

    fn names() -> FunctionNames {
        FunctionNames::new(&["search".to_string(), "fetch".to_string()])
    }

    #[test]
    fn an_answer_without_calls_is_final() {
        let a = read_answer(
            &json!({"role": "assistant", "content": "done"}),
            &names(),
            true,
        );
        assert_eq!(
            a,
            Answer::Final {
                message: json!({"role": "assistant", "content": "done"}),
                text: "done".into()
            }
        );
    }

    #[test]
    fn calls_are_read_and_the_unrunnable_refused_with_a_reason() {
        let m = json!({"role": "assistant", "content": null, "tool_calls": [
            call("c1", "search", json!("{\"q\": \"a\"}")),
            call("c2", "fetch", json!({"url": "u"})),
            call("c3", "nope", json!("{}")),
            call("c4", "search", json!("{not json")),
            call("c5", "search", json!("[1]")),
            call("c1", "fetch", json!("")),
        ]});
        let Answer::Calls {
            message,
            calls,
            refused,
        } = read_answer(&m, &names(), true)
        else {
            panic!("calls expected");
        };
        assert_eq!(
            calls,
            vec![
                Call {
                    id: "c1".into(),
                    tool: "search".into(),
                    parameters: json!({"q": "a"})
                },
                Call {
                    id: "c2".into(),
                    tool: "fetch".into(),
                    parameters: json!({"url": "u"})
                },
                Call {
                    id: "c1_6".into(),
                    tool: "fetch".into(),
                    parameters: json!({})
                },
            ]
        );
        let why: Vec<(&str, &str)> = refused
            .iter()
            .map(|r| (r.id.as_str(), r.message.as_str()))
            .collect();
        assert_eq!(why.len(), 3);
        assert!(why[0].0 == "c3" && why[0].1.contains("no tool named \"nope\""));
        assert!(why[1].0 == "c4" && why[1].1.contains("not JSON"));
        assert!(why[2].0 == "c5" && why[2].1.contains("JSON object"));
        // the transcript keeps every call the model made, each id once
        let ids: Vec<&str> = message["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, vec!["c1", "c2", "c3", "c4", "c5", "c1_6"]);
    }

    #[test]
    fn one_call_per_turn_when_not_parallel_and_a_bound_when_parallel() {
        let m = json!({"tool_calls": [call("a", "search", json!("{}")), call("b", "fetch", json!("{}"))]});
        let Answer::Calls { calls, refused, .. } = read_answer(&m, &names(), false) else {
            panic!()
        };
        assert_eq!((calls.len(), refused.len()), (1, 1));
        assert!(refused[0].message.contains("one call per turn"));
        let many: Vec<Value> = (0..MAX_CALLS_PER_TURN + 3)
            .map(|i| call(&format!("c{i}"), "search", json!("{}")))
            .collect();
        let Answer::Calls { calls, refused, .. } =
            read_answer(&json!({"tool_calls": many}), &names(), true)
        else {
            panic!()
        };
        assert_eq!((calls.len(), refused.len()), (MAX_CALLS_PER_TURN, 3));
    }

    #[test]
    fn tool_messages_carry_the_result_or_the_error_and_are_bounded() {
        let ok = tool_message("c1", &CallResult::Output(json!({"n": 1})));
        assert_eq!(
            ok,
            json!({"role": "tool", "tool_call_id": "c1", "content": "{\"n\":1}"})
        );
        let failed = tool_message(
            "c2",
            &CallResult::Failed {
                category: "bad_request".into(),
                message: "HTTP 400".into(),
            },
        );
        assert_eq!(failed["content"], "error (bad_request): HTTP 400");
        let big = tool_message(
            "c3",
            &CallResult::Output(json!("y".repeat(MAX_RESULT_CHARS * 2))),
        );
        let text = big["content"].as_str().unwrap();
        assert!(text.chars().count() < MAX_RESULT_CHARS + 100 && text.ends_with("characters]"));
    }

    fn at(turn: i32) -> Progress {
        Progress {
            turn,
            cost: 0.0,
            asked_again: false,
        }
    }

    fn calls_answer() -> Answer {
        read_answer(
            &json!({"tool_calls": [call("a", "search", json!("{}"))]}),
            &names(),
            true,
        )
    }

    fn final_answer(text: &str) -> Answer {
        read_answer(&json!({"content": text}), &names(), true)
    }

    #[test]
    fn calls_run_while_turns_are_left_and_the_last_turn_stops() {
        let s = spec(with(json!({"max_turns": 3})));
        assert_eq!(after_answer(&s, &calls_answer(), at(1)), Next::Run);
        assert_eq!(after_answer(&s, &calls_answer(), at(2)), Next::Run);
        let Next::Stop { reason, .. } = after_answer(&s, &calls_answer(), at(3)) else {
            panic!()
        };
        assert_eq!(reason, STOP_MAX_TURNS);
    }

    #[test]
    fn a_final_answer_is_the_output_parsed_when_a_schema_is_given() {
        let plain = spec(base());
        assert_eq!(
            after_answer(&plain, &final_answer("42"), at(1)),
            Next::Done(json!("42"))
        );
        let s = spec(with(
            json!({"output_schema": {"type": "object", "required": ["n"]}}),
        ));
        assert_eq!(
            after_answer(&s, &final_answer("{\"n\": 1}"), at(1)),
            Next::Done(json!({"n": 1}))
        );
        assert_eq!(
            after_answer(&s, &final_answer("Here:\n```json\n{\"n\": 2}\n```"), at(1)),
            Next::Done(json!({"n": 2}))
        );
    }

    /// An empty answer (a small model giving up) is no answer, schema or not: asked again
    /// once, then the step stops.
    #[test]
    fn an_empty_answer_is_asked_again_once_then_stops() {
        let plain = spec(base());
        let Next::AskAgain(m) = after_answer(&plain, &final_answer("  "), at(1)) else {
            panic!()
        };
        assert!(m["content"].as_str().unwrap().contains("empty"));
        let again = Progress {
            asked_again: true,
            ..at(2)
        };
        let Next::Stop { reason, message } = after_answer(&plain, &final_answer(""), again) else {
            panic!()
        };
        assert_eq!(reason, STOP_OUTPUT_INVALID);
        assert!(message.contains("empty"));
    }

    #[test]
    fn an_answer_that_breaks_the_schema_is_asked_again_once_then_stops() {
        let s = spec(with(
            json!({"output_schema": {"type": "object", "required": ["n"]}}),
        ));
        let Next::AskAgain(m) = after_answer(&s, &final_answer("{}"), at(1)) else {
            panic!()
        };
        assert_eq!(m["role"], "user");
        assert!(m["content"].as_str().unwrap().contains("\"n\""));
        let again = Progress {
            asked_again: true,
            ..at(2)
        };
        let Next::Stop { reason, message } = after_answer(&s, &final_answer("nope"), again) else {
            panic!()
        };
        assert_eq!(reason, STOP_OUTPUT_INVALID);
        assert!(message.contains("not JSON"));
        // no turn left to ask in: it stops at once
        let last = spec(with(
            json!({"max_turns": 1, "output_schema": {"type": "object"}}),
        ));
        let Next::Stop { reason, .. } = after_answer(&last, &final_answer("[]"), at(1)) else {
            panic!()
        };
        assert_eq!(reason, STOP_OUTPUT_INVALID);
    }

    #[test]
    fn spending_past_max_cost_stops_before_anything_runs() {
        let s = spec(with(json!({"max_cost": 0.5})));
        let spent = Progress { cost: 0.5, ..at(1) };
        let Next::Stop { reason, .. } = after_answer(&s, &calls_answer(), spent) else {
            panic!()
        };
        assert_eq!(reason, STOP_COST);
        let Next::Stop { .. } = after_answer(&s, &final_answer("x"), spent) else {
            panic!()
        };
        let under = Progress { cost: 0.4, ..at(1) };
        assert_eq!(after_answer(&s, &calls_answer(), under), Next::Run);
    }
}
