//! Sealed tool credentials (`secrets`): the store keeps bytes it cannot read
//! ([`crate::secretbox`] seals and opens them, in the API and the workers).

use chrono::{DateTime, Utc};

use super::{Result, Store, StoreError};

impl Store {
    /// Create or replace a secret's sealed value.
    pub async fn put_secret(&self, name: &str, sealed: &[u8]) -> Result<()> {
        sqlx::query(sql!("secret/put"))
            .bind(name)
            .bind(sealed)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Every secret's name and times (never a value).
    pub async fn list_secrets(&self) -> Result<Vec<(String, DateTime<Utc>, DateTime<Utc>)>> {
        Ok(
            sqlx::query_as("SELECT name, created_at, updated_at FROM secrets ORDER BY name")
                .fetch_all(&self.pool)
                .await?,
        )
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
