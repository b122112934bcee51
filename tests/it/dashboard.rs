//! The dashboard end to end in a real headless Chromium (Debian's `chromium`, driven by npm
//! `playwright-core`, which `.ci/run` installs under tests/dashboard): the API on a real
//! listener with access control on, an in-process worker, and two tasks — one whose flaky step
//! failed once and was retried, one still running when the browser opens it. The script signs
//! in, finds and opens the first, checks its drawn plan, its failed attempt and the retry,
//! watches the second finish without a reload, opens the recovery page, checks a phone-width
//! screen, and signs in as a `reader` who sees no button it cannot use (and whose rerun the API
//! refuses). Screenshots are kept in target/dashboard-artifacts.

use trellis::testkit as common;

use std::time::Duration;

use common::spawn_app;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_end_to_end_in_headless_chromium() {
    let root = env!("CARGO_MANIFEST_DIR");
    let script = format!("{root}/tests/dashboard/e2e.mjs");
    assert!(
        std::path::Path::new(&format!(
            "{root}/tests/dashboard/node_modules/playwright-core"
        ))
        .exists(),
        "playwright-core is not installed: run `npm install --prefix tests/dashboard` (.ci/run does)"
    );
    let app = spawn_app().await;
    let worker = app.worker(|_| {});
    let (s, reader) = app
        .post(
            "/api/v1/keys",
            &json!({"name": "dashboard reader", "role": "reader"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{reader}");
    // another tenant's reader, who sees none of it
    let (s, other) = app
        .post(
            "/api/v1/keys",
            &json!({"name": "another tenant", "role": "reader", "tenant": "other"}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{other}");
    let recovered = app
        .submit(json!({
            "description": "a flaky step, retried",
            "plan": {"steps": [
                {"id": "prepare", "tool": "echo", "parameters": {"text": "ready"}},
                {"id": "shaky", "tool": "flaky", "parameters": {"fail_times": 1}, "dependencies": ["prepare"]}
            ]}
        }))
        .await;
    let done = app.wait_done(recovered, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let broken = app
        .submit(json!({
            "description": "a step that cannot succeed",
            "limits": {"max_task_replans": 1},
            "plan": {"steps": [
                {"id": "broken", "tool": "fail",
                 "parameters": {"message": "the input is malformed", "category": "bad_input", "retryable": false}}
            ]}
        }))
        .await;
    let ended = app.wait_done(broken, Duration::from_secs(60)).await;
    assert_ne!(ended["status"], "succeeded", "{ended}");
    let running = app
        .submit(json!({
            "description": "still running when the browser opens it",
            "concurrency_key": "acme",
            "plan": {"steps": [
                {"id": "start", "tool": "echo", "parameters": {"text": "go"}},
                {"id": "wait", "tool": "sleep", "parameters": {"ms": 20000}, "dependencies": ["start"]}
            ]}
        }))
        .await;
    let (s, t) = app
        .post(
            "/api/v1/templates",
            &json!({"id": "greet", "description": "Greet someone",
                "plan": {"steps": [{"id": "hello", "tool": "echo", "parameters": {"text": "hi"}}]}}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{t}");
    // the overview's activity: the attempts just finished, the failed one among them
    let (_, act) = app.get("/api/v1/stats/activity").await;
    let sum = |k: &str| {
        act["minutes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m[k].as_i64().unwrap())
            .sum::<i64>()
    };
    let tools = act["tools"].as_array().unwrap();
    let per_tool = |k: &str| tools.iter().map(|t| t[k].as_i64().unwrap()).sum::<i64>();
    assert_eq!(
        (sum("succeeded") + sum("failed"), sum("failed")),
        (per_tool("attempts"), per_tool("failed")),
        "the minutes and the tools count the same attempts: {act}"
    );
    assert!(sum("succeeded") >= 2 && sum("failed") >= 2, "{act}");
    assert!(act["workers"].as_i64().unwrap() >= 1, "{act}");
    // tasks: the last hour's by status (every status present), the unfinished ones
    let recent = act["recent_tasks"].as_object().unwrap();
    assert_eq!(recent.len(), 10, "every status: {act}");
    assert_eq!(
        recent.values().map(|n| n.as_i64().unwrap()).sum::<i64>(),
        3,
        "{act}"
    );
    assert_eq!(recent["succeeded"], 1, "{act}");
    assert_eq!(act["recent_cap"], 100_000, "{act}");
    let unfinished = act["unfinished_tasks"].as_object().unwrap();
    assert!(
        !unfinished.contains_key("succeeded") && unfinished.contains_key("needs_intervention"),
        "{act}"
    );
    let still = unfinished
        .values()
        .map(|n| n.as_i64().unwrap())
        .sum::<i64>();
    assert!(still >= 1, "the sleeping task is unfinished: {act}");
    let flaky = act["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "flaky")
        .expect("flaky in the last hour");
    assert_eq!(
        (flaky["attempts"].as_i64(), flaky["failed"].as_i64()),
        (Some(2), Some(1)),
        "{act}"
    );
    let doomed = app
        .submit(json!({
            "description": "cancelled from the list",
            "plan": {"steps": [{"id": "long", "tool": "sleep", "parameters": {"ms": 600000}}]}
        }))
        .await;
    // what the list's "Rerun all matching…" reruns (it fails again: a bulk action's outcome is
    // the rerun starting, not its result)
    let target = app
        .submit(json!({
            "description": "a bulk target",
            "limits": {"max_step_retries": 0, "max_single_step_repairs": 0, "max_task_replans": 0},
            "plan": {"steps": [{"id": "t", "tool": "fail",
                "parameters": {"message": "down", "category": "bad_input", "retryable": false}}]}
        }))
        .await;
    app.wait_done(target, Duration::from_secs(60)).await;
    let artifacts = format!("{root}/target/dashboard-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let out = tokio::process::Command::new("node")
        .arg(&script)
        .env("DASHBOARD_URL", app.url("/"))
        .env("ADMIN_KEY", common::ADMIN_KEY)
        .env("READER_KEY", reader["key"].as_str().unwrap())
        .env("TENANT_KEY", other["key"].as_str().unwrap())
        .env("RECOVERED_TASK", recovered.to_string())
        .env("RECOVERED_STEP", "shaky")
        .env("RUNNING_TASK", running.to_string())
        .env("BROKEN_TASK", broken.to_string())
        .env("DOOMED_TASK", doomed.to_string())
        .env("BULK_TARGET", target.to_string())
        .env("ARTIFACTS", &artifacts)
        .env("NO_PROXY", "127.0.0.1")
        .kill_on_drop(true)
        .output()
        .await
        .expect("node runs (install nodejs)");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the browser run failed:\n{log}");
    for shot in [
        "overview",
        "recovered-task",
        "finished-live",
        "recovery",
        "phone",
    ] {
        let meta = std::fs::metadata(format!("{artifacts}/{shot}.png")).unwrap();
        assert!(meta.len() > 1000, "{shot}.png is empty");
    }
    worker.stop().await;
}

/// The dashboard's list of task statuses is the domain's, in the same order.
#[test]
fn the_dashboards_task_statuses_are_the_domains() {
    let js = include_str!("../../src/api/dashboard/app.js");
    let line = js
        .lines()
        .find_map(|l| l.strip_prefix("const TASK_STATUSES = ["))
        .expect("TASK_STATUSES in app.js");
    let listed: Vec<&str> = line
        .trim_end_matches("];")
        .split(',')
        .map(|s| s.trim().trim_matches('\''))
        .collect();
    let domain: Vec<String> = trellis::domain::status::TaskStatus::ALL
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(listed, domain);
}

/// The approvals and schedules pages in headless Chromium: a call of a `requires_approval`
/// tool is approved from the page with an edited parameter, and the tool receives the edit; a
/// schedule's next ticks are shown and it is paused from the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_and_schedules_pages_in_headless_chromium() {
    let app = spawn_app().await;
    let server = common::ToolServer::echoing_step(Duration::ZERO).await;
    common::register_tool(
        &app,
        "deploy",
        &server.endpoint("deploy"),
        json!({"requires_approval": true}),
    )
    .await;
    let worker = app.worker(|_| {});
    let task = app
        .submit(
            json!({"description": "deploy with a person's yes", "plan": {"steps": [
            {"id": "d", "tool": "deploy", "parameters": {"env": "staging"}}]}}),
        )
        .await;
    let wait = common::wait_for("the approval", Duration::from_secs(30), || async {
        let (_, v) = app
            .get(&format!("/api/v1/waits?status=open&task_id={task}"))
            .await;
        v.as_array()
            .and_then(|l| l.first())
            .map(|w| w["wait_id"].as_str().unwrap().to_string())
    })
    .await;
    let (s, v) = app
        .post(
            "/api/v1/schedules",
            &json!({"id": "hourly", "cron": "0 * * * *", "timezone": "Europe/Paris",
                    "plan": {"steps": [{"id": "e", "tool": "echo"}]}}),
        )
        .await;
    assert_eq!(s.as_u16(), 201, "{v}");
    let env = [
        ("WAIT_ID", wait.clone()),
        ("GATED_TASK", task.to_string()),
        ("SCHEDULE_ID", "hourly".to_string()),
    ];
    let log = common::procs::browser_script(&app, "waits.mjs", &env).await;
    let calls = server.calls();
    assert_eq!(calls.len(), 1, "{log}");
    assert_eq!(
        calls[0].parameters["env"], "production",
        "the edit reached the tool"
    );
    let (_, w) = app.get(&format!("/api/v1/waits/{wait}")).await;
    assert_eq!(w["resolution"]["comment"], "ship it");
    let (_, s) = app.get("/api/v1/schedules/hourly").await;
    assert_eq!(s["enabled"], false);
    worker.stop().await;
}

/// A map step in headless Chromium: one node with its progress that opens into its items,
/// the given-up one shown with its error; then a parent and its child task, linked both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_map_is_one_node_that_opens_into_its_items_in_headless_chromium() {
    let app = spawn_app().await;
    let worker = app.worker(|_| {});
    let fails = [0, 1000, 0, 0, 0, 0];
    let items: Vec<serde_json::Value> = fails.iter().map(|f| json!({"fails": f})).collect();
    let task = app
        .submit(json!({"description": "a map", "plan": {"steps": [
            {"id": "a", "tool": "echo", "parameters": {"items": items}},
            {"id": "m", "tool": "flaky", "parameters": {"fail_times": "${item.fails}"},
             "dependencies": ["a"],
             "map": {"over": "${a.output.items}", "max_items": 10, "max_parallel": 2,
                     "on_item_failure": "continue"}},
            {"id": "b", "tool": "echo", "parameters": {"all": "${m.output}"}, "dependencies": ["m"]}
        ]}}))
        .await;
    let done = app.wait_done(task, Duration::from_secs(60)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let parent = app
        .submit(json!({"description": "a parent", "plan": {"steps": [
            {"id": "k", "tool": "task", "parameters": {"plan": {"steps": [{"id": "e", "tool": "echo"}]}}}
        ]}}))
        .await;
    let done = app.wait_done(parent, Duration::from_secs(60)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let child = done["children"][0]["task_id"].as_str().unwrap().to_string();
    let env = [
        ("PARENT_TASK", parent.to_string()),
        ("CHILD_TASK", child),
        ("MAP_TASK", task.to_string()),
        ("MAP_ITEMS", fails.len().to_string()),
        ("MAP_GIVEN_UP", "1".to_string()),
    ];
    common::procs::browser_script(&app, "maps.mjs", &env).await;
    worker.stop().await;
}
