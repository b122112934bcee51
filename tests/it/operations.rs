//! Operating at scale (operations issue): pausing a tool holds its steps in the queue, with
//! no call, no attempt and no retry spent, and resuming runs every one of them.

use trellis::testkit as common;

use std::time::Duration;

use axum::http::StatusCode;
use common::{ToolServer, register_tool, spawn_app};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(120);

async fn count(app: &common::TestApp, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(app.store().pool())
        .await
        .unwrap()
}

/// Acceptance 3: a paused tool with 1,000 queued steps: no call and no attempt while paused
/// (the workers claim past them: tasks submitted after them end); all of them run after
/// resume, each with its one attempt.
#[tokio::test]
async fn a_paused_tool_holds_its_steps_and_runs_them_all_after_resume() {
    let app = spawn_app().await;
    let server = ToolServer::echoing_step(Duration::ZERO).await;
    register_tool(&app, "vendor", &server.endpoint("vendor"), json!({})).await;
    let (s, v) = app.post("/api/v1/tools/vendor/pause", &json!({})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["paused"], true);
    assert_eq!(app.get("/api/v1/tools/vendor").await.1["paused"], true);
    let batch = |tool: &str, n: usize| {
        let tasks: Vec<Value> = (0..n)
            .map(|i| {
                json!({"description": format!("{tool} {i}"), "plan": {"steps": [
                    {"id": "s", "tool": tool, "parameters": {"i": i}}]}})
            })
            .collect();
        json!({"tasks": tasks})
    };
    let (s, v) = app
        .post("/api/v1/tasks/batch", &batch("vendor", 1000))
        .await;
    assert!(s.is_success(), "{v}");
    // submitted after the held steps: the claim must pass over them to reach these
    let (s, v) = app.post("/api/v1/tasks/batch", &batch("echo", 50)).await;
    assert!(s.is_success(), "{v}");
    let w = app.worker(|c| c.concurrency = 32);
    common::wait_for("the echo tasks, behind the held steps", LIMIT, || async {
        let n = count(
            &app,
            "SELECT count(*) FROM tasks WHERE description LIKE 'echo %' AND status = 'succeeded'",
        )
        .await;
        (n == 50).then_some(())
    })
    .await;
    assert_eq!(server.calls().len(), 0, "a paused tool was called");
    assert_eq!(
        count(&app, "SELECT count(*) FROM attempts WHERE tool = 'vendor'").await,
        0
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM steps WHERE tool = 'vendor' AND status = 'ready'"
        )
        .await,
        1000
    );
    // the held steps count in the queue per tool
    let (_, act) = app.get("/api/v1/stats/activity").await;
    let vendor = act["queue"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["tool"] == "vendor")
        .cloned()
        .unwrap_or_default();
    assert_eq!(vendor["ready"], 1000, "{act}");

    let (s, v) = app.post("/api/v1/tools/vendor/resume", &json!({})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["paused"], false);
    common::wait_for("every held task to end", LIMIT, || async {
        let n = count(
            &app,
            "SELECT count(*) FROM tasks WHERE description LIKE 'vendor %' AND finished_at IS NOT NULL",
        )
        .await;
        (n == 1000).then_some(())
    })
    .await;
    w.stop().await;
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM tasks WHERE description LIKE 'vendor %' AND status = 'succeeded'"
        )
        .await,
        1000
    );
    // one attempt each: no retry was spent on the pause
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM steps WHERE tool = 'vendor' AND attempts <> 1"
        )
        .await,
        0
    );
    assert_eq!(server.calls().len(), 1000);
    // a built-in is every tenant's: an operator may not pause it; nor a tool it cannot see
    let (s, op) = app
        .post("/api/v1/keys", &json!({"name": "op", "role": "operator"}))
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let op = common::client_with_key(Some(op["key"].as_str().unwrap()));
    let r = op
        .post(app.url("/api/v1/tools/echo/pause"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let r = op
        .post(app.url("/api/v1/tools/vendor/pause"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status().as_u16(),
        200,
        "an operator pauses its tenant's tool"
    );
    let r = op
        .post(app.url("/api/v1/tools/nope/pause"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
}

/// `n` tasks of `echo` then `vendor`, in batches of 500.
async fn submit_two_step(app: &common::TestApp, n: usize, what: &str, limits: &Value) {
    for start in (0..n).step_by(500) {
        let tasks: Vec<Value> = (start..(start + 500).min(n))
            .map(|i| {
                json!({"description": format!("{what} {i}"), "limits": limits,
                    "plan": {"steps": [
                        {"id": "a", "tool": "echo", "parameters": {"i": i}},
                        {"id": "b", "tool": "vendor", "dependencies": ["a"]}]}})
            })
            .collect();
        let (s, v) = app
            .post("/api/v1/tasks/batch", &json!({"tasks": tasks}))
            .await;
        assert!(s.is_success(), "{v}");
    }
}

async fn bulk(app: &common::TestApp, id: &str) -> Value {
    let (s, v) = app.get(&format!("/api/v1/bulk-actions/{id}")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

/// Acceptance 1: 3,000 tasks failed while their vendor was down. A bulk rerun from their first
/// failed step, applied by two worker processes of which one is killed (SIGKILL) twice while it
/// runs: every task is rerun exactly once (one `task_rerun` event, naming the action), its
/// progress reaches 3,000/3,000, and a dry run matched the same count.
#[tokio::test]
async fn a_bulk_rerun_survives_killed_workers_and_reruns_each_task_once() {
    use std::sync::atomic::{AtomicBool, Ordering};
    // plain retries (none here), then the task fails
    let mut settings = common::test_settings();
    settings.reflection.enable_step_level_reflection = false;
    let app = common::spawn_app_with(settings).await;
    let down = std::sync::Arc::new(AtomicBool::new(true));
    let flag = down.clone();
    let server = ToolServer::start(
        Duration::ZERO,
        std::sync::Arc::new(move |c: &common::ToolCall| {
            if flag.load(Ordering::SeqCst) {
                (400, json!({"error": "the vendor is down"}))
            } else {
                (200, json!({"output": {"ok": c.task_id}}))
            }
        }),
    )
    .await;
    register_tool(&app, "vendor", &server.endpoint("vendor"), json!({})).await;
    const N: usize = 3000;
    let no_recovery = json!({"max_step_retries": 0});
    submit_two_step(&app, N, "outage", &no_recovery).await;
    // and tasks the filter must leave alone: another description, and one that succeeded
    submit_two_step(&app, 20, "elsewhere", &no_recovery).await;
    let w = app.worker(|c| c.concurrency = 64);
    common::wait_for("every task to fail", LIMIT, || async {
        let n = count(
            &app,
            "SELECT count(*) FROM tasks WHERE finished_at IS NOT NULL",
        )
        .await;
        (n == N as i64 + 20).then_some(())
    })
    .await;
    w.stop().await;
    assert_eq!(
        count(&app, "SELECT count(*) FROM tasks WHERE status = 'failed'").await,
        N as i64 + 20
    );
    down.store(false, Ordering::SeqCst);

    let request = |dry: bool| {
        json!({"action": "rerun", "filter": {"status": "failed", "since": "1h", "q": "outage"},
            "from_step": "first_failed", "dry_run": dry, "name": "after the outage"})
    };
    let (s, dry) = app.post("/api/v1/bulk-actions", &request(true)).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{dry}");
    assert_eq!(dry["matched"], N as i64);
    assert!(dry["bulk_action_id"].is_null());
    assert_eq!(
        count(&app, "SELECT count(*) FROM bulk_actions").await,
        0,
        "a dry run created an action"
    );
    let (s, created) = app.post("/api/v1/bulk-actions", &request(false)).await;
    assert_eq!(s, StatusCode::ACCEPTED, "{created}");
    assert_eq!(created["matched"], dry["matched"]);
    let id = created["bulk_action_id"].as_str().unwrap().to_string();

    // two worker processes apply it in batches of 50; one is killed twice as it goes
    let env = [
        ("APP_BULK_ACTIONS__BATCH_SIZE", "50"),
        ("APP_BULK_ACTIONS__POLL_MS", "50"),
    ];
    let steady = common::procs::WorkerProc::start(&app.db, &env);
    let mut victim = common::procs::WorkerProc::start(&app.db, &env);
    for at in [600, 1800] {
        let v = common::wait_for("the bulk action's progress", LIMIT, || async {
            let v = bulk(&app, &id).await;
            (v["done"].as_i64().unwrap() >= at).then_some(v)
        })
        .await;
        assert_eq!(v["status"], "running", "the kill came after the end: {v}");
        victim.signal(libc::SIGKILL);
        victim.wait_exit(Duration::from_secs(10)).await;
        victim = common::procs::WorkerProc::start(&app.db, &env);
    }
    let v = common::wait_for("the bulk action to end", LIMIT, || async {
        let v = bulk(&app, &id).await;
        (v["status"] != "running").then_some(v)
    })
    .await;
    assert_eq!(v["status"], "done", "{v}");
    assert_eq!(
        (
            v["matched"].as_i64(),
            v["done"].as_i64(),
            v["failed"].as_i64()
        ),
        (Some(N as i64), Some(N as i64), Some(0)),
        "{v}"
    );
    assert_eq!(v["failures"], json!([]));
    assert_eq!(v["filter"]["q"], "outage");
    assert!(
        v["filter"]["since"].is_string(),
        "the bound since is kept: {v}"
    );
    common::wait_for("every rerun task to succeed", LIMIT, || async {
        let n = count(
            &app,
            "SELECT count(*) FROM tasks WHERE description LIKE 'outage %' AND status = 'succeeded'",
        )
        .await;
        (n == N as i64).then_some(())
    })
    .await;
    drop((steady, victim));
    // exactly once: one rerun event per task, naming the action; plan version 2 everywhere;
    // the echo step kept (called once), the vendor step run again
    let per_task: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE e.kind = 'task_rerun'),
                count(*) FILTER (WHERE e.kind = 'task_rerun' AND e.payload->>'bulk_action_id' = $1)
         FROM tasks t LEFT JOIN events e ON e.task_id = t.id
         WHERE t.description LIKE 'outage %' GROUP BY t.id",
    )
    .bind(&id)
    .fetch_all(app.store().pool())
    .await
    .unwrap();
    assert_eq!(per_task.len(), N);
    assert!(
        per_task.iter().all(|r| *r == (1, 1)),
        "a task not rerun exactly once"
    );
    let rerun_from_b = count(
        &app,
        "SELECT count(*) FROM events WHERE kind = 'task_rerun' AND payload->>'from_step' = 'b'",
    )
    .await;
    assert_eq!(rerun_from_b, N as i64);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM tasks WHERE description LIKE 'outage %' AND plan_version = 2"
        )
        .await,
        N as i64
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM attempts WHERE tool = 'echo'").await,
        N as i64 + 20,
        "a kept step ran again"
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM tasks WHERE description LIKE 'elsewhere %' AND status = 'failed'"
        )
        .await,
        20,
        "the filter reached tasks it does not match"
    );
    let (_, list) = app.get("/api/v1/bulk-actions").await;
    assert_eq!(list[0]["bulk_action_id"], id.as_str());
    assert_eq!(list[0]["name"], "after the outage");
}

/// An abort stops a bulk action within one batch: the tasks it reached are exactly those its
/// final progress counts. Also: bad requests change nothing, and another tenant sees neither
/// the action nor, through its own, the first tenant's tasks.
#[tokio::test]
async fn an_aborted_bulk_action_stops_within_one_batch() {
    let app = spawn_app().await;
    let server = ToolServer::echoing_step(Duration::ZERO).await;
    register_tool(&app, "vendor", &server.endpoint("vendor"), json!({})).await;
    // held by a paused tool: the tasks stay unfinished, so each cancel applies
    let (s, _) = app.post("/api/v1/tools/vendor/pause", &json!({})).await;
    assert_eq!(s, StatusCode::OK);
    submit_two_step(&app, 1000, "held", &json!({})).await;

    for (bad, why) in [
        (json!({"action": "cancel"}), "a filter or ids"),
        (
            json!({"action": "cancel", "filter": {}, "ids": []}),
            "not both",
        ),
        (
            json!({"action": "cancel", "filter": {"since": "yesterday"}}),
            "filter.since",
        ),
        (
            json!({"action": "cancel", "filter": {"template": "t".repeat(201)}}),
            "filter.template",
        ),
        (
            json!({"action": "cancel", "filter": {}, "from_step": "a"}),
            "rerun only",
        ),
        (json!({"action": "replay", "filter": {}}), "action"),
    ] {
        let (s, v) = app.post("/api/v1/bulk-actions", &bad).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {v}");
        assert!(v.to_string().contains(why), "{bad}: {v}");
    }
    assert_eq!(count(&app, "SELECT count(*) FROM bulk_actions").await, 0);

    // another tenant's operator matches none of these tasks, and cannot see the action
    let (s, k) = app
        .post(
            "/api/v1/keys?tenant=b",
            &json!({"name": "b", "role": "operator"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{k}");
    let b = common::client_with_key(Some(k["key"].as_str().unwrap()));
    let r: Value = b
        .post(app.url("/api/v1/bulk-actions"))
        .json(&json!({"action": "cancel", "filter": {}, "dry_run": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["matched"], 0, "{r}");

    let (s, created) = app
        .post(
            "/api/v1/bulk-actions",
            &json!({"action": "cancel", "filter": {"q": "held"}}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{created}");
    assert_eq!(created["matched"], 1000);
    let id = created["bulk_action_id"].as_str().unwrap().to_string();
    let r = b
        .get(app.url(&format!("/api/v1/bulk-actions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let w = app.worker(|c| {
        c.bulk_batch = 10;
        c.bulk_poll = Duration::from_millis(20);
    });
    common::wait_for("the first batches", LIMIT, || async {
        (bulk(&app, &id).await["done"].as_i64().unwrap() >= 30).then_some(())
    })
    .await;
    let (s, aborted) = app
        .post(&format!("/api/v1/bulk-actions/{id}/abort"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{aborted}");
    assert_eq!(aborted["status"], "aborted");
    let done = aborted["done"].as_i64().unwrap();
    assert!(done < 1000, "{aborted}");
    assert_eq!(done % 10, 0, "a batch was applied in part: {aborted}");
    // a later action runs to its end: the workers have looked again since the abort
    let (s, later) = app
        .post(
            "/api/v1/bulk-actions",
            &json!({"action": "resume", "filter": {"q": "nothing matches this"}}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{later}");
    let later = later["bulk_action_id"].as_str().unwrap().to_string();
    common::wait_for("the later action", LIMIT, || async {
        (bulk(&app, &later).await["status"] == "done").then_some(())
    })
    .await;
    w.stop().await;
    let cancelled = count(
        &app,
        "SELECT count(*) FROM tasks WHERE description LIKE 'held %' AND status = 'cancelled'",
    )
    .await;
    assert_eq!(
        cancelled, done,
        "the tasks cancelled are not the progress counted"
    );
    assert_eq!(bulk(&app, &id).await["done"].as_i64(), Some(done));
    let (s, v) = app
        .post(&format!("/api/v1/bulk-actions/{id}/abort"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    let events = count(
        &app,
        "SELECT count(*) FROM events WHERE kind = 'task_cancelled' AND payload ? 'bulk_action_id'",
    )
    .await;
    assert_eq!(events, done);
}

/// Acceptance 4: a cancelled task whose step calls a 30 s tool ends within 2 heartbeats: the
/// call is aborted at the worker's next heartbeat, the attempt records category `cancelled`
/// (no retry, no reflection, nothing counted against the tool's circuit), and the tool's
/// `cancel_url` receives the cancellation.
#[tokio::test]
async fn cancelling_a_task_aborts_its_call_in_flight_and_tells_the_tool() {
    let app = spawn_app().await;
    let slow = ToolServer::echoing_step(Duration::from_secs(30)).await;
    let told = ToolServer::echoing_step(Duration::ZERO).await;
    register_tool(
        &app,
        "slow",
        &slow.endpoint("slow"),
        json!({"timeout_ms": 60000, "cancel_url": told.endpoint("cancel")}),
    )
    .await;
    assert_eq!(
        app.get("/api/v1/tools/slow").await.1["cancel_url"],
        told.endpoint("cancel").as_str()
    );
    const HEARTBEAT: Duration = Duration::from_secs(1);
    let w = app.worker(|c| c.heartbeat = HEARTBEAT);
    let id = app
        .submit(json!({"description": "a slow call", "plan": {"steps": [
            {"id": "s", "tool": "slow", "parameters": {"q": 1}},
            {"id": "after", "tool": "echo", "dependencies": ["s"]}]}}))
        .await;
    common::wait_for("the slow call", LIMIT, || async {
        (slow.calls().len() == 1).then_some(())
    })
    .await;
    let (s, v) = app
        .post(&format!("/api/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let call = common::wait_for("the cancellation at cancel_url", LIMIT, || async {
        told.calls().first().cloned()
    })
    .await;
    assert_eq!(
        (call.task_id.as_str(), call.step_id.as_str(), call.attempt),
        (id.to_string().as_str(), "s", 1)
    );
    let (category, after_cancel): (String, f64) =
        common::wait_for("the aborted attempt", LIMIT, || async {
            sqlx::query_as(
                "SELECT a.error_category,
                        extract(epoch FROM a.finished_at - t.finished_at)::float8
                 FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE a.task_id = $1",
            )
            .bind(id)
            .fetch_optional(app.store().pool())
            .await
            .unwrap()
        })
        .await;
    w.stop().await;
    assert_eq!(category, "cancelled");
    assert!(
        after_cancel <= 2.0 * HEARTBEAT.as_secs_f64(),
        "the call ended {after_cancel:.2} s after the cancel: more than 2 heartbeats"
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM attempts").await,
        1,
        "the aborted step was retried"
    );
    assert_eq!(slow.calls().len(), 1);
    let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(t["status"], "cancelled", "{t}");
    let kinds: Vec<String> = sqlx::query_scalar("SELECT kind FROM events WHERE task_id = $1")
        .bind(id)
        .fetch_all(app.store().pool())
        .await
        .unwrap();
    assert!(
        !kinds
            .iter()
            .any(|k| k == "step_reflected" || k == "retry_scheduled"),
        "{kinds:?}"
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM steps WHERE status = 'running'").await,
        0
    );
    assert_eq!(
        app.get("/api/v1/tools/slow").await.1["circuit"]["consecutive_failures"],
        json!(0),
        "a cancelled call counted against the tool's circuit"
    );
}

/// Cost: a tool's reported `usage.cost` counts to its task, whose `max_cost` warns at 80 %
/// and stops it at the limit (its remaining steps skipped, a step already started fenced),
/// with no LLM involved.
#[tokio::test]
async fn tools_reported_costs_count_to_the_task_and_its_max_cost_stops_it() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        std::sync::Arc::new(|_: &common::ToolCall| {
            (200, json!({"output": {"ok": true}, "usage": {"cost": 0.3}}))
        }),
    )
    .await;
    register_tool(&app, "meter", &server.endpoint("meter"), json!({})).await;
    let steps: Vec<Value> = (0..5)
        .map(|i| {
            let deps: Vec<String> = if i == 0 {
                vec![]
            } else {
                vec![format!("s{}", i - 1)]
            };
            json!({"id": format!("s{i}"), "tool": "meter", "dependencies": deps})
        })
        .collect();
    let w = app.worker(|_| {});
    let id = app
        .submit(
            json!({"description": "metered", "limits": {"max_cost": 1.0},
                       "plan": {"steps": steps}}),
        )
        .await;
    let t = app.wait_done(id, LIMIT).await;
    w.stop().await;
    assert_eq!(t["status"], "failed", "{t}");
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(r["error"]["code"], "cost_limit_exceeded", "{r}");
    // 0.3 a call: warned at 0.9 (the third call), stopped at 1.2 (the fourth) in the
    // completion that recorded it, so the fifth step is never promoted nor called
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM attempts WHERE status = 'succeeded'"
        )
        .await,
        4
    );
    assert_eq!(server.calls().len(), 4, "a call after the stop");
    let (_, status) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert!(
        (status["cost"].as_f64().unwrap() - 1.2).abs() < 1e-9,
        "{status}"
    );
    // warned once, at 0.9, before the stop
    let kinds: Vec<(String, Value)> = sqlx::query_as(
        "SELECT kind, payload FROM events WHERE task_id = $1
           AND kind IN ('cost_warning', 'task_failed') ORDER BY seq",
    )
    .bind(id)
    .fetch_all(app.store().pool())
    .await
    .unwrap();
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    assert_eq!(
        (kinds[0].0.as_str(), kinds[1].0.as_str()),
        ("cost_warning", "task_failed"),
        "{kinds:?}"
    );
    let warned_at = kinds[0].1["cost"].as_f64().unwrap();
    assert!((warned_at - 0.9).abs() < 1e-9, "{kinds:?}");
    assert_eq!(
        count(&app, "SELECT count(*) FROM steps WHERE status = 'skipped'").await,
        1
    );
}

/// A template's `max_cost` is the `limits.max_cost` of the tasks made from it, unless the
/// submit gives its own.
#[tokio::test]
async fn a_templates_max_cost_limits_its_tasks() {
    let app = spawn_app().await;
    let (s, v) = app
        .post(
            "/api/v1/templates",
            &json!({"id": "budgeted", "max_cost": 0.5,
                    "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["max_cost"], 0.5);
    let (s, v) = app
        .post(
            "/api/v1/templates",
            &json!({"id": "bad", "max_cost": -1, "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let from_template = app.submit(json!({"template": "budgeted"})).await;
    let own = app
        .submit(json!({"template": "budgeted", "limits": {"max_cost": 2}}))
        .await;
    let limit = |id| {
        let app = &app;
        async move { app.get(&format!("/api/v1/tasks/{id}")).await.1["limits"]["max_cost"].clone() }
    };
    assert_eq!(limit(from_template).await, 0.5);
    assert_eq!(limit(own).await, 2.0);
}
