//! Trellis core: a durable task-orchestration queue on PostgreSQL.
//!
//! Dependency direction (ARCHITECTURE.md): [`domain`] ← {[`store`], [`brain`], [`tools`]} ←
//! {[`worker`], [`api`]} ← [`startup`] ← the binaries.
//!
//! - [`domain`]: statuses, transition tables, records, the decision vocabulary, plans,
//!   placeholders and the three-tier recovery, all pure;
//! - [`store`]: every SQL statement;
//! - [`brain`]: the decisions (rules brain, LLM brain);
//! - [`tools`]: built-in and HTTP tools;
//! - [`worker`]: the claim/run/complete loop;
//! - [`api`]: the REST router and the JSON views;
//! - [`startup`]: the application both binaries and the test harness build;
//! - [`mcp`]: the MCP client; [`secretbox`]: tool credentials at rest;
//! - [`config`], [`devpg`], [`net`], [`telemetry`], [`metrics`]: configuration, a throwaway
//!   PostgreSQL, outbound HTTP helpers, logs, Prometheus metrics; `testkit` (feature
//!   `testing`): a fresh database per test; `devbouncer`: a throwaway PgBouncer for tests.

pub mod api;
pub mod brain;
pub mod config;
pub mod devbouncer;
pub mod devpg;
pub mod domain;
pub mod mcp;
pub mod metrics;
pub mod net;
pub mod secretbox;
pub mod startup;
pub mod store;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testkit;
pub mod tools;
pub mod worker;

/// Resolves when the process gets SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
