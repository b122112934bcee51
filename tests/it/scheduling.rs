//! Scheduling controls (seeds issue): task deadlines, the fleet-wide task cap, per-tool
//! concurrency and rate limits — against real PostgreSQL and real HTTP tool servers.

use trellis::testkit as common;

use std::sync::Arc;
use std::time::Duration;

use common::{ToolServer, spawn_app};
use reqwest::StatusCode;
use serde_json::json;
use trellis::store::step_queue::Claim;
use trellis::testkit::{fresh_db, wait_for};
use uuid::Uuid;

/// A deadline that passes while a step runs: nothing more is claimed for the task, the sweep
/// fails it with `deadline_exceeded`, and the running attempt's late result, failure,
/// heartbeat all change nothing.
#[tokio::test]
async fn a_passed_deadline_fences_running_work_and_claims_nothing_more() {
    let db = fresh_db().await;
    let store = &db.store;
    let mut task = common::new_task(json!([
        {"id": "a", "tool": "echo"},
        {"id": "b", "tool": "echo"},
        {"id": "c", "tool": "echo", "dependencies": ["a"]}
    ]));
    task.limits.task_timeout_secs = 1;
    let t = store.submit_task(&task).await.unwrap();
    let worker = Uuid::now_v7();
    let claim = |limit| Claim {
        worker_id: worker,
        limit,
        lease_secs: 30.0,
        max_running_tasks: 0,
    };
    let held = store.claim_steps(&claim(1)).await.unwrap();
    assert_eq!(held.len(), 1);
    let old = held[0].clone();
    assert_eq!(store.expire_deadlines(10).await.unwrap(), 0, "not due yet");

    wait_for("the deadline to pass", Duration::from_secs(10), || async {
        sqlx::query_scalar::<_, bool>("SELECT deadline_at < now() FROM tasks WHERE id = $1")
            .bind(t.task_id)
            .fetch_one(store.pool())
            .await
            .unwrap()
            .then_some(())
    })
    .await;
    assert!(
        store.claim_steps(&claim(10)).await.unwrap().is_empty(),
        "a task past its deadline gets nothing more, even before the sweep"
    );
    assert_eq!(store.expire_deadlines(10).await.unwrap(), 1);
    assert_eq!(store.expire_deadlines(10).await.unwrap(), 0, "once");

    let row = store.get_task(t.task_id).await.unwrap();
    assert_eq!(row.status.as_str(), "failed");
    let error = row.error.clone().unwrap();
    assert_eq!(error["code"], "deadline_exceeded");
    assert_eq!(error["fenced_steps"], json!([old.step_key]));

    // the holder's late result, failure, release and heartbeat change nothing
    common::assert_zombie_changes_nothing(store, &old, worker).await;

    let steps = store.list_steps(t.task_id).await.unwrap();
    let status = |k: &str| {
        steps
            .iter()
            .find(|s| s.step_key == k)
            .map(|s| s.status.to_string())
            .unwrap()
    };
    assert_eq!(status(&old.step_key), "failed");
    for s in steps.iter().filter(|s| s.step_key != old.step_key) {
        assert_eq!(s.status.to_string(), "skipped", "{}", s.step_key);
    }
    let attempts = store
        .list_attempts(t.task_id, trellis::store::Page::ALL)
        .await
        .unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(
        attempts[0].error_category.as_deref(),
        Some("deadline_exceeded")
    );
    assert_eq!(attempts[0].worker_id, Some(worker));
}

/// Through the API with a real worker: a 2 s deadline on a 20 s HTTP step fails the task with
/// `deadline_exceeded` within deadline + 3 s (database clock), the tool called once.
#[tokio::test]
async fn a_two_second_deadline_on_a_twenty_second_step_fails_the_task_in_time() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::from_secs(20),
        Arc::new(|_| (200, json!({"output": "too late"}))),
    )
    .await;
    common::register_tool(&app, "slow", &server.endpoint("slow"), json!({})).await;
    let worker = app.worker(|_| {});
    let id = app
        .submit(json!({
            "description": "deadline",
            "context": {"customer": {"tier": "gold"}},
            "limits": {"task_timeout_secs": 2},
            "plan": {"steps": [
                {"id": "s1", "tool": "slow"},
                {"id": "s2", "tool": "echo", "dependencies": ["s1"]}
            ]}
        }))
        .await;
    let (_, v) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(v["context"], json!({"customer": {"tier": "gold"}}));
    assert!(v["deadline_at"].is_string(), "{v}");

    let done = app.wait_done(id, Duration::from_secs(15)).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["error"]["code"], "deadline_exceeded", "{done}");
    let (created, finished): (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>) =
        sqlx::query_as("SELECT created_at, finished_at FROM tasks WHERE id = $1")
            .bind(id)
            .fetch_one(app.store().pool())
            .await
            .unwrap();
    let took = (finished - created).num_milliseconds();
    assert!(
        (2000..=5000).contains(&took),
        "failed {took} ms after submission"
    );
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    let attempts = attempts.as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0]["status"], "failed");
    assert_eq!(server.calls().len(), 1);
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(plan["steps"][1]["status"], "skipped", "{plan}");
    worker.stop().await;
}

/// `limits.task_timeout_secs` is checked: a negative or absurd deadline is a 422 and stores
/// nothing; 0 means none.
#[tokio::test]
async fn deadline_limits_are_validated() {
    let app = spawn_app().await;
    for bad in [json!(-1), json!(400_000_000), json!("soon")] {
        let (status, v) = app
            .post(
                "/api/v1/tasks",
                &json!({"description": "x", "limits": {"task_timeout_secs": bad},
                        "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {v}");
        assert!(v.to_string().contains("task_timeout_secs"), "{v}");
    }
    assert_eq!(app.store().row_counts().await.unwrap()["tasks"], 0);
    let id = app
        .submit(
            json!({"description": "x", "limits": {"task_timeout_secs": 0},
                       "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
        )
        .await;
    let (_, v) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert!(v["deadline_at"].is_null(), "{v}");
}

/// A rate-limited tool (`rate_limit_per_sec` 5, burst 2) is paced by the claim: the tool
/// server sees at most burst + rate × window calls in any window, and no attempt waited for a
/// token while it held its step (each attempt lasts about as long as the tool's answer).
#[tokio::test]
async fn a_rate_limited_tool_is_paced_at_claim_time() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::from_millis(20),
        Arc::new(|_| (200, json!({"output": "ok"}))),
    )
    .await;
    common::register_tool(
        &app,
        "paced",
        &server.endpoint("paced"),
        json!({"rate_limit_per_sec": 5, "rate_limit_burst": 2}),
    )
    .await;
    let (_, tool) = app.get("/api/v1/tools/paced").await;
    assert_eq!(tool["rate_limit_per_sec"], 5.0);
    assert_eq!(tool["rate_limit_burst"], 2);
    assert!(tool["max_concurrency"].is_null());
    let worker = app.worker(|_| {});
    let mut ids = Vec::new();
    for _ in 0..10 {
        ids.push(
            app.submit(json!({"description": "paced",
                              "plan": {"steps": [{"id": "s", "tool": "paced"}]}}))
                .await,
        );
    }
    for id in &ids {
        let done = app.wait_done(*id, Duration::from_secs(30)).await;
        assert_eq!(done["status"], "succeeded", "{done}");
    }
    let at = server.arrivals_of("paced");
    assert_eq!(at.len(), 10);
    // the bucket refills 5 tokens a second from 2: ten calls need at least 1.6 s
    let span = at[9] - at[0];
    assert!(span >= Duration::from_millis(1500), "ten calls in {span:?}");
    for (i, first) in at.iter().enumerate() {
        let within = at[i..]
            .iter()
            .filter(|t| **t - *first <= Duration::from_secs(1))
            .count();
        assert!(within <= 2 + 5 + 1, "{within} calls within 1 s of call {i}");
    }
    for id in &ids {
        let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
        let a = &attempts[0];
        let started: chrono::DateTime<chrono::Utc> =
            a["started_at"].as_str().unwrap().parse().unwrap();
        let finished: chrono::DateTime<chrono::Utc> =
            a["finished_at"].as_str().unwrap().parse().unwrap();
        assert!(
            (finished - started).num_milliseconds() < 1000,
            "an attempt held its step {} ms: it waited inside the claim",
            (finished - started).num_milliseconds()
        );
    }
    worker.stop().await;
}

/// Tool limits are checked at registration: 422 naming the field, nothing stored.
#[tokio::test]
async fn tool_limits_are_validated() {
    let app = spawn_app().await;
    for (field, bad) in [
        ("max_concurrency", json!(0)),
        ("max_concurrency", json!(-3)),
        ("rate_limit_per_sec", json!(0)),
        ("rate_limit_per_sec", json!(-1.5)),
        ("rate_limit_burst", json!(0)),
        ("max_concurrency", json!("two")),
    ] {
        let (status, v) = app
            .post(
                "/api/v1/tools",
                &json!({"id": "t", "endpoint": "http://127.0.0.1:9/x", field: bad}),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{field}={bad}: {v}"
        );
        assert!(v.to_string().contains(field), "{v}");
    }
    let (status, _) = app.get("/api/v1/tools/t").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
