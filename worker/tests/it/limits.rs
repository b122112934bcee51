//! Fleet-wide tool limits with real `trellis-worker` processes: a tool's `max_concurrency`
//! holds however many workers claim, counted by the tool server itself.

use trellis::testkit as common;
use trellis::testkit::procs;

use std::time::Duration;

use common::ToolServer;
use procs::WorkerProc;
use serde_json::json;
use trellis::testkit::{fresh_db, wait_for};

/// Seeds acceptance 2 (tools): 2 worker processes × concurrency 8, 12 tasks of 3 parallel
/// `narrow` steps (max_concurrency 2) and one unlimited `wide` step. The tool server never
/// sees a third `narrow` call in flight, sees two at once (the limit is used, not starved),
/// and `wide` runs wider than that.
#[tokio::test]
async fn max_concurrency_holds_across_worker_processes() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let server = ToolServer::echoing_step(Duration::from_millis(150)).await;
    let mut narrow = common::http_tool("narrow", server.endpoint("narrow"));
    narrow.max_concurrency = Some(2);
    store.create_tool(&narrow).await.unwrap();
    common::add_http_tool(&store, "wide", &server).await;
    for _ in 0..12 {
        store
            .submit_task(&common::new_task(json!([
                {"id": "n1", "tool": "narrow"},
                {"id": "n2", "tool": "narrow"},
                {"id": "n3", "tool": "narrow"},
                {"id": "w1", "tool": "wide"}
            ])))
            .await
            .unwrap();
    }
    let workers = [WorkerProc::start(&db, &[]), WorkerProc::start(&db, &[])];
    wait_for(
        "every task to succeed",
        Duration::from_secs(120),
        || async { (store.count_tasks("succeeded").await.unwrap() == 12).then_some(()) },
    )
    .await;
    assert_eq!(
        server.peak_in_flight("narrow"),
        2,
        "never a third narrow call"
    );
    assert!(
        server.peak_in_flight("wide") > 2,
        "wide is not limited: peak {}",
        server.peak_in_flight("wide")
    );
    assert_eq!(server.calls().len(), 48);
    let (_, _, not_exactly_once, _) = store.attempt_audit().await.unwrap();
    assert_eq!(not_exactly_once, 0);
    for mut w in workers {
        w.signal(libc::SIGTERM);
        assert!(w.wait_exit(Duration::from_secs(30)).await.success());
    }
}

/// Seeds acceptance 2 (tasks): `[orchestrator] max_concurrent_tasks = 2` with 2 worker
/// processes × concurrency 8: the tool server never sees calls of a third task in flight, and
/// a later task of higher priority starts before the earlier ones of priority 0.
#[tokio::test]
async fn the_task_cap_holds_across_worker_processes_in_priority_order() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let server = ToolServer::echoing_step(Duration::from_millis(150)).await;
    common::add_http_tool(&store, "work", &server).await;
    let steps = json!([
        {"id": "a", "tool": "work"}, {"id": "b", "tool": "work"},
        {"id": "c", "tool": "work", "dependencies": ["a", "b"]}
    ]);
    for _ in 0..8 {
        store
            .submit_task(&common::new_task(steps.clone()))
            .await
            .unwrap();
    }
    let mut urgent = common::new_task(steps);
    urgent.priority = 10;
    let urgent = store.submit_task(&urgent).await.unwrap().task_id;
    let cap = [("APP_ORCHESTRATOR__MAX_CONCURRENT_TASKS", "2")];
    let workers = [WorkerProc::start(&db, &cap), WorkerProc::start(&db, &cap)];
    wait_for(
        "every task to succeed",
        Duration::from_secs(120),
        || async { (store.count_tasks("succeeded").await.unwrap() == 9).then_some(()) },
    )
    .await;
    assert_eq!(
        server.peak_tasks_in_flight(),
        2,
        "never steps of a third task in flight, and the cap is used"
    );
    // the first two tasks to be called (steps of one claim arrive in any order)
    let mut first_tasks: Vec<String> = Vec::new();
    for c in server.calls() {
        if !first_tasks.contains(&c.task_id) {
            first_tasks.push(c.task_id);
        }
    }
    first_tasks.truncate(2);
    assert!(
        first_tasks.contains(&urgent.to_string()),
        "the priority-10 task is among the first started: {first_tasks:?}"
    );
    for mut w in workers {
        w.signal(libc::SIGTERM);
        assert!(w.wait_exit(Duration::from_secs(30)).await.success());
    }
}
