//! `/webhooks` (admin): subscriptions to task events, their delivery logs, redelivery.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::ApiPath;
use super::auth::Tenancy;
use super::rules::{check_event_kinds, check_webhook_target};
use super::schemas::{BadBody, BadUri, Conflict, Guarded, Missing};
use super::{ApiError, ApiJson, AppState};
use crate::store::webhooks::{DeliveryRow, WebhookRow};

/// `POST /webhooks`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"url": "https://hooks.example.com/trellis", "events": ["task_succeeded", "task_failed"]})))]
pub(super) struct WebhookInput {
    /// Where deliveries are `POST`ed.
    #[schema(format = "uri", max_length = 2000)]
    url: String,
    /// Event kinds (empty or absent: the terminal kinds and `intervention_required`).
    #[serde(default)]
    events: Vec<String>,
    /// Only tasks submitted from this template.
    template: Option<String>,
    /// The Standard Webhooks signing secret (`whsec_` + base64); absent: one is made and shown
    /// in this answer only.
    secret: Option<String>,
}

/// A subscription.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Webhook)]
pub(super) struct WebhookView {
    id: Uuid,
    url: String,
    events: Vec<String>,
    template: Option<String>,
    /// Only in the answer to `POST /webhooks`.
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
    created_at: DateTime<Utc>,
    /// It receives the events of this tenant's tasks only.
    tenant: String,
}

fn view(w: &WebhookRow) -> WebhookView {
    WebhookView {
        id: w.id,
        url: crate::net::redact_url_text(&w.url),
        events: w.events.clone(),
        template: w.template.clone(),
        secret: None,
        created_at: w.created_at,
        tenant: w.tenant.clone(),
    }
}

/// One delivery of the log.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = WebhookDelivery)]
pub(super) struct DeliveryView {
    delivery_id: Uuid,
    task_id: Uuid,
    seq: i64,
    /// The event kind.
    kind: String,
    /// `pending`, `delivered` or `dead`.
    #[schema(schema_with = delivery_status)]
    status: String,
    attempts: i32,
    next_attempt_at: DateTime<Utc>,
    /// Every try: `{"at", "attempt", "status" (HTTP, or null), "error"}`.
    #[schema(value_type = Vec<Object>)]
    log: Value,
    created_at: DateTime<Utc>,
    delivered_at: Option<DateTime<Utc>>,
}

fn delivery_status() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(
            crate::domain::status::DeliveryStatus::ALL
                .iter()
                .map(|s| s.as_str()),
        ))
        .build()
}

fn delivery(d: &DeliveryRow) -> DeliveryView {
    DeliveryView {
        delivery_id: d.id,
        task_id: d.task_id,
        seq: d.seq,
        kind: d.kind.clone(),
        status: d.status.as_str().to_string(),
        attempts: d.attempts,
        next_attempt_at: d.next_attempt_at,
        log: d.log.clone(),
        created_at: d.created_at,
        delivered_at: d.delivered_at,
    }
}

fn uuid(raw: &str, what: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw)
        .map_err(|_| ApiError::bad_request(format!("{raw:?} is not a {what} id (UUID)")))
}

/// Subscribe to task events (admin).
#[utoipa::path(post, path = "/webhooks", operation_id = "create_webhook", tag = "webhooks",
    security(("bearer" = [])), request_body = WebhookInput,
    responses((status = 201, description = "created (the secret is shown once)", body = WebhookView), BadBody, Guarded),
)]
pub(super) async fn create(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiJson(w): ApiJson<WebhookInput>,
) -> Result<Response, ApiError> {
    check_webhook_target(&st, &w.url)?;
    check_event_kinds(&w.events)?;
    if let Some(t) = &w.template {
        st.store
            .get_template(t)
            .await
            .ok()
            .filter(|x| x.tenant == tenancy.home)
            .ok_or_else(|| ApiError::validation(format!("template {t:?} is not registered")))?;
    }
    let secret = match w.secret {
        Some(s) => {
            if !s.starts_with("whsec_") || standardwebhooks::Webhook::new(&s).is_err() {
                return Err(ApiError::validation(
                    "secret must be whsec_ followed by base64",
                ));
            }
            s
        }
        None => {
            let bytes: Vec<u8> = Uuid::new_v4()
                .as_bytes()
                .iter()
                .chain(Uuid::new_v4().as_bytes())
                .copied()
                .collect();
            format!(
                "whsec_{}",
                base64::engine::general_purpose::STANDARD.encode(bytes)
            )
        }
    };
    let row = st
        .store
        .create_webhook(
            &w.url,
            &w.events,
            w.template.as_deref(),
            &secret,
            &tenancy.home,
        )
        .await?;
    let mut v = view(&row);
    v.secret = Some(secret);
    Ok((StatusCode::CREATED, Json(v)).into_response())
}

/// Every subscription (admin; never their secrets).
#[utoipa::path(get, path = "/webhooks", operation_id = "list_webhooks", tag = "webhooks",
    security(("bearer" = [])), params(super::schemas::TenantParam),
    responses((status = 200, description = "subscriptions", body = Vec<WebhookView>), BadUri, Guarded),
)]
pub(super) async fn list(
    State(st): State<AppState>,
    tenancy: Tenancy,
) -> Result<Json<Vec<WebhookView>>, ApiError> {
    Ok(Json(
        st.store
            .list_webhooks(tenancy.filter())
            .await?
            .iter()
            .map(view)
            .collect(),
    ))
}

/// The `{id}` of a webhook route (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct WebhookPath {
    /// A webhook id.
    id: Uuid,
}

/// Delete a subscription and its delivery log (admin).
#[utoipa::path(delete, path = "/webhooks/{id}", operation_id = "delete_webhook", tag = "webhooks",
    security(("bearer" = [])), params(WebhookPath),
    responses((status = 204, description = "deleted"), Missing, BadUri, Guarded),
)]
pub(super) async fn delete(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(raw): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    let id = owned(&st, &tenancy, &raw).await?;
    st.store.delete_webhook(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `?limit=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct DeliveriesQuery {
    #[param(minimum = 1, maximum = 1000, default = 100)]
    limit: Option<i64>,
}

/// A subscription's deliveries, newest first, each with its tries (admin).
#[utoipa::path(get, path = "/webhooks/{id}/deliveries", operation_id = "list_webhook_deliveries",
    tag = "webhooks", security(("bearer" = [])), params(WebhookPath, DeliveriesQuery),
    responses((status = 200, description = "deliveries", body = Vec<DeliveryView>), Missing, BadUri, Guarded),
)]
pub(super) async fn deliveries(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(raw): ApiPath<String>,
    q: Result<Query<DeliveriesQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<DeliveryView>>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = q.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_request("limit must be between 1 and 1000"));
    }
    let id = owned(&st, &tenancy, &raw).await?;
    let rows = st.store.list_deliveries(id, limit).await?;
    Ok(Json(rows.iter().map(delivery).collect()))
}

/// The `{id}` and `{delivery_id}` of a redelivery (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct DeliveryPath {
    /// A webhook id.
    id: Uuid,
    /// One of its deliveries.
    delivery_id: Uuid,
}

/// Send a delivered or dead delivery again (409 while it is pending).
#[utoipa::path(post, path = "/webhooks/{id}/deliveries/{delivery_id}/redeliver",
    operation_id = "redeliver_webhook", tag = "webhooks", security(("bearer" = [])), params(DeliveryPath),
    responses((status = 202, description = "queued again"), Missing, Conflict, BadUri, Guarded),
)]
pub(super) async fn redeliver(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath((raw, raw_delivery)): ApiPath<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let d = uuid(&raw_delivery, "delivery")?;
    let id = owned(&st, &tenancy, &raw).await?;
    st.store.redeliver(id, d).await?;
    Ok(StatusCode::ACCEPTED)
}

/// The webhook `raw` names, if the caller's scope sees its tenant (an admin's `?tenant=`; 404
/// otherwise).
async fn owned(st: &AppState, tenancy: &Tenancy, raw: &str) -> Result<Uuid, ApiError> {
    let w = st.store.get_webhook(uuid(raw, "webhook")?).await?;
    tenancy.owns(&w.tenant, format_args!("webhook {}", w.id))?;
    Ok(w.id)
}
