//! The OpenAI-compatible client against a real HTTP server speaking the chat-completions wire
//! format with scripted answers.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{Value, json};
use trellis::brain::llm::{LlmClient, LlmConfig, LlmError, Message};

const KEY: &str = "sk-test-key-6b1f";

/// (status, body, delay) answered in order; the last one repeats.
type Script = Arc<Mutex<VecDeque<(u16, Value, Duration)>>>;

#[derive(Clone)]
struct Fake {
    script: Script,
    requests: Arc<Mutex<Vec<(Value, String)>>>,
}

fn content(c: &str) -> Value {
    json!({"choices": [{"message": {"role": "assistant", "content": c}}],
           "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

async fn start(script: Vec<(u16, Value, Duration)>) -> (Fake, String) {
    async fn handle(
        State(f): State<Fake>,
        headers: HeaderMap,
        axum::Json(body): axum::Json<Value>,
    ) -> (StatusCode, HeaderMap, axum::Json<Value>) {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        f.requests.lock().unwrap().push((body, auth.clone()));
        let (status, mut answer, delay) = {
            let mut s = f.script.lock().unwrap();
            if s.len() > 1 {
                s.pop_front().unwrap()
            } else {
                s.front().cloned().unwrap()
            }
        };
        tokio::time::sleep(delay).await;
        if answer == json!("echo-auth") {
            answer = json!({"error": {"message": format!("bad key {auth}")}});
        }
        // {"retry_after": "…"}: that header, with an empty body
        let mut out = HeaderMap::new();
        if let Some(ra) = answer.get("retry_after").and_then(Value::as_str) {
            out.insert("retry-after", ra.parse().unwrap());
            answer = json!({});
        }
        (
            StatusCode::from_u16(status).unwrap(),
            out,
            axum::Json(answer),
        )
    }
    let fake = Fake {
        script: Arc::new(Mutex::new(script.into())),
        requests: Arc::default(),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(handle))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (fake, url)
}

fn client(url: &str, timeout_ms: u64, retries: u32) -> LlmClient {
    LlmClient::new(LlmConfig {
        base_url: url.into(),
        api_key: Some(KEY.into()),
        model: "test-model".into(),
        temperature: 0.1,
        top_p: None,
        fallback: None,
        max_tokens: Some(512),
        seed: Some(7),
        timeout: Duration::from_millis(timeout_ms),
        max_retries: retries,
        backoff_base: Duration::from_millis(20),
    })
}

fn schema() -> Value {
    json!({"type": "object", "required": ["selected_tools", "reasoning"], "properties": {
        "selected_tools": {"type": "array", "items": {"type": "string"}},
        "reasoning": {"type": "string"}}})
}

fn ask() -> Vec<Message> {
    vec![
        Message::system("You select tools."),
        Message::user("Task: say hi. Tools: echo, sleep."),
    ]
}

const GOOD: &str = r#"{"selected_tools": ["echo"], "reasoning": "it says things"}"#;

#[tokio::test]
async fn sends_the_wire_format_and_returns_a_validated_answer() {
    let (fake, url) = start(vec![(200, content(GOOD), Duration::ZERO)]).await;
    let c = client(&url, 2000, 2);
    let a = c
        .chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap();
    assert_eq!(a.value["selected_tools"], json!(["echo"]));
    assert_eq!(a.raw, GOOD);
    assert_eq!((a.usage.total_tokens, a.usage.requests), (15, 1));
    let reqs = fake.requests.lock().unwrap();
    let (body, auth) = &reqs[0];
    assert_eq!(auth, &format!("Bearer {KEY}"));
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["temperature"], 0.1);
    assert_eq!(
        (body["max_tokens"].clone(), body["seed"].clone()),
        (json!(512), json!(7))
    );
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(
        body["response_format"]["json_schema"]["name"],
        "tool_selection"
    );
    assert_eq!(body["response_format"]["json_schema"]["schema"], schema());
    assert_eq!(body["messages"][0]["role"], "system");
}

#[tokio::test]
async fn falls_back_to_json_object_when_json_schema_is_rejected() {
    let rejected =
        json!({"error": {"message": "response_format.type json_schema is not supported"}});
    let (fake, url) = start(vec![
        (400, rejected, Duration::ZERO),
        (200, content(GOOD), Duration::ZERO),
    ])
    .await;
    let c = client(&url, 2000, 0);
    c.chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap();
    c.chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap();
    let formats: Vec<Value> = fake
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(b, _)| b["response_format"]["type"].clone())
        .collect();
    assert_eq!(
        formats,
        [
            json!("json_schema"),
            json!("json_object"),
            json!("json_object")
        ],
        "remembered"
    );
    // without json_schema the schema travels in a system message
    let reqs = fake.requests.lock().unwrap();
    let said = |i: usize| reqs[i].0["messages"].to_string();
    assert!(!said(0).contains("must be one JSON object matching this JSON schema"));
    assert!(said(1).contains("(tool_selection) must be one JSON object matching this JSON schema"));
    assert!(said(1).contains("selected_tools"));
}

#[tokio::test]
async fn an_invalid_answer_is_re_asked_once_then_given_up() {
    let (fake, url) = start(vec![
        (200, content("Sure! echo is best."), Duration::ZERO),
        (200, content(GOOD), Duration::ZERO),
    ])
    .await;
    let c = client(&url, 2000, 0);
    let a = c
        .chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap();
    assert_eq!(a.usage.requests, 2);
    {
        let reqs = fake.requests.lock().unwrap();
        let msgs = reqs[1].0["messages"].as_array().unwrap().clone();
        assert_eq!(msgs[2]["role"], "assistant");
        assert_eq!(msgs[2]["content"], "Sure! echo is best.");
        assert!(
            msgs[3]["content"]
                .as_str()
                .unwrap()
                .contains("not valid for the tool_selection schema")
        );
    }
    // wrong shape twice: exactly one re-ask, then an error (the caller falls back)
    let (fake, url) = start(vec![(
        200,
        content(r#"{"selected_tools": "echo"}"#),
        Duration::ZERO,
    )])
    .await;
    let e = client(&url, 2000, 0)
        .chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap_err();
    assert!(matches!(e, LlmError::Invalid { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("at /selected_tools: \"echo\" is not of type \"array\""),
        "{e}"
    );
    assert_eq!(fake.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn rate_limits_server_errors_and_timeouts_are_retried_then_surface() {
    let (fake, url) = start(vec![
        (503, json!({}), Duration::ZERO),
        (429, json!({}), Duration::ZERO),
        (200, content(GOOD), Duration::ZERO),
    ])
    .await;
    let a = client(&url, 2000, 3)
        .chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap();
    assert_eq!(
        (a.usage.requests, fake.requests.lock().unwrap().len()),
        (3, 3)
    );

    let (fake, url) = start(vec![(500, json!({}), Duration::ZERO)]).await;
    let e = client(&url, 2000, 2)
        .chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap_err();
    assert!(
        matches!(e, LlmError::Unavailable { attempts: 3, .. }),
        "{e}"
    );
    assert_eq!(fake.requests.lock().unwrap().len(), 3);

    // a hanging model: bounded by timeout × attempts + backoff, never a hang
    let (fake, url) = start(vec![(200, content(GOOD), Duration::from_secs(5))]).await;
    let started = Instant::now();
    let e = client(&url, 150, 1)
        .chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap_err();
    assert!(
        matches!(e, LlmError::Unavailable { attempts: 2, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("timed out"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(fake.requests.lock().unwrap().len(), 2);

    // a client error other than a json_schema rejection is not retried
    let (fake, url) = start(vec![(
        401,
        json!({"error": {"message": "no"}}),
        Duration::ZERO,
    )])
    .await;
    let e = client(&url, 2000, 3)
        .chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap_err();
    assert!(matches!(e, LlmError::Rejected { .. }), "{e}");
    assert_eq!(fake.requests.lock().unwrap().len(), 1);
}

/// A 429 with `Retry-After` (LLM APIs send them): the next request waits that long, not just
/// the backoff.
#[tokio::test]
async fn a_retry_after_is_waited_out() {
    let (fake, url) = start(vec![
        (429, json!({"retry_after": "1"}), Duration::ZERO),
        (200, content(GOOD), Duration::ZERO),
    ])
    .await;
    let started = Instant::now();
    let a = client(&url, 2000, 3)
        .chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap();
    assert_eq!(a.usage.requests, 2);
    assert_eq!(fake.requests.lock().unwrap().len(), 2);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the backoff is 20 ms: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn the_api_key_never_appears_in_errors() {
    let (_fake, url) = start(vec![(500, json!("echo-auth"), Duration::ZERO)]).await;
    let e = client(&url, 2000, 1)
        .chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap_err();
    let text = format!("{e} {e:?}");
    assert!(
        text.contains("[redacted]"),
        "the server echoed the key and it was redacted: {text}"
    );
    assert!(!text.contains(KEY), "{text}");
}

/// `[llm] fallback_base_url`: when the primary endpoint fails after its retries, the same
/// request goes to the fallback (its model, its key); `top_p` is sent when set. Neither key
/// appears in an error.
#[tokio::test]
async fn a_failing_primary_hands_the_request_to_the_fallback() {
    let (primary, primary_url) = start(vec![(503, json!({"error": "down"}), Duration::ZERO)]).await;
    let (fallback, fallback_url) = start(vec![(
        200,
        content(r#"{"selected_tools": ["echo"], "reasoning": "from the fallback"}"#),
        Duration::ZERO,
    )])
    .await;
    let mut cfg = client(&primary_url, 2000, 1).config().clone();
    cfg.top_p = Some(0.9);
    cfg.fallback = Some(trellis::brain::llm::FallbackEndpoint {
        base_url: fallback_url.clone(),
        api_key: Some("sk-fallback-key-91c2".into()),
        model: "fallback-model".into(),
    });
    let a = LlmClient::new(cfg.clone())
        .chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap();
    assert_eq!(a.value["reasoning"], "from the fallback");
    assert!(a.usage.by_fallback, "the usage says who answered");
    assert_eq!(primary.requests.lock().unwrap().len(), 2, "1 try + 1 retry");
    let sent = fallback.requests.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0["model"], "fallback-model");
    assert_eq!(sent[0].0["top_p"], 0.9);
    assert_eq!(sent[0].1, "Bearer sk-fallback-key-91c2");
    assert_eq!(primary.requests.lock().unwrap()[0].0["top_p"], 0.9);

    // both down: the error names neither key
    let (_, down_url) = start(vec![(401, json!("echo-auth"), Duration::ZERO)]).await;
    cfg.fallback.as_mut().unwrap().base_url = down_url;
    let e = LlmClient::new(cfg)
        .chat_json("tool_selection", &schema(), ask())
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(
        !text.contains(KEY) && !text.contains("sk-fallback-key-91c2"),
        "{text}"
    );
    assert!(text.contains("[redacted]"), "{text}");
}

/// An agent's turn: the messages go as given (tool calls and tool results included), with the
/// tools offered and no response format; the model's message comes back whole, tool calls and
/// all; a 503 is retried like any request, and a 400 is a rejection.
#[tokio::test]
async fn an_agent_turn_offers_tools_and_returns_the_models_calls() {
    let calls = json!({"choices": [{"message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "search", "arguments": "{\"q\": \"x\"}"}}]}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 8, "total_tokens": 38}});
    let (fake, url) = start(vec![
        (503, json!({"error": "busy"}), Duration::ZERO),
        (200, calls, Duration::ZERO),
    ])
    .await;
    let c = client(&url, 2000, 2);
    let messages = vec![
        json!({"role": "system", "content": "find it"}),
        json!({"role": "user", "content": "x"}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_0",
            "type": "function", "function": {"name": "search", "arguments": "{}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_0", "content": "nothing"}),
    ];
    let tools = json!([{"type": "function", "function": {"name": "search",
        "description": "finds", "parameters": {"type": "object"}}}]);
    let (usage, answer) = c.chat_tools(&messages, &tools, false).await;
    let m = answer.unwrap();
    assert_eq!(m["tool_calls"][0]["id"], "call_1");
    assert_eq!(m["tool_calls"][0]["function"]["name"], "search");
    assert_eq!((usage.total_tokens, usage.requests), (38, 2));
    let reqs = fake.requests.lock().unwrap().clone();
    assert_eq!(reqs.len(), 2, "the 503 was retried");
    let body = &reqs[1].0;
    assert_eq!(body["messages"], json!(messages));
    assert_eq!(body["tools"], tools);
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["model"], "test-model");
    assert!(body.get("response_format").is_none(), "{body}");

    let (_, bad_url) = start(vec![(
        400,
        json!({"error": "no tools here"}),
        Duration::ZERO,
    )])
    .await;
    let (_, answer) = client(&bad_url, 2000, 2)
        .chat_tools(&messages, &tools, true)
        .await;
    assert!(
        matches!(answer, Err(LlmError::Rejected { status: 400, .. })),
        "{answer:?}"
    );
}
