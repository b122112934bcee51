//! Exactly once, and bounded (the guarantees issue): one idempotency key per call through
//! every retry, so a tool that keeps its effects by key makes each one once however many
//! answers the network loses; trees of child tasks that stop at their limits and die with
//! their cancel; maps with a ceiling; a parent that does not wait on a stopped child forever.

use trellis::testkit as common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use common::{TestApp, register_tool, spawn_app, spawn_app_with, test_settings, wait_for};
use reqwest::StatusCode;
use serde_json::{Value, json};
use trellis::domain::call_key::{Call, CallKeys};
use trellis::testkit::idempotent::{Fresh, IdempotentTool};
use uuid::Uuid;

const LIMIT: Duration = Duration::from_secs(90);

async fn attempts(app: &TestApp, id: Uuid) -> Vec<Value> {
    let (_, v) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    v.as_array().expect("attempts").clone()
}

async fn count(app: &TestApp, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(app.store().pool())
        .await
        .unwrap()
}

/// An app whose `[limits]` are `limits`, with the template `id` that starts itself `calls`
/// times, a worker, and the root task submitted from it.
async fn self_starting(
    limits: impl FnOnce(&mut trellis::config::LimitSettings),
    id: &str,
    calls: usize,
) -> (TestApp, common::TestWorker, Uuid) {
    let mut s = test_settings();
    limits(&mut s.limits);
    let app = spawn_app_with(s).await;
    let steps: Vec<Value> = (0..calls)
        .map(|i| json!({"id": format!("c{i}"), "tool": "task", "parameters": {"template": id}}))
        .collect();
    app.template(id, json!(steps)).await;
    let w = app.worker(|c| c.concurrency = 16);
    let root = app.submit(json!({"description": id, "template": id})).await;
    (app, w, root)
}

/// Ten tasks at once call a payment tool that makes its effect, then loses the answer of the
/// first request of every key (a real connection reset). Trellis retries each call with the
/// same key, so the tool replays the stored answer: every task succeeds with one effect. Two
/// of the tasks first send parameters the tool refuses with a hint: their repaired call is a
/// new call, with a new key (and one effect of its own).
#[tokio::test]
async fn a_lost_answer_is_retried_under_the_same_key_and_the_effect_happens_once() {
    let app = spawn_app().await;
    let tool = IdempotentTool::start(Arc::new(|p: &Value| {
        if p["amount"].is_number() {
            Fresh::MakeAndReset
        } else {
            Fresh::Refuse {
                hints: json!({"amount": 7}),
            }
        }
    }))
    .await;
    register_tool(&app, "pay", &tool.url(), json!({"timeout_ms": 5000})).await;
    let w = app.worker(|c| c.concurrency = 16);
    let mut ids = Vec::new();
    for i in 0..10 {
        let amount = if i < 8 { json!(i + 1) } else { json!("seven") };
        let (s, v) = app
            .post(
                "/api/v1/tasks",
                &json!({"description": format!("pay {i}"), "plan": {"steps": [
                    {"id": "charge", "tool": "pay", "parameters": {"amount": amount, "to": format!("acct_{i}")}}
                ]}}),
            )
            .await;
        assert_eq!(s, StatusCode::ACCEPTED, "{v}");
        ids.push(v["task_id"].as_str().unwrap().parse::<Uuid>().unwrap());
    }
    for id in &ids {
        let t = app.wait_done(*id, LIMIT).await;
        assert_eq!(t["status"], "succeeded", "{t}");
    }
    w.stop().await;

    let requests = tool.requests();
    let effects = tool.effects();
    assert_eq!(
        tool.resets(),
        10,
        "every first request of a key lost its answer"
    );
    for (i, id) in ids.iter().enumerate() {
        let mine: Vec<_> = requests
            .iter()
            .filter(|r| r.task_id == id.to_string())
            .collect();
        // exactly one effect per task, whatever was retried
        let keys: HashSet<&str> = mine.iter().filter_map(|r| r.key.as_deref()).collect();
        let made: usize = keys
            .iter()
            .map(|k| effects.get(*k).copied().unwrap_or(0))
            .sum();
        assert_eq!(made, 1, "task {i}: {made} effects from {mine:?}");
        // the call that made it: its answer lost, then the same key again
        let effecting: Vec<_> = mine
            .iter()
            .filter(|r| r.parameters["amount"].is_number())
            .collect();
        let key = effecting[0].key.clone().expect("a key");
        assert!(effecting.len() >= 2, "task {i}: {effecting:?}");
        assert!(
            effecting
                .iter()
                .all(|r| r.key.as_deref() == Some(key.as_str())),
            "task {i}: one call, one key: {effecting:?}"
        );
        let tries: HashSet<i64> = effecting.iter().map(|r| r.attempt).collect();
        assert_eq!(
            tries.len(),
            effecting.len(),
            "each retry is its own attempt"
        );
        // Trellis's attempts carry the keys the tool saw
        let recorded = attempts(&app, *id).await;
        let recorded_keys: Vec<&str> = recorded
            .iter()
            .map(|a| a["idempotency_key"].as_str().expect("a recorded key"))
            .collect();
        if i < 8 {
            assert_eq!(keys.len(), 1, "task {i}: {keys:?}");
            assert!(recorded_keys.iter().all(|k| *k == key), "{recorded:?}");
        } else {
            // refused, then repaired with the tool's hint: a new call, a new key
            assert_eq!(keys.len(), 2, "task {i}: {keys:?}");
            let refused = mine
                .iter()
                .find(|r| r.parameters["amount"] == "seven")
                .and_then(|r| r.key.clone())
                .unwrap();
            assert_ne!(refused, key);
            assert_eq!(effecting[0].parameters["amount"], 7);
            assert_eq!(recorded_keys.first(), Some(&refused.as_str()));
            assert_eq!(recorded_keys.last(), Some(&key.as_str()));
        }
    }
}

/// A template that starts itself ends at `[limits] max_child_depth`: the deepest task's call is
/// refused and the stop climbs the chain, every task with the limit as its stop reason.
#[tokio::test]
async fn a_self_recursive_template_stops_at_the_depth_limit() {
    let (app, w, root) = self_starting(|l| l.max_child_depth = 3, "again", 1).await;
    let t = app.wait_done(root, LIMIT).await;
    w.stop().await;
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["stop_reason"], "child_depth_exceeded", "{t}");
    assert_eq!(t["error"]["code"], "child_depth_exceeded", "{t}");
    // the root and its children at depths 1, 2 and 3; none deeper
    assert_eq!(count(&app, "SELECT count(*) FROM tasks").await, 4);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM tasks WHERE status = 'failed' AND stop_reason = 'child_depth_exceeded'"
        )
        .await,
        4,
        "the stop reached every task of the chain"
    );
    // no tier was spent on a limit: one attempt per task
    assert_eq!(count(&app, "SELECT count(*) FROM attempts").await, 4);
    assert_eq!(count(&app, "SELECT count(*) FROM decisions").await, 0);
}

/// A template that starts two of itself stops at `[limits] max_descendants`: never more tasks
/// under the root than the limit, and the root stops with it as its reason.
#[tokio::test]
async fn a_fanning_template_stops_at_the_descendant_limit() {
    let (app, w, root) = self_starting(|l| l.max_descendants = 20, "two", 2).await;
    let t = app.wait_done(root, LIMIT).await;
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["stop_reason"], "descendants_exceeded", "{t}");
    // every task of the tree ends (the stop climbs, the rest end with their parents)
    wait_for("every task to end", LIMIT, || async {
        (count(&app, "SELECT count(*) FROM tasks WHERE finished_at IS NULL").await == 0)
            .then_some(())
    })
    .await;
    w.stop().await;
    let descendants = count(&app, "SELECT count(*) FROM tasks").await - 1;
    assert!(descendants <= 20, "{descendants} descendants, limit 20");
    assert_eq!(
        count(&app, "SELECT descendants::int8 FROM task_trees").await,
        descendants,
        "the tree's counter is its descendants"
    );
}

/// Cancelling the root of a tree that keeps growing at its leaf: the answer means it. No task
/// of the tree is created after it, and every task of the tree has ended 2 s later.
#[tokio::test]
async fn a_cancel_stops_a_growing_tree_at_once() {
    let (app, w, root) = self_starting(|l| l.max_child_depth = 100, "grow", 1).await;
    wait_for("the chain to grow", LIMIT, || async {
        (count(&app, "SELECT count(*) FROM tasks").await >= 20).then_some(())
    })
    .await;
    let (s, v) = app
        .post(&format!("/api/v1/tasks/{root}/cancel"), &json!({}))
        .await;
    assert!(s.is_success(), "{v}");
    let at_answer = count(&app, "SELECT count(*) FROM tasks").await;
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM tasks WHERE status <> 'cancelled'"
        )
        .await,
        0,
        "the whole tree is cancelled when the cancel answers"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        count(&app, "SELECT count(*) FROM tasks").await,
        at_answer,
        "a task was created after the cancel's answer"
    );
    assert_eq!(
        count(&app, "SELECT count(*) FROM tasks WHERE finished_at IS NULL").await,
        0
    );
    w.stop().await;
}

/// A parent whose step starts a child of `plan`, and that child once it stops for a person.
async fn stopped_child(app: &TestApp, plan: &Value) -> (Uuid, Uuid) {
    let parent = app
        .submit(json!({"description": "parent", "plan": {"steps": [
            {"id": "k", "tool": "task", "parameters": plan}]}}))
        .await;
    let child = wait_for("the child to stop for a person", LIMIT, || async {
        sqlx::query_scalar(
            "SELECT id FROM tasks WHERE parent_task_id = $1 AND status = 'needs_intervention'",
        )
        .bind(parent)
        .fetch_optional(app.store().pool())
        .await
        .unwrap()
    })
    .await;
    (parent, child)
}

/// A child stopped in `needs_intervention` fails its parent's step after
/// `[limits] child_intervention_wait_secs` (plus one sweep of the waits), naming the child, and
/// is cancelled; a person who resumes the child before then is still served.
#[tokio::test]
async fn a_parent_does_not_wait_on_a_stopped_child_for_ever() {
    let app = spawn_app().await;
    let forbidden = json!({"plan": {"steps": [{"id": "f", "tool": "fail", "parameters":
        {"message": "forbidden by policy", "category": "external_error", "retryable": false}}]}});
    let wait_secs = 1.0;
    let w = app.worker(|c| c.child_intervention_wait_secs = wait_secs);
    let (parent, child) = stopped_child(&app, &forbidden).await;
    let failed = wait_for("the parent's step to fail", LIMIT, || async {
        let (_, events) = app.get(&format!("/api/v1/tasks/{parent}/events")).await;
        events
            .as_array()
            .unwrap()
            .iter()
            .find(|e| {
                e["kind"] == "step_failed"
                    && e["payload"]["error"]["category"] == "child_task_failed"
            })
            .cloned()
    })
    .await;
    let message = failed["payload"]["error"]["message"].as_str().unwrap();
    assert!(message.contains(&child.to_string()), "{message}");
    assert!(message.contains("needs_intervention"), "{message}");
    // not before the wait, and within it plus a sweep (and this test's polling)
    let (stopped, gave_up): (f64, f64) = sqlx::query_as(
        "SELECT extract(epoch FROM (SELECT max(at) FROM events WHERE task_id = $1
                                    AND kind = 'intervention_required'))::float8,
                extract(epoch FROM (SELECT min(at) FROM events WHERE task_id = $2
                                    AND kind = 'step_failed'))::float8",
    )
    .bind(child)
    .bind(parent)
    .fetch_one(app.store().pool())
    .await
    .unwrap();
    let waited = gave_up - stopped;
    assert!(
        waited >= wait_secs - 0.05 && waited <= wait_secs + 2.5,
        "the step failed {waited:.2} s after its child stopped"
    );
    let (_, c) = app.get(&format!("/api/v1/tasks/{child}")).await;
    assert_eq!(
        c["status"], "cancelled",
        "a child given up on is cancelled: {c}"
    );
    w.stop().await;

    // with a long wait, a person's resume of the child serves the parent
    let w = app.worker(|c| c.child_intervention_wait_secs = 600.0);
    let (parent, child) = stopped_child(&app, &forbidden).await;
    let (s, v) = app
        .post(
            &format!("/api/v1/tasks/{child}/resume"),
            &json!({"step_overrides": {"f": {"tool": "echo"}}}),
        )
        .await;
    assert!(s.is_success(), "{v}");
    let t = app.wait_done(parent, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    w.stop().await;
}

/// A map's `max_items` above `[limits] max_map_items` is a 422 at submit, and so is a template
/// that asks for it.
#[tokio::test]
async fn a_map_asking_past_the_ceiling_is_refused_at_submit() {
    let mut s = test_settings();
    s.limits.max_map_items = 100;
    let app = spawn_app_with(s).await;
    let map = |n: u32| {
        json!({"steps": [{"id": "m", "tool": "echo", "parameters": {"x": "${item}"},
            "map": {"over": "${context.xs}", "max_items": n}}]})
    };
    let (s, v) = app
        .post(
            "/api/v1/tasks",
            &json!({"description": "huge map", "plan": map(200_000)}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_map_items"), "{message}");
    let (s, v) = app
        .post(
            "/api/v1/templates",
            &json!({"id": "huge", "description": "huge", "plan": map(101)}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(count(&app, "SELECT count(*) FROM tasks").await, 0);
    let (s, v) = app
        .post(
            "/api/v1/tasks",
            &json!({"description": "a map at the ceiling", "plan": map(100), "context": {"xs": [1, 2]}}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
}

/// A rescue after a lost worker repeats the same call: the child task an attempt started
/// before its worker was lost is the one the next attempt waits on, not a second child.
#[tokio::test]
async fn a_lost_attempt_s_child_is_taken_over_not_started_twice() {
    let app = spawn_app().await;
    let steps = json!([{"id": "k", "tool": "task", "parameters": {"plan": {"steps": [
        {"id": "e", "tool": "echo", "parameters": {"v": 1}}]}}}]);
    let id = app
        .store()
        .submit_task(&common::new_task(steps))
        .await
        .unwrap()
        .task_id;
    let claim = trellis::store::step_queue::Claim {
        worker_id: Uuid::now_v7(),
        limit: 1,
        lease_secs: 60.0,
        max_running_tasks: 0,
    };
    let step = app.store().claim_steps(&claim).await.unwrap().remove(0);
    // the first attempt starts its child, and its worker is lost before it parks
    let fence = step.fence();
    let spec = trellis::domain::child::ChildSpec::from_params(&step.parameters).unwrap();
    let cfg = trellis::worker::WorkerConfig::from_settings(&app.settings);
    // the call's key, as the worker derives it (the deployment's secret)
    let secret: Vec<u8> = sqlx::query_scalar("SELECT call_key_secret FROM deployment")
        .fetch_one(app.store().pool())
        .await
        .unwrap();
    let call_key = CallKeys::new(secret).key(&Call {
        task_id: id,
        step_row: step.id,
        name: &step.step_key,
        tool: "task",
        parameters: &step.parameters,
        feedback: None,
    });
    let parent = trellis::store::children::ChildOf {
        fence: &fence,
        step_key: &step.step_key,
        attempt: step.attempt,
        call_key: &call_key,
        bounds: cfg.plan_bounds,
        tree: cfg.tree,
    };
    let first = app
        .store()
        .start_child(parent, &spec)
        .await
        .unwrap()
        .unwrap();
    app.store().expire_lease(step.id).await.unwrap();
    app.store()
        .rescue_expired(10, common::TEST_POLICY)
        .await
        .unwrap();
    // a worker runs the next attempt: it takes the first child over and waits on it
    let w = app.worker(|_| {});
    let t = app.wait_done(id, LIMIT).await;
    w.stop().await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM tasks WHERE parent_task_id IS NOT NULL"
        )
        .await,
        1,
        "one child for one call"
    );
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(
        r["outputs"]["k"]["task_id"],
        json!(first.to_string()),
        "{r}"
    );
}

/// The built-in `http_request` sends the call's key too (the same through a retry after a lost
/// answer), unless the step's own headers name one.
#[tokio::test]
async fn http_request_sends_the_calls_key_unless_the_step_names_one() {
    let app = spawn_app().await;
    let tool = IdempotentTool::start(Arc::new(|_: &Value| Fresh::MakeAndReset)).await;
    let w = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "raw calls", "plan": {"steps": [
            {"id": "ours", "tool": "http_request",
             "parameters": {"url": tool.url(), "method": "POST", "body": {"charge": 3}}},
            {"id": "theirs", "tool": "http_request",
             "parameters": {"url": tool.url(), "method": "POST", "body": {"charge": 4},
                            "headers": {"Idempotency-Key": "order-4"}}}
        ]}}))
        .await;
    let t = app.wait_done(id, LIMIT).await;
    w.stop().await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let keys: HashSet<String> = tool.requests().into_iter().filter_map(|r| r.key).collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert!(keys.contains("order-4"), "{keys:?}");
    let ours = keys.iter().find(|k| *k != "order-4").unwrap();
    assert!(ours.starts_with("tr1-"), "{ours}");
    // each call's effect once, though each first answer was lost
    assert_eq!(tool.resets(), 2);
    assert!(
        tool.effects().values().all(|n| *n == 1),
        "{:?}",
        tool.effects()
    );
    assert!(tool.requests().len() >= 4);
}

/// Children are their tenant's tasks like any other: a tenant's `max_running_steps` holds
/// across a parent and its children, checked from the attempts' times (the database's clock).
#[tokio::test]
async fn children_count_toward_their_tenants_caps() {
    let app = spawn_app().await;
    let r = app
        .http
        .put(app.url("/api/v1/tenants/b"))
        .json(&json!({"max_running_steps": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let b = common::client_with_key(Some(&app.key("operator", "b").await));
    let calls: Vec<Value> = (0..6)
        .map(|i| {
            json!({"id": format!("c{i}"), "tool": "task", "parameters": {"plan": {"steps": [
                {"id": "s", "tool": "sleep", "parameters": {"ms": 50}},
                {"id": "t", "tool": "sleep", "parameters": {"ms": 50}}]}}})
        })
        .collect();
    let r = b
        .post(app.url("/api/v1/tasks"))
        .json(&json!({"description": "a tree of b's", "plan": {"steps": calls}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    let root: Uuid = r.json::<Value>().await.unwrap()["task_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let workers: Vec<_> = (0..2).map(|_| app.worker(|c| c.concurrency = 8)).collect();
    let t = app.wait_done(root, LIMIT).await;
    for w in workers {
        w.stop().await;
    }
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(
        count(&app, "SELECT count(*) FROM tasks WHERE tenant = 'b'").await,
        7,
        "the children are b's"
    );
    let peak = app.peak_attempts(Some("b")).await;
    assert!(peak <= 2, "{peak} steps of tenant b ran at once");
}

/// A call repaired by tier 2 (a new step row, the same tool and parameters: the rules brain's
/// repair after a transient failure outlived the step's retries) is a new call with a new key;
/// every attempt before the repair carried the one key of the call it repeated.
#[tokio::test]
async fn a_repaired_call_carries_a_new_key() {
    let app = spawn_app().await;
    let down = std::sync::atomic::AtomicUsize::new(3);
    let tool = IdempotentTool::start(Arc::new(move |_: &Value| {
        let left = down.load(std::sync::atomic::Ordering::SeqCst);
        if left > 0 {
            down.store(left - 1, std::sync::atomic::Ordering::SeqCst);
            Fresh::Unavailable
        } else {
            Fresh::Answer
        }
    }))
    .await;
    register_tool(&app, "ship", &tool.url(), json!({})).await;
    let w = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "ship it", "plan": {"steps": [
            {"id": "ship", "tool": "ship", "parameters": {"parcel": 42}}]}}))
        .await;
    let t = app.wait_done(id, LIMIT).await;
    w.stop().await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let recorded = attempts(&app, id).await;
    let keys: Vec<(&str, i64, &str)> = recorded
        .iter()
        .map(|a| {
            (
                a["idempotency_key"].as_str().unwrap(),
                a["plan_version"].as_i64().unwrap(),
                a["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(keys.len(), 4, "{recorded:?}");
    let (before, after) = keys.split_at(3);
    assert!(
        before
            .iter()
            .all(|(k, v, s)| *k == before[0].0 && *v == 1 && *s == "failed"),
        "{keys:?}"
    );
    assert_eq!(after[0].1, 2, "the repair is plan version 2: {keys:?}");
    assert_ne!(after[0].0, before[0].0, "a repaired call is a new call");
    assert_eq!(tool.effects().values().sum::<usize>(), 1);
}
