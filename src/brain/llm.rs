//! An OpenAI-compatible chat-completions client for the LLM brain (CONTRACT.md "The LLM brain's
//! wire contract"): `POST {base_url}/chat/completions` with `temperature` and
//! `response_format: {"type": "json_schema", "json_schema": {"name", "schema"}}`, falling back to
//! `{"type": "json_object"}` when the server rejects json_schema; every answer is validated
//! against its schema and re-asked once when invalid; 429, 5xx, timeouts and connection errors
//! are retried with exponential backoff. An agent's turn ([`LlmClient::chat_tools`]) sends the
//! transcript with chat-completions `tools` instead of a response format, through the same
//! retries and fallback, and returns the model's message (its `tool_calls` included). The API key is sent as a Bearer token and never appears
//! in a log line, an error or a `Debug` output.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tracing::Instrument;

use crate::config::LlmSettings;
pub use crate::domain::decision::Usage;
use crate::net::transport_error_kind;

/// A request that did not give an answer: `rejected` with the status that refuses it (not
/// retried), else transient (retried, not before `retry_after` when the server asked).
#[derive(Debug)]
struct Failed {
    rejected: Option<u16>,
    message: String,
    retry_after: Option<Duration>,
}

impl Failed {
    fn transient(message: impl Into<String>) -> Failed {
        Failed {
            rejected: None,
            message: message.into(),
            retry_after: None,
        }
    }
}

/// The longest `Retry-After` of an LLM server the client waits for between two requests.
const MAX_LLM_RETRY_AFTER: Duration = Duration::from_secs(60);

/// A second OpenAI-compatible endpoint, asked when the primary one fails after its retries.
#[derive(Clone)]
pub struct FallbackEndpoint {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
}

#[derive(Clone)]
pub struct LlmConfig {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub temperature: f64,
    /// Nucleus sampling; sent only when set.
    pub top_p: Option<f64>,
    /// `[llm] fallback_base_url` (with `fallback_model`, `fallback_api_key`).
    pub fallback: Option<FallbackEndpoint>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    pub timeout: Duration,
    pub max_retries: u32,
    pub backoff_base: Duration,
}

impl std::fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("model", &self.model)
            .field("temperature", &self.temperature)
            .field("top_p", &self.top_p)
            .field(
                "fallback",
                &self.fallback.as_ref().map(|f| {
                    (
                        &f.base_url,
                        &f.model,
                        f.api_key.as_ref().map(|_| "[redacted]"),
                    )
                }),
            )
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

impl LlmConfig {
    /// `None` when no `[llm] base_url` is configured (the rules brain decides).
    pub fn from_settings(s: &LlmSettings) -> Option<Self> {
        if !s.enabled() {
            return None;
        }
        let base_url = s.base_url.clone()?;
        let model = s.model.clone().unwrap_or_else(|| "gpt-4o-mini".into());
        let fallback = s
            .fallback_base_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(|u| FallbackEndpoint {
                base_url: u.trim_end_matches('/').to_string(),
                api_key: s.fallback_api_key.clone().filter(|k| !k.is_empty()),
                model: s.fallback_model.clone().unwrap_or_else(|| model.clone()),
            });
        Some(Self {
            base_url: base_url.trim().trim_end_matches('/').to_string(),
            api_key: s.api_key.clone().filter(|k| !k.is_empty()),
            model,
            temperature: s.temperature.unwrap_or(0.2),
            top_p: s.top_p,
            fallback,
            max_tokens: s.max_tokens,
            seed: s.seed,
            timeout: Duration::from_secs_f64(s.timeout_secs.unwrap_or(60.0)),
            max_retries: s.max_retries.unwrap_or(3),
            backoff_base: Duration::from_millis(s.retry_backoff_ms.unwrap_or(500)),
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("LLM request failed after {attempts} attempts: {message}")]
    Unavailable { attempts: u32, message: String },
    /// A 4xx other than 429: not retried (a bad key, an unknown model, a bad request).
    #[error("LLM request rejected: {message}")]
    Rejected { status: u16, message: String },
    #[error("LLM answer invalid for {name} after one re-ask: {problems}")]
    Invalid {
        name: String,
        problems: String,
        /// The last answer, as the server sent it (kept, redacted, when
        /// `[debug] save_llm_exchanges` is on: the one answer an operator needs to read).
        raw: String,
    },
}

/// Add the `usage` object of one chat-completions answer.
fn add_usage(total: &mut Usage, v: &Value) {
    let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    total.prompt_tokens += n("prompt_tokens");
    total.completion_tokens += n("completion_tokens");
    total.total_tokens += n("total_tokens");
    total.cached_tokens += v
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
}

/// One chat message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: &'static str,
    pub content: String,
}

impl Message {
    pub fn system(c: impl Into<String>) -> Self {
        Self {
            role: "system",
            content: c.into(),
        }
    }
    pub fn user(c: impl Into<String>) -> Self {
        Self {
            role: "user",
            content: c.into(),
        }
    }
    pub fn assistant(c: impl Into<String>) -> Self {
        Self {
            role: "assistant",
            content: c.into(),
        }
    }
}

/// A validated answer with its raw text (kept for audit) and the usage it cost.
#[derive(Debug, Clone)]
pub struct JsonAnswer {
    pub value: Value,
    pub raw: String,
    pub usage: Usage,
}

#[derive(Debug)]
pub struct LlmClient {
    cfg: LlmConfig,
    http: reqwest::Client,
    /// Which `response_format` the server takes: [`FORMAT_UNKNOWN`] until an answer settles it.
    format: AtomicU8,
    /// Held by the one request that finds the format out; the others wait for it, so a server
    /// refusing `json_schema` sees one refused request however many tasks ask at once.
    probe: tokio::sync::Mutex<()>,
}

const FORMAT_UNKNOWN: u8 = 0;
const FORMAT_SCHEMA: u8 = 1;
const FORMAT_OBJECT: u8 = 2;

enum Sent {
    /// The answer's `choices[0].message`.
    Message(Value),
    SchemaRejected,
}

/// What one request asks for.
#[derive(Clone, Copy)]
enum Ask<'a> {
    /// A JSON answer named `name` that must match `schema`.
    Json {
        name: &'a str,
        schema: &'a Value,
        messages: &'a [Message],
    },
    /// An agent's turn: the model's next message, offered `tools` (chat-completions
    /// `tools`), with `messages` as they go on the wire.
    Tools {
        messages: &'a [Value],
        tools: &'a Value,
        parallel: bool,
    },
}

impl Ask<'_> {
    /// The name of what is asked (the span's `trellis.decision`).
    fn name(&self) -> &str {
        match self {
            Ask::Json { name, .. } => name,
            Ask::Tools { .. } => "agent_turn",
        }
    }
}

/// Where one request goes: the primary endpoint or the fallback.
#[derive(Clone, Copy)]
struct Target<'a> {
    base_url: &'a str,
    api_key: Option<&'a str>,
    model: &'a str,
}

impl LlmClient {
    pub fn new(cfg: LlmConfig) -> Self {
        let http = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .build()
            .expect("reqwest client");
        Self {
            cfg,
            http,
            format: AtomicU8::new(FORMAT_UNKNOWN),
            probe: tokio::sync::Mutex::new(()),
        }
    }

    pub fn config(&self) -> &LlmConfig {
        &self.cfg
    }

    /// Remove the keys first, then shorten (shortening first could leave part of a key).
    fn redact(&self, s: &str) -> String {
        let mut out = s.to_string();
        let fallback_key = self.cfg.fallback.as_ref().and_then(|f| f.api_key.as_ref());
        for k in self.cfg.api_key.iter().chain(fallback_key) {
            out = out.replace(k.as_str(), "[redacted]");
        }
        out.chars().take(300).collect()
    }

    fn primary(&self) -> Target<'_> {
        Target {
            base_url: &self.cfg.base_url,
            api_key: self.cfg.api_key.as_deref(),
            model: &self.cfg.model,
        }
    }

    /// Ask for a JSON answer named `name` that must validate against `schema`.
    pub async fn chat_json(
        &self,
        name: &str,
        schema: &Value,
        messages: Vec<Message>,
    ) -> Result<JsonAnswer, LlmError> {
        self.ask(name, schema, messages, &|_| Ok(())).await.1
    }

    /// Like [`Self::chat_json`], with a further `check` of the answer (e.g. that it parses into
    /// its Rust type and names only registered tools): a failed check is re-asked like an
    /// invalid schema, once. The usage is returned whatever the outcome (tokens were spent).
    pub async fn ask(
        &self,
        name: &str,
        schema: &Value,
        mut messages: Vec<Message>,
        check: &(dyn Fn(&Value) -> Result<(), String> + Sync),
    ) -> (Usage, Result<JsonAnswer, LlmError>) {
        let mut usage = Usage::default();
        let mut last_problems = String::new();
        let mut last_raw = String::new();
        for round in 0..2 {
            let ask = Ask::Json {
                name,
                schema,
                messages: &messages,
            };
            let raw = match self.complete(ask, &mut usage).await {
                Ok(m) => match m.get("content").and_then(Value::as_str) {
                    Some(c) => c.to_string(),
                    None => String::new(),
                },
                Err(e) => return (usage, Err(e)),
            };
            match parse_answer(&raw).and_then(|v| {
                let problems = validate(schema, &v);
                if !problems.is_empty() {
                    return Err(problems.join("; "));
                }
                check(&v)?;
                Ok(v)
            }) {
                Ok(value) => return (usage, Ok(JsonAnswer { value, raw, usage })),
                Err(problems) => {
                    last_problems = problems;
                    last_raw.clone_from(&raw);
                    if round == 0 {
                        tracing::warn!(decision = name, problems = %self.redact(&last_problems), "invalid LLM answer; asking once more");
                        messages.push(Message::assistant(raw));
                        messages.push(Message::user(format!(
                            "That answer is not valid for the {name} schema: {last_problems}. \
                             Reply again with only one JSON object that matches the schema."
                        )));
                    }
                }
            }
        }
        (
            usage,
            Err(LlmError::Invalid {
                name: name.into(),
                problems: self.redact(&last_problems),
                raw: last_raw,
            }),
        )
    }

    /// An agent's turn: the model's next message (`content`, `tool_calls`) after `messages`
    /// (OpenAI wire messages: `system`, `user`, `assistant` with `tool_calls`, `tool`), offered
    /// `tools` (chat-completions `tools`), through the same retries and fallback endpoint as
    /// every decision. The usage is returned whatever the outcome (tokens were spent).
    pub async fn chat_tools(
        &self,
        messages: &[Value],
        tools: &Value,
        parallel: bool,
    ) -> (Usage, Result<Value, LlmError>) {
        let mut usage = Usage::default();
        let ask = Ask::Tools {
            messages,
            tools,
            parallel,
        };
        let answer = self.complete(ask, &mut usage).await;
        (usage, answer)
    }

    /// One completion from the primary endpoint; when it fails after its retries (or rejects
    /// the request), the same request to the fallback endpoint, if one is configured. Returns
    /// the answer's message.
    async fn complete(&self, ask: Ask<'_>, usage: &mut Usage) -> Result<Value, LlmError> {
        let primary = self.complete_at(self.primary(), ask, usage).await;
        match (primary, &self.cfg.fallback) {
            (Err(e), Some(f)) => {
                tracing::warn!(error = %e, fallback = %f.base_url, "primary LLM endpoint failed; asking the fallback");
                let target = Target {
                    base_url: &f.base_url,
                    api_key: f.api_key.as_deref(),
                    model: &f.model,
                };
                let r = self.complete_at(target, ask, usage).await;
                usage.by_fallback = r.is_ok();
                r
            }
            (r, _) => {
                usage.by_fallback = false;
                r
            }
        }
    }

    /// One completion at `target`, retried on 429/5xx/timeouts/connection errors, with the
    /// json_schema → json_object fallback for a JSON answer. Returns the message.
    async fn complete_at(
        &self,
        target: Target<'_>,
        ask: Ask<'_>,
        usage: &mut Usage,
    ) -> Result<Value, LlmError> {
        let json = matches!(ask, Ask::Json { .. });
        let mut attempt = 0u32;
        loop {
            // until the format is known, one request at a time finds it out (held for one
            // send, never across a backoff); a turn with tools sends no format
            let probe = match self.format.load(Ordering::Acquire) {
                FORMAT_UNKNOWN if json => Some(self.probe.lock().await),
                _ => None,
            };
            let use_schema = json && self.format.load(Ordering::Acquire) != FORMAT_OBJECT;
            usage.requests += 1;
            match self.send_once(target, ask, use_schema, usage).await {
                Ok(Sent::Message(c)) => {
                    if use_schema {
                        let _ = self.format.compare_exchange(
                            FORMAT_UNKNOWN,
                            FORMAT_SCHEMA,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        );
                    }
                    return Ok(c);
                }
                Ok(Sent::SchemaRejected) => {
                    tracing::warn!(
                        "the LLM server rejected response_format json_schema; using json_object from now on"
                    );
                    self.format.store(FORMAT_OBJECT, Ordering::Release);
                    continue; // not a retry: the same request in the other format
                }
                // a status: a rejection, not retried; none: transient, retried
                Err(Failed {
                    rejected,
                    message,
                    retry_after,
                }) => {
                    if let Some(status) = rejected {
                        return Err(LlmError::Rejected { status, message });
                    }
                    if attempt >= self.cfg.max_retries {
                        return Err(LlmError::Unavailable {
                            attempts: attempt + 1,
                            message,
                        });
                    }
                    // the backoff, or the server's Retry-After when longer (capped)
                    let backoff = self.cfg.backoff_base.saturating_mul(1 << attempt.min(10));
                    let asked = retry_after.unwrap_or_default().min(MAX_LLM_RETRY_AFTER);
                    let delay = backoff.max(asked);
                    drop(probe);
                    tracing::warn!(attempt = attempt + 1, delay_ms = delay.as_millis() as u64, error = %message, "LLM request failed; retrying");
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
            }
        }
    }

    /// The chat-completions request: `json_schema` when `use_schema`, else `json_object` with
    /// the schema in a system message.
    fn request_body(&self, model: &str, ask: Ask<'_>, use_schema: bool) -> Value {
        let (name, schema, messages) = match ask {
            Ask::Json {
                name,
                schema,
                messages,
            } => (name, schema, messages),
            Ask::Tools {
                messages,
                tools,
                parallel,
            } => {
                let mut body = json!({
                    "model": model,
                    "temperature": self.cfg.temperature,
                    "messages": messages,
                    "tools": tools,
                    "tool_choice": "auto",
                    "parallel_tool_calls": parallel,
                });
                self.sampling(&mut body);
                return body;
            }
        };
        let response_format = if use_schema {
            json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema}})
        } else {
            // llama-cpp-python and vLLM constrain a json_object answer to a `schema` given
            // beside it; servers that do not know the field ignore it
            json!({"type": "json_object", "schema": schema})
        };
        let mut wire: Vec<Value> = messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect();
        if !use_schema {
            // json_object carries no schema: tell the model in words
            wire.insert(
                1.min(wire.len()),
                json!({"role": "system", "content": format!(
                    "Your answer ({name}) must be one JSON object matching this JSON schema: {schema}"
                )}),
            );
        }
        let mut body = json!({
            "model": model,
            "temperature": self.cfg.temperature,
            "messages": wire,
            "response_format": response_format,
        });
        self.sampling(&mut body);
        body
    }

    /// The configured `max_tokens`, `seed` and `top_p`, each only when set.
    fn sampling(&self, body: &mut Value) {
        if let Some(t) = self.cfg.max_tokens {
            body["max_tokens"] = json!(t);
        }
        if let Some(s) = self.cfg.seed {
            body["seed"] = json!(s);
        }
        if let Some(p) = self.cfg.top_p {
            body["top_p"] = json!(p);
        }
    }

    /// One request, in a `chat` span with the GenAI semantic-convention attributes (the
    /// operation, the endpoint, the requested model, the tokens the answer reports).
    async fn send_once(
        &self,
        target: Target<'_>,
        ask: Ask<'_>,
        use_schema: bool,
        usage: &mut Usage,
    ) -> Result<Sent, Failed> {
        let name = ask.name();
        let span = tracing::info_span!(
            "chat",
            "otel.name" = %format_args!("chat {}", target.model),
            "gen_ai.operation.name" = "chat",
            "gen_ai.provider.name" = "openai",
            "gen_ai.request.model" = %target.model,
            "gen_ai.request.temperature" = self.cfg.temperature,
            "gen_ai.request.top_p" = self.cfg.top_p,
            "gen_ai.usage.input_tokens" = tracing::field::Empty,
            "gen_ai.usage.output_tokens" = tracing::field::Empty,
            "server.address" = %target.base_url,
            "trellis.decision" = name,
        );
        let (prompt, completion) = (usage.prompt_tokens, usage.completion_tokens);
        let sent = self
            .send_once_unobserved(target, ask, use_schema, usage)
            .instrument(span.clone())
            .await;
        span.record("gen_ai.usage.input_tokens", usage.prompt_tokens - prompt);
        span.record(
            "gen_ai.usage.output_tokens",
            usage.completion_tokens - completion,
        );
        sent
    }

    async fn send_once_unobserved(
        &self,
        target: Target<'_>,
        ask: Ask<'_>,
        use_schema: bool,
        usage: &mut Usage,
    ) -> Result<Sent, Failed> {
        let body = self.request_body(target.model, ask, use_schema);
        let mut req = self
            .http
            .post(format!("{}/chat/completions", target.base_url))
            .json(&body);
        if let Some(k) = target.api_key {
            req = req.bearer_auth(k);
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => return Err(Failed::transient(transport_error_kind(&e))),
        };
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let date = resp
                    .headers()
                    .get(reqwest::header::DATE)
                    .and_then(|d| d.to_str().ok());
                crate::domain::failure::retry_after_ms(v, date, std::time::SystemTime::now())
            })
            .map(Duration::from_millis);
        let text = match resp.text().await {
            Ok(t) => t,
            Err(e) => {
                return Err(Failed::transient(format!(
                    "reading the answer failed: {}",
                    if e.is_timeout() {
                        "timed out"
                    } else {
                        "broken body"
                    }
                )));
            }
        };
        // a server that refuses `json_schema` says so with a 400, a 422, or (llama-cpp-python)
        // a 500 whose message names response_format: the same request in json_object follows
        if use_schema && status.as_u16() != 429 && !status.is_success() && rejects_schema(&text) {
            return Ok(Sent::SchemaRejected);
        }
        if status.as_u16() == 429 || status.is_server_error() {
            let mut f = Failed::transient(format!("HTTP {status}: {}", self.redact(&text)));
            f.retry_after = retry_after;
            return Err(f);
        }
        if status.is_client_error() {
            return Err(Failed {
                rejected: Some(status.as_u16()),
                message: format!("HTTP {status}: {}", self.redact(&text)),
                retry_after: None,
            });
        }
        let v: Value =
            serde_json::from_str(&text).map_err(|_| Failed::transient("the answer is not JSON"))?;
        if let Some(u) = v.get("usage") {
            add_usage(usage, u);
        }
        answered(ask, &v)
    }
}

/// The answer's message, as `ask` needs it: a JSON answer is its content; a turn's message may
/// carry tool calls instead.
fn answered(ask: Ask<'_>, v: &Value) -> Result<Sent, Failed> {
    let message = v.pointer("/choices/0/message").filter(|m| m.is_object());
    match (ask, message) {
        (Ask::Json { .. }, Some(m)) if m.get("content").is_some_and(Value::is_string) => {
            Ok(Sent::Message(m.clone()))
        }
        (Ask::Tools { .. }, Some(m)) => Ok(Sent::Message(m.clone())),
        (Ask::Json { .. }, _) => Err(Failed::transient(
            "the answer has no choices[0].message.content",
        )),
        (Ask::Tools { .. }, None) => Err(Failed::transient("the answer has no choices[0].message")),
    }
}

/// Whether an error answer is a refusal of `response_format: json_schema` (it names the field
/// or the type): OpenAI and vLLM answer 400, llama-cpp-python 500 ("Input should be 'text' or
/// 'json_object'"), older Ollama 400.
fn rejects_schema(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("response_format") || t.contains("json_schema")
}

/// The JSON object in a model's answer (tolerates a ```json fence around it).
pub fn parse_answer(raw: &str) -> Result<Value, String> {
    let t = raw.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .map(|r| r.trim_end().trim_end_matches("```"))
        .unwrap_or(t);
    serde_json::from_str::<Value>(t.trim()).map_err(|e| format!("not JSON ({e})"))
}

/// Validate an answer against the decision's JSON Schema (the `jsonschema` crate, the same
/// checks the tool inputs get). Returns the problems found, one line each with its place.
pub fn validate(schema: &Value, v: &Value) -> Vec<String> {
    crate::domain::schema::violations(schema, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_answers_with_json_schema() {
        let schema = json!({"type": "object", "required": ["a", "b"], "properties": {
            "a": {"type": "integer", "minimum": 0, "maximum": 100},
            "b": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
            "c": {"type": ["string", "null"]}}});
        assert!(validate(&schema, &json!({"a": 5, "b": ["x"], "c": null})).is_empty());
        let p = validate(&schema, &json!({"a": 500, "b": ["z", 1]}));
        assert!(p.iter().any(|x| x.starts_with("at /a:")), "{p:?}");
        assert!(p.iter().any(|x| x.starts_with("at /b/0:")), "{p:?}");
        assert!(p.iter().any(|x| x.starts_with("at /b/1:")), "{p:?}");
        let missing = validate(&schema, &json!({"b": []}));
        assert_eq!(missing.len(), 1);
        assert!(missing[0].contains("\"a\""), "{missing:?}");
        assert_eq!(validate(&schema, &json!([1])).len(), 1);
    }

    #[test]
    fn parses_fenced_and_plain_answers() {
        assert_eq!(
            parse_answer("```json\n{\"a\": 1}\n```").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(parse_answer(" {\"a\": 1} ").unwrap(), json!({"a": 1}));
        assert!(parse_answer("sure! here it is").is_err());
    }

    #[test]
    fn debug_never_shows_the_key() {
        let cfg = LlmConfig::from_settings(&LlmSettings {
            base_url: Some("http://x/v1/".into()),
            api_key: Some("sk-secret-123".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(cfg.base_url, "http://x/v1");
        assert!(!format!("{cfg:?}").contains("sk-secret-123"));
        assert!(format!("{:?}", LlmClient::new(cfg)).contains("[redacted]"));
    }
}
