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
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}
