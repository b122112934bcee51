//! A tool server that fails the way real services do, for tests and `trellis-bench
//! --recovery`: each route answers from a script of its own (the n-th call of a step, the time
//! since its first call, a switch the caller flips), with any status, headers, body and delay.
//! It speaks the HTTP tool contract (CONTRACT.md "HTTP tools") and records every call.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One call the server received.
#[derive(Debug, Clone)]
pub struct Call {
    pub route: String,
    pub task_id: String,
    pub step_key: String,
    pub attempt: i64,
    pub parameters: Value,
    /// The call's `feedback`: why its step runs again (null for a plain run).
    pub feedback: Value,
    pub at: Instant,
}

/// What a script sees of a call.
#[derive(Debug, Clone)]
pub struct Seen {
    /// This call is the n-th (from 1) of its task and step on this route.
    pub nth: usize,
    /// Since the first call of its task and step on this route.
    pub since_first: Duration,
    /// Since the first call of any step on this route (an outage every caller sees).
    pub since_route: Duration,
    pub parameters: Value,
    /// Why the step runs again (a later step failed on its output); null for a plain run.
    pub feedback: Value,
}

/// An answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Waited before answering (a slow or hanging service).
    pub delay: Duration,
}

impl Reply {
    /// 200 with the call's parameters as its output.
    pub fn echo(seen: &Seen) -> Reply {
        Reply::json(200, json!({"output": seen.parameters}))
    }

    /// A JSON answer.
    pub fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    /// A status with an empty JSON object.
    pub fn status(status: u16) -> Reply {
        Reply::json(status, json!({}))
    }

    /// A body that is not JSON (a proxy's HTML page, a plain text error).
    pub fn text(status: u16, content_type: &str, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: &str, value: impl Into<String>) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// How a route answers.
pub type Script = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

#[derive(Default)]
struct Inner {
    routes: HashMap<String, Script>,
    calls: Vec<Call>,
    /// First call of each (route, task, step), and how many it has had.
    first: HashMap<(String, String, String), (Instant, usize)>,
    /// First call of each route.
    route_first: HashMap<String, Instant>,
}

/// The server; cheap to clone. Stops when the runtime that started it stops.
#[derive(Clone)]
pub struct FaultServer {
    pub addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
}

impl FaultServer {
    /// Listen on a free loopback port.
    pub async fn start() -> FaultServer {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new()
            .route("/{route}", axum::routing::post(handle))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FaultServer { addr, inner }
    }

    /// Answer `POST /{name}` with `script` (replacing any earlier one).
    pub fn route(&self, name: &str, script: impl Fn(&Seen) -> Reply + Send + Sync + 'static) {
        let mut inner = self.inner.lock().expect("fault server");
        inner.routes.insert(name.into(), Arc::new(script));
    }

    pub fn endpoint(&self, name: &str) -> String {
        format!("http://{}/{name}", self.addr)
    }

    /// The calls of a route, in arrival order.
    pub fn calls(&self, route: &str) -> Vec<Call> {
        let inner = self.inner.lock().expect("fault server");
        inner
            .calls
            .iter()
            .filter(|c| c.route == route)
            .cloned()
            .collect()
    }
}

async fn handle(
    State(inner): State<Arc<Mutex<Inner>>>,
    Path(route): Path<String>,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let text = |k: &str| body[k].as_str().unwrap_or_default().to_string();
    let call = Call {
        route: route.clone(),
        task_id: text("task_id"),
        step_key: text("step_id"),
        attempt: body["attempt"].as_i64().unwrap_or(-1),
        parameters: body["parameters"].clone(),
        feedback: body["feedback"].clone(),
        at: Instant::now(),
    };
    let (script, seen) = {
        let mut inner = inner.lock().expect("fault server");
        let key = (route.clone(), call.task_id.clone(), call.step_key.clone());
        let route_first = *inner.route_first.entry(route.clone()).or_insert(call.at);
        let first = inner.first.entry(key).or_insert((call.at, 0));
        first.1 += 1;
        let seen = Seen {
            nth: first.1,
            since_first: call.at - first.0,
            since_route: call.at - route_first,
            parameters: call.parameters.clone(),
            feedback: call.feedback.clone(),
        };
        inner.calls.push(call);
        (inner.routes.get(&route).cloned(), seen)
    };
    let Some(script) = script else {
        return (StatusCode::NOT_FOUND, "no such route").into_response();
    };
    let reply = script(&seen);
    tokio::time::sleep(reply.delay).await;
    let mut headers = HeaderMap::new();
    for (k, v) in &reply.headers {
        if let (Ok(k), Ok(v)) = (HeaderName::try_from(k.as_str()), HeaderValue::from_str(v)) {
            headers.append(k, v);
        }
    }
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, headers, reply.body).into_response()
}

/// A way a service says "over your rate limit, come back at …" (recovery issue, second part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateForm {
    /// 429 with `Retry-After: <seconds>`.
    RetryAfter,
    /// 429 with `X-RateLimit-Remaining: 0` and `X-RateLimit-Reset: <epoch seconds>`.
    XRateLimitEpoch,
    /// 429 with `X-RateLimit-Remaining: 0` and `X-RateLimit-Reset: <seconds>`.
    XRateLimitDelta,
    /// 429 with the IETF draft's separate `RateLimit-Remaining: 0` and `RateLimit-Reset`.
    IetfFields,
    /// 429 with the structured `RateLimit: "default";r=0;t=<seconds>` and `RateLimit-Policy`.
    IetfStructured,
    /// 429 with `RateLimit: limit=100, remaining=0, reset=<seconds>` (an earlier draft).
    IetfDictionary,
    /// GitHub's primary limit: 403 with `X-RateLimit-Remaining: 0` and an epoch reset.
    Github403Reset,
    /// GitHub's secondary limit: 403 with `Retry-After`.
    Github403RetryAfter,
    /// A 200 whose headers say nothing is left (`X-RateLimit-Remaining: 0`, epoch reset); the
    /// calls after it are refused with a 429 until the reset.
    OkRemainingZero,
}

impl RateForm {
    pub const ALL: [RateForm; 9] = [
        RateForm::RetryAfter,
        RateForm::XRateLimitEpoch,
        RateForm::XRateLimitDelta,
        RateForm::IetfFields,
        RateForm::IetfStructured,
        RateForm::IetfDictionary,
        RateForm::Github403Reset,
        RateForm::Github403RetryAfter,
        RateForm::OkRemainingZero,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RateForm::RetryAfter => "rate_retry_after",
            RateForm::XRateLimitEpoch => "rate_x_ratelimit_epoch",
            RateForm::XRateLimitDelta => "rate_x_ratelimit_delta",
            RateForm::IetfFields => "rate_ietf_fields",
            RateForm::IetfStructured => "rate_ietf_structured",
            RateForm::IetfDictionary => "rate_ietf_dictionary",
            RateForm::Github403Reset => "rate_github_403_reset",
            RateForm::Github403RetryAfter => "rate_github_403_retry_after",
            RateForm::OkRemainingZero => "rate_ok_remaining_zero",
        }
    }

    /// The answer of a call over the limit, the window ending at `reset` (`secs` from now).
    fn limited(self, reset: std::time::SystemTime, secs: u64) -> Reply {
        let epoch = reset
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
            .to_string();
        let secs = secs.to_string();
        let too_many = || Reply::json(429, json!({"message": "rate limit exceeded"}));
        let github = || {
            Reply::json(
                403,
                json!({"message": "API rate limit exceeded",
                       "documentation_url": "https://docs.github.com/rest/rate-limit"}),
            )
        };
        match self {
            RateForm::RetryAfter => too_many().header("retry-after", secs),
            RateForm::XRateLimitEpoch | RateForm::OkRemainingZero => too_many()
                .header("x-ratelimit-remaining", "0")
                .header("x-ratelimit-reset", epoch),
            RateForm::XRateLimitDelta => too_many()
                .header("x-ratelimit-remaining", "0")
                .header("x-ratelimit-reset", secs),
            RateForm::IetfFields => too_many()
                .header("ratelimit-limit", "100")
                .header("ratelimit-remaining", "0")
                .header("ratelimit-reset", secs),
            RateForm::IetfStructured => too_many()
                .header("ratelimit-policy", format!("\"default\";q=100;w={secs}"))
                .header("ratelimit", format!("\"default\";r=0;t={secs}")),
            RateForm::IetfDictionary => {
                too_many().header("ratelimit", format!("limit=100, remaining=0, reset={secs}"))
            }
            RateForm::Github403Reset => github()
                .header("x-ratelimit-limit", "100")
                .header("x-ratelimit-remaining", "0")
                .header("x-ratelimit-reset", epoch),
            RateForm::Github403RetryAfter => github().header("retry-after", secs),
        }
    }
}

/// A fleet-wide rate limit of one window (of 100 calls, its headers say), in one of the
/// [`RateForm`]s: the first call opens a
/// window of `window` (whole seconds) and is refused (or, for [`RateForm::OkRemainingZero`],
/// answered with nothing left); every call before the window ends is refused the same way, and
/// counted as **early** when it came more than [`RateWindow::GRACE`] after the window opened
/// (calls already in flight when the limit was announced could not know of it). After the
/// window, every call is answered.
pub struct RateWindow {
    form: RateForm,
    window: Duration,
    /// When the window opened and when it ends.
    open: Mutex<Option<(Instant, std::time::SystemTime, Instant)>>,
    early: std::sync::atomic::AtomicUsize,
}

impl RateWindow {
    /// Calls this soon after the window opened were already on their way.
    pub const GRACE: Duration = Duration::from_millis(250);

    pub fn new(form: RateForm, window: Duration) -> Arc<RateWindow> {
        Arc::new(RateWindow {
            form,
            window,
            open: Mutex::new(None),
            early: Default::default(),
        })
    }

    /// Calls made after the limit was announced and before its reset.
    pub fn early(&self) -> usize {
        self.early.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn answer(&self, s: &Seen) -> Reply {
        let now = Instant::now();
        let mut open = self.open.lock().expect("rate window");
        match *open {
            None => {
                // the reset on a whole second, so that epoch forms say it exactly
                let wall = std::time::SystemTime::now();
                let since = wall
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                let to_next = Duration::from_secs(since.as_secs() + 1) - since;
                let secs = self.window.as_secs().max(1);
                let (reset, ends) = match self.form {
                    RateForm::XRateLimitEpoch
                    | RateForm::Github403Reset
                    | RateForm::OkRemainingZero => (
                        wall + to_next + Duration::from_secs(secs - 1),
                        now + to_next + Duration::from_secs(secs - 1),
                    ),
                    _ => (
                        wall + Duration::from_secs(secs),
                        now + Duration::from_secs(secs),
                    ),
                };
                *open = Some((now, reset, ends));
                let left = ends.saturating_duration_since(now).as_secs_f64().ceil() as u64;
                if self.form == RateForm::OkRemainingZero {
                    let mut ok = Reply::echo(s);
                    ok.headers
                        .extend(self.form.limited(reset, left).headers.into_iter().skip(1));
                    return ok;
                }
                self.form.limited(reset, left)
            }
            Some((opened, reset, ends)) if now < ends => {
                if now.duration_since(opened) > Self::GRACE {
                    self.early.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                let left = ends.saturating_duration_since(now).as_secs_f64().ceil() as u64;
                self.form.limited(reset, left)
            }
            Some(_) => Reply::echo(s),
        }
    }
}

/// A service whose limit shrank while its callers waited (the crowd after a hold): the first
/// call is refused with a hold of `hold`; after it, at most `quota` calls are answered in any
/// `window`, and every other call is refused with a 429 whose `Retry-After` says when a place
/// frees (and, when `announce`, a `RateLimit-Policy` that gives the rate). Counts the calls
/// refused in the first [`RateWindow::GRACE`] (the first wave, in flight before anyone knew),
/// the calls **early** (before a reset it announced, past the grace), and the calls refused
/// after every reset it announced (a release that came faster than it takes).
pub struct Crowded {
    hold: Duration,
    quota: usize,
    window: Duration,
    announce: bool,
    state: Mutex<CrowdState>,
}

#[derive(Default)]
struct CrowdState {
    /// When the first call came (and the hold began).
    first: Option<Instant>,
    /// The latest reset it announced, and when it announced it.
    announced: Option<(Instant, Instant)>,
    /// When the answered calls came (the last `quota`).
    answered: std::collections::VecDeque<Instant>,
    first_wave: usize,
    early: usize,
    refused_after: usize,
    /// Every call after the first: ms since it, and what it got ([`Crowded::trace`]).
    trace: Vec<(u128, char)>,
}

impl Crowded {
    pub fn new(hold: Duration, quota: usize, window: Duration, announce: bool) -> Arc<Crowded> {
        Arc::new(Crowded {
            hold,
            quota: quota.max(1),
            window,
            announce,
            state: Mutex::default(),
        })
    }

    /// Calls refused after every reset announced before them had passed.
    pub fn refused_after_hold(&self) -> usize {
        self.state.lock().expect("crowd").refused_after
    }

    /// Calls that came before a reset it announced (past the grace of their announcement).
    pub fn early(&self) -> usize {
        self.state.lock().expect("crowd").early
    }

    /// Calls refused in the first wave: on their way before the first answer said to wait.
    pub fn first_wave(&self) -> usize {
        self.state.lock().expect("crowd").first_wave
    }

    /// Every call, as ms since the first and what it got: `a` answered, `w` refused in the
    /// first wave, `e` early (before a reset announced), `r` refused after the resets (the
    /// release came faster than it takes). For reading where a release's extra calls came.
    pub fn trace(&self) -> String {
        let st = self.state.lock().expect("crowd");
        st.trace
            .iter()
            .map(|(ms, what)| format!("{ms}{what}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn answer(&self, s: &Seen) -> Reply {
        let now = Instant::now();
        let mut st = self.state.lock().expect("crowd");
        let first = *st.first.get_or_insert(now);
        let held_until = first + self.hold;
        let wait = if now < held_until {
            held_until - now
        } else {
            while st
                .answered
                .front()
                .is_some_and(|t| now.duration_since(*t) >= self.window)
            {
                st.answered.pop_front();
            }
            if st.answered.len() < self.quota {
                st.answered.push_back(now);
                st.trace.push((now.duration_since(first).as_millis(), 'a'));
                return Reply::echo(s);
            }
            let oldest = *st.answered.front().expect("full");
            self.window.saturating_sub(now.duration_since(oldest))
        };
        let what = match st.announced {
            _ if now.duration_since(first) <= RateWindow::GRACE => {
                st.first_wave += 1;
                'w'
            }
            Some((at, until)) if now < until && now.duration_since(at) > RateWindow::GRACE => {
                st.early += 1;
                'e'
            }
            _ => {
                st.refused_after += usize::from(now >= held_until);
                'r'
            }
        };
        st.trace.push((now.duration_since(first).as_millis(), what));
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        let until = now + Duration::from_secs(secs);
        st.announced = Some(match st.announced {
            Some((at, u)) if u >= until => (at, u),
            _ => (now, until),
        });
        let mut r = Reply::json(429, json!({"message": "rate limit exceeded"}))
            .header("retry-after", secs.to_string());
        if self.announce {
            r = r.header(
                "ratelimit-policy",
                format!(
                    "\"default\";q={};w={}",
                    self.quota,
                    self.window.as_secs().max(1)
                ),
            );
        }
        r
    }
}
