//! `trellis-api`: the HTTP API. `--dev` starts a throwaway PostgreSQL when `DATABASE_URL` is not
//! set and runs an in-process worker too.

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use trellis::config::Settings;
use trellis::devpg::TempPostgres;
use trellis::startup::{Application, cancel_on_signal};

const USAGE: &str = "usage: trellis-api [--dev [--no-worker]]\n       trellis-api migrate\n\n  migrate      apply the database migrations and exit (0 when the schema is current); behind\n               a transaction pooler they go over [database] listen_url, the direct URL\n  --dev        start a throwaway PostgreSQL when DATABASE_URL is unset, and an in-process\n               worker; without a configured key, no access control; tools may reach\n               loopback unless [tools] allow_cidrs is set\n  --no-worker  with --dev: no in-process worker (run trellis-worker processes, or only\n               exercise the API: nothing submitted is executed)";

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
    let mut dev = false;
    let mut no_worker = false;
    let mut migrate = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "migrate" => migrate = true,
            "--dev" => dev = true,
            "--no-worker" => no_worker = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => anyhow::bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    anyhow::ensure!(
        !no_worker || dev,
        "--no-worker only applies to --dev\n{USAGE}"
    );
    anyhow::ensure!(!(migrate && dev), "migrate takes no --dev\n{USAGE}");
    let mut settings = Settings::load().context("loading configuration")?;
    if migrate {
        let _telemetry = trellis::telemetry::init(&settings.log, "trellis-api")
            .context("starting the span export")?;
        let n = trellis::startup::migrate_only(&settings)
            .await
            .context("applying migrations")?;
        trellis::telemetry::notice(&format!("schema current: {n} migrations applied"));
        return Ok(());
    }
    let _telemetry = trellis::telemetry::init(&settings.log, "trellis-api")
        .context("starting the span export")?;
    if dev {
        dev_defaults(&mut settings);
    }

    let mut _dev_pg = None;
    if dev && settings.database.url.is_none() {
        let pg = tokio::task::spawn_blocking(TempPostgres::start)
            .await?
            .context("starting a throwaway PostgreSQL (--dev)")?;
        tracing::info!(
            port = pg.port(),
            "throwaway PostgreSQL started; its data is removed on exit"
        );
        settings.database.url = Some(pg.url());
        _dev_pg = Some(pg);
    }
    let host = settings.server.host.clone();
    let application = Application::build(settings, dev && !no_worker).await?;
    // before the notice: whoever reads it may stop the process at once
    let stop = CancellationToken::new();
    cancel_on_signal(stop.clone());
    trellis::telemetry::notice(&format!(
        "listening on http://{}:{}",
        host,
        application.port()
    ));
    let store = application.store().clone();
    let served = application.run_until_stopped(stop).await;
    store.pool().close().await;
    served
}

/// `--dev` is the one-command demo on a laptop: without a configured key it runs without
/// access control (and says so first), and its tools may call services on this machine.
fn dev_defaults(settings: &mut Settings) {
    if settings.auth.bootstrap_admin_key.is_none() && !settings.auth.disabled {
        trellis::telemetry::notice(
            "--dev: no API key configured, so access control is OFF (set APP_AUTH__BOOTSTRAP_ADMIN_KEY to turn it on)",
        );
        settings.auth.disabled = true;
    }
    if settings.tools.allow_cidrs.is_none() {
        settings.tools.allow_cidrs = Some(vec![
            "127.0.0.0/8".parse().expect("a CIDR"),
            "::1/128".parse().expect("a CIDR"),
        ]);
    }
}
