//! With `[log] otlp_endpoint` set, the real `trellis-api --dev` exports its spans over
//! OTLP/HTTP: a collector started by the test receives, as `service.name` `trellis-api`, the
//! request spans with their request ids and the LLM call's `chat` span, under its decision,
//! with the GenAI semantic-convention attributes. Without it nothing is sent (every other test).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use prost::Message;
use serde_json::{Value, json};

use trellis::testkit as common;

const MODEL: &str = "otlp-test-model";

/// Serves `app` on a free loopback port; returns the base URL.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

fn text(v: &Option<AnyValue>) -> Option<String> {
    match v.as_ref()?.value.as_ref()? {
        Any::StringValue(s) => Some(s.clone()),
        Any::IntValue(i) => Some(i.to_string()),
        Any::DoubleValue(d) => Some(d.to_string()),
        Any::BoolValue(b) => Some(b.to_string()),
        _ => None,
    }
}

fn attrs(kv: &[KeyValue]) -> HashMap<String, String> {
    kv.iter()
        .filter_map(|a| Some((a.key.clone(), text(&a.value)?)))
        .collect()
}

struct Span {
    name: String,
    id: Vec<u8>,
    parent: Vec<u8>,
    attrs: HashMap<String, String>,
}

#[tokio::test]
async fn spans_reach_an_otlp_collector_with_genai_attributes() {
    // the collector: every export request body, as sent
    let bodies: Arc<Mutex<Vec<(String, Bytes)>>> = Arc::default();
    let b = bodies.clone();
    let collector = serve(Router::new().route(
        "/v1/traces",
        post(move |headers: axum::http::HeaderMap, body: Bytes| {
            let b = b.clone();
            async move {
                let ct = headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                b.lock().unwrap().push((ct, body));
                (
                    StatusCode::OK,
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    ))
    .await;
    // a model that refuses every request: the call is still a span
    let model = serve(Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": {"message": "no", "type": "invalid_request_error"}})),
            )
        }),
    ))
    .await;

    let model_base = format!("{model}/v1");
    let api = common::DevApi::start(
        "otlp",
        &[
            ("APP_LLM__BASE_URL", &model_base),
            ("APP_LLM__MODEL", MODEL),
            ("APP_LLM__MAX_RETRIES", "0"),
            ("APP_LOG__OTLP_ENDPOINT", &collector),
        ],
    )
    .await;
    let base = api.base.clone();

    // a description-only task: its plan decision calls the model, which refuses
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{base}/api/v1/tasks"))
        .header("x-request-id", "otlp-req-1")
        .json(&json!({"description": "plan me"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    let id = r.json::<Value>().await.unwrap()["task_id"]
        .as_str()
        .unwrap()
        .to_string();
    let start = Instant::now();
    loop {
        let v: Value = http
            .get(format!("{base}/api/v1/tasks/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if v["status"] == "failed" {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "stuck: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // a clean stop sends what is still buffered
    api.stop().await;

    let bodies = bodies.lock().unwrap().clone();
    assert!(!bodies.is_empty(), "the collector received nothing");
    let mut spans = Vec::new();
    for (ct, body) in &bodies {
        assert_eq!(ct, "application/x-protobuf");
        let req = ExportTraceServiceRequest::decode(body.as_ref()).expect("an OTLP request");
        for rs in req.resource_spans {
            let resource = attrs(&rs.resource.map(|r| r.attributes).unwrap_or_default());
            assert_eq!(
                resource.get("service.name").map(String::as_str),
                Some("trellis-api")
            );
            for ss in rs.scope_spans {
                spans.extend(ss.spans.into_iter().map(|s| Span {
                    name: s.name,
                    id: s.span_id,
                    parent: s.parent_span_id,
                    attrs: attrs(&s.attributes),
                }));
            }
        }
    }
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    let request = spans
        .iter()
        .find(|s| {
            s.name == "request" && s.attrs.get("request_id").is_some_and(|r| r == "otlp-req-1")
        })
        .unwrap_or_else(|| panic!("no request span for the submit: {names:?}"));
    assert_eq!(request.attrs["method"], "POST");
    assert_eq!(request.attrs["path"], "/api/v1/tasks");

    let chat = spans
        .iter()
        .find(|s| s.name == format!("chat {MODEL}"))
        .unwrap_or_else(|| panic!("no chat span: {names:?}"));
    assert_eq!(chat.attrs["gen_ai.operation.name"], "chat");
    assert_eq!(chat.attrs["gen_ai.request.model"], MODEL);
    assert_eq!(chat.attrs["gen_ai.provider.name"], "openai");
    assert_eq!(chat.attrs["server.address"], format!("{model}/v1"));
    assert_eq!(chat.attrs["trellis.decision"], "plan");
    let parent = spans
        .iter()
        .find(|s| s.id == chat.parent)
        .unwrap_or_else(|| panic!("the chat span's parent was not exported: {names:?}"));
    assert_eq!(parent.name, "decision");
    assert_eq!(parent.attrs["kind"], "plan");
}
