//! A throwaway PgBouncer (Debian's `pgbouncer` package) in front of a PostgreSQL server on
//! loopback: the pooler tests and `trellis-bench --fleet` run Trellis through it.
//!
//! Every database of the server is reachable under its own name (`* = …`), as the `postgres`
//! role without a password (`auth_type = trust`). As root it runs as the `postgres` user
//! (PgBouncer refuses root). Stopped, and its files removed, when the handle drops; a small
//! watchdog stops it too if this process dies first.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::devpg::{
    DevPgError, as_server_user, free_port, server_identity, spawn_watchdog, step_err, stop_child,
};

/// How the pooler is set up.
#[derive(Debug, Clone)]
pub struct BouncerConfig {
    /// `pool_mode`: `transaction` or `session`.
    pub pool_mode: &'static str,
    /// Server connections per database (`default_pool_size`, and `max_db_connections`).
    pub server_connections: u32,
    /// `max_client_conn`.
    pub max_clients: u32,
    /// Reach the server through its Unix socket in this directory (as a pooler on the
    /// database's host does) instead of `127.0.0.1`.
    pub socket_dir: Option<PathBuf>,
}

impl Default for BouncerConfig {
    fn default() -> Self {
        Self {
            pool_mode: "transaction",
            server_connections: 20,
            max_clients: 2000,
            socket_dir: None,
        }
    }
}

#[derive(Debug)]
pub struct TempBouncer {
    dir: PathBuf,
    port: u16,
    child: Child,
    watchdog: Child,
}

/// Where `pgbouncer` is: `$TRELLIS_PGBOUNCER`, Debian's `/usr/sbin/pgbouncer`, or `PATH`.
pub fn find_pgbouncer() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::env::var_os("TRELLIS_PGBOUNCER")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    candidates.push(PathBuf::from("/usr/sbin/pgbouncer"));
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("pgbouncer")));
    }
    candidates.into_iter().find(|p| p.is_file())
}

impl TempBouncer {
    /// Start PgBouncer on a free loopback port in front of the server on `127.0.0.1:pg_port`;
    /// returns once it accepts connections.
    pub fn start(pg_port: u16, c: &BouncerConfig) -> Result<Self, DevPgError> {
        let exe = find_pgbouncer().ok_or_else(|| {
            step_err(
                "finding pgbouncer",
                "not installed (apt-get install pgbouncer)",
            )
        })?;
        let ident = server_identity()?;
        let dir = std::env::temp_dir().join(format!(
            "trellis-pgbouncer-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| step_err("creating its dir", e))?;
        let port = free_port()?;
        let host = c
            .socket_dir
            .as_ref()
            .map_or("127.0.0.1".to_string(), |d| d.display().to_string());
        let ini = format!(
            "[databases]\n* = host={host} port={pg_port}\n\n[pgbouncer]\n\
             listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = {dir}/users.txt\nadmin_users = postgres\n\
             pool_mode = {mode}\ndefault_pool_size = {n}\nmax_db_connections = {n}\n\
             max_client_conn = {clients}\nlogfile = {dir}/pgbouncer.log\n\
             pidfile = {dir}/pgbouncer.pid\nlog_connections = 0\nlog_disconnections = 0\n",
            dir = dir.display(),
            mode = c.pool_mode,
            n = c.server_connections,
            clients = c.max_clients,
        );
        std::fs::write(dir.join("pgbouncer.ini"), ini).map_err(|e| step_err("writing", e))?;
        std::fs::write(dir.join("users.txt"), "\"postgres\" \"\"\n")
            .map_err(|e| step_err("writing", e))?;
        if let Some((uid, gid)) = ident {
            for f in ["", "pgbouncer.ini", "users.txt"] {
                std::os::unix::fs::chown(dir.join(f), Some(uid), Some(gid))
                    .map_err(|e| step_err("handing its files to postgres", e))?;
            }
        }
        let child = as_server_user(&mut Command::new(exe), ident)
            .arg(dir.join("pgbouncer.ini"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| step_err("starting pgbouncer", e))?;
        let watchdog = spawn_watchdog(child.id(), "TERM", &dir)?;
        let mut b = Self {
            dir,
            port,
            child,
            watchdog,
        };
        b.wait_ready(Duration::from_secs(30))?;
        Ok(b)
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), DevPgError> {
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log =
                    std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default();
                return Err(step_err("pgbouncer", format!("exited: {status}\n{log}")));
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(DevPgError::Timeout(limit));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of database `db` through the pooler.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// What PgBouncer logged (errors and warnings).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }
}

impl Drop for TempBouncer {
    fn drop(&mut self) {
        // SIGTERM: PgBouncer's immediate shutdown
        stop_child(&mut self.child, libc::SIGTERM, Duration::from_secs(5));
        let _ = self.watchdog.kill();
        let _ = self.watchdog.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
