//! The fleet-wide circuit breaker (recovery issue, acceptance 2) with two real `trellis-worker`
//! processes: 30 steps on a tool that is down. Once its circuit opens, the tool sees only
//! probes, one per cool-down, whatever the number of workers and waiting steps; when it comes
//! back, every step heals.

#[path = "../../tests/common/mod.rs"]
mod common;
mod procs;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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
            "circuit_breaker": {"failure_threshold": THRESHOLD, "cool_down_secs": COOL_DOWN.as_secs_f64()},
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
    let opened = Instant::now();
    let before_open = faults.calls("down").len();
    tokio::time::sleep(OUTAGE_AFTER_OPEN).await;
    let during: Vec<Instant> = faults
        .calls("down")
        .iter()
        .map(|c| c.at)
        .filter(|at| *at > opened)
        .collect();
    up.store(true, Ordering::SeqCst);

    // before the circuit opened: the threshold, and what the four slots sent while the first
    // failures were being recorded (a slot a failure frees claims the next step at once)
    assert!(
        before_open <= THRESHOLD + 4,
        "{before_open} calls before the circuit opened"
    );
    // while open: probes only, each a whole cool-down after the one before
    let most = (OUTAGE_AFTER_OPEN.as_secs_f64() / COOL_DOWN.as_secs_f64()).ceil() as usize + 1;
    assert!(
        during.len() <= most,
        "{} calls in {OUTAGE_AFTER_OPEN:?} of {COOL_DOWN:?} cool-downs",
        during.len()
    );
    for w in during.windows(2) {
        assert!(
            w[1] - w[0] >= COOL_DOWN - Duration::from_millis(50),
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
