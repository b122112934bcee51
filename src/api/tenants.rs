//! `/tenants` (admin): a tenant's own caps over the `[tenants]` defaults: its tasks with running
//! steps, and its running steps, at once across every worker. The claim keeps them exactly.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiPath;
use super::schemas::{BadBody, BadUri, Guarded, Missing};
use super::{ApiError, ApiJson, AppState};
use crate::store::tenants::TenantCaps;

/// One tenant's own caps.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Tenant)]
pub(super) struct TenantView {
    tenant: String,
    /// Its tasks with running steps at once (none: `[tenants] max_running_tasks`).
    max_running_tasks: Option<i32>,
    /// Its running steps at once (none: `[tenants] max_running_steps`).
    max_running_steps: Option<i32>,
    updated_at: chrono::DateTime<chrono::Utc>,
}

impl From<TenantCaps> for TenantView {
    fn from(t: TenantCaps) -> Self {
        Self {
            tenant: t.tenant,
            max_running_tasks: t.max_running_tasks,
            max_running_steps: t.max_running_steps,
            updated_at: t.updated_at,
        }
    }
}

/// `PUT /tenants/{tenant}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"max_running_tasks": 10, "max_running_steps": 50})))]
pub(super) struct TenantInput {
    /// Its tasks with running steps at once, across every worker (absent: the default).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000000)]
    max_running_tasks: Option<i32>,
    /// Its running steps at once, across every worker (absent: the default).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000000)]
    max_running_steps: Option<i32>,
}

/// The `{tenant}` of a tenant route (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct TenantPath {
    /// A tenant's name.
    #[param(pattern = "^[A-Za-z0-9_.-]{1,64}$")]
    tenant: String,
}

fn check(tenant: &str) -> Result<(), ApiError> {
    crate::domain::tenant::check(tenant).map_err(ApiError::validation)
}

/// Set a tenant's caps (admin; created or replaced). Neither given: its own caps go, and the
/// defaults apply (204).
#[utoipa::path(put, path = "/tenants/{tenant}", operation_id = "put_tenant", tag = "fairness",
    security(("bearer" = [])), params(TenantPath), request_body = TenantInput,
    responses(
        (status = 200, description = "stored", body = TenantView),
        (status = 204, description = "no caps of its own: the defaults apply"),
        BadBody, BadUri, Guarded,
    ),
)]
pub(super) async fn put(
    State(st): State<AppState>,
    ApiPath(tenant): ApiPath<String>,
    ApiJson(t): ApiJson<TenantInput>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    check(&tenant)?;
    for (name, v) in [
        ("max_running_tasks", t.max_running_tasks),
        ("max_running_steps", t.max_running_steps),
    ] {
        if v.is_some_and(|n| !(1..=1_000_000).contains(&n)) {
            return Err(ApiError::validation(format!(
                "{name} must be from 1 to 1000000 (absent: the default)"
            )));
        }
    }
    Ok(
        match st
            .store
            .put_tenant_caps(&tenant, t.max_running_tasks, t.max_running_steps)
            .await?
        {
            Some(row) => Json(TenantView::from(row)).into_response(),
            None => StatusCode::NO_CONTENT.into_response(),
        },
    )
}

/// Every tenant's own caps, by tenant (admin).
#[utoipa::path(get, path = "/tenants", operation_id = "list_tenants", tag = "fairness",
    security(("bearer" = [])),
    responses((status = 200, description = "tenants with caps of their own", body = Vec<TenantView>), Guarded),
)]
pub(super) async fn list(State(st): State<AppState>) -> Result<Json<Vec<TenantView>>, ApiError> {
    Ok(Json(
        st.store
            .tenant_caps()
            .await?
            .into_iter()
            .map(TenantView::from)
            .collect(),
    ))
}

/// Remove a tenant's own caps (admin): the defaults apply.
#[utoipa::path(delete, path = "/tenants/{tenant}", operation_id = "delete_tenant", tag = "fairness",
    security(("bearer" = [])), params(TenantPath),
    responses((status = 204, description = "deleted"), Missing, BadUri, Guarded),
)]
pub(super) async fn delete(
    State(st): State<AppState>,
    ApiPath(tenant): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    check(&tenant)?;
    if st.store.delete_tenant_caps(&tenant).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!(
            "tenant {tenant:?} has no caps of its own"
        )))
    }
}
