//! Trellis as an MCP server at `/mcp` (streamable HTTP, the official Rust SDK `rmcp`), behind
//! the same API keys: any live key may open a session and list tools; each tool call is made
//! as the REST call it stands for, with the caller's key, through the same router — so its
//! validation, its role check and its JSON are the REST API's own. A refused call is an
//! `isError` result the assistant can read.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tower::ServiceExt;

/// The tools every key sees (and the ones per template, `template.<id>`).
fn fixed_tools() -> Vec<Tool> {
    let obj = |v: Value| match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    };
    let task_id = json!({"type": "object", "properties": {"task_id": {"type": "string", "format": "uuid"}}, "required": ["task_id"]});
    vec![
        Tool::new(
            "submit_task",
            "Submit a task: a plan ({\"steps\": [...]}), a template with its input, or (with a planning brain) a description. Returns {task_id, status}.",
            obj(json!({"type": "object", "properties": {
                "description": {"type": "string"}, "plan": {"type": "object"},
                "template": {"type": "string"}, "input": {"type": "object"},
                "metadata": {"type": "object"}, "priority": {"type": "integer"}}})),
        ),
        Tool::new(
            "get_task",
            "A task's status, counters and step counts.",
            obj(task_id.clone()),
        ),
        Tool::new(
            "wait_task",
            "Wait (at most timeout_secs, default 30, at most 60) until the task rests (succeeded, failed, cancelled, needs_intervention); its status.",
            obj(
                json!({"type": "object", "properties": {"task_id": {"type": "string", "format": "uuid"},
                "timeout_secs": {"type": "number", "minimum": 0, "maximum": 60}}, "required": ["task_id"]}),
            ),
        ),
        Tool::new(
            "get_result",
            "A task's result: status, outputs by step, error.",
            obj(task_id.clone()),
        ),
        Tool::new(
            "list_tasks",
            "Tasks, newest first (optionally by status).",
            obj(
                json!({"type": "object", "properties": {"status": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 500}}}),
            ),
        ),
        Tool::new(
            "cancel_task",
            "Cancel a task unless it has ended.",
            obj(task_id.clone()),
        ),
        Tool::new(
            "resume_task",
            "Resume a task from needs_intervention (optionally with a plan or step_overrides).",
            obj(
                json!({"type": "object", "properties": {"task_id": {"type": "string", "format": "uuid"},
                "plan": {"type": "object"}, "step_overrides": {"type": "object"}}, "required": ["task_id"]}),
            ),
        ),
        Tool::new(
            "approve_wait",
            "Approve a step waiting for a person (optionally with edited parameters).",
            obj(
                json!({"type": "object", "properties": {"wait_id": {"type": "string", "format": "uuid"},
                "parameters": {"type": "object"}, "comment": {"type": "string"}}, "required": ["wait_id"]}),
            ),
        ),
        Tool::new(
            "reject_wait",
            "Reject a step waiting for a person.",
            obj(
                json!({"type": "object", "properties": {"wait_id": {"type": "string", "format": "uuid"},
                "comment": {"type": "string"}}, "required": ["wait_id"]}),
            ),
        ),
    ]
}

/// The MCP service of one session: the REST router it calls through (with the caller's key,
/// so each call sees what the key sees).
#[derive(Clone)]
pub(super) struct TrellisMcp {
    pub(super) rest: Router,
}

impl TrellisMcp {
    /// One REST call with the caller's `Authorization` header: (status, JSON body).
    async fn rest(
        &self,
        auth: Option<&str>,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = axum::http::Request::builder().method(method).uri(path);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let req = match body {
            Some(b) => req
                .header("content-type", "application/json")
                .body(Body::from(b.to_string())),
            None => req.body(Body::empty()),
        };
        let Ok(req) = req else {
            return (
                400,
                json!({"error": {"code": "bad_request", "message": "bad request"}}),
            );
        };
        match self.rest.clone().oneshot(req).await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let bytes = axum::body::to_bytes(resp.into_body(), 16 << 20)
                    .await
                    .unwrap_or_default();
                (
                    status,
                    serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                )
            }
            Err(e) => match e {},
        }
    }

    /// Poll the task until it rests or `timeout_secs` (≤ 60) pass; its status view.
    async fn wait(&self, auth: Option<&str>, id: &str, args: &Map<String, Value>) -> (u16, Value) {
        let secs = args
            .get("timeout_secs")
            .and_then(Value::as_f64)
            .unwrap_or(30.0)
            .clamp(0.0, 60.0);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
        loop {
            let (s, v) = self
                .rest(auth, "GET", &format!("/api/v1/tasks/{id}"), None)
                .await;
            let rests = matches!(
                v["status"].as_str(),
                Some("succeeded" | "failed" | "cancelled" | "needs_intervention")
            );
            if s != 200 || rests || std::time::Instant::now() >= deadline {
                return (s, v);
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    async fn dispatch(
        &self,
        auth: Option<&str>,
        name: &str,
        args: Map<String, Value>,
    ) -> (u16, Value) {
        if name == "wait_task" {
            let id = args
                .get("task_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            return self.wait(auth, &id, &args).await;
        }
        match rest_call(name, args) {
            Some((method, path, body)) => self.rest(auth, method, &path, body).await,
            None => (
                404,
                json!({"error": {"code": "not_found", "message": format!("no tool {name:?}")}}),
            ),
        }
    }
}

/// The REST call a tool of this server stands for: (method, path, body); None for a tool it
/// does not have (`wait_task` is not one call).
fn rest_call(
    name: &str,
    args: Map<String, Value>,
) -> Option<(&'static str, String, Option<Value>)> {
    let arg = |k: &str| {
        args.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let id = arg("task_id");
    let without = |k: &str| {
        let mut body = args.clone();
        body.remove(k);
        Some(Value::Object(body))
    };
    Some(match name {
        "submit_task" => ("POST", "/api/v1/tasks".into(), Some(Value::Object(args))),
        "get_task" => ("GET", format!("/api/v1/tasks/{id}"), None),
        "get_result" => ("GET", format!("/api/v1/tasks/{id}/result"), None),
        "cancel_task" => (
            "POST",
            format!("/api/v1/tasks/{id}/cancel"),
            Some(json!({})),
        ),
        "resume_task" => (
            "POST",
            format!("/api/v1/tasks/{id}/resume"),
            without("task_id"),
        ),
        "list_tasks" => {
            let mut q = format!(
                "limit={}",
                args.get("limit").and_then(Value::as_i64).unwrap_or(50)
            );
            if let Some(s) = args.get("status").and_then(Value::as_str) {
                q.push_str(&format!("&status={s}"));
            }
            ("GET", format!("/api/v1/tasks?{q}"), None)
        }
        "approve_wait" | "reject_wait" => {
            let what = if name == "approve_wait" {
                "approve"
            } else {
                "reject"
            };
            let path = format!("/api/v1/waits/{}/{what}", arg("wait_id"));
            ("POST", path, without("wait_id"))
        }
        other => {
            let t = other.strip_prefix("template.")?;
            let body = json!({"template": t, "input": Value::Object(args)});
            ("POST", "/api/v1/tasks".into(), Some(body))
        }
    })
}

fn auth_of(ctx: &RequestContext<RoleServer>) -> Option<String> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.headers.get("authorization"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

impl ServerHandler for TrellisMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = fixed_tools();
        // the templates the caller's key sees (its tenant's), as the REST route lists them
        let (status, templates) = self
            .rest(
                auth_of(&context).as_deref(),
                "GET",
                "/api/v1/templates",
                None,
            )
            .await;
        if status != 200 {
            return Err(ErrorData::internal_error(
                format!("listing the templates answered {status}"),
                None,
            ));
        }
        for t in templates.as_array().into_iter().flatten() {
            let id = t["id"].as_str().unwrap_or_default();
            let schema = match &t["input_schema"] {
                Value::Object(m) if !m.is_empty() => m.clone(),
                _ => json!({"type": "object"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            };
            let description = match t["description"].as_str().unwrap_or_default() {
                "" => format!("Submit a task from template {id}"),
                d => format!("{d} (template {id})"),
            };
            tools.push(Tool::new(
                format!("template.{id}"),
                description,
                Arc::new(schema),
            ));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let auth = auth_of(&context);
        let args = request.arguments.unwrap_or_default();
        let (status, body) = self.dispatch(auth.as_deref(), &request.name, args).await;
        let text = body.to_string();
        let result = if (200..300).contains(&status) {
            let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
            r.structured_content = Some(if body.is_object() {
                body
            } else {
                json!({"result": body})
            });
            r
        } else {
            CallToolResult::error(vec![ContentBlock::text(format!("HTTP {status}: {text}"))])
        };
        Ok(CallToolResponse::Complete(result))
    }
}
