//! Recovery, fifth step (acceptance 3 and 4, and classes 5 and 6): what an answer's body says.
//! A 200 that says it failed, in each well-known envelope and through a tool's
//! `failure_when`, is a failure, held for the retry time its body gives; a 422 that names
//! `items[3].qty` in each of the four shapes public APIs use reaches schema repair, or the step
//! that made the value; a `RateLimit` field with two policies holds for the used-up one only; a
//! reset past the step's wait limit is said at once. Real tool servers
//! (`trellis::testkit::faults`), a real worker with the rules brain.

use trellis::testkit as common;

use std::time::Duration;

use common::{TestApp, register_tool, spawn_app};
use serde_json::{Value, json};
use trellis::testkit::faults::{Call, FaultServer, Reply, Seen};
use uuid::Uuid;

const LIMIT: Duration = Duration::from_secs(60);

use crate::recovery_faults::{attempts, one_step};

/// The calls of `route` that task `id` made.
fn calls_of(faults: &FaultServer, route: &str, id: Uuid) -> Vec<Call> {
    faults
        .calls(route)
        .into_iter()
        .filter(|c| c.task_id == id.to_string())
        .collect()
}

async fn events(app: &TestApp, id: Uuid, kind: &str) -> Vec<Value> {
    let (_, v) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    v.as_array()
        .expect("events")
        .iter()
        .filter(|e| e["kind"] == kind)
        .cloned()
        .collect()
}

fn gap_ms(calls: &[Call]) -> u128 {
    (calls[1].at - calls[0].at).as_millis()
}

/// Submit every task, run one worker until all have ended, and return them as submitted.
async fn run_all(app: &TestApp, tasks: Vec<(String, Value)>) -> Vec<(String, Uuid, Value)> {
    let w = app.worker(|_| {});
    let mut ids = Vec::new();
    for (name, task) in tasks {
        ids.push((name, app.submit(task).await));
    }
    let mut done = Vec::new();
    for (name, id) in ids {
        let t = app.wait_done(id, LIMIT).await;
        done.push((name, id, t));
    }
    w.stop().await;
    done
}

/// Acceptance 3: each envelope's first answer is a 200 that says it failed and gives a retry
/// time of 2 s in its body; the second is a success. Each is a failed attempt, the tool is
/// held for the time its body gave (no call before it), and the task heals.
#[tokio::test]
async fn a_200_that_says_it_failed_is_held_for_its_retry_time_then_healed() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    let forms: Vec<(&str, Value, Value)> = vec![
        (
            "slack",
            json!({"ok": false, "error": "ratelimited", "retry_after": 2}),
            json!({}),
        ),
        (
            "graphql",
            json!({"data": null, "errors": [{"message": "Too many requests",
                "extensions": {"code": "RATE_LIMITED", "retryAfter": 2}}]}),
            json!({}),
        ),
        (
            "jsonapi",
            json!({"errors": [{"status": "503", "title": "Service Unavailable",
                "meta": {"retry_after": 2}}]}),
            json!({}),
        ),
        (
            "rule",
            json!({"status": "error", "reason": "quota", "retry_in": "2"}),
            json!({"failure_when": [{"pointer": "/status", "equals": "error",
                "retry_after_pointer": "/retry_in", "message_pointer": "/reason"}]}),
        ),
    ];
    let mut tasks = Vec::new();
    for (name, envelope, extra) in &forms {
        let envelope = envelope.clone();
        faults.route(name, move |s: &Seen| match s.nth {
            1 => Reply::json(200, envelope.clone()),
            _ => Reply::echo(s),
        });
        register_tool(&app, name, &faults.endpoint(name), extra.clone()).await;
        tasks.push((name.to_string(), one_step(name, json!({"q": name}))));
    }
    for (name, id, t) in run_all(&app, tasks).await {
        assert_eq!(t["status"], "succeeded", "{name}: {t}");
        let calls = faults.calls(&name);
        assert_eq!(calls.len(), 2, "{name}");
        assert!(
            gap_ms(&calls) >= 2000,
            "{name}: called again after {} ms, before the 2 s its body gave",
            gap_ms(&calls)
        );
        let a = attempts(&app, id).await;
        assert_eq!(a[0]["status"], "failed", "{name}: {}", a[0]);
        assert_eq!(a[0]["error"]["retry_after_ms"], 2000, "{name}: {}", a[0]);
        assert_eq!(a[0]["error"]["http_status"], Value::Null, "{name}");
        let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
        assert_eq!(
            plan["steps"][0]["output"],
            json!({"q": name}),
            "{name}: the envelope is no output"
        );
        if name == "rule" {
            assert_eq!(a[0]["error"]["message"], "quota", "{}", a[0]);
        }
    }
}

/// A 200 that says it failed without a retry time is still a failure: the envelope never
/// becomes the step's output, and a tool that keeps answering it ends its task, bounded.
#[tokio::test]
async fn a_200_that_keeps_saying_it_failed_never_becomes_an_output() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("nochan", |_| {
        Reply::json(200, json!({"ok": false, "error": "channel_not_found"}))
    });
    register_tool(&app, "nochan", &faults.endpoint("nochan"), json!({})).await;
    let task = json!({"description": "post, then use it", "plan": {"steps": [
        {"id": "post", "tool": "nochan", "parameters": {"channel": "#x"}},
        {"id": "after", "tool": "echo", "dependencies": ["post"],
         "parameters": {"ts": "${post.output.ts}"}}
    ]}});
    let done = run_all(&app, vec![("nochan".into(), task)]).await;
    let (_, id, t) = &done[0];
    assert_ne!(t["status"], "succeeded", "{t}");
    let a = attempts(&app, *id).await;
    assert!(!a.is_empty());
    for at in &a {
        assert_eq!(at["status"], "failed", "{at}");
        assert_eq!(at["error"]["category"], "tool_error", "{at}");
        assert!(
            at["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("channel_not_found"),
            "{at}"
        );
    }
    assert!(
        a.iter().all(|x| x["step_id"] == "post"),
        "the next step never ran on an error"
    );
}

/// The four shapes (and RFC 9457's `errors` form) in which a tool names the parameter it
/// refused, each for `items[3].qty`.
fn refusals() -> Vec<(&'static str, Value)> {
    vec![
        (
            "problem",
            json!({"type": "about:blank", "title": "Unprocessable Content", "status": 422,
                   "invalid-params": [{"name": "items[3].qty", "reason": "must be an integer"}]}),
        ),
        (
            "problem_errors",
            json!({"title": "Unprocessable Content", "status": 422,
                   "errors": [{"pointer": "#/items/3/qty", "detail": "must be an integer"}]}),
        ),
        (
            "fastapi",
            json!({"detail": [{"loc": ["body", "parameters", "items", 3, "qty"],
                   "msg": "Input should be a valid integer, unable to parse string as an integer",
                   "type": "int_parsing"}]}),
        ),
        (
            "jsonapi",
            json!({"errors": [{"status": "422", "title": "Invalid Attribute",
                   "source": {"pointer": "/parameters/items/3/qty"},
                   "detail": "must be an integer"}]}),
        ),
        (
            "openai",
            json!({"error": {"message": "Invalid type for 'items[3].qty': expected an integer, but got a string instead.",
                   "type": "invalid_request_error", "param": "items[3].qty", "code": "invalid_type"}}),
        ),
    ]
}

/// A strict tool with no input schema: `items[3].qty` must be a JSON integer, refused with
/// `body` otherwise.
fn strict(body: Value) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    move |s: &Seen| match s.parameters.pointer("/items/3/qty") {
        Some(q) if q.is_i64() => Reply::echo(s),
        _ => Reply::json(422, body.clone()),
    }
}

fn items(fourth: Value) -> Value {
    json!([{"qty": 1}, {"qty": 2}, {"qty": 3}, {"qty": fourth}])
}

/// Acceptance 4, repair: `"4"` where the tool wants an integer. Every shape reaches schema
/// repair: one refused call, then the call with `4`, the change named, `step_failed` carrying
/// the violation.
#[tokio::test]
async fn a_422_naming_the_field_in_each_shape_is_repaired() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    let mut tasks = Vec::new();
    for (name, body) in refusals() {
        faults.route(name, strict(body));
        register_tool(&app, name, &faults.endpoint(name), json!({})).await;
        tasks.push((
            name.to_string(),
            one_step(name, json!({"items": items(json!("4"))})),
        ));
    }
    for (name, id, t) in run_all(&app, tasks).await {
        assert_eq!(t["status"], "succeeded", "{name}: {t}");
        let calls = faults.calls(&name);
        assert_eq!(calls.len(), 2, "{name}: one refused call, one repaired");
        assert_eq!(
            calls[1].parameters,
            json!({"items": items(json!(4))}),
            "{name}"
        );
        let a = attempts(&app, id).await;
        let e = &a[0]["error"];
        assert_eq!(e["category"], "parameter_error", "{name}: {e}");
        let v = e["schema_violations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(v.len(), 1, "{name}: {e}");
        assert!(
            v[0].as_str()
                .unwrap_or_default()
                .starts_with("at /items/3/qty: "),
            "{name}: {e}"
        );
        let failed = events(&app, id, "step_failed").await;
        assert_eq!(
            failed[0]["payload"]["violations"][0]["path"], "/items/3/qty",
            "{name}: {}",
            failed[0]
        );
        let retried = events(&app, id, "retry_scheduled").await;
        assert_eq!(
            retried[0]["payload"]["adjusted_parameters"],
            json!({"items": items(json!(4))}),
            "{name}: {retried:?}"
        );
        let (_, r) = app.get(&format!("/api/v1/tasks/{id}/reflections")).await;
        let said = r.to_string();
        assert!(
            said.contains("/items/3/qty: \\\"4\\\" → 4"),
            "{name}: the change is named: {said}"
        );
    }
}

/// Acceptance 4, upstream: the refused value came from an earlier step (`"four"`, which no
/// coercion makes an integer). Every shape reaches upstream healing: the producer runs again,
/// told why, and the consumer's next call carries its new output.
#[tokio::test]
async fn a_422_naming_a_value_made_upstream_heals_where_it_is_made() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("maker", |s: &Seen| {
        let fourth = match s.feedback.is_null() {
            true => json!("four"),
            false => json!(4),
        };
        Reply::json(200, json!({"output": {"items": items(fourth)}}))
    });
    register_tool(&app, "maker", &faults.endpoint("maker"), json!({})).await;
    let mut tasks = Vec::new();
    for (name, body) in refusals() {
        faults.route(name, strict(body));
        register_tool(&app, name, &faults.endpoint(name), json!({})).await;
        tasks.push((
            name.to_string(),
            json!({"description": "made upstream",
                   "plan": {"steps": [
                {"id": "make", "tool": "maker", "parameters": {"shape": name}},
                {"id": "use", "tool": name, "dependencies": ["make"],
                 "parameters": {"items": "${make.output.items}"}}
            ]}}),
        ));
    }
    let done = run_all(&app, tasks).await;
    for (name, id, t) in done {
        assert_eq!(t["status"], "succeeded", "{name}: {t}");
        let made = calls_of(&faults, "maker", id);
        assert_eq!(made.len(), 2, "{name}: the producer ran again");
        assert!(
            made[1].feedback["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("/items/3/qty"),
            "{name}: {}",
            made[1].feedback
        );
        let used = calls_of(&faults, &name, id);
        assert_eq!(used.len(), 2, "{name}: {used:?}");
        assert_eq!(
            used[1].parameters,
            json!({"items": items(json!(4))}),
            "{name}"
        );
    }
}

/// Class 5: a 429 whose `RateLimit` field has a used-up burst policy (2 s left) beside a
/// daily one with requests left: the tool is held for the burst's reset, not the day's.
#[tokio::test]
async fn a_rate_limit_with_two_policies_holds_for_the_used_up_one() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("burst", |s: &Seen| match s.nth {
        1 => Reply::status(429).header("ratelimit", r#""burst";r=0;t=2, "day";r=4000;t=40000"#),
        _ => Reply::echo(s),
    });
    register_tool(&app, "burst", &faults.endpoint("burst"), json!({})).await;
    let done = run_all(&app, vec![("burst".into(), one_step("burst", json!({})))]).await;
    let (_, id, t) = &done[0];
    assert_eq!(t["status"], "succeeded", "{t}");
    let calls = faults.calls("burst");
    assert_eq!(calls.len(), 2);
    assert!(gap_ms(&calls) >= 2000, "{}", gap_ms(&calls));
    assert_eq!(
        attempts(&app, *id).await[0]["error"]["retry_after_ms"],
        2000
    );
}

/// Class 6: a 429 whose reset is an hour away (a daily quota) ends the step at once, saying
/// why, instead of holding it for its whole wait limit; a later task of the same tool stops
/// without a call, and no call comes before the reset.
#[tokio::test]
async fn a_reset_past_the_wait_limit_is_said_at_once() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("daily", |_| {
        Reply::status(429).header("retry-after", "3600")
    });
    register_tool(&app, "daily", &faults.endpoint("daily"), json!({})).await;
    let started = std::time::Instant::now();
    let done = run_all(&app, vec![("first".into(), one_step("daily", json!({})))]).await;
    let (_, id, t) = &done[0];
    assert_ne!(t["status"], "succeeded", "{t}");
    assert_eq!(faults.calls("daily").len(), 1, "no call before the reset");
    let e = &attempts(&app, *id).await[0]["error"];
    assert_eq!(e["retryable"], false, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("past this step's wait limit"),
        "{e}"
    );
    // the next task meets the hold, which ends past its limit too: it stops with no call
    let done = run_all(
        &app,
        vec![("second".into(), one_step("daily", json!({"n": 2})))],
    )
    .await;
    let (_, id2, t2) = &done[0];
    assert_ne!(t2["status"], "succeeded", "{t2}");
    assert_eq!(faults.calls("daily").len(), 1, "no call before the reset");
    assert!(attempts(&app, *id2).await.is_empty());
    let stopped = t2.to_string();
    assert!(stopped.contains("past this step's wait limit"), "{stopped}");
    // far sooner than the five-minute wait limit
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "{:?}",
        started.elapsed()
    );
}

/// A tool's `failure_when` is checked when it is registered: a bad rule is a 422 that names
/// it, and nothing is registered.
#[tokio::test]
async fn a_bad_failure_when_rule_is_refused() {
    let app = spawn_app().await;
    for (rule, says) in [
        (json!({"pointer": "status"}), "JSON pointer"),
        (
            json!({"pointer": "/a", "equals": 1, "present": true}),
            "not both",
        ),
        (json!({"pointer": "/a", "category": "Not Ok"}), "category"),
    ] {
        let (status, v) = app
            .post(
                "/api/v1/tools",
                &json!({"id": "bad", "endpoint": "http://127.0.0.1:9/x", "failure_when": [rule]}),
            )
            .await;
        assert_eq!(status.as_u16(), 422, "{v}");
        assert!(v.to_string().contains(says), "{says}: {v}");
    }
    let (status, _) = app.get("/api/v1/tools/bad").await;
    assert_eq!(status.as_u16(), 404);
    let (status, v) = app
        .post(
            "/api/v1/tools",
            &json!({"id": "good", "endpoint": "http://127.0.0.1:9/x",
                    "failure_when": [{"pointer": "/ok", "equals": false}]}),
        )
        .await;
    assert_eq!(status.as_u16(), 201, "{v}");
    assert_eq!(
        v["failure_when"],
        json!([{"pointer": "/ok", "equals": false}])
    );
}

/// Class 7: a child task that failed on a transient error (its tool was down and it had no
/// retries left) fails its parent's step as retryable, naming the child, its step and its last
/// error; the parent's retry starts a new child, which heals once the service is back.
#[tokio::test]
async fn a_child_that_failed_on_a_transient_error_is_retried_by_its_parent() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    // down for its first two calls (each a different child's), then up
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    faults.route("wobbly", move |s: &Seen| {
        if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 {
            Reply::status(503)
        } else {
            Reply::echo(s)
        }
    });
    register_tool(
        &app,
        "wobbly",
        &faults.endpoint("wobbly"),
        json!({"retry": {"max_attempts": 1}}),
    )
    .await;
    // plain retries: the child inherits them and fails for good on its first 503
    let mut t = common::new_task(json!([
        {"id": "k", "tool": "task", "parameters": {"plan": {"steps": [
            {"id": "fetch", "tool": "wobbly", "parameters": {"q": 1}}
        ]}}}
    ]));
    t.limits.step_reflection = false;
    let w = app.worker(|_| {});
    let id = app.store().submit_task(&t).await.unwrap().task_id;
    let done = app.wait_done(id, LIMIT).await;
    w.stop().await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let failed = events(&app, id, "step_failed").await;
    assert!(!failed.is_empty(), "the first child failed");
    let e = &failed[0]["payload"]["error"];
    assert_eq!(e["category"], "child_task_failed", "{e}");
    assert_eq!(e["retryable"], true, "{e}");
    let m = e["message"].as_str().unwrap_or_default();
    assert!(
        m.contains("at its step fetch") && m.contains("HTTP 503"),
        "{m}"
    );
    let children = events(&app, id, "child_task_started").await;
    assert_eq!(failed.len(), 2, "two children met the outage");
    assert_eq!(children.len(), 3, "one new child per retry");
}
