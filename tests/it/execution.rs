//! DAG execution through a real worker: placeholders, output params, parallelism, retries.

use trellis::testkit as common;

use std::sync::Arc;
use std::time::Duration;

use common::{ToolServer, register_tool, spawn_app, spawn_app_with, test_settings};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(30);

/// Acceptance 1: a 4-step DAG over HTTP tools with `${step.output.path}`, interpolated text and
/// `${metadata.key}` fed by `output_params` produces the right outputs.
#[tokio::test]
async fn http_dag_resolves_placeholders_and_output_params() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|call| match call.tool.as_str() {
            // login → a token (output_params) and a user object
            "login" => (200, json!({
                "output": {"user": {"id": 7, "name": "ada"}},
                "output_params": {"session_token": "tok-123"}
            })),
            // lookup → echoes what it got, plus a computed field
            "lookup" => (200, json!({
                "output": {"got": call.parameters, "score": call.parameters["user_id"].as_i64().unwrap_or(0) * 10}
            })),
            // a tool answering without an "output" key: the whole body is the output
            _ => (200, json!({"received": call.parameters})),
        }),
    )
    .await;
    register_tool(&app, "login", &server.endpoint("login"), json!({})).await;
    register_tool(&app, "lookup", &server.endpoint("lookup"), json!({})).await;
    register_tool(
        &app,
        "report",
        &server.endpoint("report"),
        json!({
            "input_schema": {"type": "object", "properties": {"region": {"type": "string"}}}
        }),
    )
    .await;
    let worker = app.worker(|_| {});

    let id = app
        .submit(json!({
            "description": "login, two lookups, report",
            "metadata": {"region": "eu-west"},
            "plan": {"steps": [
                {"id": "step_1", "name": "login", "tool": "login", "parameters": {"user": "ada"}},
                {"id": "step_2", "name": "by id", "tool": "lookup", "dependencies": ["step_1"],
                 "parameters": {"user_id": "${step_1.output.user.id}", "token": "${metadata.session_token}"}},
                {"id": "step_3", "name": "by name", "tool": "lookup", "dependencies": ["step_1"],
                 "parameters": {"user_id": 1, "greeting": "hello ${step_1.output.user.name} (#${step_1.output.user.id})"}},
                {"id": "step_4", "name": "report", "tool": "report", "dependencies": ["step_2", "step_3"],
                 "parameters": {"summary": "score=${step_2.output.score}; ${step_3.output.got.greeting}",
                                "whole": "${step_2}", "token": "${metadata.session_token}"}}
            ]}
        }))
        .await;
    let status = app.wait_done(id, LIMIT).await;
    assert_eq!(status["status"], "succeeded", "{status}");

    let (_, result) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(result["is_success"], true);
    let out = &result["outputs"];
    assert_eq!(out["step_1"], json!({"user": {"id": 7, "name": "ada"}}));
    // whole placeholder keeps the JSON type (number), metadata came from step_1's output_params
    assert_eq!(
        out["step_2"]["got"],
        json!({"user_id": 7, "token": "tok-123"})
    );
    assert_eq!(out["step_2"]["score"], 70);
    assert_eq!(out["step_3"]["got"]["greeting"], "hello ada (#7)");
    let report = &out["step_4"]["received"];
    assert_eq!(report["summary"], "score=70; hello ada (#7)");
    assert_eq!(report["whole"], out["step_2"]);
    assert_eq!(report["token"], "tok-123");
    // a parameter declared by the tool's input schema, missing in the step, came from metadata
    assert_eq!(report["region"], "eu-west");

    // the protocol: one call per step, each with its own idempotency key, attempt numbers
    let calls = server.calls();
    assert_eq!(calls.len(), 4);
    let keys: std::collections::HashSet<&str> =
        calls.iter().map(|c| c.idempotency_key.as_str()).collect();
    assert_eq!(keys.len(), 4, "one key per call: {keys:?}");
    for c in &calls {
        assert!(
            c.idempotency_key.starts_with("tr1-") && c.idempotency_key.len() == 36,
            "{}",
            c.idempotency_key
        );
        assert_eq!(c.attempt, 1);
        assert_eq!(c.task_id, id.to_string());
    }
    let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(t["runtime_metadata"]["session_token"], "tok-123");

    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    let attempts = attempts.as_array().unwrap();
    assert_eq!(attempts.len(), 4);
    let a2 = attempts.iter().find(|a| a["step_id"] == "step_2").unwrap();
    assert_eq!(a2["parameters"], json!({"user_id": 7, "token": "tok-123"}));
    // each attempt records the key its call carried
    let step_2 = calls.iter().find(|c| c.step_id == "step_2").unwrap();
    assert_eq!(a2["idempotency_key"], json!(step_2.idempotency_key));
    assert_eq!(a2["status"], "succeeded");
    assert_eq!(a2["worker_id"], json!(worker.id.to_string()));

    let (_, events) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    let kinds: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "step_started").count(), 4);
    assert_eq!(kinds.iter().filter(|k| **k == "step_completed").count(), 4);
    assert_eq!(*kinds.last().unwrap(), "task_succeeded");
    let seqs: Vec<i64> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as i64).collect::<Vec<_>>(),
        "gap-free sequence"
    );
    worker.stop().await;
}

fn intervals(
    attempts: &Value,
) -> Vec<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>)> {
    let mut v: Vec<_> = attempts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["started_at"].as_str().unwrap().parse().unwrap(),
                a["finished_at"].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn six_sleeps() -> Value {
    let steps: Vec<Value> = (1..=6)
        .map(|i| json!({"id": format!("s{i}"), "tool": "sleep", "parameters": {"ms": 600}}))
        .collect();
    json!({"description": "six sleeps", "plan": {"steps": steps}})
}

/// Acceptance 2 (parallel half): six independent 600 ms sleeps on one worker all overlap.
#[tokio::test]
async fn independent_steps_run_in_parallel_on_one_worker() {
    let app = spawn_app().await;
    let worker = app.worker(|_| {});
    let id = app.submit(six_sleeps()).await;
    assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    let iv = intervals(&attempts);
    assert_eq!(iv.len(), 6);
    // all six were running at one instant: the last start precedes the first finish
    let last_start = iv.iter().map(|i| i.0).max().unwrap();
    let first_finish = iv.iter().map(|i| i.1).min().unwrap();
    assert!(last_start < first_finish, "steps did not overlap: {iv:?}");
    worker.stop().await;
}

/// Acceptance 2 (sequential half): with parallel execution off, they run one at a time in
/// plan order.
#[tokio::test]
async fn parallel_execution_off_runs_steps_one_at_a_time_in_plan_order() {
    let mut settings = test_settings();
    settings.orchestrator.enable_parallel_execution = false;
    let app = spawn_app_with(settings).await;
    let worker = app.worker(|_| {});
    let id = app.submit(six_sleeps()).await;
    assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    let order: Vec<&str> = attempts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["step_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["s1", "s2", "s3", "s4", "s5", "s6"]);
    let iv = intervals(&attempts);
    for w in iv.windows(2) {
        assert!(w[0].1 <= w[1].0, "attempts overlap: {w:?}");
    }
    worker.stop().await;
}

/// `parallel_max_concurrent` caps how many of one task's steps run at once.
#[tokio::test]
async fn per_task_concurrency_cap_is_respected() {
    let mut settings = test_settings();
    settings.orchestrator.parallel_max_concurrent = 2;
    let app = spawn_app_with(settings).await;
    let w1 = app.worker(|_| {});
    let w2 = app.worker(|_| {});
    let id = app.submit(six_sleeps()).await;
    // sample the running count until the task ends: never above 2
    let mut max_running = 0;
    loop {
        let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
        max_running = max_running.max(t["steps"]["running"].as_i64().unwrap());
        let status = t["status"].as_str().unwrap().to_string();
        if !["running", "evaluating"].contains(&status.as_str()) {
            assert_eq!(status, "succeeded");
            break;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert!(max_running <= 2, "saw {max_running} running");
    // peak concurrency from the attempts' own start/finish times (a sweep over the boundaries)
    let iv = intervals(&app.get(&format!("/api/v1/tasks/{id}/attempts")).await.1);
    let mut edges: Vec<(chrono::DateTime<chrono::Utc>, i32)> =
        iv.iter().flat_map(|(s, f)| [(*s, 1), (*f, -1)]).collect();
    edges.sort_by_key(|(t, d)| (*t, *d)); // a finish at the same instant counts first
    let (mut now, mut peak) = (0, 0);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    assert_eq!(
        peak, 2,
        "at most 2 of the task's steps ran at once, and 2 did"
    );
    w1.stop().await;
    w2.stop().await;
}

/// A flaky tool is retried with backoff until it succeeds; counters and attempts show it.
#[tokio::test]
async fn retryable_failures_are_retried_until_success() {
    let app = spawn_app().await;
    let worker = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "flaky", "plan": {"steps": [
            {"id": "f", "tool": "flaky", "parameters": {"fail_times": 2, "v": 1}},
            {"id": "after", "tool": "echo", "dependencies": ["f"], "parameters": {"got": "${f.output.v}"}}
        ]}}))
        .await;
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(
        t["counters"]["consecutive_failures"], 0,
        "reset by the success"
    );
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    let f: Vec<&Value> = attempts
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["step_id"] == "f")
        .collect();
    assert_eq!(
        f.iter()
            .map(|a| a["status"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["failed", "failed", "succeeded"]
    );
    assert_eq!(
        f.iter()
            .map(|a| a["attempt"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(f[0]["error"]["category"], "tool_error");
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(plan["steps"][0]["retry_count"], 2);
    assert_eq!(plan["steps"][1]["output"], json!({"got": 1}));
    let (_, events) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    let kinds: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "step_failed").count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == "retry_scheduled").count(), 2);
    worker.stop().await;
}

/// With step-level reflection off, failures get plain retries: they stop at `max_step_retries`
/// (per-task override) and the task fails with the reason; a non-retryable error fails at
/// once; the rest of the task is skipped.
#[tokio::test]
async fn without_step_reflection_failures_get_plain_retries_then_fail() {
    let mut settings = test_settings();
    settings.reflection.enable_step_level_reflection = false;
    let app = spawn_app_with(settings).await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|_| (503, json!({"error": {"message": "down"}}))),
    )
    .await;
    register_tool(&app, "dead", &server.endpoint("dead"), json!({})).await;
    let worker = app.worker(|_| {});

    let retried = app
        .submit(json!({"description": "dead tool", "limits": {"max_step_retries": 2, "max_consecutive_failures": 5},
            "plan": {"steps": [
                {"id": "a", "tool": "dead"},
                {"id": "b", "tool": "echo", "dependencies": ["a"]}]}}))
        .await;
    let t = app.wait_done(retried, LIMIT).await;
    assert_eq!(t["status"], "failed", "{t}");
    assert!(
        t["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("retries exhausted"),
        "{t}"
    );
    assert_eq!(t["steps"]["skipped"], 1);
    assert_eq!(server.calls().len(), 2, "one call per allowed attempt");
    let (_, r) = app.get(&format!("/api/v1/tasks/{retried}/result")).await;
    assert_eq!(r["is_success"], false);
    assert!(r["error"].is_object());

    let fatal = app
        .submit(json!({"description": "fatal", "plan": {"steps": [
            {"id": "a", "tool": "fail", "parameters": {"message": "forbidden", "category": "external_error", "retryable": false}}]}}))
        .await;
    let t = app.wait_done(fatal, LIMIT).await;
    assert_eq!(t["status"], "failed");
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{fatal}/attempts")).await;
    assert_eq!(attempts.as_array().unwrap().len(), 1);
    assert_eq!(attempts[0]["error"]["category"], "external_error");
    assert_eq!(attempts[0]["error"]["message"], "forbidden");
    worker.stop().await;
}

/// In-step actions run in parallel; their outputs are aggregated and readable by the step's
/// own tool through `{{action.output}}`.
#[tokio::test]
async fn actions_run_in_parallel_and_feed_the_step() {
    let app = spawn_app().await;
    let worker = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "actions", "plan": {"steps": [
            {"id": "src", "tool": "echo", "parameters": {"n": 5}},
            {"id": "fan", "tool": "", "dependencies": ["src"], "actions": [
                {"id": "a1", "tool": "sleep", "parameters": {"ms": 400}},
                {"id": "a2", "tool": "sleep", "parameters": {"ms": 400}},
                {"id": "a3", "tool": "echo", "parameters": {"n": "${src.output.n}"}}]},
            {"id": "combine", "tool": "echo", "dependencies": ["src"],
             "actions": [{"id": "x", "tool": "echo", "parameters": {"v": 1}}],
             "parameters": {"from_action": "{{x.output.v}}", "text": "x={{x.output}}"}}
        ]}}))
        .await;
    assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(
        r["outputs"]["fan"],
        json!({"a1": {"slept_ms": 400}, "a2": {"slept_ms": 400}, "a3": {"n": 5}})
    );
    assert_eq!(
        r["outputs"]["combine"],
        json!({"from_action": 1, "text": "x={\"v\":1}"})
    );
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    let fan = attempts
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["step_id"] == "fan")
        .unwrap();
    let started: chrono::DateTime<chrono::Utc> =
        fan["started_at"].as_str().unwrap().parse().unwrap();
    let finished: chrono::DateTime<chrono::Utc> =
        fan["finished_at"].as_str().unwrap().parse().unwrap();
    // two 400 ms actions in parallel: well under their 800 ms sum
    assert!((finished - started).num_milliseconds() < 750, "{fan}");
    worker.stop().await;
}

/// Cancelling a running task: the running step finishes, nothing after it starts.
#[tokio::test]
async fn cancel_while_running_starts_nothing_more() {
    let app = spawn_app().await;
    let worker = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "long", "plan": {"steps": [
            {"id": "a", "tool": "sleep", "parameters": {"ms": 500}},
            {"id": "b", "tool": "echo", "dependencies": ["a"]}]}}))
        .await;
    trellis::testkit::wait_for("step a to start", LIMIT, || async {
        let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
        (t["steps"]["running"] == 1).then_some(())
    })
    .await;
    let (s, _) = app
        .post(&format!("/api/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(s.as_u16(), 200);
    trellis::testkit::wait_for("step a to finish", LIMIT, || async {
        let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
        (t["steps"]["running"] == 0).then_some(())
    })
    .await;
    let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(t["status"], "cancelled");
    assert_eq!(t["steps"]["succeeded"], 1);
    assert_eq!(t["steps"]["skipped"], 1);
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    assert_eq!(attempts.as_array().unwrap().len(), 1, "b never ran");
    worker.stop().await;
}

fn parse_sse(body: &str) -> Vec<(i64, String, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let mut id = None;
            let mut event = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse::<i64>().ok();
                } else if let Some(v) = line.strip_prefix("event: ") {
                    event = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = serde_json::from_str::<Value>(v).ok();
                }
            }
            Some((id?, event?, data?))
        })
        .collect()
}

/// `Accept: text/event-stream` streams the events live (id = seq, event = kind) and ends once the
/// task is finished; `Last-Event-ID` resumes after a given sequence number.
#[tokio::test]
async fn events_stream_live_over_sse_and_resume() {
    let app = spawn_app().await;
    let worker = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "sse", "plan": {"steps": [
            {"id": "a", "tool": "sleep", "parameters": {"ms": 200}},
            {"id": "b", "tool": "echo", "dependencies": ["a"]}]}}))
        .await;
    // opened while the task runs; the body ends by itself when the task is finished
    let r = app
        .http
        .get(app.url(&format!("/api/v1/tasks/{id}/events")))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let live = parse_sse(&r.text().await.unwrap());
    let kinds: Vec<&str> = live.iter().map(|(_, k, _)| k.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"task_submitted"));
    assert_eq!(kinds.last(), Some(&"task_succeeded"));
    let ids: Vec<i64> = live.iter().map(|(i, _, _)| *i).collect();
    assert_eq!(ids, (1..=ids.len() as i64).collect::<Vec<_>>());
    assert_eq!(live[0].2["kind"], "task_submitted");
    // the same events as the JSON list
    let (_, list) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    assert_eq!(list.as_array().unwrap().len(), live.len());

    let r = app
        .http
        .get(app.url(&format!("/api/v1/tasks/{id}/events")))
        .header("accept", "text/event-stream")
        .header("last-event-id", "3")
        .send()
        .await
        .unwrap();
    let resumed = parse_sse(&r.text().await.unwrap());
    assert_eq!(resumed.first().map(|e| e.0), Some(4));
    assert_eq!(resumed.len(), live.len() - 3);
    let r = app
        .http
        .get(app.url(&format!("/api/v1/tasks/{id}/events")))
        .header("accept", "text/event-stream")
        .header("last-event-id", "x")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    worker.stop().await;
}

/// `${context.a.b}` reads the task's `context` (whole values keep their JSON type; text is
/// interpolated); `GET /tasks/{id}` returns the context; a missing context path is a
/// `parameter_error`; `context` is a reserved step id.
#[tokio::test]
async fn context_placeholders_read_the_tasks_context() {
    let app = spawn_app().await;
    let worker = app.worker(|_| {});
    let id = app
        .submit(json!({
            "description": "context",
            "context": {"customer": {"tier": "gold", "ids": [4, 5]}},
            "plan": {"steps": [
                {"id": "s1", "tool": "echo", "parameters": {
                    "tier": "${context.customer.tier}", "second": "${context.customer.ids.1}",
                    "line": "tier=${context.customer.tier}", "all": "${context}"}}
            ]}
        }))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(
        done["context"],
        json!({"customer": {"tier": "gold", "ids": [4, 5]}})
    );
    let (_, result) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(
        result["outputs"]["s1"],
        json!({"tier": "gold", "second": 5, "line": "tier=gold",
               "all": {"customer": {"tier": "gold", "ids": [4, 5]}}})
    );

    let missing = app
        .submit(json!({
            "description": "missing context path",
            "limits": {"max_step_retries": 0},
            "plan": {"steps": [{"id": "s1", "tool": "echo", "parameters": {"x": "${context.nope}"}}]}
        }))
        .await;
    app.wait_done(missing, LIMIT).await;
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{missing}/attempts")).await;
    assert_eq!(
        attempts[0]["error"]["category"], "parameter_error",
        "{attempts}"
    );
    assert!(
        attempts[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("context"),
        "{attempts}"
    );

    let (status, v) = app
        .post(
            "/api/v1/tasks",
            &json!({"description": "x", "plan": {"steps": [{"id": "context", "tool": "echo"}]}}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(v.to_string().contains("reserved"), "{v}");
    worker.stop().await;
}

/// Tool input and output checks: resolved parameters that do not match the tool's
/// `input_schema` fail as `parameter_error` without a call and enter the step's recovery; an
/// output that does not match `output_schema` fails as `output_mismatch`; schemas that are
/// not JSON Schemas are refused at registration.
#[tokio::test]
async fn tool_inputs_and_outputs_are_checked_against_their_schemas() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|call| match call.tool.as_str() {
            "shaped" => (200, json!({"output": {"name": "no id here"}})),
            _ => (200, json!({"output": {"n": call.parameters["n"]}})),
        }),
    )
    .await;
    register_tool(
        &app,
        "typed",
        &server.endpoint("typed"),
        json!({"input_schema": {"type": "object", "required": ["n"],
                                "properties": {"n": {"type": "integer", "minimum": 1}}}}),
    )
    .await;
    register_tool(
        &app,
        "shaped",
        &server.endpoint("shaped"),
        json!({"output_schema": {"type": "object", "required": ["id"]}}),
    )
    .await;
    let (_, tool) = app.get("/api/v1/tools/shaped").await;
    assert_eq!(tool["output_schema"]["required"], json!(["id"]));
    let worker = app.worker(|_| {});

    let ok = app
        .submit(json!({"description": "typed ok", "metadata": {"n": 3},
                       "plan": {"steps": [{"id": "s", "tool": "typed"}]}}))
        .await;
    assert_eq!(app.wait_done(ok, LIMIT).await["status"], "succeeded");

    let bad = app
        .submit(json!({"description": "typed bad", "limits": {"max_step_retries": 0},
                       "plan": {"steps": [{"id": "s", "tool": "typed", "parameters": {"n": "five"}}]}}))
        .await;
    app.wait_done(bad, LIMIT).await;
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{bad}/attempts")).await;
    let first = &attempts[0];
    assert_eq!(first["error"]["category"], "parameter_error", "{attempts}");
    let message = first["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("input schema") && message.contains("/n"),
        "{message}"
    );
    assert!(
        !server.calls().iter().any(|c| c.task_id == bad.to_string()),
        "no call was made with parameters that do not match"
    );
    let (_, events) = app.get(&format!("/api/v1/tasks/{bad}/events")).await;
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "step_reflected"),
        "the failure entered the step's recovery: {events}"
    );

    let mismatch = app
        .submit(
            json!({"description": "shaped", "limits": {"max_step_retries": 0},
                       "plan": {"steps": [{"id": "s", "tool": "shaped"}]}}),
        )
        .await;
    app.wait_done(mismatch, LIMIT).await;
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{mismatch}/attempts")).await;
    assert_eq!(
        attempts[0]["error"]["category"], "output_mismatch",
        "{attempts}"
    );
    assert!(
        server
            .calls()
            .iter()
            .any(|c| c.task_id == mismatch.to_string())
    );

    for (field, schema) in [
        ("input_schema", json!({"type": "nonsense"})),
        ("output_schema", json!({"minimum": "zero"})),
        ("output_schema", json!(17)),
    ] {
        let (status, v) = app
            .post(
                "/api/v1/tools",
                &json!({"id": "broken", "endpoint": "http://127.0.0.1:9/x", field: schema}),
            )
            .await;
        assert_eq!(status, reqwest::StatusCode::UNPROCESSABLE_ENTITY, "{v}");
        assert!(v.to_string().contains(field), "{v}");
    }
    worker.stop().await;
}
