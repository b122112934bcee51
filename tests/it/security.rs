//! Security and hardening (issue 11): keys and roles over the whole route table, the outbound
//! guard against a canary on 127.0.0.2, hostile input, hostile tool answers, no stuck work.

use trellis::testkit as common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use common::{ADMIN_KEY, Responder, TestApp, ToolServer, client_with_key, spawn_app};
use serde_json::{Value, json};
use uuid::Uuid;

/// The role each call needs, written out here (not read from the code under test).
fn expected_role(method: &str, path: &str) -> &'static str {
    let rest = path.trim_start_matches("/api/v1");
    if rest.starts_with("/keys")
        || rest.starts_with("/webhooks")
        || rest.starts_with("/secrets")
        || rest.starts_with("/key-limits")
        || rest.starts_with("/tenants")
        || rest.starts_with("/model-prices")
    {
        "admin"
    } else if method == "get"
        || (rest.starts_with("/waits/")
            && (rest.ends_with("/approve") || rest.ends_with("/reject")))
    {
        // an approval names its own role, which the handler checks (reader at the least)
        "reader"
    } else if rest.starts_with("/tools/") && (rest.ends_with("/pause") || rest.ends_with("/resume"))
    {
        // an incident's action: the registry entry is not changed
        "operator"
    } else if rest.starts_with("/tools")
        || rest.starts_with("/templates")
        || rest.starts_with("/mcp-servers")
    {
        "admin"
    } else {
        "operator"
    }
}

async fn create_key(app: &TestApp, role: &str) -> (String, String) {
    let (s, v) = app
        .post(
            "/api/v1/keys",
            &json!({"name": format!("{role} key"), "role": role}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    (
        v["id"].as_str().unwrap().to_string(),
        v["key"].as_str().unwrap().to_string(),
    )
}

async fn call(http: &reqwest::Client, method: &str, url: &str) -> u16 {
    let req = match method {
        "get" => http.get(url),
        "post" => http.post(url).json(&json!({})),
        "delete" => http.delete(url),
        "patch" => http.patch(url).json(&json!({})),
        "put" => http.put(url).json(&json!({})),
        other => panic!("method {other}"),
    };
    req.send().await.unwrap().status().as_u16()
}

/// Acceptance 1: every `/api/v1` route of the served OpenAPI document (which another test
/// holds equal to the router's routes) answers 401 without a key or with a wrong or revoked
/// one, 403 to a role below the one it needs, and lets the needed role through;
/// `/health`, `/ready` and `/metrics` need no key.
#[tokio::test]
async fn every_route_needs_a_key_and_the_right_role() {
    let app = spawn_app().await;
    let (_, operator) = create_key(&app, "operator").await;
    let (reader_id, reader) = create_key(&app, "reader").await;
    let task = app
        .submit(json!({"description": "d", "plan": {"steps": [{"id": "a", "tool": "echo"}]}}))
        .await;
    let (s, doc) = app.get("/api/v1/openapi.json").await;
    assert_eq!(s, StatusCode::OK);
    let anonymous = client_with_key(None);
    let wrong = client_with_key(Some("trk_not-a-key-at-all-0123456789"));
    let as_reader = client_with_key(Some(&reader));
    let as_operator = client_with_key(Some(&operator));
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let url = app.url(&path.replace("{id}", &task.to_string()));
            if !path.starts_with("/api/v1/") {
                assert_eq!(call(&anonymous, method, &url).await, 200, "{method} {path}");
                continue;
            }
            if path.starts_with("/api/v1/callbacks/") {
                // no key: the token in the URL is the credential (an unknown one is a 404; an
                // empty body where one is required is a 422 first)
                let url = url.replace("{token}", "not-a-token");
                let status = call(&anonymous, method, &url).await;
                assert!(status == 404 || status == 422, "{method} {path}: {status}");
                continue;
            }
            checked += 1;
            assert_eq!(
                call(&anonymous, method, &url).await,
                401,
                "{method} {path} without a key"
            );
            assert_eq!(
                call(&wrong, method, &url).await,
                401,
                "{method} {path} with a wrong key"
            );
            let needed = expected_role(method, path);
            let below: &[(&str, &reqwest::Client)] = match needed {
                "admin" => &[("reader", &as_reader), ("operator", &as_operator)],
                "operator" => &[("reader", &as_reader)],
                _ => &[],
            };
            for (role, client) in below {
                assert_eq!(
                    call(client, method, &url).await,
                    403,
                    "{method} {path} as {role} (needs {needed})"
                );
            }
            let allowed = match needed {
                "reader" => &as_reader,
                "operator" => &as_operator,
                _ => &app.http,
            };
            let got = call(allowed, method, &url).await;
            assert!(
                got != 401 && got != 403,
                "{method} {path} as {needed}: {got}"
            );
        }
    }
    assert!(checked >= 20, "only {checked} routes checked");

    // the 401 body is our JSON error
    let r = anonymous
        .get(app.url("/api/v1/tasks"))
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");

    // keys are listed without the key; a revoked key is refused at once
    let (_, keys) = app.get("/api/v1/keys").await;
    assert!(!keys.to_string().contains(&reader), "a key leaked: {keys}");
    assert_eq!(
        call(&as_reader, "get", &app.url("/api/v1/tasks")).await,
        200
    );
    let r = app
        .http
        .delete(app.url(&format!("/api/v1/keys/{reader_id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    assert_eq!(
        call(&as_reader, "get", &app.url("/api/v1/tasks")).await,
        401
    );
    // only a digest is stored
    let stored: i64 =
        sqlx::query_scalar("SELECT count(*) FROM api_keys WHERE key_hash = convert_to($1, 'UTF8')")
            .bind(&operator)
            .fetch_one(app.store().pool())
            .await
            .unwrap();
    assert_eq!(stored, 0);
    // a bad role is a 422 naming it
    let (s, v) = app
        .post("/api/v1/keys", &json!({"name": "x", "role": "root"}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("root"));
}

/// An HTTP server on 127.0.0.2 that counts every request it gets.
async fn canary() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.2:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let router = axum::Router::new().fallback(move || {
        let h = h.clone();
        async move {
            h.fetch_add(1, Ordering::SeqCst);
            axum::Json(json!({"secret": "internal data"}))
        }
    });
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (addr, hits)
}

/// The first attempt of the task's only step.
async fn first_attempt(app: &TestApp, task: Uuid) -> Value {
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{task}/attempts")).await;
    attempts[0].clone()
}

fn one_step(tool: &str, parameters: Value) -> Value {
    json!({
        "description": "outbound",
        "limits": {"max_step_retries": 0, "max_single_step_repairs": 0, "max_task_replans": 0},
        "plan": {"steps": [{"id": "call", "tool": tool, "parameters": parameters}]}
    })
}

/// Acceptance 2: the canary on 127.0.0.2 gets no request from any spelling of its address,
/// its IPv4-mapped IPv6 form, a redirect from an allowed tool, a tool registered at it, or a
/// name that resolves to it; each such step ends with `blocked_destination`.
#[tokio::test]
async fn the_outbound_guard_keeps_the_canary_silent() {
    let app = spawn_app().await;
    let (canary, hits) = canary().await;
    let port = canary.port();
    // the canary itself answers (so a 0 below means "refused", not "unreachable")
    let probe = reqwest::Client::builder().no_proxy().build().unwrap();
    let r = probe.get(format!("http://{canary}/")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(hits.swap(0, Ordering::SeqCst), 1);

    // an allowed tool (127.0.0.1) that redirects to the canary
    let target = format!("http://127.0.0.2:{port}/");
    let redirect: Responder = Arc::new(|_| (200, json!({})));
    let allowed = ToolServer::start(Duration::ZERO, redirect).await;
    let redirector = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let location = target.clone();
        let router = axum::Router::new().fallback(move || {
            let location = location.clone();
            async move {
                (
                    StatusCode::FOUND,
                    [(axum::http::header::LOCATION, location)],
                    "",
                )
            }
        });
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        addr
    };
    common::register_tool(
        &app,
        "redirects",
        &format!("http://{redirector}/go"),
        json!({}),
    )
    .await;
    common::register_tool(&app, "allowed", &allowed.endpoint("allowed"), json!({})).await;

    // registering the canary through the API is refused; one registered before the policy
    // (written straight to the registry) is refused when it is called
    let (s, v) = app
        .post(
            "/api/v1/tools",
            &json!({"id": "canary", "endpoint": target}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("refused"),
        "{v}"
    );
    app.store()
        .create_tool(&common::http_tool(
            "canary",
            format!("http://[::ffff:127.0.0.2]:{port}/tool"),
        ))
        .await
        .unwrap();

    let spellings = [
        format!("http://127.0.0.2:{port}/"),
        format!("http://2130706434:{port}/"),
        format!("http://0x7f000002:{port}/"),
        format!("http://0x7f.0.0.2:{port}/"),
        format!("http://0177.0.0.2:{port}/"),
        format!("http://127.0.2:{port}/"),
        format!("http://[::ffff:127.0.0.2]:{port}/"),
        format!("http://[::ffff:7f00:2]:{port}/"),
        format!("http://canary.internal:{port}/"),
    ];
    let worker = app.worker(|c| {
        c.outbound = c
            .outbound
            .clone()
            .with_host("canary.internal", vec!["127.0.0.2".parse().unwrap()]);
    });
    let mut tasks = Vec::new();
    for url in &spellings {
        tasks.push((
            url.clone(),
            app.submit(one_step("http_request", json!({"url": url})))
                .await,
        ));
    }
    tasks.push((
        "tool registered at the canary".into(),
        app.submit(one_step("canary", json!({}))).await,
    ));
    tasks.push((
        "redirect from an allowed tool".into(),
        app.submit(one_step("redirects", json!({}))).await,
    ));
    // the allowed tool itself still works
    let fine = app.submit(one_step("allowed", json!({"x": 1}))).await;
    for (what, id) in &tasks {
        let done = app.wait_done(*id, Duration::from_secs(30)).await;
        assert_ne!(done["status"], "succeeded", "{what}");
        let a = first_attempt(&app, *id).await;
        assert_eq!(a["error"]["category"], "blocked_destination", "{what}: {a}");
        assert_eq!(a["error"]["retryable"], false, "{what}: {a}");
    }
    assert_eq!(
        app.wait_done(fine, Duration::from_secs(30)).await["status"],
        "succeeded"
    );
    worker.stop().await;
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the canary was reached");
}

/// Acceptance 3: a NUL character in a description, parameters, tool fields, a path or a
/// query is a 4xx naming it, and nothing is stored; a 10 MB body is a 413.
#[tokio::test]
async fn nul_characters_and_huge_bodies_are_the_callers_fault() {
    let app = spawn_app().await;
    let before = app.store().row_counts().await.unwrap();
    let cases = [
        (
            "/api/v1/tasks",
            json!({"description": "a\u{0}b", "plan": {"steps": [{"id": "a", "tool": "echo"}]}}),
            "description",
        ),
        (
            "/api/v1/tasks",
            json!({"description": "d", "plan": {"steps": [{"id": "a", "tool": "echo", "parameters": {"x": ["ok", "\u{0}"]}}]}}),
            "plan.steps[0].parameters.x[1]",
        ),
        (
            "/api/v1/tasks",
            json!({"description": "d", "metadata": {"k\u{0}": 1}, "plan": {"steps": [{"id": "a", "tool": "echo"}]}}),
            "metadata",
        ),
        (
            "/api/v1/tasks/batch",
            json!({"tasks": [{"description": "\u{0}", "plan": {"steps": [{"id": "a", "tool": "echo"}]}}]}),
            "tasks[0].description",
        ),
        (
            "/api/v1/tools",
            json!({"id": "t", "endpoint": "http://127.0.0.1:9/x", "description": "x\u{0}"}),
            "description",
        ),
    ];
    for (path, body, field) in cases {
        let (s, v) = app.post(path, &body).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{path} {field}: {v}");
        let m = v["error"]["message"].as_str().unwrap();
        assert!(m.contains(field) && m.contains("NUL"), "{path}: {m}");
    }
    for path in [
        "/api/v1/tools/a%00b",
        "/api/v1/tasks/%00",
        "/api/v1/tasks?status=%00",
        "/api/v1/tasks?before=x%00",
    ] {
        let (s, v) = app.get(path).await;
        assert!(s.is_client_error(), "{path}: {s} {v}");
    }
    let (s, v) = app.get("/api/v1/tasks?status=%00").await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("status"),
        "{v}"
    );
    // the resume body too
    let r = app
        .http
        .post(app.url(&format!("/api/v1/tasks/{}/resume", Uuid::now_v7())))
        .header("content-type", "application/json")
        .body(r#"{"step_overrides": {"a": {"tool": "x\u0000"}}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 422);
    // 10 MB: 413 on every body route
    let big = format!(r#"{{"description": "{}"}}"#, "x".repeat(10 * 1024 * 1024));
    for path in ["/api/v1/tasks", "/api/v1/tasks/batch", "/api/v1/tools"] {
        let r = app
            .http
            .post(app.url(path))
            .header("content-type", "application/json")
            .body(big.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 413, "{path}");
    }
    // a body that is not JSON is refused on a state-changing route
    let r = app
        .http
        .post(app.url("/api/v1/tasks"))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 415);
    // out of range priority and sleep, and a plan over the step limit
    let (s, _) = app
        .post("/api/v1/tasks", &json!({"description": "d", "priority": 1_000_000, "plan": {"steps": [{"id": "a", "tool": "echo"}]}}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let (s, _) = app
        .post("/api/v1/tasks", &json!({"description": "d", "plan": {"steps": [{"id": "a", "tool": "sleep", "parameters": {"ms": 99_999_999_999u64}}]}}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let steps: Vec<Value> = (0..1001)
        .map(|i| json!({"id": format!("s{i}"), "tool": "echo"}))
        .collect();
    let (s, v) = app
        .post(
            "/api/v1/tasks",
            &json!({"description": "d", "plan": {"steps": steps}}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_steps_per_plan"),
        "{v}"
    );
    // no CORS headers by default
    let r = app
        .http
        .request(reqwest::Method::OPTIONS, app.url("/api/v1/tasks"))
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    assert_eq!(
        before,
        app.store().row_counts().await.unwrap(),
        "something was stored"
    );
}

/// Acceptance 4 (in-process half; the RSS half runs a real worker in worker/tests): a tool
/// answering a NUL string fails its attempt as `invalid_output`, one answering more than
/// `max_output_bytes` as `output_too_large`, and both tasks end.
#[tokio::test]
async fn hostile_tool_answers_end_their_tasks() {
    let app = spawn_app().await;
    let nul: Responder = Arc::new(|_| (200, json!({"output": {"text": "a\u{0}b"}})));
    let nul_server = ToolServer::start(Duration::ZERO, nul).await;
    let big: Responder = Arc::new(|_| (200, json!({"output": "x".repeat(2 * 1024 * 1024)})));
    let big_server = ToolServer::start(Duration::ZERO, big).await;
    let failing: Responder = Arc::new(|_| {
        (
            500,
            json!({"error": {"message": "bad \u{0} news", "hints": {"k\u{0}": "v\u{0}"}}}),
        )
    });
    let failing_server = ToolServer::start(Duration::ZERO, failing).await;
    common::register_tool(&app, "nul", &nul_server.endpoint("nul"), json!({})).await;
    common::register_tool(&app, "big", &big_server.endpoint("big"), json!({})).await;
    common::register_tool(
        &app,
        "nulerr",
        &failing_server.endpoint("nulerr"),
        json!({}),
    )
    .await;
    let worker = app.worker(|_| {});
    let a = app.submit(one_step("nul", json!({}))).await;
    let b = app.submit(one_step("big", json!({}))).await;
    let c = app.submit(one_step("nulerr", json!({}))).await;
    for (id, category) in [
        (a, "invalid_output"),
        (b, "output_too_large"),
        (c, "tool_error"),
    ] {
        let done = app.wait_done(id, Duration::from_secs(30)).await;
        assert_ne!(done["status"], "succeeded");
        let at = first_attempt(&app, id).await;
        assert_eq!(at["error"]["category"], category, "{at}");
    }
    let at = first_attempt(&app, c).await;
    assert!(
        at["error"]["message"]
            .as_str()
            .unwrap()
            .contains("bad \u{FFFD} news"),
        "{at}"
    );
    worker.stop().await;
}

/// Credentials never reach an answer: an `Authorization` header in parameters and a password
/// in a tool's endpoint are redacted in the plan, attempts, events and the tool registry.
#[tokio::test]
async fn credentials_are_redacted_in_answers() {
    let app = spawn_app().await;
    let server = ToolServer::start(Duration::ZERO, Arc::new(|_| (200, json!({"ok": true})))).await;
    let endpoint = format!(
        "http://user:hunter2-secret@{}/t?token=tok-secret",
        server.addr
    );
    common::register_tool(&app, "creds", &endpoint, json!({})).await;
    let worker = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "d", "plan": {"steps": [
            {"id": "a", "tool": "creds", "parameters": {"headers": {"Authorization": "Bearer sk-live-secret"}}}
        ]}}))
        .await;
    app.wait_done(id, Duration::from_secs(30)).await;
    worker.stop().await;
    for path in [
        format!("/api/v1/tasks/{id}/plan"),
        format!("/api/v1/tasks/{id}/attempts"),
        format!("/api/v1/tasks/{id}/events"),
        "/api/v1/tools/creds".to_string(),
        "/api/v1/tools".to_string(),
    ] {
        let (s, v) = app.get(&path).await;
        assert_eq!(s, StatusCode::OK, "{path}");
        let text = v.to_string();
        for secret in ["hunter2-secret", "tok-secret", "sk-live-secret"] {
            assert!(!text.contains(secret), "{path} shows {secret}: {text}");
        }
    }
    // the tool was called with its credentials all the same
    assert_eq!(server.calls().len(), 1);
    let _ = ADMIN_KEY;
}
