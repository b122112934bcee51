//! The test harness every test crate shares: `spawn_app()` (router on port 0 over a fresh database), in-process
//! workers, an HTTP tool server, and waiting helpers. Each test gets its own database.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{TestDb, fresh_db, wait_for};
use crate::config::Settings;
use crate::startup::Application;
use crate::store::Store;
use crate::worker::{self, WorkerConfig};
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The admin key of every test app ([`test_settings`]); [`TestApp::http`] sends it.
pub const ADMIN_KEY: &str = "test-admin-key-0123456789abcdef";

/// Settings for tests: quick polling, backoff and rescue; the bootstrap admin key; tools may
/// reach the test servers on 127.0.0.1 and nothing else (no public address, and nothing else
/// on loopback: the outbound tests' canary listens on 127.0.0.2).
pub fn test_settings() -> Settings {
    let mut s = Settings::default();
    s.auth.bootstrap_admin_key = Some(ADMIN_KEY.into());
    s.tools.allow_cidrs = Some(vec!["127.0.0.1/32".parse().unwrap()]);
    s.tools.allow_public = false;
    s.worker.poll_ms = 200;
    s.worker.retry_backoff_ms = 10;
    s.worker.retry_backoff_max_ms = 50;
    s.worker.rescue_interval_ms = 200;
    s.worker.lease_secs = 10;
    s.worker.shutdown_grace_secs = 5;
    s
}

pub struct TestApp {
    pub addr: SocketAddr,
    pub db: TestDb,
    pub settings: Settings,
    pub http: reqwest::Client,
    server: CancellationToken,
    /// Every answer checked against the served OpenAPI document ([`crate::api::answers`]).
    pub answers: Arc<crate::api::answers::AnswerCheck>,
}

impl TestApp {
    pub fn store(&self) -> &Store {
        &self.db.store
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub async fn post(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        self.send(self.http.post(self.url(path)).json(body)).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        self.send(self.http.put(self.url(path)).json(body)).await
    }

    /// The answer's status and JSON body (a body that is not JSON: as a string).
    async fn send(&self, req: reqwest::RequestBuilder) -> (StatusCode, Value) {
        let r = req.send().await.unwrap();
        let status = StatusCode::from_u16(r.status().as_u16()).unwrap();
        let text = r.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.send(self.http.get(self.url(path))).await
    }

    /// Submit a task; panics unless it is accepted. Returns its id.
    pub async fn submit(&self, body: Value) -> Uuid {
        let (status, v) = self.post("/api/v1/tasks", &body).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{v}");
        v["task_id"].as_str().unwrap().parse().unwrap()
    }

    /// Wait until the task is terminal; returns its status document.
    pub async fn wait_done(&self, id: Uuid, limit: Duration) -> Value {
        wait_for(&format!("task {id} to finish"), limit, || async {
            let (_, v) = self.get(&format!("/api/v1/tasks/{id}")).await;
            match v["status"].as_str() {
                Some("succeeded" | "failed" | "cancelled" | "needs_intervention") => Some(v),
                _ => None,
            }
        })
        .await
    }

    /// Start an in-process worker on this app's database.
    pub fn worker(&self, tweak: impl FnOnce(&mut WorkerConfig)) -> TestWorker {
        let mut cfg = WorkerConfig::from_settings(&self.settings);
        tweak(&mut cfg);
        TestWorker::start(self.store().clone(), cfg)
    }

    /// A new API key of `role` for `tenant` (made with the admin key).
    pub async fn key(&self, role: &str, tenant: &str) -> String {
        let body = json!({"name": format!("{tenant} {role}"), "role": role, "tenant": tenant});
        let (s, v) = self.post("/api/v1/keys", &body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        assert_eq!(v["tenant"], tenant);
        v["key"].as_str().expect("the new key").to_string()
    }

    /// Register the template `id` whose plan is `steps` (admin; asserts it was created).
    pub async fn template(&self, id: &str, steps: Value) {
        let body = json!({"id": id, "description": id, "plan": {"steps": steps}});
        let (s, v) = self.post("/api/v1/templates", &body).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
    }

    /// The most attempts (of `tenant`'s tasks, or of every task) that ran at once, from their
    /// start and end times on the database's clock (an end before a start at one instant).
    pub async fn peak_attempts(&self, tenant: Option<&str>) -> i64 {
        self.store().peak_attempts(tenant).await.unwrap()
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.cancel();
        let mismatches = self.answers.take();
        if !mismatches.is_empty() && !std::thread::panicking() {
            panic!(
                "answers that differ from the OpenAPI document:\n{}",
                mismatches.join("\n")
            );
        }
    }
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(test_settings()).await
}

/// The application as `trellis-api` builds it (`startup::Application`), over a fresh
/// database, on a free loopback port, without an in-process worker (tests start their own).
pub async fn spawn_app_with(settings: Settings) -> TestApp {
    let db = fresh_db().await;
    let mut bind = settings.clone();
    bind.server.host = "127.0.0.1".into();
    bind.server.port = 0;
    let application = Application::build_with_store(db.store.clone(), bind, false)
        .await
        .unwrap();
    let addr = application.addr();
    let server = CancellationToken::new();
    let stop = server.clone();
    let answers = crate::api::answers::AnswerCheck::new();
    let check = answers.clone();
    tokio::spawn(async move {
        application
            .run_until_stopped_with(stop, move |router| {
                router.layer(axum::middleware::from_fn_with_state(
                    check,
                    crate::api::answers::check_answer,
                ))
            })
            .await
            .unwrap()
    });
    TestApp {
        addr,
        db,
        settings,
        http: client_with_key(Some(ADMIN_KEY)),
        server,
        answers,
    }
}

/// An HTTP client that sends `Authorization: Bearer <key>` on every request (none: no header).
pub fn client_with_key(key: Option<&str>) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(k) = key {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {k}").parse().unwrap(),
        );
    }
    reqwest::Client::builder()
        .no_proxy()
        .default_headers(headers)
        .build()
        .unwrap()
}

pub struct TestWorker {
    pub id: Uuid,
    stop: CancellationToken,
    handle: Option<JoinHandle<Result<(), crate::store::StoreError>>>,
}

impl TestWorker {
    pub fn start(store: Store, cfg: WorkerConfig) -> Self {
        let stop = CancellationToken::new();
        let id = cfg.id;
        let handle = tokio::spawn(worker::run(store, cfg, stop.clone()));
        Self {
            id,
            stop,
            handle: Some(handle),
        }
    }

    /// Graceful stop; waits for the drain.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(h) = self.handle.take() {
            h.await.unwrap().unwrap();
        }
    }
}

impl Drop for TestWorker {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Calls an HTTP tool received: (task_id, step_id, attempt, idempotency key, parameters).
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub task_id: String,
    pub step_id: String,
    pub attempt: i64,
    pub idempotency_key: String,
    pub parameters: Value,
    pub tool: String,
}

/// How the tool server answers: a function of the call.
pub type Responder = Arc<dyn Fn(&ToolCall) -> (u16, Value) + Send + Sync>;

/// Calls of one tool being answered right now, and the most there ever were at once.
#[derive(Debug, Default, Clone, Copy)]
pub struct InFlight {
    pub now: usize,
    pub peak: usize,
}

#[derive(Clone)]
pub struct ToolServer {
    pub addr: SocketAddr,
    pub calls: Arc<Mutex<Vec<ToolCall>>>,
    /// Per tool: calls in flight (received, not yet answered) and their peak.
    pub in_flight: Arc<Mutex<HashMap<String, InFlight>>>,
    /// When each call arrived (test clock), in arrival order.
    pub arrivals: Arc<Mutex<Vec<(String, std::time::Instant)>>>,
    /// Calls in flight per task, and the most tasks that had calls in flight at once.
    pub tasks_in_flight: Arc<Mutex<(HashMap<String, usize>, usize)>>,
}

/// What the tool server's handler counts with.
#[derive(Clone)]
struct ToolServerState {
    calls: Arc<Mutex<Vec<ToolCall>>>,
    respond: Responder,
    delay: Duration,
    in_flight: Arc<Mutex<HashMap<String, InFlight>>>,
    arrivals: Arc<Mutex<Vec<(String, std::time::Instant)>>>,
    tasks_in_flight: Arc<Mutex<(HashMap<String, usize>, usize)>>,
}
/// One call of the tool server: recorded, counted in flight, answered after the delay.
async fn handle_tool_call(
    State(s): State<ToolServerState>,
    axum::extract::Path(tool): axum::extract::Path<String>,
    headers: axum::http::HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> (StatusCode, axum::Json<Value>) {
    let call = ToolCall {
        task_id: body["task_id"].as_str().unwrap_or_default().to_string(),
        step_id: body["step_id"].as_str().unwrap_or_default().to_string(),
        attempt: body["attempt"].as_i64().unwrap_or(-1),
        idempotency_key: headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        parameters: body["parameters"].clone(),
        tool,
    };
    s.calls.lock().unwrap().push(call.clone());
    s.arrivals
        .lock()
        .unwrap()
        .push((call.tool.clone(), std::time::Instant::now()));
    {
        let mut m = s.in_flight.lock().unwrap();
        let e = m.entry(call.tool.clone()).or_default();
        e.now += 1;
        e.peak = e.peak.max(e.now);
        let mut t = s.tasks_in_flight.lock().unwrap();
        *t.0.entry(call.task_id.clone()).or_insert(0) += 1;
        t.1 = t.1.max(t.0.len());
    }
    tokio::time::sleep(s.delay).await;
    s.in_flight
        .lock()
        .unwrap()
        .get_mut(&call.tool)
        .expect("counted on arrival")
        .now -= 1;
    {
        let mut t = s.tasks_in_flight.lock().unwrap();
        let n = t.0.get_mut(&call.task_id).expect("counted on arrival");
        *n -= 1;
        if *n == 0 {
            t.0.remove(&call.task_id);
        }
    }
    let (status, body) = (s.respond)(&call);
    (StatusCode::from_u16(status).unwrap(), axum::Json(body))
}

impl ToolServer {
    /// Serve `POST /{tool}`; `delay` is applied before answering.
    pub async fn start(delay: Duration, respond: Responder) -> Self {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(Mutex::new(HashMap::new()));
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let tasks_in_flight = Arc::new(Mutex::new((HashMap::new(), 0)));
        let router = Router::new()
            .route("/{tool}", post(handle_tool_call))
            .with_state(ToolServerState {
                calls: calls.clone(),
                respond,
                delay,
                in_flight: in_flight.clone(),
                arrivals: arrivals.clone(),
                tasks_in_flight: tasks_in_flight.clone(),
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        Self {
            addr,
            calls,
            in_flight,
            arrivals,
            tasks_in_flight,
        }
    }

    /// The most tasks that had calls in flight at once.
    pub fn peak_tasks_in_flight(&self) -> usize {
        self.tasks_in_flight.lock().unwrap().1
    }

    /// The most calls of `tool` that were in flight at once.
    pub fn peak_in_flight(&self, tool: &str) -> usize {
        self.in_flight
            .lock()
            .unwrap()
            .get(tool)
            .map(|f| f.peak)
            .unwrap_or(0)
    }

    /// Arrival times of the calls of `tool`, in order.
    pub fn arrivals_of(&self, tool: &str) -> Vec<std::time::Instant> {
        self.arrivals
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _)| t == tool)
            .map(|(_, at)| *at)
            .collect()
    }

    /// A server that answers every call after `delay` with `{"output": {"step": <step id>}}`.
    pub async fn echoing_step(delay: Duration) -> Self {
        Self::start(
            delay,
            Arc::new(|c| (200, json!({"output": {"step": c.step_id}}))),
        )
        .await
    }

    pub fn endpoint(&self, tool: &str) -> String {
        format!("http://{}/{tool}", self.addr)
    }

    pub fn calls(&self) -> Vec<ToolCall> {
        self.calls.lock().unwrap().clone()
    }

    /// Calls per (task, step).
    pub fn calls_per_step(&self) -> HashMap<(String, String), usize> {
        let mut m = HashMap::new();
        for c in self.calls() {
            *m.entry((c.task_id, c.step_id)).or_insert(0) += 1;
        }
        m
    }
}

/// Register an HTTP tool through the API.
pub async fn register_tool(app: &TestApp, id: &str, endpoint: &str, extra: Value) {
    let mut body =
        json!({"id": id, "endpoint": endpoint, "description": format!("test tool {id}")});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    let (status, v) = app.post("/api/v1/tools", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
}

/// Register the HTTP tool `id` served by `server` straight in the registry.
pub async fn add_http_tool(store: &Store, id: &str, server: &ToolServer) {
    store
        .create_tool(&http_tool(id, server.endpoint(id)))
        .await
        .unwrap();
}

/// An HTTP tool record at `endpoint` (10 s timeout), to write straight to the registry.
pub fn http_tool(id: &str, endpoint: String) -> crate::store::tools::NewTool {
    crate::store::tools::NewTool {
        id: id.into(),
        name: id.into(),
        description: format!("test tool {id}"),
        endpoint,
        timeout_ms: 10_000,
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
        failure_when: vec![],
        mode: "sync".into(),
        headers: Default::default(),
        tenant: crate::domain::tenant::DEFAULT.into(),
    }
}

/// A task with this plan (`steps` is the JSON list) and the configured default limits.
pub fn new_task(steps: Value) -> crate::store::submit::NewTask {
    crate::store::submit::NewTask {
        description: "test task".into(),
        metadata: json!({}),
        context: json!({}),
        priority: 0,
        idempotency_key: None,
        limits: crate::domain::Limits::from_settings(&Settings::default()),
        plan: Some(serde_json::from_value(json!({ "steps": steps })).expect("a valid plan")),
        template: None,
        start: Default::default(),
        webhook: None,
        parent: None,
        concurrency_key: None,
        tenant: crate::domain::tenant::DEFAULT.into(),
    }
}

/// A failure policy for store-level tests: 10 ms backoff, 3 rescues, 30 s leases.
pub const TEST_POLICY: crate::store::step_queue::FailurePolicy =
    crate::store::step_queue::FailurePolicy::fixed(10, 3, 30.0);

/// `worker` held `old` and lost it (taken over, rescued, fenced by a deadline…): its success,
/// failure, release and heartbeat are each refused as fenced and change no row.
pub async fn assert_zombie_changes_nothing(
    store: &Store,
    old: &crate::store::step_queue::ClaimedStep,
    worker: Uuid,
) {
    use crate::store::StoreError;
    use crate::store::step_queue::{StepFailure, StepSuccess};
    let before = store.row_counts().await.unwrap();
    let ok = StepSuccess {
        cost: None,
        fence: old.fence(),
        worker_id: worker,
        tool: "echo".into(),
        parameters: json!({}),
        output: json!({"zombie": true}),
        output_params: Default::default(),
        idempotency_key: None,
    };
    assert!(matches!(
        store.complete_step(&ok, 30.0).await,
        Err(StoreError::Fenced)
    ));
    let bad = StepFailure {
        fence: old.fence(),
        worker_id: worker,
        tool: "echo".into(),
        parameters: json!({}),
        failure: crate::domain::ToolFailure::new("tool_error", "zombie", true),
        idempotency_key: None,
    };
    assert!(matches!(
        store.fail_step(&bad, TEST_POLICY).await,
        Err(StoreError::Fenced)
    ));
    assert!(matches!(
        store.release_step(&old.fence(), worker).await,
        Err(StoreError::Fenced)
    ));
    assert_eq!(
        store
            .heartbeat(worker, 30.0, &[(old.id, old.lease_token)], &[])
            .await
            .unwrap(),
        (0, vec![]),
        "a zombie's heartbeat touches no lease"
    );
    assert_eq!(before, store.row_counts().await.unwrap());
}
