//! Every process through PgBouncer 1.18 in `pool_mode = transaction` (fewer server connections
//! than clients): submit, a DAG, cancel, SSE, waits woken by events and approvals, a schedule,
//! a webhook, and a `kill -9`; no answer is a 5xx, no named prepared statement is left on any
//! server session, every step succeeds exactly once. Migrations go over the direct URL
//! (`trellis-api migrate`); the processes run with `migrate = false`.

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use reqwest::StatusCode;
use serde_json::{Value, json};
use trellis::devbouncer::BouncerConfig;
use trellis::testkit::procs::{DevApi, WorkerProc, bin};
use trellis::testkit::{self as common, TestDb, fresh_db, wait_for};
use uuid::Uuid;

/// The API and the workers, all through the pooler.
struct Pooled {
    db: TestDb,
    bouncer: trellis::devbouncer::TempBouncer,
    url: String,
    api: Option<DevApi>,
    http: reqwest::Client,
    /// Every status the API answered.
    statuses: Arc<Mutex<Vec<(String, u16)>>>,
}

impl Pooled {
    /// A fresh database whose schema `trellis-api migrate` applied, a PgBouncer with
    /// `server_connections` in front of it, the API through it; `listen` also gives the
    /// processes the direct URL for LISTEN.
    async fn start(server_connections: u32, listen: bool) -> Self {
        let db = fresh_db().await;
        sqlx::raw_sql("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
            .execute(db.store.pool())
            .await
            .unwrap();
        let migrated = Command::new(bin("trellis-api"))
            .arg("migrate")
            .env("DATABASE_URL", &db.url)
            .output()
            .unwrap();
        assert!(migrated.status.success(), "{migrated:?}");
        assert!(
            String::from_utf8_lossy(&migrated.stdout).contains("schema current"),
            "{migrated:?}"
        );
        let (bouncer, url) = common::pooler_for(
            &db,
            &BouncerConfig {
                server_connections,
                ..Default::default()
            },
        );
        let mut p = Self {
            db,
            bouncer,
            url,
            api: None,
            http: reqwest::Client::new(),
            statuses: Arc::default(),
        };
        let env = p.env(listen);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        p.api = Some(DevApi::start_args("pooled-api", &[], &env).await);
        p
    }

    fn env(&self, listen: bool) -> Vec<(&'static str, String)> {
        let mut env = vec![
            ("DATABASE_URL", self.url.clone()),
            ("APP_DATABASE__POOLER", "transaction".into()),
            ("APP_DATABASE__MIGRATE", "false".into()),
            ("APP_AUTH__DISABLED", "true".into()),
            ("APP_TOOLS__ALLOW_CIDRS", "127.0.0.1/32".into()),
            ("RUST_LOG", "warn".into()),
        ];
        if listen {
            env.push(("APP_DATABASE__LISTEN_URL", self.db.url.clone()));
        }
        env
    }

    fn worker(&self, listen: bool) -> WorkerProc {
        let env = self.env(listen);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        WorkerProc::start(&self.db, &env)
    }

    fn base(&self) -> &str {
        &self.api.as_ref().unwrap().base
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base()));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        self.statuses
            .lock()
            .unwrap()
            .push((format!("{method} {path}"), status));
        (status, res.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    async fn submit(&self, body: Value) -> String {
        let (status, v) = self.post("/api/v1/tasks", body).await;
        assert_eq!(status, 202, "{v}");
        v["task_id"].as_str().unwrap().to_string()
    }

    async fn status_of(&self, id: &str) -> String {
        let (s, v) = self.get(&format!("/api/v1/tasks/{id}")).await;
        assert_eq!(s, 200, "{v}");
        v["status"].as_str().unwrap().to_string()
    }

    async fn wait_status(&self, id: &str, want: &str) {
        wait_for(
            &format!("task {id} to be {want}"),
            Duration::from_secs(90),
            || async { (self.status_of(id).await == want).then_some(()) },
        )
        .await;
    }

    /// The first open wait of `kind`, once there is one.
    async fn wait_open(&self, kind: &str) -> String {
        wait_for(
            &format!("an open {kind} wait"),
            Duration::from_secs(60),
            || async {
                let (_, v) = self
                    .get(&format!("/api/v1/waits?status=open&kind={kind}"))
                    .await;
                v.as_array()
                    .and_then(|a| a.first())
                    .map(|w| w["wait_id"].as_str().unwrap().to_string())
            },
        )
        .await
    }

    /// No 5xx; no named prepared statement on any of the pooler's server sessions (one open
    /// transaction per server connection, so each is asked); PgBouncer logged no error.
    async fn assert_clean(&self, server_connections: u32) {
        let fives: Vec<_> = self
            .statuses
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, s)| *s >= 500)
            .cloned()
            .collect();
        assert!(fives.is_empty(), "5xx answers: {fives:?}");
        // PgBouncer refuses startup parameters it does not know, sqlx's extra_float_digits too
        let options: sqlx::postgres::PgConnectOptions = self.url.parse().unwrap();
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(server_connections)
            .connect_with(options.extra_float_digits(None))
            .await
            .unwrap();
        let mut open = Vec::new();
        let mut backends = std::collections::BTreeSet::new();
        for _ in 0..server_connections {
            let mut tx = pool.begin().await.unwrap();
            let (pid, named): (i32, i64) = sqlx::query_as(
                "SELECT pg_backend_pid(), (SELECT count(*) FROM pg_prepared_statements)",
            )
            .persistent(false)
            .fetch_one(&mut *tx)
            .await
            .unwrap();
            assert_eq!(named, 0, "named statements left on backend {pid}");
            backends.insert(pid);
            open.push(tx);
        }
        assert_eq!(
            backends.len() as u32,
            server_connections,
            "every server session asked"
        );
        drop(open);
        pool.close().await;
        let log = self.bouncer.log();
        assert!(
            !log.contains("ERROR") && !log.contains("prepared statement"),
            "PgBouncer logged errors:\n{log}"
        );
    }
}

/// A worker through the pooler with `[database] migrate = migrate` exits at start, saying each
/// of `says`.
fn refuses(url: &str, migrate: &str, says: &[&str]) {
    let out = Command::new(bin("trellis-worker"))
        .env("DATABASE_URL", url)
        .env("APP_DATABASE__POOLER", "transaction")
        .env("APP_DATABASE__MIGRATE", migrate)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    for s in says {
        assert!(err.contains(s), "{s:?} not in: {err}");
    }
}

/// A webhook receiver on loopback: the bodies it got.
async fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let got: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = got.clone();
    let router = Router::new().route(
        "/hook",
        post(move |body: axum::body::Bytes| {
            let seen = seen.clone();
            async move {
                seen.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (format!("http://{addr}/hook"), got)
}

/// SSE through the API (which reads the events table through the pooler) until `kind`.
async fn sse_until(p: &Pooled, id: &str, kind: &str) {
    use futures::StreamExt;
    let res = p
        .http
        .get(format!("{}/api/v1/tasks/{id}/events", p.base()))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let mut stream = res.bytes_stream();
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(chunk) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if seen.contains(kind) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "SSE never showed {kind}: {seen}");
}

/// The end-to-end subset through a transaction pooler with 4 server connections for the API
/// and two workers (more clients than server connections), LISTEN on the direct URL.
#[tokio::test]
async fn everything_runs_through_a_transaction_pooler() {
    const SERVERS: u32 = 4;
    let p = Pooled::start(SERVERS, true).await;
    let tools = common::ToolServer::echoing_step(Duration::from_millis(200)).await;
    let (s, v) = p
        .post(
            "/api/v1/tools",
            json!({"id": "slow", "name": "slow", "description": "a slow echo",
                   "endpoint": tools.endpoint("slow")}),
        )
        .await;
    assert!(s == 201 || s == 200, "{s} {v}");
    let (hook, delivered) = receiver().await;
    let (s, v) = p
        .post(
            "/api/v1/webhooks",
            json!({"url": hook, "events": ["task_succeeded"]}),
        )
        .await;
    assert!(s == 201 || s == 200, "{s} {v}");
    let mut victim = p.worker(true);
    let _survivor = p.worker(true);

    // one-step tasks and DAGs
    let mut done = Vec::new();
    for i in 0..20 {
        done.push(
            p.submit(json!({"description": "one", "plan": {"steps": [
                {"id": "s", "tool": "echo", "parameters": {"i": i}}]}}))
                .await,
        );
    }
    for _ in 0..8 {
        done.push(
            p.submit(json!({"description": "dag", "plan": {"steps": [
                {"id": "a", "tool": "slow"},
                {"id": "b", "tool": "slow", "dependencies": ["a"]},
                {"id": "c", "tool": "slow", "dependencies": ["a"]},
                {"id": "d", "tool": "echo", "dependencies": ["b", "c"],
                 "parameters": {"from": "${b.output.step}"}}]}}))
                .await,
        );
    }
    // kill -9 a worker while it holds steps
    wait_for(
        "the victim to hold steps",
        Duration::from_secs(60),
        || async { (p.db.store.running_on(victim.id).await.unwrap() >= 1).then_some(()) },
    )
    .await;
    victim.signal(libc::SIGKILL);
    assert!(!victim.wait_exit(Duration::from_secs(10)).await.success());
    let _replacement = p.worker(true);

    // SSE while a task runs to its end
    let watched = p
        .submit(json!({"description": "watched", "plan": {"steps": [
            {"id": "s", "tool": "slow"}]}}))
        .await;
    sse_until(&p, &watched, "task_succeeded").await;
    done.push(watched);

    // cancel
    let cancelled = p
        .submit(json!({"description": "long", "plan": {"steps": [
            {"id": "s", "tool": "sleep_until", "parameters": {"secs": 600}}]}}))
        .await;
    let (s, v) = p
        .post(&format!("/api/v1/tasks/{cancelled}/cancel"), json!({}))
        .await;
    assert!(s < 300, "{s} {v}");
    p.wait_status(&cancelled, "cancelled").await;

    // waits: an event and an approval wake their steps
    let evented = p
        .submit(json!({"description": "event", "plan": {"steps": [
            {"id": "w", "tool": "wait_event", "parameters": {"key": "pooled-go"}},
            {"id": "after", "tool": "echo", "dependencies": ["w"],
             "parameters": {"n": "${w.output.n}"}}]}}))
        .await;
    let approved = p
        .submit(json!({"description": "approval", "plan": {"steps": [
            {"id": "ok", "tool": "approval", "parameters": {"prompt": "go?"}}]}}))
        .await;
    let wait_id = p.wait_open("approval").await;
    p.wait_open("event").await;
    let (s, v) = p
        .post(
            "/api/v1/events",
            json!({"key": "pooled-go", "payload": {"n": 5}}),
        )
        .await;
    assert_eq!((s, v["resolved"].as_i64()), (202, Some(1)), "{v}");
    let (s, v) = p
        .post(&format!("/api/v1/waits/{wait_id}/approve"), json!({}))
        .await;
    assert!(s < 300, "{s} {v}");
    done.push(evented);
    done.push(approved);

    // a schedule fires through the pooler
    let (s, v) = p
        .post(
            "/api/v1/schedules",
            json!({"id": "pooled-tick", "cron": "* * * * * *", "overlap": "allow",
                   "plan": {"steps": [{"id": "s", "tool": "echo"}]}, "description": "tick"}),
        )
        .await;
    assert!(s == 201 || s == 200, "{s} {v}");
    wait_for("a scheduled task", Duration::from_secs(60), || async {
        let (_, v) = p.get("/api/v1/tasks?limit=200").await;
        v.as_array()
            .unwrap()
            .iter()
            .any(|t| t["description"] == "tick")
            .then_some(())
    })
    .await;
    let (s, _) = p
        .call(
            reqwest::Method::DELETE,
            "/api/v1/schedules/pooled-tick",
            None,
        )
        .await;
    assert!(s < 300);

    for id in &done {
        p.wait_status(id, "succeeded").await;
    }
    wait_for(
        "the webhook deliveries",
        Duration::from_secs(60),
        || async { (delivered.lock().unwrap().len() >= done.len()).then_some(()) },
    )
    .await;
    // every step of the finished tasks succeeded exactly once, and no step anywhere twice
    let ids: Vec<Uuid> = done.iter().map(|d| d.parse().unwrap()).collect();
    let (steps, once, twice): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE task_id = ANY($1)),
                count(*) FILTER (WHERE task_id = ANY($1) AND ok = 1),
                count(*) FILTER (WHERE ok > 1)
         FROM (SELECT s.task_id, (SELECT count(*) FROM attempts a
                 WHERE a.step_id = s.id AND a.status = 'succeeded') AS ok FROM steps s) x",
    )
    .bind(&ids)
    .fetch_one(p.db.store.pool())
    .await
    .unwrap();
    assert_eq!(steps, 20 + 8 * 4 + 1 + 2 + 1, "the finished tasks' steps");
    assert_eq!(once, steps, "each step of a finished task succeeded once");
    assert_eq!(twice, 0, "no step succeeded twice");
    p.assert_clean(SERVERS).await;
}

/// Without a direct URL the processes cannot LISTEN: they poll (`poll_ms`), and work still
/// runs to its end, waits included; a process asked to migrate behind a transaction pooler
/// without a direct URL, or started on a schema that is behind, refuses with what to run.
#[tokio::test]
async fn without_listen_the_processes_poll_and_refuse_to_migrate_through_the_pooler() {
    const SERVERS: u32 = 2;
    let p = Pooled::start(SERVERS, false).await;
    let _worker = p.worker(false);
    let one = p
        .submit(json!({"description": "one", "plan": {"steps": [
            {"id": "s", "tool": "echo"}]}}))
        .await;
    let evented = p
        .submit(json!({"description": "event", "plan": {"steps": [
            {"id": "w", "tool": "wait_event", "parameters": {"key": "poll-go"}}]}}))
        .await;
    p.wait_status(&one, "succeeded").await;
    p.wait_open("event").await;
    let (s, _) = p
        .post("/api/v1/events", json!({"key": "poll-go", "payload": {}}))
        .await;
    assert_eq!(s, 202);
    p.wait_status(&evented, "succeeded").await;
    p.assert_clean(SERVERS).await;

    // asked to migrate through the pooler with no direct URL: refuses, naming what to do
    refuses(&p.url, "true", &["listen_url", "trellis-api migrate"]);
    // a schema that is behind: refuses, naming `trellis-api migrate`, and changes nothing
    sqlx::raw_sql(
        "DELETE FROM _sqlx_migrations WHERE version = (SELECT max(version) FROM _sqlx_migrations)",
    )
    .execute(p.db.store.pool())
    .await
    .unwrap();
    let applied = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM _sqlx_migrations")
            .fetch_one(p.db.store.pool())
            .await
            .unwrap()
    };
    let before = applied().await;
    refuses(
        &p.url,
        "false",
        &["schema is behind", "trellis-api migrate"],
    );
    assert_eq!(
        applied().await,
        before,
        "the refusing worker migrated nothing"
    );
}
