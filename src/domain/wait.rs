//! Waits: a step that waits for a person (`approval`, or a tool with `requires_approval`), an
//! outside event (`wait_event`), a callback (an async HTTP tool) or a time (`sleep_until`).
//! What a wait asks for ([`WaitSpec`], from the step's resolved parameters) and what its
//! resolution means for the step ([`after_wait`]) are pure; the store keeps the row and moves
//! the step `running → waiting → ready`, and the step's next run reads the resolution.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::auth::Role;
use super::model::ToolFailure;

/// A failure category: a wait expired before anyone resolved it.
pub const WAIT_TIMEOUT: &str = "wait_timeout";
/// A failure category: a person rejected the step.
pub const APPROVAL_REJECTED: &str = "approval_rejected";

/// The built-in tools that wait.
pub const APPROVAL_TOOL: &str = "approval";
pub const WAIT_EVENT_TOOL: &str = "wait_event";
pub const SLEEP_UNTIL_TOOL: &str = "sleep_until";
/// The built-in tool that starts a child task (and waits for it).
pub const TASK_TOOL: &str = "task";
/// A failure category: the child task a step waited for failed or was cancelled.
pub const CHILD_TASK_FAILED: &str = "child_task_failed";

/// The longest a wait may last when it names no timeout (30 days).
pub const MAX_WAIT_SECS: f64 = 30.0 * 86_400.0;

/// A wait's kind (`waits.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    Approval,
    Event,
    Callback,
    Sleep,
    /// A child task started by the step (the built-in `task`).
    Child,
}

impl WaitKind {
    pub const ALL: [WaitKind; 5] = [
        WaitKind::Approval,
        WaitKind::Event,
        WaitKind::Callback,
        WaitKind::Sleep,
        WaitKind::Child,
    ];

    /// Every kind's name, in [`WaitKind::ALL`]'s order (the OpenAPI document's enumeration).
    pub const NAMES: [&'static str; 5] = ["approval", "event", "callback", "sleep", "child"];

    pub fn as_str(self) -> &'static str {
        match self {
            WaitKind::Approval => "approval",
            WaitKind::Event => "event",
            WaitKind::Callback => "callback",
            WaitKind::Sleep => "sleep",
            WaitKind::Child => "child",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// What happens when an approval's time runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    #[default]
    Reject,
    Approve,
}

impl OnTimeout {
    pub fn as_str(self) -> &'static str {
        match self {
            OnTimeout::Reject => "reject",
            OnTimeout::Approve => "approve",
        }
    }
}

/// What a new wait asks for (a `waits` row before it is written).
#[derive(Debug, Clone, PartialEq)]
pub struct WaitSpec {
    pub kind: WaitKind,
    pub prompt: Option<String>,
    pub form: Option<Value>,
    pub role: Option<Role>,
    pub on_timeout: OnTimeout,
    /// A gated call: the tool that runs once approved, and the parameters it would run with.
    pub gated_tool: Option<String>,
    pub parameters: Option<Value>,
    pub event_key: Option<String>,
    pub matcher: Option<Value>,
    /// Seconds from now (the database's clock) until it expires; `None`: never.
    pub expires_in_secs: Option<f64>,
    /// An absolute expiry (`sleep_until` `at`).
    pub expires_at: Option<DateTime<Utc>>,
    /// The child task a `child` wait waits for.
    pub child_task_id: Option<uuid::Uuid>,
}

impl WaitSpec {
    fn new(kind: WaitKind) -> Self {
        WaitSpec {
            kind,
            prompt: None,
            form: None,
            role: None,
            on_timeout: OnTimeout::Reject,
            gated_tool: None,
            parameters: None,
            event_key: None,
            matcher: None,
            expires_in_secs: None,
            expires_at: None,
            child_task_id: None,
        }
    }

    /// The wait a built-in waiting tool asks for, from its resolved parameters; `None` for any
    /// other tool.
    pub fn of_builtin(tool: &str, p: &Value) -> Option<Result<WaitSpec, ToolFailure>> {
        Some(match tool {
            APPROVAL_TOOL => approval(p, None),
            WAIT_EVENT_TOOL => wait_event(p),
            SLEEP_UNTIL_TOOL => sleep_until(p),
            _ => return None,
        })
    }

    /// A call of a tool with `requires_approval`: a person approves `parameters` first.
    pub fn gate(tool: &str, parameters: &Value) -> WaitSpec {
        let mut w = WaitSpec::new(WaitKind::Approval);
        w.prompt = Some(format!("Run tool {tool:?} with these parameters?"));
        w.gated_tool = Some(tool.to_string());
        w.parameters = Some(parameters.clone());
        w.role = Some(Role::Operator);
        w
    }

    /// The end of the child task `child` (no expiry: the child's own deadline bounds it).
    pub fn child(child: uuid::Uuid) -> WaitSpec {
        let mut w = WaitSpec::new(WaitKind::Child);
        w.child_task_id = Some(child);
        w
    }

    /// An async tool's callback, expiring after `secs`.
    pub fn callback(secs: f64) -> WaitSpec {
        let mut w = WaitSpec::new(WaitKind::Callback);
        w.expires_in_secs = Some(secs);
        w
    }
}

fn bad(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new("parameter_error", message, false)
}

fn timeout_secs(p: &Value) -> Result<Option<f64>, ToolFailure> {
    match p.get("timeout_secs") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s <= MAX_WAIT_SECS => Ok(Some(s)),
            _ => Err(bad(format!(
                "timeout_secs must be a number of seconds above 0 and at most {MAX_WAIT_SECS}"
            ))),
        },
    }
}

fn approval(p: &Value, _gated: Option<&str>) -> Result<WaitSpec, ToolFailure> {
    let mut w = WaitSpec::new(WaitKind::Approval);
    w.prompt = Some(
        p.get("prompt")
            .and_then(Value::as_str)
            .unwrap_or("Approve this step?")
            .to_string(),
    );
    w.form = match p.get("form") {
        None | Some(Value::Null) => None,
        Some(f @ Value::Object(_)) => {
            super::schema::Schema::compile(f)
                .map_err(|e| bad(format!("form is not a JSON Schema: {e}")))?;
            Some(f.clone())
        }
        Some(_) => return Err(bad("form must be a JSON Schema object")),
    };
    w.role = Some(match p.get("role").and_then(Value::as_str) {
        None => Role::Operator,
        Some(r) => r
            .parse::<Role>()
            .map_err(|_| bad(format!("role must be reader, operator or admin, not {r:?}")))?,
    });
    w.on_timeout = match p.get("on_timeout").and_then(Value::as_str) {
        None | Some("reject") => OnTimeout::Reject,
        Some("approve") => OnTimeout::Approve,
        Some(o) => {
            return Err(bad(format!(
                "on_timeout must be reject or approve, not {o:?}"
            )));
        }
    };
    w.expires_in_secs = timeout_secs(p)?;
    Ok(w)
}

fn wait_event(p: &Value) -> Result<WaitSpec, ToolFailure> {
    let mut w = WaitSpec::new(WaitKind::Event);
    let key = p
        .get("key")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| bad("wait_event needs a non-empty \"key\""))?;
    w.event_key = Some(key.to_string());
    w.matcher = match p.get("match") {
        None | Some(Value::Null) => None,
        Some(m @ Value::Object(_)) => Some(m.clone()),
        Some(_) => return Err(bad("match must be an object")),
    };
    w.expires_in_secs = timeout_secs(p)?;
    Ok(w)
}

fn sleep_until(p: &Value) -> Result<WaitSpec, ToolFailure> {
    let mut w = WaitSpec::new(WaitKind::Sleep);
    match (p.get("at"), p.get("secs")) {
        (Some(at), None) => {
            let at = at
                .as_str()
                .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
                .ok_or_else(|| bad("at must be an RFC 3339 time"))?;
            w.expires_at = Some(at.with_timezone(&Utc));
        }
        (None, Some(secs)) => {
            let secs = secs
                .as_f64()
                .filter(|s| *s >= 0.0 && *s <= MAX_WAIT_SECS)
                .ok_or_else(|| bad(format!("secs must be between 0 and {MAX_WAIT_SECS}")))?;
            w.expires_in_secs = Some(secs);
        }
        _ => return Err(bad("sleep_until needs exactly one of \"at\" or \"secs\"")),
    }
    Ok(w)
}

/// How a wait was resolved (`waits.resolution`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Resolution {
    /// A person approved (with the parameters they edited, if any).
    Approved {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parameters: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment: Option<String>,
        /// The approval's time ran out and `on_timeout` is `approve`.
        #[serde(default)]
        by_timeout: bool,
    },
    Rejected {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment: Option<String>,
    },
    /// `POST /events` with a matching key and payload.
    Event { payload: Value },
    /// The async tool called back with its output.
    Completed { output: Value },
    /// The async tool called back with its error.
    Failed { error: Value },
    /// A sleep's time came.
    Slept { at: DateTime<Utc> },
    /// The child task ended: its status, and its outputs (succeeded) or its error.
    ChildEnded {
        task_id: uuid::Uuid,
        status: String,
        #[serde(default)]
        outputs: Value,
        #[serde(default)]
        error: Value,
    },
    /// Nobody resolved it in time.
    Timeout,
}

impl Resolution {
    /// The resolution a wait of `kind` gets when it expires at `at`.
    pub fn on_expiry(kind: WaitKind, on_timeout: OnTimeout, at: DateTime<Utc>) -> Resolution {
        match (kind, on_timeout) {
            (WaitKind::Sleep, _) => Resolution::Slept { at },
            (WaitKind::Approval, OnTimeout::Approve) => Resolution::Approved {
                parameters: None,
                comment: None,
                by_timeout: true,
            },
            _ => Resolution::Timeout,
        }
    }

    /// The status the wait row ends in.
    pub fn wait_status(&self) -> &'static str {
        match self {
            Resolution::Timeout => "expired",
            _ => "resolved",
        }
    }
}

/// What the step does with its wait's resolution.
#[derive(Debug, Clone, PartialEq)]
pub enum AfterWait {
    /// The step succeeds with this output (no call).
    Output(Value),
    /// Approved: the gated tool runs now (the edited parameters were installed as the step's
    /// overrides when it was approved).
    Call,
    /// The step's attempt fails (recovery takes over).
    Fail(ToolFailure),
}

/// The step's next move once its wait of `kind` is resolved; `decided_by` is the key that
/// decided an approval. Pure: tested for every kind and resolution below.
pub fn after_wait(
    kind: WaitKind,
    gated: bool,
    r: &Resolution,
    decided_by: Option<uuid::Uuid>,
) -> AfterWait {
    match r {
        Resolution::Approved {
            parameters,
            comment,
            by_timeout,
        } => {
            if gated {
                AfterWait::Call
            } else {
                AfterWait::Output(json!({
                    "approved": true,
                    "parameters": parameters.clone().unwrap_or_else(|| json!({})),
                    "comment": comment,
                    "decided_by": decided_by,
                    "by_timeout": by_timeout,
                }))
            }
        }
        Resolution::Rejected { comment } => AfterWait::Fail(ToolFailure::new(
            APPROVAL_REJECTED,
            match comment {
                Some(c) => format!("rejected by a person: {c}"),
                None => "rejected by a person".to_string(),
            },
            false,
        )),
        Resolution::Event { payload } => AfterWait::Output(payload.clone()),
        Resolution::Completed { output } => AfterWait::Output(output.clone()),
        Resolution::Failed { error } => {
            let text = |k: &str| {
                error
                    .get(k)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
            };
            let mut f = ToolFailure::new(
                text("category").unwrap_or("tool_error"),
                text("message").unwrap_or("the async tool reported a failure"),
                error
                    .get("retryable")
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
            );
            if let Some(Value::Object(h)) = error.get("hints") {
                f.hints = h.clone().into_iter().collect();
            }
            AfterWait::Fail(f)
        }
        Resolution::Slept { at } => AfterWait::Output(json!({ "slept_until": at })),
        Resolution::ChildEnded {
            task_id,
            status,
            outputs,
            error,
        } => match status.as_str() {
            "succeeded" => AfterWait::Output(json!({"task_id": task_id, "outputs": outputs})),
            _ => AfterWait::Fail(child_failed(*task_id, status, error)),
        },
        Resolution::Timeout => AfterWait::Fail(ToolFailure::new(
            WAIT_TIMEOUT,
            format!("the {} wait expired before it was resolved", kind.as_str()),
            // an async tool may be called again; a person or an event that did not come
            // in time is recovery's to decide
            kind == WaitKind::Callback,
        )),
    }
}

/// A child task that did not succeed, as its parent's step failure: the child named, with its
/// failing step and last error.
fn child_failed(task_id: uuid::Uuid, status: &str, error: &Value) -> ToolFailure {
    let why = error
        .get("message")
        .or_else(|| error.get("reason"))
        .and_then(Value::as_str)
        .unwrap_or("no reason given");
    // a tree at its limit stops every ancestor with the same reason; anything else
    // would end the same way with the same child: recovery decides (a repair runs
    // a new child)
    let category = error
        .get("code")
        .and_then(Value::as_str)
        .filter(|c| super::failure::stops_task(c))
        .unwrap_or(CHILD_TASK_FAILED);
    // the child's failing step and its last error, in the parent's context: a
    // transient one (the child spent its retries on a service that was down) is
    // worth a new child; anything else is for the parent's reflection to weigh
    let at = error
        .get("step_id")
        .and_then(Value::as_str)
        .map(|s| format!(" at its step {s}"))
        .unwrap_or_default();
    let last = error.get("last_error").filter(|l| l.is_object());
    let last_said = last
        .and_then(|l| l.get("message"))
        .and_then(Value::as_str)
        .filter(|m| !why.contains(*m))
        .map(|m| {
            let cat = last
                .and_then(|l| l.get("category"))
                .and_then(Value::as_str)
                .unwrap_or("error");
            let m: String = m.chars().take(300).collect();
            format!("; its last error: {cat}: {m}")
        })
        .unwrap_or_default();
    let message = if status == "needs_intervention" {
        format!("child task {task_id} stopped in needs_intervention{at}: {why}{last_said}")
    } else {
        format!("child task {task_id} ended {status}{at}: {why}{last_said}")
    };
    let transient = last
        .and_then(|l| l.get("retryable"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
        && category == CHILD_TASK_FAILED;
    let mut f = ToolFailure::new(category, message, transient);
    let shown = error.to_string();
    if shown.len() > 2 {
        let mut end = shown.len().min(8 * 1024);
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        f.detail = Some(shown[..end].into());
    }
    f
}

/// `expires_in_secs` from now, or the absolute time, whichever the spec names.
pub fn expiry(spec: &WaitSpec, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    spec.expires_at.or_else(|| {
        spec.expires_in_secs
            .map(|s| now + Duration::milliseconds((s * 1000.0) as i64))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_child_is_named_with_its_step_and_last_error() {
        let task_id = uuid::Uuid::nil();
        let ended = |status: &str, error: Value| {
            let r = Resolution::ChildEnded {
                task_id,
                status: status.into(),
                outputs: json!({}),
                error,
            };
            match after_wait(WaitKind::Child, false, &r, None) {
                AfterWait::Fail(f) => f,
                other => panic!("{other:?}"),
            }
        };
        let f = ended(
            "failed",
            json!({"step_id": "fetch", "reason": "retries exhausted (3 of 3)",
                   "last_error": {"message": "HTTP 503", "category": "tool_error", "retryable": true}}),
        );
        assert_eq!(f.category, CHILD_TASK_FAILED);
        assert!(f.retryable, "a transient failure is worth a new child");
        assert!(f.message.contains("at its step fetch"), "{}", f.message);
        assert!(
            f.message.contains("its last error: tool_error: HTTP 503"),
            "{}",
            f.message
        );
        assert!(
            f.detail
                .as_deref()
                .is_some_and(|d| d.contains("last_error"))
        );
        let f = ended(
            "needs_intervention",
            json!({"step_id": "f", "reason": "forbidden by policy",
                   "last_error": {"message": "forbidden by policy", "category": "external_error", "retryable": false}}),
        );
        assert!(!f.retryable);
        assert!(
            !f.message.contains("its last error"),
            "said once: {}",
            f.message
        );
        let f = ended(
            "failed",
            json!({"code": "descendants_exceeded", "message": "too many"}),
        );
        assert_eq!(f.category, "descendants_exceeded");
        assert!(!f.retryable);
    }

    #[test]
    fn every_kind_is_named_in_order() {
        let names: Vec<&str> = WaitKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, WaitKind::NAMES);
    }

    #[test]
    fn builtins_read_their_parameters() {
        let a = WaitSpec::of_builtin(
            "approval",
            &json!({"prompt": "ok?", "role": "admin", "timeout_secs": 5, "on_timeout": "approve",
                    "form": {"type": "object"}}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(a.kind, WaitKind::Approval);
        assert_eq!(a.role, Some(Role::Admin));
        assert_eq!(a.on_timeout, OnTimeout::Approve);
        assert_eq!(a.expires_in_secs, Some(5.0));
        let e = WaitSpec::of_builtin("wait_event", &json!({"key": "k", "match": {"a": 1}}))
            .unwrap()
            .unwrap();
        assert_eq!(e.event_key.as_deref(), Some("k"));
        assert_eq!(e.expires_in_secs, None);
        let s = WaitSpec::of_builtin("sleep_until", &json!({"secs": 2}))
            .unwrap()
            .unwrap();
        assert_eq!(s.kind, WaitKind::Sleep);
        assert!(WaitSpec::of_builtin("echo", &json!({})).is_none());
    }

    #[test]
    fn bad_parameters_are_parameter_errors() {
        for (tool, p) in [
            ("approval", json!({"role": "boss"})),
            ("approval", json!({"on_timeout": "maybe"})),
            ("approval", json!({"timeout_secs": -1})),
            ("approval", json!({"form": "text"})),
            ("wait_event", json!({})),
            ("wait_event", json!({"key": "k", "match": 3})),
            ("sleep_until", json!({})),
            ("sleep_until", json!({"at": "tomorrow"})),
            (
                "sleep_until",
                json!({"at": "2026-01-01T00:00:00Z", "secs": 1}),
            ),
        ] {
            let f = WaitSpec::of_builtin(tool, &p).unwrap().unwrap_err();
            assert_eq!(f.category, "parameter_error", "{tool} {p}");
            assert!(!f.retryable);
        }
    }

    /// Every kind × every resolution: what the step does next.
    #[test]
    fn every_resolution_has_one_meaning() {
        let at = Utc::now();
        let all = [
            Resolution::Approved {
                parameters: Some(json!({"x": 2})),
                comment: Some("fine".into()),
                by_timeout: false,
            },
            Resolution::Rejected {
                comment: Some("no".into()),
            },
            Resolution::Event {
                payload: json!({"p": 1}),
            },
            Resolution::Completed {
                output: json!({"o": 1}),
            },
            Resolution::Failed {
                error: json!({"message": "m", "category": "rate_limited", "retryable": true}),
            },
            Resolution::Slept { at },
            Resolution::Timeout,
        ];
        for kind in WaitKind::ALL {
            for gated in [false, true] {
                for r in &all {
                    let next = after_wait(kind, gated, r, None);
                    match (r, &next) {
                        (Resolution::Approved { .. }, AfterWait::Call) => assert!(gated),
                        (Resolution::Approved { .. }, AfterWait::Output(o)) => {
                            assert!(!gated);
                            assert_eq!(o["approved"], true);
                            assert_eq!(o["parameters"], json!({"x": 2}));
                        }
                        (Resolution::Rejected { .. }, AfterWait::Fail(f)) => {
                            assert_eq!(f.category, APPROVAL_REJECTED);
                            assert!(!f.retryable);
                        }
                        (Resolution::Event { payload }, AfterWait::Output(o)) => {
                            assert_eq!(o, payload)
                        }
                        (Resolution::Completed { output }, AfterWait::Output(o)) => {
                            assert_eq!(o, output)
                        }
                        (Resolution::Failed { .. }, AfterWait::Fail(f)) => {
                            assert_eq!(f.category, "rate_limited");
                            assert!(f.retryable);
                        }
                        (Resolution::Slept { .. }, AfterWait::Output(o)) => {
                            assert!(o.get("slept_until").is_some())
                        }
                        (Resolution::Timeout, AfterWait::Fail(f)) => {
                            assert_eq!(f.category, WAIT_TIMEOUT);
                            assert_eq!(f.retryable, kind == WaitKind::Callback);
                        }
                        (r, n) => panic!("{kind:?} {gated} {r:?} → {n:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn expiry_follows_the_kind_and_on_timeout() {
        let at = Utc::now();
        assert_eq!(
            Resolution::on_expiry(WaitKind::Sleep, OnTimeout::Reject, at),
            Resolution::Slept { at }
        );
        assert!(matches!(
            Resolution::on_expiry(WaitKind::Approval, OnTimeout::Approve, at),
            Resolution::Approved {
                by_timeout: true,
                ..
            }
        ));
        for kind in [WaitKind::Approval, WaitKind::Event, WaitKind::Callback] {
            assert_eq!(
                Resolution::on_expiry(kind, OnTimeout::Reject, at),
                Resolution::Timeout
            );
        }
        assert_eq!(Resolution::Timeout.wait_status(), "expired");
    }

    #[test]
    fn a_failed_callback_without_a_category_is_a_tool_error() {
        let r = Resolution::Failed {
            error: json!({"message": "m"}),
        };
        match after_wait(WaitKind::Callback, false, &r, None) {
            AfterWait::Fail(f) => assert_eq!(f.category, "tool_error"),
            other => panic!("{other:?}"),
        }
    }
}
