//! Crash and shutdown tests against real `trellis-worker` processes.

use trellis::testkit as common;
use trellis::testkit::procs;

use std::sync::Arc;
use std::time::Duration;

use common::ToolServer;
use procs::{WorkerProc, terminal_tasks};
use serde_json::{Value, json};
use trellis::store::Store;
use trellis::testkit::{fresh_db, wait_for};

async fn wait_all_succeeded(store: &Store, n: i64, limit: Duration) {
    wait_for(&format!("{n} tasks to succeed"), limit, || async {
        (store.count_tasks("succeeded").await.unwrap() == n).then_some(())
    })
    .await;
}

/// Acceptance 4: two worker processes, 20 tasks × 5 steps of a 300 ms HTTP tool, `kill -9` one
/// mid-run. Every task succeeds, every step has exactly one successful attempt, nothing stays
/// running, and the extra tool calls are at most what the killed worker held.
#[tokio::test]
async fn kill_9_loses_nothing() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let server = ToolServer::echoing_step(Duration::from_millis(300)).await;
    common::add_http_tool(&store, "slow", &server).await;
    for _ in 0..20 {
        store
            .submit_task(&common::new_task(json!([
                {"id": "s1", "tool": "slow"},
                {"id": "s2", "tool": "slow", "dependencies": ["s1"]},
                {"id": "s3", "tool": "slow", "dependencies": ["s1"]},
                {"id": "s4", "tool": "slow", "dependencies": ["s2"]},
                {"id": "s5", "tool": "slow", "dependencies": ["s3", "s4"], "parameters": {"prev": "${s4.output.step}"}}
            ])))
            .await
            .unwrap();
    }
    let mut victim = WorkerProc::start(&db, &[]);
    let survivor = WorkerProc::start(&db, &[]);
    wait_for(
        "the victim to hold steps",
        Duration::from_secs(60),
        || async { (store.running_on(victim.id).await.unwrap() >= 3).then_some(()) },
    )
    .await;
    victim.signal(libc::SIGKILL);
    let status = victim.wait_exit(Duration::from_secs(10)).await;
    assert!(!status.success());

    wait_all_succeeded(&store, 20, Duration::from_secs(120)).await;
    let (_, succeeded, not_exactly_once, _) = store.attempt_audit().await.unwrap();
    assert_eq!(succeeded, 100);
    assert_eq!(
        not_exactly_once, 0,
        "every step has exactly one successful attempt"
    );
    assert_eq!(store.count_steps("running").await.unwrap(), 0);
    let lost = store
        .count_attempts_in_category("worker_lost")
        .await
        .unwrap();
    assert!(
        lost >= 1,
        "the kill landed mid-step, so something was rescued"
    );
    let calls = server.calls().len() as i64;
    assert!(
        calls - 100 <= lost,
        "{calls} tool calls for 100 steps, but the killed worker held only {lost}"
    );
    for ((task, step), n) in server.calls_per_step() {
        assert!(n <= 2, "{task}/{step} called {n} times");
    }
    survivor.signal(libc::SIGTERM);
    let mut survivor = survivor;
    assert!(survivor.wait_exit(Duration::from_secs(30)).await.success());
}

/// Acceptance 7 (grace exceeded): SIGTERM while long steps run — the worker exits cleanly, no
/// step is left running, no attempt is burnt; another worker then runs them as attempt 1.
#[tokio::test]
async fn sigterm_releases_unfinished_steps_without_burning_attempts() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let steps: Vec<Value> = (1..=4)
        .map(|i| json!({"id": format!("s{i}"), "tool": "sleep", "parameters": {"ms": 1500}}))
        .collect();
    let t = store
        .submit_task(&common::new_task(Value::Array(steps)))
        .await
        .unwrap();
    let mut w = WorkerProc::start(&db, &[("APP_WORKER__SHUTDOWN_GRACE_SECS", "0")]);
    wait_for("4 steps running", Duration::from_secs(30), || async {
        (store.running_on(w.id).await.unwrap() == 4).then_some(())
    })
    .await;
    w.signal(libc::SIGTERM);
    assert!(
        w.wait_exit(Duration::from_secs(20)).await.success(),
        "clean exit"
    );
    assert_eq!(store.count_steps("running").await.unwrap(), 0);
    assert_eq!(store.count_steps("ready").await.unwrap(), 4);
    assert!(
        store
            .list_attempts(t.task_id, trellis::store::Page::ALL)
            .await
            .unwrap()
            .is_empty(),
        "no attempt burnt"
    );
    assert_eq!(store.count_events("step_released").await.unwrap(), 4);

    let _w2 = WorkerProc::start(&db, &[]);
    wait_all_succeeded(&store, 1, Duration::from_secs(30)).await;
    let attempts = store
        .list_attempts(t.task_id, trellis::store::Page::ALL)
        .await
        .unwrap();
    assert_eq!(attempts.len(), 4);
    assert!(
        attempts
            .iter()
            .all(|a| a.attempt == 1 && a.status == "succeeded")
    );
}

/// Acceptance 7 (within grace): SIGTERM lets in-flight steps finish, claims nothing new.
#[tokio::test]
async fn sigterm_lets_in_flight_steps_finish_within_the_grace_period() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let t = store
        .submit_task(&common::new_task(json!([
            {"id": "a", "tool": "sleep", "parameters": {"ms": 700}},
            {"id": "b", "tool": "sleep", "parameters": {"ms": 700}},
            {"id": "c", "tool": "echo", "dependencies": ["a", "b"]}
        ])))
        .await
        .unwrap();
    let mut w = WorkerProc::start(&db, &[("APP_WORKER__SHUTDOWN_GRACE_SECS", "30")]);
    wait_for("2 steps running", Duration::from_secs(30), || async {
        (store.running_on(w.id).await.unwrap() == 2).then_some(())
    })
    .await;
    w.signal(libc::SIGTERM);
    assert!(
        w.wait_exit(Duration::from_secs(30)).await.success(),
        "clean exit"
    );
    let steps = store.list_steps(t.task_id).await.unwrap();
    let status: Vec<(&str, &str)> = steps
        .iter()
        .map(|s| (s.step_key.as_str(), s.status.as_str()))
        .collect();
    assert_eq!(
        status,
        [("a", "succeeded"), ("b", "succeeded"), ("c", "ready")]
    );
    let attempts = store
        .list_attempts(t.task_id, trellis::store::Page::ALL)
        .await
        .unwrap();
    assert_eq!(attempts.len(), 2, "the draining worker started nothing new");
    assert_eq!(store.count_steps("running").await.unwrap(), 0);
}

/// Issue 3, acceptance 3, with real processes: `kill -9` the worker twice while a dead tool
/// goes through the whole recovery; after restarts, the counters are those of an
/// uninterrupted run.
#[tokio::test]
async fn kill_9_during_recovery_keeps_counters_exact() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let server =
        ToolServer::start(Duration::from_millis(150), Arc::new(|_| (503, json!({})))).await;
    common::add_http_tool(&store, "dead", &server).await;
    let t = store
        .submit_task(&common::new_task(json!([{"id": "step_1", "tool": "dead"}])))
        .await
        .unwrap();
    let env: &[(&str, &str)] = &[
        ("APP_WORKER__LEASE_SECS", "1"),
        ("APP_WORKER__RETRY_BACKOFF_MS", "50"),
        // the recovery tiers alone (the breaker would make the steps wait for its cool-down)
        ("APP_WORKER__CIRCUIT_FAILURE_THRESHOLD", "0"),
    ];
    let failures = |n: i64| {
        let store = store.clone();
        let id = t.task_id;
        async move {
            wait_for(
                &format!("{n} tool failures"),
                Duration::from_secs(60),
                || async {
                    (store.recovery_fingerprint(id).await.unwrap().tool_failures >= n).then_some(())
                },
            )
            .await
        }
    };
    let mut w1 = WorkerProc::start(&db, env);
    failures(1).await;
    w1.signal(libc::SIGKILL);
    w1.wait_exit(Duration::from_secs(10)).await;
    let mut w2 = WorkerProc::start(&db, env);
    failures(4).await;
    w2.signal(libc::SIGKILL);
    w2.wait_exit(Duration::from_secs(10)).await;
    let _w3 = WorkerProc::start(&db, env);
    wait_for("the task to end", Duration::from_secs(60), || async {
        let s = store.get_task(t.task_id).await.unwrap().status;
        (s == "needs_intervention" || s == "failed" || s == "succeeded").then_some(())
    })
    .await;
    let fp = store.recovery_fingerprint(t.task_id).await.unwrap();
    assert_eq!(fp.status, "needs_intervention", "{fp:?}");
    assert_eq!(
        (fp.task_replan_count, fp.single_step_repair_count),
        (1, 1),
        "{fp:?}"
    );
    assert_eq!(fp.tool_failures, 7, "{fp:?}");
    assert_eq!(fp.plan_version, 3);
    assert_eq!(fp.consecutive_failures, 3);
    let actions: Vec<&str> = fp.recoveries.iter().map(|(_, a)| a.as_str()).collect();
    assert_eq!(
        actions,
        [
            "retry_with_params",
            "retry_with_params",
            "repair",
            "replan:replan_from_step",
            "retry_with_params",
            "retry_with_params",
            "intervention"
        ],
        "{fp:?}"
    );
}

/// Peak resident set of a process, in kB (`VmHWM`).
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

/// Security acceptance 4: a tool answering 50 MB and one answering a NUL string each end
/// their task, and the worker process stays alive with a peak RSS under 100 MB.
#[tokio::test]
async fn hostile_answers_end_their_tasks_and_the_worker_stays_small() {
    let db = fresh_db().await;
    let store = db.store.clone();
    // 50 MB, streamed by the server without building it in memory
    let huge = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = axum::Router::new().fallback(|| async {
            let chunk = axum::body::Bytes::from(vec![b'x'; 1 << 20]);
            let stream =
                futures::stream::iter((0..50).map(move |_| Ok::<_, std::io::Error>(chunk.clone())));
            axum::body::Body::from_stream(stream)
        });
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        addr
    };
    let nul = ToolServer::start(
        Duration::ZERO,
        Arc::new(|_| (200, json!({"output": "a\u{0}b"}))),
    )
    .await;
    store
        .create_tool(&common::http_tool("huge", format!("http://{huge}/huge")))
        .await
        .unwrap();
    store
        .create_tool(&common::http_tool("nul", nul.endpoint("nul")))
        .await
        .unwrap();
    let mut ids = Vec::new();
    for tool in ["huge", "nul", "huge", "nul"] {
        let t = store
            .submit_task(&common::new_task(json!([{"id": "a", "tool": tool}])))
            .await
            .unwrap();
        ids.push(t.task_id);
    }
    let mut worker = WorkerProc::start(&db, &[]);
    wait_for("every task to end", Duration::from_secs(60), || async {
        (terminal_tasks(&store).await == 4).then_some(())
    })
    .await;
    assert_eq!(store.count_tasks("succeeded").await.unwrap(), 0);
    assert!(
        worker.child.try_wait().unwrap().is_none(),
        "the worker died"
    );
    let peak = peak_rss_kb(worker.child.id());
    assert!(peak < 100 * 1024, "peak RSS {peak} kB");
    assert_eq!(
        store
            .count_attempts_in_category("output_too_large")
            .await
            .unwrap()
            + store
                .count_attempts_in_category("invalid_output")
                .await
                .unwrap(),
        store.row_counts().await.unwrap()["attempts"],
        "every attempt failed for its answer"
    );
    assert!(
        store
            .count_attempts_in_category("output_too_large")
            .await
            .unwrap()
            >= 2
    );
    assert!(
        store
            .count_attempts_in_category("invalid_output")
            .await
            .unwrap()
            >= 2
    );
    worker.signal(libc::SIGTERM);
    assert!(worker.wait_exit(Duration::from_secs(30)).await.success());
}

/// Security acceptance 5: the database rejects every attempt insert for 15 s while two
/// worker processes run 20 tasks. Work whose outcome could not be recorded is not kept alive
/// by heartbeats: within lease + 60 s of the database recovering, every task is terminal and
/// no step is running.
#[tokio::test]
async fn work_that_cannot_be_recorded_is_not_kept_alive() {
    let db = fresh_db().await;
    let store = db.store.clone();
    let server = ToolServer::echoing_step(Duration::from_millis(100)).await;
    common::add_http_tool(&store, "slow", &server).await;
    for _ in 0..20 {
        store
            .submit_task(&common::new_task(json!([
                {"id": "s1", "tool": "slow"},
                {"id": "s2", "tool": "slow", "dependencies": ["s1"]},
                {"id": "s3", "tool": "slow", "dependencies": ["s2"]},
                {"id": "s4", "tool": "slow", "dependencies": ["s3"]}
            ])))
            .await
            .unwrap();
    }
    let a = WorkerProc::start(&db, &[]);
    let b = WorkerProc::start(&db, &[]);
    wait_for("work under way", Duration::from_secs(60), || async {
        (store.count_steps("running").await.unwrap() >= 4).then_some(())
    })
    .await;
    sqlx::raw_sql(
        "CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS
             $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'; END $$;
         CREATE TRIGGER full_disk BEFORE INSERT ON attempts FOR EACH ROW EXECUTE FUNCTION full_disk();",
    )
    .execute(store.pool())
    .await
    .unwrap();
    // the outage lasts 15 s of wall time: that is the scenario, not a wait for a condition
    tokio::time::sleep(Duration::from_secs(15)).await;
    sqlx::raw_sql("DROP TRIGGER full_disk ON attempts; DROP FUNCTION full_disk();")
        .execute(store.pool())
        .await
        .unwrap();
    let lease = Duration::from_secs(2);
    wait_for(
        "every task terminal and nothing running",
        lease + Duration::from_secs(60),
        || async {
            let done = terminal_tasks(&store).await == 20;
            let running = store.count_steps("running").await.unwrap();
            (done && running == 0).then_some(())
        },
    )
    .await;
    for w in [a, b] {
        assert!(w.child.id() > 0);
        w.signal(libc::SIGTERM);
        let mut w = w;
        assert!(w.wait_exit(Duration::from_secs(30)).await.success());
    }
}
