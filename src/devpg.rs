//! A throwaway PostgreSQL cluster from the local binaries: `trellis-api --dev` and the test
//! harness use it when `DATABASE_URL` is not set.
//!
//! The cluster lives in a temp dir and is removed when the handle drops. A small watchdog
//! process also stops it if this process dies without dropping the handle (`kill -9`).
//! As root, the server runs as the `postgres` user (initdb refuses root).

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum DevPgError {
    #[error(
        "no PostgreSQL server binaries found (looked at $TRELLIS_PG_BINDIR, `pg_config --bindir`, /usr/lib/postgresql/*/bin); install postgresql or set DATABASE_URL"
    )]
    NoBinaries,
    #[error("{step} failed: {detail}")]
    Step { step: &'static str, detail: String },
    #[error("PostgreSQL did not become ready within {0:?}")]
    Timeout(Duration),
}

#[derive(Debug)]
pub struct TempPostgres {
    dir: PathBuf,
    port: u16,
    server: Child,
    watchdog: Option<Child>,
    bindir: PathBuf,
    ident: Option<(u32, u32)>,
    settings: Vec<String>,
}

/// How [`TempPostgres::restart`] stops the server: PostgreSQL's shutdown modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// SIGINT: sessions are ended, a checkpoint is written, the server exits cleanly.
    Fast,
    /// SIGQUIT: every process quits at once; the next start runs crash recovery from the WAL.
    Immediate,
}

pub(crate) fn step_err(step: &'static str, detail: impl std::fmt::Display) -> DevPgError {
    DevPgError::Step {
        step,
        detail: detail.to_string(),
    }
}

/// Where `initdb` and `postgres` live.
pub fn find_bindir() -> Result<PathBuf, DevPgError> {
    let has_server = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    if let Ok(d) = std::env::var("TRELLIS_PG_BINDIR") {
        let d = PathBuf::from(d);
        if has_server(&d) {
            return Ok(d);
        }
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_server(&d) {
            return Ok(d);
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path().join("bin"))
                .collect()
        })
        .unwrap_or_default();
    versions.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    if let Some(d) = versions.into_iter().rev().find(|d| has_server(d)) {
        return Ok(d);
    }
    if let Ok(path) = std::env::var("PATH") {
        for d in std::env::split_paths(&path) {
            if has_server(&d) {
                return Ok(d);
            }
        }
    }
    Err(DevPgError::NoBinaries)
}

/// (uid, gid) of the `postgres` user when we are root, else None (run as ourselves).
pub(crate) fn server_identity() -> Result<Option<(u32, u32)>, DevPgError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = std::ffi::CString::new("postgres").expect("static name");
    // SAFETY: getpwnam returns a pointer into static storage or null; we copy out at once.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err(step_err(
            "finding the postgres user",
            "running as root needs a `postgres` user (initdb refuses root)",
        ));
    }
    // SAFETY: pw is non-null and points to a valid passwd record.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Ok(Some((uid, gid)))
}

pub(crate) fn as_server_user(cmd: &mut Command, ident: Option<(u32, u32)>) -> &mut Command {
    if let Some((uid, gid)) = ident {
        cmd.uid(uid).gid(gid);
    }
    cmd
}

pub(crate) fn free_port() -> Result<u16, DevPgError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| step_err("picking a port", e))?;
    Ok(l.local_addr()
        .map_err(|e| step_err("picking a port", e))?
        .port())
}

/// Start `postgres` over `dir/data` on `port`, listening on loopback only.
fn spawn_server(
    bindir: &Path,
    ident: Option<(u32, u32)>,
    dir: &Path,
    port: u16,
    settings: &[String],
) -> Result<Child, DevPgError> {
    as_server_user(&mut Command::new(bindir.join("postgres")), ident)
        .arg("-D")
        .arg(dir.join("data"))
        .args(["-p", &port.to_string(), "-k"])
        .arg(dir)
        .args([
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "max_connections=400",
            "-c",
            "log_min_messages=warning",
        ])
        .args(settings.iter().flat_map(|kv| ["-c", kv.as_str()]))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| step_err("starting postgres", e))
}

impl TempPostgres {
    /// initdb + start a server on a free loopback port; waits until it accepts connections.
    /// Tuned for tests: `fsync=off`.
    pub fn start() -> Result<Self, DevPgError> {
        Self::start_with(&[("fsync", "off"), ("full_page_writes", "off")])
    }

    /// Like [`TempPostgres::start`], with the given server settings (`-c name=value`); the
    /// benchmark uses durable commits (`fsync=on`, `synchronous_commit=on`).
    pub fn start_with(settings: &[(&str, &str)]) -> Result<Self, DevPgError> {
        let bindir = find_bindir()?;
        let ident = server_identity()?;
        let dir =
            std::env::temp_dir().join(format!("trellis-pg-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).map_err(|e| step_err("creating the data dir", e))?;
        if let Some((uid, gid)) = ident {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .map_err(|e| step_err("handing the data dir to postgres", e))?;
        }
        let data = dir.join("data");
        let out = as_server_user(&mut Command::new(bindir.join("initdb")), ident)
            .args(["-D"])
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| step_err("running initdb", e))?;
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(step_err("initdb", String::from_utf8_lossy(&out.stderr)));
        }
        let port = free_port()?;
        let settings: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let server = spawn_server(&bindir, ident, &dir, port, &settings)?;
        let mut pg = TempPostgres {
            dir,
            port,
            server,
            watchdog: None,
            bindir: bindir.clone(),
            ident,
            settings,
        };
        pg.watchdog = Some(pg.spawn_watchdog()?);
        pg.wait_ready(&bindir, Duration::from_secs(60))?;
        Ok(pg)
    }

    /// Stop the server in the given mode and start it again on the same port and data
    /// directory; returns once it accepts connections (after crash recovery, for
    /// [`Shutdown::Immediate`]). The chaos tests use it under load.
    pub fn restart(&mut self, mode: Shutdown) -> Result<(), DevPgError> {
        let sig = match mode {
            Shutdown::Fast => libc::SIGINT,
            Shutdown::Immediate => libc::SIGQUIT,
        };
        // SAFETY: plain kill(2) on our own child.
        unsafe {
            libc::kill(self.server.id() as libc::pid_t, sig);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(_)) = self.server.try_wait() {
                break;
            }
            if Instant::now() > deadline {
                let _ = self.server.kill();
                let _ = self.server.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        self.server = spawn_server(
            &self.bindir,
            self.ident,
            &self.dir,
            self.port,
            &self.settings,
        )?;
        self.watchdog = Some(self.spawn_watchdog()?);
        let bindir = self.bindir.clone();
        self.wait_ready(&bindir, Duration::from_secs(60))
    }

    /// Stops the server and removes its files if this process dies without dropping us.
    fn spawn_watchdog(&self) -> Result<Child, DevPgError> {
        spawn_watchdog(self.server.id(), "INT", &self.dir)
    }

    fn wait_ready(&mut self, bindir: &Path, limit: Duration) -> Result<(), DevPgError> {
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.server.try_wait() {
                return Err(step_err(
                    "postgres",
                    format!("exited during start-up: {status}"),
                ));
            }
            let ok = Command::new(bindir.join("pg_isready"))
                .args([
                    "-q",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    "postgres",
                ])
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ok {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(DevPgError::Timeout(limit));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory of the server's Unix socket (a pooler on this host connects through it).
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// Superuser URL of the `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

/// A shell that waits for this process to end, then sends `sig` (`INT`, `TERM`) to `pid`,
/// kills it after 10 s and removes `dir`: a server we started dies with us, even by `kill -9`.
pub(crate) fn spawn_watchdog(pid: u32, sig: &str, dir: &Path) -> Result<Child, DevPgError> {
    let script = format!(
        "while kill -0 {me} 2>/dev/null; do sleep 1; done; kill -{sig} {pid} 2>/dev/null; \
         i=0; while kill -0 {pid} 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; \
         kill -KILL {pid} 2>/dev/null; rm -rf '{dir}'",
        me = std::process::id(),
        dir = dir.display()
    );
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Own process group: a Ctrl-C aimed at us must not kill the watchdog first.
    cmd.process_group(0);
    cmd.spawn()
        .map_err(|e| step_err("starting the watchdog", e))
}

/// Send `sig` to `child`, give it `grace` to exit, then kill it; reaped either way.
pub fn stop_child(child: &mut Child, sig: i32, grace: Duration) {
    // SAFETY: plain kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, sig);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        stop_child(&mut self.server, libc::SIGINT, Duration::from_secs(10));
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
