//! The real `trellis` binary against a real API server (fresh database, in-process worker).

use trellis::testkit as common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_trellis");

/// What one run of the binary did.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }
}

/// Runs `trellis ARGS` with the app's address and admin key in the environment, stdout and
/// stderr piped (not a terminal).
async fn trellis(app: &common::TestApp, args: &[&str]) -> Run {
    trellis_env(&app.url(""), Some(common::ADMIN_KEY), args).await
}

async fn trellis_env(url: &str, key: Option<&str>, args: &[&str]) -> Run {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(args)
        .env("TRELLIS_URL", url)
        .env_remove("TRELLIS_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(k) = key {
        cmd.env("TRELLIS_API_KEY", k);
    }
    let out = cmd.output().await.expect("the trellis binary runs");
    Run {
        code: out.status.code().expect("exited, not killed"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A scratch folder for the files a test hands the CLI.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("trellis-cli-{name}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const GOOD_PLAN: &str = "\
steps:
  - id: fetch
    tool: echo
    parameters: {x: 1}
  - id: wait
    tool: sleep
    parameters: {ms: 300}
    dependencies: [fetch]
  - id: report
    tool: echo
    parameters: {from: '${fetch.output.x}'}
    dependencies: [wait]
";

/// Acceptance 1 (plain half): `submit plan.yaml --watch` exits 0 for a task that succeeds and
/// 1 for one that fails, printing one plain line per event when not on a terminal.
#[tokio::test(flavor = "multi_thread")]
async fn submit_watch_exits_0_on_success_and_1_on_failure() {
    let app = common::spawn_app().await;
    let _w = app.worker(|_| {});
    let dir = Dir::new("watch");
    let good = dir.file("plan.yaml", GOOD_PLAN);
    let run = trellis(&app, &["submit", &good, "--watch"]).await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for needle in [
        "watching task",
        "step_started",
        "fetch · tool echo",
        "task_succeeded",
    ] {
        assert!(
            run.stdout.contains(needle),
            "{needle:?} missing:\n{}",
            run.stdout
        );
    }
    let last = run.stdout.lines().last().unwrap();
    assert!(last.contains("succeeded in"), "{last}");
    assert!(
        !run.stdout.contains('\u{1b}'),
        "no terminal control codes when piped"
    );

    let bad = dir.file(
        "bad.json",
        &json!({
            "description": "fails for good",
            "limits": {"max_step_retries": 0, "max_single_step_repairs": 0, "max_task_replans": 0},
            "plan": {"steps": [{"id": "boom", "tool": "fail",
                                "parameters": {"message": "no such file", "retryable": false}}]}
        })
        .to_string(),
    );
    let run = trellis(&app, &["submit", &bad, "--watch"]).await;
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("step_failed"), "{}", run.stdout);
    assert!(run.stdout.contains("no such file"), "{}", run.stdout);

    // --json: one event per line, then the end state
    let run = trellis(&app, &["--json", "submit", &good, "--watch"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(lines.iter().any(|l| l["kind"] == "step_completed"));
    assert_eq!(lines.last().unwrap()["status"], "succeeded");
}

/// Acceptance 1 (terminal half): through a pseudo-terminal (`script`) the progress bar is
/// drawn (steps done / total, the running step) and the watch still exits 0.
#[tokio::test(flavor = "multi_thread")]
async fn the_progress_bar_renders_in_a_terminal() {
    let app = common::spawn_app().await;
    let _w = app.worker(|_| {});
    let dir = Dir::new("tty");
    let plan = dir.file("plan.yaml", GOOD_PLAN);
    let log = dir.path().join("typescript");
    // script gives the command a pseudo-terminal and returns its exit status (-e)
    let inner = format!("{BIN} submit {plan} --watch");
    let out = tokio::process::Command::new("script")
        .args(["-qefc", &inner, log.to_str().unwrap()])
        .env("TRELLIS_URL", app.url(""))
        .env("TRELLIS_API_KEY", common::ADMIN_KEY)
        .env("TERM", "xterm-256color")
        .env("COLUMNS", "120")
        .stdin(Stdio::null())
        .output()
        .await
        .expect("script(1) runs");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert!(
        screen.contains("/3 steps"),
        "the bar shows done/total:\n{screen:?}"
    );
    assert!(
        screen.contains("running wait (sleep)"),
        "the running step:\n{screen:?}"
    );
    assert!(
        screen.contains('\u{1b}'),
        "the bar redraws with control codes"
    );
    assert!(screen.contains("succeeded in"), "{screen:?}");
}

/// Exit codes scripts rely on: 2 for usage and connection errors, 1 when the API refuses.
#[tokio::test(flavor = "multi_thread")]
async fn exit_codes_tell_usage_connection_and_api_errors_apart() {
    let app = common::spawn_app().await;
    let run = trellis(&app, &["submit"]).await;
    assert_eq!(
        run.code, 2,
        "a missing argument is a usage error: {}",
        run.stderr
    );
    let run = trellis(&app, &["submit", "/nonexistent/plan.yaml"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("cannot read"), "{}", run.stderr);

    // a port nothing listens on
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let run = trellis_env(&url, Some(common::ADMIN_KEY), &["tasks"]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("cannot reach"), "{}", run.stderr);

    let run = trellis_env(&app.url(""), None, &["tasks"]).await;
    assert_eq!(run.code, 1, "no key: 401");
    assert!(run.stderr.contains("unauthorized"), "{}", run.stderr);
    let missing = uuid::Uuid::new_v4().to_string();
    let run = trellis(&app, &["show", &missing]).await;
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("404"), "{}", run.stderr);
    let run = trellis(&app, &["watch", &missing]).await;
    assert_eq!(run.code, 1);
}

/// Every other command against the real server: registries, keys, tasks, show, result,
/// events, cancel, resume, rerun with overrides, workers and stats, as tables and as JSON.
#[tokio::test(flavor = "multi_thread")]
async fn every_command_works_against_a_real_server() {
    let app = common::spawn_app().await;
    let _w = app.worker(|_| {});
    let dir = Dir::new("all");

    // tools and templates from YAML files (a list registers each entry)
    let tools = dir.file(
        "tools.yaml",
        &format!(
            "- id: lookup\n  endpoint: {}\n  description: looks things up\n  max_concurrency: 2\n\
             - id: lookup2\n  endpoint: {}\n  description: the other one\n",
            app.url("/nowhere"),
            app.url("/nowhere2")
        ),
    );
    let run = trellis(&app, &["tools", "add", &tools]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("registered tool lookup2"),
        "{}",
        run.stdout
    );
    let run = trellis(&app, &["tools", "ls"]).await;
    assert!(
        run.stdout.contains("lookup") && run.stdout.contains("echo"),
        "{}",
        run.stdout
    );
    let run = trellis(&app, &["--json", "tools", "ls"]).await;
    let ids: Vec<String> = run
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    assert!(ids.contains(&"lookup".to_string()), "{ids:?}");
    assert_eq!(trellis(&app, &["tools", "rm", "lookup2"]).await.code, 0);
    // a tool's steps held and released
    let run = trellis(&app, &["tools", "pause", "lookup"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("paused tool lookup"), "{}", run.stdout);
    assert_eq!(app.get("/api/v1/tools/lookup").await.1["paused"], true);
    let run = trellis(&app, &["--json", "tools", "resume", "lookup"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.json()["paused"], false);
    let (_, v) = app.get("/api/v1/tools/lookup2").await;
    assert_eq!(v["error"]["code"], "not_found", "{v}");

    let template = dir.file(
        "t.json",
        &json!({"id": "greet", "description": "say hi",
                "input_schema": {"type": "object", "properties": {"who": {"type": "string"}},
                                 "required": ["who"]},
                "plan": {"steps": [{"id": "hi", "tool": "echo", "parameters": {"to": "${input.who}"}}]}})
        .to_string(),
    );
    assert_eq!(
        trellis(&app, &["templates", "add", &template]).await.code,
        0
    );
    let run = trellis(&app, &["templates", "ls"]).await;
    assert!(run.stdout.contains("greet"), "{}", run.stdout);
    let by_template = dir.file("sub.yaml", "template: greet\ninput: {who: ops}\n");
    let run = trellis(&app, &["--json", "submit", &by_template, "--watch"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let first: Value = serde_json::from_str(run.stdout.lines().next().unwrap()).unwrap();
    let tid = first["task_id"].as_str().unwrap().to_string();
    let run = trellis(&app, &["--json", "result", &tid]).await;
    assert_eq!(run.json()["outputs"]["hi"]["to"], "ops");
    assert_eq!(trellis(&app, &["templates", "rm", "greet"]).await.code, 0);

    // keys: create (shown once), list, revoke; the revoked key stops working
    let run = trellis(
        &app,
        &[
            "--json", "keys", "create", "--name", "ci", "--role", "reader",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let key = run.json();
    let secret = key["key"].as_str().unwrap().to_string();
    let key_id = key["id"].as_str().unwrap().to_string();
    let run = trellis(&app, &["keys", "ls"]).await;
    assert!(
        run.stdout.contains("ci") && !run.stdout.contains(&secret),
        "{}",
        run.stdout
    );
    assert_eq!(
        trellis_env(&app.url(""), Some(&secret), &["tasks"])
            .await
            .code,
        0
    );
    let run = trellis_env(
        &app.url(""),
        Some(&secret),
        &["keys", "create", "--name", "x", "--role", "admin"],
    )
    .await;
    assert_eq!(run.code, 1, "a reader cannot create keys");
    assert!(run.stderr.contains("forbidden"), "{}", run.stderr);
    assert_eq!(trellis(&app, &["keys", "revoke", &key_id]).await.code, 0);
    assert_eq!(
        trellis_env(&app.url(""), Some(&secret), &["tasks"])
            .await
            .code,
        1
    );

    // a plain plan, then list, show, result, events and rerun from its last step
    let plan = dir.file(
        "p.json",
        r#"{"steps": [{"id": "a", "tool": "echo", "parameters": {"x": 1}},
        {"id": "b", "tool": "echo", "parameters": {"y": 1}, "dependencies": ["a"]}]}"#,
    );
    let run = trellis(
        &app,
        &[
            "--json",
            "submit",
            &plan,
            "--watch",
            "--description",
            "two steps",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let first: Value = serde_json::from_str(run.stdout.lines().next().unwrap()).unwrap();
    let id = first["task_id"].as_str().unwrap().to_string();
    let run = trellis(&app, &["tasks", "--status", "succeeded"]).await;
    assert!(
        run.stdout.contains(&id) && run.stdout.contains("two steps"),
        "{}",
        run.stdout
    );
    let run = trellis(&app, &["show", &id]).await;
    assert!(
        run.stdout.contains("succeeded") && run.stdout.contains("2 total"),
        "{}",
        run.stdout
    );
    let run = trellis(&app, &["events", &id]).await;
    assert!(
        run.stdout.contains("task_submitted") && run.stdout.contains("task_succeeded"),
        "{}",
        run.stdout
    );
    let overrides = dir.file("o.yaml", "b:\n  parameters: {y: 2}\n");
    let run = trellis(
        &app,
        &[
            "rerun",
            &id,
            "--from",
            "b",
            "--overrides",
            &overrides,
            "--watch",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let result = trellis(&app, &["--json", "result", &id]).await.json();
    assert_eq!(result["outputs"]["b"]["y"], 2, "{result}");
    assert_eq!(result["outputs"]["a"]["x"], 1, "{result}");

    // resume of a task that needs no intervention: the API's 409, exit 1
    let run = trellis(&app, &["resume", &id]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);

    // cancel a long task
    let long = dir.file(
        "long.yaml",
        "steps:\n  - id: nap\n    tool: sleep\n    parameters: {ms: 20000}\n",
    );
    let run = trellis(&app, &["--json", "submit", &long]).await;
    let long_id = run.json()["task_id"].as_str().unwrap().to_string();
    let run = trellis(&app, &["cancel", &long_id]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = trellis(&app, &["watch", &long_id]).await;
    assert_eq!(run.code, 1, "a cancelled task did not succeed");
    assert!(run.stdout.contains("cancelled"), "{}", run.stdout);

    // the fleet and the statistics
    let run = trellis(&app, &["--json", "workers"]).await;
    assert_eq!(run.json().as_array().unwrap().len(), 1, "{}", run.stdout);
    let run = trellis(&app, &["stats"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("succeeded") && run.stdout.contains("cancelled"),
        "{}",
        run.stdout
    );
}

/// `trellis approvals`, `trellis event` and `trellis schedules` against a real server.
#[tokio::test]
async fn approvals_events_and_schedules() {
    let app = common::spawn_app().await;
    let w = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "ask", "plan": {"steps": [
            {"id": "ask", "tool": "approval", "parameters": {"prompt": "ok?"}},
            {"id": "hear", "tool": "wait_event", "parameters": {"key": "cli-key"},
             "dependencies": ["ask"]}]}}))
        .await;
    let wait = common::wait_for(
        "the approval",
        std::time::Duration::from_secs(30),
        || async {
            let r = trellis(&app, &["--json", "approvals", "ls"]).await;
            r.json()
                .as_array()
                .and_then(|l| l.first().cloned())
                .map(|w| w["wait_id"].as_str().unwrap().to_string())
        },
    )
    .await;
    let table = trellis(&app, &["approvals", "ls"]).await;
    assert!(table.stdout.contains("ok?"), "{}", table.stdout);
    let dir = Dir::new("approve");
    let params = dir.0.join("answer.json");
    std::fs::write(&params, r#"{"n": 3}"#).unwrap();
    let r = trellis(
        &app,
        &[
            "approvals",
            "approve",
            &wait,
            "--parameters",
            params.to_str().unwrap(),
            "--comment",
            "fine",
        ],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = trellis(&app, &["approvals", "reject", &wait]).await;
    assert_eq!(r.code, 1, "a second decision is refused: {}", r.stdout);
    common::wait_for(
        "the event wait",
        std::time::Duration::from_secs(30),
        || async {
            let (_, v) = app
                .get(&format!(
                    "/api/v1/waits?status=open&kind=event&task_id={id}"
                ))
                .await;
            (v.as_array().unwrap().len() == 1).then_some(())
        },
    )
    .await;
    let r = trellis(
        &app,
        &["event", "cli-key", "--payload", r#"{"heard": true}"#],
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("resolved 1"), "{}", r.stdout);
    let done = app.wait_done(id, std::time::Duration::from_secs(30)).await;
    assert_eq!(done["status"], "succeeded", "{done}");

    let file = dir.0.join("schedule.yaml");
    std::fs::write(
        &file,
        "id: nightly\ncron: \"0 3 * * *\"\ntimezone: Europe/Berlin\nplan:\n  steps:\n    - id: e\n      tool: echo\n",
    )
    .unwrap();
    let r = trellis(&app, &["schedules", "add", file.to_str().unwrap()]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = trellis(&app, &["schedules", "pause", "nightly"]).await;
    assert!(r.stdout.contains("paused"), "{}", r.stdout);
    let r = trellis(&app, &["--json", "schedules", "ls"]).await;
    assert_eq!(r.json()[0]["enabled"], false);
    let r = trellis(&app, &["--json", "schedules", "trigger", "nightly"]).await;
    assert!(r.json()["task_id"].is_string(), "{}", r.stdout);
    let r = trellis(&app, &["schedules", "rm", "nightly"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    w.stop().await;
}

/// `trellis mcp import | ls | refresh | rm` against a real MCP server: the official MCP Python
/// SDK's FastMCP (`tests/mcp/server.py`, from the venv `test.sh` makes).
#[tokio::test]
async fn mcp_servers_from_the_command_line() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let python = std::env::var("TRELLIS_MCP_PYTHON")
        .unwrap_or_else(|_| format!("{root}/tests/mcp/.venv/bin/python"));
    assert!(
        Path::new(&python).exists(),
        "the MCP Python SDK is not installed: run `bash test.sh`"
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = tokio::process::Command::new(&python)
        .arg(format!("{root}/tests/mcp/server.py"))
        .arg(port.to_string())
        .arg("unused-key")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    common::wait_for(
        "the FastMCP server",
        std::time::Duration::from_secs(30),
        || async {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()
                .map(|_| ())
        },
    )
    .await;
    let app = common::spawn_app().await;
    let endpoint = format!("http://127.0.0.1:{port}/mcp");
    let r = trellis(
        &app,
        &["mcp", "import", "py", &endpoint, "--header", "X-Client=cli"],
    )
    .await;
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("imported 5 tool(s)"), "{}", r.stdout);
    let r = trellis(&app, &["--json", "mcp", "ls"]).await;
    assert_eq!(r.json()[0]["tools"].as_array().unwrap().len(), 5);
    assert_eq!(r.json()[0]["headers"]["X-Client"], "cli");
    let r = trellis(&app, &["mcp", "refresh", "py"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = trellis(&app, &["mcp", "rm", "py"]).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = trellis(&app, &["--json", "mcp", "ls"]).await;
    assert_eq!(r.json(), json!([]));
    let _ = server.kill().await;
}

/// `trellis tasks cancel|rerun …` starts a bulk action over the tasks a filter matches (a dry
/// run counts them), `--wait` follows it to its end, and `trellis bulk` lists and shows it.
#[tokio::test]
async fn bulk_actions_by_filter() {
    let app = common::spawn_app().await;
    let w = app.worker(|c| c.bulk_poll = std::time::Duration::from_millis(50));
    // held by the paused echo tool: the tasks stay unfinished until they are cancelled
    let (s, v) = app.post("/api/v1/tools/echo/pause", &json!({})).await;
    assert!(s.is_success(), "{v}");
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            app.submit(json!({"description": format!("bulk cli {i}"),
                "plan": {"steps": [{"id": "a", "tool": "echo", "parameters": {"i": i}}]}}))
                .await,
        );
    }
    app.submit(
        json!({"description": "left alone", "plan": {"steps": [{"id": "a", "tool": "echo"}]}}),
    )
    .await;
    let run = trellis(&app, &["tasks", "cancel", "--q", "bulk cli", "--dry-run"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("would match 3 tasks"), "{}", run.stdout);
    let run = trellis(
        &app,
        &[
            "tasks", "cancel", "--q", "bulk cli", "--name", "hold", "--wait",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("done — 3/3 done, 0 failed"),
        "{}",
        run.stdout
    );
    for id in &ids {
        assert_eq!(
            app.get(&format!("/api/v1/tasks/{id}")).await.1["status"],
            "cancelled"
        );
    }
    let (s, _) = app.post("/api/v1/tools/echo/resume", &json!({})).await;
    assert!(s.is_success());
    let run = trellis(
        &app,
        &[
            "--json",
            "tasks",
            "rerun",
            "--status",
            "cancelled",
            "--since",
            "2h",
            "--from",
            "first-failed",
            "--wait",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // the action as created, then as it ended
    let last: Value = serde_json::Deserializer::from_str(&run.stdout)
        .into_iter::<Value>()
        .last()
        .unwrap()
        .unwrap();
    assert_eq!(
        (last["status"].as_str(), last["done"].as_i64()),
        (Some("done"), Some(3)),
        "{last}"
    );
    for id in &ids {
        let t = app.wait_done(*id, std::time::Duration::from_secs(60)).await;
        assert_eq!(t["status"], "succeeded", "{t}");
    }
    // the price map
    let run = trellis(
        &app,
        &[
            "prices",
            "set",
            "gpt-test",
            "--input",
            "0.15",
            "--output",
            "0.6",
            "--cached-input",
            "0.075",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("gpt-test: 0.15 / 0.6 per million tokens"),
        "{}",
        run.stdout
    );
    let run = trellis(&app, &["--json", "prices", "ls"]).await;
    assert_eq!(run.json()[0]["cached_input_per_mtok"], 0.075);
    let run = trellis(&app, &["bulk", "ls"]).await;
    assert!(
        run.stdout.contains("rerun") && run.stdout.contains("hold"),
        "{}",
        run.stdout
    );
    let id = last["bulk_action_id"].as_str().unwrap();
    let run = trellis(&app, &["bulk", "show", id]).await;
    assert!(run.stdout.contains("3/3 done"), "{}", run.stdout);
    let run = trellis(&app, &["bulk", "abort", id]).await;
    assert_ne!(run.code, 0, "a finished action was aborted");
    assert!(run.stderr.contains("409"), "{}", run.stderr);
    w.stop().await;
}
