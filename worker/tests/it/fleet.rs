//! The worker fleet as `GET /api/v1/workers` shows it, with real `trellis-worker` processes.

use trellis::testkit as common;
use trellis::testkit::procs;

use std::collections::BTreeSet;
use std::time::Duration;

use common::ToolServer;
use procs::WorkerProc;
use serde_json::{Value, json};
use trellis::testkit::wait_for;

/// The worker ids the API lists, and the whole answer.
async fn listed(app: &common::TestApp) -> (BTreeSet<String>, Vec<Value>) {
    let (status, v) = app.get("/api/v1/workers").await;
    assert_eq!(status, 200, "{v}");
    let rows = v.as_array().expect("an array").clone();
    let ids = rows
        .iter()
        .map(|w| w["worker_id"].as_str().unwrap().to_string())
        .collect();
    (ids, rows)
}

/// Acceptance 5: every live worker is listed with its heartbeat, concurrency and what it holds;
/// a `kill -9`ed worker disappears once its heartbeat is older than its lease (2 s here), a
/// worker that stops cleanly at once.
#[tokio::test]
async fn the_fleet_lists_live_workers_and_forgets_dead_ones() {
    let app = common::spawn_app().await;
    let server = ToolServer::echoing_step(Duration::from_millis(1500)).await;
    common::register_tool(&app, "slow", &server.endpoint("slow"), json!({})).await;
    let (_, before) = listed(&app).await;
    assert!(before.is_empty(), "no worker yet: {before:?}");

    let mut victim = WorkerProc::start(&app.db, &[]);
    let mut survivor = WorkerProc::start(&app.db, &[]);
    let both: BTreeSet<String> = [victim.id, survivor.id]
        .iter()
        .map(|id| id.to_string())
        .collect();
    wait_for("both workers listed", Duration::from_secs(30), || async {
        (listed(&app).await.0 == both).then_some(())
    })
    .await;

    // work in flight shows at the next heartbeat (every lease / 3)
    for _ in 0..6 {
        app.submit(
            json!({"description": "slow", "plan": {"steps": [{"id": "s", "tool": "slow"}]}}),
        )
        .await;
    }
    let rows = wait_for(
        "a heartbeat reporting work",
        Duration::from_secs(30),
        || async {
            let (_, rows) = listed(&app).await;
            rows.iter()
                .any(|w| w["in_flight"].as_i64().unwrap() > 0)
                .then_some(rows)
        },
    )
    .await;
    for w in &rows {
        assert_eq!(w["concurrency"], 8, "{w}");
        assert!(w["host"].as_str().is_some_and(|h| !h.is_empty()), "{w}");
        for k in ["started_at", "last_heartbeat_at"] {
            let at = w[k].as_str().unwrap_or_default();
            assert!(chrono::DateTime::parse_from_rfc3339(at).is_ok(), "{k}: {w}");
        }
    }

    victim.signal(libc::SIGKILL);
    assert!(!victim.wait_exit(Duration::from_secs(10)).await.success());
    let alone: BTreeSet<String> = [survivor.id.to_string()].into();
    // the victim's last heartbeat ages past its 2 s lease
    wait_for(
        "the killed worker to age out",
        Duration::from_secs(30),
        || async { (listed(&app).await.0 == alone).then_some(()) },
    )
    .await;

    survivor.signal(libc::SIGTERM);
    assert!(survivor.wait_exit(Duration::from_secs(30)).await.success());
    let (ids, _) = listed(&app).await;
    assert!(ids.is_empty(), "a stopped worker is not listed: {ids:?}");
}

/// `[log] format = "json"`: every line the worker prints is one JSON object, and what a step
/// logs carries its task, step and attempt spans.
#[tokio::test]
async fn the_worker_prints_json_lines_with_task_step_attempt_spans() {
    use std::io::Read;
    let db = trellis::testkit::fresh_db().await;
    let id = db
        .store
        .submit_task(&common::new_task(json!([{"id": "s1", "tool": "echo"}])))
        .await
        .unwrap()
        .task_id;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_trellis-worker"))
        .env("DATABASE_URL", &db.url)
        .env("APP_LOG__FORMAT", "json")
        .env("APP_WORKER__POLL_MS", "100")
        .env("RUST_LOG", "info,trellis::worker=debug")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start trellis-worker");
    wait_for("the task to succeed", Duration::from_secs(60), || async {
        (db.store.count_tasks("succeeded").await.unwrap() == 1).then_some(())
    })
    .await;
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(child.wait().unwrap().success());
    let parse = |l: &str| -> Value {
        serde_json::from_str::<Value>(l)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| panic!("not one JSON object: {l:?}"))
    };
    let notices: Vec<Value> = out.lines().map(parse).collect();
    assert!(
        notices.iter().any(|n| n["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("worker ") && m.ends_with(" started"))),
        "{out}"
    );
    let logs: Vec<Value> = err.lines().map(parse).collect();
    let in_attempt = logs
        .iter()
        .find(|l| {
            let names: Vec<&str> = l["spans"]
                .as_array()
                .map(|s| s.iter().filter_map(|s| s["name"].as_str()).collect())
                .unwrap_or_default();
            names == ["task", "step", "attempt"]
        })
        .unwrap_or_else(|| panic!("no line inside task → step → attempt: {err}"));
    let spans = in_attempt["spans"].as_array().unwrap();
    assert_eq!(spans[0]["task_id"], id.to_string());
    assert_eq!(spans[1]["step_id"], "s1");
    assert_eq!(spans[2]["attempt"], 1);
}

/// Acceptance 3, the worker's side: `[worker] metrics_port` serves the worker's own
/// histograms (claim, queue lag, step duration by tool, completion batch, decision by kind)
/// and counters (attempts by tool and outcome, recoveries by tier and strategy).
#[tokio::test]
async fn a_worker_serves_its_histograms_and_counters() {
    let app = common::spawn_app().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _w = WorkerProc::start(&app.db, &[("APP_WORKER__METRICS_PORT", &port.to_string())]);
    let id = app
        .submit(
            json!({"description": "fails once, then runs a second step", "plan": {"steps": [
            {"id": "f", "tool": "flaky", "parameters": {"fail_times": 1}},
            {"id": "e", "tool": "echo", "dependencies": ["f"]}]}}),
        )
        .await;
    let done = app.wait_done(id, Duration::from_secs(60)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let url = format!("http://127.0.0.1:{port}/metrics");
    let text = wait_for("the worker's metrics", Duration::from_secs(30), || async {
        let r = app.http.get(&url).send().await.ok()?;
        let text = r.text().await.ok()?;
        // the evaluation decision is the last thing the worker records
        text.contains("trellis_attempts_total").then_some(text)
    })
    .await;
    let families: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("trellis_"))
        .collect();
    assert!(families.len() >= 8, "{families:?}");
    let has = |name: &str, labels: &[&str]| {
        text.lines()
            .any(|l| l.starts_with(name) && labels.iter().all(|x| l.contains(x)))
    };
    for (name, labels) in [
        ("trellis_claim_duration_seconds_bucket", &[][..]),
        ("trellis_queue_lag_seconds_count", &[]),
        ("trellis_step_duration_seconds_bucket", &["tool=\"flaky\""]),
        ("trellis_completion_batch_size_count", &[]),
        (
            "trellis_decision_duration_seconds_bucket",
            &["kind=\"step_reflection\""],
        ),
        (
            "trellis_attempts_total",
            &["tool=\"flaky\"", "outcome=\"tool_error\""],
        ),
        (
            "trellis_attempts_total",
            &["tool=\"echo\"", "outcome=\"succeeded\""],
        ),
        ("trellis_recoveries_total", &["tier=\"1\""]),
    ] {
        assert!(has(name, labels), "{name} {labels:?} in\n{text}");
    }
}
