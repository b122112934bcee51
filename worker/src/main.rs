//! `trellis-worker`: claims and runs steps. Run as many as you like, on as many machines.
//! SIGTERM/SIGINT drain it: no new claims, in-flight steps finish within the grace period or are
//! released without burning an attempt.

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use trellis::config::Settings;
use trellis::startup::{cancel_on_signal, run_worker};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            trellis::telemetry::report_exit_error(&e, trellis::telemetry::format_or_env());
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    if let Some(arg) = std::env::args().nth(1) {
        if arg == "-h" || arg == "--help" {
            println!(
                "usage: trellis-worker\n\nconfigured by config.toml, config.$APP_ENV.toml and APP_<SECTION>__<KEY>"
            );
            return Ok(());
        }
        anyhow::bail!("unknown argument {arg:?}");
    }
    let settings = Settings::load().context("loading configuration")?;
    let _telemetry = trellis::telemetry::init(&settings.log, "trellis-worker")
        .context("starting the span export")?;
    let stop = CancellationToken::new();
    cancel_on_signal(stop.clone());
    run_worker(&settings, stop).await
}
