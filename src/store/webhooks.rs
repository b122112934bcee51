//! Webhooks: subscriptions, and the outbox (`webhook_deliveries`) the workers drain. Rows are
//! written by the events table's outbox trigger, in the transaction that appends the event
//! (`migrations/…_webhooks.sql`); a worker leases due deliveries — each the oldest pending one
//! of its task for its target, so a receiver gets a task's events in order — sends them with no
//! transaction open, and records each try fenced on `(id, attempts, pending)`.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{Result, Store, StoreError};
use crate::domain::status::DeliveryStatus;

/// A subscription (`webhooks`).
#[derive(Debug, Clone, sqlx::FromRow, PartialEq)]
pub struct WebhookRow {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub template: Option<String>,
    pub secret: String,
    pub created_at: DateTime<Utc>,
    /// It receives the events of this tenant's tasks only.
    #[sqlx(default)]
    pub tenant: String,
}

/// A delivery leased to a worker: what to send, and the secret to sign it with (none: the
/// task's own webhook, signed with `[webhooks] signing_secret`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Outgoing {
    pub id: Uuid,
    pub webhook_id: Option<Uuid>,
    pub task_id: Uuid,
    pub seq: i64,
    pub kind: String,
    pub payload: Value,
    pub event_at: DateTime<Utc>,
    pub url: String,
    /// This try's number (fences its outcome).
    pub attempts: i32,
    pub secret: Option<String>,
}

/// A delivery as the delivery log lists it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryRow {
    pub id: Uuid,
    pub webhook_id: Option<Uuid>,
    pub task_id: Uuid,
    pub seq: i64,
    pub kind: String,
    pub url: String,
    pub status: DeliveryStatus,
    pub attempts: i32,
    pub next_attempt_at: DateTime<Utc>,
    /// Every try: `{"at", "attempt", "status", "error"}`.
    pub log: Value,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
}

/// One try's outcome.
#[derive(Debug, Clone)]
pub enum Tried {
    /// A 2xx (its status).
    Delivered(u16),
    /// Anything else: the HTTP status if one came, and what went wrong.
    Failed {
        status: Option<u16>,
        error: String,
        /// The last try: the delivery is dead.
        max_attempts: i32,
        /// Seconds until the next try.
        backoff_secs: f64,
    },
}

impl Store {
    pub async fn create_webhook(
        &self,
        url: &str,
        events: &[String],
        template: Option<&str>,
        secret: &str,
        tenant: &str,
    ) -> Result<WebhookRow> {
        Ok(sqlx::query_as(sql!("webhook/create"))
            .bind(Uuid::now_v7())
            .bind(url)
            .bind(events)
            .bind(template)
            .bind(secret)
            .bind(tenant)
            .fetch_one(&self.pool)
            .await?)
    }

    /// `tenant`'s subscriptions (none: every tenant's).
    pub async fn list_webhooks(&self, tenant: Option<&str>) -> Result<Vec<WebhookRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM webhooks WHERE $1::text IS NULL OR tenant = $1 ORDER BY created_at, id",
        )
        .bind(tenant)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn get_webhook(&self, id: Uuid) -> Result<WebhookRow> {
        sqlx::query_as("SELECT * FROM webhooks WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("webhook {id}")))
    }

    /// Delete a subscription and its deliveries.
    pub async fn delete_webhook(&self, id: Uuid) -> Result<()> {
        let n = sqlx::query(sql!("webhook/delete"))
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("webhook {id}")));
        }
        Ok(())
    }

    /// A subscription's deliveries, newest first.
    pub async fn list_deliveries(&self, webhook: Uuid, limit: i64) -> Result<Vec<DeliveryRow>> {
        self.get_webhook(webhook).await?;
        Ok(sqlx::query_as(sql!("webhook/deliveries"))
            .bind(webhook)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Send a delivered or dead delivery again. A pending one is a conflict.
    pub async fn redeliver(&self, webhook: Uuid, delivery: Uuid) -> Result<()> {
        let done: Option<Uuid> = sqlx::query_scalar(sql!("webhook/redeliver"))
            .bind(delivery)
            .bind(webhook)
            .fetch_optional(&self.pool)
            .await?;
        if done.is_some() {
            return Ok(());
        }
        let exists: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = $1 AND webhook_id = $2)",
        )
        .bind(delivery)
        .bind(webhook)
        .fetch_one(&self.pool)
        .await?;
        Err(if exists {
            StoreError::Conflict(format!("delivery {delivery} is still pending"))
        } else {
            StoreError::NotFound(format!("delivery {delivery}"))
        })
    }

    /// Lease up to `limit` due deliveries for `lease_secs`.
    pub async fn claim_deliveries(&self, limit: i64, lease_secs: f64) -> Result<Vec<Outgoing>> {
        Ok(sqlx::query_as(sql!("webhook/claim"))
            .bind(limit)
            .bind(lease_secs)
            .fetch_all(&self.pool)
            .await?)
    }

    /// Record one try (fenced: a try whose lease another worker took records nothing).
    pub async fn record_delivery(&self, d: &Outgoing, tried: &Tried) -> Result<()> {
        match tried {
            Tried::Delivered(status) => {
                sqlx::query(sql!("webhook/delivered"))
                    .bind(d.id)
                    .bind(d.attempts)
                    .bind(i32::from(*status))
                    .execute(&self.pool)
                    .await?;
            }
            Tried::Failed {
                status,
                error,
                max_attempts,
                backoff_secs,
            } => {
                sqlx::query(sql!("webhook/failed"))
                    .bind(d.id)
                    .bind(d.attempts)
                    .bind(status.map(i32::from))
                    .bind(error)
                    .bind(max_attempts)
                    .bind(backoff_secs)
                    .execute(&self.pool)
                    .await?;
            }
        }
        Ok(())
    }
}
