//! `trellis-worker`: claims and runs steps. Run as many as you like, on as many machines.
//! SIGTERM/SIGINT drain it: no new claims, in-flight steps finish within the grace period or are
//! released without burning an attempt.

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use trellis::config::Settings;
use trellis::store::Store;
use trellis::worker::{self, WorkerConfig};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if let Some(arg) = std::env::args().nth(1) {
        if arg == "-h" || arg == "--help" {
            println!(
                "usage: trellis-worker\n\nconfigured by config.toml, config.$APP_ENV.toml and APP_<SECTION>__<KEY>"
            );
            return Ok(());
        }
        anyhow::bail!("unknown argument {arg:?}");
    }
    trellis::init_tracing();
    let settings = Settings::load().context("loading configuration")?;
    let store = Store::open(&settings)
        .await
        .context("connecting to PostgreSQL and applying migrations")?;

    let cfg = WorkerConfig::from_settings(&settings);
    println!("worker {} started", cfg.id);
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        trellis::shutdown_signal().await;
        stop.cancel();
    });
    worker::run(store.clone(), cfg, shutdown)
        .await
        .context("worker")?;
    store.pool().close().await;
    Ok(())
}
