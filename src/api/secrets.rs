//! `/secrets` (admin): tool credentials. Values are write-only: sealed here with `[secrets] key`
//! ([`crate::secretbox`]) and never returned, logged or shown; tools name them in their
//! `headers` (`${secret.NAME}`), and workers fill them in at call time.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiPath;
use super::auth::Tenancy;
use super::schemas::{BadBody, BadUri, Guarded, Missing};
use super::{ApiError, ApiJson, AppState};
use crate::secretbox::SecretBox;

/// A secret's name: 1-128 letters, digits, `_`, `.` or `-`.
pub(super) fn check_secret_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(ApiError::validation(
            "a secret's name is 1-128 letters, digits, '_', '.' or '-'",
        ))
    }
}

/// `PUT /secrets/{name}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SecretInput {
    /// The value (never returned).
    #[schema(min_length = 1, max_length = 16384)]
    value: String,
}

impl std::fmt::Debug for SecretInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretInput { value: <redacted> }")
    }
}

/// A secret as listed: its name and times, never its value.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Secret)]
pub(super) struct SecretView {
    name: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    /// The tenant that wrote it.
    tenant: String,
}

/// The `{name}` of a secret route (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct SecretPath {
    /// A secret's name.
    name: String,
}

fn secret_box(st: &AppState) -> Result<SecretBox, ApiError> {
    match SecretBox::from_settings(st.settings.secrets.key.as_deref()) {
        Ok(Some(b)) => Ok(b),
        _ => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "secrets_unavailable",
            "this server keeps no secrets: set [secrets] key (APP_SECRETS__KEY, 32 bytes, base64)",
        )),
    }
}

/// Create or replace a secret (admin); its value is sealed at once and never returned. The next
/// call of a tool that names it uses the new value.
#[utoipa::path(put, path = "/secrets/{name}", operation_id = "put_secret", tag = "secrets",
    security(("bearer" = [])), params(SecretPath), request_body = SecretInput,
    responses((status = 204, description = "stored"), BadBody, BadUri, Guarded),
)]
pub(super) async fn put(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(name): ApiPath<String>,
    ApiJson(s): ApiJson<SecretInput>,
) -> Result<StatusCode, ApiError> {
    check_secret_name(&name)?;
    if s.value.is_empty() || s.value.len() > 16384 {
        return Err(ApiError::validation("value must be 1 to 16384 bytes"));
    }
    let sealed = secret_box(&st)?.seal(&s.value);
    st.store.put_secret(&name, &sealed, &tenancy.home).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Every secret's name and times (admin); never a value.
#[utoipa::path(get, path = "/secrets", operation_id = "list_secrets", tag = "secrets",
    security(("bearer" = [])), params(super::schemas::TenantParam),
    responses((status = 200, description = "secrets", body = Vec<SecretView>), BadUri, Guarded),
)]
pub(super) async fn list(
    State(st): State<AppState>,
    tenancy: Tenancy,
) -> Result<Json<Vec<SecretView>>, ApiError> {
    Ok(Json(
        st.store
            .list_secrets(tenancy.filter())
            .await?
            .into_iter()
            .map(|(name, created_at, updated_at, tenant)| SecretView {
                name,
                created_at,
                updated_at,
                tenant,
            })
            .collect(),
    ))
}

/// Delete a secret (admin).
#[utoipa::path(delete, path = "/secrets/{name}", operation_id = "delete_secret", tag = "secrets",
    security(("bearer" = [])), params(SecretPath),
    responses((status = 204, description = "deleted"), Missing, BadUri, Guarded),
)]
pub(super) async fn delete(
    State(st): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    st.store.delete_secret(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}
