//! Recovery of real faults (recovery issue, acceptance 1): a tool server that fails the way
//! public APIs fail (`trellis::testkit::faults`), a real worker with the rules brain, and what
//! the tool server saw. Each class: 429 and 503 with `Retry-After`, a 429 that never ends,
//! tools that are gone (404, 410) with an alternative, credentials refused (401, 403), a
//! timeout, a refused connection with an alternative, an outage longer than tier 1, schema
//! repairs with no wasted call, a lossy coercion refused, and what an answer's body says.

use trellis::testkit as common;

use std::time::{Duration, SystemTime};

use common::{TestApp, register_tool, spawn_app};
use serde_json::{Value, json};
use trellis::testkit::faults::{Call, FaultServer, Reply};
use trellis::testkit::wait_for;
use uuid::Uuid;

const LIMIT: Duration = Duration::from_secs(60);

pub(crate) fn one_step(tool: &str, parameters: Value) -> Value {
    json!({"description": format!("call {tool}"),
           "plan": {"steps": [{"id": "step_1", "tool": tool, "parameters": parameters}]}})
}

pub(crate) async fn attempts(app: &TestApp, id: Uuid) -> Vec<Value> {
    let (_, v) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    v.as_array().expect("attempts").clone()
}

async fn reflections(app: &TestApp, id: Uuid) -> Vec<Value> {
    let (_, v) = app.get(&format!("/api/v1/tasks/{id}/reflections")).await;
    v.as_array().expect("reflections").clone()
}

/// Milliseconds between consecutive calls.
fn gaps_ms(calls: &[Call]) -> Vec<u128> {
    calls
        .windows(2)
        .map(|w| (w[1].at - w[0].at).as_millis())
        .collect()
}

/// An HTTP date, as a server writes it.
fn http_date(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// A task that ends, the server's calls of `route`, and the task's status document.
async fn run(
    app: &TestApp,
    faults: &FaultServer,
    route: &str,
    task: Value,
) -> (Uuid, Vec<Call>, Value) {
    let w = app.worker(|_| {});
    let id = app.submit(task).await;
    let t = app.wait_done(id, LIMIT).await;
    w.stop().await;
    (id, faults.calls(route), t)
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_and_heals() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("busy", |s| match s.nth {
        1 => Reply::status(429).header("retry-after", "2"),
        _ => Reply::echo(s),
    });
    register_tool(&app, "busy", &faults.endpoint("busy"), json!({})).await;
    let (id, calls, t) = run(&app, &faults, "busy", one_step("busy", json!({"q": 1}))).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(calls.len(), 2);
    assert!(
        gaps_ms(&calls)[0] >= 2000,
        "the next call came before the time given: {:?}",
        gaps_ms(&calls)
    );
    let a = attempts(&app, id).await;
    let e = &a[0]["error"];
    assert_eq!(
        (e["category"].as_str(), e["retryable"].as_bool()),
        (Some("tool_error"), Some(true)),
        "{e}"
    );
    assert_eq!(e["http_status"], 429);
    assert_eq!(e["retry_after_ms"], 2000);
}

#[tokio::test]
async fn a_503_with_an_http_date_retry_after_heals_after_that_date() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("down", |s| match s.nth {
        1 => {
            // measured against the answer's own Date header: whole seconds on both sides
            let now = SystemTime::now();
            Reply::status(503)
                .header("date", http_date(now))
                .header("retry-after", http_date(now + Duration::from_secs(2)))
        }
        _ => Reply::echo(s),
    });
    register_tool(&app, "down", &faults.endpoint("down"), json!({})).await;
    let (id, calls, t) = run(&app, &faults, "down", one_step("down", json!({}))).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(calls.len(), 2);
    assert!(gaps_ms(&calls)[0] >= 2000, "{:?}", gaps_ms(&calls));
    assert_eq!(attempts(&app, id).await[0]["error"]["retry_after_ms"], 2000);
}

/// A server that never stops answering 429 is never hammered: every call waits for the time
/// it asked, and the task ends, bounded by its limits, for a person to look at.
#[tokio::test]
async fn a_tool_that_answers_429_forever_is_spaced_and_stops() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("throttled", |_| {
        Reply::status(429).header("retry-after", "1")
    });
    register_tool(&app, "throttled", &faults.endpoint("throttled"), json!({})).await;
    let (_, calls, t) = run(&app, &faults, "throttled", one_step("throttled", json!({}))).await;
    assert_eq!(t["status"], "needs_intervention", "{t}");
    // three tier 1 attempts, the repaired step's one, three after the replan
    assert_eq!(calls.len(), 7, "{:?}", gaps_ms(&calls));
    for g in gaps_ms(&calls) {
        assert!(
            g >= 1000,
            "a call came before the time the server asked: {:?}",
            gaps_ms(&calls)
        );
    }
}

/// 404 and 410: the tool itself is unusable, so recovery does not call it again but switches to
/// its registered alternative at once.
#[tokio::test]
async fn a_tool_that_is_gone_switches_to_its_alternative() {
    for status in [404, 410] {
        let app = spawn_app().await;
        let faults = FaultServer::start().await;
        faults.route("gone", move |_| Reply::status(status));
        faults.route("backup", Reply::echo);
        register_tool(&app, "backup", &faults.endpoint("backup"), json!({})).await;
        register_tool(
            &app,
            "gone",
            &faults.endpoint("gone"),
            json!({"alternatives": ["backup"]}),
        )
        .await;
        let (id, calls, t) = run(&app, &faults, "gone", one_step("gone", json!({"x": 1}))).await;
        assert_eq!(t["status"], "succeeded", "{status}: {t}");
        assert_eq!(calls.len(), 1, "{status}: the gone tool was called once");
        assert_eq!(faults.calls("backup").len(), 1, "{status}");
        let a = attempts(&app, id).await;
        assert_eq!(a[0]["error"]["category"], "tool_unavailable", "{status}");
        assert_eq!(a[1]["tool"], "backup", "{status}");
    }
}

/// 404 without an alternative: nothing can help, one call, stop.
#[tokio::test]
async fn a_tool_that_is_gone_without_an_alternative_stops_after_one_call() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("gone", |_| Reply::status(404));
    register_tool(&app, "gone", &faults.endpoint("gone"), json!({})).await;
    let (_, calls, t) = run(&app, &faults, "gone", one_step("gone", json!({}))).await;
    assert_eq!(t["status"], "needs_intervention", "{t}");
    assert_eq!(calls.len(), 1);
}

/// 401 and 403: credentials or permission. Never retried: one call, then a person.
#[tokio::test]
async fn refused_credentials_stop_after_one_call() {
    for status in [401, 403] {
        let app = spawn_app().await;
        let faults = FaultServer::start().await;
        faults.route("locked", move |_| Reply::status(status));
        faults.route("other", Reply::echo);
        register_tool(&app, "other", &faults.endpoint("other"), json!({})).await;
        // an alternative does not change it: the caller's credentials are the problem
        register_tool(
            &app,
            "locked",
            &faults.endpoint("locked"),
            json!({"alternatives": ["other"]}),
        )
        .await;
        let (id, calls, t) = run(&app, &faults, "locked", one_step("locked", json!({}))).await;
        assert_eq!(t["status"], "needs_intervention", "{status}: {t}");
        assert_eq!(calls.len(), 1, "{status}");
        assert!(faults.calls("other").is_empty(), "{status}");
        let a = attempts(&app, id).await;
        assert_eq!(a.len(), 1);
        assert_eq!(a[0]["error"]["category"], "external_error", "{status}");
        assert_eq!(a[0]["error"]["retryable"], false, "{status}");
    }
}

#[tokio::test]
async fn a_timeout_is_retried_and_heals() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("slow", |s| match s.nth {
        1 => Reply::echo(s).after(Duration::from_secs(3)),
        _ => Reply::echo(s),
    });
    register_tool(
        &app,
        "slow",
        &faults.endpoint("slow"),
        json!({"timeout_ms": 300}),
    )
    .await;
    let (id, calls, t) = run(&app, &faults, "slow", one_step("slow", json!({}))).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(calls.len(), 2);
    let e = &attempts(&app, id).await[0]["error"];
    assert!(e["message"].as_str().unwrap().contains("timed out"), "{e}");
    assert_eq!(e["retryable"], true);
}

#[tokio::test]
async fn a_refused_connection_switches_to_the_alternative() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("backup", Reply::echo);
    // a port nothing listens on
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    register_tool(&app, "backup", &faults.endpoint("backup"), json!({})).await;
    register_tool(
        &app,
        "refusing",
        &format!("http://{closed}/x"),
        json!({"alternatives": ["backup"]}),
    )
    .await;
    let (id, _, t) = run(
        &app,
        &faults,
        "backup",
        one_step("refusing", json!({"y": 2})),
    )
    .await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(faults.calls("backup").len(), 1);
    let a = attempts(&app, id).await;
    assert_eq!(a[0]["error"]["retryable"], true, "{}", a[0]);
    assert_eq!(a[1]["tool"], "backup");
}

/// An outage of five calls, longer than tier 1's three: the repair and the replan from the step
/// keep the step going, the backoff keeps growing across the tiers (it does not start over at
/// its base), and the step heals when the service is back.
#[tokio::test]
async fn an_outage_longer_than_tier_1_heals_when_it_ends() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("flapping", |s| {
        if s.nth <= 5 {
            Reply::status(503)
        } else {
            Reply::echo(s)
        }
    });
    let policy =
        json!({"initial_interval_ms": 100, "backoff_coefficient": 2.0, "max_interval_ms": 10000});
    register_tool(
        &app,
        "flapping",
        &faults.endpoint("flapping"),
        json!({"retry": policy, "circuit_breaker": {"failure_threshold": 0}}),
    )
    .await;
    let (id, calls, t) = run(&app, &faults, "flapping", one_step("flapping", json!({}))).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(calls.len(), 6);
    assert_eq!(t["counters"]["single_step_repair_count"], 1, "{t}");
    assert_eq!(t["counters"]["task_replan_count"], 1, "{t}");
    // the n-th failure in a row waits 100 × 2^(n-1) ms, across retries, the repair and the replan
    let gaps = gaps_ms(&calls);
    for (n, g) in gaps.iter().enumerate() {
        let floor = 100u128 << n;
        assert!(
            *g >= floor,
            "gap {} was {g} ms, below {floor}: {gaps:?}",
            n + 1
        );
    }
    let a = attempts(&app, id).await;
    assert_eq!(a.last().unwrap()["status"], "succeeded");
}

/// Parameters that break the tool's schema in ways the schema settles: an upstream "5" where a
/// number is asked, a required property with a default, a const, a scalar for an array. The
/// rules brain repairs them, names each change, and the tool is called once, with valid
/// parameters.
#[tokio::test]
async fn schema_repairs_heal_with_no_wasted_call() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("strict", Reply::echo);
    let schema = json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "mode": {"type": "string", "default": "fast"},
            "unit": {"const": "ms"},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["count", "mode", "unit"]
    });
    register_tool(
        &app,
        "strict",
        &faults.endpoint("strict"),
        json!({"input_schema": schema}),
    )
    .await;
    let task = json!({"description": "schema repair", "plan": {"steps": [
        {"id": "step_1", "tool": "echo", "parameters": {"n": "5"}},
        {"id": "step_2", "tool": "strict", "dependencies": ["step_1"],
         "parameters": {"count": "${step_1.output.n}", "tags": "urgent"}}
    ]}});
    let (id, calls, t) = run(&app, &faults, "strict", task).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(calls.len(), 1, "no call with the broken parameters");
    assert_eq!(
        calls[0].parameters,
        json!({"count": 5, "mode": "fast", "unit": "ms", "tags": ["urgent"]})
    );
    let a: Vec<Value> = attempts(&app, id)
        .await
        .into_iter()
        .filter(|a| a["step_id"] == "step_2")
        .collect();
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["error"]["category"], "parameter_error");
    assert_eq!(
        a[0]["error"]["schema_violations"].as_array().map(Vec::len),
        Some(4),
        "{}",
        a[0]
    );
    let r = reflections(&app, id).await;
    let analysis = r[0]["body"]["analysis"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for change in [
        "/count: \"5\" → 5",
        "/mode: missing → \"fast\"",
        "/unit: missing → \"ms\"",
        "/tags: \"urgent\" → [\"urgent\"]",
    ] {
        assert!(analysis.contains(change), "{change:?} not in {analysis:?}");
    }
    let (_, stats) = app.get("/api/v1/stats/recovery").await;
    assert!(stats.to_string().contains("schema_repair"), "{stats}");
}

/// Every lossless form (recovery issue, second part): numbers in any of JSON's forms in a
/// string, booleans in any case, a one-value `enum` filled in, and a whole number written as a
/// float. The tool is strict the way typed servers are: an integer must be written as one.
#[tokio::test]
async fn every_lossless_form_reaches_a_strict_server_as_its_type() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("typed", |s| {
        let p = &s.parameters;
        if p["count"].as_i64().is_some() && p["size"].as_i64().is_some() && p["on"].is_boolean() {
            Reply::echo(s)
        } else {
            Reply::json(
                400,
                json!({"error": {"message": "count and size must be integers"}}),
            )
        }
    });
    let schema = json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "size": {"type": "integer"},
            "ratio": {"type": "number"},
            "on": {"type": "boolean"},
            "unit": {"enum": ["ms"]}
        },
        "required": ["count", "size", "on", "unit"]
    });
    register_tool(
        &app,
        "typed",
        &faults.endpoint("typed"),
        json!({"input_schema": schema}),
    )
    .await;
    let task = json!({"description": "lossless forms", "plan": {"steps": [
        {"id": "step_1", "tool": "echo", "parameters": {"n": "5e0", "size": 12.0}},
        {"id": "step_2", "tool": "typed", "dependencies": ["step_1"],
         "parameters": {"count": "${step_1.output.n}", "size": "${step_1.output.size}",
                        "ratio": "2.50", "on": "TRUE"}}
    ]}});
    let (id, calls, t) = run(&app, &faults, "typed", task).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(
        calls.len(),
        1,
        "no call with the broken parameters: {calls:?}"
    );
    assert_eq!(
        calls[0].parameters,
        json!({"count": 5, "size": 12, "ratio": 2.5, "on": true, "unit": "ms"})
    );
    let r = reflections(&app, id).await;
    let analysis = r[0]["body"]["analysis"].as_str().unwrap_or_default();
    for change in [
        "/count: \"5e0\" → 5",
        "/ratio: \"2.50\" → 2.5",
        "/on: \"TRUE\" → true",
        "/unit: missing → \"ms\"",
    ] {
        assert!(analysis.contains(change), "{change:?} not in {analysis:?}");
    }
}

/// A coercion that would lose information is refused: no call, and the task stops for a
/// person instead of guessing.
#[tokio::test]
async fn a_lossy_coercion_is_refused_without_a_call() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("strict", Reply::echo);
    let schema = json!({"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]});
    register_tool(
        &app,
        "strict",
        &faults.endpoint("strict"),
        json!({"input_schema": schema}),
    )
    .await;
    let (id, calls, t) = run(
        &app,
        &faults,
        "strict",
        one_step("strict", json!({"count": "5.5"})),
    )
    .await;
    assert_eq!(t["status"], "needs_intervention", "{t}");
    assert!(calls.is_empty(), "{calls:?}");
    let r = reflections(&app, id).await;
    let analysis = r[0]["body"]["analysis"].as_str().unwrap_or_default();
    assert!(
        analysis.contains("refused") && analysis.contains("lose information"),
        "{analysis}"
    );
}

/// What an answer's body says: the tool's own `retryable` and `category` win over the status;
/// a proxy's HTML page gives a short message and keeps the page in `detail`; a 2xx whose
/// `Content-Type` says JSON but whose body does not parse is a failed call, never a success.
#[tokio::test]
async fn an_answer_body_is_read_as_it_says() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("declares", |_| {
        Reply::json(500, json!({"error": {"message": "quota used up", "category": "external_error", "retryable": false}}))
    });
    let page = format!("<html><body>{}</body></html>", "Bad Gateway ".repeat(100));
    let html = page.clone();
    faults.route("proxied", move |s| match s.nth {
        1 => Reply::text(502, "text/html", &html),
        _ => Reply::echo(s),
    });
    faults.route("garbled", |s| match s.nth {
        1 => Reply::text(200, "application/json; charset=utf-8", "{\"output\": "),
        _ => Reply::echo(s),
    });
    for t in ["declares", "proxied", "garbled"] {
        register_tool(&app, t, &faults.endpoint(t), json!({})).await;
    }
    let w = app.worker(|_| {});
    let declares = app.submit(one_step("declares", json!({}))).await;
    let proxied = app.submit(one_step("proxied", json!({}))).await;
    let garbled = app.submit(one_step("garbled", json!({}))).await;
    for id in [declares, proxied, garbled] {
        app.wait_done(id, LIMIT).await;
    }
    w.stop().await;

    assert_eq!(
        faults.calls("declares").len(),
        1,
        "a 500 the tool says is not retryable"
    );
    let e = &attempts(&app, declares).await[0]["error"];
    assert_eq!(
        (e["category"].as_str(), e["retryable"].as_bool()),
        (Some("external_error"), Some(false))
    );

    let e = attempts(&app, proxied).await[0]["error"].clone();
    let message = e["message"].as_str().unwrap();
    assert!(message.starts_with("HTTP 502: <html>"), "{message}");
    assert!(
        message.chars().count() <= "HTTP 502: ".len() + 200,
        "{message}"
    );
    assert_eq!(e["detail"].as_str(), Some(page.as_str()));
    assert_eq!(e["retryable"], true);

    let a = attempts(&app, garbled).await;
    assert_eq!(a[0]["status"], "failed", "{}", a[0]);
    assert!(
        a[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not parse"),
        "{}",
        a[0]
    );
    assert_eq!(a[1]["status"], "succeeded");
}

/// The fleet-wide circuit breaker as clients see it: `GET /tools/{id}` shows it open while the
/// tool is down (its steps wait without calls), half open for one probe, closed once the tool is
/// back; the steps then heal.
#[tokio::test]
async fn the_circuit_opens_waits_probes_and_closes() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    let up = Arc::new(AtomicBool::new(false));
    let is_up = up.clone();
    faults.route("fragile", move |s| {
        if is_up.load(Ordering::SeqCst) {
            Reply::echo(s)
        } else {
            Reply::status(503)
        }
    });
    register_tool(
        &app,
        "fragile",
        &faults.endpoint("fragile"),
        json!({
            "circuit_breaker": {"failure_threshold": 2, "cool_down_secs": 1},
            "retry": {"max_attempts": 50, "initial_interval_ms": 50, "max_interval_ms": 200}
        }),
    )
    .await;
    let w = app.worker(|c| c.concurrency = 1);
    let ids = [
        app.submit(one_step("fragile", json!({}))).await,
        app.submit(one_step("fragile", json!({}))).await,
    ];
    let open = wait_for("the circuit to open", LIMIT, || async {
        let (_, t) = app.get("/api/v1/tools/fragile").await;
        (t["circuit"]["state"] == "open").then_some(t)
    })
    .await;
    assert!(open["circuit"]["until"].is_string(), "{open}");
    let (_, metrics) = app.get("/metrics").await;
    let metrics = metrics.as_str().unwrap_or_default();
    assert!(
        metrics.lines().any(
            |l| l.starts_with("trellis_tool_circuit_open{tool=\"fragile\"") && l.ends_with(" 1")
        ),
        "{metrics}"
    );
    assert!(
        open["circuit"]["consecutive_failures"].as_i64().unwrap() >= 2,
        "{open}"
    );
    // while it stays down, only probes reach it: at most one per cool-down
    let before = faults.calls("fragile").len();
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let probes = faults.calls("fragile").len() - before;
    assert!(probes <= 4, "{probes} calls in 3.5 s of 1 s cool-downs");
    up.store(true, Ordering::SeqCst);
    for id in ids {
        let t = app.wait_done(id, LIMIT).await;
        assert_eq!(t["status"], "succeeded", "{t}");
    }
    w.stop().await;
    let (_, t) = app.get("/api/v1/tools/fragile").await;
    assert_eq!(t["circuit"]["state"], "closed", "{t}");
    assert_eq!(t["circuit"]["consecutive_failures"], 0, "{t}");
    // the steps that met the open circuit waited it out without an attempt: every failed
    // attempt is a call the tool answered (the issue that made an open circuit defer changed
    // this test, which counted `circuit_open` attempts made without a call)
    let mut failed = 0;
    let mut deferred = 0;
    for id in ids {
        for a in attempts(&app, id).await {
            assert_ne!(a["error"]["category"], "circuit_open", "{a}");
            if a["status"] == "failed" {
                failed += 1;
            }
        }
        deferred += step_deferrals(&app, id, "circuit_open").await;
    }
    assert!(deferred > 0, "no step met the open circuit");
    assert_eq!(failed, faults.calls("fragile").len() - 2);
}

/// How many times the task's steps were given back without a call, for `reason`.
async fn step_deferrals(app: &TestApp, id: Uuid, reason: &str) -> usize {
    let (_, v) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    v.as_array()
        .expect("events")
        .iter()
        .filter(|e| e["kind"] == "step_deferred" && e["payload"]["reason"] == reason)
        .count()
}

/// The case: each step's first five calls answer 503, with three tasks at once. Their
/// outages add up fleet-wide and open the circuit; the steps that meet it wait, burn nothing,
/// and every task heals. Every attempt recorded is a call the tool saw.
#[tokio::test]
async fn an_open_circuit_defers_without_burning_attempts() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("five_503s", |s| {
        if s.nth <= 5 {
            Reply::status(503)
        } else {
            Reply::echo(s)
        }
    });
    register_tool(
        &app,
        "five_503s",
        &faults.endpoint("five_503s"),
        json!({"circuit_breaker": {"failure_threshold": 5, "cool_down_secs": 0.5},
               "retry": {"initial_interval_ms": 100, "max_interval_ms": 400}}),
    )
    .await;
    let w = app.worker(|_| {});
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(app.submit(one_step("five_503s", json!({}))).await);
    }
    let mut deferred = 0;
    for id in &ids {
        let t = app.wait_done(*id, LIMIT).await;
        assert_eq!(t["status"], "succeeded", "{t}");
        let calls = faults
            .calls("five_503s")
            .into_iter()
            .filter(|c| c.task_id == id.to_string())
            .count();
        let made = attempts(&app, *id).await;
        assert_eq!(made.len(), calls, "an attempt without a call: {made:?}");
        assert_eq!(calls, 6, "five failures and the success");
        deferred += step_deferrals(&app, *id, "circuit_open").await
            + step_deferrals(&app, *id, "circuit_probe").await;
    }
    w.stop().await;
    assert!(
        deferred > 0,
        "the circuit never opened: the case proves nothing"
    );
}

/// A tool that fails every call, ten tasks at once: its circuit opens, the steps wait without
/// attempts, and each task ends within the tool's `max_elapsed_secs` and one cool-down of its
/// first failure (database clock), the steps that only waited with a reason naming the tool.
#[tokio::test]
async fn a_dead_tool_ends_its_tasks_within_its_time_and_one_cool_down() {
    const MAX_ELAPSED: f64 = 2.0;
    const COOL_DOWN: f64 = 1.0;
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("dead", |_| Reply::status(503));
    register_tool(
        &app,
        "dead",
        &faults.endpoint("dead"),
        json!({"circuit_breaker": {"failure_threshold": 3, "cool_down_secs": COOL_DOWN},
               "retry": {"max_elapsed_secs": MAX_ELAPSED, "max_attempts": 100,
                         "initial_interval_ms": 100, "max_interval_ms": 400}}),
    )
    .await;
    let w = app.worker(|_| {});
    let mut ids = Vec::new();
    for _ in 0..10 {
        ids.push(app.submit(one_step("dead", json!({}))).await);
    }
    let mut stopped_waiting = 0;
    for id in &ids {
        let t = app.wait_done(*id, LIMIT).await;
        assert_ne!(t["status"], "succeeded", "{t}");
        let made = attempts(&app, *id).await;
        let calls = faults
            .calls("dead")
            .into_iter()
            .filter(|c| c.task_id == id.to_string())
            .count();
        assert_eq!(made.len(), calls, "an attempt without a call: {made:?}");
        // its first failure or first wait came after it was submitted (some steps never call:
        // the circuit opened before they ran)
        let first: chrono::DateTime<chrono::Utc> =
            t["created_at"].as_str().expect("created").parse().unwrap();
        let ended: chrono::DateTime<chrono::Utc> = t["finished_at"]
            .as_str()
            .expect("finished")
            .parse()
            .unwrap();
        // the bound, and what a claim and a decision take on a loaded test machine
        let bound = MAX_ELAPSED + COOL_DOWN + 1.5;
        let took = (ended - first).as_seconds_f64();
        assert!(
            took <= bound,
            "{id} took {took:.2} s (bound {bound} s): {t}"
        );
        let reason = t["error"]["reason"].as_str().unwrap_or_default();
        if reason.contains("no call was made") {
            assert!(reason.contains("\"dead\""), "{reason}");
            stopped_waiting += 1;
        }
    }
    w.stop().await;
    assert!(
        stopped_waiting > 0,
        "no task stopped waiting: the case proves nothing"
    );
}

/// A step whose tool's circuit is open takes a registered alternative at once: no call of the
/// open tool, no wait, one attempt (with the alternative).
#[tokio::test]
async fn an_open_circuit_hands_the_step_to_its_alternative_at_once() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("down", |_| Reply::status(503));
    faults.route("backup", Reply::echo);
    register_tool(&app, "backup", &faults.endpoint("backup"), json!({})).await;
    register_tool(
        &app,
        "down",
        &faults.endpoint("down"),
        json!({"alternatives": ["backup"],
               "circuit_breaker": {"failure_threshold": 2, "cool_down_secs": 600}}),
    )
    .await;
    let w = app.worker(|_| {});
    for _ in 0..2 {
        let id = app.submit(one_step("down", json!({}))).await;
        app.wait_done(id, LIMIT).await;
    }
    let (_, t) = app.get("/api/v1/tools/down").await;
    assert_eq!(t["circuit"]["state"], "open", "{t}");
    let id = app.submit(one_step("down", json!({"n": 3}))).await;
    let t = app.wait_done(id, LIMIT).await;
    w.stop().await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let made = attempts(&app, id).await;
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(made[0]["tool"], "backup", "{made:?}");
    let called_down = faults
        .calls("down")
        .iter()
        .filter(|c| c.task_id == id.to_string())
        .count();
    assert_eq!(called_down, 0, "the open tool was called");
    assert_eq!(step_deferrals(&app, id, "circuit_open").await, 0);
}

/// Every rate-limit convention holds the tool fleet-wide until its reset (recovery issue,
/// second part). Per form, one task meets the limit; two more are submitted once its answer is
/// recorded, while the window is open: they wait (`step_deferred`, no attempt) and no call
/// comes before the reset; every task heals, and every attempt is a call the server saw.
#[tokio::test]
async fn every_rate_limit_convention_holds_the_tool_until_its_reset() {
    use trellis::testkit::faults::{RateForm, RateWindow};
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    let mut windows = Vec::new();
    for form in RateForm::ALL {
        // long enough that the later tasks are submitted inside it on a loaded machine
        let w = RateWindow::new(form, Duration::from_secs(5));
        let answer = w.clone();
        faults.route(form.name(), move |s| answer.answer(s));
        register_tool(&app, form.name(), &faults.endpoint(form.name()), json!({})).await;
        windows.push((form, w));
    }
    let w = app.worker(|_| {});
    let mut tasks = Vec::new();
    for (form, _) in &windows {
        tasks.push((
            *form,
            app.submit(one_step(form.name(), json!({"i": 0}))).await,
        ));
    }
    for (form, id) in tasks.clone() {
        // its first answer is recorded (and with it the hold)
        wait_for("the first answer", LIMIT, || async {
            (!attempts(&app, id).await.is_empty()).then_some(())
        })
        .await;
        for i in 1..3 {
            tasks.push((
                form,
                app.submit(one_step(form.name(), json!({"i": i}))).await,
            ));
        }
    }
    for (form, id) in &tasks {
        let t = app.wait_done(*id, LIMIT).await;
        assert_eq!(t["status"], "succeeded", "{}: {t}", form.name());
        let calls = faults
            .calls(form.name())
            .into_iter()
            .filter(|c| c.task_id == id.to_string())
            .count();
        let made = attempts(&app, *id).await;
        assert_eq!(
            made.len(),
            calls,
            "{}: an attempt without a call: {made:?}",
            form.name()
        );
    }
    w.stop().await;
    for (form, window) in &windows {
        assert_eq!(window.early(), 0, "{}: calls before the reset", form.name());
        let mut deferred = 0;
        for (_, id) in tasks.iter().filter(|(f, _)| f == form).skip(1) {
            deferred += step_deferrals(&app, *id, "retry_after").await;
        }
        assert!(
            deferred > 0,
            "{}: no later step waited for the reset",
            form.name()
        );
    }
}

fn upstream_task(producer: &str) -> Value {
    json!({"description": "a value made upstream", "plan": {"steps": [
        {"id": "make", "tool": producer, "parameters": {"what": "a count"}},
        {"id": "use", "tool": "typed_count", "dependencies": ["make"],
         "parameters": {"count": "${make.output.n}"}}
    ]}})
}

async fn upstream_app() -> (TestApp, FaultServer) {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("typed_count", Reply::echo);
    let schema = json!({"type": "object", "properties": {"count": {"type": "integer"}},
                        "required": ["count"]});
    register_tool(
        &app,
        "typed_count",
        &faults.endpoint("typed_count"),
        json!({"input_schema": schema}),
    )
    .await;
    (app, faults)
}

/// Healing upstream (recovery issue, acceptance 4): a step's parameter comes from an earlier
/// step's output, `"five"` for an integer. Recovery names the producer, which runs again with
/// the failure as its `feedback`, and the consumer runs on its new output.
#[tokio::test]
async fn a_bad_value_made_upstream_is_healed_where_it_is_made() {
    let (app, faults) = upstream_app().await;
    // a producer that does better when told why
    faults.route("maker", |s| {
        if s.feedback.is_null() {
            Reply::json(200, json!({"output": {"n": "five"}}))
        } else {
            Reply::json(200, json!({"output": {"n": 5}}))
        }
    });
    register_tool(&app, "maker", &faults.endpoint("maker"), json!({})).await;
    let (id, used, t) = run(&app, &faults, "typed_count", upstream_task("maker")).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let made = faults.calls("maker");
    assert_eq!(made.len(), 2, "{made:?}");
    assert!(made[0].feedback.is_null());
    let feedback = &made[1].feedback;
    assert_eq!(feedback["step_id"], "use", "{feedback}");
    assert_eq!(
        feedback["error"]["category"], "parameter_error",
        "{feedback}"
    );
    assert!(
        feedback["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("/count"),
        "{feedback}"
    );
    assert_eq!(used.len(), 1, "the consumer called once, on the new output");
    assert_eq!(used[0].parameters, json!({"count": 5}));
    let r = reflections(&app, id).await;
    let said = serde_json::to_string(&r).unwrap();
    assert!(said.contains("step make's output"), "{said}");
    assert!(said.contains("replan_from_step"), "{said}");
}

/// A producer that cannot do better: the task ends within the replan limit, the stop reason
/// naming the producer, and the consumer never calls its tool with the bad value.
#[tokio::test]
async fn a_producer_that_cannot_do_better_ends_bounded_and_named() {
    let (app, faults) = upstream_app().await;
    faults.route("stubborn", |_| {
        Reply::json(200, json!({"output": {"n": "five"}}))
    });
    register_tool(&app, "stubborn", &faults.endpoint("stubborn"), json!({})).await;
    let (_, used, t) = run(&app, &faults, "typed_count", upstream_task("stubborn")).await;
    assert_ne!(t["status"], "succeeded", "{t}");
    assert!(used.is_empty(), "{used:?}");
    // the first run and one re-run per replan (`max_task_replans`, 1 by default)
    assert_eq!(faults.calls("stubborn").len(), 2);
    assert_eq!(t["status"], "needs_intervention", "{t}");
    let reason = t["stop_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("step make's output"), "{t}");
}

/// A step waits no longer than its tool allows, however long the cool-down: it is given back
/// until its limit, not until the circuit's end. A person's rerun starts its clock again: the
/// rerun step waits its whole limit once more before it stops (without a call either time).
#[tokio::test]
async fn a_wait_ends_at_its_limit_and_a_rerun_starts_the_clock_again() {
    const LIMIT_SECS: f64 = 2.0;
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("long_open", |_| Reply::status(503));
    register_tool(
        &app,
        "long_open",
        &faults.endpoint("long_open"),
        json!({"circuit_breaker": {"failure_threshold": 1, "cool_down_secs": 600},
               "retry": {"max_elapsed_secs": LIMIT_SECS, "initial_interval_ms": 100}}),
    )
    .await;
    let w = app.worker(|_| {});
    let id = app.submit(one_step("long_open", json!({}))).await;
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "failed", "{t}");
    let reason = t["error"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("no call was made"), "{t}");
    let took = |t: &Value, from: chrono::DateTime<chrono::Utc>| {
        let to: chrono::DateTime<chrono::Utc> = t["finished_at"].as_str().unwrap().parse().unwrap();
        (to - from).as_seconds_f64()
    };
    let first = took(&t, t["created_at"].as_str().unwrap().parse().unwrap());
    assert!(
        first < 30.0,
        "waited {first:.1} s, past its limit, toward the 600 s cool-down"
    );
    let calls = faults.calls("long_open").len();
    // rerun while the circuit is still open: the step waits its limit again, then stops
    let rerun_at: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT now()")
        .fetch_one(app.store().pool())
        .await
        .unwrap();
    let (status, body) = app
        .post(
            &format!("/api/v1/tasks/{id}/rerun"),
            &json!({"from_step": "step_1"}),
        )
        .await;
    assert!(status.is_success(), "{status} {body}");
    let t = app.wait_done(id, LIMIT).await;
    w.stop().await;
    assert_eq!(t["status"], "failed", "{t}");
    let second = took(&t, rerun_at);
    assert!(
        second >= LIMIT_SECS * 0.9,
        "the rerun stopped {second:.2} s after it started: its clock did not start again"
    );
    assert_eq!(
        faults.calls("long_open").len(),
        calls,
        "the open tool was called"
    );
}

/// Ten tasks at once on a `Crowded` service; each ends, and what each step's attempts were.
async fn crowd(announce: bool) -> (Vec<Vec<Value>>, usize, usize) {
    use trellis::testkit::faults::Crowded;
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    let svc = Crowded::new(Duration::from_secs(1), 3, Duration::from_secs(1), announce);
    let answering = svc.clone();
    faults.route("crowded", move |s| answering.answer(s));
    register_tool(&app, "crowded", &faults.endpoint("crowded"), json!({})).await;
    let w = app.worker(|_| {});
    let mut ids = Vec::new();
    for i in 0..10 {
        ids.push(app.submit(one_step("crowded", json!({"i": i}))).await);
    }
    if announce {
        // the tool shows the release under way, at the announced rate a tenth slower
        let c = wait_for("the release under way", LIMIT, || async {
            let (_, t) = app.get("/api/v1/tools/crowded").await;
            t["circuit"]["released_until"].is_string().then_some(t)
        })
        .await;
        // (slower only if a release was refused meanwhile)
        let pace = c["circuit"]["pace_ms"].as_i64().unwrap_or(0);
        assert!((367..=500).contains(&pace), "{c}");
    }
    let mut all = Vec::new();
    for id in ids {
        let t = app.wait_done(id, LIMIT).await;
        assert_eq!(t["status"], "succeeded", "{t}");
        all.push(attempts(&app, id).await);
    }
    w.stop().await;
    let calls = faults.calls("crowded").len();
    (all, svc.refused_after_hold(), calls)
}

/// The crowd after a hold (recovery, fifth step, class 3): ten steps meet a hold, and after it
/// the service answers three calls a second and says so (`RateLimit-Policy`). The steps that
/// waited go out at that rate, not as one burst: (almost) no call is refused after the hold,
/// and none that is spends an attempt. Released all at once, half of them were refused and
/// each of those spent one.
#[tokio::test]
async fn the_crowd_after_a_hold_goes_out_at_the_announced_rate() {
    let (attempts, refused, calls) = crowd(true).await;
    for a in &attempts {
        let failed = a.iter().filter(|a| a["status"] == "failed").count();
        // the first call of each met the hold before anyone knew of it
        assert!(failed <= 1, "a refused release spent an attempt: {a:?}");
    }
    assert!(
        refused <= 2,
        "{refused} calls refused after the hold ({calls} calls)"
    );
    let recorded: usize = attempts.iter().map(Vec::len).sum();
    assert_eq!(calls, recorded + refused, "{attempts:?}");
}

/// The same service saying only `Retry-After`: the release goes at the default pace, faster
/// than the service allows, so some released calls are refused again. Each of those holds
/// the tool again and waits for a new slot: no attempt spent, every task heals.
#[tokio::test]
async fn a_release_refused_again_is_held_not_charged() {
    let (attempts, refused, calls) = crowd(false).await;
    for a in &attempts {
        let failed = a.iter().filter(|a| a["status"] == "failed").count();
        assert!(failed <= 1, "a refused release spent an attempt: {a:?}");
    }
    assert!(
        refused > 0,
        "the default pace met the shrunk limit ({calls} calls)"
    );
    // every call is a recorded attempt or a refused release, never both
    let recorded: usize = attempts.iter().map(Vec::len).sum();
    assert_eq!(calls, recorded + refused, "{attempts:?}");
}

/// A service that refuses every call (slowly), three tasks at once: the steps released in later slots
/// are refused again without an attempt at most three times each, then charged as any, so the
/// tasks end by their attempts (bounded), not only by their wait limit.
#[tokio::test]
async fn releases_refused_every_time_are_charged_after_three() {
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    // slow to answer: the later slots' calls are on their way before the first refusal
    faults.route("closed_shop", |_| {
        Reply::status(429)
            .header("retry-after", "1")
            .after(Duration::from_millis(300))
    });
    register_tool(
        &app,
        "closed_shop",
        &faults.endpoint("closed_shop"),
        json!({}),
    )
    .await;
    let w = app.worker(|_| {});
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(app.submit(one_step("closed_shop", json!({"i": i}))).await);
    }
    let mut refused = 0;
    for id in &ids {
        let t = app.wait_done(*id, Duration::from_secs(120)).await;
        assert_eq!(t["status"], "needs_intervention", "{t}");
        let (_, v) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
        let events = v.as_array().expect("events");
        let mut per_step: std::collections::HashMap<String, usize> = Default::default();
        for e in events
            .iter()
            .filter(|e| e["kind"] == "step_deferred" && e["payload"]["reason"] == "release_refused")
        {
            *per_step
                .entry(e["payload"]["step_key"].as_str().unwrap_or("").to_string())
                .or_default() += 1;
        }
        assert!(per_step.values().all(|n| *n <= 3), "{per_step:?}");
        refused += per_step.values().sum::<usize>();
    }
    w.stop().await;
    assert!(refused > 0, "no released step met the refusal");
    // every call is a recorded attempt or one of those refusals
    let mut recorded = 0;
    for id in &ids {
        recorded += attempts(&app, *id).await.len();
    }
    assert_eq!(faults.calls("closed_shop").len(), recorded + refused);
}
