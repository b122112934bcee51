//! Completion webhooks: a receiver started here verifies every signature with the Standard
//! Webhooks reference implementation (`standardwebhooks`), gets each task's events in order,
//! retries through failures to the dead state, and a blocked address is never connected to.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::routing::post;
use reqwest::StatusCode;
use serde_json::{Value, json};
use trellis::testkit::{TestApp, spawn_app_with, test_settings, wait_for};

const LIMIT: Duration = Duration::from_secs(30);
const TASK_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[derive(Clone, Default)]
struct Receiver {
    /// Verified bodies, in arrival order.
    got: Arc<Mutex<Vec<Value>>>,
    /// Answer 500 to this many requests first.
    fail_first: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    secret: Arc<Mutex<Option<String>>>,
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> AxumStatus {
    r.requests.fetch_add(1, Ordering::SeqCst);
    let secret = r.secret.lock().unwrap().clone().expect("a secret");
    let hook = standardwebhooks::Webhook::new(&secret).unwrap();
    if hook.verify(&body, &headers).is_err() {
        return AxumStatus::UNAUTHORIZED;
    }
    if r.fail_first
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        return AxumStatus::INTERNAL_SERVER_ERROR;
    }
    r.got
        .lock()
        .unwrap()
        .push(serde_json::from_slice(&body).unwrap());
    AxumStatus::NO_CONTENT
}

async fn receiver(bind: &str) -> (SocketAddr, Receiver) {
    let r = Receiver::default();
    let router = Router::new()
        .route("/hook", post(receive))
        .with_state(r.clone());
    let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (addr, r)
}

async fn app() -> TestApp {
    let mut s = test_settings();
    s.webhooks.backoff_ms = 20;
    s.webhooks.backoff_max_ms = 100;
    s.webhooks.max_attempts = 4;
    s.webhooks.signing_secret = Some(TASK_SECRET.into());
    spawn_app_with(s).await
}

async fn subscribe(app: &TestApp, url: &str, events: Value) -> (String, String) {
    let (s, v) = app
        .post("/api/v1/webhooks", &json!({"url": url, "events": events}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    (
        v["id"].as_str().unwrap().to_string(),
        v["secret"].as_str().unwrap().to_string(),
    )
}

async fn deliveries(app: &TestApp, hook: &str) -> Vec<Value> {
    let (s, v) = app
        .get(&format!("/api/v1/webhooks/{hook}/deliveries"))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v.as_array().unwrap().clone()
}

fn three_steps() -> Value {
    json!({"description": "hooked", "plan": {"steps": [
        {"id": "a", "tool": "echo"}, {"id": "b", "tool": "echo", "dependencies": ["a"]},
        {"id": "c", "tool": "echo", "dependencies": ["b"]}]}})
}

/// Every delivery verifies with the reference algorithm, and each task's events arrive in
/// order; a receiver that fails three times gets the event on the fourth try.
#[tokio::test]
async fn deliveries_are_signed_ordered_and_retried() {
    let app = app().await;
    let no_hooks: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_deliveries")
        .fetch_one(app.store().pool())
        .await
        .unwrap();
    let (addr, rx) = receiver("127.0.0.1:0").await;
    rx.fail_first.store(3, Ordering::SeqCst);
    let (hook, secret) = subscribe(
        &app,
        &format!("http://{addr}/hook"),
        json!(["step_completed", "task_succeeded"]),
    )
    .await;
    *rx.secret.lock().unwrap() = Some(secret);
    let _w = app.worker(|_| {});
    // one task first: its first event meets the three failures
    let mut tasks = vec![app.submit(three_steps()).await];
    wait_for("the first task's 4 deliveries", LIMIT, || async {
        (rx.got.lock().unwrap().len() == 4).then_some(())
    })
    .await;
    for _ in 0..2 {
        tasks.push(app.submit(three_steps()).await);
    }
    // 3 tasks × (3 step_completed + task_succeeded)
    wait_for("12 verified deliveries", LIMIT, || async {
        (rx.got.lock().unwrap().len() == 12).then_some(())
    })
    .await;
    let got = rx.got.lock().unwrap().clone();
    for t in &tasks {
        let seqs: Vec<i64> = got
            .iter()
            .filter(|b| b["data"]["task_id"] == t.to_string())
            .map(|b| b["data"]["seq"].as_i64().unwrap())
            .collect();
        assert_eq!(seqs.len(), 4);
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");
        let kinds: Vec<&str> = got
            .iter()
            .filter(|b| b["data"]["task_id"] == t.to_string())
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds.last(), Some(&"task_succeeded"));
    }
    // the receiver has a body before its sender records the answer: wait for the records
    let log = wait_for("12 deliveries recorded as delivered", LIMIT, || async {
        let log = deliveries(&app, &hook).await;
        let done = log.len() == 12 && log.iter().all(|d| d["status"] == "delivered");
        done.then_some(log)
    })
    .await;
    // the three failures landed on the first task's first delivery (the others of the task
    // wait behind it): tried four times, the first three 500s
    let retried: Vec<&Value> = log.iter().filter(|d| d["attempts"] != 1).collect();
    assert_eq!(retried.len(), 1, "{log:?}");
    assert_eq!(retried[0]["attempts"], 4);
    assert_eq!(retried[0]["task_id"], tasks[0].to_string());
    let tries = retried[0]["log"].as_array().unwrap();
    assert_eq!(tries.len(), 4);
    assert_eq!(tries[0]["status"], 500);
    assert_eq!(tries[3]["status"], 204);
    assert_eq!(no_hooks, 0);
}

/// A receiver down for good: the delivery is dead after its last try, every try listed; a
/// redelivery sends it again. An address the outbound guard refuses is never connected to: here
/// the API took 127.0.0.2 (its allow-list had all of loopback) and the workers' guard, tightened
/// since, allows 127.0.0.1 only (an address refused at registration is a 422:
/// `a_webhook_at_a_refused_address_is_refused_at_registration`).
#[tokio::test]
async fn a_dead_receiver_and_a_blocked_address() {
    let mut s = test_settings();
    s.webhooks.backoff_ms = 20;
    s.webhooks.backoff_max_ms = 100;
    s.webhooks.max_attempts = 4;
    s.webhooks.signing_secret = Some(TASK_SECRET.into());
    s.tools.allow_cidrs = Some(vec!["127.0.0.0/8".parse().unwrap()]);
    let app = spawn_app_with(s).await;
    // a port with nothing listening
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (down, _) = subscribe(
        &app,
        &format!("http://{closed}/hook"),
        json!(["task_succeeded"]),
    )
    .await;
    let (canary, canary_rx) = receiver("127.0.0.2:0").await;
    *canary_rx.secret.lock().unwrap() = Some(TASK_SECRET.into());
    let (blocked, _) = subscribe(
        &app,
        &format!("http://{canary}/hook"),
        json!(["task_succeeded"]),
    )
    .await;
    let mut tightened = app.settings.tools.clone();
    tightened.allow_cidrs = Some(vec!["127.0.0.1/32".parse().unwrap()]);
    let _w = app.worker(|c| c.outbound = trellis::net::Outbound::from_settings(&tightened));
    let id = app.submit(three_steps()).await;
    app.wait_done(id, LIMIT).await;
    for hook in [&down, &blocked] {
        let d = wait_for("a dead delivery", LIMIT, || async {
            let d = deliveries(&app, hook).await;
            (d.len() == 1 && d[0]["status"] == "dead").then(|| d[0].clone())
        })
        .await;
        assert_eq!(d["attempts"], 4);
        let tries = d["log"].as_array().unwrap();
        assert_eq!(tries.len(), 4, "{d}");
        assert!(tries.iter().all(|t| t["status"].is_null()));
    }
    let d = &deliveries(&app, &blocked).await[0];
    assert!(
        d["log"][0]["error"].as_str().unwrap().contains("blocked"),
        "{d}"
    );
    assert_eq!(
        canary_rx.requests.load(Ordering::SeqCst),
        0,
        "never connected"
    );

    // redeliver the dead one: pending again, then dead again after its tries
    let delivery = deliveries(&app, &down).await[0]["delivery_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (s, _) = app
        .post(
            &format!("/api/v1/webhooks/{down}/deliveries/{delivery}/redeliver"),
            &json!({}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED);
    wait_for("the redelivery to die again", LIMIT, || async {
        let d = &deliveries(&app, &down).await[0];
        (d["status"] == "dead" && d["log"].as_array().unwrap().len() == 8).then_some(())
    })
    .await;
}

/// A task's own webhook (`webhook` on submit), signed with `[webhooks] signing_secret`; with no
/// webhook anywhere, nothing is written to the outbox.
#[tokio::test]
async fn a_tasks_own_webhook() {
    let app = app().await;
    let (addr, rx) = receiver("127.0.0.1:0").await;
    *rx.secret.lock().unwrap() = Some(TASK_SECRET.into());
    let _w = app.worker(|_| {});
    let plain = app.submit(three_steps()).await;
    app.wait_done(plain, LIMIT).await;
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_deliveries")
        .fetch_one(app.store().pool())
        .await
        .unwrap();
    assert_eq!(n, 0, "no webhook configured: nothing written");
    let mut body = three_steps();
    body["webhook"] = json!(format!("http://{addr}/hook"));
    let id = app.submit(body).await;
    wait_for("the task's webhook", LIMIT, || async {
        (rx.got.lock().unwrap().len() == 1).then_some(())
    })
    .await;
    let got = rx.got.lock().unwrap()[0].clone();
    assert_eq!(got["type"], "task_succeeded");
    assert_eq!(got["data"]["task_id"], id.to_string());
    // bad webhooks are refused and store nothing
    for bad in [
        json!("ftp://x/y"),
        json!({"url": "http://x/y", "events": ["nope"]}),
        json!(3),
    ] {
        let mut b = three_steps();
        b["webhook"] = bad.clone();
        let (s, v) = app.post("/api/v1/tasks", &b).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {v}");
    }
}

/// Retention deletes the deliveries that were delivered or given up past the time to live (no
/// foreign key ties them to their tasks, so nothing else would), and keeps pending ones.
#[tokio::test]
async fn retention_deletes_delivered_and_given_up_deliveries_and_keeps_pending_ones() {
    let app = app().await;
    let (addr, rx) = receiver("127.0.0.1:0").await;
    let (_, secret) = subscribe(
        &app,
        &format!("http://{addr}/hook"),
        json!(["task_succeeded"]),
    )
    .await;
    *rx.secret.lock().unwrap() = Some(secret);
    // nothing listens on the discard port: its delivery is given up after 4 tries
    subscribe(&app, "http://127.0.0.1:9/gone", json!(["task_succeeded"])).await;
    let w = app.worker(|_| {});
    let t = app.submit(three_steps()).await;
    assert_eq!(app.wait_done(t, LIMIT).await["status"], "succeeded");
    let store = app.store();
    let by_status = || async {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, count(*) FROM webhook_deliveries GROUP BY 1 ORDER BY 1")
                .fetch_all(store.pool())
                .await
                .unwrap();
        rows
    };
    wait_for("one delivered, one given up", LIMIT, || async {
        (by_status().await == vec![("dead".into(), 1), ("delivered".into(), 1)]).then_some(())
    })
    .await;
    w.stop().await;
    // and one still pending (no worker runs now)
    sqlx::query(
        "INSERT INTO webhook_deliveries (webhook_id, task_id, seq, kind, payload, event_at, url)
         SELECT webhook_id, task_id, seq + 1, kind, payload, event_at, url
         FROM webhook_deliveries WHERE status = 'delivered'",
    )
    .execute(store.pool())
    .await
    .unwrap();
    assert_eq!(
        store.prune_deliveries(3600.0, 10).await.unwrap(),
        0,
        "none is old yet"
    );
    sqlx::query("UPDATE webhook_deliveries SET created_at = created_at - interval '2 days'")
        .execute(store.pool())
        .await
        .unwrap();
    assert_eq!(
        store.prune_deliveries(86_400.0, 1).await.unwrap(),
        1,
        "in batches"
    );
    assert_eq!(store.prune_deliveries(86_400.0, 10).await.unwrap(), 1);
    assert_eq!(store.prune_deliveries(86_400.0, 10).await.unwrap(), 0);
    assert_eq!(by_status().await, vec![("pending".into(), 1)]);
}

/// A webhook whose target the outbound guard refuses is a 422 at registration, as a tool's or
/// an MCP server's endpoint at the same address is; nothing is registered.
#[tokio::test]
async fn a_webhook_at_a_refused_address_is_refused_at_registration() {
    let app = app().await;
    for url in [
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:9/hook",
        "http://192.168.0.10:8080/",
    ] {
        let (s, v) = app
            .post(
                "/api/v1/webhooks",
                &json!({"url": url, "events": ["task_succeeded"]}),
            )
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("outbound guard"),
            "{url}: {v}"
        );
        let (s, v) = app
            .post(
                "/api/v1/tasks",
                &json!({"description": "with a hook", "webhook": url,
                        "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
            )
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {v}");
        let (s, v) = app
            .post(
                "/api/v1/tools",
                &json!({"id": "at-the-same-address", "endpoint": url, "description": "x"}),
            )
            .await;
        assert_eq!(
            s,
            StatusCode::UNPROCESSABLE_ENTITY,
            "the tool too: {url}: {v}"
        );
    }
    let (_, hooks) = app.get("/api/v1/webhooks").await;
    assert_eq!(hooks, json!([]), "nothing was registered");
    let (_, tasks) = app.get("/api/v1/tasks").await;
    assert_eq!(tasks, json!([]));
}
