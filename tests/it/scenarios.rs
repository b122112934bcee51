//! Recovery scenarios end to end: REST API, real worker, HTTP tools served by the test.

use trellis::testkit as common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{TestApp, ToolServer, register_tool, spawn_app};
use serde_json::{Value, json};
use trellis::brain::rules::RulesBrain;
use trellis::brain::{Answer, Brain, BrainFuture, DecisionContext, Planned};
use trellis::domain::StepSpec;
use trellis::domain::recovery::{Evaluation, OverallReflection, StepReflection, Strategy};
use uuid::Uuid;

const LIMIT: Duration = Duration::from_secs(60);

async fn attempts(app: &TestApp, id: Uuid) -> Vec<Value> {
    app.get(&format!("/api/v1/tasks/{id}/attempts"))
        .await
        .1
        .as_array()
        .unwrap()
        .clone()
}

async fn event_kinds(app: &TestApp, id: Uuid) -> Vec<String> {
    let (_, e) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    e.as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect()
}

fn one_step(tool: &str, params: Value) -> Value {
    json!({"description": format!("uses {tool}"), "plan": {"steps": [{"id": "step_1", "tool": tool, "parameters": params}]}})
}

/// Flaky tool → tier 1 retries of the same tool until it works; evaluated, scored.
#[tokio::test]
async fn flaky_tool_recovers_at_tier_1() {
    let app = spawn_app().await;
    let w = app.worker(|_| {});
    let id = app
        .submit(one_step("flaky", json!({"fail_times": 2})))
        .await;
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(t["counters"]["single_step_repair_count"], 0);
    assert_eq!(t["counters"]["task_replan_count"], 0);
    let a = attempts(&app, id).await;
    assert_eq!(
        a.iter()
            .map(|a| a["status"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["failed", "failed", "succeeded"]
    );
    assert!(a.iter().all(|a| a["tool"] == "flaky"));
    let (_, refl) = app.get(&format!("/api/v1/tasks/{id}/reflections")).await;
    assert_eq!(refl.as_array().unwrap().len(), 2);
    assert_eq!(refl[0]["body"]["root_cause_category"], "tool_error");
    assert_eq!(
        refl[0]["body"]["suggested_action"]["type"],
        "retry_with_params"
    );
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(r["final_score"], 100.0);
    let kinds = event_kinds(&app, id).await;
    for k in [
        "step_failed",
        "step_reflected",
        "retry_scheduled",
        "evaluation_completed",
        "task_succeeded",
    ] {
        assert!(kinds.iter().any(|x| x == k), "{k} missing from {kinds:?}");
    }
    w.stop().await;
}

/// A tool answering with `hints` → the step is retried with those parameters.
#[tokio::test]
async fn hinted_parameter_is_adjusted_and_retried() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|c| {
            if c.parameters["city"] == "Paris" {
                (200, json!({"output": {"forecast": "sun", "city": "Paris"}}))
            } else {
                (
                    422,
                    json!({"error": {"message": "unknown city", "category": "parameter_error",
                                        "retryable": false, "hints": {"city": "Paris"}}}),
                )
            }
        }),
    )
    .await;
    register_tool(&app, "weather", &server.endpoint("weather"), json!({})).await;
    let w = app.worker(|_| {});
    let id = app
        .submit(one_step("weather", json!({"city": "Pariss", "days": 3})))
        .await;
    assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    let calls = server.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].parameters, json!({"city": "Paris", "days": 3}));
    // new parameters, a new call: a new key
    assert!(calls[1].idempotency_key.starts_with("tr1-"));
    assert_ne!(calls[1].idempotency_key, calls[0].idempotency_key);
    let a = attempts(&app, id).await;
    assert_eq!(a[0]["error"]["category"], "parameter_error");
    assert_eq!(a[1]["parameters"]["city"], "Paris");
    let (_, refl) = app.get(&format!("/api/v1/tasks/{id}/reflections")).await;
    assert_eq!(refl[0]["body"]["root_cause_category"], "parameter_error");
    assert_eq!(
        refl[0]["body"]["suggested_action"],
        json!({"type": "retry_with_params", "data": {"city": "Paris"}})
    );
    w.stop().await;
}

/// A dead tool with a registered alternative → the alternative runs.
#[tokio::test]
async fn dead_tool_switches_to_its_alternative() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|c| match c.tool.as_str() {
            "primary" => (503, json!({"error": {"message": "maintenance"}})),
            _ => (200, json!({"output": {"served_by": c.tool}})),
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
    let id = app.submit(one_step("primary", json!({"q": 1}))).await;
    assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    let a = attempts(&app, id).await;
    assert_eq!(
        a.iter()
            .map(|a| a["tool"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["primary", "backup"]
    );
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(r["outputs"]["step_1"], json!({"served_by": "backup"}));
    let calls: Vec<String> = server.calls().into_iter().map(|c| c.tool).collect();
    assert_eq!(calls, ["primary", "backup"]);
    w.stop().await;
}

/// 403 `external_error` → needs_intervention, with at most one call per allowed attempt
/// (here: one call — it is not retryable and not recoverable).
#[tokio::test]
async fn forbidden_external_error_stops_for_a_human() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|_| {
            (
                403,
                json!({"error": {"message": "forbidden by policy", "category": "external_error"}}),
            )
        }),
    )
    .await;
    register_tool(&app, "vault", &server.endpoint("vault"), json!({})).await;
    let w = app.worker(|_| {});
    let id = app.submit(one_step("vault", json!({}))).await;
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "needs_intervention", "{t}");
    assert!(
        t["stop_reason"]
            .as_str()
            .unwrap()
            .contains("forbidden by policy"),
        "{t}"
    );
    assert_eq!(server.calls().len(), 1);
    let (_, refl) = app.get(&format!("/api/v1/tasks/{id}/reflections")).await;
    let levels: Vec<&str> = refl
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["step", "overall"]);
    assert_eq!(refl[0]["body"]["is_recoverable"], false);
    assert_eq!(refl[1]["body"]["should_replan"], false);
    assert!(
        event_kinds(&app, id)
            .await
            .contains(&"intervention_required".to_string())
    );
    w.stop().await;
}

/// A dead tool without an alternative ends within its limits: retries, a failed repair, one
/// replan, retries again, then a stop — max_step_retries × (1 + max_task_replans) calls.
#[tokio::test]
async fn dead_tool_without_alternative_ends_within_its_limits() {
    let app = spawn_app().await;
    let server = ToolServer::start(Duration::ZERO, Arc::new(|_| (503, json!({})))).await;
    register_tool(&app, "dead", &server.endpoint("dead"), json!({})).await;
    // (the breaker off: this is the recovery tiers' bound alone; tests/it/recovery_faults.rs has
    // the breaker)
    let w = app.worker(|c| {
        c.policy.breaker.failure_threshold = 0;
        c.policy.retry.initial_interval_ms = 20;
    });
    let id = app.submit(one_step("dead", json!({}))).await;
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "needs_intervention", "{t}");
    // three tier 1 calls, the repaired step's one (the rules brain keeps a transiently failing
    // step and runs it again after a longer backoff), three after the replan
    assert_eq!(server.calls().len(), 3 + 1 + 3);
    assert_eq!(t["counters"]["single_step_repair_count"], 1);
    assert_eq!(t["counters"]["task_replan_count"], 1);
    assert_eq!(t["plan_version"], 3);
    // one key per call: the tier 1 retries repeat the first call, the repair and the replan
    // each make a new one (a new step row), which its own retries repeat
    let keys: Vec<String> = server
        .calls()
        .into_iter()
        .map(|c| c.idempotency_key)
        .collect();
    let unique: std::collections::HashSet<_> = keys.iter().collect();
    assert_eq!(unique.len(), 3, "{keys:?}");
    assert!(keys[1..3].iter().all(|k| *k == keys[0]), "{keys:?}");
    assert!(keys[5..].iter().all(|k| *k == keys[4]), "{keys:?}");
    assert!(keys[3] != keys[0] && keys[3] != keys[4], "{keys:?}");
    w.stop().await;
}

/// A step failing past its retries after a successful predecessor → replan_from_step: the
/// predecessor's result is kept and its tool is called exactly once overall.
#[tokio::test]
async fn replan_from_step_keeps_the_successful_predecessor() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|_| (200, json!({"output": {"token": "t-1"}}))),
    )
    .await;
    register_tool(&app, "login", &server.endpoint("login"), json!({})).await;
    let w = app.worker(|_| {});
    let id = app
        .submit(
            json!({"description": "login then flaky", "plan": {"steps": [
                {"id": "step_1", "tool": "login"},
                {"id": "step_2", "tool": "flaky", "dependencies": ["step_1"],
                 "parameters": {"fail_times": 4, "token": "${step_1.output.token}"}}
            ]}}),
        )
        .await;
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(server.calls().len(), 1, "the predecessor ran once");
    assert_eq!(t["counters"]["task_replan_count"], 1);
    // version 2 is the repair (the same step, once more), version 3 the replan
    assert_eq!(t["plan_version"], 3);
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(plan["origin"], "replan:replan_from_step");
    assert_eq!(plan["history"].as_array().unwrap().len(), 2);
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(r["outputs"]["step_1"], json!({"token": "t-1"}));
    assert_eq!(r["outputs"]["step_2"]["token"], "t-1");
    let a = attempts(&app, id).await;
    let s2: Vec<i64> = a
        .iter()
        .filter(|a| a["step_id"] == "step_2")
        .map(|a| a["attempt"].as_i64().unwrap())
        .collect();
    assert_eq!(
        s2,
        [1, 2, 3, 4, 5],
        "attempt numbers continue in the new plan versions"
    );
    w.stop().await;
}

/// An optional step that fails for good is skipped (skip_steps) and the task still succeeds.
#[tokio::test]
async fn a_failed_optional_step_is_skipped() {
    let app = spawn_app().await;
    let w = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "optional", "plan": {"steps": [
            {"id": "main", "tool": "echo", "parameters": {"v": 1}},
            {"id": "extra", "tool": "fail", "optional": true, "parameters": {"message": "nope", "category": "external_error"}},
            {"id": "after", "tool": "echo", "dependencies": ["extra", "main"]}
        ]}}))
        .await;
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(plan["origin"], "replan:skip_steps");
    let status: Vec<(String, String)> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        status,
        [
            ("main".into(), "succeeded".into()),
            ("extra".into(), "skipped".into()),
            ("after".into(), "succeeded".into())
        ]
    );
    w.stop().await;
}

/// Acceptance 4: resume after intervention with a parameter override → the task succeeds.
#[tokio::test]
async fn resume_with_a_parameter_override_succeeds() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|c| {
            if c.parameters["token"] == "good" {
                (200, json!({"output": {"secret": 42}}))
            } else {
                (
                    403,
                    json!({"error": {"message": "bad token", "category": "external_error"}}),
                )
            }
        }),
    )
    .await;
    register_tool(&app, "vault", &server.endpoint("vault"), json!({})).await;
    let w = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "needs a token", "plan": {"steps": [
            {"id": "step_1", "tool": "echo", "parameters": {"v": 1}},
            {"id": "step_2", "tool": "vault", "dependencies": ["step_1"], "parameters": {"token": "bad"}}
        ]}}))
        .await;
    assert_eq!(
        app.wait_done(id, LIMIT).await["status"],
        "needs_intervention"
    );

    // bad resumes change nothing
    let before = app.store().row_counts().await.unwrap();
    let (s, v) = app
        .post(
            &format!("/api/v1/tasks/{id}/resume"),
            &json!({"step_overrides": {"nope": {"parameters": {}}}}),
        )
        .await;
    assert_eq!(s.as_u16(), 422, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("nope"));
    let (s, _) = app
        .post(
            &format!("/api/v1/tasks/{id}/resume"),
            &json!({"step_overrides": {"step_2": {"tool": "ghost"}}}),
        )
        .await;
    assert_eq!(s.as_u16(), 422);
    let (s, _) = app
        .post(
            &format!("/api/v1/tasks/{id}/resume"),
            &json!({"plan": {"steps": []}}),
        )
        .await;
    assert_eq!(s.as_u16(), 422);
    assert_eq!(before, app.store().row_counts().await.unwrap());
    assert_eq!(
        app.get(&format!("/api/v1/tasks/{id}")).await.1["status"],
        "needs_intervention"
    );

    let (s, v) = app
        .post(
            &format!("/api/v1/tasks/{id}/resume"),
            &json!({"step_overrides": {"step_2": {"parameters": {"token": "good"}}}}),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{v}");
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(r["outputs"]["step_2"], json!({"secret": 42}));
    assert_eq!(server.calls().len(), 2);
    let (s, _) = app
        .post(&format!("/api/v1/tasks/{id}/resume"), &json!({}))
        .await;
    assert_eq!(s.as_u16(), 409, "only needs_intervention can be resumed");
    assert!(
        event_kinds(&app, id)
            .await
            .contains(&"task_resumed".to_string())
    );
    w.stop().await;
}

/// A brain that scores the first round low and the second high (the round loop).
#[derive(Debug, Default)]
struct TwoRoundBrain {
    evaluations: AtomicUsize,
}

impl Brain for TwoRoundBrain {
    fn name(&self) -> &'static str {
        "two-rounds"
    }
    fn plan<'a>(&'a self, c: &'a DecisionContext) -> BrainFuture<'a, Planned> {
        RulesBrain.plan(c)
    }
    fn reflect_step<'a>(&'a self, c: &'a DecisionContext) -> BrainFuture<'a, StepReflection> {
        RulesBrain.reflect_step(c)
    }
    fn repair_step<'a>(&'a self, c: &'a DecisionContext) -> BrainFuture<'a, StepSpec> {
        RulesBrain.repair_step(c)
    }
    fn reflect_overall<'a>(&'a self, _: &'a DecisionContext) -> BrainFuture<'a, OverallReflection> {
        Box::pin(async {
            Ok(Answer {
                value: OverallReflection {
                    should_replan: true,
                    root_causes: vec!["answer too short".into()],
                    incorrect_assumptions: vec![],
                    alternative_approaches: vec![],
                    lessons_learned: vec![],
                    stop_reason: String::new(),
                    optimization_suggestions: vec![],
                    replanning_strategy: Some(Strategy::FullReplan),
                },
                raw: Some("{\"should_replan\": true}".into()),
            })
        })
    }
    fn replan<'a>(&'a self, c: &'a DecisionContext) -> BrainFuture<'a, Planned> {
        RulesBrain.replan(c)
    }
    fn evaluate<'a>(&'a self, c: &'a DecisionContext) -> BrainFuture<'a, Evaluation> {
        let n = self.evaluations.fetch_add(1, Ordering::SeqCst);
        let mut e = RulesBrain::evaluate(c);
        e.overall_score = if n == 0 { 40.0 } else { 95.0 };
        Box::pin(async move { Ok(Answer::plain(e)) })
    }
}

/// The round loop: an unsuccessful evaluation → overall reflection → replan → next round.
#[tokio::test]
async fn an_unsuccessful_evaluation_starts_another_round() {
    let app = spawn_app().await;
    let w = app.worker(|c| c.brain = Arc::new(TwoRoundBrain::default()));
    let id = app.submit(one_step("echo", json!({"v": 1}))).await;
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(t["round"], 2);
    assert_eq!(t["plan_version"], 2);
    assert_eq!(
        t["counters"]["task_replan_count"], 0,
        "round-loop replans are counted as rounds"
    );
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(
        (r["final_score"].clone(), r["total_rounds"].clone()),
        (json!(95.0), json!(2))
    );
    let (_, evals) = app.get(&format!("/api/v1/tasks/{id}/evaluations")).await;
    let scores: Vec<(f64, bool)> = evals
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["overall_score"].as_f64().unwrap(),
                e["is_successful"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(scores, [(40.0, false), (95.0, true)]);
    assert_eq!(
        attempts(&app, id).await.len(),
        2,
        "full replan ran the step again"
    );
    let (_, events) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    let rounds: Vec<&Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "round_started")
        .collect();
    assert_eq!(rounds.len(), 1, "{events}");
    assert_eq!(rounds[0]["payload"]["round"], 2);
    assert_eq!(rounds[0]["payload"]["plan_version"], 2);
    w.stop().await;
}

/// Seed 000's walk-through: retries exhausted → a successful repair (tier 2) switches the step
/// to the alternative tool in plan version 2 (origin `repair`); the repaired step fails again,
/// no repair is left, so the task's reflection replans from it (version 3) and it succeeds.
/// The finished predecessor ran once throughout; `GET /plan` never lists one step id twice.
#[tokio::test]
async fn a_repaired_step_that_fails_again_goes_on_to_a_replan() {
    let app = spawn_app().await;
    let b_calls = Arc::new(AtomicUsize::new(0));
    let seen = b_calls.clone();
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(move |c| match c.tool.as_str() {
            "first" => (200, json!({"output": {"v": 1}})),
            "a" => (503, json!({"error": "a is down"})),
            // b fails its first call, then works
            _ if seen.fetch_add(1, Ordering::SeqCst) == 0 => (503, json!({"error": "b hiccup"})),
            _ => (200, json!({"output": {"by": "b"}})),
        }),
    )
    .await;
    register_tool(&app, "first", &server.endpoint("first"), json!({})).await;
    register_tool(&app, "b", &server.endpoint("b"), json!({})).await;
    register_tool(
        &app,
        "a",
        &server.endpoint("a"),
        json!({"alternatives": ["b"]}),
    )
    .await;
    let w = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "repair, fail again, replan",
            "limits": {"max_step_retries": 0, "max_single_step_repairs": 1, "max_task_replans": 1},
            "plan": {"steps": [
                {"id": "step_1", "tool": "first"},
                {"id": "step_2", "tool": "a", "dependencies": ["step_1"], "parameters": {"in": "${step_1.output.v}"}}
            ]}}))
        .await;
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(t["counters"]["single_step_repair_count"], 1);
    assert_eq!(t["counters"]["task_replan_count"], 1);
    assert_eq!(t["plan_version"], 3);
    let tools: Vec<String> = server.calls().into_iter().map(|c| c.tool).collect();
    assert_eq!(tools, ["first", "a", "b", "b"]);
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    let origins: Vec<&str> = plan["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["origin"].as_str().unwrap())
        .collect();
    assert_eq!(origins, ["initial", "repair"], "{plan}");
    assert_eq!(plan["origin"], "replan:replan_from_step");
    for version in std::iter::once(&plan).chain(plan["history"].as_array().unwrap()) {
        let ids: Vec<&str> = version["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "no step id twice: {version}");
    }
    let current: Vec<(&str, &str, &str)> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let tool = s["tool"].as_str().unwrap();
            (
                s["id"].as_str().unwrap(),
                tool,
                s["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        current,
        [
            ("step_1", "first", "succeeded"),
            ("step_2", "b", "succeeded")
        ]
    );
    let kinds = event_kinds(&app, id).await;
    let repaired = kinds.iter().position(|k| k == "step_repaired").unwrap();
    let replanned = kinds.iter().position(|k| k == "replanned").unwrap();
    assert!(repaired < replanned, "{kinds:?}");
    w.stop().await;
}

/// `POST /tasks/{id}/rerun`: a succeeded task reruns from its middle step with new parameters;
/// the step and its descendant run again with them, the predecessor and the independent branch
/// are not called again (outputs kept). Bad reruns are 4xx that change nothing; a failed task
/// reruns its failing step with another tool and succeeds.
#[tokio::test]
async fn rerun_from_a_step_keeps_what_is_not_downstream() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|c| match c.tool.as_str() {
            "broken" => (400, json!({"error": "broken for good"})),
            _ => (
                200,
                json!({"output": {"step": c.step_id, "got": c.parameters}}),
            ),
        }),
    )
    .await;
    for tool in ["first", "mid", "last", "side", "broken"] {
        register_tool(&app, tool, &server.endpoint(tool), json!({})).await;
    }
    let w = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "rerun me", "plan": {"steps": [
            {"id": "step_1", "tool": "first", "parameters": {"v": 1}},
            {"id": "step_2", "tool": "mid", "dependencies": ["step_1"],
             "parameters": {"n": 1, "from": "${step_1.output.step}"}},
            {"id": "step_3", "tool": "last", "dependencies": ["step_2"],
             "parameters": {"n": "${step_2.output.got.n}"}},
            {"id": "side", "tool": "side"}
        ]}}))
        .await;
    assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    let path = format!("/api/v1/tasks/{id}/rerun");

    // bad reruns: named problems, nothing changes
    let bad = [
        (json!({"from_step": "nope"}), 422, "nope"),
        (
            json!({"from_step": "step_2", "step_overrides": {"step_1": {"parameters": {"v": 9}}}}),
            422,
            "step_1",
        ),
        (
            json!({"from_step": "step_2", "step_overrides": {"step_2": {"tool": "ghost"}}}),
            422,
            "ghost",
        ),
        (json!({"from": "step_2"}), 422, "from"),
    ];
    for (body, status, named) in bad {
        let (s, v) = app.post(&path, &body).await;
        assert_eq!(s.as_u16(), status, "{body} → {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(named),
            "{v}"
        );
    }
    let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(
        (t["status"].as_str(), t["plan_version"].as_i64()),
        (Some("succeeded"), Some(1))
    );

    let (s, v) = app
        .post(
            &path,
            &json!({"from_step": "step_2", "step_overrides": {"step_2": {"parameters": {"n": 2}}}}),
        )
        .await;
    assert_eq!(s.as_u16(), 202, "{v}");
    assert_eq!(v["task_id"], id.to_string());
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(t["plan_version"], 2);
    let per_tool = |tool: &str| -> Vec<Value> {
        server
            .calls()
            .into_iter()
            .filter(|c| c.tool == tool)
            .map(|c| c.parameters)
            .collect()
    };
    assert_eq!(per_tool("first").len(), 1, "kept: not called again");
    assert_eq!(per_tool("side").len(), 1, "kept: not called again");
    assert_eq!(
        per_tool("mid"),
        [
            json!({"n": 1, "from": "step_1"}),
            json!({"n": 2, "from": "step_1"})
        ]
    );
    assert_eq!(per_tool("last"), [json!({"n": 1}), json!({"n": 2})]);
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(plan["origin"], "rerun");
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(r["outputs"]["step_1"]["step"], "step_1");
    assert_eq!(r["outputs"]["step_3"]["got"], json!({"n": 2}));
    assert!(event_kinds(&app, id).await.contains(&"task_rerun".into()));

    // a rerun of a task that is still running is a conflict
    let slow = app
        .submit(
            json!({"description": "fails", "limits": {"max_step_retries": 0,
            "max_single_step_repairs": 0, "max_task_replans": 0},
            "plan": {"steps": [
                {"id": "ok", "tool": "first"},
                {"id": "bad", "tool": "broken", "dependencies": ["ok"]}
            ]}}),
        )
        .await;
    let t = app.wait_done(slow, LIMIT).await;
    assert!(
        ["failed", "needs_intervention"].contains(&t["status"].as_str().unwrap()),
        "{t}"
    );
    let (s, v) = app
        .post(
            &format!("/api/v1/tasks/{slow}/rerun"),
            &json!({"from_step": "bad", "step_overrides": {"bad": {"tool": "last"}}}),
        )
        .await;
    assert_eq!(s.as_u16(), 202, "{v}");
    let t = app.wait_done(slow, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(per_tool("broken").len(), 1);
    let (s, v) = app
        .post(
            &format!("/api/v1/tasks/{}/rerun", Uuid::now_v7()),
            &json!({"from_step": "x"}),
        )
        .await;
    assert_eq!(s.as_u16(), 404, "{v}");
    w.stop().await;
}

/// A task that is still running cannot be rerun (409), and nothing changes.
#[tokio::test]
async fn a_running_task_cannot_be_rerun() {
    let app = spawn_app().await;
    let server = ToolServer::echoing_step(Duration::from_secs(30)).await;
    register_tool(&app, "slow", &server.endpoint("slow"), json!({})).await;
    let w = app.worker(|_| {});
    let id = app.submit(one_step("slow", json!({}))).await;
    let (s, v) = app
        .post(
            &format!("/api/v1/tasks/{id}/rerun"),
            &json!({"from_step": "step_1"}),
        )
        .await;
    assert_eq!(s.as_u16(), 409, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("running"),
        "{v}"
    );
    let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(t["plan_version"], 1);
    app.post(&format!("/api/v1/tasks/{id}/cancel"), &json!({}))
        .await;
    w.stop().await;
}

/// Workflow templates: registered through the API (checked: placeholders declared, tools
/// known, plan well formed), submitted by id with an input (checked against `input_schema`),
/// run by the rules brain without a description; the plan is version 1 with origin
/// `template:<id>`. Bad templates and bad submits are 4xx that create nothing.
#[tokio::test]
async fn a_template_is_submitted_by_id_with_an_input() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|c| (200, json!({"output": {"got": c.parameters}}))),
    )
    .await;
    register_tool(&app, "fetch", &server.endpoint("fetch"), json!({})).await;
    register_tool(&app, "store", &server.endpoint("store"), json!({})).await;
    let template = json!({
        "id": "fetch-and-store",
        "description": "fetch a page and store it",
        "input_schema": {"type": "object", "required": ["url", "copies"],
            "properties": {"url": {"type": "string"}, "copies": {"type": "integer", "minimum": 1}}},
        "plan": {"steps": [
            {"id": "get", "tool": "fetch", "parameters": {"url": "${input.url}", "label": "page ${input.url} x${input.copies}"}},
            {"id": "put", "tool": "store", "dependencies": ["get"],
             "parameters": {"copies": "${input.copies}", "body": "${get.output.got.url}"}}
        ]}
    });
    let (s, v) = app.post("/api/v1/templates", &template).await;
    assert_eq!(s.as_u16(), 201, "{v}");
    assert_eq!(v["id"], "fetch-and-store");

    let bad_templates = [
        (
            json!({"id": "a", "plan": {"steps": [{"id": "s", "tool": "fetch", "parameters": {"u": "${input.nope}"}}]},
                "input_schema": {"type": "object", "properties": {"url": {}}}}),
            422,
            "nope",
        ),
        (
            json!({"id": "b", "plan": {"steps": [{"id": "s", "tool": "ghost"}]}}),
            422,
            "ghost",
        ),
        (
            json!({"id": "c", "plan": {"steps": [{"id": "s", "tool": "fetch", "parameters": {"u": "${input.}"}}]}}),
            422,
            "malformed",
        ),
        (
            json!({"id": "d", "plan": {"steps": []}, "input_schema": {"type": 7}}),
            422,
            "input_schema",
        ),
        (
            json!({"id": "bad id!", "plan": {"steps": [{"id": "s", "tool": "fetch"}]}}),
            422,
            "id",
        ),
        (template.clone(), 409, "fetch-and-store"),
    ];
    for (body, status, named) in bad_templates {
        let (s, v) = app.post("/api/v1/templates", &body).await;
        assert_eq!(s.as_u16(), status, "{body} → {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(named),
            "{v}"
        );
    }
    let (_, list) = app.get("/api/v1/templates").await;
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");

    let bad_submits = [
        (
            json!({"template": "fetch-and-store", "input": {"url": "u"}}),
            "copies",
        ),
        (
            json!({"template": "fetch-and-store", "input": {"url": "u", "copies": 0}}),
            "copies",
        ),
        (json!({"template": "nope", "input": {}}), "nope"),
        (
            json!({"template": "fetch-and-store", "input": {"url": "u", "copies": 1},
                "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
            "either",
        ),
        (
            json!({"description": "x", "input": {"url": "u"}, "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
            "input",
        ),
    ];
    for (body, named) in bad_submits {
        let (s, v) = app.post("/api/v1/tasks", &body).await;
        assert_eq!(s.as_u16(), 422, "{body} → {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(named),
            "{v}"
        );
    }
    let (_, tasks) = app.get("/api/v1/tasks").await;
    assert_eq!(
        tasks["tasks"].as_array().map(Vec::len).unwrap_or(0),
        0,
        "{tasks}"
    );

    let w = app.worker(|_| {});
    let id = app
        .submit(json!({"template": "fetch-and-store", "input": {"url": "https://example.test/a", "copies": 2}}))
        .await;
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(t["description"], "fetch a page and store it");
    let params: Vec<(String, Value)> = server
        .calls()
        .into_iter()
        .map(|c| (c.tool, c.parameters))
        .collect();
    assert_eq!(
        params,
        [
            (
                "fetch".to_string(),
                json!({"url": "https://example.test/a", "label": "page https://example.test/a x2"})
            ),
            (
                "store".to_string(),
                json!({"copies": 2, "body": "https://example.test/a"})
            ),
        ]
    );
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(plan["version"], 1);
    assert_eq!(plan["origin"], "template:fetch-and-store");

    let (s, v) = app
        .post(
            "/api/v1/tasks/batch",
            &json!({"tasks": [
                {"template": "fetch-and-store", "input": {"url": "b", "copies": 1}},
                {"template": "fetch-and-store", "description": "mine", "input": {"url": "c", "copies": 3}}
            ]}),
        )
        .await;
    assert_eq!(s.as_u16(), 202, "{v}");
    for item in v["tasks"].as_array().unwrap() {
        let id: Uuid = item["task_id"].as_str().unwrap().parse().unwrap();
        assert_eq!(app.wait_done(id, LIMIT).await["status"], "succeeded");
    }
    assert_eq!(server.calls().len(), 6);

    let r = app
        .http
        .delete(app.url("/api/v1/templates/fetch-and-store"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204);
    let (s, _) = app.get("/api/v1/templates/fetch-and-store").await;
    assert_eq!(s.as_u16(), 404);
    w.stop().await;
}

/// Alternatives chosen by evidence: `main` fails; of its two alternatives, the one listed first
/// (`worse`) keeps failing in the fleet's recent attempts and the other (`better`) keeps
/// working, so the rules brain's tier 1 tries `better` first, and its reflection says why.
#[tokio::test]
async fn the_alternative_with_the_best_recent_success_rate_is_tried_first() {
    let app = spawn_app().await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|c| match c.tool.as_str() {
            "better" => (200, json!({"output": {"by": "better"}})),
            _ => (503, json!({"error": "down"})),
        }),
    )
    .await;
    register_tool(&app, "worse", &server.endpoint("worse"), json!({})).await;
    register_tool(&app, "better", &server.endpoint("better"), json!({})).await;
    register_tool(
        &app,
        "main",
        &server.endpoint("main"),
        json!({"alternatives": ["worse", "better"]}),
    )
    .await;
    let w = app.worker(|_| {});
    let no_recovery =
        json!({"max_step_retries": 0, "max_single_step_repairs": 0, "max_task_replans": 0});
    let mut history = Vec::new();
    for tool in ["worse", "worse", "worse", "better", "better"] {
        history.push(
            app.submit(
                json!({"description": format!("history {tool}"), "limits": no_recovery,
                "plan": {"steps": [{"id": "s", "tool": tool}]}}),
            )
            .await,
        );
    }
    for id in history {
        app.wait_done(id, LIMIT).await;
    }
    let before = server.calls().len();
    let id = app
        .submit(
            json!({"description": "main fails over", "limits": {"max_step_retries": 3},
            "plan": {"steps": [{"id": "s", "tool": "main"}]}}),
        )
        .await;
    let t = app.wait_done(id, LIMIT).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let tools: Vec<String> = server.calls()[before..]
        .iter()
        .map(|c| c.tool.clone())
        .collect();
    assert_eq!(
        tools,
        ["main", "better"],
        "registry order would try worse first"
    );
    let (_, refl) = app.get(&format!("/api/v1/tasks/{id}/reflections")).await;
    let analysis = refl[0]["body"]["analysis"].as_str().unwrap();
    assert!(
        analysis.contains("trying alternative tool better")
            && analysis.contains("better: 2 of 2 recent attempts succeeded")
            && analysis.contains("worse: 0 of"),
        "{analysis}"
    );
    assert_eq!(
        refl[0]["body"]["alternative_solutions"],
        json!(["better", "worse"])
    );
    w.stop().await;
}
