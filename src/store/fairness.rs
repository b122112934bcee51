//! Fair queues: concurrency key limits (weights by key pattern) and priority aging. The turns
//! themselves are given at submit (`task/submit`: each task's `fair_pass`) and taken by the
//! claim's order; this module holds what an operator sets and the aging pass.

use super::{Result, Store};

/// One key pattern's limits (a `key_limits` row).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct KeyLimit {
    pub pattern: String,
    pub weight: f64,
    /// Steps of one key's tasks running at once, across every worker (none: no cap).
    pub max_running: Option<i32>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

/// A key pattern as a `LIKE` pattern: `*` is any run of characters, the rest is literal.
pub fn like_pattern(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 4);
    for c in pattern.chars() {
        match c {
            '*' => out.push('%'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

impl Store {
    /// Set a key pattern's weight and `max_running` (insert or replace).
    pub async fn put_key_limit(
        &self,
        pattern: &str,
        weight: f64,
        max_running: Option<i32>,
    ) -> Result<KeyLimit> {
        Ok(sqlx::query_as(sql!("fair/put_limit"))
            .bind(pattern)
            .bind(like_pattern(pattern))
            .bind(weight)
            .bind(max_running)
            .fetch_one(&self.pool)
            .await?)
    }

    /// Every key pattern's limits, by pattern.
    pub async fn key_limits(&self) -> Result<Vec<KeyLimit>> {
        Ok(sqlx::query_as(
            "SELECT pattern, weight, max_running, updated_at FROM key_limits ORDER BY pattern",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Remove a key pattern's limits; whether there were any.
    pub async fn delete_key_limit(&self, pattern: &str) -> Result<bool> {
        Ok(sqlx::query(sql!("fair/delete_limit"))
            .bind(pattern)
            .execute(&self.pool)
            .await?
            .rows_affected()
            > 0)
    }

    /// One aging pass: queued tasks that waited `interval_secs` since they were submitted or
    /// last raised rise one priority level (at most `max_boost` in all), up to `limit` tasks.
    /// How many rose (0 when another worker's pass holds the fleet's turn).
    pub async fn age_priorities(
        &self,
        interval_secs: f64,
        max_boost: i32,
        limit: i64,
    ) -> Result<i64> {
        Ok(sqlx::query_scalar(sql!("fair/age"))
            .bind(interval_secs)
            .bind(max_boost)
            .bind(limit)
            .fetch_one(&self.pool)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::like_pattern;

    #[test]
    fn a_pattern_is_literal_but_for_its_stars() {
        assert_eq!(like_pattern("premium-*"), "premium-%");
        assert_eq!(like_pattern("a_b%c\\d"), "a\\_b\\%c\\\\d");
        assert_eq!(like_pattern("*"), "%");
        assert_eq!(like_pattern("exact"), "exact");
    }
}
