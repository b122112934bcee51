//! Map steps (the fan-out issue): a step mapped over a list that an earlier step produced runs
//! one item step per element, at most `max_parallel` at once, each with its own attempts and
//! recovery; the map step joins their outputs in item order. `continue` gives up an item that
//! fails for good and lists its error; `fail` sends it through the tiers and the task ends
//! bounded; a list over `max_items` fails the step with nothing started. Bad maps are 422s.

use trellis::testkit as common;

use std::time::Duration;

use common::spawn_app;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

const LIMIT: Duration = Duration::from_secs(90);

/// A producer `a` (echo of `items`), the map `m` over its output, and `b` reading the join.
fn mapped(items: Value, map: Value, tool: &str, params: Value) -> Value {
    json!({"description": "map", "plan": {"steps": [
        {"id": "a", "tool": "echo", "parameters": {"items": items}},
        {"id": "m", "tool": tool, "parameters": params, "dependencies": ["a"], "map": map},
        {"id": "b", "tool": "echo", "parameters": {"all": "${m.output}"}, "dependencies": ["m"]}
    ]}})
}

async fn attempts(app: &common::TestApp, id: Uuid) -> Vec<Value> {
    let (status, v) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v.as_array()
        .or_else(|| v["attempts"].as_array())
        .cloned()
        .unwrap_or_default()
}

async fn events(app: &common::TestApp, id: Uuid) -> Vec<Value> {
    let (status, v) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v.as_array()
        .or_else(|| v["events"].as_array())
        .cloned()
        .unwrap_or_default()
}

/// The most attempts of item steps of `m` that overlapped in time.
fn peak_overlap(attempts: &[Value]) -> usize {
    let mut edges: Vec<(String, i32)> = Vec::new();
    for a in attempts {
        if a["step_id"].as_str().is_some_and(|k| k.starts_with("m[")) {
            edges.push((a["started_at"].as_str().unwrap().to_string(), 1));
            edges.push((a["finished_at"].as_str().unwrap().to_string(), -1));
        }
    }
    // RFC 3339 in UTC with a fixed precision sorts as text; an end before a start at a tie
    edges.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.cmp(&y.1)));
    let (mut now, mut peak) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    peak as usize
}

#[tokio::test]
async fn a_map_runs_every_item_within_its_window_and_joins_their_outputs_in_order() {
    let app = spawn_app().await;
    let w = app.worker(|c| c.concurrency = 8);
    let items: Vec<Value> = (1..=25).map(|n| json!({"n": n})).collect();
    let id = app
        .submit(mapped(
            json!(items),
            json!({"over": "${a.output.items}", "max_items": 100, "max_parallel": 3}),
            "echo",
            json!({"n": "${item.n}", "i": "${item_index}", "label": "item ${item.n}"}),
        ))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let (_, result) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    let out = result["outputs"]["m"]
        .as_array()
        .expect("the join's output")
        .clone();
    assert_eq!(out.len(), 25);
    for (i, o) in out.iter().enumerate() {
        assert_eq!(o["n"], json!(i + 1), "item {i} out of order: {o}");
        assert_eq!(o["i"], json!(i));
        assert_eq!(o["label"], json!(format!("item {}", i + 1)));
    }
    // the dependent read the join
    assert_eq!(result["outputs"]["b"]["all"], json!(out));
    // the result lists the plan's steps; the items are in the join
    assert_eq!(
        result["outputs"].as_object().unwrap().len(),
        3,
        "{}",
        result["outputs"]
    );
    // the plan shows the map, then its items in order
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    let steps = plan["steps"].as_array().unwrap();
    let m = steps.iter().find(|s| s["id"] == "m").unwrap();
    assert_eq!(m["map"]["max_parallel"], 3, "{m}");
    let listed: Vec<i64> = steps
        .iter()
        .filter_map(|s| s["item_index"].as_i64())
        .collect();
    assert_eq!(listed, (0..25).collect::<Vec<i64>>());
    let tried = attempts(&app, id).await;
    let items_run = tried
        .iter()
        .filter(|a| a["step_id"].as_str().is_some_and(|k| k.starts_with("m[")))
        .count();
    assert_eq!(items_run, 25, "one attempt per item");
    let peak = peak_overlap(&tried);
    assert!(
        (1..=3).contains(&peak),
        "at most max_parallel items run at once: {peak}"
    );
    let expanded: Vec<Value> = events(&app, id)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "map_expanded")
        .collect();
    assert_eq!(expanded.len(), 1, "{expanded:?}");
    assert_eq!(expanded[0]["payload"]["items"], 25);
    assert_eq!(expanded[0]["payload"]["step_id"], "m");
    // a rerun from the map runs every item again (a replan would keep them)
    let (status, v) = app
        .post(
            &format!("/api/v1/tasks/{id}/rerun"),
            &json!({"from_step": "m"}),
        )
        .await;
    assert!(status.is_success(), "{v}");
    assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    let again = attempts(&app, id)
        .await
        .iter()
        .filter(|a| a["step_id"].as_str().is_some_and(|k| k.starts_with("m[")))
        .count();
    assert_eq!(again, 50, "every item ran again");
    w.stop().await;
}

#[tokio::test]
async fn continue_gives_up_items_that_fail_for_good_and_the_join_lists_them() {
    let app = spawn_app().await;
    let w = app.worker(|_| {});
    // items 1, 3 and 5 fail every attempt; the others succeed at once
    let fails = [0, 1000, 0, 1000, 0, 1000, 0];
    let items: Vec<Value> = fails.iter().map(|f| json!({"fails": f})).collect();
    let id = app
        .submit(mapped(
            json!(items),
            json!({"over": "${a.output.items}", "max_items": 10, "max_parallel": 2,
                   "on_item_failure": "continue"}),
            "flaky",
            json!({"fail_times": "${item.fails}", "index": "${item_index}"}),
        ))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let (_, result) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    let out = result["outputs"]["m"].as_array().unwrap().clone();
    assert_eq!(out.len(), 7);
    for (i, o) in out.iter().enumerate() {
        if fails[i] > 0 {
            assert_eq!(*o, Value::Null, "item {i} failed: null in its place");
        } else {
            assert_eq!(o["index"], json!(i), "{o}");
        }
    }
    let tried = attempts(&app, id).await;
    let join = tried
        .iter()
        .find(|a| a["step_id"] == "m")
        .expect("the map step's attempt");
    let listed: Vec<i64> = join["error"]["failed_items"]
        .as_array()
        .expect("the failed items listed")
        .iter()
        .map(|f| f["item_index"].as_i64().unwrap())
        .collect();
    assert_eq!(listed, vec![1, 3, 5]);
    for f in join["error"]["failed_items"].as_array().unwrap() {
        assert!(
            f["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("flaky failure")),
            "{f}"
        );
    }
    // each failing item was retried before it was given up (its own tiers)
    for i in [1, 3, 5] {
        let key = format!("m[{i}]");
        let n = tried
            .iter()
            .filter(|a| a["step_id"] == key.as_str())
            .count();
        assert!(n >= 2, "item {i} had {n} attempts");
    }
    w.stop().await;
}

#[tokio::test]
async fn with_fail_a_failing_item_goes_through_the_tiers_and_the_task_ends_bounded() {
    let app = spawn_app().await;
    let w = app.worker(|_| {});
    let items = json!([{"fails": 0}, {"fails": 1000}, {"fails": 0}]);
    let id = app
        .submit(mapped(
            items,
            json!({"over": "${a.output.items}", "max_items": 10}),
            "flaky",
            json!({"fail_times": "${item.fails}"}),
        ))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_ne!(done["status"], "succeeded", "{done}");
    let kinds: Vec<(String, String)> = events(&app, id)
        .await
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap_or_default().to_string(),
                e["payload"]["step_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    let on_item = |k: &str| kinds.iter().any(|(kind, s)| kind == k && s == "m[1]");
    assert!(on_item("step_failed"), "{kinds:?}");
    assert!(
        on_item("step_reflected"),
        "tier 1 decided on the item: {kinds:?}"
    );
    assert!(
        kinds.iter().any(|(k, _)| k == "overall_reflected"),
        "tier 3 reflected on the task: {kinds:?}"
    );
    // the replan kept the items that had succeeded: they ran once
    let kept: Vec<i64> = events(&app, id)
        .await
        .iter()
        .filter(|e| e["kind"] == "map_expanded")
        .map(|e| e["payload"]["kept"].as_i64().unwrap())
        .collect();
    assert!(
        kept.len() >= 2 && kept[1..].iter().all(|k| *k == 2),
        "{kept:?}"
    );
    let tried = attempts(&app, id).await;
    for key in ["m[0]", "m[2]"] {
        let n = tried
            .iter()
            .filter(|a| a["step_id"] == key && a["status"] == "succeeded")
            .count();
        assert_eq!(n, 1, "{key}: {kinds:?}");
    }
    w.stop().await;
}

#[tokio::test]
async fn a_list_longer_than_max_items_fails_the_step_with_no_item_started() {
    let app = spawn_app().await;
    let w = app.worker(|_| {});
    let id = app
        .submit(mapped(
            json!([1, 2, 3, 4, 5]),
            json!({"over": "${a.output.items}", "max_items": 3}),
            "echo",
            json!({"v": "${item}"}),
        ))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_ne!(done["status"], "succeeded", "{done}");
    let tried = attempts(&app, id).await;
    assert!(
        !tried
            .iter()
            .any(|a| a["step_id"].as_str().is_some_and(|k| k.starts_with("m["))),
        "no item ran: {tried:?}"
    );
    let failed = tried
        .iter()
        .find(|a| a["step_id"] == "m" && a["status"] == "failed")
        .expect("the map step failed");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("5 items, more than map.max_items (3)"),
        "{message}"
    );
    w.stop().await;
}

#[tokio::test]
async fn an_empty_list_joins_at_once_and_a_map_over_the_context_needs_no_max_items() {
    let app = spawn_app().await;
    let w = app.worker(|_| {});
    let empty = app
        .submit(mapped(
            json!([]),
            json!({"over": "${a.output.items}", "max_items": 3}),
            "echo",
            json!({"v": "${item}"}),
        ))
        .await;
    let from_context = app
        .submit(
            json!({"description": "ctx", "context": {"docs": ["x", "y"]}, "plan": {"steps": [
                {"id": "m", "tool": "echo", "parameters": {"doc": "${d}"},
                 "map": {"over": "${context.docs}", "as": "d"}}
            ]}}),
        )
        .await;
    for id in [empty, from_context] {
        let done = app.wait_done(id, LIMIT).await;
        assert_eq!(done["status"], "succeeded", "{done}");
    }
    let (_, r) = app.get(&format!("/api/v1/tasks/{empty}/result")).await;
    assert_eq!(r["outputs"]["m"], json!([]));
    let (_, r) = app
        .get(&format!("/api/v1/tasks/{from_context}/result"))
        .await;
    assert_eq!(r["outputs"]["m"], json!([{"doc": "x"}, {"doc": "y"}]));
    w.stop().await;
}

#[tokio::test]
async fn bad_maps_are_refused_with_what_to_write() {
    let app = spawn_app().await;
    let cases = [
        (
            mapped(
                json!([1]),
                json!({"over": "${a.output.items}"}),
                "echo",
                json!({}),
            ),
            "map.max_items is required",
        ),
        (
            mapped(
                json!([1]),
                json!({"over": "items: ${a.output.items}", "max_items": 2}),
                "echo",
                json!({}),
            ),
            "map.over must be one placeholder",
        ),
        (
            json!({"description": "x", "plan": {"steps": [
                {"id": "s", "tool": "echo", "parameters": {"v": "${item}"}}
            ]}}),
            "only in the parameters of a step with a map",
        ),
        (
            mapped(
                json!([1]),
                json!({"over": "${a.output.items}", "max_items": 2, "max_parallel": 0}),
                "echo",
                json!({}),
            ),
            "at least 1",
        ),
        (
            mapped(
                json!([1]),
                json!({"over": "${a.output.items}", "max_items": 2, "as": "a"}),
                "echo",
                json!({}),
            ),
            "choose another name",
        ),
    ];
    for (body, says) in cases {
        let (status, v) = app.post("/api/v1/tasks", &body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
        assert!(v.to_string().contains(says), "{says:?} not in {v}");
    }
    // nothing was created
    let (_, list) = app.get("/api/v1/tasks").await;
    let n = list
        .as_array()
        .or_else(|| list["tasks"].as_array())
        .map_or(0, Vec::len);
    assert_eq!(n, 0, "{list}");
}

/// Part 5: a map's items are steps of their own, and their recovery actions add up to the
/// template the task came from (`recovery_by_template`), live and after a prune (the daily
/// roll-ups); a task not submitted from a template is not in the view.
#[tokio::test]
async fn item_recoveries_roll_up_to_the_template_live_and_after_a_prune() {
    let app = spawn_app().await;
    let template = json!({
        "id": "fan",
        "plan": {"steps": [
            {"id": "a", "tool": "echo", "parameters": {"items": [{"fails": 1}, {"fails": 0}, {"fails": 1}]}},
            {"id": "m", "tool": "flaky", "dependencies": ["a"],
             "parameters": {"fail_times": "${item.fails}", "index": "${item_index}"},
             "map": {"over": "${a.output.items}", "max_items": 3, "max_parallel": 3}}
        ]}
    });
    let (s, v) = app.post("/api/v1/templates", &template).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let w = app.worker(|_| {});
    let fan = app.submit(json!({"template": "fan", "input": {}})).await;
    // the same failures without a template: counted elsewhere, not here
    let plain = app
        .submit(mapped(
            json!([{"fails": 1}]),
            json!({"over": "${a.output.items}", "max_items": 3}),
            "flaky",
            json!({"fail_times": "${item.fails}"}),
        ))
        .await;
    for id in [fan, plain] {
        assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    }
    w.stop().await;
    let store = app.store();
    let rows = store
        .report(trellis::store::reports::ReportView::RecoveryByTemplate)
        .await
        .unwrap();
    assert_eq!(
        rows.len(),
        1,
        "one template, one tier, one action: {rows:?}"
    );
    let r = &rows[0];
    assert_eq!(r["template"], "fan");
    assert_eq!(r["tier"], 1);
    assert_eq!(r["action"], "retry_with_params");
    // items 0 and 2 failed once each, and each retry saved its item
    for (field, want) in [
        ("actions", 2),
        ("item_actions", 2),
        ("succeeded_after", 2),
        ("saved", 2),
    ] {
        assert_eq!(r[field], want, "{field} in {r}");
    }
    assert_eq!(r["saved_pct"].as_f64(), Some(100.0), "{r}");
    let (_, stats) = app.get("/api/v1/stats/recovery").await;
    assert_eq!(stats["recovery_by_template"], json!(rows));

    // pruned: the same numbers from the roll-ups
    store.age_tasks(2.0 * 86_400.0).await.unwrap();
    assert_eq!(store.prune_finished(86_400.0, 10).await.unwrap(), 2);
    assert_eq!(store.rows_of_task(fan).await.unwrap(), 0);
    let after = store
        .report(trellis::store::reports::ReportView::RecoveryByTemplate)
        .await
        .unwrap();
    assert_eq!(after, rows, "the roll-ups keep the template's figures");
}

/// Items failing side by side recover each on its own tiers: the task's failures in a row,
/// which they run up together, never stop an item's retries (each is retried, then given up).
#[tokio::test]
async fn items_failing_together_are_each_retried_before_they_are_given_up() {
    let app = spawn_app().await;
    let w = app.worker(|_| {});
    let items: Vec<Value> = (0..6).map(|_| json!({"fails": 1000})).collect();
    let id = app
        .submit(mapped(
            json!(items),
            json!({"over": "${a.output.items}", "max_items": 10, "max_parallel": 6,
                   "on_item_failure": "continue"}),
            "flaky",
            json!({"fail_times": "${item.fails}", "index": "${item_index}"}),
        ))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let tried = attempts(&app, id).await;
    for i in 0..6 {
        let key = format!("m[{i}]");
        let n = tried
            .iter()
            .filter(|a| a["step_id"] == key.as_str())
            .count();
        assert!(n >= 2, "item {i} had {n} attempts");
    }
    w.stop().await;
}

/// Items failing alike each get their own repair: a map of 8 items whose first five calls each
/// answer 503 (one call past the retries and the repair's first call) heals, every item
/// repaired once on its own budget (before, the first item spent the task's one repair and the
/// rest went to the task's reflection, and the map ended in `needs_intervention`). The circuit
/// is off so the test reads the budgets alone.
#[tokio::test]
async fn each_item_is_repaired_on_its_own_budget() {
    use trellis::testkit::faults::{FaultServer, Reply, Seen};
    let app = spawn_app().await;
    let faults = FaultServer::start().await;
    faults.route("svc", |s: &Seen| match s.nth <= 5 {
        true => Reply::status(503),
        false => Reply::echo(s),
    });
    let breaker = json!({"circuit_breaker": {"failure_threshold": 0}});
    common::register_tool(&app, "svc", &faults.endpoint("svc"), breaker).await;
    let w = app.worker(|c| c.policy.retry.initial_interval_ms = 20);
    let id = app
        .submit(mapped(
            json!((0..8).collect::<Vec<_>>()),
            json!({"over": "${a.output.items}", "max_items": 8, "max_parallel": 8}),
            "svc",
            json!({"i": "${item}"}),
        ))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    w.stop().await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let calls = faults.calls("svc");
    assert_eq!(calls.len(), 8 * 6, "five failures and one success per item");
    let repaired: Vec<String> = events(&app, id)
        .await
        .iter()
        .filter(|e| e["kind"] == "step_repaired" && e["payload"]["ok"] == true)
        .map(|e| {
            e["payload"]["step_id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let mut keys = repaired.clone();
    keys.sort();
    keys.dedup();
    assert_eq!((repaired.len(), keys.len()), (8, 8), "{repaired:?}");
    let (_, steps) = app.get(&format!("/api/v1/tasks/{id}/steps")).await;
    let replans = done["counters"]["task_replan_count"].clone();
    assert_eq!(replans, 0, "no item needed the task's reflection: {steps}");
}

/// When each of item `i`'s attempts started (RFC 3339 text, in order).
fn starts(attempts: &[Value], i: usize) -> Vec<String> {
    let key = format!("m[{i}]");
    let mut s: Vec<String> = attempts
        .iter()
        .filter(|a| a["step_id"] == key.as_str())
        .map(|a| a["started_at"].as_str().unwrap().to_string())
        .collect();
    s.sort();
    s
}

/// An item waiting out its backoff lends its place: in a map whose window is the task's own
/// cap (2 here), the next items start while the first ones wait, and still no more than 2
/// items run at once. A map whose `max_parallel` is below the cap keeps its window strictly:
/// its second item starts only after the first has ended, and a tool whose failures in a row
/// reached its breaker's threshold (it may be down) gets no more items meanwhile.
#[tokio::test]
async fn an_item_waiting_out_its_backoff_lends_its_place_within_the_task_cap() {
    use trellis::testkit::faults::{FaultServer, Reply, Seen};
    let mut settings = common::test_settings();
    settings.orchestrator.parallel_max_concurrent = 2;
    // plain retries after the shipped backoff (a step reflection retries after 50 ms)
    settings.reflection.enable_step_level_reflection = false;
    // items failing side by side run up the task's failures in a row past its limit (3):
    // an item's retries are its own all the same
    let app = common::spawn_app_with(settings).await;
    // each item's first call answers 503, its second succeeds (the circuit off: the test
    // reads the window alone)
    let faults = FaultServer::start().await;
    for route in ["svc", "wary"] {
        faults.route(route, |s: &Seen| match s.nth {
            1 => Reply::status(503),
            _ => Reply::echo(s),
        });
    }
    let breaker = json!({"circuit_breaker": {"failure_threshold": 0}});
    common::register_tool(&app, "svc", &faults.endpoint("svc"), breaker).await;
    // the same service behind a breaker that counts one failure in a row as a possible outage
    let wary = json!({"circuit_breaker": {"failure_threshold": 1}});
    common::register_tool(&app, "wary", &faults.endpoint("wary"), wary).await;
    let w = app.worker(|c| {
        c.concurrency = 8;
        c.policy.retry.initial_interval_ms = 400;
    });
    let items: Vec<Value> = (0..6).map(|i| json!(i)).collect();
    let lending = app
        .submit(mapped(
            json!(items),
            json!({"over": "${a.output.items}", "max_items": 10}),
            "svc",
            json!({"i": "${item}"}),
        ))
        .await;
    let strict = app
        .submit(mapped(
            json!(items[..3]),
            json!({"over": "${a.output.items}", "max_items": 10, "max_parallel": 1}),
            "svc",
            json!({"i": "${item}"}),
        ))
        .await;
    let guarded = app
        .submit(mapped(
            json!(items[..3]),
            json!({"over": "${a.output.items}", "max_items": 10}),
            "wary",
            json!({"i": "${item}"}),
        ))
        .await;
    for id in [lending, strict, guarded] {
        let done = app.wait_done(id, LIMIT).await;
        assert_eq!(done["status"], "succeeded", "{done}");
    }
    w.stop().await;
    let tried = attempts(&app, lending).await;
    let item_calls = tried
        .iter()
        .filter(|a| a["step_id"].as_str().is_some_and(|k| k.starts_with("m[")))
        .count();
    assert_eq!(item_calls, 6 * 2, "two calls per item");
    let peak = peak_overlap(&tried);
    assert!((1..=2).contains(&peak), "within the task's cap: {peak}");
    // item 2 (past the window of 2) started before item 0 was called again
    let (first, third) = (starts(&tried, 0), starts(&tried, 2));
    assert!(
        third[0] < first[1],
        "item 2 waited for item 0's backoff: {first:?} {third:?}"
    );
    let tried = attempts(&app, strict).await;
    let (first, second) = (starts(&tried, 0), starts(&tried, 1));
    let first_ended = tried
        .iter()
        .filter(|a| a["step_id"] == "m[0]")
        .filter_map(|a| a["finished_at"].as_str())
        .max()
        .unwrap()
        .to_string();
    assert!(
        second[0] >= first_ended,
        "max_parallel 1 lends nothing: {first:?} ended {first_ended}, then {second:?}"
    );
    assert_eq!(peak_overlap(&tried), 1);
    // past the breaker's threshold the service may be down: no place is lent. Item 2 waits
    // for the window to slide, when item 0 or 1 succeeds (whichever retries first); lent, it
    // would be released while both wait out their backoff, before either succeeded
    let tried = attempts(&app, guarded).await;
    let first_success = tried
        .iter()
        .filter(|a| a["step_id"] == "m[0]" || a["step_id"] == "m[1]")
        .filter(|a| a["status"] == "succeeded")
        .filter_map(|a| a["finished_at"].as_str())
        .min()
        .expect("items 0 and 1 succeeded")
        .to_string();
    let third = starts(&tried, 2);
    assert!(
        third[0] >= first_success,
        "a possibly dead service got no more items: item 2 started {third:?}, the first item \
         succeeded at {first_success}"
    );
}

/// A tool whose failures in a row reached its breaker's threshold, but whose calls have since
/// passed on their own retry (a success reset the count within its cool-down), is up and
/// flaky, not down: its items lend their places again. Before any success they do not.
#[tokio::test]
async fn a_tool_that_healed_between_failures_gets_places_lent_again() {
    use trellis::testkit::faults::{FaultServer, Reply, Seen};
    let mut settings = common::test_settings();
    settings.orchestrator.parallel_max_concurrent = 2;
    settings.reflection.enable_step_level_reflection = false;
    let app = common::spawn_app_with(settings).await;
    // each call's first try answers 503, its retry passes (per-call flakiness)
    let faults = FaultServer::start().await;
    faults.route("shaky", |s: &Seen| match s.nth {
        1 => Reply::status(503),
        _ => Reply::echo(s),
    });
    // one failure in a row is a possible outage (the circuit itself waits for a step's third)
    let wary = json!({"circuit_breaker": {"failure_threshold": 1, "cool_down_secs": 60}});
    common::register_tool(&app, "shaky", &faults.endpoint("shaky"), wary).await;
    let w = app.worker(|c| {
        c.concurrency = 8;
        c.policy.retry.initial_interval_ms = 400;
    });
    let items: Vec<Value> = (0..6).map(|i| json!(i)).collect();
    let id = app
        .submit(mapped(
            json!(items),
            json!({"over": "${a.output.items}", "max_items": 10}),
            "shaky",
            json!({"i": "${item}"}),
        ))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    w.stop().await;
    let tried = attempts(&app, id).await;
    assert!(peak_overlap(&tried) <= 2, "within the task's cap");
    let first_success = tried
        .iter()
        .filter(|a| a["step_id"].as_str().is_some_and(|k| k.starts_with("m[")))
        .filter(|a| a["status"] == "succeeded")
        .filter_map(|a| a["finished_at"].as_str())
        .min()
        .expect("an item succeeded")
        .to_string();
    // before any success nothing was lent: item 2 waited for the window to slide
    let third = starts(&tried, 2);
    assert!(
        third[0] >= first_success,
        "lent before the service showed it is up: item 2 started {third:?}, the first \
         success {first_success}"
    );
    // after it, failing items lent their places: with a threshold of 1 every failure leaves
    // the count at the threshold, so only the success between failures lets them lend
    let lent: i64 = sqlx::query_scalar("SELECT sum(lent)::bigint FROM step_maps")
        .fetch_one(app.store().pool())
        .await
        .unwrap();
    assert!(
        lent > 0,
        "a healed service's items kept their places: {tried:?}"
    );
}
