//! Events as a typed contract: every event a run of every path stores (those the claim and the
//! submit statement build in SQL included) reads back as its variant of
//! `domain::event::Event`, no field missing and none unknown. (`tests/it/architecture.rs` checks
//! `docs/events.md` against the enum.)

use trellis::testkit as common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::spawn_app;
use serde_json::{Value, json};
use trellis::domain::event::Event;
use trellis::store::step_queue::Claim;
use uuid::Uuid;

const LIMIT: Duration = Duration::from_secs(60);

fn task(steps: Value) -> Value {
    json!({"description": "events", "plan": {"steps": steps}})
}

#[tokio::test]
async fn every_stored_event_reads_back_as_its_variant() {
    let app = spawn_app().await;
    let store = app.store().clone();
    let w = app.worker(|_| {});
    // a success with a promotion, a full recovery that stops for a person, then its resume,
    // a rerun, a cancel, a deadline and plain retries that fail
    let ok = app
        .submit(task(json!([{"id": "a", "tool": "echo"},
                             {"id": "b", "tool": "echo", "dependencies": ["a"]}])))
        .await;
    let stuck = app
        .submit(task(json!([{"id": "s", "tool": "fail",
                             "parameters": {"message": "down", "retryable": true}}])))
        .await;
    let slow = app
        .submit(task(
            json!([{"id": "s", "tool": "sleep", "parameters": {"ms": 30000}}]),
        ))
        .await;
    let late = app
        .submit(json!({"description": "late", "limits": {"task_timeout_secs": 1},
                       "plan": {"steps": [{"id": "s", "tool": "sleep", "parameters": {"ms": 30000}}]}}))
        .await;
    // a wait and its resolution, and a delayed start moved
    let waits = app
        .submit(task(
            json!([{"id": "w", "tool": "sleep_until", "parameters": {"secs": 0.2}}]),
        ))
        .await;
    let moved = app
        .submit(json!({"description": "moved", "delay_secs": 3600,
                       "plan": {"steps": [{"id": "e", "tool": "echo"}]}}))
        .await;
    let (status, v) = app
        .post(
            &format!("/api/v1/tasks/{moved}/reschedule"),
            &json!({"run_at": chrono::Utc::now().to_rfc3339()}),
        )
        .await;
    assert!(status.is_success(), "{v}");
    // a map, expanded
    let mapped = app
        .submit(json!({"description": "map", "context": {"items": [1, 2]},
                       "plan": {"steps": [{"id": "m", "tool": "echo", "parameters": {"v": "${item}"},
                                           "map": {"over": "${context.items}"}}]}}))
        .await;
    // a child task, waited for
    let parent = app
        .submit(json!({"description": "parent", "plan": {"steps": [
            {"id": "k", "tool": "task", "parameters": {"plan": {"steps": [{"id": "e", "tool": "echo"}]}}}
        ]}}))
        .await;
    let mut no_reflection =
        common::new_task(json!([{"id": "s", "tool": "flaky", "parameters": {"fail_times": 9}}]));
    no_reflection.limits.step_reflection = false;
    let plain = store.submit_task(&no_reflection).await.unwrap().task_id;
    for id in [ok, stuck, late, plain, waits, moved, mapped, parent] {
        app.wait_done(id, LIMIT).await;
    }
    let (status, v) = app
        .post(&format!("/api/v1/tasks/{slow}/cancel"), &json!({}))
        .await;
    assert!(status.is_success(), "{v}");
    let (status, v) = app
        .post(&format!("/api/v1/tasks/{stuck}/resume"), &json!({}))
        .await;
    assert!(status.is_success(), "{v}");
    app.wait_done(stuck, LIMIT).await;
    let (status, v) = app
        .post(
            &format!("/api/v1/tasks/{ok}/rerun"),
            &json!({"from_step": "b"}),
        )
        .await;
    assert!(status.is_success(), "{v}");
    app.wait_done(ok, LIMIT).await;
    w.stop().await;

    // a release, a deferral and a rescue, made by hand on claimed steps
    let by_hand = app
        .submit(task(
            json!([{"id": "x", "tool": "echo"}, {"id": "y", "tool": "echo"},
                             {"id": "z", "tool": "echo"}]),
        ))
        .await;
    let ghost = Uuid::now_v7();
    let claim = Claim {
        worker_id: ghost,
        limit: 3,
        lease_secs: 30.0,
        max_running_tasks: 0,
    };
    let claimed = store.claim_steps(&claim).await.unwrap();
    assert_eq!(claimed.len(), 3);
    store
        .release_step(&claimed[0].fence(), ghost)
        .await
        .unwrap();
    let policy = trellis::store::step_queue::FailurePolicy::fixed(0, 3, 30.0);
    let wait = trellis::store::step_queue::ToolWait {
        tool: claimed[1].tool.clone(),
        until: chrono::Utc::now() + chrono::Duration::seconds(1),
        why: trellis::domain::circuit::Why::Held,
    };
    store
        .defer_step(&claimed[1].fence(), ghost, &wait, &policy)
        .await
        .unwrap();
    store.expire_lease(claimed[2].id).await.unwrap();
    assert_eq!(store.rescue_expired(10, policy).await.unwrap(), 1);
    let _ = by_hand;

    let rows: Vec<(String, Value)> =
        sqlx::query_as("SELECT kind, payload FROM events ORDER BY task_id, seq")
            .fetch_all(store.pool())
            .await
            .unwrap();
    let mut seen = BTreeSet::new();
    for (kind, payload) in &rows {
        if let Err(e) = Event::parse(kind, payload) {
            panic!("a stored {kind} does not read as its variant: {e}: {payload}");
        }
        seen.insert(kind.as_str());
    }
    // every kind but those only an LLM brain makes (tools_selected, round_started), a
    // task's max_cost (cost_warning: tests/it/llm_brain.rs and operations.rs read it back) and
    // an agent's model (agent_turn_completed: tests/it/agent.rs reads it back)
    let expected: BTreeSet<&str> = Event::KINDS
        .iter()
        .copied()
        .filter(|k| {
            ![
                "tools_selected",
                "round_started",
                "cost_warning",
                "agent_turn_completed",
            ]
            .contains(k)
        })
        .collect();
    let missing: Vec<&&str> = expected.difference(&seen).collect();
    assert!(missing.is_empty(), "no event of {missing:?} was stored");
}
