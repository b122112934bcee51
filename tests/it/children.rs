//! Child tasks (the fan-out issue): the built-in `task` starts a task with its parent recorded
//! and waits for it without a slot; the child's outputs, or its failure, are the step's
//! outcome. A three-level tree (1 + 10 + 100 tasks) ends; cancelling its root cancels all 111.

use trellis::testkit as common;

use std::time::Duration;

use common::{spawn_app, wait_for};
use serde_json::{Value, json};
use uuid::Uuid;

const LIMIT: Duration = Duration::from_secs(120);

/// `n` steps calling the template `child` as a child task each.
fn calls(n: usize, child: &str) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"id": format!("c{i}"), "tool": "task", "parameters": {"template": child}}))
            .collect(),
    )
}

async fn count(app: &common::TestApp, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(app.store().pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_three_level_tree_ends_with_each_childs_outputs_in_its_parents_step() {
    let app = spawn_app().await;
    let w = app.worker(|c| c.concurrency = 16);
    app.template(
        "leaf",
        json!([{"id": "e", "tool": "echo", "parameters": {"leaf": true}}]),
    )
    .await;
    app.template("mid", calls(10, "leaf")).await;
    let root = app
        .submit(json!({"description": "root", "plan": {"steps": calls(10, "mid")}}))
        .await;
    let done = app.wait_done(root, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(count(&app, "SELECT count(*) FROM tasks").await, 111);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM tasks WHERE status = 'succeeded'"
        )
        .await,
        111
    );
    // the tree: the root lists its 10 children, each names its parent
    let children = done["children"].as_array().unwrap();
    assert_eq!(children.len(), 10, "{done}");
    let first: Uuid = children[0]["task_id"].as_str().unwrap().parse().unwrap();
    let (_, mid) = app.get(&format!("/api/v1/tasks/{first}")).await;
    assert_eq!(mid["parent_task_id"], json!(root.to_string()));
    assert_eq!(mid["children"].as_array().unwrap().len(), 10);
    // a step's output is its child's outputs
    let (_, r) = app.get(&format!("/api/v1/tasks/{first}/result")).await;
    assert_eq!(
        r["outputs"]["c0"]["outputs"]["e"],
        json!({"leaf": true}),
        "{r}"
    );
    let (_, r) = app.get(&format!("/api/v1/tasks/{root}/result")).await;
    assert_eq!(
        r["outputs"]["c3"]["outputs"]["c9"]["outputs"]["e"],
        json!({"leaf": true}),
        "{r}"
    );
    // usage: the root's own 10 calls of `task`; with its tree, 10 + 100 + 100 (the echoes)
    assert_eq!(r["usage"]["tool_calls"], 10, "{r}");
    assert_eq!(r["usage_total"]["tool_calls"], 210, "{r}");
    assert_eq!(
        r["usage_total"]["llm_tokens"], 0,
        "the rules brain spends none"
    );
    // one child per step (no retry started another), each announced and ended on its parent
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM events WHERE kind = 'child_task_started'"
        )
        .await,
        110
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM events WHERE kind = 'child_task_ended'"
        )
        .await,
        110
    );
    w.stop().await;
}

#[tokio::test]
async fn cancelling_the_root_cancels_every_task_of_the_tree() {
    let app = spawn_app().await;
    let w = app.worker(|c| c.concurrency = 16);
    app.template(
        "leaf",
        // waits without a worker: the whole tree is under way at once
        json!([{"id": "s", "tool": "sleep_until", "parameters": {"secs": 600}}]),
    )
    .await;
    app.template("mid", calls(10, "leaf")).await;
    let root = app
        .submit(json!({"description": "root", "plan": {"steps": calls(10, "mid")}}))
        .await;
    wait_for("the whole tree to start", LIMIT, || async {
        (count(&app, "SELECT count(*) FROM tasks").await == 111).then_some(())
    })
    .await;
    let (s, v) = app
        .post(&format!("/api/v1/tasks/{root}/cancel"), &json!({}))
        .await;
    assert!(s.is_success(), "{v}");
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM tasks WHERE status = 'cancelled'"
        )
        .await,
        111,
        "the root and its 110 descendants"
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM claim_queue").await,
        0,
        "nothing of the tree is claimable"
    );
    w.stop().await;
}

#[tokio::test]
async fn a_failed_child_fails_its_parents_step_and_wait_false_does_not_wait() {
    let app = spawn_app().await;
    let w = app.worker(|_| {});
    // plain retries (no step reflection): the child inherits them and fails for good (with
    // reflection it would stop in needs_intervention, and its parent would wait for a person)
    let mut t = common::new_task(json!([
        {"id": "k", "tool": "task", "parameters": {"plan": {"steps": [
            {"id": "f", "tool": "fail", "parameters": {"message": "no such customer", "retryable": false}}
        ]}}}
    ]));
    t.limits.step_reflection = false;
    let broken = app.store().submit_task(&t).await.unwrap().task_id;
    let done = app.wait_done(broken, LIMIT).await;
    assert_ne!(done["status"], "succeeded", "{done}");
    let (_, events) = app.get(&format!("/api/v1/tasks/{broken}/events")).await;
    let events = events
        .as_array()
        .or_else(|| events["events"].as_array())
        .unwrap()
        .clone();
    let ended = events
        .iter()
        .find(|e| e["kind"] == "child_task_ended")
        .expect("the child's end");
    assert_ne!(ended["payload"]["status"], "succeeded");
    let failed = events
        .iter()
        .find(|e| {
            e["kind"] == "step_failed" && e["payload"]["error"]["category"] == "child_task_failed"
        })
        .expect("the step failed with its child");
    assert!(
        failed["payload"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no such customer"),
        "{failed}"
    );

    let quick = app
        .submit(json!({"description": "fire and forget", "plan": {"steps": [
            {"id": "k", "tool": "task", "parameters": {"wait": false, "input": {"x": 1},
             "plan": {"steps": [{"id": "e", "tool": "echo", "parameters": {"x": "${context.x}"}}]}}}
        ]}}))
        .await;
    assert_eq!(app.wait_done(quick, LIMIT).await["status"], "succeeded");
    let (_, r) = app.get(&format!("/api/v1/tasks/{quick}/result")).await;
    let child: Uuid = r["outputs"]["k"]["task_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let c = app.wait_done(child, LIMIT).await;
    assert_eq!(c["status"], "succeeded");
    assert_eq!(c["parent_task_id"], json!(quick.to_string()));
    let (_, r) = app.get(&format!("/api/v1/tasks/{child}/result")).await;
    assert_eq!(
        r["outputs"]["e"],
        json!({"x": 1}),
        "the input is the child's context"
    );
    w.stop().await;
}

/// A child ends with its parent: a parent that fails while its child runs (here the child
/// waits for a person) leaves no orphan; the workers' sweep cancels the child.
#[tokio::test]
async fn a_parent_that_fails_cancels_its_running_child() {
    let app = spawn_app().await;
    let w = app.worker(|_| {});
    let mut t = common::new_task(json!([
        {"id": "k", "tool": "task", "parameters": {"plan": {"steps": [
            {"id": "ask", "tool": "approval", "parameters": {"prompt": "never answered"}}
        ]}}},
        {"id": "go", "tool": "wait_event", "parameters": {"key": "fail-the-parent"}},
        {"id": "f", "tool": "fail", "dependencies": ["go"],
         "parameters": {"message": "the parent fails", "retryable": false}}
    ]));
    t.limits.step_reflection = false;
    let parent = app.store().submit_task(&t).await.unwrap().task_id;
    let child: Uuid = wait_for("the child waiting for its approval", LIMIT, || async {
        let (_, v) = app.get(&format!("/api/v1/tasks/{parent}")).await;
        let c: Uuid = v["children"].as_array()?.first()?["task_id"]
            .as_str()?
            .parse()
            .ok()?;
        let (_, waits) = app.get("/api/v1/waits?status=open&kind=approval").await;
        (waits
            .as_array()?
            .iter()
            .any(|x| x["task_id"] == json!(c.to_string())))
        .then_some(c)
    })
    .await;
    let (s, v) = app
        .post(
            "/api/v1/events",
            &json!({"key": "fail-the-parent", "payload": {}}),
        )
        .await;
    assert!(s.is_success(), "{v}");
    let done = app.wait_done(parent, LIMIT).await;
    assert_eq!(done["status"], "failed", "{done}");
    let c = app.wait_done(child, LIMIT).await;
    assert_eq!(
        c["status"], "cancelled",
        "the child ended with its parent: {c}"
    );
    let (_, waits) = app.get("/api/v1/waits?status=open").await;
    assert_eq!(waits, json!([]), "no wait is left open");
    w.stop().await;
}

/// A child's plan is held to `[limits] max_steps_per_plan` like a submitted one: a longer one
/// fails the step with the limit named, and starts no child.
#[tokio::test]
async fn a_childs_plan_longer_than_the_limit_fails_its_step() {
    let app = spawn_app().await;
    let w = app.worker(|c| c.plan_bounds.max_steps = 2);
    let mut t = common::new_task(json!([
        {"id": "k", "tool": "task", "parameters": {"plan": {"steps": [
            {"id": "a", "tool": "echo"}, {"id": "b", "tool": "echo"}, {"id": "c", "tool": "echo"}
        ]}}}
    ]));
    t.limits.step_reflection = false;
    let id = app.store().submit_task(&t).await.unwrap().task_id;
    let done = app.wait_done(id, LIMIT).await;
    assert_ne!(done["status"], "succeeded", "{done}");
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    let message = attempts[0]["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("max_steps_per_plan"), "{attempts}");
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM tasks WHERE parent_task_id IS NOT NULL"
        )
        .await,
        0,
        "no child started"
    );
    w.stop().await;
}
