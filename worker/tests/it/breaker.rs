//! The fleet-wide circuit breaker (recovery issue, acceptance 2) with two real `trellis-worker`
//! processes: 30 steps on a tool that is down. Once its circuit opens, the tool sees only
//! probes, one per cool-down, whatever the number of workers and waiting steps; when it comes
//! back, every step heals.

use trellis::testkit as common;
use trellis::testkit::procs;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use procs::WorkerProc;
use serde_json::json;
use trellis::testkit::faults::{FaultServer, Reply};
use trellis::testkit::wait_for;

const THRESHOLD: usize = 4;
const COOL_DOWN: Duration = Duration::from_secs(2);
const OUTAGE_AFTER_OPEN: Duration = Duration::from_secs(7);

#[tokio::test]
async fn two_workers_send_a_down_tool_only_probes_while_its_circuit_is_open() {
    let app = common::spawn_app().await;
    let faults = FaultServer::start().await;
    let up = Arc::new(AtomicBool::new(false));
    let is_up = up.clone();
    faults.route("down", move |s| {
        if is_up.load(Ordering::SeqCst) {
            Reply::echo(s)
        } else {
            Reply::status(503)
        }
    });
    common::register_tool(
        &app,
        "down",
        &faults.endpoint("down"),
        json!({
            // every outage counts at once (`confirm_failures` 1), so the circuit opens at the
            // THRESHOLD-th outage, which is where the test reads its opening
            "circuit_breaker": {"failure_threshold": THRESHOLD, "cool_down_secs": COOL_DOWN.as_secs_f64(),
                                "confirm_failures": 1},
            // enough attempts that no step gives up while the tool is down
            "retry": {"max_attempts": 100, "initial_interval_ms": 100, "max_interval_ms": 400}
        }),
    )
    .await;
    let env: &[(&str, &str)] = &[("APP_WORKER__CONCURRENCY", "2")];
    let _a = WorkerProc::start(&app.db, env);
    let _b = WorkerProc::start(&app.db, env);
    let mut ids = Vec::new();
    for _ in 0..30 {
        ids.push(
            app.submit(
                json!({"description": "down", "plan": {"steps": [{"id": "s", "tool": "down"}]}}),
            )
            .await,
        );
    }
    wait_for("the circuit to open", Duration::from_secs(60), || async {
        let (_, t) = app.get("/api/v1/tools/down").await;
        (t["circuit"]["state"] == "open").then_some(())
    })
    .await;
    tokio::time::sleep(OUTAGE_AFTER_OPEN).await;
    let came_back = db_now(&app).await;
    up.store(true, Ordering::SeqCst);

    // The calls, by when they were claimed (database clock): a step claimed after the failure
    // that opened the circuit committed sees it (the open bumps the tool registry's version,
    // which every claim returns), so from then on only probes call the tool. Steps claimed
    // before it may still be calling: what the four slots held, no more.
    let calls = call_attempts(&app).await;
    // the circuit opened when the THRESHOLD-th outage was recorded (its attempt finished just
    // before that transaction committed)
    let mut finished: Vec<_> = calls.iter().map(|(_, f)| *f).collect();
    finished.sort();
    let opened_at = finished[THRESHOLD - 1] + chrono::Duration::milliseconds(100);
    let before: Vec<_> = calls.iter().filter(|(s, ..)| *s <= opened_at).collect();
    assert!(
        before.len() <= THRESHOLD + 4,
        "{} calls claimed before the circuit opened",
        before.len()
    );
    let during: Vec<chrono::DateTime<chrono::Utc>> = calls
        .iter()
        .map(|(s, ..)| *s)
        .filter(|s| *s > opened_at && *s < came_back)
        .collect();
    // while open: probes only, each a whole cool-down after the one before
    let most = (OUTAGE_AFTER_OPEN.as_secs_f64() / COOL_DOWN.as_secs_f64()).ceil() as usize + 1;
    assert!(
        during.len() <= most,
        "{} calls in {OUTAGE_AFTER_OPEN:?} of {COOL_DOWN:?} cool-downs",
        during.len()
    );
    let cool_down = chrono::Duration::from_std(COOL_DOWN).unwrap();
    for w in during.windows(2) {
        assert!(
            w[1] - w[0] >= cool_down - chrono::Duration::milliseconds(50),
            "two calls {:?} apart while the circuit was open",
            w[1] - w[0]
        );
    }
    for id in &ids {
        let t = app.wait_done(*id, Duration::from_secs(60)).await;
        assert_eq!(t["status"], "succeeded", "{t}");
    }
    let (_, t) = app.get("/api/v1/tools/down").await;
    assert_eq!(t["circuit"]["state"], "closed", "{t}");
}

async fn db_now(app: &common::TestApp) -> chrono::DateTime<chrono::Utc> {
    sqlx::query_scalar("SELECT now()")
        .fetch_one(app.store().pool())
        .await
        .unwrap()
}

/// Every attempt that called the tool (not those an open circuit stopped before a call), as
/// (claimed, finished), oldest claim first.
async fn call_attempts(
    app: &common::TestApp,
) -> Vec<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>)> {
    sqlx::query_as(
        "SELECT started_at, finished_at FROM attempts
         WHERE tool = 'down' AND error_category IS DISTINCT FROM 'circuit_open'
         ORDER BY started_at",
    )
    .fetch_all(app.store().pool())
    .await
    .unwrap()
}
