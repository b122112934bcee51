//! The agent step (the agent issue) end to end: the API, workers, real HTTP tools, and a real
//! HTTP server speaking the chat-completions wire format that plays a scripted agent (it reads
//! the transcript each request carries and answers with tool calls or a final answer).

use trellis::testkit as common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use common::faults::{FaultServer, Reply, Seen};
use common::{TestApp, TestWorker, register_tool, spawn_app_with, test_settings, wait_for};
use serde_json::{Value, json};
use uuid::Uuid;

const LIMIT: Duration = Duration::from_secs(60);

type Script = Arc<dyn Fn(&Value) -> (u16, Value) + Send + Sync>;

/// An OpenAI-compatible server whose answers come from a script over the request.
#[derive(Clone)]
struct FakeModel {
    script: Script,
    /// Every agent request (one with `tools`), in arrival order.
    seen: Arc<Mutex<Vec<Value>>>,
    base: String,
}

impl FakeModel {
    async fn start(script: impl Fn(&Value) -> (u16, Value) + Send + Sync + 'static) -> Self {
        async fn handle(
            State(f): State<FakeModel>,
            axum::Json(body): axum::Json<Value>,
        ) -> (StatusCode, axum::Json<Value>) {
            if body.get("tools").is_none() {
                // a decision of the LLM brain (a worker process's): refused, so the brain
                // takes its fallback at once
                return (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"error": {"message": "decisions are not scripted"}})),
                );
            }
            f.seen.lock().unwrap().push(body.clone());
            let (status, reply) = (f.script)(&body);
            (StatusCode::from_u16(status).unwrap(), axum::Json(reply))
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let fake = FakeModel {
            script: Arc::new(script),
            seen: Arc::default(),
            base: format!("http://{}/v1", listener.local_addr().unwrap()),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .with_state(fake.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        fake
    }

    fn seen(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }
}

/// The turn a request asks for: the assistant messages it carries, plus one.
fn turn_of(body: &Value) -> usize {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count()
        + 1
}

fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

/// A model's answer calling `calls` (`(id, function, arguments)`).
fn calling(calls: &[(&str, &str, Value)]) -> (u16, Value) {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    (
        200,
        json!({"choices": [{"message": {"role": "assistant", "content": null,
                                         "tool_calls": tool_calls}}],
               "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}),
    )
}

fn answering(text: &str) -> (u16, Value) {
    (
        200,
        json!({"choices": [{"message": {"role": "assistant", "content": text}}],
               "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}),
    )
}

fn settings(fake: &FakeModel) -> trellis::config::Settings {
    let mut s = test_settings();
    s.llm.base_url = Some(fake.base.clone());
    s.llm.model = Some("scripted-agent".into());
    s.llm.timeout_secs = Some(5.0);
    s.llm.max_retries = Some(2);
    s.llm.retry_backoff_ms = Some(20);
    s
}

/// A worker whose decisions come from the rules brain (the agent's turns from the model).
fn worker(app: &TestApp) -> TestWorker {
    app.worker(|c| {
        c.brain = Arc::new(trellis::brain::rules::RulesBrain);
        c.policy.retry.initial_interval_ms = 20;
        c.policy.retry.max_interval_ms = 50;
    })
}

fn agent_task(params: Value) -> Value {
    json!({"description": "an agent", "plan": {"steps": [
        {"id": "research", "tool": "agent", "parameters": params}]}})
}

async fn turns(app: &TestApp, id: Uuid) -> Vec<Value> {
    let (s, v) = app
        .get(&format!("/api/v1/tasks/{id}/steps/research/turns"))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v.as_array().unwrap().clone()
}

async fn attempts(app: &TestApp, id: Uuid) -> Vec<Value> {
    let (_, v) = app
        .get(&format!("/api/v1/tasks/{id}/attempts?limit=1000"))
        .await;
    v.as_array().unwrap().clone()
}

/// The tool messages of a request, by `tool_call_id`.
fn results(body: &Value) -> Vec<(String, String)> {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Acceptance 1: two calls side by side in turn 1, one in turn 2, then a final JSON answer.
/// Each call is a step with its attempt; `/turns` shows three turns whose messages carry the
/// results under the calls' ids; the model saw each result.
#[tokio::test]
async fn a_scripted_agent_runs_its_calls_as_steps_and_answers() {
    let fake = FakeModel::start(|body| match turn_of(body) {
        1 => calling(&[
            ("call_a", "lookup", json!({"q": "alpha"})),
            ("call_b", "lookup", json!({"q": "beta"})),
        ]),
        2 => calling(&[("call_c", "total", json!({"of": ["alpha", "beta"]}))]),
        _ => answering("{\"answer\": \"alpha+beta\", \"calls\": 3}"),
    })
    .await;
    let app = spawn_app_with(settings(&fake)).await;
    let tools = FaultServer::start().await;
    tools.route("lookup", Reply::echo);
    tools.route("total", |s: &Seen| {
        Reply::json(
            200,
            json!({"output": {"sum": s.parameters["of"].as_array().unwrap().len()}}),
        )
    });
    for t in ["lookup", "total"] {
        let schema =
            json!({"input_schema": {"type": "object"}, "description": format!("the {t} tool")});
        register_tool(&app, t, &tools.endpoint(t), schema).await;
    }
    let _w = worker(&app);
    let id = app
        .submit(agent_task(json!({
            "instructions": "Find alpha and beta, then total them.",
            "input": {"topic": "greek"},
            "tools": ["lookup", "total"],
            "output_schema": {"type": "object", "required": ["answer"],
                              "properties": {"answer": {"type": "string"}}},
        })))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let (_, result) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(
        result["outputs"]["research"],
        json!({"answer": "alpha+beta", "calls": 3}),
        "{result}"
    );
    // each call ran once, as its own step with its attempt
    assert_eq!(tools.calls("lookup").len(), 2);
    assert_eq!(tools.calls("total").len(), 1);
    let tried = attempts(&app, id).await;
    for key in ["research.1.1", "research.1.2", "research.2.1"] {
        let a: Vec<&Value> = tried.iter().filter(|a| a["step_id"] == key).collect();
        assert_eq!(a.len(), 1, "{key}: {tried:?}");
        assert_eq!(a[0]["status"], "succeeded");
    }
    // the model was offered the tools and saw every result under its call's id
    let seen = fake.seen();
    assert_eq!(seen.len(), 3, "one request per turn");
    let offered: Vec<&str> = seen[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["lookup", "total"]);
    assert_eq!(
        seen[0]["messages"][1]["content"],
        json!({"topic": "greek"}).to_string()
    );
    let second = results(&seen[1]);
    assert_eq!(second.len(), 2);
    assert_eq!(second[0].0, "call_a");
    assert!(second[0].1.contains("alpha"), "{second:?}");
    assert_eq!(second[1].0, "call_b");
    assert!(second[1].1.contains("beta"), "{second:?}");
    let third = results(&seen[2]);
    assert_eq!(
        third.last().unwrap(),
        &("call_c".to_string(), "{\"sum\":2}".to_string())
    );
    // three stored turns; turns 2 and 3 open with the results of the calls before them
    let t = turns(&app, id).await;
    assert_eq!(t.len(), 3, "{t:?}");
    assert_eq!(t[0]["turn"], 1);
    let ids = |turn: &Value| -> Vec<String> {
        turn["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&t[0]), ["call_a", "call_b"]);
    assert_eq!(t[0]["tool_calls"][0]["step_id"], "research.1.1");
    assert_eq!(t[0]["tool_calls"][0]["tool"], "lookup");
    assert_eq!(t[0]["tool_calls"][0]["status"], "succeeded");
    assert_eq!(t[0]["tool_calls"][1]["parameters"], json!({"q": "beta"}));
    let answered = |turn: &Value| -> Vec<String> {
        turn["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["tool_call_id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(answered(&t[1]), ids(&t[0]));
    assert_eq!(answered(&t[2]), ids(&t[1]));
    assert_eq!(t[2]["tool_calls"], json!([]));
    assert_eq!(t[2]["usage"]["total_tokens"], 60);
    // one event per turn
    let (_, events) = app.get(&format!("/api/v1/tasks/{id}/events")).await;
    let turned: Vec<&Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "agent_turn_completed")
        .collect();
    assert_eq!(turned.len(), 3);
    for e in &turned {
        let kind = e["kind"].as_str().unwrap();
        trellis::domain::event::Event::parse(kind, &e["payload"]).expect("reads as its variant");
    }
    assert_eq!(
        turned[0]["payload"],
        json!({"step_id": "research", "turn": 1, "tool_calls": ["research.1.1", "research.1.2"]})
    );
    // the LLM calls are the task's, as its decisions' are
    let n: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM llm_calls WHERE task_id = $1 AND name = 'agent_turn'",
    )
    .bind(id)
    .fetch_one(app.store().pool())
    .await
    .unwrap();
    assert_eq!(n, 3);
    // a step that is not there is a 404; a step that is not an agent has no turns
    let (s, _) = app
        .get(&format!("/api/v1/tasks/{id}/steps/nope/turns"))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, v) = app
        .get(&format!("/api/v1/tasks/{id}/steps/research.1.1/turns"))
        .await;
    assert_eq!((s, v), (StatusCode::OK, json!([])));
}

/// Acceptance 2: a tool that fails twice with 503 and then works is retried by Trellis, and
/// the model sees only its success; a tool that answers 400 to what the model sent reaches the
/// model as an error in a `tool` message (after Trellis's own recovery), the model calls it
/// again with what it asks for, and the task ends. `agent_calls` counts both recoveries.
#[tokio::test]
async fn the_model_sees_what_recovery_could_not_heal_and_nothing_it_healed() {
    let fake = FakeModel::start(|body| match turn_of(body) {
        1 => calling(&[
            ("call_f", "shaky", json!({"n": 1})),
            ("call_b", "strict", json!({"n": "one"})),
        ]),
        2 => calling(&[("call_c", "strict", json!({"n": 1}))]),
        _ => answering("done"),
    })
    .await;
    let app = spawn_app_with(settings(&fake)).await;
    let tools = FaultServer::start().await;
    tools.route("shaky", |s: &Seen| match s.nth {
        1 | 2 => Reply::status(503),
        _ => Reply::json(200, json!({"output": {"fine": true}})),
    });
    tools.route("strict", |s: &Seen| match s.parameters["n"].is_number() {
        true => Reply::echo(s),
        false => Reply::json(400, json!({"error": "n must be a number"})),
    });
    for t in ["shaky", "strict"] {
        register_tool(&app, t, &tools.endpoint(t), json!({})).await;
    }
    let _w = worker(&app);
    let id = app
        .submit(agent_task(json!({
            "instructions": "Use both.", "tools": ["shaky", "strict"]})))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(tools.calls("shaky").len(), 3, "retried by Trellis");
    assert!(tools.calls("strict").len() >= 2);
    let seen = fake.seen();
    assert_eq!(seen.len(), 3, "the retries cost the model no turn");
    let r = results(&seen[1]);
    assert_eq!(r[0], ("call_f".to_string(), "{\"fine\":true}".to_string()));
    assert_eq!(r[1].0, "call_b");
    assert!(r[1].1.starts_with("error ("), "the 400 as an error: {r:?}");
    let t = turns(&app, id).await;
    assert_eq!(t[0]["tool_calls"][0]["status"], "succeeded");
    assert_eq!(
        t[0]["tool_calls"][1]["status"], "skipped",
        "given up after its recovery"
    );
    assert_eq!(t[1]["tool_calls"][0]["status"], "succeeded");
    let counted: Vec<(String, i64, i64, i64, i64)> = sqlx::query_as(
        "SELECT tool, calls, healed_by_trellis, given_up, recovered_by_model FROM agent_calls
         ORDER BY tool",
    )
    .fetch_all(app.store().pool())
    .await
    .unwrap();
    assert_eq!(
        counted,
        [("shaky".into(), 1, 1, 0, 0), ("strict".into(), 2, 0, 1, 1)]
    );
}

/// Acceptance 3: a model that never stops, with `max_turns` 3: exactly 3 LLM calls, and the
/// task stops with `agent_max_turns`.
#[tokio::test]
async fn a_model_that_never_stops_gets_max_turns_calls() {
    let fake = FakeModel::start(|body| {
        let n = turn_of(body);
        calling(&[(&format!("call_{n}"), "lookup", json!({"n": n}))])
    })
    .await;
    let app = spawn_app_with(settings(&fake)).await;
    let tools = FaultServer::start().await;
    tools.route("lookup", Reply::echo);
    register_tool(&app, "lookup", &tools.endpoint("lookup"), json!({})).await;
    let _w = worker(&app);
    let id = app
        .submit(agent_task(json!({
            "instructions": "Go on forever.", "tools": ["lookup"], "max_turns": 3})))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["error"]["code"], "agent_max_turns", "{done}");
    assert_eq!(fake.seen().len(), 3);
    // the last turn's call was not run: no turn would read it
    assert_eq!(tools.calls("lookup").len(), 2);
    assert_eq!(turns(&app, id).await.len(), 3);
}

/// Acceptance 5: a call of a tool `approval_for` names waits for an approval, and runs after.
#[tokio::test]
async fn an_approval_for_call_waits_for_its_approval() {
    let fake = FakeModel::start(|body| match turn_of(body) {
        1 => calling(&[("call_d", "deploy", json!({"env": "prod"}))]),
        _ => answering("deployed"),
    })
    .await;
    let app = spawn_app_with(settings(&fake)).await;
    let tools = FaultServer::start().await;
    tools.route("deploy", Reply::echo);
    register_tool(&app, "deploy", &tools.endpoint("deploy"), json!({})).await;
    let _w = worker(&app);
    let id = app
        .submit(agent_task(json!({
            "instructions": "Deploy.", "tools": ["deploy"], "approval_for": ["deploy"]})))
        .await;
    let waits = wait_for("the call's approval", LIMIT, || async {
        let (_, v) = app
            .get(&format!("/api/v1/waits?status=open&task_id={id}"))
            .await;
        let list = v.as_array().unwrap().clone();
        (!list.is_empty()).then_some(list)
    })
    .await;
    assert_eq!(waits[0]["step_id"], "research.1.1", "{waits:?}");
    assert_eq!(waits[0]["tool"], "deploy");
    assert!(
        tools.calls("deploy").is_empty(),
        "no call before the approval"
    );
    let wait = waits[0]["wait_id"].as_str().unwrap();
    let (s, v) = app
        .post(&format!("/api/v1/waits/{wait}/approve"), &json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(tools.calls("deploy").len(), 1);
    let (_, result) = app.get(&format!("/api/v1/tasks/{id}/result")).await;
    assert_eq!(result["outputs"]["research"], "deployed");
}

/// Without an LLM endpoint an agent step fails at once, with a reason.
#[tokio::test]
async fn an_agent_without_an_llm_endpoint_fails_with_a_reason() {
    let app = spawn_app_with(test_settings()).await;
    let tools = FaultServer::start().await;
    tools.route("lookup", Reply::echo);
    register_tool(&app, "lookup", &tools.endpoint("lookup"), json!({})).await;
    let _w = worker(&app);
    let id = app
        .submit(agent_task(
            json!({"instructions": "x", "tools": ["lookup"]}),
        ))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    // nothing the brain may try heals it: a person is asked
    assert_eq!(done["status"], "needs_intervention", "{done}");
    let tried = attempts(&app, id).await;
    assert_eq!(tried.len(), 1, "not retried: {tried:?}");
    assert!(
        tried[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("[llm]"),
        "{tried:?}"
    );
    assert!(tools.calls("lookup").is_empty());
}

/// Acceptance 4: the worker process is killed (`kill -9`) between turns, 10 times: once per
/// agent, after its first or its second turn was stored, while the worker may be running the
/// call that turn asked for. Every task succeeds, and every call made its effect once (an
/// idempotent tool counts effects per idempotency key; a call in flight at a kill is made
/// again under its key).
#[tokio::test]
async fn killing_the_worker_between_turns_loses_nothing_and_repeats_no_call() {
    use common::idempotent::{Fresh, IdempotentTool};
    use common::procs::WorkerProc;
    const TASKS: usize = 10;
    let fake = FakeModel::start(|body| match turn_of(body) {
        1 => calling(&[("call_1", "store", json!({"step": 1}))]),
        2 => calling(&[("call_2", "store", json!({"step": 2}))]),
        _ => answering("stored twice"),
    })
    .await;
    let app = spawn_app_with(settings(&fake)).await;
    let tool = IdempotentTool::start(Arc::new(|_: &Value| Fresh::Answer)).await;
    register_tool(&app, "store", &tool.url(), json!({})).await;
    // one step at a time: each kill lands between two turns of one agent
    let env = [
        ("APP_LLM__BASE_URL", fake.base.as_str()),
        ("APP_LLM__MODEL", "scripted-agent"),
        ("APP_LLM__MAX_RETRIES", "0"),
        ("APP_WORKER__CONCURRENCY", "1"),
        ("APP_WORKER__RETRY_BACKOFF_MS", "20"),
    ];
    let turns_of = |id: Uuid| {
        let pool = app.store().pool().clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM agent_turns WHERE task_id = $1")
                .bind(id)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let mut worker = WorkerProc::start(&app.db, &env);
    for i in 0..TASKS {
        let params = json!({"instructions": format!("store {i}"), "tools": ["store"]});
        let id = app.submit(agent_task(params)).await;
        let after = 1 + (i % 2) as i64;
        wait_for("the turn to kill after", LIMIT, || async {
            (turns_of(id).await >= after).then_some(())
        })
        .await;
        worker.signal(libc::SIGKILL);
        worker.wait_exit(Duration::from_secs(10)).await;
        worker = WorkerProc::start(&app.db, &env);
        let done = app.wait_done(id, LIMIT).await;
        assert_eq!(done["status"], "succeeded", "{done}");
        // its three turns, each stored once
        assert_eq!(turns_of(id).await, 3);
    }
    drop(worker);
    // every call made its effect once, under one key per call step
    let effects = tool.effects();
    assert_eq!(effects.len(), TASKS * 2, "{effects:?}");
    assert!(effects.values().all(|&n| n == 1), "{effects:?}");
    let mut keys_per_step = std::collections::HashMap::<(String, String), BTreeSet<String>>::new();
    for r in tool.requests() {
        keys_per_step
            .entry((r.task_id, r.step_id))
            .or_default()
            .insert(r.key.unwrap_or_default());
    }
    assert_eq!(keys_per_step.len(), TASKS * 2);
    assert!(
        keys_per_step.values().all(|k| k.len() == 1),
        "{keys_per_step:?}"
    );
}

/// Acceptance 7 (the dashboard): in headless Chromium, an agent step is one node that opens
/// into its turns and their calls (tests/dashboard/agent.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_is_one_node_that_opens_into_its_turns_in_headless_chromium() {
    let fake = FakeModel::start(|body| match turn_of(body) {
        1 => calling(&[
            ("call_a", "lookup", json!({"q": "alpha"})),
            ("call_b", "lookup", json!({"q": "beta"})),
        ]),
        _ => answering("the answer is alpha and beta"),
    })
    .await;
    let app = spawn_app_with(settings(&fake)).await;
    let tools = FaultServer::start().await;
    tools.route("lookup", Reply::echo);
    register_tool(&app, "lookup", &tools.endpoint("lookup"), json!({})).await;
    let w = worker(&app);
    let id = app
        .submit(agent_task(
            json!({"instructions": "Look.", "tools": ["lookup"]}),
        ))
        .await;
    let done = app.wait_done(id, LIMIT).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let env = [
        ("AGENT_TASK", id.to_string()),
        ("AGENT_TURNS", "2".to_string()),
        ("AGENT_CALLS", "2".to_string()),
    ];
    common::procs::browser_script(&app, "agent.mjs", &env).await;
    w.stop().await;
}
