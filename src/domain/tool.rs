//! The tool registry's record.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::circuit::BreakerSpec;
use super::recovery::RetrySpec;
use super::schema::{InvalidSchema, Schema};

/// A tool's kind (`tools.kind`): how a worker calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Runs inside the worker (`echo`, `sleep`, `approval`, …).
    Builtin,
    /// An HTTP endpoint.
    Http,
    /// A tool of a registered MCP server.
    Mcp,
}

impl ToolKind {
    pub const ALL: [ToolKind; 3] = [ToolKind::Builtin, ToolKind::Http, ToolKind::Mcp];
    /// The values, in the order of [`ToolKind::ALL`] (for the OpenAPI document's enumeration).
    pub const NAMES: [&'static str; 3] = ["builtin", "http", "mcp"];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Builtin => Self::NAMES[0],
            ToolKind::Http => Self::NAMES[1],
            ToolKind::Mcp => Self::NAMES[2],
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A tool's schemas, compiled once per registry version (by the worker's tool cache).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolChecks {
    pub input: Schema,
    /// None: any output is accepted.
    pub output: Option<Schema>,
}

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
    /// JSON Schema a successful output must match (None: any output).
    pub output_schema: Option<Value>,
    pub output_params: Vec<String>,
    pub alternatives: Vec<String>,
    pub tags: Vec<String>,
    /// At most this many steps of the tool run at once, fleet-wide.
    pub max_concurrency: Option<i32>,
    /// Token-bucket refill rate shared by the fleet (steps started per second).
    pub rate_limit_per_sec: Option<f64>,
    /// Token-bucket size (steps that may start at once after a quiet period).
    pub rate_limit_burst: i32,
    /// The tool's retry policy (null: the `[worker]` defaults).
    pub retry: Option<sqlx::types::Json<RetrySpec>>,
    /// The tool's circuit breaker (null: the `[worker]` defaults).
    pub circuit_breaker: Option<sqlx::types::Json<BreakerSpec>>,
    /// Every call waits for a person's approval first (`GET /api/v1/waits`).
    #[sqlx(default)]
    pub requires_approval: bool,
    /// `sync` (the answer is the output) or `async` (a 2xx parks the step until the tool
    /// calls back at the `callback_url` its call carries).
    #[sqlx(default)]
    pub mode: String,
    /// Headers of every call: `{"Name": "literal or ${secret.NAME}"}` (resolved by the worker
    /// at call time).
    #[sqlx(default)]
    pub headers: sqlx::types::Json<std::collections::BTreeMap<String, String>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The tenant whose plans may name it (a built-in: every tenant's).
    #[sqlx(default)]
    pub tenant: String,
    /// POSTed `{tool, task_id, step_id, attempt}` when a call in flight is cancelled.
    #[sqlx(default)]
    pub cancel_url: Option<String>,
    /// Rules by which a 2xx answer's body says the call failed ([`super::envelope`]).
    #[sqlx(default)]
    pub failure_when: sqlx::types::Json<Vec<super::envelope::FailureRule>>,
    /// Held: the claim starts none of its steps.
    #[sqlx(default)]
    pub paused: bool,
    /// Its circuit is open or half open, or a `Retry-After` holds it: a worker asks the
    /// database before a call ([`super::circuit::Circuit::gate`]). Read only with the worker's
    /// tool cache.
    #[sqlx(default)]
    pub gated: bool,
    /// The schemas compiled ([`ToolDef::compile_checks`]); not a column.
    #[sqlx(skip)]
    pub checks: ToolChecks,
}

impl ToolDef {
    /// Compile `input_schema` and `output_schema` into [`ToolDef::checks`]. A stored schema
    /// that does not compile (the API refuses such schemas; a row written by hand might hold
    /// one) checks nothing and is returned as an error for the caller to report.
    pub fn compile_checks(&mut self) -> Result<(), InvalidSchema> {
        let mut problem = None;
        self.checks.input = Schema::compile(&self.input_schema).unwrap_or_else(|e| {
            problem = Some(e);
            Schema::anything()
        });
        self.checks.output = match &self.output_schema {
            None => None,
            Some(s) => match Schema::compile(s) {
                Ok(s) => Some(s),
                Err(e) => {
                    problem = Some(e);
                    None
                }
            },
        };
        problem.map_or(Ok(()), Err)
    }
}
