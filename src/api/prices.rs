//! `/model-prices` (admin): the price map an LLM call's cost is derived from when it is
//! recorded (per million tokens, each price valid from a time, so history stays right when a
//! price changes). `[[llm.prices]]` in the configuration does the same at start.

use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::schemas::{BadBody, Guarded};
use super::{ApiError, ApiJson, AppState};
use crate::store::cost::{ModelPrice, NewPrice};

/// One model's prices per million tokens, from `valid_from` on.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ModelPrice)]
pub(super) struct PriceView {
    model: String,
    valid_from: DateTime<Utc>,
    input_per_mtok: f64,
    output_per_mtok: f64,
    /// Cached input tokens (none: the input price).
    cached_input_per_mtok: Option<f64>,
    updated_at: DateTime<Utc>,
}

impl From<ModelPrice> for PriceView {
    fn from(p: ModelPrice) -> Self {
        Self {
            model: p.model,
            valid_from: p.valid_from,
            input_per_mtok: p.input_per_mtok,
            output_per_mtok: p.output_per_mtok,
            cached_input_per_mtok: p.cached_input_per_mtok,
            updated_at: p.updated_at,
        }
    }
}

/// `PUT /model-prices`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"model": "gpt-4o-mini", "input_per_mtok": 0.15, "output_per_mtok": 0.6,
    "cached_input_per_mtok": 0.075, "valid_from": "2026-11-27T12:00:00Z"})))]
pub(super) struct PriceInput {
    /// The model name as the LLM calls record it (`llm_calls.model`).
    #[schema(min_length = 1, max_length = 200)]
    model: String,
    #[schema(minimum = 0, maximum = 1000000000)]
    input_per_mtok: f64,
    #[schema(minimum = 0, maximum = 1000000000)]
    output_per_mtok: f64,
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1000000000)]
    cached_input_per_mtok: Option<f64>,
    /// From when the price holds (absent: now, by the database's clock). Calls recorded before
    /// keep the cost they were given.
    #[serde(default)]
    valid_from: Option<DateTime<Utc>>,
}

/// Set a model's price from `valid_from` on (admin; that row is created or replaced).
#[utoipa::path(put, path = "/model-prices", operation_id = "put_model_price", tag = "system",
    security(("bearer" = [])), request_body = PriceInput,
    responses((status = 200, description = "stored", body = PriceView), BadBody, Guarded),
)]
pub(super) async fn put(
    State(st): State<AppState>,
    ApiJson(p): ApiJson<PriceInput>,
) -> Result<Json<PriceView>, ApiError> {
    if p.model.is_empty() || p.model.chars().count() > 200 {
        return Err(ApiError::validation("model must be 1 to 200 characters"));
    }
    let ok = |v: f64| v.is_finite() && (0.0..=1e9).contains(&v);
    if !ok(p.input_per_mtok) || !ok(p.output_per_mtok) || !p.cached_input_per_mtok.is_none_or(ok) {
        return Err(ApiError::validation(
            "prices must be between 0 and 1000000000 per million tokens",
        ));
    }
    let row = st
        .store
        .put_price(&NewPrice {
            model: p.model,
            valid_from: p.valid_from,
            input_per_mtok: p.input_per_mtok,
            output_per_mtok: p.output_per_mtok,
            cached_input_per_mtok: p.cached_input_per_mtok,
        })
        .await?;
    Ok(Json(row.into()))
}

/// The price map: every model's prices, by model, newest first (admin).
#[utoipa::path(get, path = "/model-prices", operation_id = "list_model_prices", tag = "system",
    security(("bearer" = [])),
    responses((status = 200, description = "prices", body = Vec<PriceView>), Guarded),
)]
pub(super) async fn list(State(st): State<AppState>) -> Result<Json<Vec<PriceView>>, ApiError> {
    Ok(Json(
        st.store
            .prices()
            .await?
            .into_iter()
            .map(PriceView::from)
            .collect(),
    ))
}
