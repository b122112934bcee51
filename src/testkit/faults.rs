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
