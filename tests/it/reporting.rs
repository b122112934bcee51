//! Acceptance (issue 3) 5: the recovery views return the right numbers for a known mix (and
//! `recovery_by_action`, added for the dashboard's recovery page).

use trellis::testkit as common;

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

/// One `psql` table of the docs: its columns and its rows, cell by cell.
struct Pasted {
    sql: String,
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

/// The queries of a section of docs/sql-reporting.md, each with the table pasted under it.
fn pasted(section: &str) -> Vec<Pasted> {
    let mut out = Vec::new();
    let mut blocks = section.split("```").skip(1).step_by(2);
    while let (Some(sql), Some(table)) = (blocks.next(), blocks.next()) {
        let sql = sql
            .trim_start_matches("sql")
            .trim()
            .trim_end_matches(';')
            .to_string();
        let cells = |l: &str| {
            l.split('|')
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        };
        let lines: Vec<&str> = table.lines().filter(|l| !l.trim().is_empty()).collect();
        let rows = lines[2..]
            .iter()
            .filter(|l| !l.starts_with('('))
            .map(|l| cells(l))
            .collect();
        out.push(Pasted {
            sql,
            columns: cells(lines[0]),
            rows,
        });
    }
    out
}

/// A JSON value as `psql` prints it.
fn printed(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// docs/sql-reporting.md's example is what its queries print for the mix it describes, run here
/// through the rules brain: every cell, but the milliseconds (only whether there is one).
#[tokio::test]
async fn the_documented_example_is_what_the_queries_print() {
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
    let step =
        |tool: &str, params: Value| json!({"id": "step_1", "tool": tool, "parameters": params});
    let task = |steps: Value| json!({"description": "mix", "plan": {"steps": steps}});
    let mut ids = Vec::new();
    for t in [
        task(json!([step("flaky", json!({"fail_times": 2}))])),
        task(json!([step("primary", json!({}))])),
        task(json!([step(
            "fail",
            json!({"message": "forbidden", "category": "external_error"})
        )])),
        task(json!([step("echo", json!({})),
                    {"id": "step_2", "tool": "flaky", "dependencies": ["step_1"], "parameters": {"fail_times": 4}}])),
        task(json!([step("echo", json!({}))])),
    ] {
        // one after the other, as the example ran
        let id = app.submit(t).await;
        app.wait_done(id, LIMIT).await;
        ids.push(id);
    }
    w.stop().await;
    let doc = include_str!("../../docs/sql-reporting.md");
    let example = doc
        .split("## Example")
        .nth(1)
        .and_then(|s| s.split("## More questions").next())
        .expect("the example section");
    let tables = pasted(example);
    assert_eq!(tables.len(), 5, "the example's five queries");
    if std::env::var("TRELLIS_WRITE_EXAMPLE").is_ok() {
        write_example(&app.db.url, doc, &tables);
        return;
    }
    for t in tables {
        let sql = format!("SELECT coalesce(json_agg(q), '[]') FROM ({}) q", t.sql);
        let got: Value = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(app.store().pool())
            .await
            .unwrap();
        let got: Vec<Vec<String>> = got
            .as_array()
            .unwrap()
            .iter()
            .map(|r| t.columns.iter().map(|c| printed(&r[c])).collect())
            .collect();
        let shown = |rows: &[Vec<String>]| {
            rows.iter()
                .map(|r| r.join(" | "))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let same = got.len() == t.rows.len()
            && got.iter().zip(&t.rows).all(|(g, d)| {
                g.iter().zip(d).zip(&t.columns).all(|((g, d), c)| {
                    if c.contains("ms") {
                        g.is_empty() == d.is_empty()
                    } else {
                        g == d
                    }
                })
            });
        assert!(
            same,
            "{}\nthe docs show:\n{}\nthe query prints:\n{}",
            t.sql,
            shown(&t.rows),
            shown(&got)
        );
    }
}

/// `TRELLIS_WRITE_EXAMPLE=1`: paste what `psql` prints for each query of the example into
/// docs/sql-reporting.md.
fn write_example(url: &str, doc: &str, tables: &[Pasted]) {
    let psql = trellis::devpg::find_bindir().unwrap().join("psql");
    let mut doc = doc.to_string();
    for t in tables {
        let out = std::process::Command::new(&psql)
            .args([url, "-X", "-c", &format!("{};", t.sql)])
            .output()
            .unwrap();
        let printed = String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .to_string()
            + "\n";
        let block = format!("{};\n```\n```\n", t.sql);
        let start = doc.find(&block).expect("the query's block") + block.len();
        let end = start + doc[start..].find("```").unwrap();
        doc.replace_range(start..end, &printed);
    }
    std::fs::write(
        concat!(env!("CARGO_MANIFEST_DIR"), "/docs/sql-reporting.md"),
        doc,
    )
    .unwrap();
}
