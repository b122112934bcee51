//! Tools: the registry record, the built-ins (`echo`, `sleep`, `fail`, `flaky`, `http_request`)
//! and HTTP tools per CONTRACT.md "HTTP tools". Running a tool never touches the database.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::domain::model::ToolFailure;
pub use crate::domain::tool::ToolDef;

pub const BUILTIN_TOOLS: [&str; 5] = ["echo", "sleep", "fail", "flaky", "http_request"];

/// One call of a tool.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    pub task_id: Uuid,
    pub step_key: &'a str,
    pub attempt: i32,
    pub parameters: &'a Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub output: Value,
    /// Values to copy into the task's runtime metadata.
    pub output_params: Map<String, Value>,
}

/// Runs tools; cheap to clone (shares one HTTP connection pool).
#[derive(Debug, Clone)]
pub struct ToolRunner {
    http: reqwest::Client,
}

impl Default for ToolRunner {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolRunner {
    pub fn new() -> Self {
        let http = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .expect("reqwest client");
        Self { http }
    }

    /// Run `tool` within its timeout.
    pub async fn run(
        &self,
        tool: &ToolDef,
        inv: &Invocation<'_>,
    ) -> Result<ToolOutput, ToolFailure> {
        let timeout = Duration::from_millis(tool.timeout_ms.max(1) as u64);
        let call = async {
            match tool.kind.as_str() {
                "http" => self.run_http(tool, inv).await,
                _ => self.run_builtin(tool, inv).await,
            }
        };
        let mut result = match tokio::time::timeout(timeout, call).await {
            Ok(r) => r,
            Err(_) => Err(ToolFailure::new(
                "tool_error",
                format!(
                    "tool {} timed out after {} ms",
                    tool.id,
                    timeout.as_millis()
                ),
                true,
            )),
        };
        if let Ok(out) = &mut result {
            for name in &tool.output_params {
                if let Some(v) = out.output.get(name) {
                    out.output_params
                        .entry(name.clone())
                        .or_insert_with(|| v.clone());
                }
            }
        }
        result
    }

    async fn run_builtin(
        &self,
        tool: &ToolDef,
        inv: &Invocation<'_>,
    ) -> Result<ToolOutput, ToolFailure> {
        let p = inv.parameters;
        let plain = |output: Value| {
            Ok(ToolOutput {
                output,
                output_params: Map::new(),
            })
        };
        match tool.id.as_str() {
            "echo" => plain(p.clone()),
            "sleep" => {
                let ms = p.get("ms").and_then(Value::as_u64).ok_or_else(|| {
                    ToolFailure::new("parameter_error", "sleep needs {\"ms\": n}", false)
                })?;
                tokio::time::sleep(Duration::from_millis(ms)).await;
                plain(json!({ "slept_ms": ms }))
            }
            "fail" => Err(failure_from_params(p)),
            "flaky" => {
                let fail_times = p.get("fail_times").and_then(Value::as_i64).unwrap_or(1);
                if i64::from(inv.attempt) <= fail_times {
                    Err(ToolFailure::new(
                        "tool_error",
                        format!("flaky failure {} of {fail_times}", inv.attempt),
                        true,
                    ))
                } else {
                    plain(p.clone())
                }
            }
            "http_request" => self.http_request(p).await,
            other => Err(ToolFailure::new(
                "tool_error",
                format!("tool {other:?} has no built-in implementation"),
                false,
            )),
        }
    }

    async fn http_request(&self, p: &Value) -> Result<ToolOutput, ToolFailure> {
        let url = p.get("url").and_then(Value::as_str).ok_or_else(|| {
            ToolFailure::new("parameter_error", "http_request needs a \"url\"", false)
        })?;
        let method = p.get("method").and_then(Value::as_str).unwrap_or("GET");
        let method =
            reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes()).map_err(|_| {
                ToolFailure::new("parameter_error", format!("bad method {method:?}"), false)
            })?;
        let mut req = self.http.request(method, url);
        if let Some(h) = p.get("headers").and_then(Value::as_object) {
            for (k, v) in h {
                if let Some(v) = v.as_str() {
                    req = req.header(k, v);
                }
            }
        }
        if let Some(body) = p.get("body") {
            req = req.json(body);
        }
        let resp = req.send().await.map_err(transport_failure)?;
        let status = resp.status();
        let text = resp.text().await.map_err(transport_failure)?;
        let body = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
        if status.is_server_error() {
            let mut f = ToolFailure::new("tool_error", format!("HTTP {status}"), true);
            f.http_status = Some(status.as_u16());
            return Err(f);
        }
        Ok(ToolOutput {
            output: json!({"status": status.as_u16(), "body": body}),
            output_params: Map::new(),
        })
    }

    async fn run_http(
        &self,
        tool: &ToolDef,
        inv: &Invocation<'_>,
    ) -> Result<ToolOutput, ToolFailure> {
        let endpoint = tool.endpoint.as_deref().ok_or_else(|| {
            ToolFailure::new(
                "tool_error",
                format!("tool {} has no endpoint", tool.id),
                false,
            )
        })?;
        let body = json!({
            "tool": tool.id,
            "parameters": inv.parameters,
            "task_id": inv.task_id,
            "step_id": inv.step_key,
            "attempt": inv.attempt,
        });
        let resp = self
            .http
            .post(endpoint)
            .header(
                "Idempotency-Key",
                format!("{}:{}:{}", inv.task_id, inv.step_key, inv.attempt),
            )
            .json(&body)
            .send()
            .await
            .map_err(transport_failure)?;
        let status = resp.status();
        let text = resp.text().await.map_err(transport_failure)?;
        let parsed = serde_json::from_str::<Value>(&text).ok();
        if status.is_success() {
            let body = parsed.unwrap_or(Value::String(text));
            let output_params = body
                .get("output_params")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let output = match body.get("output") {
                Some(o) if body.is_object() => o.clone(),
                _ => body,
            };
            return Ok(ToolOutput {
                output,
                output_params,
            });
        }
        let declared = parsed.as_ref().and_then(|b| b.get("error"));
        let mut failure = match declared {
            Some(e) if e.is_object() => {
                let mut f = failure_from_params(e);
                if e.get("retryable").is_none() {
                    f.retryable = status.is_server_error();
                }
                if e.get("category").is_none() {
                    f.category = "tool_error".into();
                }
                if e.get("message").is_none() {
                    f.message = format!("HTTP {status}");
                }
                f
            }
            _ => ToolFailure::new(
                "tool_error",
                format!("HTTP {status}: {}", truncate(&text, 200)),
                status.is_server_error(),
            ),
        };
        // Contract: 5xx are retryable tool errors whatever the body says.
        if status.is_server_error() {
            failure.retryable = true;
        }
        failure.http_status = Some(status.as_u16());
        Err(failure)
    }
}

fn transport_failure(e: reqwest::Error) -> ToolFailure {
    let what = crate::net::transport_error_kind(&e);
    ToolFailure::new("tool_error", format!("{what}: {e}"), true)
}

/// The `fail` built-in's parameters and an HTTP tool's `error` object share one shape.
fn failure_from_params(p: &Value) -> ToolFailure {
    let hints: BTreeMap<String, Value> = p
        .get("hints")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    ToolFailure {
        message: p
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("failed on purpose")
            .to_string(),
        category: p
            .get("category")
            .and_then(Value::as_str)
            .unwrap_or("tool_error")
            .to_string(),
        retryable: p.get("retryable").and_then(Value::as_bool).unwrap_or(false),
        hints,
        http_status: None,
    }
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin(id: &str) -> ToolDef {
        ToolDef {
            id: id.into(),
            name: id.into(),
            description: String::new(),
            kind: "builtin".into(),
            endpoint: None,
            timeout_ms: 1000,
            input_schema: json!({}),
            output_params: vec![],
            alternatives: vec![],
            tags: vec![],
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        }
    }

    fn inv(p: &Value, attempt: i32) -> Invocation<'_> {
        Invocation {
            task_id: Uuid::nil(),
            step_key: "s",
            attempt,
            parameters: p,
        }
    }

    #[tokio::test]
    async fn builtins_behave_as_the_contract_says() {
        let r = ToolRunner::new();
        let p = json!({"a": 1});
        assert_eq!(
            r.run(&builtin("echo"), &inv(&p, 1)).await.unwrap().output,
            p
        );

        let p = json!({"ms": 5});
        assert_eq!(
            r.run(&builtin("sleep"), &inv(&p, 1)).await.unwrap().output,
            json!({"slept_ms": 5})
        );
        let p = json!({"ms": 5000});
        let f = r.run(&builtin("sleep"), &inv(&p, 1)).await.unwrap_err();
        assert!(f.retryable && f.message.contains("timed out"), "{f:?}");

        let p = json!({"message": "m", "category": "external_error", "retryable": false, "hints": {"x": 2}});
        let f = r.run(&builtin("fail"), &inv(&p, 1)).await.unwrap_err();
        assert_eq!(
            (f.message.as_str(), f.category.as_str(), f.retryable),
            ("m", "external_error", false)
        );
        assert_eq!(f.hints.get("x"), Some(&json!(2)));

        let p = json!({"fail_times": 2});
        assert!(r.run(&builtin("flaky"), &inv(&p, 1)).await.is_err());
        assert!(
            r.run(&builtin("flaky"), &inv(&p, 2))
                .await
                .unwrap_err()
                .retryable
        );
        assert_eq!(
            r.run(&builtin("flaky"), &inv(&p, 3)).await.unwrap().output,
            p
        );
    }

    #[tokio::test]
    async fn declared_output_params_are_copied_from_the_output() {
        let r = ToolRunner::new();
        let mut t = builtin("echo");
        t.output_params = vec!["token".into(), "absent".into()];
        let p = json!({"token": "t1", "other": 2});
        let out = r.run(&t, &inv(&p, 1)).await.unwrap();
        assert_eq!(out.output_params.get("token"), Some(&json!("t1")));
        assert!(!out.output_params.contains_key("absent"));
    }
}
