//! Sealed tool credentials (`secrets`): the store keeps bytes it cannot read
//! ([`crate::secretbox`] seals and opens them, in the API and the workers).

use chrono::{DateTime, Utc};

use super::{Result, Store, StoreError};

impl Store {
    /// Create or replace a secret's sealed value.
    pub async fn put_secret(&self, name: &str, sealed: &[u8], tenant: &str) -> Result<()> {
        sqlx::query(sql!("secret/put"))
            .bind(name)
            .bind(sealed)
            .bind(tenant)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// `tenant`'s secrets (none: every tenant's): name, times and tenant (never a value).
    pub async fn list_secrets(
        &self,
        tenant: Option<&str>,
    ) -> Result<Vec<(String, DateTime<Utc>, DateTime<Utc>, String)>> {
        Ok(sqlx::query_as(
            "SELECT name, created_at, updated_at, tenant FROM secrets
             WHERE $1::text IS NULL OR tenant = $1 ORDER BY name",
        )
        .bind(tenant)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn delete_secret(&self, name: &str) -> Result<()> {
        let n = sqlx::query(sql!("secret/delete"))
            .bind(name)
            .execute(&self.pool)
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("secret {name}")));
        }
        Ok(())
    }

    /// The sealed values of the named secrets that exist.
    pub async fn sealed_secrets(&self, names: &[&str]) -> Result<Vec<(String, Vec<u8>)>> {
        Ok(
            sqlx::query_as("SELECT name, sealed FROM secrets WHERE name = ANY($1)")
                .bind(names)
                .fetch_all(&self.pool)
                .await?,
        )
    }
}
