//! REST API behaviour: validation (nothing written on bad input), idempotency, reads, tools.

use trellis::testkit as common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{spawn_app, test_settings};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;
use trellis::api::{AppState, app};
use trellis::testkit::fresh_db;

fn valid_task() -> Value {
    json!({
        "description": "two steps",
        "metadata": {"k": "v"},
        "plan": {"steps": [
            {"id": "step_1", "name": "first", "tool": "echo", "parameters": {"x": 1}},
            {"id": "step_2", "name": "second", "tool": "echo", "dependencies": ["step_1"],
             "parameters": {"y": "${step_1.output.x}"}}
        ]}
    })
}

/// Acceptance 3: every invalid submission is a 4xx naming the problem, and no table changes.
#[tokio::test]
async fn invalid_submissions_are_rejected_and_write_nothing() {
    let app = spawn_app().await;
    // one valid task first, so that "unchanged" is checked against non-empty tables
    app.submit(valid_task()).await;
    let before = app.store().row_counts().await.unwrap();

    let step = |id: &str, tool: &str, deps: Value, params: Value| json!({"id": id, "tool": tool, "dependencies": deps, "parameters": params});
    let with_steps = |steps: Value| json!({"description": "d", "plan": {"steps": steps}});
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        (
            "empty description",
            json!({"description": "  ", "plan": {"steps": [step("a", "echo", json!([]), json!({}))]}}),
            422,
            "description",
        ),
        (
            "missing description",
            json!({"plan": {"steps": []}}),
            422,
            "description",
        ),
        (
            "no plan without a brain",
            json!({"description": "plan it yourself"}),
            422,
            "plan",
        ),
        ("empty steps", with_steps(json!([])), 422, "empty"),
        (
            "unknown tool",
            with_steps(json!([step("a", "no_such_tool", json!([]), json!({}))])),
            422,
            "unknown tool",
        ),
        (
            "unknown dependency",
            with_steps(json!([step("a", "echo", json!(["zz"]), json!({}))])),
            422,
            "unknown step",
        ),
        (
            "self dependency",
            with_steps(json!([step("a", "echo", json!(["a"]), json!({}))])),
            422,
            "itself",
        ),
        (
            "duplicate ids",
            with_steps(json!([
                step("a", "echo", json!([]), json!({})),
                step("a", "echo", json!([]), json!({}))
            ])),
            422,
            "duplicate",
        ),
        (
            "cycle",
            with_steps(json!([
                step("a", "echo", json!(["c"]), json!({})),
                step("b", "echo", json!(["a"]), json!({})),
                step("c", "echo", json!(["b"]), json!({}))
            ])),
            422,
            "cycle",
        ),
        (
            "placeholder to a non-dependency",
            with_steps(json!([
                step("a", "echo", json!([]), json!({})),
                step("b", "echo", json!([]), json!({"x": "${a.output}"}))
            ])),
            422,
            "transitive",
        ),
        (
            "metadata not an object",
            json!({"description": "d", "metadata": [1], "plan": {"steps": [step("a", "echo", json!([]), json!({}))]}}),
            422,
            "metadata",
        ),
        (
            "negative limit",
            json!({"description": "d", "limits": {"max_step_retries": -1}, "plan": {"steps": [step("a", "echo", json!([]), json!({}))]}}),
            422,
            "max_step_retries",
        ),
        (
            "unknown field",
            json!({"description": "d", "plann": {}}),
            422,
            "plann",
        ),
        (
            "unknown step field",
            with_steps(json!([{"id": "a", "tool": "echo", "dependecies": []}])),
            422,
            "dependecies",
        ),
    ];
    for (name, body, status, needle) in cases {
        let (got, v) = app.post("/api/v1/tasks", &body).await;
        assert_eq!(got.as_u16(), status, "{name}: {v}");
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(v["error"]["code"].is_string(), "{name}: {v}");
        assert!(
            msg.contains(needle),
            "{name}: message {msg:?} should mention {needle:?}"
        );
    }

    // malformed JSON and a body over 2 MiB
    let r = app
        .http
        .post(app.url("/api/v1/tasks"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.json::<Value>().await.unwrap()["error"]["message"].is_string());

    let big = json!({"description": "x".repeat(3 * 1024 * 1024), "plan": {"steps": [step("a", "echo", json!([]), json!({}))]}});
    let (got, v) = app.post("/api/v1/tasks", &big).await;
    assert_eq!(got.as_u16(), 413, "{v}");
    assert_eq!(v["error"]["code"], "payload_too_large");

    let after = app.store().row_counts().await.unwrap();
    assert_eq!(before, after, "a rejected submission changed the database");
}

#[tokio::test]
async fn idempotency_key_returns_the_existing_task() {
    let app = spawn_app().await;
    let mut body = valid_task();
    body["idempotency_key"] = json!("order-42");
    let (s1, v1) = app.post("/api/v1/tasks", &body).await;
    assert_eq!(s1, StatusCode::ACCEPTED);
    let counts = app.store().row_counts().await.unwrap();
    let (s2, v2) = app.post("/api/v1/tasks", &body).await;
    assert_eq!(s2, StatusCode::OK, "{v2}");
    assert_eq!(v1["task_id"], v2["task_id"]);
    assert_eq!(v2["status"], "running");
    assert_eq!(counts, app.store().row_counts().await.unwrap());
}

/// Extreme numbers in a stored schema come back as they went in: PostgreSQL writes
/// -1.7976931348623157e308 as a 309-digit integer, which JSON parsing must not overflow (it did:
/// a 500 on every read of the tool registry, found by schemathesis).
#[tokio::test]
async fn extreme_numbers_in_stored_json_read_back() {
    let app = spawn_app().await;
    let schema = json!({"type": "object", "x-bounds": [-1.7976931348623157e308, 1.7976931348623157e308, 1.1125369292536007e-308, 5e-324]});
    let (s, v) = app
        .post(
            "/api/v1/tools",
            &json!({"id": "extreme", "endpoint": "http://127.0.0.1:9/x", "input_schema": schema}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, one) = app.get("/api/v1/tools/extreme").await;
    assert_eq!(s, StatusCode::OK, "{one}");
    assert_eq!(one["input_schema"], schema);
    let (s, all) = app.get("/api/v1/tools").await;
    assert_eq!(s, StatusCode::OK, "{all}");
}

/// `GET /tasks?q=&since=`: text anywhere in the description, in any case, with `%` and `_`
/// taken literally; a submission-time bound; both with the other filters and the cursor.
#[tokio::test]
async fn the_task_list_filters_by_text_and_time() {
    let app = spawn_app().await;
    let mut body = valid_task();
    let mut ids = Vec::new();
    for d in ["Invoice 100% paid", "invoice 1000 paid", "shipping_label"] {
        body["description"] = json!(d);
        ids.push(app.submit(body.clone()).await);
    }
    let list = |q: &'static str| {
        let app = &app;
        async move {
            let (s, v) = app.get(&format!("/api/v1/tasks?{q}")).await;
            assert_eq!(s, StatusCode::OK, "{q}: {v}");
            v.as_array()
                .unwrap()
                .iter()
                .map(|t| t["description"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        list("q=INVOICE").await,
        ["invoice 1000 paid", "Invoice 100% paid"]
    );
    assert_eq!(list("q=100%25").await, ["Invoice 100% paid"]);
    assert_eq!(list("q=g_l").await, ["shipping_label"]);
    assert_eq!(list("q=ng%5Fl").await, ["shipping_label"]);
    assert_eq!(list("q=g%25l").await, Vec::<String>::new());
    assert_eq!(list("q=").await.len(), 3, "empty: any");
    assert_eq!(list("q=paid&status=failed").await, Vec::<String>::new());
    assert_eq!(
        list("q=paid&limit=1").await,
        ["invoice 1000 paid"],
        "newest first"
    );
    let second = format!("/api/v1/tasks?q=paid&before={}", ids[1]);
    let (_, v) = app.get(&second).await;
    assert_eq!(
        v[0]["description"], "Invoice 100% paid",
        "the cursor pages on"
    );
    let (_, all) = app.get("/api/v1/tasks").await;
    let newest = all[0]["created_at"].as_str().unwrap().to_string();
    let (_, v) = app
        .get(&format!(
            "/api/v1/tasks?since={}",
            newest.replace('+', "%2B")
        ))
        .await;
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v[0]["task_id"], json!(ids[2]));
    let (s, v) = app.get("/api/v1/tasks?since=yesterday").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let long = "x".repeat(201);
    let (s, v) = app.get(&format!("/api/v1/tasks?q={long}")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
}

#[tokio::test]
async fn reads_describe_a_submitted_task() {
    let app = spawn_app().await;
    let id = app.submit(valid_task()).await;

    let (s, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(t["status"], "running");
    assert_eq!(t["round"], 1);
    assert_eq!(t["plan_version"], 1);
    assert_eq!(t["steps"]["total"], 2);
    assert_eq!(t["steps"]["ready"], 1);
    assert_eq!(t["steps"]["blocked"], 1);
    assert_eq!(t["counters"]["consecutive_failures"], 0);
    assert_eq!(t["limits"]["max_step_retries"], 3);
    assert!(t["created_at"].is_string() && t["updated_at"].is_string());

    let (_, p) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(p["version"], 1);
    assert_eq!(p["origin"], "initial");
    assert_eq!(p["steps"][1]["id"], "step_2");
    assert_eq!(p["steps"][1]["dependencies"], json!(["step_1"]));
    assert_eq!(p["steps"][1]["status"], "blocked");
    assert_eq!(p["history"], json!([]));

    let (_, e) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    let kinds: Vec<&str> = e
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["task_submitted", "plan_generated"]);
    assert_eq!(e[0]["seq"], 1);
    let (_, e2) = app.get(&format!("/api/v1/tasks/{id}/events?after=1")).await;
    assert_eq!(e2.as_array().unwrap().len(), 1);

    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(r["is_success"], false);
    assert_eq!(r["outputs"], json!({}));

    let (_, list) = app.get("/api/v1/tasks?status=running&limit=10").await;
    assert_eq!(list[0]["task_id"], json!(id.to_string()));
    let (_, none) = app.get("/api/v1/tasks?status=failed").await;
    assert_eq!(none, json!([]));
    let (_, older) = app.get(&format!("/api/v1/tasks?before={id}")).await;
    assert_eq!(older, json!([]));

    let (_, stats) = app.get("/api/v1/stats").await;
    assert_eq!(stats["tasks"]["running"], 1);
    assert_eq!(stats["steps"]["ready"], 1);
    assert_eq!(stats["steps"]["blocked"], 1);

    // bad ids and filters
    assert_eq!(
        app.get("/api/v1/tasks/not-a-uuid").await.0,
        StatusCode::BAD_REQUEST
    );
    let (s, v) = app
        .get(&format!("/api/v1/tasks/{}", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["error"]["code"], "not_found");
    assert_eq!(
        app.get("/api/v1/tasks?status=done").await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        app.get("/api/v1/tasks?limit=0").await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(app.get("/api/v1/nope").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn cancel_skips_open_steps_and_is_refused_when_terminal() {
    let app = spawn_app().await;
    let id = app.submit(valid_task()).await;
    let (s, v) = app
        .post(&format!("/api/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["status"], "cancelled");
    let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(t["status"], "cancelled");
    assert_eq!(t["steps"]["skipped"], 2);
    let (s, v) = app
        .post(&format!("/api/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    let (_, e) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    assert_eq!(
        e.as_array().unwrap().last().unwrap()["kind"],
        "task_cancelled"
    );
    // a cancelled task is never claimed
    assert_eq!(app.store().count_steps("ready").await.unwrap(), 0);
    let (s, _) = app
        .post(&format!("/api/v1/tasks/{id}/resume"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
}

#[tokio::test]
async fn tool_registry_crud() {
    let app = spawn_app().await;
    let (_, tools) = app.get("/api/v1/tools").await;
    let ids: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    for builtin in ["echo", "sleep", "fail", "flaky"] {
        assert!(ids.contains(&builtin), "{ids:?}");
    }
    let body = json!({"id": "weather", "name": "Weather", "description": "d",
        "endpoint": "http://127.0.0.1:9/weather", "timeout_ms": 500,
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        "output_params": ["temp"], "alternatives": ["echo"]});
    let (s, v) = app.post("/api/v1/tools", &body).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    for field in [
        "id",
        "name",
        "description",
        "endpoint",
        "timeout_ms",
        "input_schema",
        "output_params",
        "alternatives",
    ] {
        assert_eq!(v[field], body[field], "{field}");
    }
    let (s, _) = app.post("/api/v1/tools", &body).await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (s, v) = app.get("/api/v1/tools/weather").await;
    assert_eq!(
        (s, v["endpoint"].clone()),
        (StatusCode::OK, body["endpoint"].clone())
    );

    let before = app.store().row_counts().await.unwrap();
    for (bad, needle) in [
        (json!({"id": "x y", "endpoint": "http://h/x"}), "id"),
        (json!({"id": "x", "endpoint": "ftp://h/x"}), "endpoint"),
        (
            json!({"id": "x", "endpoint": "http://h/x", "timeout_ms": 0}),
            "timeout_ms",
        ),
        (
            json!({"id": "x", "endpoint": "http://h/x", "alternatives": ["ghost"]}),
            "ghost",
        ),
        (json!({"id": "x"}), "endpoint"),
    ] {
        let (s, v) = app.post("/api/v1/tools", &bad).await;
        assert_eq!(s.as_u16(), 422, "{bad}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(needle),
            "{v}"
        );
    }
    assert_eq!(before, app.store().row_counts().await.unwrap());

    let r = app
        .http
        .delete(app.url("/api/v1/tools/echo"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 409);
    let r = app
        .http
        .delete(app.url("/api/v1/tools/weather"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    assert_eq!(
        app.get("/api/v1/tools/weather").await.0,
        StatusCode::NOT_FOUND
    );
}

/// `app(state)` driven with `oneshot`: health, readiness, metrics.
#[tokio::test]
async fn health_ready_and_metrics_via_oneshot() {
    let db = fresh_db().await;
    let router = app(AppState::new(db.store.clone(), test_settings()));
    for (path, needle) in [
        ("/health", "ok"),
        ("/ready", "ready"),
        ("/metrics", "trellis_tasks{status=\"running\"} 0"),
    ] {
        let resp = router
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains(needle), "{path}: {text}");
    }
    // readiness fails (503, JSON) once the database is gone
    db.store.pool().close().await;
    let resp = router
        .oneshot(Request::get("/ready").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
}

/// Swagger UI at `/docs`: its page, settings and scripts come from the binary and need no key,
/// as does the copy of the OpenAPI document it reads; the page loads nothing from elsewhere.
#[tokio::test]
async fn swagger_ui_is_served_at_docs_without_a_key() {
    let app = spawn_app().await;
    let bare = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let get = |path: &str| bare.get(app.url(path)).send();
    let r = get("/docs").await.unwrap();
    assert_eq!(r.status().as_u16(), 308);
    assert_eq!(r.headers()["location"], "docs/");

    let r = get("/docs/").await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = r.text().await.unwrap();
    for asset in [
        "swagger-ui.css",
        "swagger-ui-bundle.js",
        "swagger-initializer.js",
    ] {
        assert!(
            page.contains(&format!("./{asset}")),
            "the page loads {asset}"
        );
        let r = get(&format!("/docs/{asset}")).await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{asset}");
        assert!(r.bytes().await.unwrap().len() > 100, "{asset} has content");
    }
    // every script and style the page names is one of its own files
    for attr in ["src=\"", "href=\""] {
        for (i, _) in page.match_indices(attr) {
            let target = &page[i + attr.len()..];
            let local = !(target.starts_with('/') || target.contains("://"));
            assert!(local, "the page loads {}", &target[..40.min(target.len())]);
        }
    }
    let init = get("/docs/swagger-initializer.js")
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(init.contains("\"./openapi.json\""), "{init}");
    assert!(
        init.contains("\"validatorUrl\": \"none\"") || init.contains("\"validatorUrl\":\"none\""),
        "{init}"
    );

    // the document the page reads is the one the API serves, which needs a key there
    let r = get("/docs/openapi.json").await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let doc: Value = r.json().await.unwrap();
    let (_, served) = app.get("/api/v1/openapi.json").await;
    assert_eq!(doc, served);
    assert_eq!(
        get("/api/v1/openapi.json").await.unwrap().status().as_u16(),
        401
    );

    let r = get("/docs/no-such-file.js").await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");
}

/// `docs/openapi.json` is the document the handlers' types generate (what a server with a
/// planning brain serves). `TRELLIS_WRITE_OPENAPI=1 cargo test -p trellis --test it
/// api::openapi_file` rewrites it.
#[test]
fn openapi_file_is_the_generated_document() {
    let generated = trellis::api::openapi_document(true);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json");
    if std::env::var_os("TRELLIS_WRITE_OPENAPI").is_some() {
        std::fs::write(path, generated).unwrap();
    }
    let file = std::fs::read_to_string(path).unwrap();
    assert!(
        file == generated,
        "docs/openapi.json is not the generated document; rewrite it with \
         TRELLIS_WRITE_OPENAPI=1 cargo test -p trellis --test it api::openapi_file"
    );
}

/// The OpenAPI document is served and names every route the API answers.
#[tokio::test]
async fn openapi_document_covers_every_route() {
    let app = spawn_app().await;
    let (s, doc) = app.get("/api/v1/openapi.json").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    // generator-friendly: request bodies are plain objects (the rules across their fields are
    // in descriptions and answered with a 422), free-form objects take any values, enums are
    // named components
    let schemas = &doc["components"]["schemas"];
    for body in ["SubmitTask", "Resume", "Step"] {
        let text = schemas[body].to_string();
        assert!(
            !text.contains("\"anyOf\"") && !text.contains("\"not\""),
            "{body}: {text}"
        );
    }
    assert!(
        schemas["SubmitTask"]["description"]
            .as_str()
            .unwrap()
            .contains("no planning brain"),
        "a server without a planner says a plan is needed"
    );
    assert_eq!(
        schemas["SubmitTask"]["properties"]["metadata"]["additionalProperties"],
        true
    );
    assert_eq!(
        schemas["Role"]["enum"],
        json!(["admin", "operator", "reader"])
    );
    let with_planner: Value = serde_json::from_str(trellis::api::openapi_document(true)).unwrap();
    assert!(
        !with_planner["components"]["schemas"]["SubmitTask"]["description"]
            .as_str()
            .unwrap()
            .contains("no planning brain")
    );
    let id = app.submit(valid_task()).await;
    let routes = [
        ("post", "/api/v1/tasks"),
        ("post", "/api/v1/tasks/batch"),
        ("get", "/api/v1/tasks"),
        ("get", "/api/v1/tasks/{id}"),
        ("get", "/api/v1/tasks/{id}/result"),
        ("get", "/api/v1/tasks/{id}/plan"),
        ("get", "/api/v1/tasks/{id}/attempts"),
        ("get", "/api/v1/tasks/{id}/events"),
        ("get", "/api/v1/tasks/{id}/reflections"),
        ("get", "/api/v1/tasks/{id}/evaluations"),
        ("get", "/api/v1/tasks/{id}/steps/{step_id}/turns"),
        ("post", "/api/v1/tasks/{id}/cancel"),
        ("post", "/api/v1/tasks/{id}/resume"),
        ("post", "/api/v1/tasks/{id}/rerun"),
        ("post", "/api/v1/tasks/{id}/reschedule"),
        ("post", "/api/v1/schedules"),
        ("get", "/api/v1/schedules"),
        ("get", "/api/v1/schedules/{id}"),
        ("patch", "/api/v1/schedules/{id}"),
        ("delete", "/api/v1/schedules/{id}"),
        ("post", "/api/v1/schedules/{id}/trigger"),
        ("post", "/api/v1/mcp-servers"),
        ("get", "/api/v1/mcp-servers"),
        ("delete", "/api/v1/mcp-servers/{id}"),
        ("post", "/api/v1/mcp-servers/{id}/refresh"),
        ("get", "/api/v1/secrets"),
        ("put", "/api/v1/secrets/{name}"),
        ("delete", "/api/v1/secrets/{name}"),
        ("get", "/api/v1/key-limits"),
        ("put", "/api/v1/key-limits/{pattern}"),
        ("delete", "/api/v1/key-limits/{pattern}"),
        ("get", "/api/v1/tenants"),
        ("put", "/api/v1/model-prices"),
        ("get", "/api/v1/model-prices"),
        ("post", "/api/v1/bulk-actions"),
        ("get", "/api/v1/bulk-actions"),
        ("get", "/api/v1/bulk-actions/{id}"),
        ("post", "/api/v1/bulk-actions/{id}/abort"),
        ("put", "/api/v1/tenants/{tenant}"),
        ("delete", "/api/v1/tenants/{tenant}"),
        ("post", "/api/v1/webhooks"),
        ("get", "/api/v1/webhooks"),
        ("delete", "/api/v1/webhooks/{id}"),
        ("get", "/api/v1/webhooks/{id}/deliveries"),
        (
            "post",
            "/api/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver",
        ),
        ("get", "/api/v1/waits"),
        ("get", "/api/v1/waits/{id}"),
        ("post", "/api/v1/waits/{id}/approve"),
        ("post", "/api/v1/waits/{id}/reject"),
        ("post", "/api/v1/events"),
        ("post", "/api/v1/callbacks/{token}/complete"),
        ("post", "/api/v1/callbacks/{token}/fail"),
        ("post", "/api/v1/callbacks/{token}/heartbeat"),
        ("post", "/api/v1/templates"),
        ("get", "/api/v1/templates"),
        ("get", "/api/v1/templates/{id}"),
        ("delete", "/api/v1/templates/{id}"),
        ("post", "/api/v1/tools"),
        ("get", "/api/v1/tools"),
        ("get", "/api/v1/tools/{id}"),
        ("delete", "/api/v1/tools/{id}"),
        ("post", "/api/v1/tools/{id}/pause"),
        ("post", "/api/v1/tools/{id}/resume"),
        ("get", "/api/v1/stats"),
        ("get", "/api/v1/stats/recovery"),
        ("get", "/api/v1/stats/activity"),
        ("get", "/api/v1/workers"),
        ("post", "/api/v1/keys"),
        ("get", "/api/v1/keys"),
        ("delete", "/api/v1/keys/{id}"),
        ("get", "/api/v1/whoami"),
        ("get", "/api/v1/openapi.json"),
        ("get", "/health"),
        ("get", "/ready"),
        ("get", "/metrics"),
    ];
    for (method, path) in routes {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} missing from the OpenAPI document"
        );
        // and the route exists: anything but the router's 404/405
        let task_id = id.to_string();
        let param = if path.starts_with("/api/v1/tools/") || path.starts_with("/api/v1/templates/")
        {
            "echo-not-there"
        } else {
            task_id.as_str()
        };
        let url = app.url(&path.replace("{id}", param));
        let req = match method {
            "get" => app.http.get(&url),
            "post" => app.http.post(&url).json(&json!({})),
            "patch" => app.http.patch(&url).json(&json!({})),
            "put" => app.http.put(&url).json(&json!({})),
            _ => app.http.delete(&url),
        };
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert!(
            status != 405 && !(status == 404 && body["error"]["message"] == "no such route"),
            "{method} {path} is not routed ({status})"
        );
    }
    let known: std::collections::BTreeSet<&str> = routes.iter().map(|(_, p)| *p).collect();
    let documented: std::collections::BTreeSet<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(documented, known, "the document and the routes differ");
    // every operation has its own id, and every link names one of them
    let ops: Vec<&Value> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|p| p.as_object().unwrap().values())
        .collect();
    let ids: std::collections::BTreeSet<&str> = ops
        .iter()
        .map(|o| o["operationId"].as_str().expect("an operationId"))
        .collect();
    assert_eq!(ids.len(), ops.len(), "operationIds are not unique");
    let mut links = 0;
    for op in &ops {
        for response in op["responses"].as_object().unwrap().values() {
            for link in response["links"]
                .as_object()
                .into_iter()
                .flat_map(|l| l.values())
            {
                links += 1;
                let target = link["operationId"].as_str().unwrap();
                assert!(ids.contains(target), "a link names {target}, no operation");
            }
        }
    }
    assert!(links >= 10, "{links} links");
}

/// The harness's check of every answer against the served document notices a status the
/// document does not list and a body its schema does not allow (and passes a right one).
#[test]
fn the_answer_check_notices_what_the_document_does_not_allow() {
    let c = trellis::api::answers::AnswerCheck::new();
    let json = "application/json";
    c.check("get", "/api/v1/tasks/{id}/evaluations", 200, json, b"[]");
    assert!(c.take().is_empty());
    c.check(
        "get",
        "/api/v1/tasks/{id}/evaluations",
        200,
        json,
        br#"[{"successes": [1]}]"#,
    );
    let m = c.take();
    assert!(m.iter().any(|m| m.contains("does not allow")), "{m:?}");
    c.check("get", "/api/v1/tasks", 418, json, b"{}");
    let m = c.take();
    assert!(m.iter().any(|m| m.contains("does not list")), "{m:?}");
    c.check("get", "/api/v1/tasks", 200, "text/plain", b"hello");
    let m = c.take();
    assert!(m.iter().any(|m| m.contains("not JSON")), "{m:?}");
}

/// Every route of the served document answers a malformed path (`%FF` is not UTF-8) with a 4xx
/// in the JSON error shape, as it answers any other bad input.
#[tokio::test]
async fn a_malformed_path_is_a_json_error_on_every_route() {
    let app = spawn_app().await;
    let (_, doc) = app.get("/api/v1/openapi.json").await;
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        if !path.contains('{') {
            continue;
        }
        let mut url = String::new();
        for segment in path.split('/').skip(1) {
            url.push('/');
            url.push_str(if segment.starts_with('{') {
                "%FF"
            } else {
                segment
            });
        }
        for method in item.as_object().unwrap().keys() {
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let mut req = app.http.request(m, app.url(&url));
            if method != "get" && method != "delete" {
                req = req.json(&json!({}));
            }
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            let text = r.text().await.unwrap();
            assert!(
                (400..500).contains(&status),
                "{method} {url}: {status} {text}"
            );
            let body: Value = serde_json::from_str(&text)
                .unwrap_or_else(|_| panic!("{method} {url}: {status} is not JSON: {text:?}"));
            assert!(
                body["error"]["code"].is_string() && body["error"]["message"].is_string(),
                "{method} {url}: {status} {body}"
            );
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} routes with a path parameter");
}
