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
