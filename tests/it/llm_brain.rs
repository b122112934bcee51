//! The LLM brain end to end: the API, an in-process worker with the LLM brain, real HTTP tools,
//! and a real HTTP server speaking the chat-completions wire format that answers each request
//! from a script keyed by the request's json_schema name.

use trellis::testkit as common;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use common::{ToolServer, register_tool, spawn_app_with, test_settings};
use serde_json::{Value, json};
use trellis::config::Settings;

const KEY: &str = "sk-e2e-secret-5d0c";

/// One scripted reply.
#[derive(Clone)]
struct Reply {
    status: u16,
    body: Value,
    delay: Duration,
}

/// A chat-completions answer whose message content is `content`.
fn says(content: &str) -> Reply {
    Reply {
        status: 200,
        body: json!({"choices": [{"message": {"role": "assistant", "content": content}}],
                     "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}),
        delay: Duration::ZERO,
    }
}

fn answers(v: Value) -> Reply {
    says(&v.to_string())
}

fn status(code: u16) -> Reply {
    Reply {
        status: code,
        body: json!({"error": {"message": "scripted failure"}}),
        delay: Duration::ZERO,
    }
}

/// A request the fake model received.
#[derive(Clone, Debug)]
struct Seen {
    name: String,
    body: Value,
    auth: String,
}

impl Seen {
    fn user_text(&self) -> String {
        self.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[derive(Clone, Default)]
struct FakeLlm {
    /// name → replies in order; the last one repeats.
    script: Arc<Mutex<HashMap<String, VecDeque<Reply>>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    base: String,
}

impl FakeLlm {
    async fn start(script: Vec<(&str, Vec<Reply>)>) -> Self {
        async fn handle(
            State(f): State<FakeLlm>,
            headers: HeaderMap,
            axum::Json(body): axum::Json<Value>,
        ) -> (StatusCode, axum::Json<Value>) {
            // a script with "__llama_cpp" answers as llama-cpp-python's server does:
            // `response_format` `json_schema` is a 500 naming the field; `json_object` (with a
            // `schema` beside it) is answered
            let llama_cpp = f.script.lock().unwrap().contains_key("__llama_cpp");
            if llama_cpp && body["response_format"]["type"] == "json_schema" {
                f.seen.lock().unwrap().push(Seen {
                    name: "rejected".into(),
                    body,
                    auth: String::new(),
                });
                // llama-cpp-python (server/types.py: ResponseFormat's type is
                // Literal["text", "json_object"]) answers a pydantic validation error as a 500
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    axum::Json(
                        json!({"error": {"message": "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be 'text' or 'json_object' [type=literal_error, input_value='json_schema', input_type=str]", "type": "internal_server_error"}}),
                    ),
                );
            }
            // json_object: the decision's name is in the system message the client adds
            let name = match body["response_format"]["json_schema"]["name"].as_str() {
                Some(n) => n.to_string(),
                None => body["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m["content"].as_str())
                    .find_map(|c| {
                        let rest = c.strip_prefix("Your answer (")?;
                        Some(rest[..rest.find(')')?].to_string())
                    })
                    .unwrap_or_else(|| "json_object".into()),
            };
            let auth = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            f.seen.lock().unwrap().push(Seen {
                name: name.clone(),
                body,
                auth: auth.clone(),
            });
            let reply = {
                let mut s = f.script.lock().unwrap();
                match s.get_mut(&name) {
                    Some(q) if q.len() > 1 => q.pop_front(),
                    Some(q) => q.front().cloned(),
                    None => None,
                }
            };
            let Some(r) = reply else {
                return (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"error": {"message": format!("unscripted {name}")}})),
                );
            };
            tokio::time::sleep(r.delay).await;
            let mut body = r.body;
            // like some providers do: echo the credential in an error
            if r.status == 401 {
                body = json!({"error": {"message": format!("Incorrect API key provided: {auth}")}});
            }
            (StatusCode::from_u16(r.status).unwrap(), axum::Json(body))
        }
        let mut fake = FakeLlm {
            script: Arc::new(Mutex::new(
                script
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.into()))
                    .collect(),
            )),
            ..Default::default()
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        fake.base = format!("http://{}/v1", listener.local_addr().unwrap());
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .with_state(fake.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        fake
    }

    async fn start_llama_cpp(mut script: Vec<(&str, Vec<Reply>)>) -> Self {
        script.push(("__llama_cpp", vec![]));
        Self::start(script).await
    }

    fn seen(&self, name: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.name == name)
            .cloned()
            .collect()
    }
}

fn llm_settings(fake: &FakeLlm) -> Settings {
    let mut s = test_settings();
    s.llm.base_url = Some(fake.base.clone());
    s.llm.api_key = Some(KEY.into());
    s.llm.model = Some("scripted-model".into());
    s.llm.timeout_secs = Some(5.0);
    s.llm.max_retries = Some(2);
    s.llm.retry_backoff_ms = Some(20);
    // five built-in tools plus the test's: two-stage planning applies
    s.orchestrator.two_stage_tool_threshold = 3;
    s
}

async fn events(app: &common::TestApp, id: uuid::Uuid) -> Vec<Value> {
    let (_, v) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    v.as_array().unwrap().clone()
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect()
}

fn evaluation(score: f64) -> Reply {
    answers(
        json!({"overall_score": score, "is_successful": score >= 80.0,
        "dimensions": {"completeness": score, "correctness": score, "efficiency": 70, "reliability": 75},
        "successes": ["all steps done"], "failures": [], "improvement_suggestions": ["fewer retries"]}),
    )
}

/// Acceptance 1: a description-only task is planned (tool selection, then a plan with only the
/// selected tools), runs, a step fails, the step reflection adjusts its parameters, it
/// succeeds, and the evaluation's score is the result's `final_score`.
#[tokio::test]
async fn a_description_only_task_is_planned_recovered_and_scored() {
    let fake = FakeLlm::start(vec![
        (
            "tool_selection",
            vec![answers(
                json!({"selected_tools": ["echo", "strict", "no_such_tool"], "reasoning": "echo then convert"}),
            )],
        ),
        (
            "plan",
            vec![answers(json!({"reasoning": "greet, then convert", "estimated_duration": 3,
                "steps": [
                    {"step_id": "step_1", "name": "greet", "tool": "echo", "parameters": {"text": "hello"},
                     "dependencies": [], "expected_output": "the greeting", "actions": []},
                    {"step_id": "step_2", "name": "convert", "tool": "strict",
                     "parameters": {"input": "${step_1.output.text}", "mode": "fast"},
                     "dependencies": ["step_1"], "expected_output": {"kind": "text"}, "actions": [],
                     "note": "extra fields are tolerated"}]}))],
        ),
        (
            "step_reflection",
            vec![answers(json!({"root_cause_category": "parameter_error",
                "root_cause": "mode fast is not supported", "analysis": "the tool accepts mode=exact",
                "confidence": 85, "is_recoverable": true, "alternative_solutions": [],
                "suggested_action": {"type": "retry_with_params", "data": {"mode": "exact"}}}))],
        ),
        ("evaluation", vec![evaluation(92.5)]),
    ])
    .await;
    let app = spawn_app_with(llm_settings(&fake)).await;
    let tools = ToolServer::start(
        Duration::ZERO,
        Arc::new(|c| {
            if c.parameters["mode"] == "exact" {
                (200, json!({"output": {"converted": c.parameters["input"]}}))
            } else {
                (
                    400,
                    json!({"error": {"message": "unsupported mode", "category": "parameter_error"}}),
                )
            }
        }),
    )
    .await;
    register_tool(&app, "strict", &tools.endpoint("strict"), json!({})).await;

    let (code, v) = app
        .post(
            "/api/v1/tasks",
            &json!({"description": "greet and convert the greeting", "metadata": {"lang": "en"}}),
        )
        .await;
    assert_eq!(code, StatusCode::ACCEPTED, "{v}");
    assert_eq!(v["status"], "pending");
    let id: uuid::Uuid = v["task_id"].as_str().unwrap().parse().unwrap();
    let w = app.worker(|_| {});
    let done = app.wait_done(id, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "succeeded", "{done}");

    // the evaluation's score is the result's final_score
    let (_, result) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(result["final_score"], json!(92.5), "{result}");
    assert_eq!(result["outputs"]["step_2"], json!({"converted": "hello"}));

    // stage 1 saw every tool; stage 2 only the selected, registered ones
    let sel = fake.seen("tool_selection");
    assert_eq!(sel.len(), 1);
    for t in ["echo", "sleep", "fail", "flaky", "http_request", "strict"] {
        assert!(sel[0].user_text().contains(&format!("`{t}`")), "{t}");
    }
    assert!(
        sel[0]
            .user_text()
            .contains("greet and convert the greeting")
    );
    assert!(sel[0].user_text().contains("\"lang\": \"en\""));
    let plan = fake.seen("plan");
    assert_eq!(plan.len(), 1);
    let plan_text = plan[0].user_text();
    assert!(plan_text.contains("`echo`") && plan_text.contains("`strict`"));
    assert!(!plan_text.contains("`sleep`") && !plan_text.contains("`flaky`"));
    assert_eq!(
        plan[0].body["response_format"]["json_schema"]["name"],
        "plan"
    );
    assert_eq!(plan[0].body["model"], "scripted-model");
    assert!(plan[0].body["temperature"].is_number());

    // the step failed once, was retried with the adjusted parameters, and succeeded
    let calls = tools.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0].parameters["mode"], "fast");
    assert_eq!(calls[1].parameters["mode"], "exact");
    assert_eq!(calls[1].parameters["input"], "hello");
    let refl = fake.seen("step_reflection");
    assert_eq!(refl.len(), 1);
    assert!(refl[0].user_text().contains("unsupported mode"));

    let ev = events(&app, id).await;
    let k = kinds(&ev);
    let pos = |kind: &str| {
        k.iter()
            .position(|x| x == kind)
            .unwrap_or_else(|| panic!("{kind} in {k:?}"))
    };
    assert!(pos("task_submitted") < pos("tools_selected"));
    assert!(pos("tools_selected") < pos("plan_generated"));
    assert!(pos("plan_generated") < pos("step_failed"));
    assert!(pos("step_reflected") < pos("evaluation_completed"));
    let selected = &ev[pos("tools_selected")]["payload"];
    assert_eq!(selected["selected_tools"], json!(["echo", "strict"]));
    assert_eq!(ev[pos("plan_generated")]["payload"]["steps"], 2);

    // the plan as stored, and the cost of the task
    let (_, p) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(p["origin"], "initial");
    assert_eq!(p["steps"][1]["tool"], "strict");
    let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(
        t["llm_usage"],
        json!({"calls": 4, "failed_calls": 0, "requests": 4, "prompt_tokens": 400,
               "completion_tokens": 80, "total_tokens": 480}),
        "{t}"
    );
    let metrics = app
        .http
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // the in-process worker records into this process's recorder, shared by the tests that
    // run at the same time: at least this task's calls
    let counter = |name: &str, labels: &[&str]| -> f64 {
        metrics
            .lines()
            .filter(|l| l.starts_with(name) && labels.iter().all(|x| l.contains(x)))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    assert!(
        counter("trellis_llm_calls_total", &["name=\"plan\"", "ok=\"true\""]) >= 1.0,
        "{metrics}"
    );
    assert!(
        counter(
            "trellis_llm_tokens_total",
            &["name=\"evaluation\"", "kind=\"completion\""]
        ) >= 20.0,
        "{metrics}"
    );
    w.stop().await;
}

/// Acceptance 2: an invalid answer is re-asked once, then the fallback reflection escalates
/// to the overall reflection, which replans from the failed step; the replanning tool
/// selection names the tools used before and how they failed; the task succeeds without
/// running the kept step again.
#[tokio::test]
async fn invalid_answers_fall_back_then_replan_from_the_failed_step() {
    let fake = FakeLlm::start(vec![
        (
            "step_reflection",
            vec![says("I think the tool is down."), says("{\"root_cause\": ")],
        ),
        (
            "overall_reflection",
            vec![answers(json!({"should_replan": true,
                "root_causes": ["the primary converter is in maintenance"],
                "incorrect_assumptions": ["primary is always up"],
                "alternative_approaches": ["use the backup converter"],
                "lessons_learned": ["prefer tools with a fallback"], "stop_reason": "",
                "replanning_strategy": {"strategy_type": "replan_from_step", "step_id": "step_2",
                                        "reason": "keep the fetched data"}}))],
        ),
        (
            "tool_selection",
            vec![answers(json!({"selected_tools": ["fetch", "backup"], "reasoning": "avoid primary",
                "changes_summary": "primary failed with 503; switch to backup"}))],
        ),
        (
            "replan",
            vec![answers(json!({"reasoning": "same fetch, backup converter", "estimated_duration": 2,
                "steps": [
                    {"step_id": "step_1", "name": "fetch", "tool": "fetch", "parameters": {"doc": "report"},
                     "dependencies": [], "expected_output": "", "actions": []},
                    {"step_id": "step_2", "name": "convert", "tool": "backup",
                     "parameters": {"data": "${step_1.output.data}"}, "dependencies": ["step_1"],
                     "expected_output": "", "actions": []}]}))],
        ),
        ("evaluation", vec![evaluation(88.0)]),
    ])
    .await;
    let app = spawn_app_with(llm_settings(&fake)).await;
    let tools = ToolServer::start(
        Duration::ZERO,
        Arc::new(|c| match c.tool.as_str() {
            "fetch" => (200, json!({"output": {"data": "raw figures"}})),
            "primary" => (
                503,
                json!({"error": {"message": "converter in maintenance", "category": "tool_error"}}),
            ),
            _ => (200, json!({"output": {"converted": c.parameters["data"]}})),
        }),
    )
    .await;
    for t in ["fetch", "primary", "backup"] {
        register_tool(&app, t, &tools.endpoint(t), json!({})).await;
    }
    let id = app
        .submit(
            json!({"description": "fetch and convert the report", "plan": {"steps": [
            {"id": "step_1", "name": "fetch", "tool": "fetch", "parameters": {"doc": "report"}},
            {"id": "step_2", "name": "convert", "tool": "primary", "dependencies": ["step_1"],
             "parameters": {"data": "${step_1.output.data}"}}]}}),
        )
        .await;
    let w = app.worker(|_| {});
    let done = app.wait_done(id, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "succeeded", "{done}");

    // one re-ask: the second request carries the invalid answer and what was wrong
    let refl = fake.seen("step_reflection");
    assert_eq!(refl.len(), 2, "exactly one re-ask");
    let msgs = refl[1].body["messages"].as_array().unwrap();
    assert_eq!(msgs[msgs.len() - 2]["role"], "assistant");
    assert_eq!(msgs[msgs.len() - 2]["content"], "I think the tool is down.");
    assert!(
        msgs[msgs.len() - 1]["content"]
            .as_str()
            .unwrap()
            .contains("not valid")
    );
    // then the fallback reflection, straight to tier 3 (no repair although one was left)
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/reflections")).await;
    let r = r.as_array().unwrap();
    let step_level: Vec<&Value> = r.iter().filter(|x| x["level"] == "step").collect();
    assert_eq!(step_level.len(), 1);
    assert_eq!(step_level[0]["is_fallback"], true, "{r:?}");
    assert_eq!(
        step_level[0]["body"]["root_cause_category"],
        "reflection_error"
    );
    assert!(fake.seen("step_repair").is_empty());
    assert_eq!(fake.seen("overall_reflection").len(), 1);

    // the replanning tool selection names the tools used before and how they failed
    let sel = fake.seen("tool_selection");
    assert_eq!(sel.len(), 1);
    let text = sel[0].user_text();
    assert!(
        sel[0].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("replanning")
    );
    assert!(text.contains("tool `primary` (primary) in step_2: status Failed; failure reason: tool_error: converter in maintenance"), "{text}");
    assert!(
        text.contains("tool `fetch` (fetch) in step_1: status Success"),
        "{text}"
    );
    assert!(text.contains("raw figures"), "output summary: {text}");
    assert!(text.contains("## Execution history"));
    assert!(text.contains("## Reflection analysis"));
    assert!(text.contains("the primary converter is in maintenance"));
    assert!(text.contains("Replanning strategy: replan_from_step step_2"));
    // the replan prompt was built with only the selected tools and the formatted guidance
    let replan = fake.seen("replan");
    assert_eq!(replan.len(), 1);
    let rt = replan[0].user_text();
    assert!(rt.contains("`backup`") && !rt.contains("`primary` ("));
    assert!(rt.contains("Incorrect assumptions:\n- primary is always up"));

    // replan_from_step kept step_1's result: fetch ran once; backup converted it
    let calls = tools.calls();
    assert_eq!(calls.iter().filter(|c| c.tool == "fetch").count(), 1);
    assert_eq!(calls.iter().filter(|c| c.tool == "backup").count(), 1);
    let (_, result) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(
        result["outputs"]["step_2"],
        json!({"converted": "raw figures"})
    );
    assert_eq!(result["final_score"], json!(88.0));
    let ev = events(&app, id).await;
    let replanned = ev.iter().find(|e| e["kind"] == "replanned").unwrap();
    assert_eq!(
        replanned["payload"]["strategy"]["strategy_type"],
        "replan_from_step"
    );
    assert_eq!(replanned["payload"]["kept"], json!(["step_1"]));
    let sel_ev = ev.iter().find(|e| e["kind"] == "tools_selected").unwrap();
    assert_eq!(sel_ev["payload"]["phase"], "replanning");
    assert_eq!(
        sel_ev["payload"]["changes_summary"],
        "primary failed with 503; switch to backup"
    );
    // the failed re-ask counts as one call of two requests
    let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(t["llm_usage"]["calls"], 5, "{t}");
    assert_eq!(t["llm_usage"]["failed_calls"], 1);
    assert_eq!(t["llm_usage"]["requests"], 6);
    w.stop().await;
}

/// Acceptance 4: 5xx answers and timeouts are retried with backoff, then the decision takes
/// its fallback: the task ends (here, waiting for a human) instead of hanging.
#[tokio::test]
async fn server_errors_and_timeouts_are_retried_then_fall_back() {
    let slow = Reply {
        delay: Duration::from_secs(3),
        ..answers(json!({"should_replan": true}))
    };
    let fake = FakeLlm::start(vec![
        (
            "step_reflection",
            vec![status(500), status(502), status(503)],
        ),
        ("overall_reflection", vec![slow]),
    ])
    .await;
    let mut settings = llm_settings(&fake);
    settings.llm.timeout_secs = Some(0.3);
    settings.llm.max_retries = Some(2);
    let app = spawn_app_with(settings).await;
    let id = app
        .submit(json!({"description": "always fails", "plan": {"steps": [
            {"id": "step_1", "tool": "fail", "parameters": {"message": "broken", "category": "tool_error", "retryable": false}}]}}))
        .await;
    let w = app.worker(|_| {});
    let done = app.wait_done(id, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "needs_intervention", "{done}");
    let stop = done["stop_reason"].as_str().unwrap();
    assert!(stop.contains("overall reflection failed"), "{stop}");
    assert!(stop.contains("timed out"), "{stop}");

    // 1 + 2 retries each
    assert_eq!(fake.seen("step_reflection").len(), 3);
    assert_eq!(fake.seen("overall_reflection").len(), 3);
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/reflections")).await;
    let r = r.as_array().unwrap();
    assert!(r.iter().all(|x| x["is_fallback"] == true), "{r:?}");
    let step = r.iter().find(|x| x["level"] == "step").unwrap();
    assert!(
        step["body"]["root_cause"]
            .as_str()
            .unwrap()
            .contains("HTTP 503"),
        "{step}"
    );
    let (_, t) = app.get(&format!("/api/v1/tasks/{id}")).await;
    assert_eq!(
        t["llm_usage"],
        json!({"calls": 2, "failed_calls": 2, "requests": 6, "prompt_tokens": 0,
               "completion_tokens": 0, "total_tokens": 0}),
        "{t}"
    );
    w.stop().await;
}

/// A model that scores evaluations 99 and answers every step reflection with "escalate"
/// (120 tokens a call): what the LLM cap tests spend their budget on.
async fn escalating_llm() -> FakeLlm {
    FakeLlm::start(vec![
        ("evaluation", vec![evaluation(99.0)]),
        (
            "step_reflection",
            vec![answers(json!({"root_cause_category": "external_error", "root_cause": "down",
                "analysis": "a", "confidence": 50, "is_recoverable": false, "alternative_solutions": [],
                "suggested_action": {"type": "trigger_overall_reflection", "data": "down"}}))],
        ),
    ])
    .await
}

/// The per-task LLM call cap: past it, decisions take their fallbacks without calling.
#[tokio::test]
async fn the_llm_call_cap_stops_calls_and_falls_back() {
    let fake = escalating_llm().await;
    let app = spawn_app_with(llm_settings(&fake)).await;
    // one call allowed: the step reflection spends it, the overall reflection falls back
    let one_call = app
        .submit(json!({"description": "one call", "limits": {"max_llm_calls": 1}, "plan": {"steps": [
            {"id": "step_1", "tool": "fail", "parameters": {"message": "down", "category": "external_error"}}]}}))
        .await;
    let plan = json!({"steps": [{"id": "step_1", "tool": "echo", "parameters": {"a": 1}}]});
    let capped = app
        .submit(json!({"description": "capped", "plan": plan, "limits": {"max_llm_calls": 0}}))
        .await;
    let free = app
        .submit(json!({"description": "free", "plan": plan}))
        .await;
    let (code, v) = app
        .post(
            "/api/v1/tasks",
            &json!({"description": "bad cap", "plan": plan, "limits": {"max_llm_calls": -1}}),
        )
        .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_llm_calls")
    );
    let w = app.worker(|_| {});
    app.wait_done(capped, Duration::from_secs(30)).await;
    app.wait_done(free, Duration::from_secs(30)).await;
    let one = app.wait_done(one_call, Duration::from_secs(30)).await;
    assert_eq!(one["status"], "needs_intervention", "{one}");
    let stop = one["stop_reason"].as_str().unwrap();
    assert!(
        stop.contains("LLM call cap is reached (1 of 1 calls)"),
        "{stop}"
    );
    assert_eq!(one["llm_usage"]["calls"], 1);
    assert_eq!(fake.seen("step_reflection").len(), 1);
    assert!(fake.seen("overall_reflection").is_empty());
    assert_eq!(
        fake.seen("evaluation").len(),
        1,
        "only the uncapped task called"
    );
    let (_, c) = app.get(&format!("/api/v1/tasks/{capped}/result")).await;
    let (_, f) = app.get(&format!("/api/v1/tasks/{free}/result")).await;
    // the capped task was scored by the rules evaluation (100: every step succeeded)
    assert_eq!(c["final_score"], json!(100.0), "{c}");
    assert_eq!(f["final_score"], json!(99.0), "{f}");
    let (_, t) = app.get(&format!("/api/v1/tasks/{capped}")).await;
    assert_eq!(t["llm_usage"]["calls"], 0);
    assert_eq!(t["limits"]["max_llm_calls"], 0);
    w.stop().await;
}

/// `limits.max_llm_tokens`: once a task's calls have spent the cap (each scripted answer
/// reports 120 tokens), its decisions take their fallbacks without calling the model.
#[tokio::test]
async fn the_llm_token_cap_stops_calls_and_falls_back() {
    let fake = escalating_llm().await;
    let app = spawn_app_with(llm_settings(&fake)).await;
    // 100 tokens allowed: the step reflection spends 120, the overall reflection falls back
    let capped = app
        .submit(json!({"description": "token cap", "limits": {"max_llm_tokens": 100}, "plan": {"steps": [
            {"id": "step_1", "tool": "fail", "parameters": {"message": "down", "category": "external_error"}}]}}))
        .await;
    let (code, v) = app
        .post(
            "/api/v1/tasks",
            &json!({"description": "bad", "limits": {"max_llm_tokens": -5},
                    "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
        )
        .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(v.to_string().contains("max_llm_tokens"), "{v}");
    let w = app.worker(|_| {});
    let t = app.wait_done(capped, Duration::from_secs(30)).await;
    assert_eq!(t["status"], "needs_intervention", "{t}");
    let stop = t["stop_reason"].as_str().unwrap();
    assert!(
        stop.contains("LLM token cap is reached (120 of 100 tokens)"),
        "{stop}"
    );
    assert_eq!(t["limits"]["max_llm_tokens"], 100);
    assert_eq!(fake.seen("step_reflection").len(), 1);
    assert!(fake.seen("overall_reflection").is_empty());
    w.stop().await;
}

/// Without an LLM a description-only task is a 422 and stores nothing; a plan the model
/// invents over unknown tools is re-asked once, then the task fails with a clear reason.
#[tokio::test]
async fn planning_needs_an_llm_and_a_valid_plan() {
    let app = spawn_app_with(test_settings()).await;
    let before = app.store().row_counts().await.unwrap();
    let (code, v) = app
        .post("/api/v1/tasks", &json!({"description": "plan it yourself"}))
        .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(v["error"]["code"], "plan_required");
    assert_eq!(app.store().row_counts().await.unwrap(), before);

    let bad_plan = answers(json!({"reasoning": "r", "steps": [
        {"step_id": "step_1", "name": "x", "tool": "teleport", "parameters": {}, "dependencies": []}]}));
    let fake = FakeLlm::start(vec![("plan", vec![bad_plan])]).await;
    let mut settings = llm_settings(&fake);
    settings.orchestrator.enable_two_stage_planning = false;
    let app = spawn_app_with(settings).await;
    let (code, v) = app
        .post("/api/v1/tasks", &json!({"description": "teleport"}))
        .await;
    assert_eq!(code, StatusCode::ACCEPTED, "{v}");
    let id: uuid::Uuid = v["task_id"].as_str().unwrap().parse().unwrap();
    let w = app.worker(|_| {});
    let done = app.wait_done(id, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "failed", "{done}");
    let reason = done["error"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("planning failed"), "{reason}");
    assert!(reason.contains("teleport"), "{reason}");
    // one re-ask, and no tool selection with two-stage planning off
    assert_eq!(fake.seen("plan").len(), 2);
    assert!(fake.seen("tool_selection").is_empty());
    assert!(fake.seen("plan")[0].auth == format!("Bearer {KEY}"));
    w.stop().await;
}

/// A worker that dies holding a plan decision, after its LLM call answered but before it
/// applied the answer, loses nothing: the lease expires, another worker plans the task again,
/// and the dead worker's late answer is fenced off.
#[tokio::test]
async fn a_worker_dying_mid_planning_loses_nothing_and_its_late_answer_is_fenced() {
    use trellis::store::decision_queue::Lease;
    let plan = |text: &str| {
        answers(json!({"reasoning": text, "steps": [
            {"step_id": "step_1", "name": "say", "tool": "echo", "parameters": {"said": text},
             "dependencies": []}]}))
    };
    let fake = FakeLlm::start(vec![
        (
            "plan",
            vec![plan("from the dead worker"), plan("from the live worker")],
        ),
        ("evaluation", vec![evaluation(90.0)]),
    ])
    .await;
    let mut settings = llm_settings(&fake);
    settings.orchestrator.enable_two_stage_planning = false;
    let app = spawn_app_with(settings.clone()).await;
    let (_, v) = app
        .post("/api/v1/tasks", &json!({"description": "say something"}))
        .await;
    let id: uuid::Uuid = v["task_id"].as_str().unwrap().parse().unwrap();

    // the doomed worker: claims the plan decision with a short lease and asks the model
    let dead = uuid::Uuid::now_v7();
    let claimed = app.store().claim_decisions(dead, 10, 0.5).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].kind, "plan");
    let brain = trellis::brain::from_settings(&settings);
    assert_eq!(brain.name(), "llm");
    let ctx = app.store().decision_context(&claimed[0], 3).await.unwrap();
    let late = trellis::brain::decide(brain.as_ref(), &ctx, claimed[0].kind, false).await;
    // ... and dies here, before recording anything

    let w = app.worker(|_| {});
    let done = app.wait_done(id, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let (_, result) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(
        result["outputs"]["step_1"],
        json!({"said": "from the live worker"})
    );

    // the zombie's answer changes nothing
    let policy = trellis::worker::WorkerConfig::from_settings(&settings).policy;
    let r = app
        .store()
        .apply_decision(
            &claimed[0].fence(),
            &late,
            &policy,
            Lease {
                worker_id: dead,
                lease_secs: 5.0,
            },
        )
        .await;
    assert!(
        matches!(r, Err(trellis::store::StoreError::Fenced)),
        "{r:?}"
    );
    let (_, p) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(p["version"], 1);
    assert_eq!(p["history"].as_array().map(Vec::len).unwrap_or(0), 0, "{p}");
    let ev = events(&app, id).await;
    assert_eq!(
        kinds(&ev).iter().filter(|k| *k == "plan_generated").count(),
        1
    );
    assert_eq!(fake.seen("plan").len(), 2);
    w.stop().await;
}

/// One step for a scripted plan answer.
fn llm_step(id: &str, tool: &str, params: Value, deps: &[&str]) -> Value {
    json!({"step_id": id, "name": id, "tool": tool, "parameters": params, "dependencies": deps,
           "expected_output": "", "actions": []})
}

fn overall_says(strategy: Value, optimization: &[&str]) -> Reply {
    answers(json!({"should_replan": true, "root_causes": ["scripted"],
        "incorrect_assumptions": [], "alternative_approaches": [], "lessons_learned": [],
        "optimization_suggestions": optimization, "stop_reason": "",
        "replanning_strategy": strategy}))
}

/// The round loop learns from its evaluation, through `add_remediation`: round 1's evaluation
/// is unsuccessful; its failures and improvement suggestions reach the overall reflection's
/// prompt, and they and the reflection's optimization suggestions reach the replan's; the
/// replan adds a remediation step, the step that succeeded is kept (one attempt), and round 2
/// succeeds.
#[tokio::test]
async fn the_next_round_learns_from_the_evaluation_and_adds_a_remediation_step() {
    let weak = answers(json!({"overall_score": 35, "is_successful": false,
        "dimensions": {"completeness": 30, "correctness": 40, "efficiency": 80, "reliability": 60},
        "successes": ["rows fetched"], "failures": ["the totals are missing"],
        "improvement_suggestions": ["add a step that sums the rows"]}));
    let fake = FakeLlm::start(vec![
        ("evaluation", vec![weak, evaluation(95.0)]),
        (
            "overall_reflection",
            vec![overall_says(
                json!({"strategy_type": "add_remediation", "suggestions": ["sum the rows"]}),
                &["compute the totals once, at the end"],
            )],
        ),
        (
            "tool_selection",
            vec![answers(json!({"selected_tools": ["echo"], "reasoning": "echo sums"}))],
        ),
        (
            "replan",
            vec![answers(json!({"reasoning": "add the totals", "steps": [
                llm_step("rows", "echo", json!({"rows": [1, 2]}), &[]),
                llm_step("totals", "echo", json!({"total": 3, "of": "${rows.output.rows}"}), &["rows"])
            ]}))],
        ),
    ])
    .await;
    let app = spawn_app_with(llm_settings(&fake)).await;
    let w = app.worker(|_| {});
    let id = app
        .submit(
            json!({"description": "fetch rows and report totals", "plan": {"steps": [
                {"id": "rows", "name": "rows", "tool": "echo", "parameters": {"rows": [1, 2]}}
            ]}}),
        )
        .await;
    let t = app.wait_done(id, Duration::from_secs(30)).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    assert_eq!(t["round"], 2, "{t}");

    let overall = fake.seen("overall_reflection");
    assert_eq!(overall.len(), 1);
    let text = overall[0].user_text();
    for s in [
        "the finished plan was evaluated as unsuccessful",
        "Overall score 35.0",
        "Failures:\n- the totals are missing",
        "Improvement suggestions:\n- add a step that sums the rows",
    ] {
        assert!(text.contains(s), "{s:?} not in {text}");
    }
    let replan = fake.seen("replan");
    assert_eq!(replan.len(), 1);
    let text = replan[0].user_text();
    for s in [
        "Improvement suggestions:\n- add a step that sums the rows",
        "Optimization suggestions:\n- compute the totals once, at the end",
        "Apply the strategy `add_remediation`",
    ] {
        assert!(text.contains(s), "{s:?} not in {text}");
    }
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(plan["origin"], "replan:add_remediation");
    let (_, attempts) = app.get(&format!("/api/v1/tasks/{id}/attempts")).await;
    let per_step = |k: &str| {
        attempts
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["step_id"] == k)
            .count()
    };
    assert_eq!((per_step("rows"), per_step("totals")), (1, 1), "{attempts}");
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(r["outputs"]["totals"], json!({"total": 3, "of": [1, 2]}));
    assert!(kinds(&events(&app, id).await).contains(&"round_started".to_string()));
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM llm_calls WHERE exchange IS NOT NULL")
        .fetch_one(app.store().pool())
        .await
        .unwrap();
    assert_eq!(
        kept, 0,
        "exchanges are kept only when [debug] save_llm_exchanges is on"
    );
    w.stop().await;
}

/// `[debug] save_llm_exchanges`: every `llm_calls` row keeps the messages sent and the raw
/// answer, with the credential values of the task's metadata and context redacted.
#[tokio::test]
async fn llm_exchanges_are_kept_for_audit_with_credentials_redacted() {
    const SECRET: &str = "sk-task-secret-7731";
    let fake = FakeLlm::start(vec![("evaluation", vec![evaluation(93.0)])]).await;
    let mut settings = llm_settings(&fake);
    settings.debug.save_llm_exchanges = true;
    let app = spawn_app_with(settings).await;
    let w = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "audited", "metadata": {"service": {"api_key": SECRET}},
            "plan": {"steps": [{"id": "s", "tool": "echo", "parameters": {"key": "${metadata.service.api_key}"}}]}}))
        .await;
    assert_eq!(
        app.wait_done(id, Duration::from_secs(30)).await["status"],
        "succeeded"
    );
    let rows: Vec<(String, String, Value)> = sqlx::query_as(
        "SELECT name, model, exchange FROM llm_calls WHERE task_id = $1 ORDER BY id",
    )
    .bind(id)
    .fetch_all(app.store().pool())
    .await
    .unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let (name, model, exchange) = &rows[0];
    assert_eq!(
        (name.as_str(), model.as_str()),
        ("evaluation", "scripted-model")
    );
    let messages = exchange["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    let user = messages.iter().find(|m| m["role"] == "user").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(user.contains("audited"), "{user}");
    let answer: Value = serde_json::from_str(exchange["answer"].as_str().unwrap()).unwrap();
    assert_eq!(answer["overall_score"], 93.0);
    let text = exchange.to_string();
    assert!(!text.contains(SECRET), "{text}");
    // the model was sent the secret (the step's output holds it): the kept copy has it redacted
    let sent = fake.seen("evaluation")[0].body.to_string();
    assert!(sent.contains(SECRET));
    assert!(text.contains("[redacted]"), "{text}");
    w.stop().await;
}

/// `adjust_dependencies` through the LLM brain: a step that ran too early (it needed another
/// step's output) fails, its reflection escalates, the overall reflection adjusts the
/// dependencies, the replan makes it depend on that step; the step it now depends on had
/// succeeded and is kept (its tool is not called again).
#[tokio::test]
async fn adjust_dependencies_makes_a_step_wait_for_the_output_it_needs() {
    let fake = FakeLlm::start(vec![
        (
            "step_reflection",
            vec![answers(json!({"root_cause_category": "logic_error",
                "root_cause": "the token was not there yet", "analysis": "it ran before login",
                "confidence": 80, "is_recoverable": true, "alternative_solutions": [],
                "suggested_action": {"type": "trigger_overall_reflection", "data": "ordering"}}))],
        ),
        (
            "overall_reflection",
            vec![overall_says(
                json!({"strategy_type": "adjust_dependencies",
                       "adjustments": ["use must depend on login"]}),
                &[],
            )],
        ),
        (
            "tool_selection",
            vec![answers(
                json!({"selected_tools": ["login", "use"], "reasoning": "same tools"}),
            )],
        ),
        (
            "replan",
            vec![answers(
                json!({"reasoning": "use waits for login", "steps": [
                    llm_step("login", "login", json!({}), &[]),
                    llm_step("use", "use", json!({"token": "${login.output.token}"}), &["login"])
                ]}),
            )],
        ),
        ("evaluation", vec![evaluation(90.0)]),
    ])
    .await;
    let app = spawn_app_with(llm_settings(&fake)).await;
    let server = ToolServer::start(
        Duration::ZERO,
        Arc::new(|c| match c.tool.as_str() {
            "login" => (200, json!({"output": {"token": "t-1"}})),
            _ if c.parameters["token"] == "t-1" => (200, json!({"output": {"ok": true}})),
            _ => (
                400,
                json!({"error": {"message": "no token", "category": "logic_error"}}),
            ),
        }),
    )
    .await;
    register_tool(&app, "login", &server.endpoint("login"), json!({})).await;
    register_tool(&app, "use", &server.endpoint("use"), json!({})).await;
    let w = app.worker(|_| {});
    let id = app
        .submit(json!({"description": "log in, then use the token",
        "limits": {"max_step_retries": 0},
        "plan": {"steps": [
            {"id": "login", "name": "login", "tool": "login"},
            {"id": "use", "name": "use", "tool": "use", "parameters": {"token": "none"}}
        ]}}))
        .await;
    let t = app.wait_done(id, Duration::from_secs(30)).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let tools: Vec<String> = server.calls().into_iter().map(|c| c.tool).collect();
    assert_eq!(
        tools.iter().filter(|t| *t == "login").count(),
        1,
        "{tools:?}"
    );
    assert_eq!(tools.iter().filter(|t| *t == "use").count(), 2, "{tools:?}");
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(plan["origin"], "replan:adjust_dependencies");
    let use_step = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "use")
        .unwrap()
        .clone();
    assert_eq!(use_step["dependencies"], json!(["login"]), "{use_step}");
    assert!(
        fake.seen("replan")[0]
            .user_text()
            .contains("use must depend on login")
    );
    w.stop().await;
}

/// The LLM brain's tool selection may pick a workflow template (seed 004's `workflow_id`): the
/// template's plan with the model's input becomes version 1 (origin `template:<id>`) and no
/// plan is asked for; an input that does not match the template's schema is re-asked.
#[tokio::test]
async fn tool_selection_may_pick_a_workflow_template() {
    let fake = FakeLlm::start(vec![
        (
            "tool_selection",
            vec![
                answers(json!({"selected_tools": [], "reasoning": "a template fits",
                    "task_type": "greeting", "workflow_id": "greet", "workflow_input": {"name": 7}})),
                answers(json!({"selected_tools": [], "reasoning": "a template fits",
                    "task_type": "greeting", "workflow_id": "greet", "workflow_input": {"name": "Ada"}})),
            ],
        ),
        ("evaluation", vec![evaluation(96.0)]),
    ])
    .await;
    let app = spawn_app_with(llm_settings(&fake)).await;
    let (s, v) = app
        .post(
            "/api/v1/templates",
            &json!({"id": "greet", "description": "greet someone by name",
                "input_schema": {"type": "object", "required": ["name"],
                                 "properties": {"name": {"type": "string"}}},
                "plan": {"steps": [{"id": "hello", "tool": "echo", "parameters": {"text": "hello ${input.name}"}}]}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let w = app.worker(|_| {});
    let (_, v) = app
        .post("/api/v1/tasks", &json!({"description": "say hello to Ada"}))
        .await;
    let id: uuid::Uuid = v["task_id"].as_str().unwrap().parse().unwrap();
    let t = app.wait_done(id, Duration::from_secs(30)).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let (_, plan) = app.get(&format!("/api/v1/tasks/{id}/plan")).await;
    assert_eq!(plan["origin"], "template:greet", "{plan}");
    let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(r["outputs"]["hello"], json!({"text": "hello Ada"}));
    let sel = fake.seen("tool_selection");
    assert_eq!(sel.len(), 2, "the mismatching input was re-asked");
    assert!(
        sel[0]
            .user_text()
            .contains("`greet`: greet someone by name")
    );
    assert!(fake.seen("plan").is_empty(), "no plan was asked for");
    let selected = events(&app, id)
        .await
        .into_iter()
        .find(|e| e["kind"] == "tools_selected")
        .unwrap();
    assert_eq!(selected["payload"]["workflow_id"], "greet", "{selected}");
    w.stop().await;
}

/// llama-cpp-python's server refuses `json_schema` with a 500 that names response_format: one
/// refused request, then every request in `json_object` with the schema beside it, and the
/// task's decisions are answered.
#[tokio::test]
async fn a_server_refusing_json_schema_with_a_500_gets_json_object() {
    let fake = FakeLlm::start_llama_cpp(vec![("evaluation", vec![evaluation(91.0)])]).await;
    let app = spawn_app_with(llm_settings(&fake)).await;
    let w = app.worker(|_| {});
    let mut ids = Vec::new();
    for i in 0..2 {
        ids.push(
            app.submit(json!({"description": format!("task {i}"),
                "plan": {"steps": [{"id": "s", "tool": "echo"}]}}))
                .await,
        );
    }
    for id in ids {
        let done = app.wait_done(id, Duration::from_secs(30)).await;
        assert_eq!(done["status"], "succeeded", "{done}");
        let (_, r) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
        assert_eq!(
            r["final_score"], 91.0,
            "the model's evaluation, not a fallback"
        );
    }
    assert_eq!(fake.seen("rejected").len(), 1, "one refused request");
    let asked = fake.seen("evaluation");
    assert_eq!(asked.len(), 2);
    for s in &asked {
        assert_eq!(s.body["response_format"]["type"], "json_object");
        assert!(s.body["response_format"]["schema"]["properties"]["overall_score"].is_object());
    }
    w.stop().await;
}

/// An answer that fails validation (twice: asked once more) is kept in `llm_calls` when
/// `save_llm_exchanges` is on — with the task's secrets redacted.
#[tokio::test]
async fn an_invalid_answer_is_kept_redacted() {
    const SECRET: &str = "sk-task-secret-9124";
    let bad = says(&format!(
        "{{\"overall_score\": \"high\", \"note\": \"{SECRET}\"}}"
    ));
    let fake = FakeLlm::start(vec![("evaluation", vec![bad])]).await;
    let mut settings = llm_settings(&fake);
    settings.debug.save_llm_exchanges = true;
    let app = spawn_app_with(settings).await;
    let w = app.worker(|_| {});
    let id = app
        .submit(
            json!({"description": "kept", "metadata": {"service": {"api_key": SECRET}},
            "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
        )
        .await;
    app.wait_done(id, Duration::from_secs(30)).await;
    let rows: Vec<(bool, Value)> =
        sqlx::query_as("SELECT ok, exchange FROM llm_calls WHERE task_id = $1 ORDER BY id")
            .bind(id)
            .fetch_all(app.store().pool())
            .await
            .unwrap();
    let (ok, exchange) = rows.first().expect("the call is recorded");
    assert!(!ok);
    let answer = exchange["answer"]
        .as_str()
        .expect("the invalid answer is kept");
    assert!(answer.contains("overall_score"), "{answer}");
    assert!(!exchange.to_string().contains(SECRET), "{exchange}");
    assert!(answer.contains("[redacted]"), "{answer}");
    w.stop().await;
}

/// The fan-out issue, part 3: the planning prompt teaches `map` (and its schema accepts one),
/// and a plan the model writes with a map runs: one item per element, joined in order.
#[tokio::test]
async fn the_planner_is_taught_maps_and_a_planned_map_runs() {
    let fake = FakeLlm::start(vec![
        (
            "tool_selection",
            vec![answers(
                json!({"selected_tools": ["echo"], "reasoning": "list, then one echo per item"}),
            )],
        ),
        (
            "plan",
            vec![answers(json!({"reasoning": "find the documents, then summarise each",
                "steps": [
                    {"step_id": "step_1", "name": "find", "tool": "echo",
                     "parameters": {"docs": ["a", "b", "c"]}, "dependencies": []},
                    {"step_id": "step_2", "name": "summarise", "tool": "echo",
                     "parameters": {"doc": "${item}", "n": "${item_index}"},
                     "dependencies": ["step_1"],
                     "map": {"over": "${step_1.output.docs}", "max_items": 10, "max_parallel": 2}}]}))],
        ),
        ("evaluation", vec![evaluation(95.0)]),
    ])
    .await;
    let app = spawn_app_with(llm_settings(&fake)).await;
    let (code, v) = app
        .post(
            "/api/v1/tasks",
            &json!({"description": "summarise every document"}),
        )
        .await;
    assert_eq!(code, StatusCode::ACCEPTED, "{v}");
    let id: uuid::Uuid = v["task_id"].as_str().unwrap().parse().unwrap();
    let w = app.worker(|_| {});
    let done = app.wait_done(id, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let (_, result) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(
        result["outputs"]["step_2"],
        json!([{"doc": "a", "n": 0}, {"doc": "b", "n": 1}, {"doc": "c", "n": 2}])
    );
    let plan = fake.seen("plan");
    let text = plan[0].user_text();
    for taught in ["`map`", "${item}", "${item_index}", "max_items"] {
        assert!(text.contains(taught), "the prompt teaches {taught}");
    }
    let schema = &plan[0].body["response_format"]["json_schema"]["schema"];
    assert!(
        schema.to_string().contains("\"on_item_failure\""),
        "the plan schema accepts a map: {schema}"
    );
    w.stop().await;
}

/// A row of `recovery_cost_by_tier`: tier, strategy, actions, LLM cost, tool cost, saved steps,
/// tasks saved, cost per task saved.
type TierCost = (i32, String, i64, f64, f64, i64, i64, Option<f64>);

/// Every answer reports 1,000 prompt tokens (200 of them cached) and 500 completion tokens.
fn priced(mut r: Reply) -> Reply {
    r.body["usage"] = json!({"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500,
                             "prompt_tokens_details": {"cached_tokens": 200}});
    r
}

/// Cost (operations issue, acceptance 2). An LLM call is priced when it is written, from the
/// price valid then: a price changed mid-day leaves the costs recorded before it as they were.
/// A task with `max_cost` is warned at 80 % of it and stops within one LLM call of it, failed
/// with `cost_limit_exceeded`; the recovery-cost view counts its reflections cell by cell.
#[tokio::test]
async fn llm_calls_are_priced_when_written_and_max_cost_stops_a_task() {
    let fake = FakeLlm::start(vec![
        ("evaluation", vec![priced(evaluation(99.0))]),
        (
            "step_reflection",
            vec![priced(answers(
                json!({"root_cause_category": "parameter_error",
                "root_cause": "r", "analysis": "a", "confidence": 80, "is_recoverable": true,
                "alternative_solutions": [],
                "suggested_action": {"type": "retry_with_params", "data": {"try": "again"}}}),
            ))],
        ),
    ])
    .await;
    let app = spawn_app_with(llm_settings(&fake)).await;
    let hour_ago = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let (s, v) = app
        .put(
            "/api/v1/model-prices",
            &json!({"model": "scripted-model", "input_per_mtok": 1, "output_per_mtok": 2,
                    "cached_input_per_mtok": 0.5, "valid_from": hour_ago}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, v) = app
        .put(
            "/api/v1/model-prices",
            &json!({"model": "m", "input_per_mtok": -1, "output_per_mtok": 2}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let w = app.worker(|_| {});
    // before the price change: one evaluation call at 800 × 1 + 200 × 0.5 + 500 × 2 per million
    let cheap = app
        .submit(json!({"description": "cheap", "plan": {"steps": [{"id": "s", "tool": "echo"}]}}))
        .await;
    assert_eq!(
        app.wait_done(cheap, Duration::from_secs(30)).await["status"],
        "succeeded"
    );
    let costs = |id: uuid::Uuid| {
        let pool = app.store().pool().clone();
        async move {
            sqlx::query_scalar::<_, Option<f64>>(
                "SELECT cost::float8 FROM llm_calls WHERE task_id = $1 ORDER BY id",
            )
            .bind(id)
            .fetch_all(&pool)
            .await
            .unwrap()
        }
    };
    assert_eq!(costs(cheap).await, [Some(0.0019)]);
    // mid-day, ten times the price
    let (s, _) = app
        .put(
            "/api/v1/model-prices",
            &json!({"model": "scripted-model", "input_per_mtok": 10, "output_per_mtok": 20,
                    "cached_input_per_mtok": 5}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (_, prices) = app.get("/api/v1/model-prices").await;
    assert_eq!(prices.as_array().unwrap().len(), 2, "{prices}");
    // each reflection now costs 0.019: warned after the third (0.057 of 0.07), stopped after
    // the fourth (0.076)
    let capped = app
        .submit(
            json!({"description": "capped", "limits": {"max_cost": 0.07, "max_step_retries": 10, "max_consecutive_failures": 10},
            "plan": {"steps": [{"id": "s", "tool": "fail",
                "parameters": {"message": "no", "category": "parameter_error"}}]}}),
        )
        .await;
    let t = app.wait_done(capped, Duration::from_secs(60)).await;
    w.stop().await;
    assert_eq!(
        costs(cheap).await,
        [Some(0.0019)],
        "a price change rewrote history"
    );
    assert_eq!(t["status"], "failed", "{t}");
    assert_eq!(t["error"]["code"], "cost_limit_exceeded", "{t}");
    let paid: Vec<f64> = costs(capped)
        .await
        .into_iter()
        .map(Option::unwrap)
        .collect();
    assert!(paid.iter().all(|c| (c - 0.019).abs() < 1e-12), "{paid:?}");
    let spent: f64 = paid.iter().sum();
    assert!(
        spent >= 0.07 && spent - 0.07 < 0.019,
        "stopped within one call of the limit: {paid:?}"
    );
    assert_eq!(paid.len(), 4, "{paid:?}");
    let (_, status) = app.get(&format!("/api/v1/tasks/{capped}")).await;
    assert_eq!(status["limits"]["max_cost"], 0.07);
    let ev = events(&app, capped).await;
    let warnings: Vec<&Value> = ev.iter().filter(|e| e["kind"] == "cost_warning").collect();
    assert_eq!(warnings.len(), 1, "{ev:?}");
    assert!((warnings[0]["payload"]["cost"].as_f64().unwrap() - 0.057).abs() < 1e-9);
    assert_eq!(warnings[0]["payload"]["max_cost"], 0.07);
    // the views: the task's cost, and what its recovery cost (three reflected retries, each
    // after its reflection's call; the fourth call's outcome found the task stopped)
    let by_task: (f64, f64, f64) = sqlx::query_as(
        "SELECT llm_cost::float8, tool_cost::float8, cost::float8 FROM cost_by_task WHERE task_id = $1",
    )
    .bind(capped)
    .fetch_one(app.store().pool())
    .await
    .unwrap();
    assert!(
        (by_task.0 - 0.076).abs() < 1e-12 && by_task.1 == 0.0 && (by_task.2 - 0.076).abs() < 1e-12,
        "{by_task:?}"
    );
    let tiers: Vec<TierCost> = sqlx::query_as(
        "SELECT tier, strategy, actions, llm_cost::float8, tool_cost::float8, saved_steps,
                tasks_saved, cost_per_task_saved::float8
         FROM recovery_cost_by_tier ORDER BY tier, strategy",
    )
    .fetch_all(app.store().pool())
    .await
    .unwrap();
    assert_eq!(tiers.len(), 1, "{tiers:?}");
    let (tier, strategy, actions, llm, tool, saved, tasks_saved, per) = tiers[0].clone();
    assert_eq!(
        (tier, strategy.as_str(), actions, saved, tasks_saved, per),
        (1, "retry_with_params", 3, 0, 0, None)
    );
    assert!((llm - 0.057).abs() < 1e-12 && tool == 0.0, "{tiers:?}");
    // the metric, per model
    let metrics = app
        .http
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("trellis_llm_cost_total{model=\"scripted-model\"}"))
        .unwrap_or_else(|| panic!("no cost metric:\n{metrics}"));
    let total: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(total >= 0.0019 + 0.076 - 1e-9, "{line}");
}
