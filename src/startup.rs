//! The application as the binaries and the test harness build it: connect and migrate, bind the
//! listener, serve the router, run an in-process worker when asked, and stop cleanly.
//!
//! `trellis-api` and `trellis-worker` are thin `main`s over this module, and `tests/common`
//! builds its test server with [`Application::build_with_store`], so the tests run the very
//! wiring production runs.

use std::net::SocketAddr;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api::{AppState, app};
use crate::config::Settings;
use crate::store::{Store, StoreError};
use crate::worker::{self, WorkerConfig};

/// Connect with the configured URL and session limits and a pool of `max_connections`, then
/// apply migrations (`[database] migrate`, the default) or check that none is missing: what
/// every process does at start. `application_name` names the sessions in `pg_stat_activity`.
pub async fn open_store(
    settings: &Settings,
    max_connections: u32,
    application_name: &str,
) -> Result<Store, StoreError> {
    let store = connect_store(settings, max_connections, application_name).await?;
    if settings.database.migrate {
        store.migrate().await?;
    } else {
        store.check_schema().await?;
    }
    // the configured price map (checked at start: a bad time never gets here)
    for p in &settings.llm.prices {
        store
            .put_price(&crate::store::cost::NewPrice {
                model: p.model.clone(),
                valid_from: p.valid_from().ok(),
                input_per_mtok: p.input_per_mtok,
                output_per_mtok: p.output_per_mtok,
                cached_input_per_mtok: p.cached_input_per_mtok,
            })
            .await?;
    }
    Ok(store)
}

/// `trellis-api migrate`: apply the migrations (over the direct URL behind a transaction
/// pooler) and return how many this binary knows, all applied.
pub async fn migrate_only(settings: &Settings) -> Result<usize, StoreError> {
    let store = connect_store(settings, 1, "trellis-migrate").await?;
    store.migrate().await?;
    store.check_schema().await?;
    store.pool().close().await;
    Ok(crate::store::MIGRATOR.iter().count())
}

async fn connect_store(
    settings: &Settings,
    max_connections: u32,
    application_name: &str,
) -> Result<Store, StoreError> {
    let url = settings
        .database_url()
        .map_err(|e| StoreError::Rejected(e.to_string()))?;
    let name = settings.database.application_name.as_deref();
    let pool = crate::store::PoolConfig {
        application_name: Some(name.unwrap_or(application_name).to_string()),
        ..settings.database.pool_config(max_connections)
    };
    Store::connect_with(url, &pool).await
}

/// A bound API server (and, in `--dev`, an in-process worker) ready to run.
pub struct Application {
    store: Store,
    settings: Settings,
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    with_worker: bool,
}

impl Application {
    /// Open the store from `settings` and bind `[server] host:port` (port 0 = any free port).
    pub async fn build(settings: Settings, with_worker: bool) -> anyhow::Result<Self> {
        use anyhow::Context;
        let d = &settings.database;
        let mut pool = d.api_pool_size();
        if with_worker {
            pool += d.worker_pool_size();
        }
        let store = open_store(&settings, pool, "trellis-api")
            .await
            .context("connecting to PostgreSQL and applying migrations")?;
        Self::build_with_store(store, settings, with_worker).await
    }

    /// Bind `[server] host:port` over an open, migrated store.
    pub async fn build_with_store(
        store: Store,
        settings: Settings,
        with_worker: bool,
    ) -> anyhow::Result<Self> {
        use anyhow::Context;
        let store = store
            .with_default_weight(settings.fairness.default_weight)
            .with_tenant_caps(settings.tenants.caps())
            .with_default_max_running(settings.fairness.default_max_running as i32);
        check_auth(&store, &settings).await?;
        let bind = format!("{}:{}", settings.server.host, settings.server.port);
        let listener = tokio::net::TcpListener::bind(&bind)
            .await
            .with_context(|| format!("binding {bind}"))?;
        let addr = listener.local_addr()?;
        Ok(Self {
            store,
            settings,
            listener,
            addr,
            with_worker,
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Serve until `stop` is cancelled (then drain the in-process worker, if any).
    pub async fn run_until_stopped(self, stop: CancellationToken) -> anyhow::Result<()> {
        self.run_until_stopped_with(stop, |r| r).await
    }

    /// [`Application::run_until_stopped`] with the router wrapped first (the test harness
    /// checks every answer against the OpenAPI document this way).
    pub async fn run_until_stopped_with(
        self,
        stop: CancellationToken,
        wrap: impl FnOnce(axum::Router) -> axum::Router,
    ) -> anyhow::Result<()> {
        use anyhow::Context;
        let worker_task: Option<JoinHandle<Result<(), StoreError>>> = self.with_worker.then(|| {
            let cfg = WorkerConfig::from_settings(&self.settings);
            tokio::spawn(worker::run(self.store.clone(), cfg, stop.clone()))
        });
        let check = self
            .settings
            .debug
            .check_answers_file
            .clone()
            .map(|f| crate::api::answers::AnswerCheck::with_file(Some(f)));
        let mut router = app(AppState::new(self.store.clone(), self.settings));
        if let Some(check) = check {
            router = router.layer(axum::middleware::from_fn_with_state(
                check,
                crate::api::answers::check_answer,
            ));
        }
        let router = wrap(router);
        let shutdown = stop.clone();
        let served = axum::serve(self.listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await
            .context("serving HTTP");
        stop.cancel();
        if let Some(w) = worker_task {
            w.await
                .context("worker task")?
                .context("in-process worker")?;
        }
        served
    }
}

/// Refuse to serve when no caller could ever authenticate: access control on, no bootstrap
/// key, no live stored key. With access control off, say so loudly.
async fn check_auth(store: &Store, settings: &Settings) -> anyhow::Result<()> {
    use anyhow::Context;
    let a = &settings.auth;
    if a.disabled {
        tracing::warn!(
            "access control is OFF ([auth] disabled): anyone who reaches this port can submit, cancel and change tools"
        );
        return Ok(());
    }
    if a.bootstrap_admin_key.is_some() {
        return Ok(());
    }
    let any = store.any_live_key().await.context("looking for API keys")?;
    anyhow::ensure!(
        any,
        "no API key can exist: set [auth] bootstrap_admin_key (APP_AUTH__BOOTSTRAP_ADMIN_KEY) to an admin key of at least 16 characters, \
         or run without access control with [auth] disabled = true (APP_AUTH__DISABLED=true)"
    );
    Ok(())
}

/// Run a worker over `settings` until `stop` is cancelled; what `trellis-worker` does.
pub async fn run_worker(settings: &Settings, stop: CancellationToken) -> anyhow::Result<()> {
    use anyhow::Context;
    let pool = settings.database.worker_pool_size();
    let store = open_store(settings, pool, "trellis-worker")
        .await
        .context("connecting to PostgreSQL and applying migrations")?
        .with_default_weight(settings.fairness.default_weight)
        .with_tenant_caps(settings.tenants.caps())
        .with_default_max_running(settings.fairness.default_max_running as i32);
    let cfg = WorkerConfig::from_settings(settings);
    crate::telemetry::notice(&format!("worker {} started", cfg.id));
    let w = &settings.worker;
    if w.metrics_port != 0 {
        let addr: std::net::SocketAddr = format!("{}:{}", w.metrics_host, w.metrics_port)
            .parse()
            .context("worker.metrics_host must be an IP address")?;
        let bound = crate::metrics::serve(addr, store.clone(), stop.clone())
            .await
            .with_context(|| format!("serving metrics on {addr}"))?;
        crate::telemetry::notice(&format!("metrics on http://{bound}/metrics"));
    }
    worker::run(store.clone(), cfg, stop)
        .await
        .context("worker")?;
    store.pool().close().await;
    Ok(())
}

/// Cancel `stop` when the process gets SIGTERM or SIGINT. The handlers are installed before
/// this returns, so a signal that comes right after (a supervisor stopping a process that has
/// just said it listens) stops it cleanly instead of killing it.
pub fn cancel_on_signal(stop: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("install SIGINT handler");
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        stop.cancel();
    });
}
