//! Chaos under load: two real `trellis-worker` processes run a stream of tasks while their
//! PostgreSQL server is restarted (fast and immediate shutdowns) and their sessions are
//! terminated, twelve times. Nothing may be lost, stuck or done twice.
//!
//! The test owns its cluster (restarting the shared one would disturb every other test).

use trellis::testkit as common;
use trellis::testkit::procs;

use std::time::Duration;

use common::ToolServer;
use procs::{WorkerProc, terminal_tasks};
use serde_json::json;
use trellis::devpg::{Shutdown, TempPostgres};
use trellis::store::Store;
use trellis::testkit::{fresh_db_on, wait_for};

/// One disruption of the database under the workers' feet.
#[derive(Debug, Clone, Copy)]
enum Disruption {
    Restart(Shutdown),
    TerminateWorkerSessions,
}

const ROUNDS: [Disruption; 3] = [
    Disruption::Restart(Shutdown::Fast),
    Disruption::Restart(Shutdown::Immediate),
    Disruption::TerminateWorkerSessions,
];

/// Ends every session the worker processes hold (they name themselves `trellis-worker`);
/// returns how many were ended.
async fn terminate_worker_sessions(store: &Store) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
           FROM pg_stat_activity WHERE application_name = 'trellis-worker'",
    )
    .fetch_one(store.pool())
    .await
    .unwrap()
}

/// Steps with more than one successful attempt: a double success.
async fn double_successes(store: &Store) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT step_id FROM attempts WHERE status = 'succeeded'
                                GROUP BY step_id HAVING count(*) > 1) d",
    )
    .fetch_one(store.pool())
    .await
    .unwrap()
}

/// Attempts recorded as succeeded so far.
async fn successes(store: &Store) -> Option<i64> {
    Some(store.attempt_audit().await.ok()?.1)
}

/// Security acceptance 6: twelve disruptions (fast restart, immediate restart, worker sessions
/// terminated, four times each) while tasks keep arriving and steps are running. Afterwards
/// every task is terminal, no step is running, no step succeeded twice, and both workers are
/// still alive and stop cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restarts_and_terminated_sessions_lose_nothing() {
    let mut pg = TempPostgres::start().expect("a cluster of our own");
    let db = fresh_db_on(&pg.url()).await;
    let store = db.store.clone();
    let server = ToolServer::echoing_step(Duration::from_millis(150)).await;
    common::add_http_tool(&store, "slow", &server).await;
    let workers = [WorkerProc::start(&db, &[]), WorkerProc::start(&db, &[])];

    let mut submitted = 0;
    let mut terminated = 0;
    let mut recorded = 0;
    for (round, disruption) in ROUNDS.iter().cycle().take(12).enumerate() {
        // keep the load up: four more 4-step tasks before each disruption
        for _ in 0..4 {
            store
                .submit_task(&common::new_task(json!([
                    {"id": "s1", "tool": "slow"},
                    {"id": "s2", "tool": "slow", "dependencies": ["s1"]},
                    {"id": "s3", "tool": "slow", "dependencies": ["s1"]},
                    {"id": "s4", "tool": "slow", "dependencies": ["s2", "s3"],
                     "parameters": {"prev": "${s2.output.step}"}}
                ])))
                .await
                .unwrap();
            submitted += 1;
        }
        // under load: the workers have recorded new work since the last disruption (so they
        // reconnected) and hold steps now
        recorded = wait_for(
            &format!("progress and running steps before disruption {round}"),
            Duration::from_secs(60),
            || async {
                let done = successes(&store).await?;
                let running = store.count_steps("running").await.ok()?;
                (done > recorded && running >= 2).then_some(done)
            },
        )
        .await;
        assert_eq!(
            store.running_index_disagreements().await.unwrap(),
            0,
            "running_steps lists exactly the running steps, mid-run (before disruption {round})"
        );
        // one statement, one snapshot: every committed state keeps the claim queue's invariant
        let queue = store.claim_queue_disagreements().await.unwrap();
        assert!(
            queue.is_empty(),
            "the claim queue equals its definition, mid-run (before disruption {round}): {queue:?}"
        );
        match disruption {
            Disruption::Restart(mode) => {
                tokio::task::block_in_place(|| pg.restart(*mode)).expect("restart postgres")
            }
            Disruption::TerminateWorkerSessions => {
                terminated += terminate_worker_sessions(&store).await;
            }
        }
    }
    assert!(terminated > 0, "the terminations hit worker sessions");

    wait_for(
        "every task terminal and nothing running",
        Duration::from_secs(120),
        || async {
            let done = terminal_tasks(&store).await == submitted;
            let running = store.count_steps("running").await.ok()?;
            (done && running == 0).then_some(())
        },
    )
    .await;
    assert_eq!(double_successes(&store).await, 0, "no step succeeded twice");
    assert_eq!(
        store.running_index_disagreements().await.unwrap(),
        0,
        "running_steps is empty when nothing runs"
    );
    let queue = store.claim_queue_disagreements().await.unwrap();
    assert!(
        queue.is_empty(),
        "the claim queue equals its definition at the end: {queue:?}"
    );
    let lost = store
        .count_attempts_in_category("worker_lost")
        .await
        .unwrap();
    let (attempts, succeeded, _, _) = store.attempt_audit().await.unwrap();
    eprintln!(
        "chaos: {submitted} tasks, {} tool calls for {} steps, {attempts} attempts ({succeeded} succeeded, {lost} rescued), {terminated} sessions terminated",
        server.calls().len(),
        submitted * 4
    );
    assert_eq!(
        store.count_tasks("succeeded").await.unwrap(),
        submitted,
        "the tool never fails, so every task succeeds despite the disruptions"
    );
    for mut w in workers {
        assert!(
            w.child.try_wait().unwrap().is_none(),
            "worker {} survived every disruption",
            w.id
        );
        w.signal(libc::SIGTERM);
        assert!(w.wait_exit(Duration::from_secs(30)).await.success());
    }
}
