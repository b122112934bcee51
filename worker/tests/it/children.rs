//! Fan-out acceptance 4 (the kill): a `trellis-worker` process killed with SIGKILL while a
//! parent's child tasks run. Every task ends succeeded, each `task` call started exactly one
//! child (a retry finds the child its attempt started), and no step succeeded twice.

use trellis::testkit as common;
use trellis::testkit::procs;

use std::time::Duration;

use procs::WorkerProc;
use serde_json::json;
use trellis::testkit::{fresh_db, wait_for};

#[tokio::test]
async fn kill_9_while_children_run_loses_nothing() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let calls: Vec<_> = (0..10)
        .map(|i| {
            json!({"id": format!("c{i}"), "tool": "task", "parameters": {"plan": {"steps": [
                {"id": "a", "tool": "sleep", "parameters": {"ms": 300}},
                {"id": "b", "tool": "sleep", "parameters": {"ms": 300}, "dependencies": ["a"]},
                {"id": "c", "tool": "echo", "parameters": {"i": i}, "dependencies": ["b"]}
            ]}}})
        })
        .collect();
    let root = store
        .submit_task(&common::new_task(json!(calls)))
        .await
        .unwrap()
        .task_id;
    let mut victim = WorkerProc::start(&db, &[]);
    let survivor = WorkerProc::start(&db, &[]);
    wait_for(
        "the victim to hold steps of children",
        Duration::from_secs(60),
        || async { (store.running_on(victim.id).await.unwrap() >= 3).then_some(()) },
    )
    .await;
    victim.signal(libc::SIGKILL);
    assert!(!victim.wait_exit(Duration::from_secs(10)).await.success());
    wait_for("the tree to end", Duration::from_secs(120), || async {
        (store.count_tasks("succeeded").await.unwrap() == 11).then_some(())
    })
    .await;
    let (tasks,): (i64,) = sqlx::query_as("SELECT count(*) FROM tasks")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(tasks, 11, "one child per call, none twice");
    let (children,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM tasks WHERE parent_task_id = $1")
            .bind(root)
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(children, 10);
    let (_, _, not_exactly_once, _) = store.attempt_audit().await.unwrap();
    assert_eq!(not_exactly_once, 0, "every step succeeded exactly once");
    let lost = store
        .count_attempts_in_category("worker_lost")
        .await
        .unwrap();
    assert!(lost >= 1, "the kill landed while steps ran");
    let mut survivor = survivor;
    survivor.signal(libc::SIGTERM);
    survivor.wait_exit(Duration::from_secs(30)).await;
}
