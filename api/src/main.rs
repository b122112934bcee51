//! `trellis-api`: the HTTP API. `--dev` starts a throwaway PostgreSQL when `DATABASE_URL` is not
//! set and runs an in-process worker too.

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use trellis::api::{AppState, app};
use trellis::config::Settings;
use trellis::devpg::TempPostgres;
use trellis::store::Store;
use trellis::worker::{self, WorkerConfig};

const USAGE: &str = "usage: trellis-api [--dev]\n\n  --dev  start a throwaway PostgreSQL when DATABASE_URL is unset, and an in-process worker";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut dev = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--dev" => dev = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => anyhow::bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    trellis::init_tracing();
    let mut settings = Settings::load().context("loading configuration")?;

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
    let store = Store::open(&settings)
        .await
        .context("connecting to PostgreSQL and applying migrations")?;

    let addr = format!("{}:{}", settings.server.host, settings.server.port);
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let local = listener.local_addr()?;
    println!(
        "listening on http://{}:{}",
        settings.server.host,
        local.port()
    );

    let shutdown = CancellationToken::new();
    let worker_task = dev.then(|| {
        let cfg = WorkerConfig::from_settings(&settings);
        tokio::spawn(worker::run(store.clone(), cfg, shutdown.clone()))
    });

    let router = app(AppState::new(store.clone(), settings));
    let stop = shutdown.clone();
    let server = axum::serve(listener, router).with_graceful_shutdown(async move {
        tokio::select! {
            _ = trellis::shutdown_signal() => {}
            _ = stop.cancelled() => {}
        }
    });
    let served = server.await.context("serving HTTP");
    shutdown.cancel();
    if let Some(w) = worker_task {
        w.await
            .context("worker task")?
            .context("in-process worker")?;
    }
    store.pool().close().await;
    served
}
