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

/// A row of `recovery_cost_by_tier`: tier, strategy, actions, LLM cost, tool cost, saved steps,
/// tasks saved, cost per task saved.
type TierCost = (i32, String, i64, f64, f64, i64, i64, Option<f64>);

async fn tier_costs(store: &trellis::store::Store) -> Vec<TierCost> {
    sqlx::query_as(
        "SELECT tier, strategy, actions, llm_cost::float8, tool_cost::float8, saved_steps,
                tasks_saved, cost_per_task_saved::float8
         FROM recovery_cost_by_tier ORDER BY tier, strategy",
    )
    .fetch_all(store.pool())
    .await
    .unwrap()
}

/// Cost (operations issue, acceptance 2): tools report `usage.cost` beside their output; the
/// cost views, checked cell by cell against a known mix, before and after retention deletes
/// the tasks (their costs stay in the daily roll-ups).
#[tokio::test]
async fn cost_views_count_a_known_mix_and_survive_a_prune() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|c| match c.tool.as_str() {
            "primary" => (503, json!({"error": {"message": "down"}})),
            "paid" if c.parameters["fail_first"] == true && c.attempt == 1 => {
                (503, json!({"error": {"message": "busy"}}))
            }
            "paid" => (200, json!({"output": {"ok": true}, "usage": {"cost": 0.5}})),
            _ => (
                200,
                json!({"output": {"ok": true}, "usage": {"cost": 0.25}}),
            ),
        }),
    )
    .await;
    register_tool(&app, "backup", &server.endpoint("backup"), json!({})).await;
    register_tool(&app, "paid", &server.endpoint("paid"), json!({})).await;
    register_tool(
        &app,
        "primary",
        &server.endpoint("primary"),
        json!({"alternatives": ["backup"]}),
    )
    .await;
    let w = app.worker(|_| {});
    let one = |tool: &str, params: Value| json!({"description": tool, "plan": {"steps": [{"id": "step_1", "tool": tool, "parameters": params}]}});
    // A1, A2: paid fails once, then costs 0.5 → tier 1 on the same tool saves each
    let a1 = app.submit(one("paid", json!({"fail_first": true}))).await;
    let a2 = app.submit(one("paid", json!({"fail_first": true}))).await;
    // B: primary is down → tier 1 with the alternative (0.25) saves it
    let b = app.submit(one("primary", json!({}))).await;
    // C: a non-recoverable error → tier 3 stop, nothing saved, nothing spent
    let c = app
        .submit(one(
            "fail",
            json!({"message": "forbidden", "category": "external_error"}),
        ))
        .await;
    // E: paid at once (0.5), no recovery
    let e = app.submit(one("paid", json!({}))).await;
    for id in [a1, a2, b, e] {
        assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    }
    assert_eq!(
        app.wait_done(c, LIMIT).await["status"],
        "needs_intervention"
    );
    w.stop().await;
    let store = app.store();
    let attempt_costs: Vec<(String, Option<f64>)> =
        sqlx::query_as("SELECT tool, cost::float8 FROM attempts WHERE task_id = $1 ORDER BY id")
            .bind(a1)
            .fetch_all(store.pool())
            .await
            .unwrap();
    assert_eq!(
        attempt_costs,
        [("paid".to_string(), None), ("paid".to_string(), Some(0.5))]
    );
    let label: String = sqlx::query_scalar("SELECT action FROM recoveries WHERE task_id = $1")
        .bind(a1)
        .fetch_one(store.pool())
        .await
        .unwrap();
    let expected: Vec<TierCost> = {
        let mut v = vec![
            (1, label.clone(), 2, 0.0, 1.0, 2, 2, Some(0.5)),
            (1, "retry_with_tool".into(), 1, 0.0, 0.25, 1, 1, Some(0.25)),
            (3, "intervention".into(), 1, 0.0, 0.0, 0, 0, None),
        ];
        v.sort_by(|x, y| (x.0, &x.1).cmp(&(y.0, &y.1)));
        v
    };
    let by_tool = |store: &trellis::store::Store| {
        let pool = store.pool().clone();
        async move {
            sqlx::query_as::<_, (String, i64, f64)>(
                "SELECT tool, attempts::bigint, cost::float8 FROM cost_by_tool_day ORDER BY tool",
            )
            .fetch_all(&pool)
            .await
            .unwrap()
        }
    };
    let by_template = |store: &trellis::store::Store| {
        let pool = store.pool().clone();
        async move {
            sqlx::query_as::<_, (String, f64, f64, f64)>(
                "SELECT template, llm_cost::float8, tool_cost::float8, cost::float8
                 FROM cost_by_template_day",
            )
            .fetch_all(&pool)
            .await
            .unwrap()
        }
    };
    let tools_expected = vec![
        ("backup".to_string(), 1, 0.25),
        ("paid".to_string(), 3, 1.5),
    ];
    let template_expected = vec![(String::new(), 0.0, 1.75, 1.75)];
    assert_eq!(tier_costs(store).await, expected);
    assert_eq!(by_tool(store).await, tools_expected);
    assert_eq!(by_template(store).await, template_expected);
    let e_cost: (f64, f64, f64) = sqlx::query_as(
        "SELECT tool_cost::float8, cost::float8, (SELECT cost FROM tasks WHERE id = $1)
         FROM cost_by_task WHERE task_id = $1",
    )
    .bind(e)
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(e_cost, (0.5, 0.5, 0.5));

    // retention deletes the finished tasks: the same numbers from the roll-ups
    store.age_tasks(2.0 * 86_400.0).await.unwrap();
    assert_eq!(store.prune_finished(86_400.0, 100).await.unwrap(), 4);
    assert_eq!(tier_costs(store).await, expected);
    assert_eq!(by_tool(store).await, tools_expected);
    assert_eq!(by_template(store).await, template_expected);
}
