//! `/key-limits` (admin): each concurrency key pattern's weight, its share of the claim within
//! a priority, and its `max_running`, the steps of one key's tasks running at once. A key takes the most specific pattern that matches it (an exact key, then the
//! longest pattern), else `[fairness] default_weight`. A change applies to tasks submitted
//! after it.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::ApiPath;
use super::schemas::{BadBody, BadUri, Guarded, Missing};
use super::{ApiError, ApiJson, AppState};
use crate::store::fairness::KeyLimit;

/// One key pattern's limits.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = KeyLimit)]
pub(super) struct KeyLimitView {
    pattern: String,
    weight: f64,
    /// Steps of one key's tasks running at once, across every worker (none: no cap).
    max_running: Option<i32>,
    updated_at: chrono::DateTime<chrono::Utc>,
}

impl From<KeyLimit> for KeyLimitView {
    fn from(l: KeyLimit) -> Self {
        Self {
            pattern: l.pattern,
            weight: l.weight,
            max_running: l.max_running,
            updated_at: l.updated_at,
        }
    }
}

/// `PUT /key-limits/{pattern}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"weight": 3, "max_running": 10})))]
pub(super) struct KeyLimitInput {
    /// The keys' share of the claim, against other keys' (default 1; from 0.001 to 1000).
    #[serde(default)]
    #[schema(minimum = 0.001, maximum = 1000)]
    weight: Option<f64>,
    /// Steps of one key's tasks running at once, across every worker (each key that matches
    /// has its own count; absent: no cap). It applies to tasks submitted after the pattern
    /// exists; a new value applies at once.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1000000)]
    max_running: Option<i32>,
}

/// The `{pattern}` of a key limit route (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct PatternPath {
    /// A concurrency key, or a pattern where `*` is any run of characters (`premium-*`); 1 to
    /// 128 characters.
    #[param(min_length = 1, max_length = 128)]
    pattern: String,
}

fn check_pattern(p: &str) -> Result<(), ApiError> {
    if !(1..=128).contains(&p.chars().count()) {
        return Err(ApiError::validation("a key pattern is 1 to 128 characters"));
    }
    Ok(())
}

/// Set a key pattern's weight and max_running (admin; created or replaced).
#[utoipa::path(put, path = "/key-limits/{pattern}", operation_id = "put_key_limit", tag = "fairness",
    security(("bearer" = [])), params(PatternPath), request_body = KeyLimitInput,
    responses((status = 200, description = "stored", body = KeyLimitView), BadBody, BadUri, Guarded),
)]
pub(super) async fn put(
    State(st): State<AppState>,
    ApiPath(pattern): ApiPath<String>,
    ApiJson(l): ApiJson<KeyLimitInput>,
) -> Result<Json<KeyLimitView>, ApiError> {
    check_pattern(&pattern)?;
    let weight = l.weight.unwrap_or(1.0);
    if !(0.001..=1000.0).contains(&weight) {
        return Err(ApiError::validation("weight must be from 0.001 to 1000"));
    }
    if l.max_running.is_some_and(|n| !(0..=1_000_000).contains(&n)) {
        return Err(ApiError::validation(
            "max_running must be from 0 to 1000000 (absent: no cap)",
        ));
    }
    Ok(Json(
        st.store
            .put_key_limit(&pattern, weight, l.max_running)
            .await?
            .into(),
    ))
}

/// Every key pattern's limits, by pattern (admin).
#[utoipa::path(get, path = "/key-limits", operation_id = "list_key_limits", tag = "fairness",
    security(("bearer" = [])),
    responses((status = 200, description = "key limits", body = Vec<KeyLimitView>), Guarded),
)]
pub(super) async fn list(State(st): State<AppState>) -> Result<Json<Vec<KeyLimitView>>, ApiError> {
    Ok(Json(
        st.store
            .key_limits()
            .await?
            .into_iter()
            .map(KeyLimitView::from)
            .collect(),
    ))
}

/// Remove a key pattern's limits (admin): its keys take the next pattern, or the default.
#[utoipa::path(delete, path = "/key-limits/{pattern}", operation_id = "delete_key_limit", tag = "fairness",
    security(("bearer" = [])), params(PatternPath),
    responses((status = 204, description = "deleted"), Missing, BadUri, Guarded),
)]
pub(super) async fn delete(
    State(st): State<AppState>,
    ApiPath(pattern): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    check_pattern(&pattern)?;
    if st.store.delete_key_limit(&pattern).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(crate::store::StoreError::NotFound(format!("key limit {pattern:?}")).into())
    }
}
