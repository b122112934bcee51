//! Retention: finished tasks past their time to live are deleted with all their rows, in
//! batches; `needs_intervention` and unfinished tasks never are; the statistics views give the
//! same numbers before and after a prune (daily roll-ups).

use trellis::testkit as common;

use std::time::{Duration, Instant};

use common::{spawn_app, spawn_app_with, test_settings};
use serde_json::{Value, json};
use trellis::store::reports::ReportView;

const LIMIT: Duration = Duration::from_secs(60);

fn one(tool: &str, params: Value) -> Value {
    json!({"description": tool, "plan": {"steps": [{"id": "step_1", "tool": tool, "parameters": params}]}})
}

/// All the statistics views; durations of tasks that have not ended move with the clock, so
/// they are left out of the comparison.
async fn reports(store: &trellis::store::Store) -> Value {
    let mut all = serde_json::Map::new();
    for (name, view) in [
        ("tier", ReportView::RecoveryByTier),
        ("tool", ReportView::RecoveryByTool),
        ("category", ReportView::RecoveryByCategory),
        ("action", ReportView::RecoveryByAction),
        ("outcomes", ReportView::TaskOutcomes),
    ] {
        let mut rows = store.report(view).await.unwrap();
        for r in &mut rows {
            if matches!(r["status"].as_str(), Some("needs_intervention" | "running")) {
                r.as_object_mut().unwrap().remove("mean_duration_ms");
            }
        }
        all.insert(name.into(), json!(rows));
    }
    Value::Object(all)
}

#[tokio::test]
async fn prune_deletes_only_expired_finished_tasks_and_keeps_the_statistics() {
    let app = spawn_app().await;
    let w = app.worker(|_| {});
    let recovered = app.submit(one("flaky", json!({"fail_times": 1}))).await;
    let plain = app.submit(one("echo", json!({}))).await;
    let stopped = app
        .submit(one(
            "fail",
            json!({"message": "forbidden", "category": "external_error"}),
        ))
        .await;
    for id in [recovered, plain] {
        assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    }
    assert_eq!(
        app.wait_done(stopped, LIMIT).await["status"],
        "needs_intervention"
    );
    w.stop().await;
    // a cancelled task, and one that never ran (no worker)
    let cancelled = app.submit(one("echo", json!({}))).await;
    let (status, _) = app
        .post(&format!("/api/v1/tasks/{cancelled}/cancel"), &json!({}))
        .await;
    assert!(status.is_success());
    let waiting = app.submit(one("echo", json!({}))).await;

    let store = app.store();
    // nothing is old enough yet
    assert_eq!(store.prune_finished(3600.0, 10).await.unwrap(), 0);
    store.age_tasks(2.0 * 86_400.0).await.unwrap();
    let before = reports(store).await;
    let kept_rows =
        store.rows_of_task(stopped).await.unwrap() + store.rows_of_task(waiting).await.unwrap();

    // batches of two: three expired tasks take two batches
    assert_eq!(store.prune_finished(86_400.0, 2).await.unwrap(), 2);
    assert_eq!(store.prune_finished(86_400.0, 2).await.unwrap(), 1);
    assert_eq!(store.prune_finished(86_400.0, 2).await.unwrap(), 0);

    for gone in [recovered, plain, cancelled] {
        assert_eq!(
            store.rows_of_task(gone).await.unwrap(),
            0,
            "{gone} left rows"
        );
    }
    assert_eq!(
        store.rows_of_task(stopped).await.unwrap() + store.rows_of_task(waiting).await.unwrap(),
        kept_rows,
        "needs_intervention and unfinished tasks are untouched"
    );
    assert_eq!(
        app.get(&format!("/api/v1/tasks/{waiting}")).await.1["status"],
        "running"
    );
    assert_eq!(
        reports(store).await,
        before,
        "the views count deleted history"
    );
    // the roll-ups really hold something: the recovered task's tier 1 action is still counted
    let tiers = store.report(ReportView::RecoveryByTier).await.unwrap();
    assert_eq!(tiers[0]["actions"], 1, "{tiers:?}");
    let actions = store.report(ReportView::RecoveryByAction).await.unwrap();
    assert_eq!(
        (&actions[0]["action"], &actions[0]["actions"]),
        (&json!("retry_with_params"), &json!(1)),
        "the roll-ups keep each action: {actions:?}"
    );

    // a task that ends after a prune is counted with the rolled-up history
    let w = app.worker(|_| {});
    app.submit(one("flaky", json!({"fail_times": 1}))).await;
    let again = app.submit(one("echo", json!({}))).await;
    app.wait_done(again, LIMIT).await;
    w.stop().await;
    let outcomes = store.report(ReportView::TaskOutcomes).await.unwrap();
    let today: i64 = outcomes
        .iter()
        .filter(|r| r["status"] == "succeeded")
        .map(|r| r["tasks"].as_i64().unwrap())
        .sum();
    assert!(today >= 3, "{outcomes:?}");
}

#[tokio::test]
async fn workers_prune_on_their_own() {
    let mut settings = test_settings();
    settings.retention.finished_task_ttl_secs = 1;
    settings.retention.interval_secs = 1;
    let app = spawn_app_with(settings).await;
    let w = app.worker(|_| {});
    let id = app.submit(one("echo", json!({}))).await;
    assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    let start = Instant::now();
    while app.store().rows_of_task(id).await.unwrap() > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the worker never pruned {id}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    w.stop().await;
}
