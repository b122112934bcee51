//! The tool registry's record.

use chrono::{DateTime, Utc};
use serde_json::Value;

/// A row of the tool registry.
#[derive(Debug, Clone, sqlx::FromRow, PartialEq)]
pub struct ToolDef {
    pub id: String,
    pub name: String,
    pub description: String,
    pub kind: String,
    pub endpoint: Option<String>,
    pub timeout_ms: i32,
    pub input_schema: Value,
    pub output_params: Vec<String>,
    pub alternatives: Vec<String>,
    pub tags: Vec<String>,
    /// At most this many steps of the tool run at once, fleet-wide.
    pub max_concurrency: Option<i32>,
    /// Token-bucket refill rate shared by the fleet (steps started per second).
    pub rate_limit_per_sec: Option<f64>,
    /// Token-bucket size (steps that may start at once after a quiet period).
    pub rate_limit_burst: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}
