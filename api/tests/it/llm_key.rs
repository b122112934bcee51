//! The LLM API key is sent to the model and shown nowhere else: not in a log line of the real
//! `trellis-api --dev` process (debug logging on), not in an event, not in an error body —
//! even when the model server echoes the key back in its error messages.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};

use trellis::testkit as common;

const KEY: &str = "sk-live-Qx7fTr9-never-show-me";

/// A chat-completions server that rejects every request and, like some providers, quotes the
/// credential it was given.
async fn echoing_model() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let s = seen.clone();
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |headers: HeaderMap| {
            let s = s.clone();
            async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                s.lock().unwrap().push(auth.clone());
                (
                    StatusCode::UNAUTHORIZED,
                    axum::Json(
                        json!({"error": {"message": format!("Incorrect API key provided: {auth}"),
                                                "type": "invalid_request_error"}}),
                    ),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, seen)
}

async fn text(http: &reqwest::Client, url: String) -> String {
    http.get(url).send().await.unwrap().text().await.unwrap()
}

#[tokio::test]
async fn the_api_key_is_in_no_log_line_event_or_error_body() {
    let (model, seen) = echoing_model().await;
    let api = common::DevApi::start(
        "key",
        &[
            ("APP_LLM__BASE_URL", &model),
            ("APP_LLM__API_KEY", KEY),
            ("APP_LLM__MAX_RETRIES", "1"),
            ("APP_LLM__RETRY_BACKOFF_MS", "10"),
            ("RUST_LOG", "debug"),
        ],
    )
    .await;
    let base = api.base.clone();
    let http = reqwest::Client::new();
    let submit = |body: Value| {
        let http = http.clone();
        let url = format!("{base}/api/v1/tasks");
        async move {
            let r = http.post(url).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let mut seen_text = Vec::new();

    // a description-only task (the plan decision meets the echoing model)
    let (code, body) = submit(json!({"description": "plan me"})).await;
    assert_eq!(code, 202, "{body}");
    let planned: Value = serde_json::from_str(&body).unwrap();
    // a task whose step fails (step reflection, then overall reflection meet it)
    let (code, body) = submit(json!({"description": "fail me", "plan": {"steps": [
        {"id": "step_1", "tool": "fail", "parameters": {"message": "boom", "category": "tool_error"}}]}}))
    .await;
    assert_eq!(code, 202, "{body}");
    let failing: Value = serde_json::from_str(&body).unwrap();
    // error bodies
    for bad in [
        json!({"description": ""}),
        json!({"description": "x", "plan": {"steps": []}}),
        json!({"description": "x", "limits": {"max_llm_calls": -5}}),
    ] {
        let (code, body) = submit(bad).await;
        assert!((400..500).contains(&code), "{code} {body}");
        seen_text.push(body);
    }

    let mut statuses = Vec::new();
    for t in [&planned, &failing] {
        let id = t["task_id"].as_str().unwrap();
        let start = Instant::now();
        let status = loop {
            let v: Value =
                serde_json::from_str(&text(&http, format!("{base}/api/v1/tasks/{id}")).await)
                    .unwrap();
            let s = v["status"].as_str().unwrap().to_string();
            if ["failed", "needs_intervention", "succeeded"].contains(&s.as_str()) {
                break s;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "stuck: {v}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        statuses.push(status);
        for path in [
            "",
            "/result",
            "/events",
            "/reflections",
            "/plan",
            "/attempts",
        ] {
            seen_text.push(text(&http, format!("{base}/api/v1/tasks/{id}{path}")).await);
        }
    }
    assert_eq!(statuses, ["failed", "needs_intervention"]);
    seen_text.push(text(&http, format!("{base}/metrics")).await);
    seen_text.push(text(&http, format!("{base}/api/v1/stats/recovery")).await);
    seen_text.push(
        text(
            &http,
            format!(
                "{base}/api/v1/tasks/{}/nope",
                planned["task_id"].as_str().unwrap()
            ),
        )
        .await,
    );

    let logs = api.stop().await;

    // the key was used ...
    let auths = seen.lock().unwrap().clone();
    assert!(auths.len() >= 3, "{auths:?}");
    assert!(auths.iter().all(|a| a == &format!("Bearer {KEY}")));
    // ... the model's echo reached the task's errors, redacted ...
    let all = seen_text.join("\n");
    assert!(all.contains("planning failed"), "{all}");
    assert!(
        all.contains("[redacted]"),
        "the echoed key was not redacted: {all}"
    );
    assert!(
        logs.contains("LLM"),
        "debug logs should mention the LLM calls"
    );
    // ... and it appears nowhere
    assert!(!all.contains(KEY), "the key leaked into an API answer");
    assert!(!logs.contains(KEY), "the key leaked into the logs");
    // not even a recognisable part of it
    assert!(!all.contains("Qx7fTr9") && !logs.contains("Qx7fTr9"));
}
