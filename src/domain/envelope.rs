//! What an answer's body says about the call, beyond its HTTP status (CONTRACT.md "Recovery,
//! fifth step"). Pure: the runner (`tools.rs`) reads the answer, this decides.
//!
//! - **A 2xx that says it failed.** A tool's `failure_when` rules, then the well-known envelopes:
//!   `{"ok": false, "error": …}` (Slack and RPC-style APIs) and a non-empty top-level `errors`
//!   list (GraphQL, JSON:API). A retry time in the body (`retry_after` in seconds or
//!   `retry_after_ms`, at the top, in `error`, or in an error's `extensions` or `meta`) is
//!   honoured as `Retry-After` is.
//! - **The parameters a tool refused.** A 4xx body that names them, in the four shapes public
//!   APIs use: RFC 9457 problem details (`invalid-params`, or `errors` with `pointer`), FastAPI
//!   and pydantic (`detail[].loc`), JSON:API (`errors[].source.pointer`), OpenAI-style
//!   (`error.param`). Each becomes a violation `at <pointer>: <message>`, as the input schema's
//!   are, so schema repair and upstream healing read them the same way.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::failure::{category, http_class};
use super::model::ToolFailure;
use super::secrets::is_secret_key;

/// Most `failure_when` rules a tool may have.
pub const MAX_RULES: usize = 16;
/// Longest JSON pointer in a rule.
const MAX_POINTER: usize = 512;
/// Largest `equals` value (its JSON).
const MAX_EQUALS_BYTES: usize = 4096;
/// Most violations read from one answer (as many as the input schema reports).
pub const MAX_NAMED: usize = super::schema::MAX_VIOLATIONS;
/// Longest message kept per violation or envelope failure, in characters.
const MAX_MESSAGE: usize = 300;

/// One rule of a tool's `failure_when`: a 2xx answer whose body matches it is a failed call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"pointer": "/status", "equals": "error", "category": "tool_error",
    "retry_after_pointer": "/retry_in"})))]
pub struct FailureRule {
    /// JSON pointer into the answer's body (`/status`, `/result/ok`; empty: the whole body).
    #[schema(pattern = "^(/.*)?$", max_length = 512)]
    pub pointer: String,
    /// The rule matches when the value there equals this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    pub equals: Option<Value>,
    /// `true` (the default without `equals`): the rule matches when a value other than null is
    /// there; `false`: when nothing is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present: Option<bool>,
    /// The failure's category (default `tool_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^[a-z_]{1,64}$")]
    pub category: Option<String>,
    /// Whether the call may be retried (default: true for `tool_error` or when a retry time is
    /// given, else false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
    /// JSON pointer to a retry time in seconds (a number, or a string holding one): the tool is
    /// held until then, as by `Retry-After`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^(/.*)?$", max_length = 512)]
    pub retry_after_pointer: Option<String>,
    /// JSON pointer to the failure's message (default: the value the rule matched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^(/.*)?$", max_length = 512)]
    pub message_pointer: Option<String>,
}

impl FailureRule {
    /// Why the rule cannot be used, for a 422 (None: it can).
    pub fn problem(&self) -> Option<String> {
        let pointer_ok =
            |p: &str| p.chars().count() <= MAX_POINTER && (p.is_empty() || p.starts_with('/'));
        for (field, p) in [
            ("pointer", Some(&self.pointer)),
            ("retry_after_pointer", self.retry_after_pointer.as_ref()),
            ("message_pointer", self.message_pointer.as_ref()),
        ] {
            if let Some(p) = p
                && !pointer_ok(p)
            {
                return Some(format!(
                    "failure_when {field} must be a JSON pointer (empty or starting with '/', at most {MAX_POINTER} characters), not {p:?}"
                ));
            }
        }
        if self.equals.is_some() && self.present.is_some() {
            return Some("a failure_when rule has equals or present, not both".into());
        }
        if let Some(e) = &self.equals
            && e.to_string().len() > MAX_EQUALS_BYTES
        {
            return Some(format!(
                "failure_when equals must be at most {MAX_EQUALS_BYTES} bytes of JSON"
            ));
        }
        if let Some(c) = &self.category
            && (!(1..=64).contains(&c.len())
                || !c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        {
            return Some(format!(
                "failure_when category must be 1-64 lower-case letters or '_', not {c:?}"
            ));
        }
        None
    }

    fn matches(&self, body: &Value) -> Option<Value> {
        let at = body.pointer(&self.pointer);
        let hit = match (&self.equals, self.present) {
            (Some(e), _) => at == Some(e),
            (None, Some(false)) => at.is_none_or(Value::is_null),
            (None, _) => at.is_some_and(|v| !v.is_null()),
        };
        hit.then(|| at.cloned().unwrap_or(Value::Null))
    }
}

/// The `failure_when` rules' problem, if any (at most [`MAX_RULES`], each usable).
pub fn rules_problem(rules: &[FailureRule]) -> Option<String> {
    if rules.len() > MAX_RULES {
        return Some(format!(
            "failure_when has at most {MAX_RULES} rules, not {}",
            rules.len()
        ));
    }
    rules.iter().find_map(FailureRule::problem)
}

/// A 2xx answer's body as a failure, when a rule or a well-known envelope says it is one.
/// `parameters`: the call's, to tell where a refused parameter is.
pub fn failed_answer(
    body: &Value,
    rules: &[FailureRule],
    parameters: &Value,
) -> Option<ToolFailure> {
    for rule in rules {
        let Some(matched) = rule.matches(body) else {
            continue;
        };
        let retry = rule
            .retry_after_pointer
            .as_deref()
            .and_then(|p| body.pointer(p))
            .and_then(seconds_ms);
        let category = rule.category.as_deref().unwrap_or(category::TOOL_ERROR);
        let message = rule
            .message_pointer
            .as_deref()
            .and_then(|p| body.pointer(p))
            .map(text)
            .unwrap_or_else(|| {
                format!(
                    "the answer's {} is {} (failure_when)",
                    shown_pointer(&rule.pointer),
                    short(&matched.to_string())
                )
            });
        let retryable = rule
            .retryable
            .unwrap_or(retry.is_some() || category == category::TOOL_ERROR);
        let mut f = ToolFailure::new(category, message, retryable);
        f.retry_after_ms = retry;
        if category == category::PARAMETER_ERROR {
            f.schema_violations = named_violations(body, parameters).into();
        }
        return Some(f);
    }
    if body.get("ok") == Some(&Value::Bool(false)) {
        let error = body.get("error");
        let code = error
            .map(|e| match e {
                Value::Object(_) => e
                    .get("message")
                    .or_else(|| e.get("code"))
                    .map(text)
                    .unwrap_or_else(|| short(&e.to_string())),
                other => text(other),
            })
            .unwrap_or_default();
        let retry = retry_hint(body);
        let transient = retry.is_some() || sounds_transient(&code);
        let message = match code.is_empty() {
            true => "the answer says \"ok\": false".to_string(),
            false => format!("the answer says \"ok\": false: {code}"),
        };
        let mut f = ToolFailure::new(category::TOOL_ERROR, message, transient);
        f.retry_after_ms = retry;
        return Some(f);
    }
    let errors = body.get("errors").and_then(Value::as_array)?;
    let first = errors.first()?;
    let message = ["message", "detail", "title"]
        .iter()
        .find_map(|k| first.get(*k))
        .map(text)
        .unwrap_or_else(|| short(&first.to_string()));
    // JSON:API errors carry their HTTP status; GraphQL's `extensions.code` names a class
    let status = first.get("status").and_then(|s| {
        s.as_str()
            .and_then(|s| s.parse::<u16>().ok())
            .or(s.as_u64().map(|n| n as u16))
    });
    let code = first
        .pointer("/extensions/code")
        .map(text)
        .unwrap_or_default();
    let retry = retry_hint(body);
    let (category, retryable) = match status {
        Some(s) if (400..600).contains(&s) => http_class(s),
        _ => graphql_class(&code),
    };
    let retryable = retryable || retry.is_some();
    let what = if errors.len() > 1 {
        format!(" (and {} more)", errors.len() - 1)
    } else {
        String::new()
    };
    let mut f = ToolFailure::new(
        category,
        format!("the answer lists errors: {message}{what}"),
        retryable,
    );
    f.retry_after_ms = retry;
    if category == category::PARAMETER_ERROR {
        f.schema_violations = named_violations(body, parameters).into();
    }
    Some(f)
}

/// What a GraphQL error's `extensions.code` says: `(category, retryable)`.
fn graphql_class(code: &str) -> (&'static str, bool) {
    let c = code.to_ascii_uppercase();
    if c.contains("UNAUTHENTICATED") || c.contains("FORBIDDEN") {
        (category::EXTERNAL_ERROR, false)
    } else if c.contains("BAD_USER_INPUT") || c.contains("VALIDATION") || c.contains("PARSE") {
        (category::PARAMETER_ERROR, false)
    } else {
        (category::TOOL_ERROR, sounds_transient(code))
    }
}

/// An error code that says "later" (`ratelimited`, `service_unavailable`, `TIMEOUT`, …).
fn sounds_transient(code: &str) -> bool {
    let c = code.to_ascii_lowercase();
    [
        "rate",
        "limit",
        "throttl",
        "timeout",
        "timed_out",
        "unavailable",
        "internal",
        "temporar",
        "try_again",
        "overload",
        "busy",
    ]
    .iter()
    .any(|w| c.contains(w))
}

/// A retry time in the body, in ms: `retry_after` (seconds) or `retry_after_ms`, at the top,
/// in `error`, or in the first error's `extensions` or `meta` (`retryAfter` too).
pub fn retry_hint(body: &Value) -> Option<u32> {
    let places = [
        Some(body),
        body.get("error").filter(|e| e.is_object()),
        body.pointer("/errors/0/extensions"),
        body.pointer("/errors/0/meta"),
    ];
    places.into_iter().flatten().find_map(|o| {
        o.get("retry_after_ms")
            .and_then(number)
            .map(|ms| ms.ceil().min(f64::from(u32::MAX)) as u32)
            .or_else(|| {
                ["retry_after", "retryAfter"]
                    .iter()
                    .find_map(|k| o.get(*k).and_then(seconds_ms))
            })
    })
}

/// A number, or a string holding one, finite and not negative.
fn number(v: &Value) -> Option<f64> {
    let n = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    (n.is_finite() && n >= 0.0).then_some(n)
}

/// A number of seconds ([`number`]) in ms.
fn seconds_ms(v: &Value) -> Option<u32> {
    number(v).map(|s| (s * 1000.0).ceil().min(f64::from(u32::MAX)) as u32)
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => short(s),
        other => short(&other.to_string()),
    }
}

fn short(s: &str) -> String {
    match s.char_indices().nth(MAX_MESSAGE) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn shown_pointer(p: &str) -> &str {
    if p.is_empty() { "body" } else { p }
}

/// The parameters a tool's answer names as refused, as violations `at <pointer>: <message>`
/// (the input schema's form), at most [`MAX_NAMED`]. Empty: the body names none in a shape
/// known here.
pub fn named_violations(body: &Value, parameters: &Value) -> Vec<String> {
    let mut named: Vec<(String, String)> = Vec::new();
    let list = |k: &str| body.get(k).and_then(Value::as_array).cloned();
    // RFC 9457 problem details: `invalid-params` [{name, reason}]
    for p in list("invalid-params")
        .or_else(|| list("invalid_params"))
        .unwrap_or_default()
    {
        if let Some(name) = p.get("name").and_then(Value::as_str) {
            named.push((name.into(), p.get("reason").map(text).unwrap_or_default()));
        }
    }
    // RFC 9457's `errors` [{detail, pointer}] and JSON:API's [{source: {pointer}, detail}]
    for e in list("errors").unwrap_or_default() {
        let at = e
            .get("pointer")
            .or_else(|| e.pointer("/source/pointer"))
            .or_else(|| e.pointer("/source/parameter"))
            .and_then(Value::as_str);
        if let Some(at) = at {
            let msg = ["detail", "message", "title"]
                .iter()
                .find_map(|k| e.get(*k))
                .map(text)
                .unwrap_or_default();
            named.push((at.into(), msg));
        }
    }
    // FastAPI and pydantic: `detail` [{loc: [...], msg, type}]
    for d in list("detail").unwrap_or_default() {
        if let Some(loc) = d.get("loc").and_then(Value::as_array) {
            let mut segments: Vec<String> = loc
                .iter()
                .map(|s| match s {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            if segments.first().is_some_and(|s| s == "body") {
                segments.remove(0);
            }
            let pointer: String = segments.iter().map(|s| format!("/{}", escape(s))).collect();
            let msg = d.get("msg").map(text).unwrap_or_default();
            let kind = d.get("type").and_then(Value::as_str).unwrap_or_default();
            let msg = match kind.is_empty() {
                true => msg,
                false => format!("{msg} ({kind})"),
            };
            named.push((pointer, msg));
        }
    }
    // OpenAI-style: `error` {param, message}
    if let Some(e) = body.get("error")
        && let Some(param) = e.get("param").and_then(Value::as_str)
    {
        named.push((param.into(), e.get("message").map(text).unwrap_or_default()));
    }
    named
        .into_iter()
        .filter_map(|(at, msg)| {
            let p = within_parameters(&to_pointer(&at)?, parameters);
            let msg = if p.split('/').any(is_secret_key) {
                "refused by the tool (message not shown)".to_string()
            } else if msg.is_empty() {
                "refused by the tool".to_string()
            } else {
                msg
            };
            Some(format!("at {p}: {msg}"))
        })
        .take(MAX_NAMED)
        .collect()
}

/// A parameter's name as a JSON pointer: a pointer (`/items/3/qty`, `#/items/3/qty`) as it
/// is; a path (`items[3].qty`, `items.3.qty`) segment by segment. None: empty.
fn to_pointer(name: &str) -> Option<String> {
    let name = name.trim();
    if let Some(p) = name.strip_prefix('#') {
        return (!p.is_empty()).then(|| p.to_string());
    }
    if name.starts_with('/') {
        return Some(name.to_string());
    }
    let mut out = String::new();
    for part in name.split('.') {
        let (head, rest) = part.split_once('[').unwrap_or((part, ""));
        if !head.is_empty() {
            out.push('/');
            out.push_str(&escape(head));
        }
        for index in rest.split('[') {
            let index = index.trim_end_matches(']').trim_matches(['"', '\'']);
            if !index.is_empty() {
                out.push('/');
                out.push_str(&escape(index));
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// A pointer into the request as one into the call's parameters: the body Trellis sends is
/// `{"parameters": {…}, …}` and a JSON:API document's are under `/data/attributes`; those
/// prefixes are dropped unless the parameters themselves have such a key.
fn within_parameters(p: &str, parameters: &Value) -> String {
    for (prefix, key) in [("/parameters", "parameters"), ("/data/attributes", "data")] {
        if parameters.get(key).is_none()
            && let Some(rest) = p.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return rest.to_string();
        }
    }
    p.to_string()
}

/// The type a violation's message asks for, in JSON Schema's words (`integer`, `number`,
/// `boolean`, `array`, `string`): what a tool's own message says, as schema repair needs it.
/// None: it names no type, or names several that disagree in a way no rule settles.
pub fn expected_type(message: &str) -> Option<&'static str> {
    let m = message.to_ascii_lowercase();
    let words: Vec<&str> = m
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
    let has = |ws: &[&str]| words.iter().any(|w| ws.contains(w));
    // the most specific first: "unable to parse string as an integer" asks for an integer
    if has(&[
        "integer",
        "int",
        "int_parsing",
        "int_type",
        "int_from_float",
        "whole",
    ]) {
        Some("integer")
    } else if has(&[
        "number",
        "float",
        "decimal",
        "numeric",
        "float_parsing",
        "float_type",
    ]) {
        Some("number")
    } else if has(&["boolean", "bool", "bool_parsing", "bool_type"]) {
        Some("boolean")
    } else if has(&["array", "list", "list_type"]) {
        Some("array")
    } else if has(&["string", "str", "string_type", "text"]) {
        Some("string")
    } else {
        None
    }
}

/// A violation `at <pointer>: <message>` split (None: it names no place).
pub fn split_violation(v: &str) -> Option<(&str, &str)> {
    let rest = v.strip_prefix("at ")?;
    let (at, msg) = rest.split_once(": ").unwrap_or((rest, ""));
    at.starts_with('/').then_some((at, msg))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_four_shapes_name_the_same_parameter() {
        let params = json!({"items": [{}, {}, {}, {"qty": "5"}]});
        let bodies = [
            json!({"type": "about:blank", "title": "Unprocessable", "status": 422,
                   "invalid-params": [{"name": "items[3].qty", "reason": "must be an integer"}]}),
            json!({"title": "Unprocessable", "errors": [{"pointer": "#/items/3/qty",
                   "detail": "must be an integer"}]}),
            json!({"detail": [{"loc": ["body", "parameters", "items", 3, "qty"],
                   "msg": "Input should be a valid integer", "type": "int_type"}]}),
            json!({"errors": [{"status": "422", "source": {"pointer": "/parameters/items/3/qty"},
                   "detail": "must be an integer"}]}),
            json!({"error": {"message": "Invalid type for 'items[3].qty': expected an integer",
                   "type": "invalid_request_error", "param": "items[3].qty"}}),
        ];
        for b in bodies {
            let v = named_violations(&b, &params);
            assert_eq!(v.len(), 1, "{b}: {v:?}");
            let (at, msg) = split_violation(&v[0]).expect("a place");
            assert_eq!(at, "/items/3/qty", "{b}");
            assert_eq!(expected_type(msg), Some("integer"), "{b}: {msg}");
        }
    }

    #[test]
    fn an_unknown_shape_names_nothing() {
        let params = json!({"q": 1});
        for b in [
            json!({"message": "bad request"}),
            json!({"error": "q is wrong"}),
            json!({"detail": "Not Found"}),
            json!([1, 2]),
        ] {
            assert!(named_violations(&b, &params).is_empty(), "{b}");
        }
    }

    #[test]
    fn a_parameter_named_parameters_keeps_its_prefix() {
        let params = json!({"parameters": {"x": 1}});
        let b = json!({"error": {"param": "parameters.x", "message": "must be a string"}});
        assert_eq!(
            named_violations(&b, &params),
            vec!["at /parameters/x: must be a string"]
        );
        assert_eq!(to_pointer("a/b.c"), Some("/a~1b/c".into()));
        assert_eq!(to_pointer("rows[\"x\"][2]"), Some("/rows/x/2".into()));
        assert_eq!(to_pointer(""), None);
    }

    #[test]
    fn a_secret_parameters_message_is_not_kept() {
        let b = json!({"error": {"param": "api_key", "message": "sk-123 is not valid"}});
        let v = named_violations(&b, &json!({}));
        assert_eq!(
            v,
            vec!["at /api_key: refused by the tool (message not shown)"]
        );
    }

    #[test]
    fn expected_types_from_messages() {
        for (m, t) in [
            (
                "Input should be a valid integer, unable to parse string as an integer",
                Some("integer"),
            ),
            ("value is not a valid float", Some("number")),
            ("must be a number", Some("number")),
            ("Input should be a valid boolean", Some("boolean")),
            ("must be a list", Some("array")),
            ("must be a string", Some("string")),
            ("is required", None),
            ("intelligence", None),
        ] {
            assert_eq!(expected_type(m), t, "{m}");
        }
    }

    #[test]
    fn the_well_known_envelopes_are_failures() {
        let p = json!({});
        let slack = json!({"ok": false, "error": "channel_not_found"});
        let f = failed_answer(&slack, &[], &p).expect("ok false");
        assert_eq!((f.category.as_str(), f.retryable), ("tool_error", false));
        assert!(f.message.contains("channel_not_found"), "{}", f.message);
        let limited = json!({"ok": false, "error": "ratelimited", "retry_after": 3});
        let f = failed_answer(&limited, &[], &p).expect("ok false");
        assert_eq!((f.retryable, f.retry_after_ms), (true, Some(3000)));
        let graphql = json!({"data": null, "errors": [{"message": "Too many requests",
            "extensions": {"code": "RATE_LIMITED", "retryAfter": 2}}]});
        let f = failed_answer(&graphql, &[], &p).expect("errors");
        assert_eq!((f.retryable, f.retry_after_ms), (true, Some(2000)));
        let input = json!({"errors": [{"message": "qty: must be an integer",
            "extensions": {"code": "BAD_USER_INPUT"}}]});
        let f = failed_answer(&input, &[], &p).expect("errors");
        assert_eq!(
            (f.category.as_str(), f.retryable),
            ("parameter_error", false)
        );
        let jsonapi = json!({"errors": [{"status": "503", "title": "Service Unavailable"}]});
        let f = failed_answer(&jsonapi, &[], &p).expect("errors");
        assert_eq!((f.category.as_str(), f.retryable), ("tool_error", true));
        let jsonapi = json!({"errors": [{"status": "422", "detail": "must be an integer",
            "source": {"pointer": "/data/attributes/qty"}}]});
        let f = failed_answer(&jsonapi, &[], &json!({"qty": "x"})).expect("errors");
        assert_eq!(&*f.schema_violations, ["at /qty: must be an integer"]);
        // what is no envelope stays an output
        for ok in [
            json!({"ok": true}),
            json!({"ok": "false"}),
            json!({"errors": []}),
            json!({"errors": "none"}),
            json!({"output": {"ok": false}}),
            json!("text"),
        ] {
            assert!(failed_answer(&ok, &[], &p).is_none(), "{ok}");
        }
    }

    #[test]
    fn failure_when_rules_match_as_written() {
        let rule = |v: Value| serde_json::from_value::<FailureRule>(v).expect("rule");
        let p = json!({});
        let status = rule(json!({"pointer": "/status", "equals": "error",
            "retry_after_pointer": "/wait", "message_pointer": "/why"}));
        let body = json!({"status": "error", "wait": "1.5", "why": "quota"});
        let f = failed_answer(&body, std::slice::from_ref(&status), &p).expect("matches");
        assert_eq!(
            (
                f.category.as_str(),
                f.retryable,
                f.retry_after_ms,
                f.message.as_str()
            ),
            ("tool_error", true, Some(1500), "quota")
        );
        assert!(failed_answer(&json!({"status": "done"}), &[status], &p).is_none());
        let present = rule(json!({"pointer": "/fault", "category": "external_error"}));
        let f = failed_answer(
            &json!({"fault": {"x": 1}}),
            std::slice::from_ref(&present),
            &p,
        )
        .expect("present");
        assert_eq!(
            (f.category.as_str(), f.retryable),
            ("external_error", false)
        );
        assert!(failed_answer(&json!({"fault": null}), &[present], &p).is_none());
        let absent = rule(json!({"pointer": "/result", "present": false}));
        assert!(failed_answer(&json!({"x": 1}), std::slice::from_ref(&absent), &p).is_some());
        assert!(failed_answer(&json!({"result": 1}), &[absent], &p).is_none());
    }

    #[test]
    fn bad_rules_are_named() {
        let rule = |v: Value| serde_json::from_value::<FailureRule>(v).expect("rule");
        assert!(rule(json!({"pointer": "status"})).problem().is_some());
        assert!(
            rule(json!({"pointer": "/a", "equals": 1, "present": true}))
                .problem()
                .is_some()
        );
        assert!(
            rule(json!({"pointer": "/a", "category": "Bad Category"}))
                .problem()
                .is_some()
        );
        assert!(
            rule(json!({"pointer": "/a", "retry_after_pointer": "x"}))
                .problem()
                .is_some()
        );
        assert!(rule(json!({"pointer": ""})).problem().is_none());
        let many = vec![rule(json!({"pointer": "/a"})); MAX_RULES + 1];
        assert!(rules_problem(&many).is_some());
    }
}
