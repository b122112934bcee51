//! Waits (the waits issue): approvals, events, async tools' callbacks, durable sleep and delayed
//! starts — against the real API on a port, real workers and real HTTP tool servers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use reqwest::StatusCode;
use serde_json::{Value, json};
use trellis::testkit::{self as common, TestApp, TestWorker, client_with_key, spawn_app, wait_for};
use uuid::Uuid;

const LIMIT: Duration = Duration::from_secs(30);

pub(crate) fn worker(app: &TestApp) -> TestWorker {
    let base = app.url("");
    app.worker(move |c| {
        c.callback_base_url = base.trim_end_matches('/').to_string();
        c.wait_check = Duration::from_millis(100);
    })
}

/// The open waits of a task, once there are `n`.
async fn open_waits(app: &TestApp, task: Uuid, n: usize) -> Vec<Value> {
    wait_for(&format!("{n} open waits of {task}"), LIMIT, || async {
        let (s, v) = app
            .get(&format!("/api/v1/waits?status=open&task_id={task}"))
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        let list = v.as_array().unwrap().clone();
        (list.len() == n).then_some(list)
    })
    .await
}

async fn step_status(app: &TestApp, task: Uuid, step: &str) -> String {
    let (_, plan) = app.get(&format!("/api/v1/tasks/{task}/plan")).await;
    plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == step)
        .map(|s| s["status"].as_str().unwrap().to_string())
        .unwrap()
}

async fn result(app: &TestApp, task: Uuid) -> Value {
    app.get(&format!("/api/v1/tasks/{task}/result")).await.1
}

async fn new_key(app: &TestApp, role: &str) -> (String, Uuid) {
    let (s, k) = app
        .post("/api/v1/keys", &json!({"name": role, "role": role}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{k}");
    (
        k["key"].as_str().unwrap().to_string(),
        k["id"].as_str().unwrap().parse().unwrap(),
    )
}

fn approval_plan() -> Value {
    json!({"description": "needs a person", "plan": {"steps": [
        {"id": "ask", "tool": "approval", "parameters": {
            "prompt": "Ship it?",
            "form": {"type": "object", "properties": {"n": {"type": "integer"}}}}},
        {"id": "use", "tool": "echo", "parameters": {"n": "${ask.output.parameters.n}",
            "ok": "${ask.output.approved}"}, "dependencies": ["ask"]}
    ]}})
}

/// Approved with a form's answer by an operator key: the step's output carries it, the next
/// step reads it, and who decided is kept. A reader key is refused (403) and changes nothing.
#[tokio::test]
async fn an_approval_approved_runs_on_with_the_answer() {
    let app = spawn_app().await;
    let _w = worker(&app);
    let id = app.submit(approval_plan()).await;
    let waits = open_waits(&app, id, 1).await;
    assert_eq!(waits[0]["kind"], "approval");
    assert_eq!(waits[0]["prompt"], "Ship it?");
    assert_eq!(step_status(&app, id, "ask").await, "waiting");
    let wait = waits[0]["wait_id"].as_str().unwrap().to_string();

    let (reader, _) = new_key(&app, "reader").await;
    let r = client_with_key(Some(&reader))
        .post(app.url(&format!("/api/v1/waits/{wait}/approve")))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(open_waits(&app, id, 1).await.len(), 1, "nothing changed");

    // an answer that breaks the form: 422, nothing changed
    let (s, _) = app
        .post(
            &format!("/api/v1/waits/{wait}/approve"),
            &json!({"parameters": {"n": "five"}}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);

    let (op, op_id) = new_key(&app, "operator").await;
    let r = client_with_key(Some(&op))
        .post(app.url(&format!("/api/v1/waits/{wait}/approve")))
        .json(&json!({"parameters": {"n": 5}, "comment": "go"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["resolved_by"], op_id.to_string());
    assert_eq!(v["resolution"]["outcome"], "approved");

    // a second decision is a conflict and changes nothing
    let (s, _) = app
        .post(&format!("/api/v1/waits/{wait}/reject"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT);

    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let out = result(&app, id).await;
    assert_eq!(out["outputs"]["use"], json!({"n": 5, "ok": true}));
    assert_eq!(out["outputs"]["ask"]["decided_by"], op_id.to_string());
    let (_, events) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    let kinds: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"step_waiting") && kinds.contains(&"wait_resolved"),
        "{kinds:?}"
    );
}

/// Rejected: the step fails with `approval_rejected` (not retryable) and recovery ends the task.
#[tokio::test]
async fn an_approval_rejected_fails_its_step() {
    let app = spawn_app().await;
    let _w = worker(&app);
    let id = app.submit(approval_plan()).await;
    let wait = open_waits(&app, id, 1).await[0]["wait_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (s, v) = app
        .post(
            &format!("/api/v1/waits/{wait}/reject"),
            &json!({"comment": "not today"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // a person's no is not retried: the task stops for a person (resume or cancel)
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "needs_intervention", "{done}");
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    let a = &attempts.as_array().unwrap();
    assert_eq!(a.len(), 1, "asked once: {attempts}");
    assert_eq!(a[0]["step_id"], "ask");
    assert_eq!(a[0]["error"]["category"], "approval_rejected", "{attempts}");
    assert_eq!(step_status(&app, id, "use").await, "blocked");
}

/// Timed out: `on_timeout: reject` fails the step with `wait_timeout`; `approve` lets it on.
#[tokio::test]
async fn an_approval_times_out_as_it_says() {
    let app = spawn_app().await;
    let _w = worker(&app);
    let task = |on_timeout: &str| {
        json!({"description": "t", "plan": {"steps": [
            {"id": "ask", "tool": "approval",
             "parameters": {"timeout_secs": 0.5, "on_timeout": on_timeout}}]}})
    };
    let rejected = app.submit(task("reject")).await;
    let approved = app.submit(task("approve")).await;
    let r = app.wait_done(rejected, LIMIT).await;
    assert_ne!(r["status"], "succeeded", "{r}");
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{rejected}/attempts")).await;
    assert_eq!(attempts[0]["error"]["category"], "wait_timeout");
    let (_, w) = app.get(&format!("/api/v1/waits?task_id={rejected}")).await;
    assert_eq!(w[0]["status"], "expired");
    let a = app.wait_done(approved, LIMIT).await;
    assert_eq!(a["status"], "succeeded", "{a}");
    assert_eq!(
        result(&app, approved).await["outputs"]["ask"]["by_timeout"],
        true
    );
}

/// A tool with `requires_approval`: every call waits; an approver's edited parameters are what
/// the tool receives, recorded as the step's overrides.
#[tokio::test]
async fn a_gated_tool_runs_with_the_approved_edit() {
    let app = spawn_app().await;
    let server = common::ToolServer::echoing_step(Duration::ZERO).await;
    common::register_tool(
        &app,
        "deploy",
        &server.endpoint("deploy"),
        json!({"requires_approval": true,
               "input_schema": {"type": "object", "properties": {"env": {"type": "string"}}}}),
    )
    .await;
    let (_, tool) = app.get("/api/v1/tools/deploy").await;
    assert_eq!(tool["requires_approval"], true);
    let _w = worker(&app);
    let id = app
        .submit(json!({"description": "deploy", "plan": {"steps": [
            {"id": "d", "tool": "deploy", "parameters": {"env": "staging", "n": 1}}]}}))
        .await;
    let waits = open_waits(&app, id, 1).await;
    assert_eq!(waits[0]["tool"], "deploy");
    assert_eq!(waits[0]["parameters"], json!({"env": "staging", "n": 1}));
    assert!(server.calls().is_empty(), "no call before the approval");
    let wait = waits[0]["wait_id"].as_str().unwrap();
    // an edit that breaks the tool's schema is refused
    let (s, _) = app
        .post(
            &format!("/api/v1/waits/{wait}/approve"),
            &json!({"parameters": {"env": 3}}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let (s, v) = app
        .post(
            &format!("/api/v1/waits/{wait}/approve"),
            &json!({"parameters": {"env": "production"}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let calls = server.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].parameters, json!({"env": "production", "n": 1}));
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    assert_eq!(attempts[0]["parameters"]["env"], "production");
    // the edit is in the plan, as the step's overrides, and in the event that resolved it
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(
        plan["steps"][0]["param_overrides"],
        json!({"env": "production"})
    );
    let (_, events) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    let resolved = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "wait_resolved")
        .unwrap();
    assert_eq!(
        resolved["payload"]["parameters"],
        json!({"env": "production"})
    );
}

/// A waiting step holds no worker: with concurrency 1, ten steps wait for an event while other
/// tasks run to the end; then one event resolves all ten.
#[tokio::test]
async fn waits_hold_no_worker_slot() {
    let app = spawn_app().await;
    let base = app.url("");
    let _w = app.worker(move |c| {
        c.concurrency = 1;
        c.callback_base_url = base.trim_end_matches('/').to_string();
    });
    let mut waiting = Vec::new();
    for _ in 0..10 {
        waiting.push(
            app.submit(json!({"description": "w", "plan": {"steps": [
                {"id": "w", "tool": "wait_event", "parameters": {"key": "order-7"}}]}}))
                .await,
        );
    }
    wait_for("10 waiting steps", LIMIT, || async {
        let (_, v) = app.get("/api/v1/waits?status=open&kind=event").await;
        (v.as_array().unwrap().len() == 10).then_some(())
    })
    .await;
    let mut others = Vec::new();
    for i in 0..5 {
        others.push(
            app.submit(json!({"description": "o", "plan": {"steps": [
                {"id": "e", "tool": "echo", "parameters": {"i": i}}]}}))
                .await,
        );
    }
    for id in others {
        assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    }
    let (s, v) = app
        .post(
            "/api/v1/events",
            &json!({"key": "order-7", "payload": {"paid": true}}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED);
    assert_eq!(v["resolved"], 10);
    for id in waiting {
        assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
        assert_eq!(
            result(&app, id).await["outputs"]["w"],
            json!({"paid": true})
        );
    }
}

/// An event that arrives before its wait is registered is not lost; a payload that does not
/// contain the wait's `match` resolves nothing.
#[tokio::test]
async fn an_event_before_its_wait_is_found() {
    let app = spawn_app().await;
    let id = app
        .submit(json!({"description": "w", "plan": {"steps": [
            {"id": "w", "tool": "wait_event",
             "parameters": {"key": "k1", "match": {"status": "done"}}}]}}))
        .await;
    let (_, v) = app
        .post(
            "/api/v1/events",
            &json!({"key": "k1", "payload": {"status": "pending"}}),
        )
        .await;
    assert_eq!(v["resolved"], 0);
    let (_, v) = app
        .post(
            "/api/v1/events",
            &json!({"key": "k1", "payload": {"status": "done", "n": 1}}),
        )
        .await;
    assert_eq!(v["resolved"], 0, "no wait yet: the worker has not run");
    let _w = worker(&app);
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(
        result(&app, id).await["outputs"]["w"],
        json!({"status": "done", "n": 1})
    );
    // bad input: 422, nothing recorded
    let (s, _) = app.post("/api/v1/events", &json!({"key": ""})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let (s, _) = app
        .post("/api/v1/events", &json!({"key": "k", "payload": [1]}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
}

/// What an async tool server does with a call.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Mode {
    /// Answer 202, and keep the callback URL for the test.
    Later,
    /// Call back `complete` before answering 202 (the race with the call's answer).
    Race,
}

#[derive(Clone)]
struct AsyncTool {
    mode: Mode,
    urls: Arc<Mutex<Vec<String>>>,
}

async fn async_call(
    State(t): State<AsyncTool>,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let url = body["callback_url"].as_str().unwrap().to_string();
    if t.mode == Mode::Race {
        let r = reqwest::Client::new()
            .post(format!("{url}/complete"))
            .json(&json!({"output": {"raced": true}}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }
    t.urls.lock().unwrap().push(url);
    (StatusCode::ACCEPTED, Json(json!({"accepted": true})))
}

pub(crate) async fn async_tool(app: &TestApp, id: &str, mode: Mode) -> Arc<Mutex<Vec<String>>> {
    let urls = Arc::new(Mutex::new(Vec::new()));
    let router = Router::new()
        .route("/call", post(async_call))
        .with_state(AsyncTool {
            mode,
            urls: urls.clone(),
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    common::register_tool(
        app,
        id,
        &format!("http://{addr}/call"),
        json!({"mode": "async"}),
    )
    .await;
    urls
}

pub(crate) async fn callback_url(urls: &Arc<Mutex<Vec<String>>>, n: usize) -> String {
    wait_for("the async call", LIMIT, || async {
        urls.lock().unwrap().get(n).cloned()
    })
    .await
}

/// An async tool: completed by its callback (a duplicate is a no-op, a forged token a 404),
/// heartbeated, and failed.
#[tokio::test]
async fn an_async_tool_completes_fails_and_heartbeats_by_callback() {
    let app = spawn_app().await;
    let urls = async_tool(&app, "job", Mode::Later).await;
    let _w = worker(&app);
    let http = reqwest::Client::new();
    let id = app
        .submit(json!({"description": "a", "plan": {"steps": [
            {"id": "j", "tool": "job", "parameters": {"x": 1}}]}}))
        .await;
    let url = callback_url(&urls, 0).await;
    wait_for("the step to wait", LIMIT, || async {
        (step_status(&app, id, "j").await == "waiting").then_some(())
    })
    .await;
    let r = http
        .post(format!("{url}/heartbeat"))
        .json(&json!({"extend_secs": 600}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert!(v["expires_at"].is_string(), "{v}");
    let forged = format!("{}forged/complete", &url[..url.rfind('/').unwrap() + 1]);
    let r = http
        .post(forged)
        .json(&json!({"output": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = http
        .post(format!("{url}/complete"))
        .json(&json!({"output": {"done": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap()["accepted"], true);
    let r = http
        .post(format!("{url}/complete"))
        .json(&json!({"output": {"done": 2}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["accepted"], false);
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(result(&app, id).await["outputs"]["j"], json!({"done": 1}));

    // failed by callback: the attempt fails with the tool's error, recovery takes over
    let id = app
        .submit(
            json!({"description": "b", "limits": {"max_step_retries": 0, "max_task_replans": 0},
            "plan": {"steps": [{"id": "j", "tool": "job"}]}}),
        )
        .await;
    let url = callback_url(&urls, 1).await;
    let r = http
        .post(format!("{url}/fail"))
        .json(&json!({"error": {"message": "disk full", "category": "quota", "retryable": false}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let done = app.wait_done(id, LIMIT).await;
    assert_ne!(done["status"], "succeeded", "{done}");
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    assert_eq!(attempts[0]["error"]["category"], "quota", "{attempts}");
}

/// A callback that arrives while the step is still `running` (before the call's 2xx) is kept:
/// the park finds it and the step completes with it.
#[tokio::test]
async fn a_callback_racing_the_answer_is_kept() {
    let app = spawn_app().await;
    let _urls = async_tool(&app, "fast", Mode::Race).await;
    let _w = worker(&app);
    let id = app
        .submit(json!({"description": "r", "plan": {"steps": [{"id": "j", "tool": "fast"}]}}))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(
        result(&app, id).await["outputs"]["j"],
        json!({"raced": true})
    );
}

/// Cancel and a deadline end waiting tasks; their waits are cancelled and a late resolution
/// changes nothing.
#[tokio::test]
async fn cancel_and_deadline_end_waiting_tasks() {
    let app = spawn_app().await;
    let _w = worker(&app);
    let waiting = json!({"description": "w", "plan": {"steps": [
        {"id": "w", "tool": "wait_event", "parameters": {"key": "never"}}]}});
    let cancelled = app.submit(waiting.clone()).await;
    let mut late = waiting.clone();
    late["limits"] = json!({"task_timeout_secs": 1});
    late["plan"]["steps"][0]["parameters"]["key"] = json!("never-either");
    let timed_out = app.submit(late).await;
    let wait = open_waits(&app, cancelled, 1).await[0]["wait_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (s, _) = app
        .post(&format!("/api/v1/tasks/{cancelled}/cancel"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(app.wait_done(cancelled, LIMIT).await["status"], "cancelled");
    assert_eq!(step_status(&app, cancelled, "w").await, "skipped");
    let (_, w) = app.get(&format!("/api/v1/waits/{wait}")).await;
    assert_eq!(w["status"], "cancelled");
    let (_, v) = app.post("/api/v1/events", &json!({"key": "never"})).await;
    assert_eq!(v["resolved"], 0, "a cancelled wait is not resolved");
    let d = app.wait_done(timed_out, LIMIT).await;
    assert_eq!(d["status"], "failed", "{d}");
    assert_eq!(d["error"]["code"], "deadline_exceeded");
    assert_eq!(step_status(&app, cancelled, "w").await, "skipped");
}

/// `sleep_until` waits without a worker and ends on time (database clock).
#[tokio::test]
async fn sleep_until_waits_without_a_worker() {
    let app = spawn_app().await;
    let _w = worker(&app);
    let id = app
        .submit(json!({"description": "s", "plan": {"steps": [
            {"id": "s", "tool": "sleep_until", "parameters": {"secs": 1}},
            {"id": "after", "tool": "echo", "dependencies": ["s"]}]}}))
        .await;
    let waits = open_waits(&app, id, 1).await;
    assert_eq!(waits[0]["kind"], "sleep");
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let (_, w) = app.get(&format!("/api/v1/waits?task_id={id}")).await;
    let (created, resolved) = (
        chrono::DateTime::parse_from_rfc3339(w[0]["created_at"].as_str().unwrap()).unwrap(),
        chrono::DateTime::parse_from_rfc3339(w[0]["resolved_at"].as_str().unwrap()).unwrap(),
    );
    assert!((resolved - created).num_milliseconds() >= 1000);
    let (s, _) = app
        .post(
            "/api/v1/tasks",
            &json!({"description": "bad", "plan": {"steps": [
                {"id": "s", "tool": "sleep_until", "parameters": {"at": "tomorrow"}}]}}),
        )
        .await;
    // accepted (parameters are resolved at run time); the step fails with parameter_error
    assert_eq!(s, StatusCode::ACCEPTED);
}

/// `delay_secs` / `run_at`: accepted at once, nothing runs before; reschedule moves it while
/// nothing ran, and is refused once something did.
#[tokio::test]
async fn delayed_start_and_reschedule() {
    let app = spawn_app().await;
    let _w = worker(&app);
    let delayed = app
        .submit(
            json!({"description": "d", "delay_secs": 1.5, "limits": {"task_timeout_secs": 60},
            "plan": {"steps": [{"id": "e", "tool": "echo"}]}}),
        )
        .await;
    let far = chrono::Utc::now() + chrono::Duration::hours(1);
    let later = app
        .submit(json!({"description": "l", "run_at": far.to_rfc3339(),
            "plan": {"steps": [{"id": "e", "tool": "echo"}]}}))
        .await;
    let done = app.wait_done(delayed, LIMIT).await;
    assert_eq!(done["status"], "succeeded");
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{delayed}/attempts")).await;
    let started =
        chrono::DateTime::parse_from_rfc3339(attempts[0]["started_at"].as_str().unwrap()).unwrap();
    let created =
        chrono::DateTime::parse_from_rfc3339(done["created_at"].as_str().unwrap()).unwrap();
    assert!(
        (started - created).num_milliseconds() >= 1400,
        "{started} {created}"
    );
    let deadline =
        chrono::DateTime::parse_from_rfc3339(done["deadline_at"].as_str().unwrap()).unwrap();
    assert!(
        (deadline - created).num_seconds() >= 61,
        "the deadline counts from the start"
    );

    let (_, v) = app.get(&format!("/api/v1/tasks/{later}")).await;
    assert_eq!(v["status"], "running");
    assert_eq!(v["steps"]["succeeded"], 0);
    let (s, v) = app
        .post(
            &format!("/api/v1/tasks/{later}/reschedule"),
            &json!({"run_at": chrono::Utc::now().to_rfc3339()}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(app.wait_done(later, LIMIT).await["status"], "succeeded");
    let (s, _) = app
        .post(
            &format!("/api/v1/tasks/{later}/reschedule"),
            &json!({"run_at": far.to_rfc3339()}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    for bad in [
        json!({"description": "x", "run_at": "soon", "plan": {"steps": [{"id": "e", "tool": "echo"}]}}),
        json!({"description": "x", "delay_secs": -1, "plan": {"steps": [{"id": "e", "tool": "echo"}]}}),
        json!({"description": "x", "delay_secs": 1, "run_at": far.to_rfc3339(),
               "plan": {"steps": [{"id": "e", "tool": "echo"}]}}),
    ] {
        let (s, v) = app.post("/api/v1/tasks", &bad).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{bad} {v}");
    }
}

/// How long tasks waited for people is countable in SQL (`wait_times`, per day, template and
/// kind), and stays so after retention deletes the tasks (their waits go to `wait_rollups`).
#[tokio::test]
async fn wait_times_survive_retention() {
    let app = spawn_app().await;
    let (s, v) = app
        .post(
            "/api/v1/templates",
            &json!({"id": "gate", "plan": {"steps": [{"id": "ask", "tool": "approval"}]}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let _w = worker(&app);
    let id = app
        .submit(json!({"template": "gate", "description": "gated"}))
        .await;
    let wait = open_waits(&app, id, 1).await[0]["wait_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (s, _) = app
        .post(&format!("/api/v1/waits/{wait}/approve"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    let store = app.store();
    let read = || async {
        sqlx::query_as::<_, (String, String, String, i64)>(
            "SELECT template, kind, outcome, waits FROM wait_times",
        )
        .fetch_all(store.pool())
        .await
        .unwrap()
    };
    let before = read().await;
    assert_eq!(
        before,
        vec![("gate".into(), "approval".into(), "approved".into(), 1)]
    );
    store.age_tasks(2.0 * 86_400.0).await.unwrap();
    assert_eq!(store.prune_finished(86_400.0, 10).await.unwrap(), 1);
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM waits")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(n, 0, "the task's waits were deleted with it");
    assert_eq!(read().await, before, "and are still counted");
}
