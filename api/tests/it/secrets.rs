//! Tool credentials end to end, with the real `trellis-api` (its in-process worker, JSON logs
//! at debug): a secret named by a tool's header reaches the tool, a rotation takes effect on
//! the next call without a restart, and the value appears in no API answer, log line, event,
//! attempt, plan or stored row — even when the tool echoes it back.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};
use trellis::testkit::{fresh_db, wait_for};

const KEY: &str = "secrets-test-admin-key-0123456789";
const SEALING: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const FIRST: &str = "sk-first-7f3a91c0d2";
const SECOND: &str = "sk-second-4b8e22a6f1";

/// A tool that wants `X-Api-Key` to be the expected value, and echoes what it got (in its
/// output when right, in its error when wrong).
async fn tool(expected: Arc<Mutex<String>>) -> String {
    async fn call(
        State(want): State<Arc<Mutex<String>>>,
        h: HeaderMap,
    ) -> (StatusCode, Json<Value>) {
        let got = h
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        if got == *want.lock().unwrap() {
            (StatusCode::OK, Json(json!({"output": {"seen_key": got}})))
        } else {
            (
                StatusCode::UNAUTHORIZED,
                Json(json!({"error": {"message": format!("bad key {got}"), "retryable": false}})),
            )
        }
    }
    let app = Router::new()
        .route("/call", post(call))
        .with_state(expected);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/call", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

#[tokio::test]
async fn a_secret_reaches_its_tool_and_nothing_else() {
    let db = fresh_db().await;
    let expected = Arc::new(Mutex::new(FIRST.to_string()));
    let endpoint = tool(expected.clone()).await;
    let cwd = std::env::temp_dir().join(format!("trellis-secrets-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&cwd).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_trellis-api"))
        .arg("--dev")
        .current_dir(&cwd)
        .env("DATABASE_URL", &db.url)
        .env("APP_SERVER__PORT", "0")
        .env("APP_WORKER__POLL_MS", "100")
        .env("APP_LOG__FORMAT", "json")
        .env("RUST_LOG", "debug")
        .env("APP_AUTH__BOOTSTRAP_ADMIN_KEY", KEY)
        .env("APP_SECRETS__KEY", SEALING)
        .env("APP_TOOLS__ALLOW_CIDRS", "127.0.0.1/32")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // stderr (the logs) is drained as it comes: a full pipe would stall the server
    let mut stderr = child.stderr.take().unwrap();
    let logs = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = stderr.read_to_string(&mut all);
        all
    });
    let stdout = child.stdout.take().unwrap();
    let (base, mut rest) = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let mut seen = String::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            seen.push_str(&line);
            seen.push('\n');
            let v: Value = serde_json::from_str(&line).unwrap_or_default();
            if let Some(u) = v["message"]
                .as_str()
                .and_then(|m| m.strip_prefix("listening on "))
            {
                return (u.to_string(), seen);
            }
        }
        panic!("no listening line: {seen}")
    })
    .await
    .unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let auth = format!("Bearer {KEY}");
    let put = |v: &'static str| {
        http.put(format!("{base}/api/v1/secrets/search_key"))
            .header("authorization", &auth)
            .json(&json!({"value": v}))
            .send()
    };
    assert_eq!(put(FIRST).await.unwrap().status(), 204);
    let r = http
        .post(format!("{base}/api/v1/tools"))
        .header("authorization", &auth)
        .json(&json!({"id": "search", "endpoint": endpoint,
                      "headers": {"X-Api-Key": "${secret.search_key}", "X-Client": "trellis"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let mut answers = String::new();
    let run = async |answers: &mut String| {
        let r = http
            .post(format!("{base}/api/v1/tasks"))
            .header("authorization", &auth)
            .json(&json!({"description": "uses a secret", "limits": {"max_task_replans": 0},
                          "plan": {"steps": [{"id": "s", "tool": "search", "parameters": {"q": "x"}}]}}))
            .send()
            .await
            .unwrap();
        let id = r.json::<Value>().await.unwrap()["task_id"]
            .as_str()
            .unwrap()
            .to_string();
        let status = wait_for("the task", Duration::from_secs(30), || async {
            let v: Value = http
                .get(format!("{base}/api/v1/tasks/{id}"))
                .header("authorization", &auth)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let s = v["status"].as_str().unwrap().to_string();
            ["succeeded", "failed", "needs_intervention"]
                .contains(&s.as_str())
                .then_some(s)
        })
        .await;
        for path in ["", "/result", "/plan", "/attempts", "/events"] {
            let text = http
                .get(format!("{base}/api/v1/tasks/{id}{path}"))
                .header("authorization", &auth)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            answers.push_str(&text);
        }
        (id, status)
    };
    let (first, status) = run(&mut answers).await;
    assert_eq!(status, "succeeded", "{answers}");
    // the tool echoed the key: what is stored and shown is redacted
    assert!(answers.contains("[redacted]"), "{answers}");

    // rotated: the next call uses the new value, no restart
    *expected.lock().unwrap() = SECOND.to_string();
    assert_eq!(put(SECOND).await.unwrap().status(), 204);
    let (_, status) = run(&mut answers).await;
    assert_eq!(status, "succeeded", "{answers}");
    // a stale value is refused by the tool, and its error (which echoes it) is redacted too
    *expected.lock().unwrap() = "something else".to_string();
    let (_, status) = run(&mut answers).await;
    assert_ne!(status, "succeeded");

    for path in ["/api/v1/secrets", "/api/v1/tools/search", "/api/v1/tools"] {
        let text = http
            .get(format!("{base}{path}"))
            .header("authorization", &auth)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            text.contains("search_key") || path != "/api/v1/secrets",
            "{text}"
        );
        answers.push_str(&text);
    }
    // every stored row of every table, as text
    let dump: Vec<String> = sqlx::query_scalar(
        "SELECT row_to_json(x)::text FROM (
            SELECT to_jsonb(t) AS r FROM tasks t UNION ALL SELECT to_jsonb(s) FROM steps s
            UNION ALL SELECT to_jsonb(a) FROM attempts a UNION ALL SELECT to_jsonb(e) FROM events e
            UNION ALL SELECT to_jsonb(p) FROM plans p UNION ALL SELECT to_jsonb(d) FROM decisions d
            UNION ALL SELECT to_jsonb(o) FROM tools o UNION ALL SELECT to_jsonb(c) FROM llm_calls c
            UNION ALL SELECT to_jsonb(z) FROM secrets z) x",
    )
    .fetch_all(db.store.pool())
    .await
    .unwrap();
    let stored = dump.join("\n");
    assert!(stored.contains(&first));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    rest.push_str(&logs.join().unwrap());
    assert!(rest.lines().count() > 20, "debug logs were written");
    for secret in [FIRST, SECOND] {
        assert!(
            !answers.contains(secret),
            "an API answer holds the secret: {answers}"
        );
        assert!(!stored.contains(secret), "a stored row holds the secret");
        assert!(!rest.contains(secret), "a log line holds the secret");
    }
}
