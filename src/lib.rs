//! Trellis core: a durable task-orchestration queue on PostgreSQL.
//!
//! - [`model`]: the state enums and plan definitions;
//! - [`plan`] / [`params`]: plan validation and placeholder resolution (pure);
//! - [`recovery`]: the failure decision (pure);
//! - [`store`]: every SQL statement;
//! - [`tools`]: built-in and HTTP tools;
//! - [`worker`]: the claim/run/complete loop;
//! - [`api`]: the REST router;
//! - [`config`], [`devpg`], [`testkit`]: configuration, a throwaway PostgreSQL, test support.

pub mod api;
pub mod brain;
pub mod config;
pub mod devpg;
pub mod model;
pub mod params;
pub mod plan;
pub mod recovery;
pub mod store;
pub mod testkit;
pub mod tools;
pub mod worker;

/// Install the tracing subscriber (`RUST_LOG`, default `info`), logging to stderr.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

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
