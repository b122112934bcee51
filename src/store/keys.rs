//! API keys: digests, roles, revocation. The keys themselves never reach the database.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Result, Store, StoreError};
use crate::domain::auth::Role;

/// A stored key (never the key: its digest stays in the database).
#[derive(Debug, Clone)]
pub struct KeyRow {
    pub id: Uuid,
    pub name: String,
    pub role: Role,
    pub key_prefix: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub tenant: String,
}

/// A key to store: its digest and what to show of it.
#[derive(Debug, Clone)]
pub struct NewKey<'a> {
    pub name: &'a str,
    pub role: Role,
    pub digest: &'a [u8],
    pub key_prefix: &'a str,
    pub tenant: &'a str,
}

type RawKey = (
    Uuid,
    String,
    String,
    String,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
    String,
);

fn key_row(r: RawKey) -> Result<KeyRow> {
    Ok(KeyRow {
        id: r.0,
        name: r.1,
        role: r.2.parse().map_err(StoreError::Corrupt)?,
        key_prefix: r.3,
        created_at: r.4,
        revoked_at: r.5,
        tenant: r.6,
    })
}

impl Store {
    pub async fn create_key(&self, k: &NewKey<'_>) -> Result<KeyRow> {
        let r: RawKey = sqlx::query_as(sql!("key/create"))
            .bind(Uuid::now_v7())
            .bind(k.name)
            .bind(k.role.as_str())
            .bind(k.digest)
            .bind(k.key_prefix)
            .bind(k.tenant)
            .fetch_one(&self.pool)
            .await?;
        key_row(r)
    }

    /// Every key, revoked ones included, newest first.
    pub async fn list_keys(&self, tenant: Option<&str>) -> Result<Vec<KeyRow>> {
        let rows: Vec<RawKey> = sqlx::query_as(
            "SELECT id, name, role, key_prefix, created_at, revoked_at, tenant
             FROM api_keys WHERE ($1::text IS NULL OR tenant = $1)
             ORDER BY created_at DESC, id DESC LIMIT 10000",
        )
        .bind(tenant)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(key_row).collect()
    }

    /// Revoke a key (at once, for every API process: they look keys up per request).
    pub async fn revoke_key(&self, id: Uuid) -> Result<()> {
        let found: Option<(Uuid,)> = sqlx::query_as(sql!("key/revoke"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        found
            .map(|_| ())
            .ok_or_else(|| StoreError::NotFound(format!("key {id}")))
    }

    /// The live key with this digest: its id, role and tenant.
    pub async fn key_identity(&self, digest: &[u8]) -> Result<Option<(uuid::Uuid, Role, String)>> {
        let row: Option<(uuid::Uuid, String, String)> = sqlx::query_as(
            "SELECT id, role, tenant FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL",
        )
        .bind(digest)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|(id, r, t)| r.parse().map(|r| (id, r, t)).map_err(StoreError::Corrupt))
            .transpose()
    }

    pub async fn key_role(&self, digest: &[u8]) -> Result<Option<Role>> {
        let role: Option<String> = sqlx::query_scalar(
            "SELECT role FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL",
        )
        .bind(digest)
        .fetch_optional(&self.pool)
        .await?;
        role.map(|r| r.parse().map_err(StoreError::Corrupt))
            .transpose()
    }

    /// Whether any key is live (the API refuses to start when none can exist).
    pub async fn any_live_key(&self) -> Result<bool> {
        Ok(
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL)")
                .fetch_one(&self.pool)
                .await?,
        )
    }
}
