//! Tenants' own caps (`tenants` rows) over the `[tenants]` defaults; the claim keeps them
//! (`step/claim_pick`, `step/claim_checked`).

use super::{Result, Store};

/// One tenant's caps (a `tenants` row; a null: the `[tenants]` default).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct TenantCaps {
    pub tenant: String,
    /// Its tasks with running steps at once, across the fleet.
    pub max_running_tasks: Option<i32>,
    /// Its running steps at once, across the fleet.
    pub max_running_steps: Option<i32>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

impl Store {
    /// Set a tenant's caps (insert or replace); with neither, its row goes (the defaults
    /// apply) and `None` is returned.
    pub async fn put_tenant_caps(
        &self,
        tenant: &str,
        max_running_tasks: Option<i32>,
        max_running_steps: Option<i32>,
    ) -> Result<Option<TenantCaps>> {
        if max_running_tasks.is_none() && max_running_steps.is_none() {
            self.delete_tenant_caps(tenant).await?;
            return Ok(None);
        }
        Ok(Some(
            sqlx::query_as(sql!("tenant/put"))
                .bind(tenant)
                .bind(max_running_tasks)
                .bind(max_running_steps)
                .fetch_one(&self.pool)
                .await?,
        ))
    }

    /// Every tenant's own caps, by tenant.
    pub async fn tenant_caps(&self) -> Result<Vec<TenantCaps>> {
        Ok(sqlx::query_as(
            "SELECT tenant::text, max_running_tasks, max_running_steps, updated_at
             FROM tenants ORDER BY tenant",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Remove a tenant's own caps; whether it had any.
    pub async fn delete_tenant_caps(&self, tenant: &str) -> Result<bool> {
        Ok(sqlx::query(sql!("tenant/delete"))
            .bind(tenant)
            .execute(&self.pool)
            .await?
            .rows_affected()
            > 0)
    }
}
