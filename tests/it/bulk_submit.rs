//! `POST /api/v1/tasks/batch`: all or nothing, results in request order, idempotency keys per
//! item, a `422` naming the bad index with nothing stored.

use trellis::testkit as common;

use std::time::Duration;

use axum::http::StatusCode;
use common::spawn_app;
use serde_json::{Value, json};

fn task(i: usize) -> Value {
    json!({
        "description": format!("bulk {i}"),
        "plan": {"steps": [
            {"id": "a", "tool": "echo", "parameters": {"i": i}},
            {"id": "b", "tool": "echo", "dependencies": ["a"], "parameters": {"j": "${a.output.i}"}}
        ]}
    })
}

#[tokio::test]
async fn a_batch_is_stored_in_request_order_and_runs() {
    let app = spawn_app().await;
    let tasks: Vec<Value> = (0..50).map(task).collect();
    let (status, body) = app
        .post("/api/v1/tasks/batch", &json!({"tasks": tasks}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let out = body["tasks"].as_array().unwrap();
    assert_eq!(out.len(), 50);
    for (i, t) in out.iter().enumerate() {
        assert_eq!(t["created"], true);
        assert_eq!(t["status"], "running");
        let (_, got) = app
            .get(&format!("/api/v1/tasks/{}", t["task_id"].as_str().unwrap()))
            .await;
        assert_eq!(
            got["description"],
            format!("bulk {i}"),
            "item {i} is in order"
        );
    }
    // each has its first events and a runnable plan
    let first = out[7]["task_id"].as_str().unwrap();
    let (_, events) = app.get(&format!("/api/v1/tasks/{first}/events")).await;
    let kinds: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["task_submitted", "plan_generated"]);
    let seqs: Vec<i64> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2]);
    let w = app.worker(|_| {});
    let done = app
        .wait_done(first.parse().unwrap(), Duration::from_secs(30))
        .await;
    assert_eq!(done["status"], "succeeded");
    let (_, result) = app.get(&format!("/api/v1/tasks/{first}/result")).await;
    assert_eq!(result["outputs"]["b"]["j"], 7, "{result}");
    w.stop().await;
}

#[tokio::test]
async fn idempotency_keys_are_honoured_per_item() {
    let app = spawn_app().await;
    let mut earlier = task(0);
    earlier["idempotency_key"] = json!("k-old");
    let old_id = app.submit(earlier).await;

    let mut a = task(1);
    a["idempotency_key"] = json!("k-old"); // used before this batch
    let mut b = task(2);
    b["idempotency_key"] = json!("k-new");
    let mut c = task(3);
    c["idempotency_key"] = json!("k-new"); // used earlier in the same batch
    let d = task(4);
    let (status, body) = app
        .post("/api/v1/tasks/batch", &json!({"tasks": [a, b, c, d]}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let out = body["tasks"].as_array().unwrap();
    assert_eq!(out[0]["task_id"], old_id.to_string());
    assert_eq!(out[0]["created"], false);
    assert_eq!(out[1]["created"], true);
    assert_eq!(out[2]["task_id"], out[1]["task_id"]);
    assert_eq!(out[2]["created"], false);
    assert_eq!(out[3]["created"], true);
    assert_eq!(app.store().row_counts().await.unwrap()["tasks"], 3);

    // the same batch again creates nothing new but the key-less item
    let (status, again) = app
        .post(
            "/api/v1/tasks/batch",
            &json!({"tasks": [{"description": "x", "idempotency_key": "k-new",
                               "plan": {"steps": [{"id": "a", "tool": "echo"}]}}]}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(again["tasks"][0]["task_id"], out[1]["task_id"]);
    assert_eq!(again["tasks"][0]["created"], false);
}

#[tokio::test]
async fn one_bad_item_names_its_index_and_stores_nothing() {
    let app = spawn_app().await;
    app.submit(task(0)).await;
    let before = app.store().row_counts().await.unwrap();
    let bad_cases: Vec<(usize, Value, &str)> = vec![
        (
            2,
            json!({"description": " ", "plan": {"steps": [{"id": "a", "tool": "echo"}]}}),
            "description",
        ),
        (
            1,
            json!({"description": "d", "plan": {"steps": [{"id": "a", "tool": "nope"}]}}),
            "unknown tool",
        ),
        (3, json!({"description": "d", "bogus": 1}), "bogus"),
        (
            0,
            json!({"description": "d", "plan": {"steps": [{"id": "a", "tool": "echo", "dependencies": ["a"]}]}}),
            "itself",
        ),
    ];
    for (index, bad, says) in bad_cases {
        let mut tasks: Vec<Value> = (0..4).map(task).collect();
        tasks[index] = bad;
        let (status, body) = app
            .post("/api/v1/tasks/batch", &json!({"tasks": tasks}))
            .await;
        assert!(status.is_client_error(), "{index}: {status} {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{index}: {body}");
        assert!(message.contains(&format!("tasks[{index}]")), "{message}");
        assert!(message.contains(says), "{message}");
        assert_eq!(
            app.store().row_counts().await.unwrap(),
            before,
            "case {index}: {message}"
        );
    }
    for tasks in [json!([]), json!((0..1001).map(task).collect::<Vec<_>>())] {
        let (status, body) = app
            .post("/api/v1/tasks/batch", &json!({"tasks": tasks}))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("1000"));
    }
    assert_eq!(app.store().row_counts().await.unwrap(), before);
}
