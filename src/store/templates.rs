//! The workflow template registry.

use serde_json::Value;

use super::{Result, Store, StoreError};
use crate::domain::template::TemplateDef;

impl Store {
    /// Register a template (checked by the caller), with the concurrency key and `max_cost` of
    /// the tasks made from it. An existing id is a conflict.
    pub async fn create_template(
        &self,
        id: &str,
        description: &str,
        input_schema: &Value,
        plan: &Value,
        (concurrency_key, max_cost): (Option<&str>, Option<f64>),
        tenant: &str,
    ) -> Result<TemplateDef> {
        let row: Option<TemplateDef> = sqlx::query_as(sql!("template/create"))
            .bind(id)
            .bind(description)
            .bind(input_schema)
            .bind(plan)
            .bind(concurrency_key)
            .bind(tenant)
            .bind(max_cost)
            .fetch_optional(&self.pool)
            .await?;
        row.ok_or_else(|| StoreError::Conflict(format!("template {id:?} already exists")))
    }

    /// `tenant`'s templates (none: every tenant's) in id order, after `after` (keyset), at
    /// most `limit`.
    pub async fn list_templates(
        &self,
        tenant: Option<&str>,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<TemplateDef>> {
        Ok(sqlx::query_as(
            "SELECT * FROM templates WHERE ($1::text IS NULL OR tenant = $1)
               AND ($2::text IS NULL OR id > $2)
             ORDER BY id LIMIT $3",
        )
        .bind(tenant)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn get_template(&self, id: &str) -> Result<TemplateDef> {
        sqlx::query_as("SELECT * FROM templates WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("template {id:?}")))
    }

    /// Delete a template; tasks made from it keep their plans.
    pub async fn delete_template(&self, id: &str) -> Result<()> {
        let n = sqlx::query(sql!("template/delete"))
            .bind(id)
            .execute(&self.pool)
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("template {id:?}")));
        }
        Ok(())
    }
}
