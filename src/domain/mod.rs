//! The domain: Trellis's vocabulary, pure and at the bottom of the crate.
//!
//! Architecture invariant: nothing here imports another module of the crate (a test in
//! `tests/it/architecture.rs` checks it), does I/O, or holds a connection. `store`, `brain`,
//! `tools`, `worker` and `api` all build on these types; none of them is needed to read them.
//!
//! - [`status`]: typed statuses and kinds, stored as text;
//! - [`transitions`]: the named moves between statuses (the transition tables);
//! - [`records`]: rows as the store reads them (task, step, attempt, …);
//! - [`decision`]: the decision vocabulary (input, context, outcome, answers, LLM usage);
//! - [`model`]: plan definitions as clients submit them, tool failures;
//! - [`event`]: the events clients read, one typed variant per kind;
//! - [`plan`] / [`params`]: plan validation and placeholder resolution, both on
//!   [`placeholder`] (the placeholder grammar);
//! - [`recovery`]: the three-tier recovery as pure functions; [`failure`]: what a failed call
//!   means (HTTP semantics, `Retry-After`, outages); [`envelope`]: what an answer's body says
//!   (a 2xx that failed, the parameters a tool refused); [`schema_repair`]: parameters the tool's
//!   schema makes unambiguous; [`circuit`]: the fleet-wide circuit breaker's states;
//! - [`schema`]: JSON Schema checks; [`upstream`]: healing the step that made a bad value;
//! - [`limits`], [`tool`], [`template`]: a task's limits, the tool registry's record, workflow
//!   templates and their `${input.key}` placeholders;
//! - [`wait`]: approvals, events and timers; [`child`]: child tasks; [`agent`]: the agent
//!   step's parameters, tool offers, answers and turns; [`schedule`]: cron;
//!   [`tenant`]: who owns a row;
//! - [`call_key`]: the idempotency key of one tool call, the same through its retries;
//! - [`auth`]: API key roles and what each call needs; [`bulk`]: bulk actions' vocabulary;
//!   [`nul`]: finding NUL characters;
//!   [`secrets`]: credentials kept out of answers.

pub mod agent;
pub mod auth;
pub mod bulk;
pub mod call_key;
pub mod child;
pub mod circuit;
pub mod decision;
pub mod envelope;
pub mod event;
pub mod failure;
pub mod limits;
pub mod model;
pub mod nul;
pub mod params;
pub mod placeholder;
pub mod plan;
pub mod records;
pub mod recovery;
pub mod schedule;
pub mod schema;
pub mod schema_repair;
pub mod secrets;
pub mod status;
pub mod template;
pub mod tenant;
pub mod tool;
pub mod transitions;
pub mod upstream;
pub mod wait;

pub use limits::{Limits, MAX_TASK_TIMEOUT_SECS};
pub use model::{ActionSpec, PlanSpec, StepSpec, ToolFailure, WORKER_LOST};
pub use status::{AttemptStatus, DecisionKind, DecisionStatus, StepStatus, TaskStatus};
