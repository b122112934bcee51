//! Fair queues (the fairness issue): within a priority the claim serves concurrency keys in
//! turn by weight, not by backlog (stride passes given at submit); a template derives a key
//! from its input or metadata; `/key-limits` sets weights by pattern; aging raises a waiting
//! task one level per interval, bounded.

use trellis::testkit as common;

use std::time::Duration;

use common::spawn_app;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

const LIMIT: Duration = Duration::from_secs(120);

fn one(key: Option<&str>, i: usize) -> Value {
    let mut t = json!({"description": "fair", "plan": {"steps": [
        {"id": "s", "tool": "echo", "parameters": {"i": i}}]}});
    if let Some(k) = key {
        t["concurrency_key"] = json!(k);
    }
    t
}

async fn submit_many(app: &common::TestApp, key: Option<&str>, n: usize) {
    let tasks: Vec<Value> = (0..n).map(|i| one(key, i)).collect();
    let (s, v) = app
        .post("/api/v1/tasks/batch", &json!({"tasks": tasks}))
        .await;
    assert!(s.is_success(), "{v}");
}

/// The keys of the tasks in the order their attempts started.
async fn served(app: &common::TestApp) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT coalesce(t.concurrency_key, '') FROM attempts a JOIN tasks t ON t.id = a.task_id
         ORDER BY a.started_at, a.id",
    )
    .fetch_all(app.store().pool())
    .await
    .unwrap()
}

/// Drain everything with one worker taking one step at a time (the claim's order, unmixed).
async fn drain_serially(app: &common::TestApp, tasks: usize) -> Vec<String> {
    let w = app.worker(|c| {
        c.concurrency = 1;
        c.claim_batch = 1;
    });
    common::wait_for("every task to end", LIMIT, || async {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE finished_at IS NOT NULL")
            .fetch_one(app.store().pool())
            .await
            .unwrap();
        (n as usize == tasks).then_some(())
    })
    .await;
    w.stop().await;
    served(app).await
}

/// Where the last task of `key` was served (1-based).
fn last_of(order: &[String], key: &str) -> usize {
    order
        .iter()
        .rposition(|k| k == key)
        .expect("the key was served")
        + 1
}

#[tokio::test]
async fn a_small_key_is_served_in_turn_with_a_backlogged_one() {
    let app = spawn_app().await;
    submit_many(&app, Some("a"), 300).await;
    submit_many(&app, Some("b"), 20).await;
    let order = drain_serially(&app, 320).await;
    assert_eq!(order.len(), 320);
    // alternating from the head: b's 20 are done by about the 40th task, not the 320th
    let b_done = last_of(&order, "b");
    assert!(b_done <= 42, "b's last task was the {b_done}th: {order:?}");
    // and b never waited behind a run of a's longer than one turn
    let first_b = order.iter().position(|k| k == "b").unwrap();
    assert!(first_b <= 2, "b's first task was the {}th", first_b + 1);
}

#[tokio::test]
async fn weights_set_by_pattern_give_shares_in_proportion() {
    let app = spawn_app().await;
    let put = |pattern: &'static str, body: Value| {
        let app = &app;
        async move {
            let r = app
                .http
                .put(app.url(&format!("/api/v1/key-limits/{pattern}")))
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (s, v) = put("premium-*", json!({"weight": 3})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["pattern"], "premium-*");
    assert_eq!(v["weight"], 3.0);
    // an exact key wins over a pattern; bad weights and unknown fields are 422s, nothing stored
    assert_eq!(put("premium-x", json!({"weight": 1})).await.0, 200);
    for bad in [
        json!({"weight": 0}),
        json!({"weight": 5000}),
        json!({"weight": "3"}),
        json!({"max_running": -1}),
        json!({"share": 3}),
        json!([null, null]),
    ] {
        let (s, v) = put("other", bad.clone()).await;
        assert_eq!(s, 422, "{bad}: {v}");
    }
    let (s, list) = app.get("/api/v1/key-limits").await;
    assert_eq!(s, StatusCode::OK);
    let patterns: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["pattern"].as_str().unwrap())
        .collect();
    assert_eq!(patterns, ["premium-*", "premium-x"]);

    // premium-a (weight 3) and basic (weight 1), both backlogged
    submit_many(&app, Some("premium-a"), 200).await;
    submit_many(&app, Some("basic"), 200).await;
    // premium-x takes its exact weight (1), like basic
    submit_many(&app, Some("premium-x"), 40).await;
    let order = drain_serially(&app, 440).await;
    // while all three are backlogged (the first 200 served), shares 3 : 1 : 1
    let head = &order[..200];
    let count = |k: &str| head.iter().filter(|x| *x == k).count() as f64;
    let (p, b, x) = (count("premium-a"), count("basic"), count("premium-x"));
    assert!(
        (p / b - 3.0).abs() <= 0.3,
        "premium-a {p} against basic {b}"
    );
    assert!(
        (x / b - 1.0).abs() <= 0.1,
        "premium-x {x} against basic {b}"
    );

    let r = app
        .http
        .delete(app.url("/api/v1/key-limits/premium-x"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    let r = app
        .http
        .delete(app.url("/api/v1/key-limits/premium-x"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
}

#[tokio::test]
async fn a_template_derives_the_key_from_its_metadata_or_input() {
    let app = spawn_app().await;
    let (s, v) = app
        .post(
            "/api/v1/templates",
            &json!({"id": "per-customer", "concurrency_key": "${metadata.customer}/${input.region}",
                    "input_schema": {"type": "object", "properties": {"region": {"type": "string"}}},
                    "plan": {"steps": [{"id": "s", "tool": "echo", "parameters": {"r": "${input.region}"}}]}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["concurrency_key"], "${metadata.customer}/${input.region}");
    let id = app
        .submit(
            json!({"template": "per-customer", "input": {"region": "eu"},
                       "metadata": {"customer": "c-42"}}),
        )
        .await;
    let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(t["concurrency_key"], "c-42/eu");
    // a submit's own key wins
    let own = app
        .submit(
            json!({"template": "per-customer", "input": {"region": "eu"},
                       "metadata": {"customer": "c-42"}, "concurrency_key": "mine"}),
        )
        .await;
    assert_eq!(
        app.get(&format!("/api/v1/tasks/{own}")).await.1["concurrency_key"],
        "mine"
    );
    // what the template reads must be there; a key placeholder must be input or metadata
    let (s, v) = app
        .post(
            "/api/v1/tasks",
            &json!({"template": "per-customer", "input": {"region": "eu"}}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(v.to_string().contains("${metadata.customer}"), "{v}");
    for (key, named) in [
        ("${context.x}", "only ${input.key}"),
        ("${input.nope}", "nope"),
    ] {
        let (s, v) = app
            .post(
                "/api/v1/templates",
                &json!({"id": "bad", "concurrency_key": key,
                        "input_schema": {"type": "object", "properties": {"region": {}}},
                        "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
            )
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{key}: {v}");
        assert!(v.to_string().contains(named), "{key}: {v}");
    }
    // a key that is too long once filled is a 422, not a failed insert
    let (s, v) = app
        .post(
            "/api/v1/tasks",
            &json!({"template": "per-customer", "input": {"region": "r".repeat(200)},
                    "metadata": {"customer": "c-42"}}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(v.to_string().contains("concurrency_key"), "{v}");
    // 128 characters of 3 bytes each are a key; 129 are not
    let (s, v) = app
        .post("/api/v1/tasks", &one(Some(&"€".repeat(128)), 0))
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{v}");
    let (s, v) = app
        .post("/api/v1/tasks", &one(Some(&"k".repeat(129)), 0))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
}

async fn priority_of(app: &common::TestApp, id: Uuid) -> (i32, i32, Vec<i32>) {
    let (p, boost): (i32, i32) =
        sqlx::query_as("SELECT priority, priority_boost FROM tasks WHERE id = $1")
            .bind(id)
            .fetch_one(app.store().pool())
            .await
            .unwrap();
    let queued: Vec<i32> =
        sqlx::query_scalar("SELECT priority FROM claim_queue WHERE task_id = $1")
            .bind(id)
            .fetch_all(app.store().pool())
            .await
            .unwrap();
    (p, boost, queued)
}

/// Move a task's submission (and last raise) `secs` into the past.
async fn wait_longer(app: &common::TestApp, id: Uuid, secs: f64) {
    sqlx::query(
        "UPDATE tasks SET created_at = created_at - make_interval(secs => $2),
                          aged_at = aged_at - make_interval(secs => $2) WHERE id = $1",
    )
    .bind(id)
    .bind(secs)
    .execute(app.store().pool())
    .await
    .unwrap();
    sqlx::query(
        "UPDATE claim_queue SET task_created_at = task_created_at - make_interval(secs => $2)
         WHERE task_id = $1",
    )
    .bind(id)
    .bind(secs)
    .execute(app.store().pool())
    .await
    .unwrap();
}

#[tokio::test]
async fn aging_raises_a_waiting_task_one_level_per_interval_up_to_its_bound() {
    let app = spawn_app().await;
    // submitted first, so first in its priority's turn order: only aging puts `old` ahead
    let young = app.submit(one(None, 1)).await;
    let old = app.submit(one(None, 0)).await;
    let store = app.store();
    // nothing has waited a minute yet
    assert_eq!(store.age_priorities(60.0, 2, 100).await.unwrap(), 0);
    wait_longer(&app, old, 61.0).await;
    assert_eq!(store.age_priorities(60.0, 2, 100).await.unwrap(), 1);
    assert_eq!(
        priority_of(&app, old).await,
        (1, 1, vec![1]),
        "raised, queue entry with it"
    );
    assert_eq!(priority_of(&app, young).await, (0, 0, vec![0]));
    // one level per interval: not again until another has passed
    assert_eq!(store.age_priorities(60.0, 2, 100).await.unwrap(), 0);
    wait_longer(&app, old, 61.0).await;
    assert_eq!(store.age_priorities(60.0, 2, 100).await.unwrap(), 1);
    assert_eq!(priority_of(&app, old).await, (2, 2, vec![2]));
    // the bound: at most 2 levels
    wait_longer(&app, old, 61.0).await;
    assert_eq!(store.age_priorities(60.0, 2, 100).await.unwrap(), 0);
    assert_eq!(priority_of(&app, old).await.0, 2);
    // the raised task is claimed first
    let order = drain_serially(&app, 2).await;
    assert_eq!(order.len(), 2);
    let first: Uuid =
        sqlx::query_scalar("SELECT task_id FROM attempts ORDER BY started_at, id LIMIT 1")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(first, old);
}

#[tokio::test]
async fn the_activity_shows_the_queue_per_key_top_20_then_others() {
    let app = spawn_app().await;
    submit_many(&app, Some("big"), 30).await;
    for k in 0..25 {
        submit_many(&app, Some(&format!("k{k:02}")), 1).await;
    }
    submit_many(&app, None, 2).await;
    let (s, v) = app.get("/api/v1/stats/activity").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let rows = v["queue_by_key"].as_array().unwrap();
    assert_eq!(rows.len(), 21, "{rows:?}");
    assert_eq!(rows[0], json!({"key": "big", "ready": 30, "running": 0}));
    assert_eq!(
        rows[1],
        json!({"key": "", "ready": 2, "running": 0}),
        "no key, then by name"
    );
    assert_eq!(rows[2]["key"], "k00");
    assert_eq!(rows[19]["key"], "k17");
    assert_eq!(
        rows[20],
        json!({"key": "others", "ready": 7, "running": 0}),
        "k18 … k24"
    );
}

fn keyed(key: &str) -> trellis::store::submit::NewTask {
    let mut t = common::new_task(json!([{"id": "s", "tool": "echo"}]));
    t.concurrency_key = Some(key.into());
    t
}

fn claim(worker: Uuid) -> trellis::store::step_queue::Claim {
    super::depth::claim(worker, 64, 0)
}

use super::depth::complete;

/// `max_running` caps one key's running steps, each key of a pattern on its own; the other
/// keys still fill the claim; a step that ends makes room for one more.
#[tokio::test]
async fn max_running_caps_each_key_of_a_pattern() {
    let db = common::fresh_db().await;
    let store = &db.store;
    store.put_key_limit("tenant-*", 1.0, Some(2)).await.unwrap();
    let mut batch = Vec::new();
    for _ in 0..20 {
        batch.push(keyed("tenant-a"));
        batch.push(keyed("tenant-b"));
        batch.push(keyed("free"));
    }
    store.submit_tasks_quietly(&batch).await.unwrap().unwrap();
    let worker = Uuid::now_v7();
    let count = |got: &[trellis::store::step_queue::ClaimedStep], key: &str| {
        let ids: Vec<Uuid> = got.iter().map(|s| s.task_id).collect();
        (ids, key.to_string())
    };
    let key_of = async |ids: Vec<Uuid>, key: String| -> usize {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM tasks WHERE id = ANY($1) AND concurrency_key = $2",
        )
        .bind(ids)
        .bind(key)
        .fetch_one(store.pool())
        .await
        .unwrap();
        n as usize
    };
    let first = store.claim_steps(&claim(worker)).await.unwrap();
    let (ids, k) = count(&first, "tenant-a");
    assert_eq!(key_of(ids.clone(), k).await, 2, "tenant-a: its cap");
    assert_eq!(
        key_of(ids.clone(), "tenant-b".into()).await,
        2,
        "tenant-b: a cap of its own"
    );
    assert_eq!(
        key_of(ids, "free".into()).await,
        20,
        "an unlimited key fills the rest"
    );
    let second = store.claim_steps(&claim(worker)).await.unwrap();
    assert!(
        second.is_empty(),
        "both capped keys are full: {}",
        second.len()
    );
    // one of tenant-a's steps ends: one more of tenant-a, none of tenant-b
    let a_ids: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM tasks WHERE id = ANY($1) AND concurrency_key = 'tenant-a'",
    )
    .bind(first.iter().map(|s| s.task_id).collect::<Vec<_>>())
    .fetch_all(store.pool())
    .await
    .unwrap();
    let one: Vec<_> = first
        .iter()
        .filter(|s| s.task_id == a_ids[0])
        .cloned()
        .collect();
    complete(store, worker, &one).await;
    let third = store.claim_steps(&claim(worker)).await.unwrap();
    let ids: Vec<Uuid> = third.iter().map(|s| s.task_id).collect();
    assert_eq!(third.len(), 1);
    assert_eq!(key_of(ids, "tenant-a".into()).await, 1);
    // a new value applies at once
    store.put_key_limit("tenant-*", 1.0, Some(5)).await.unwrap();
    let fourth = store.claim_steps(&claim(worker)).await.unwrap();
    assert_eq!(fourth.len(), 6, "3 more of each");
}

/// The cap holds under 4 workers draining 400 tasks of one key, checked from the attempts'
/// start and end times (the database's clock).
#[tokio::test]
async fn max_running_holds_across_four_workers() {
    let app = spawn_app().await;
    let (s, v) = app
        .http
        .put(app.url("/api/v1/key-limits/one"))
        .json(&json!({"max_running": 2}))
        .send()
        .await
        .map(|r| (r.status().as_u16(), r))
        .unwrap();
    assert_eq!(s, 200, "{:?}", v.text().await);
    let tasks: Vec<Value> = (0..400)
        .map(|i| {
            json!({"description": "capped", "concurrency_key": "one", "plan": {"steps": [
                {"id": "s", "tool": "sleep", "parameters": {"ms": 5, "i": i}}]}})
        })
        .collect();
    let (s, v) = app
        .post("/api/v1/tasks/batch", &json!({"tasks": tasks}))
        .await;
    assert!(s.is_success(), "{v}");
    let workers: Vec<_> = (0..4).map(|_| app.worker(|c| c.concurrency = 8)).collect();
    common::wait_for("every task to end", LIMIT, || async {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE finished_at IS NOT NULL")
            .fetch_one(app.store().pool())
            .await
            .unwrap();
        (n == 400).then_some(())
    })
    .await;
    for w in workers {
        w.stop().await;
    }
    let peak = app.peak_attempts(None).await;
    assert!(peak <= 2, "{peak} steps of the key ran at once");
    assert_eq!(peak, 2, "the cap was reached (4 workers, 400 tasks)");
}

/// A key whose tasks name two patterns (an exact one added after some were submitted) is held
/// to the smaller room of the two, and the claim still runs.
#[tokio::test]
async fn a_key_under_two_patterns_takes_the_smaller_room() {
    let db = common::fresh_db().await;
    let store = &db.store;
    store.put_key_limit("team-*", 1.0, Some(1)).await.unwrap();
    store
        .submit_tasks_quietly(&[keyed("team-a"), keyed("team-a")])
        .await
        .unwrap()
        .unwrap();
    store.put_key_limit("team-a", 1.0, Some(3)).await.unwrap();
    store
        .submit_tasks_quietly(&[keyed("team-a"), keyed("team-a")])
        .await
        .unwrap()
        .unwrap();
    let worker = Uuid::now_v7();
    let got = store.claim_steps(&claim(worker)).await.unwrap();
    assert_eq!(got.len(), 1, "the least room of team-* (1) and team-a (3)");
    assert!(store.claim_steps(&claim(worker)).await.unwrap().is_empty());
}

/// `[fairness] default_max_running` caps each key that no pattern caps, each on its own; a
/// pattern's own `max_running` wins for its keys; tasks without a key are not held.
#[tokio::test]
async fn the_default_max_running_caps_every_uncapped_key() {
    let db = common::fresh_db().await;
    let store = db.store.clone().with_default_max_running(1);
    store.put_key_limit("big", 1.0, Some(3)).await.unwrap();
    let mut tasks = vec![];
    for key in ["a", "a", "a", "b", "b", "big", "big", "big", "big"] {
        tasks.push(keyed(key));
    }
    for _ in 0..2 {
        tasks.push(common::new_task(json!([{"id": "s", "tool": "echo"}])));
    }
    store.submit_tasks_quietly(&tasks).await.unwrap().unwrap();
    let worker = Uuid::now_v7();
    let got = store.claim_steps(&claim(worker)).await.unwrap();
    let mut by_key: std::collections::BTreeMap<String, usize> = Default::default();
    for s in &got {
        let k: Option<String> =
            sqlx::query_scalar("SELECT concurrency_key FROM tasks WHERE id = $1")
                .bind(s.task_id)
                .fetch_one(store.pool())
                .await
                .unwrap();
        *by_key.entry(k.unwrap_or_default()).or_default() += 1;
    }
    assert_eq!(
        by_key,
        [
            ("".to_string(), 2),
            ("a".into(), 1),
            ("b".into(), 1),
            ("big".into(), 3)
        ]
        .into_iter()
        .collect(),
        "one per uncapped key, the pattern's three, every task without a key"
    );
    assert!(store.claim_steps(&claim(worker)).await.unwrap().is_empty());
    // their steps end: the next of a, of b (its last) and of big (its last)
    complete(&store, worker, &got).await;
    assert_eq!(store.claim_steps(&claim(worker)).await.unwrap().len(), 3);
}
