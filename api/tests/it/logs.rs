//! `[log] format = "json"`: every line `trellis-api` prints (with its in-process worker) is one
//! JSON object, requests carry an `x-request-id` into their log lines, and a configuration
//! error is reported the same way.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use trellis::testkit::fresh_db;

fn api(db_url: &str, extra: &[(&str, &str)]) -> Command {
    let cwd = std::env::temp_dir().join(format!("trellis-logs-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&cwd).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_trellis-api"));
    cmd.current_dir(&cwd)
        .env("DATABASE_URL", db_url)
        .env("APP_SERVER__PORT", "0")
        .env("APP_WORKER__POLL_MS", "100")
        .env("APP_LOG__FORMAT", "json")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

/// Every line of `text` parsed as a JSON object (panics naming the first line that is not).
fn json_lines(what: &str, text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| match serde_json::from_str::<Value>(l) {
            Ok(v) if v.is_object() => v,
            _ => panic!("a {what} line is not one JSON object: {l:?}"),
        })
        .collect()
}

/// SIGTERM, then what it printed on stderr (and stdout, when still ours) until it exited.
fn stop(mut child: Child) -> (String, String) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out).unwrap();
    }
    assert!(child.wait().unwrap().success());
    (out, err)
}

#[tokio::test]
async fn json_format_prints_only_json_objects() {
    let db = fresh_db().await;
    let mut child = api(&db.url, &[])
        .arg("--dev")
        .spawn()
        .expect("start trellis-api");
    let stdout = child.stdout.take().unwrap();
    let (first, rest) = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let line = line.expect("utf-8");
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|_| panic!("a stdout line is not JSON: {line:?}"));
            let listening = v["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("listening on "));
            seen.push(v);
            if listening {
                return (seen, lines);
            }
        }
        panic!("no listening notice; stdout was {seen:?}")
    })
    .await
    .unwrap();
    let base = first.last().unwrap()["message"]
        .as_str()
        .unwrap()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let http = reqwest::Client::new();

    let r = http
        .post(format!("{base}/api/v1/tasks"))
        .header("x-request-id", "req-logs-1")
        .json(&json!({"description": "logs", "plan": {"steps": [{"id": "s", "tool": "echo"}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    assert_eq!(r.headers()["x-request-id"], "req-logs-1");
    let id = r.json::<Value>().await.unwrap()["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    // a request without an id gets one
    let r = http.get(format!("{base}/nowhere")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
    assert!(r.headers().contains_key("x-request-id"));
    let start = Instant::now();
    while http
        .get(format!("{base}/api/v1/tasks/{id}"))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()["status"]
        != "succeeded"
    {
        assert!(start.elapsed() < Duration::from_secs(60), "task not done");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let (_, err) = stop(child);
    let rest: Vec<String> = rest.map_while(Result::ok).collect();
    json_lines("stdout", &rest.join("\n"));
    let logs = json_lines("stderr", &err);
    let access = logs
        .iter()
        .find(|l| {
            l["target"] == "trellis::access"
                && l["spans"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|s| s["request_id"] == "req-logs-1"))
        })
        .unwrap_or_else(|| panic!("no access line for req-logs-1 in {logs:?}"));
    assert_eq!(access["status"], 202, "{access}");
    assert!(access["latency_ms"].is_number(), "{access}");
    assert!(
        logs.iter().any(|l| l["message"] == "worker started"),
        "the in-process worker logs too: {logs:?}"
    );
}

#[test]
fn a_configuration_error_is_one_json_line() {
    let out = api("postgres://unused", &[("APP_WORKER__CONCURRENCY", "0")])
        .output()
        .expect("run trellis-api");
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    let lines = json_lines("stderr", &err);
    assert_eq!(lines.len(), 1, "{err}");
    assert_eq!(lines[0]["level"], "ERROR");
    let message = lines[0]["message"].as_str().unwrap();
    assert!(message.contains("worker.concurrency"), "{message}");
}

/// Text logs written to a pipe (a log file, a container's log) carry no colour codes: the
/// subscriber's default writes them whatever the output is.
#[tokio::test]
async fn text_logs_to_a_pipe_have_no_colour_codes() {
    let db = fresh_db().await;
    let mut child = api(&db.url, &[("APP_LOG__FORMAT", "text")])
        .env_remove("NO_COLOR")
        .arg("--dev")
        .spawn()
        .expect("start trellis-api");
    let stdout = child.stdout.take().unwrap();
    // the rest of stdout stays open until the process exits (what it prints as it stops must
    // not meet a closed pipe)
    let rest = tokio::task::spawn_blocking(move || {
        let mut seen = Vec::new();
        let mut lines = BufReader::new(stdout).lines();
        for line in lines.by_ref() {
            let line = line.expect("utf-8");
            if line.starts_with("listening on ") {
                return lines;
            }
            seen.push(line);
        }
        panic!("no listening notice; stdout was {seen:?}")
    })
    .await
    .unwrap();
    let (_, err) = stop(child);
    let rest: Vec<String> = rest.map_while(Result::ok).collect();
    assert!(
        !rest.concat().contains('\u{1b}'),
        "a colour code on stdout: {rest:?}"
    );
    assert!(
        err.contains("worker started"),
        "the text log has its lines: {err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "a colour code in a piped log: {err:?}"
    );
}
