//! Tools: the registry record, the built-ins (`echo`, `sleep`, `fail`, `flaky`, `http_request`)
//! and HTTP tools per CONTRACT.md "HTTP tools". Running a tool never touches the database.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::domain::model::ToolFailure;
use crate::domain::nul;
pub use crate::domain::tool::ToolDef;
use crate::domain::{envelope, failure};
use crate::net::{self, Outbound};

/// The header that carries a call's idempotency key.
pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

/// Longest sleep the `sleep` built-in takes, in milliseconds (one hour).
pub const MAX_SLEEP_MS: u64 = 3_600_000;

pub const BUILTIN_TOOLS: [&str; 10] = [
    "echo",
    "sleep",
    "fail",
    "flaky",
    "http_request",
    "approval",
    "wait_event",
    "sleep_until",
    "task",
    "agent",
];

/// One call of a tool.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    pub task_id: Uuid,
    pub step_key: &'a str,
    pub attempt: i32,
    pub parameters: &'a Value,
    /// An async tool's call: where it reports its result (`…/complete`, `…/fail`,
    /// `…/heartbeat`).
    pub callback_url: Option<&'a str>,
    /// The tool's headers, secrets filled in (HTTP tools).
    pub headers: &'a [(String, String)],
    /// Why the step runs again: a later step failed on this step's output (HTTP tools get it as
    /// the body's `feedback`).
    pub feedback: Option<&'a Value>,
    /// The call's idempotency key, the same for every attempt of the call
    /// ([`crate::domain::call_key`]): HTTP tools and `http_request` send it as
    /// `Idempotency-Key`, MCP tools in `params._meta` ([`crate::mcp::IDEMPOTENCY_META`]).
    pub idempotency_key: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub output: Value,
    /// Values to copy into the task's runtime metadata.
    pub output_params: Map<String, Value>,
    /// A successful answer that also says nothing is left of the caller's rate limit: no call
    /// of the tool, fleet-wide, for this long (ms).
    pub hold_ms: Option<u32>,
    /// After that hold, one call per this many ms (the rate the answer announced).
    pub pace_ms: Option<u32>,
    /// What the call cost, as the tool reported it (`"usage": {"cost": …}` beside `output`).
    pub cost: Option<f64>,
}

/// Runs tools; cheap to clone (shares one HTTP connection pool). Every HTTP request goes
/// through the outbound policy ([`Outbound`]): guarded resolution, address literals checked,
/// no redirects, no environment proxy, answers read up to `max_output_bytes`.
#[derive(Debug, Clone)]
pub struct ToolRunner {
    http: reqwest::Client,
    outbound: Outbound,
}

impl Default for ToolRunner {
    fn default() -> Self {
        Self::new(Outbound::default())
    }
}

/// Failure categories the runner itself assigns (CONTRACT.md "Outbound requests").
pub mod category {
    pub const BLOCKED_DESTINATION: &str = "blocked_destination";
    pub const OUTPUT_TOO_LARGE: &str = "output_too_large";
    pub const INVALID_OUTPUT: &str = "invalid_output";
}

impl ToolRunner {
    pub fn new(outbound: Outbound) -> Self {
        Self {
            http: outbound.client(),
            outbound,
        }
    }

    /// Run `tool` within its timeout.
    pub async fn run(
        &self,
        tool: &ToolDef,
        inv: &Invocation<'_>,
    ) -> Result<ToolOutput, ToolFailure> {
        let timeout = Duration::from_millis(tool.timeout_ms.max(1) as u64);
        let call = async {
            use crate::domain::tool::ToolKind;
            match ToolKind::parse(&tool.kind) {
                Some(ToolKind::Http) => self.run_http(tool, inv).await,
                Some(ToolKind::Mcp) => self.run_mcp(tool, inv).await,
                _ => self.run_builtin(tool, inv).await,
            }
        };
        let mut result = match tokio::time::timeout(timeout, call).await {
            Ok(r) => r,
            Err(_) => Err(ToolFailure::new(
                "tool_error",
                format!(
                    "tool {} timed out after {} ms",
                    tool.id,
                    timeout.as_millis()
                ),
                true,
            )),
        };
        if let Ok(out) = &mut result {
            for name in &tool.output_params {
                if let Some(v) = out.output.get(name) {
                    out.output_params
                        .entry(name.clone())
                        .or_insert_with(|| v.clone());
                }
            }
        }
        checked(result)
    }

    /// A tool imported from an MCP server: one `tools/call` of its name at its server.
    async fn run_mcp(
        &self,
        tool: &ToolDef,
        inv: &Invocation<'_>,
    ) -> Result<ToolOutput, ToolFailure> {
        let endpoint = tool.endpoint.as_deref().ok_or_else(|| {
            ToolFailure::new(
                "tool_error",
                format!("tool {} has no endpoint", tool.id),
                false,
            )
        })?;
        self.target(endpoint)?;
        crate::mcp::call(
            self.http.clone(),
            endpoint,
            inv.headers,
            &tool.name,
            inv.parameters,
            inv.idempotency_key,
        )
        .await
    }

    async fn run_builtin(
        &self,
        tool: &ToolDef,
        inv: &Invocation<'_>,
    ) -> Result<ToolOutput, ToolFailure> {
        let p = inv.parameters;
        let plain = |output: Value| {
            Ok(ToolOutput {
                output,
                output_params: Map::new(),
                hold_ms: None,
                pace_ms: None,
                cost: None,
            })
        };
        match tool.id.as_str() {
            "echo" => plain(p.clone()),
            "sleep" => {
                let ms = p
                    .get("ms")
                    .and_then(Value::as_u64)
                    .filter(|ms| *ms <= MAX_SLEEP_MS)
                    .ok_or_else(|| {
                        ToolFailure::new(
                            "parameter_error",
                            format!(
                                "sleep needs {{\"ms\": n}} with n between 0 and {MAX_SLEEP_MS}"
                            ),
                            false,
                        )
                    })?;
                tokio::time::sleep(Duration::from_millis(ms)).await;
                plain(json!({ "slept_ms": ms }))
            }
            "fail" => Err(failure_from_params(p)),
            "flaky" => {
                let fail_times = p.get("fail_times").and_then(Value::as_i64).unwrap_or(1);
                if i64::from(inv.attempt) <= fail_times {
                    Err(ToolFailure::new(
                        "tool_error",
                        format!("flaky failure {} of {fail_times}", inv.attempt),
                        true,
                    ))
                } else {
                    plain(p.clone())
                }
            }
            "http_request" => self.http_request(p, inv.idempotency_key).await,
            "approval" | "wait_event" | "sleep_until" | "task" | "agent" => Err(ToolFailure::new(
                "parameter_error",
                format!(
                    "{} waits, so it can only be a step's own tool, not an action",
                    tool.id
                ),
                false,
            )),
            other => Err(ToolFailure::new(
                "tool_error",
                format!("tool {other:?} has no built-in implementation"),
                false,
            )),
        }
    }

    /// The built-in `http_request`: the call's idempotency key goes as `Idempotency-Key` unless
    /// the step's own `headers` name one (the plan's author knows the target's keys best).
    async fn http_request(&self, p: &Value, key: Option<&str>) -> Result<ToolOutput, ToolFailure> {
        let url = p.get("url").and_then(Value::as_str).ok_or_else(|| {
            ToolFailure::new("parameter_error", "http_request needs a \"url\"", false)
        })?;
        let url = self.target(url)?;
        let method = p.get("method").and_then(Value::as_str).unwrap_or("GET");
        let method =
            reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes()).map_err(|_| {
                ToolFailure::new("parameter_error", format!("bad method {method:?}"), false)
            })?;
        let mut req = self.http.request(method, url.clone());
        let headers = p.get("headers").and_then(Value::as_object);
        if let Some(key) = key
            && !headers.is_some_and(|h| h.keys().any(|k| k.eq_ignore_ascii_case(IDEMPOTENCY_KEY)))
        {
            req = req.header(IDEMPOTENCY_KEY, key);
        }
        if let Some(h) = headers {
            for (k, v) in h {
                if let Some(v) = v.as_str() {
                    req = req.header(k, v);
                }
            }
        }
        if let Some(body) = p.get("body") {
            req = req.json(body);
        }
        let resp = req.send().await.map_err(|e| transport_failure(e, &url))?;
        let status = resp.status();
        refuse_redirect(&self.outbound, &resp).await?;
        let head = Head::of(&resp);
        let text = self.read_capped(resp, &url).await?;
        // an answer that asks to be tried again (a 5xx, a 429, …) fails the call; any other
        // is the output
        if failure::http_class(status.as_u16()).1 {
            return Err(answer_failure(status.as_u16(), &head, &text, p));
        }
        let body = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
        Ok(ToolOutput {
            output: json!({"status": status.as_u16(), "body": body}),
            output_params: Map::new(),
            hold_ms: None,
            pace_ms: None,
            cost: None,
        })
    }

    /// Parse a destination and check an address literal against the outbound policy (a host
    /// name is checked when it is resolved).
    fn target(&self, raw: &str) -> Result<reqwest::Url, ToolFailure> {
        let url = reqwest::Url::parse(raw).map_err(|_| {
            ToolFailure::new(
                "parameter_error",
                format!("{:?} is not an absolute URL", net::redact_url_text(raw)),
                false,
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolFailure::new(
                "parameter_error",
                "only http and https URLs are allowed",
                false,
            ));
        }
        self.outbound.check_url(&url).map_err(blocked)?;
        Ok(url)
    }

    /// The answer's body as text, read no further than `max_output_bytes`.
    async fn read_capped(
        &self,
        mut resp: reqwest::Response,
        url: &reqwest::Url,
    ) -> Result<String, ToolFailure> {
        let cap = self.outbound.max_output_bytes;
        let too_large = || {
            ToolFailure::new(
                category::OUTPUT_TOO_LARGE,
                format!(
                    "the answer is larger than the {cap}-byte limit ([tools] max_output_bytes)"
                ),
                false,
            )
        };
        if resp.content_length().is_some_and(|n| n > cap) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| transport_failure(e, url))? {
            if (body.len() + chunk.len()) as u64 > cap {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// Tell a tool that its call in flight was cancelled: POST `{tool, task_id, step_id,
    /// attempt}` to its `cancel_url` (through the outbound policy, within 10 s). Whether the
    /// tool answered 2xx.
    pub async fn cancel(&self, tool: &ToolDef, inv: &Invocation<'_>) -> Result<bool, ToolFailure> {
        let Some(raw) = tool.cancel_url.as_deref() else {
            return Ok(false);
        };
        let url = self.target(raw)?;
        let body = json!({
            "tool": tool.id,
            "task_id": inv.task_id,
            "step_id": inv.step_key,
            "attempt": inv.attempt,
        });
        let mut req = self
            .http
            .post(url.clone())
            .timeout(Duration::from_secs(10))
            .header(
                "Idempotency-Key",
                format!("{}:{}:{}:cancel", inv.task_id, inv.step_key, inv.attempt),
            );
        for (name, value) in inv.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        let resp = req
            .json(&body)
            .send()
            .await
            .map_err(|e| transport_failure(e, &url))?;
        Ok(resp.status().is_success())
    }

    async fn run_http(
        &self,
        tool: &ToolDef,
        inv: &Invocation<'_>,
    ) -> Result<ToolOutput, ToolFailure> {
        let endpoint = tool.endpoint.as_deref().ok_or_else(|| {
            ToolFailure::new(
                "tool_error",
                format!("tool {} has no endpoint", tool.id),
                false,
            )
        })?;
        let endpoint = self.target(endpoint)?;
        let mut body = json!({
            "tool": tool.id,
            "parameters": inv.parameters,
            "task_id": inv.task_id,
            "step_id": inv.step_key,
            "attempt": inv.attempt,
        });
        if let Some(url) = inv.callback_url {
            body["callback_url"] = json!(url);
        }
        if let Some(feedback) = inv.feedback {
            body["feedback"] = feedback.clone();
        }
        let mut req = self.http.post(endpoint.clone());
        if let Some(key) = inv.idempotency_key {
            req = req.header(IDEMPOTENCY_KEY, key);
        }
        for (name, value) in inv.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        let resp = req
            .json(&body)
            .send()
            .await
            .map_err(|e| transport_failure(e, &endpoint))?;
        let status = resp.status();
        refuse_redirect(&self.outbound, &resp).await?;
        let head = Head::of(&resp);
        let text = self.read_capped(resp, &endpoint).await?;
        if status.is_success() {
            return success(&head, text, &tool.failure_when, inv.parameters);
        }
        Err(answer_failure(
            status.as_u16(),
            &head,
            &text,
            inv.parameters,
        ))
    }
}

/// What of an answer's headers recovery reads.
struct Head {
    /// When to come back, in milliseconds from the answer: `Retry-After` or a rate limit's
    /// reset, by any convention ([`failure::come_back_ms`]).
    retry_after_ms: Option<u32>,
    /// The rate it announced for after that ([`failure::announced_pace_ms`]).
    pace_ms: Option<u32>,
    /// `Content-Type` says JSON (`application/json` or `…+json`).
    json: bool,
}

impl Head {
    /// The announced pace as a failure carries it (0: none; capped, so it fits).
    fn failure_pace(&self) -> u16 {
        self.pace_ms
            .map_or(0, |ms| ms.min(u32::from(u16::MAX)) as u16)
    }

    fn of(resp: &reqwest::Response) -> Head {
        let h = resp.headers();
        let text = |name| h.get(name).and_then(|v| v.to_str().ok());
        // a 429 says it is limited; any other answer only when a header says nothing is left
        let limited = resp.status().as_u16() == 429;
        let lookup = |name: &str| h.get(name).and_then(|v| v.to_str().ok());
        let json = text(reqwest::header::CONTENT_TYPE).is_some_and(|ct| {
            let essence = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            essence == "application/json" || essence.ends_with("+json")
        });
        let retry_after_ms = failure::come_back_ms(lookup, limited, SystemTime::now())
            .map(|ms| ms.min(u64::from(u32::MAX)) as u32);
        let pace_ms = failure::announced_pace_ms(lookup, retry_after_ms.map_or(0, u64::from))
            .map(|ms| ms.min(crate::domain::circuit::MAX_PACE_MS) as u32);
        Head {
            retry_after_ms,
            pace_ms,
            json,
        }
    }
}

/// A 2xx answer's output: its JSON (its `output` key when it is an object that has one) or,
/// for a body that is not JSON, the text. A body that says it is JSON and does not parse is a
/// failed call (retryable), never a success; so is one that a `failure_when` rule or a
/// well-known envelope says failed ([`envelope::failed_answer`]), held for the retry time its
/// body or its headers give.
fn success(
    head: &Head,
    text: String,
    rules: &[envelope::FailureRule],
    parameters: &Value,
) -> Result<ToolOutput, ToolFailure> {
    let body = match serde_json::from_str::<Value>(&text) {
        Ok(v) => v,
        Err(e) if head.json => {
            let mut f = ToolFailure::new(
                failure::category::TOOL_ERROR,
                format!("the answer says it is JSON but does not parse: {e}"),
                true,
            );
            f.detail = Some(truncate_bytes(&text, MAX_DETAIL_BYTES).into());
            return Err(f);
        }
        Err(_) => Value::String(text),
    };
    if let Some(mut f) = envelope::failed_answer(&body, rules, parameters) {
        f.retry_after_ms = f.retry_after_ms.or(head.retry_after_ms);
        f.pace_ms = head.failure_pace();
        f.retryable |= f.retry_after_ms.is_some_and(|ms| ms > 0);
        return Err(f);
    }
    let output_params = body
        .get("output_params")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // a cost beside the output: a finite number, not negative (anything else is no cost)
    let cost = body
        .pointer("/usage/cost")
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite() && *c >= 0.0)
        .filter(|_| body.get("output").is_some());
    let output = match body.get("output") {
        Some(o) if body.is_object() => o.clone(),
        _ => body,
    };
    Ok(ToolOutput {
        output,
        output_params,
        hold_ms: head.retry_after_ms.filter(|ms| *ms > 0),
        pace_ms: head.pace_ms,
        cost,
    })
}

/// The most of a non-JSON error body kept in the attempt's error `detail`.
const MAX_DETAIL_BYTES: usize = 8 * 1024;

/// A non-2xx answer as a failure (CONTRACT.md "Recovery of real faults"): what its error body
/// declares (`category`, `retryable`, `message`, `hints`) wins; what it leaves out follows
/// from the status ([`failure::http_class`]). A body that is not JSON gives the message its
/// first 200 characters and is kept, up to 8 KB, in `detail`. A parameter error whose body
/// names the parameters it refused carries them as violations
/// ([`envelope::named_violations`]), as a broken input schema does; a body's retry time counts
/// when no header gives one.
fn answer_failure(status: u16, head: &Head, text: &str, parameters: &Value) -> ToolFailure {
    let (category, retryable) = match failure::http_class(status) {
        // GitHub's rate limits answer 403 with a reset or a Retry-After: a wait, not a refusal;
        // a 409 with a Retry-After is an idempotent tool still running this call's key (the
        // IETF draft's "still processing"): the retry, with the same key, gets its answer
        _ if (status == 403 || status == 409) && head.retry_after_ms.is_some() => {
            (failure::category::TOOL_ERROR, true)
        }
        class => class,
    };
    let parsed = serde_json::from_str::<Value>(text).ok();
    let mut f = match parsed.as_ref().and_then(|b| b.get("error")) {
        Some(e) if e.is_object() => {
            let mut f = failure_from_params(e);
            if e.get("retryable").and_then(Value::as_bool).is_none() {
                f.retryable = retryable;
            }
            if e.get("category").and_then(Value::as_str).is_none() {
                f.category = category.into();
            }
            if e.get("message").and_then(Value::as_str).is_none() {
                f.message = format!("HTTP {status}");
            }
            f
        }
        _ => {
            let mut f = ToolFailure::new(
                category,
                format!("HTTP {status}: {}", truncate(text.trim(), 200)),
                retryable,
            );
            if parsed.is_none() && !text.is_empty() {
                f.detail = Some(truncate_bytes(text, MAX_DETAIL_BYTES).into());
            }
            f
        }
    };
    f.http_status = Some(status);
    f.pace_ms = head.failure_pace();
    f.retry_after_ms = head
        .retry_after_ms
        .or_else(|| parsed.as_ref().and_then(envelope::retry_hint));
    if f.category == failure::category::PARAMETER_ERROR
        && let Some(body) = &parsed
    {
        f.schema_violations = envelope::named_violations(body, parameters).into();
    }
    f
}

/// A request that got no answer: refused by the guard (not retryable), or a transport error
/// (retryable). The URL is shown without credentials or query.
fn transport_failure(e: reqwest::Error, url: &reqwest::Url) -> ToolFailure {
    if let Some(b) = net::blocked_in(&e) {
        return blocked(b.clone());
    }
    let what = net::transport_error_kind(&e);
    ToolFailure::new(
        "tool_error",
        format!("{what} ({}): {}", net::redact_url(url), e.without_url()),
        true,
    )
}

fn blocked(b: net::Blocked) -> ToolFailure {
    ToolFailure::new(category::BLOCKED_DESTINATION, b.to_string(), false)
}

/// Redirects are not followed: a 3xx is a non-retryable failure naming where it pointed —
/// `blocked_destination` when that is somewhere the policy refuses, else a `tool_error`.
async fn refuse_redirect(outbound: &Outbound, resp: &reqwest::Response) -> Result<(), ToolFailure> {
    let status = resp.status();
    if !status.is_redirection() {
        return Ok(());
    }
    let target = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|l| resp.url().join(l).ok());
    let location = target
        .as_ref()
        .map(net::redact_url)
        .unwrap_or_else(|| "nowhere".into());
    let refused = match &target {
        Some(t) => outbound.check_destination(t).await.err(),
        None => None,
    };
    let mut f = match refused {
        Some(b) => ToolFailure::new(
            category::BLOCKED_DESTINATION,
            format!("HTTP {status}: a redirect to {location} was not followed: {b}"),
            false,
        ),
        None => ToolFailure::new(
            "tool_error",
            format!("HTTP {status}: redirects are not followed (location: {location})"),
            false,
        ),
    };
    f.http_status = Some(status.as_u16());
    Err(f)
}

/// What a tool returned, made safe to store: an output PostgreSQL cannot store (a NUL
/// character) fails the attempt as `invalid_output`; NULs in a failure's text are replaced.
fn checked(result: Result<ToolOutput, ToolFailure>) -> Result<ToolOutput, ToolFailure> {
    match result {
        Ok(out) => {
            let output = Value::Object(out.output_params.clone());
            match nul::find_nul(&out.output, "output")
                .or_else(|| nul::find_nul(&output, "output_params"))
            {
                None => Ok(out),
                Some(at) => Err(ToolFailure::new(
                    category::INVALID_OUTPUT,
                    format!("{at} contains a NUL character (\\u0000), which cannot be stored"),
                    false,
                )),
            }
        }
        Err(mut f) => {
            nul::scrub(&mut f.message);
            nul::scrub(&mut f.category);
            for v in f.hints.values_mut() {
                nul::scrub_value(v);
            }
            f.hints = std::mem::take(&mut f.hints)
                .into_iter()
                .map(|(mut k, v)| {
                    nul::scrub(&mut k);
                    (k, v)
                })
                .collect();
            Err(f)
        }
    }
}

/// The `fail` built-in's parameters and an HTTP tool's `error` object share one shape.
fn failure_from_params(p: &Value) -> ToolFailure {
    let hints: BTreeMap<String, Value> = p
        .get("hints")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    ToolFailure {
        message: p
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("failed on purpose")
            .to_string(),
        category: p
            .get("category")
            .and_then(Value::as_str)
            .unwrap_or("tool_error")
            .to_string(),
        retryable: p.get("retryable").and_then(Value::as_bool).unwrap_or(false),
        hints,
        ..ToolFailure::new("", "", false)
    }
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn truncate_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin(id: &str) -> ToolDef {
        ToolDef {
            id: id.into(),
            name: id.into(),
            description: String::new(),
            kind: "builtin".into(),
            endpoint: None,
            timeout_ms: 1000,
            input_schema: json!({}),
            output_schema: None,
            output_params: vec![],
            alternatives: vec![],
            tags: vec![],
            max_concurrency: None,
            rate_limit_per_sec: None,
            rate_limit_burst: 1,
            retry: None,
            circuit_breaker: None,
            requires_approval: false,
            cancel_url: None,
            failure_when: Default::default(),
            mode: "sync".into(),
            headers: Default::default(),
            tenant: crate::domain::tenant::DEFAULT.into(),
            paused: false,
            gated: false,
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
            checks: Default::default(),
        }
    }

    fn inv(p: &Value, attempt: i32) -> Invocation<'_> {
        Invocation {
            task_id: Uuid::nil(),
            step_key: "s",
            attempt,
            parameters: p,
            callback_url: None,
            headers: &[],
            feedback: None,
            idempotency_key: None,
        }
    }

    #[tokio::test]
    async fn builtins_behave_as_the_contract_says() {
        let r = ToolRunner::default();
        let p = json!({"a": 1});
        assert_eq!(
            r.run(&builtin("echo"), &inv(&p, 1)).await.unwrap().output,
            p
        );

        let p = json!({"ms": 5});
        assert_eq!(
            r.run(&builtin("sleep"), &inv(&p, 1)).await.unwrap().output,
            json!({"slept_ms": 5})
        );
        let p = json!({"ms": 5000});
        let f = r.run(&builtin("sleep"), &inv(&p, 1)).await.unwrap_err();
        assert!(f.retryable && f.message.contains("timed out"), "{f:?}");

        let p = json!({"message": "m", "category": "external_error", "retryable": false, "hints": {"x": 2}});
        let f = r.run(&builtin("fail"), &inv(&p, 1)).await.unwrap_err();
        assert_eq!(
            (f.message.as_str(), f.category.as_str(), f.retryable),
            ("m", "external_error", false)
        );
        assert_eq!(f.hints.get("x"), Some(&json!(2)));

        let p = json!({"fail_times": 2});
        assert!(r.run(&builtin("flaky"), &inv(&p, 1)).await.is_err());
        assert!(
            r.run(&builtin("flaky"), &inv(&p, 2))
                .await
                .unwrap_err()
                .retryable
        );
        assert_eq!(
            r.run(&builtin("flaky"), &inv(&p, 3)).await.unwrap().output,
            p
        );
    }

    #[tokio::test]
    async fn declared_output_params_are_copied_from_the_output() {
        let r = ToolRunner::default();
        let mut t = builtin("echo");
        t.output_params = vec!["token".into(), "absent".into()];
        let p = json!({"token": "t1", "other": 2});
        let out = r.run(&t, &inv(&p, 1)).await.unwrap();
        assert_eq!(out.output_params.get("token"), Some(&json!("t1")));
        assert!(!out.output_params.contains_key("absent"));
    }

    #[test]
    fn a_409_with_retry_after_is_a_key_still_in_flight_and_is_waited_for() {
        let head = |after: Option<u32>| Head {
            retry_after_ms: after,
            pace_ms: None,
            json: true,
        };
        let body = r#"{"error": {"message": "this key is being processed"}}"#;
        let f = answer_failure(409, &head(Some(1000)), body, &json!({}));
        assert!(f.retryable, "{f:?}");
        assert_eq!(f.category, "tool_error");
        assert_eq!(f.retry_after_ms, Some(1000));
        // a bare 409 is a conflict the tool does not say will pass
        assert!(!answer_failure(409, &head(None), body, &json!({})).retryable);
    }
}
