//! MCP servers as a tool source, against a server no one here wrote: the official MCP Python
//! SDK's FastMCP over streamable HTTP (`tests/mcp/server.py`, in the venv `test.sh` makes under
//! `tests/mcp/.venv`). Trellis imports its tools (schemas included), runs a plan that calls
//! them (one with a header credential from the secret store), and recovery handles a tool that
//! returns `isError`.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use trellis::testkit::{spawn_app_with, test_settings, wait_for};

const SEALING: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn fastmcp(api_key: &str) -> (Server, String) {
    let root = env!("CARGO_MANIFEST_DIR");
    let python = std::env::var("TRELLIS_MCP_PYTHON")
        .unwrap_or_else(|_| format!("{root}/tests/mcp/.venv/bin/python"));
    assert!(
        std::path::Path::new(&python).exists(),
        "the MCP Python SDK is not installed: run `bash test.sh`, or make {python} with tests/mcp/requirements.txt"
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python)
        .arg(format!("{root}/tests/mcp/server.py"))
        .arg(port.to_string())
        .arg(api_key)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the FastMCP server");
    let server = Server(child);
    let url = format!("http://127.0.0.1:{port}/mcp");
    wait_for("the FastMCP server", Duration::from_secs(30), || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    (server, url)
}

#[tokio::test]
async fn an_mcp_servers_tools_run_as_trellis_tools() {
    let mut settings = test_settings();
    settings.secrets.key = Some(SEALING.into());
    let app = spawn_app_with(settings).await;
    let (_server, url) = fastmcp("mcp-key-5521").await;
    let r = app
        .http
        .put(app.url("/api/v1/secrets/mcp_key"))
        .json(&json!({"value": "mcp-key-5521"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let (s, v) = app
        .post(
            "/api/v1/mcp-servers",
            &json!({"id": "py", "endpoint": url, "headers": {"X-Api-Key": "${secret.mcp_key}"}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let tools: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "py.add",
            "py.broken",
            "py.call_key",
            "py.forecast",
            "py.secret_data"
        ]
    );
    let (_, forecast) = app.get("/api/v1/tools/py.forecast").await;
    assert_eq!(forecast["kind"], "mcp");
    // every kind the tool list answers is one the served document names (a generated client
    // decodes the list with it: the Python client's Tool.from_dict raised on "mcp")
    let (_, doc) = app.get("/docs/openapi.json").await;
    let kinds = doc["components"]["schemas"]["ToolKind"]["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("no ToolKind enumeration: {}", doc["components"]["schemas"]))
        .clone();
    let (_, list) = app.get("/api/v1/tools").await;
    for t in list.as_array().unwrap() {
        assert!(
            kinds.contains(&t["kind"]),
            "{} is not in {kinds:?}",
            t["kind"]
        );
    }
    assert!(
        forecast["output_schema"]["properties"]["celsius"].is_object(),
        "{forecast}"
    );
    assert!(
        forecast["input_schema"]["properties"]["city"].is_object(),
        "{forecast}"
    );

    let _w = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "mcp tools", "plan": {"steps": [
            {"id": "sum", "tool": "py.add", "parameters": {"a": 2, "b": 3}},
            {"id": "weather", "tool": "py.forecast", "parameters": {"city": "Lyon"}},
            {"id": "secret", "tool": "py.secret_data", "parameters": {}},
            {"id": "key", "tool": "py.call_key", "parameters": {}}]}}))
        .await;
    let done = app.wait_done(id, Duration::from_secs(60)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    // the call's idempotency key reached the server in params._meta, as its attempt records
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    let recorded = attempts
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["step_id"] == "key")
        .unwrap()["idempotency_key"]
        .clone();
    assert!(recorded.as_str().unwrap().starts_with("tr1-"), "{attempts}");
    assert_eq!(r["outputs"]["key"], json!({"result": recorded}), "{r}");
    assert_eq!(r["outputs"]["sum"], json!({"result": 5}), "{r}");
    assert_eq!(
        r["outputs"]["weather"],
        json!({"city": "Lyon", "celsius": 21.5})
    );
    assert_eq!(r["outputs"]["secret"], json!({"result": "classified"}));
    // our schema check stops a bad call before it is made
    let bad = app
        .submit(
            json!({"description": "bad", "limits": {"max_task_replans": 0}, "plan": {"steps": [
            {"id": "sum", "tool": "py.add", "parameters": {"a": "two", "b": 3}}]}}),
        )
        .await;
    app.wait_done(bad, Duration::from_secs(60)).await;
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{bad}/attempts")).await;
    assert_eq!(
        attempts[0]["error"]["category"], "parameter_error",
        "{attempts}"
    );

    // isError with nothing to switch to: retried, then recovery stops the task
    let stopped = app
        .submit(json!({"description": "broken, no alternative",
            "limits": {"max_step_retries": 1, "max_task_replans": 0},
            "plan": {"steps": [{"id": "x", "tool": "py.broken", "parameters": {"a": 1, "b": 2}}]}}))
        .await;
    let done = app.wait_done(stopped, Duration::from_secs(60)).await;
    assert_ne!(done["status"], "succeeded", "{done}");
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{stopped}/attempts")).await;
    assert!(
        attempts
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["tool"] == "py.broken" && a["error"]["category"] == "tool_error"),
        "{attempts}"
    );

    // isError: with an alternative registered, recovery switches to it
    sqlx::query("UPDATE tools SET alternatives = '{py.add}' WHERE id = 'py.broken'")
        .execute(app.store().pool())
        .await
        .unwrap();
    let saved = app
        .submit(
            json!({"description": "broken, then its alternative", "plan": {"steps": [
            {"id": "x", "tool": "py.broken", "parameters": {"a": 4, "b": 5}}]}}),
        )
        .await;
    let done = app.wait_done(saved, Duration::from_secs(60)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{saved}/attempts")).await;
    let first = &attempts[0];
    assert_eq!(first["tool"], "py.broken");
    assert_eq!(first["error"]["category"], "tool_error");
    assert!(
        first["error"]["message"]
            .as_str()
            .unwrap()
            .contains("broken"),
        "{first}"
    );
    let (_, r) = app.get(&format!("/api/v1/tasks/{saved}/result")).await;
    assert_eq!(r["outputs"]["x"], json!({"result": 9}));

    // refresh keeps the tools; delete removes them
    let (s, v) = app.post("/api/v1/mcp-servers/py/refresh", &json!({})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["tools"].as_array().unwrap().len(), 5);
    let r = app
        .http
        .delete(app.url("/api/v1/mcp-servers/py"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let (s, _): (StatusCode, Value) = app.get("/api/v1/tools/py.add").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

/// Trellis's own `/mcp`, driven by the official MCP Python SDK's client: the tools (one per
/// template), a task submitted, waited for and read, a template tool run; a reader key lists
/// and reads but may not submit (an `isError` result naming the 403).
#[tokio::test]
async fn trellis_is_an_mcp_server() {
    let app = trellis::testkit::spawn_app().await;
    let (s, v) = app
        .post(
            "/api/v1/templates",
            &json!({"id": "greet", "description": "Greets someone",
                "input_schema": {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]},
                "plan": {"steps": [{"id": "hi", "tool": "echo", "parameters": {"to": "${input.who}"}}]}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, reader) = app
        .post("/api/v1/keys", &json!({"name": "r", "role": "reader"}))
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let _w = app.worker(|_| {});
    let root = env!("CARGO_MANIFEST_DIR");
    let python = std::env::var("TRELLIS_MCP_PYTHON")
        .unwrap_or_else(|_| format!("{root}/tests/mcp/.venv/bin/python"));
    let client = |key: String| {
        let (python, url) = (python.clone(), app.url("/mcp"));
        async move {
            let out = tokio::process::Command::new(python)
                .arg(format!("{root}/tests/mcp/client.py"))
                .arg(url)
                .arg(key)
                .env("NO_PROXY", "127.0.0.1")
                .output()
                .await
                .expect("python runs");
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            assert!(
                out.status.success(),
                "{text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_str::<Value>(text.lines().last().unwrap()).unwrap()
        }
    };
    let admin = client(trellis::testkit::ADMIN_KEY.to_string()).await;
    let tools: Vec<&str> = admin["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for t in [
        "submit_task",
        "get_task",
        "wait_task",
        "get_result",
        "list_tasks",
        "cancel_task",
        "resume_task",
        "template.greet",
    ] {
        assert!(tools.contains(&t), "{t} missing: {tools:?}");
    }
    assert_eq!(admin["submit"]["is_error"], false, "{admin}");
    assert_eq!(
        admin["wait"]["structured"]["status"], "succeeded",
        "{admin}"
    );
    assert_eq!(
        admin["result"]["structured"]["outputs"]["a"],
        json!({"x": 1})
    );
    let from_template = admin["template"]["structured"]["task_id"].as_str().unwrap();
    let done = app
        .wait_done(from_template.parse().unwrap(), Duration::from_secs(30))
        .await;
    assert_eq!(done["status"], "succeeded");
    let (_, r) = app
        .get(&format!("/api/v1/tasks/{from_template}/result"))
        .await;
    assert_eq!(r["outputs"]["hi"], json!({"to": "mcp"}));

    let as_reader = client(reader["key"].as_str().unwrap().to_string()).await;
    assert_eq!(as_reader["tools"], admin["tools"]);
    assert_eq!(as_reader["submit"]["is_error"], true, "{as_reader}");
    assert!(
        as_reader["submit"]["text"][0]
            .as_str()
            .unwrap()
            .contains("403"),
        "{as_reader}"
    );
    assert_eq!(
        as_reader["list"]["is_error"], false,
        "a reader reads: {as_reader}"
    );
    // without a key, no session
    let r = reqwest::Client::new()
        .post(app.url("/mcp"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

/// `/mcp` with another tenant's key (the official SDK's client): the first tenant's template
/// is not among its tools, its task is not found, its list holds only its own task.
#[tokio::test]
async fn another_tenant_sees_none_of_it_through_mcp() {
    let app = trellis::testkit::spawn_app().await;
    let (s, v) = app
        .post(
            "/api/v1/templates",
            &json!({"id": "greet", "plan": {"steps": [{"id": "hi", "tool": "echo"}]}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let theirs = app
        .submit(json!({"description": "the first tenant's", "plan": {"steps": [{"id": "a", "tool": "echo"}]}}))
        .await;
    let (s, other) = app
        .post(
            "/api/v1/keys",
            &json!({"name": "b", "role": "operator", "tenant": "b"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let _w = app.worker(|_| {});
    let root = env!("CARGO_MANIFEST_DIR");
    let python = std::env::var("TRELLIS_MCP_PYTHON")
        .unwrap_or_else(|_| format!("{root}/tests/mcp/.venv/bin/python"));
    let out = tokio::process::Command::new(python)
        .arg(format!("{root}/tests/mcp/client.py"))
        .arg(app.url("/mcp"))
        .arg(other["key"].as_str().unwrap())
        .arg(theirs.to_string())
        .env("NO_PROXY", "127.0.0.1")
        .output()
        .await
        .expect("python runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert!(
        !seen["tools"].to_string().contains("template.greet"),
        "{seen}"
    );
    assert_eq!(seen["submit"]["is_error"], false, "its own task: {seen}");
    assert_eq!(seen["other"]["is_error"], true, "{seen}");
    assert!(
        seen["other"]["text"][0].as_str().unwrap().contains("404"),
        "{seen}"
    );
    let own = seen["submit"]["structured"]["task_id"].as_str().unwrap();
    let listed = seen["list"].to_string();
    assert!(
        listed.contains(own) && !listed.contains(&theirs.to_string()),
        "{seen}"
    );
}
