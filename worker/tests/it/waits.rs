//! Waits across real worker processes: a worker `kill -9`ed while steps wait loses nothing.

use std::time::Duration;

use serde_json::json;
use trellis::domain::status::WaitStatus;
use trellis::store::waits::WaitFilter;
use trellis::testkit::procs::WorkerProc;
use trellis::testkit::{self as common, fresh_db, wait_for};

/// Ten tasks wait for an event on a worker that is then killed (SIGKILL): their waits and
/// steps are rows, so the event resolves them with no worker alive, and a new worker runs
/// them to the end — each step once.
#[tokio::test]
async fn a_killed_worker_loses_no_wait() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let mut ids = Vec::new();
    for i in 0..10 {
        let t = common::new_task(json!([
            {"id": "w", "tool": "wait_event", "parameters": {"key": "go"}},
            {"id": "after", "tool": "echo", "parameters": {"i": i, "got": "${w.output.n}"},
             "dependencies": ["w"]}
        ]));
        ids.push(store.submit_task(&t).await.unwrap().task_id);
    }
    let mut victim = WorkerProc::start(&db, &[]);
    let open = |store: trellis::store::Store| async move {
        store
            .list_waits(&WaitFilter {
                status: Some(WaitStatus::Open),
                limit: 100,
                ..Default::default()
            })
            .await
            .unwrap()
            .len()
    };
    wait_for("10 waits", Duration::from_secs(60), || async {
        (open(store.clone()).await == 10).then_some(())
    })
    .await;
    victim.signal(libc::SIGKILL);
    assert!(!victim.wait_exit(Duration::from_secs(10)).await.success());
    assert_eq!(
        store
            .post_event("default", "go", &json!({"n": 7}))
            .await
            .unwrap(),
        10
    );
    let _survivor = WorkerProc::start(&db, &[]);
    wait_for("every task to succeed", Duration::from_secs(60), || async {
        (store.count_tasks("succeeded").await.unwrap() == 10).then_some(())
    })
    .await;
    let (_, succeeded, not_exactly_once, _) = store.attempt_audit().await.unwrap();
    assert_eq!(succeeded, 20);
    assert_eq!(not_exactly_once, 0);
    for id in ids {
        let steps = store.list_steps(id).await.unwrap();
        let after = steps.iter().find(|s| s.step_key == "after").unwrap();
        assert_eq!(after.output.as_ref().unwrap()["got"], 7);
    }
}
