//! MCP servers as a tool source (the official Rust SDK, `rmcp`, over streamable HTTP): list a
//! server's tools (paginated) for import, and call one. Every connection goes through the
//! outbound guard's HTTP client; a call opens a session, calls, and closes it.

use std::collections::HashMap;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value};

use crate::domain::model::ToolFailure;
use crate::tools::ToolOutput;

/// The `params._meta` key a `tools/call` carries the call's idempotency key under (the same
/// key an HTTP tool gets as `Idempotency-Key`): MCP defines no field for it, and `_meta` keys
/// take a prefix of their own.
pub const IDEMPOTENCY_META: &str = "dev.trellis/idempotency-key";

/// A tool an MCP server lists.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
}

fn transport(
    http: reqwest::Client,
    endpoint: &str,
    headers: &[(String, String)],
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let mut custom = HashMap::new();
    for (k, v) in headers {
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("bad header name {k:?}"))?;
        let value = reqwest::header::HeaderValue::from_str(v)
            .map_err(|_| format!("bad value of header {k:?}"))?;
        custom.insert(name, value);
    }
    let config =
        StreamableHttpClientTransportConfig::with_uri(endpoint.to_string()).custom_headers(custom);
    Ok(StreamableHttpClientTransport::with_client(http, config))
}

/// Every tool the server at `endpoint` lists (all pages).
pub async fn list_tools(
    http: reqwest::Client,
    endpoint: &str,
    headers: &[(String, String)],
) -> Result<Vec<McpTool>, String> {
    let client = ()
        .serve(transport(http, endpoint, headers)?)
        .await
        .map_err(|e| format!("could not open an MCP session with {endpoint}: {e}"))?;
    let listed = client.list_all_tools().await;
    let _ = client.cancel().await;
    let tools = listed.map_err(|e| format!("tools/list failed: {e}"))?;
    Ok(tools
        .into_iter()
        .map(|t| McpTool {
            name: t.name.to_string(),
            description: t.description.map(|d| d.to_string()).unwrap_or_default(),
            input_schema: Value::Object((*t.input_schema).clone()),
            output_schema: t.output_schema.map(|s| Value::Object((*s).clone())),
        })
        .collect())
}

/// One `tools/call`: the structured result when the server gives one, else the content (the
/// text parsed as JSON when it is JSON). `isError`, JSON-RPC errors and transport failures map
/// to the failure categories recovery knows.
pub async fn call(
    http: reqwest::Client,
    endpoint: &str,
    headers: &[(String, String)],
    name: &str,
    arguments: &Value,
    idempotency_key: Option<&str>,
) -> Result<ToolOutput, ToolFailure> {
    let transient = |m: String| ToolFailure::new("tool_error", m, true);
    let transport =
        transport(http, endpoint, headers).map_err(|m| ToolFailure::new("tool_error", m, false))?;
    let client = ()
        .serve(transport)
        .await
        .map_err(|e| transient(format!("could not open an MCP session: {e}")))?;
    let mut params = CallToolRequestParams::new(name.to_string());
    if let Value::Object(m) = arguments {
        params = params.with_arguments(m.clone());
    }
    if let Some(key) = idempotency_key {
        // MCP has no idempotency field: `_meta`, under a prefix of our own (the spec reserves
        // `_meta` for such metadata)
        let mut meta = serde_json::Map::new();
        meta.insert(IDEMPOTENCY_META.into(), Value::String(key.into()));
        params.meta = Some(meta.into());
    }
    let answer = client.call_tool(params).await;
    let _ = client.cancel().await;
    let result = match answer {
        Ok(r) => r,
        Err(rmcp::ServiceError::McpError(e)) => {
            // -32602: invalid params (the arguments broke the tool's schema)
            let category = if e.code.0 == -32602 {
                "parameter_error"
            } else {
                "tool_error"
            };
            return Err(ToolFailure::new(
                category,
                format!("MCP error {}: {}", e.code.0, e.message),
                false,
            ));
        }
        Err(e) => return Err(transient(format!("tools/call failed: {e}"))),
    };
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if result.is_error == Some(true) {
        let message = if text.is_empty() {
            "the MCP tool reported an error".to_string()
        } else {
            text.join("\n")
        };
        // the tool said it failed: transient for recovery (a retry, or an alternative tool),
        // as an HTTP tool's 5xx is
        return Err(ToolFailure::new("tool_error", message, true));
    }
    let output = match result.structured_content {
        Some(v) => v,
        None => match text.as_slice() {
            [one] => serde_json::from_str(one).unwrap_or_else(|_| Value::String(one.clone())),
            _ => Value::Array(text.into_iter().map(Value::String).collect()),
        },
    };
    Ok(ToolOutput {
        output,
        output_params: Map::new(),
        hold_ms: None,
        pace_ms: None,
        cost: None,
    })
}
