//! README's command that runs the service: `trellis-api --dev` with no DATABASE_URL starts a throwaway
//! PostgreSQL and an in-process worker, serves the API, and cleans up on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[tokio::test]
async fn dev_mode_runs_a_task_end_to_end_and_cleans_up() {
    let cwd = std::env::temp_dir().join(format!("trellis-dev-{}", std::process::id()));
    std::fs::create_dir_all(&cwd).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_trellis-api"))
        .arg("--dev")
        .current_dir(&cwd)
        .env_remove("DATABASE_URL")
        .env_remove("APP_DATABASE__URL")
        .env("APP_SERVER__PORT", "0")
        .env("APP_WORKER__POLL_MS", "100")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start trellis-api --dev");
    let stdout = child.stdout.take().unwrap();
    let (before, line) = tokio::task::spawn_blocking(move || {
        let mut before = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("utf-8");
            if line.starts_with("listening on ") {
                return (before, line);
            }
            before.push(line);
        }
        panic!("no listening line; stdout was {before:?}")
    })
    .await
    .unwrap();
    // no key configured: it runs without access control, and says so first
    assert!(
        before.iter().any(|l| l.contains("access control is OFF")),
        "{before:?}"
    );
    let base = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    let http = reqwest::Client::new();

    let health: Value = http
        .get(format!("{base}/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["status"], "ok");
    let ready = http.get(format!("{base}/ready")).send().await.unwrap();
    assert_eq!(ready.status().as_u16(), 200);

    let submitted: Value = http
        .post(format!("{base}/api/v1/tasks"))
        .json(&json!({"description": "demo", "plan": {"steps": [
            {"id": "step_1", "tool": "echo", "parameters": {"hello": "world"}},
            {"id": "step_2", "tool": "echo", "dependencies": ["step_1"], "parameters": {"said": "${step_1.output.hello}"}}
        ]}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = submitted["task_id"].as_str().unwrap().to_string();
    let start = Instant::now();
    let result = loop {
        let r: Value = http
            .get(format!("{base}/api/v1/tasks/{id}/result"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if r["status"] == "succeeded" {
            break r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "task did not finish: {r}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(result["outputs"]["step_2"], json!({"said": "world"}));

    // SIGTERM: graceful exit, and the throwaway cluster is gone
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "api did not exit"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}");
    let port = base.rsplit(':').next().unwrap();
    assert!(
        std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_err(),
        "API port still open"
    );
}
