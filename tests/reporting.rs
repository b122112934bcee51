//! Acceptance (issue 3) 5: the recovery views return the right numbers for a known mix (and
//! `recovery_by_action`, added for the dashboard's recovery page).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{ToolServer, register_tool, spawn_app};
use serde_json::{Value, json};
use trellis::store::reports::ReportView;

const LIMIT: Duration = Duration::from_secs(60);

fn row<'a>(rows: &'a [Value], key: &str, value: &str) -> &'a Value {
    rows.iter()
        .find(|r| r[key] == value)
        .unwrap_or_else(|| panic!("no row with {key} = {value} in {rows:?}"))
}

fn n(v: &Value, field: &str) -> i64 {
    v[field]
        .as_i64()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

#[tokio::test]
async fn views_count_a_known_scenario_mix() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|c| match c.tool.as_str() {
            "primary" => (503, json!({"error": {"message": "down"}})),
            _ => (200, json!({"output": {"ok": true}})),
        }),
    )
    .await;
    register_tool(&app, "backup", &server.endpoint("backup"), json!({})).await;
    register_tool(
        &app,
        "primary",
        &server.endpoint("primary"),
        json!({"alternatives": ["backup"]}),
    )
    .await;
    let w = app.worker(|_| {});
    let one = |tool: &str, params: Value| json!({"description": tool, "plan": {"steps": [{"id": "step_1", "tool": tool, "parameters": params}]}});
    // A: flaky fails once → tier 1 (same tool) saves it
    let a = app.submit(one("flaky", json!({"fail_times": 1}))).await;
    // B: primary is down → tier 1 with the alternative tool saves it
    let b = app.submit(one("primary", json!({}))).await;
    // C: a non-recoverable external error → tier 3 stop, never saved
    let c = app
        .submit(one(
            "fail",
            json!({"message": "forbidden", "category": "external_error"}),
        ))
        .await;
    // D: no failure at all
    let d = app.submit(one("echo", json!({}))).await;
    for id in [a, b, d] {
        assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    }
    assert_eq!(
        app.wait_done(c, LIMIT).await["status"],
        "needs_intervention"
    );
    w.stop().await;
    let store = app.store();

    let tiers = store.report(ReportView::RecoveryByTier).await.unwrap();
    assert_eq!(tiers.len(), 2, "{tiers:?}");
    let t1 = &tiers[0];
    assert_eq!(
        (
            n(t1, "tier"),
            n(t1, "actions"),
            n(t1, "succeeded_after"),
            n(t1, "saved")
        ),
        (1, 2, 2, 2)
    );
    assert_eq!(t1["saved_pct"].as_f64(), Some(100.0));
    assert!(t1["mean_ms_to_recover"].as_f64().unwrap() >= 0.0);
    let t3 = &tiers[1];
    assert_eq!((n(t3, "tier"), n(t3, "actions"), n(t3, "saved")), (3, 1, 0));
    assert!(t3["mean_ms_to_recover"].is_null());

    let actions = store.report(ReportView::RecoveryByAction).await.unwrap();
    let by_action: Vec<(i64, String, i64, i64)> = actions
        .iter()
        .map(|r| {
            (
                n(r, "tier"),
                r["action"].as_str().unwrap().to_string(),
                n(r, "actions"),
                n(r, "saved"),
            )
        })
        .collect();
    assert_eq!(
        by_action,
        [
            (1, "retry_with_params".to_string(), 1, 1),
            (1, "retry_with_tool".to_string(), 1, 1),
            (3, "intervention".to_string(), 1, 0),
        ],
        "{actions:?}"
    );
    let tools = store.report(ReportView::RecoveryByTool).await.unwrap();
    let flaky = row(&tools, "tool", "flaky");
    assert_eq!(
        (
            n(flaky, "attempts"),
            n(flaky, "failures"),
            n(flaky, "tier1_actions"),
            n(flaky, "saved_by_tier1"),
            n(flaky, "recovered")
        ),
        (2, 1, 1, 1, 1)
    );
    let primary = row(&tools, "tool", "primary");
    assert_eq!(
        (
            n(primary, "attempts"),
            n(primary, "failures"),
            n(primary, "tier1_actions"),
            n(primary, "recovered")
        ),
        (1, 1, 1, 1)
    );
    let backup = row(&tools, "tool", "backup");
    assert_eq!(
        (
            n(backup, "attempts"),
            n(backup, "failures"),
            n(backup, "recovered")
        ),
        (1, 0, 0)
    );
    let fail = row(&tools, "tool", "fail");
    assert_eq!(
        (
            n(fail, "attempts"),
            n(fail, "failures"),
            n(fail, "tier3_actions"),
            n(fail, "recovered")
        ),
        (1, 1, 1, 0)
    );
    let echo = row(&tools, "tool", "echo");
    assert_eq!((n(echo, "attempts"), n(echo, "failures")), (1, 0));

    let cats = store.report(ReportView::RecoveryByCategory).await.unwrap();
    assert_eq!(cats.len(), 2, "{cats:?}");
    let tool_error = row(&cats, "category", "tool_error");
    assert_eq!(
        (
            n(tool_error, "failures"),
            n(tool_error, "tier1_actions"),
            n(tool_error, "recovered")
        ),
        (2, 2, 2)
    );
    let external = row(&cats, "category", "external_error");
    assert_eq!(
        (
            n(external, "failures"),
            n(external, "tier3_actions"),
            n(external, "recovered")
        ),
        (1, 1, 0)
    );

    let outcomes = store.report(ReportView::TaskOutcomes).await.unwrap();
    let ok = row(&outcomes, "status", "succeeded");
    assert_eq!(
        (
            n(ok, "tasks"),
            n(ok, "attempts"),
            n(ok, "failures"),
            n(ok, "tasks_with_recovery"),
            n(ok, "succeeded_after_recovery")
        ),
        (3, 5, 2, 2, 2)
    );
    assert_eq!(ok["mean_final_score"].as_f64(), Some(100.0));
    let stopped = row(&outcomes, "status", "needs_intervention");
    assert_eq!(
        (
            n(stopped, "tasks"),
            n(stopped, "failures"),
            n(stopped, "tasks_with_recovery")
        ),
        (1, 1, 1)
    );

    // the same numbers over HTTP
    let (_, all) = app.get("/api/v1/stats/recovery").await;
    assert_eq!(all["recovery_by_tier"], json!(tiers));
    assert_eq!(all["recovery_by_action"], json!(actions));
    assert_eq!(
        all["task_outcomes"].as_array().unwrap().len(),
        outcomes.len()
    );
}
