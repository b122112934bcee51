//! `/mcp-servers` (admin): MCP servers whose tools become Trellis tools (kind `mcp`, ids
//! `<server id>.<tool name>`), with their input and output schemas, so schema checks, tool
//! selection and every recovery tier work on them unchanged.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiPath;
use super::auth::Tenancy;
use super::schemas::{BadBody, BadUri, Conflict, Guarded, Missing};
use super::{ApiError, ApiJson, AppState};
use crate::secretbox::SecretBox;
use crate::store::mcp::{ListedTool, McpServerRow};

/// `POST /mcp-servers`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"id": "search", "endpoint": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${secret.search_token}"}})))]
pub(super) struct McpServerInput {
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    id: String,
    /// The server's streamable HTTP endpoint.
    #[schema(format = "uri", max_length = 2000)]
    endpoint: String,
    /// Headers of every request to it: literal, or `${secret.NAME}`.
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// An MCP server and the tools imported from it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = McpServer)]
pub(super) struct McpServerView {
    id: String,
    endpoint: String,
    headers: BTreeMap<String, String>,
    /// Ids of the tools imported from it.
    tools: Vec<String>,
    created_at: DateTime<Utc>,
    refreshed_at: DateTime<Utc>,
    /// The tenant whose tools it imports.
    tenant: String,
}

fn view(s: &McpServerRow, tools: Vec<String>) -> McpServerView {
    McpServerView {
        id: s.id.clone(),
        endpoint: crate::net::redact_url_text(&s.endpoint),
        headers: crate::secretbox::shown_headers(&s.headers.0),
        tools,
        created_at: s.created_at,
        refreshed_at: s.refreshed_at,
        tenant: s.tenant.clone(),
    }
}

/// The headers with their secrets filled in (to call the server now).
async fn filled(
    st: &AppState,
    headers: &BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, ApiError> {
    let names = crate::secretbox::referenced(headers);
    let sealed = if names.is_empty() {
        Vec::new()
    } else {
        st.store.sealed_secrets(&names).await?
    };
    let key = SecretBox::from_settings(st.settings.secrets.key.as_deref())
        .ok()
        .flatten();
    crate::secretbox::open_headers(headers, key.as_ref(), sealed)
        .map(|(sent, _)| sent)
        .map_err(ApiError::validation)
}

/// List the server's tools and store them.
async fn import(
    st: &AppState,
    tenant: &str,
    id: &str,
    endpoint: &str,
    headers: &BTreeMap<String, String>,
) -> Result<McpServerRow, ApiError> {
    super::rules::check_webhook_url(endpoint)
        .map_err(|_| ApiError::validation("endpoint must be an absolute http(s) URL"))?;
    let url = reqwest::Url::parse(endpoint)
        .map_err(|_| ApiError::validation("endpoint must be a URL"))?;
    if let Err(b) = st.outbound.check_url(&url) {
        return Err(ApiError::validation(format!(
            "endpoint refused by the outbound guard: {b}"
        )));
    }
    let sent = filled(st, headers).await?;
    let listed = crate::mcp::list_tools(st.outbound.client(), endpoint, &sent)
        .await
        .map_err(|e| ApiError::validation(format!("could not list the MCP server's tools: {e}")))?;
    let tools: Vec<ListedTool> = listed
        .into_iter()
        .filter(|t| {
            !t.name.is_empty()
                && t.name.len() <= 60
                && t.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c))
        })
        .map(|t| ListedTool {
            name: t.name,
            description: t.description,
            input_schema: t.input_schema,
            output_schema: t.output_schema,
        })
        .collect();
    for t in &tools {
        crate::domain::schema::Schema::compile(&t.input_schema).map_err(|e| {
            ApiError::validation(format!(
                "tool {:?}: its inputSchema does not compile: {e}",
                t.name
            ))
        })?;
    }
    Ok(st
        .store
        .import_mcp_server(id, endpoint, headers, &tools, tenant)
        .await?)
}

/// Register an MCP server (admin) and import its tools.
#[utoipa::path(post, path = "/mcp-servers", operation_id = "create_mcp_server", tag = "tools",
    security(("bearer" = [])), request_body = McpServerInput,
    responses(
        (status = 201, description = "imported", body = McpServerView, links(
            ("refresh" = (operation_id = "refresh_mcp_server", parameters(("id" = "$response.body#/id")))),
            ("delete" = (operation_id = "delete_mcp_server", parameters(("id" = "$response.body#/id")))),
        )),
        Conflict, BadBody, Guarded,
    ),
)]
pub(super) async fn create(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiJson(s): ApiJson<McpServerInput>,
) -> Result<Response, ApiError> {
    let ok_id = !s.id.is_empty()
        && s.id.len() <= 64
        && s.id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c));
    if !ok_id {
        return Err(ApiError::validation(
            "id must be 1-64 letters, digits, '_' or '-'",
        ));
    }
    if st.store.get_mcp_server(&s.id).await.is_ok() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            format!("MCP server {:?} already exists; refresh it", s.id),
        ));
    }
    let row = import(&st, &tenancy.home, &s.id, &s.endpoint, &s.headers).await?;
    let tools = tools_of(&st, &row.id).await?;
    Ok((StatusCode::CREATED, Json(view(&row, tools))).into_response())
}

async fn tools_of(st: &AppState, id: &str) -> Result<Vec<String>, ApiError> {
    Ok(st.store.mcp_server_tools(id).await?)
}

/// The `{id}` of an MCP server route (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct McpServerPath {
    /// An MCP server's id.
    id: String,
}

/// Import the server's tools again: new ones added, changed ones updated, gone ones removed.
#[utoipa::path(post, path = "/mcp-servers/{id}/refresh", operation_id = "refresh_mcp_server", tag = "tools",
    security(("bearer" = [])), params(McpServerPath),
    responses((status = 200, description = "refreshed", body = McpServerView), Missing, Conflict, BadBody, BadUri, Guarded),
)]
pub(super) async fn refresh(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<McpServerView>, ApiError> {
    let s = st.store.get_mcp_server(&id).await?;
    tenancy.owns(&s.tenant, format_args!("MCP server {id:?}"))?;
    let row = import(&st, &s.tenant, &s.id, &s.endpoint, &s.headers.0).await?;
    let tools = tools_of(&st, &row.id).await?;
    Ok(Json(view(&row, tools)))
}

/// Every MCP server, with the tools imported from it.
#[utoipa::path(get, path = "/mcp-servers", operation_id = "list_mcp_servers", tag = "tools",
    security(("bearer" = [])), params(super::schemas::TenantParam),
    responses((status = 200, description = "servers", body = Vec<McpServerView>), BadUri, Guarded),
)]
pub(super) async fn list(
    State(st): State<AppState>,
    tenancy: Tenancy,
) -> Result<Json<Vec<McpServerView>>, ApiError> {
    Ok(Json(
        st.store
            .list_mcp_servers(tenancy.filter())
            .await?
            .iter()
            .map(|(s, t)| view(s, t.clone()))
            .collect(),
    ))
}

/// Delete an MCP server and the tools imported from it (admin).
#[utoipa::path(delete, path = "/mcp-servers/{id}", operation_id = "delete_mcp_server", tag = "tools",
    security(("bearer" = [])), params(McpServerPath),
    responses((status = 204, description = "deleted"), Missing, BadUri, Guarded),
)]
pub(super) async fn delete(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    let s = st.store.get_mcp_server(&id).await?;
    tenancy.owns(&s.tenant, format_args!("MCP server {id:?}"))?;
    st.store.delete_mcp_server(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}
