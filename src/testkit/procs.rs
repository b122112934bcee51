//! Real processes for the tests that need them: `trellis-worker` (crash, chaos, fleet, the
//! breaker) and `trellis-api --dev` ([`DevApi`]).

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::store::Store;
use crate::testkit::TestDb;
use uuid::Uuid;

/// A worker process, killed on drop if still running.
pub struct WorkerProc {
    pub id: Uuid,
    pub child: Child,
    cwd: PathBuf,
}

impl WorkerProc {
    pub fn start(db: &TestDb, extra: &[(&str, &str)]) -> Self {
        let id = Uuid::now_v7();
        // an empty working directory: no config.toml from elsewhere
        let cwd = std::env::temp_dir().join(format!("trellis-worker-{id}"));
        std::fs::create_dir_all(&cwd).unwrap();
        let mut cmd = Command::new(bin("trellis-worker"));
        cmd.current_dir(&cwd)
            .env("DATABASE_URL", &db.url)
            .env("APP_WORKER__ID", id.to_string())
            .env("APP_WORKER__LEASE_SECS", "2")
            .env("APP_WORKER__POLL_MS", "100")
            .env("APP_WORKER__RESCUE_INTERVAL_MS", "200")
            .env("APP_WORKER__CONCURRENCY", "8")
            .env("APP_TOOLS__ALLOW_CIDRS", "127.0.0.1/32")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        for (k, v) in extra {
            cmd.env(k, v);
        }
        Self {
            id,
            child: cmd.spawn().expect("start trellis-worker"),
            cwd,
        }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child process.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }

    /// Wait for exit (polling the child), returning its status.
    pub async fn wait_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let child = &mut self.child;
        let start = std::time::Instant::now();
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return s;
            }
            assert!(
                start.elapsed() < limit,
                "worker did not exit within {limit:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.cwd);
    }
}

/// Tasks in a terminal status.
pub async fn terminal_tasks(store: &Store) -> i64 {
    let mut n = 0;
    for s in ["succeeded", "failed", "cancelled", "needs_intervention"] {
        n += store.count_tasks(s).await.unwrap();
    }
    n
}

/// A binary of the workspace, built by the `cargo test` that runs this test: it sits in the
/// target directory, beside the `deps/` folder holding the test executable.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built (run the tests with cargo test)",
        path.display()
    );
    path
}

/// The file in a [`DevApi`]'s directory where its answers that differ from the OpenAPI
/// document are written (`[debug] check_answers_file`).
const ANSWERS: &str = "answers-that-differ.txt";

pub struct DevApi {
    child: Child,
    /// `http://127.0.0.1:PORT`, from its "listening on" line.
    pub base: String,
    dir: PathBuf,
}

impl DevApi {
    /// Start `trellis-api --dev` (a free port, polling every 100 ms, no `DATABASE_URL`) with
    /// `env` added, in a fresh directory named after `tag`; returns once it listens.
    pub async fn start(tag: &str, env: &[(&str, &str)]) -> Self {
        Self::start_args(tag, &["--dev"], env).await
    }

    /// Start `trellis-api ARGS` the same way (`env` may set `DATABASE_URL` again).
    pub async fn start_args(tag: &str, args: &[&str], env: &[(&str, &str)]) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "trellis-{tag}-{}-{}",
            std::process::id(),
            Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let (out_path, err_path) = (dir.join("stdout.log"), dir.join("stderr.log"));
        let mut child = Command::new(bin("trellis-api"))
            .args(args)
            .current_dir(&dir)
            .env_remove("DATABASE_URL")
            .env_remove("APP_DATABASE__URL")
            .env("APP_SERVER__PORT", "0")
            .env("APP_WORKER__POLL_MS", "100")
            .env("APP_DEBUG__CHECK_ANSWERS_FILE", dir.join(ANSWERS))
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .expect("start trellis-api");
        let start = Instant::now();
        let base = loop {
            let out = std::fs::read_to_string(&out_path).unwrap_or_default();
            if let Some(line) = out.lines().find(|l| l.starts_with("listening on ")) {
                break line.trim_start_matches("listening on ").to_string();
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "trellis-api exited: {}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no listening line"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        Self { child, base, dir }
    }

    /// SIGTERM, wait (at most 30 s) for the exit; returns what it printed (stdout, then
    /// stderr) and removes its directory.
    pub async fn stop(mut self) -> String {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "api did not exit"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut logs = String::new();
        for name in ["stdout.log", "stderr.log"] {
            std::fs::File::open(self.dir.join(name))
                .unwrap()
                .read_to_string(&mut logs)
                .unwrap();
        }
        // the directory goes, and the answers are checked, on drop
        logs
    }
}

/// An API a test did not stop (it failed, or it only needed the API while it ran) dies with
/// the test: it would otherwise outlive the test binary, listening. Then the answers it wrote
/// as differing from its OpenAPI document fail the test.
impl Drop for DevApi {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let differ = std::fs::read_to_string(self.dir.join(ANSWERS)).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&self.dir);
        if !differ.is_empty() && !std::thread::panicking() {
            panic!("trellis-api gave answers that differ from its OpenAPI document:\n{differ}");
        }
    }
}

/// Run `tests/dashboard/<script>` (node, npm `playwright-core`, Debian's chromium) against
/// `app`: with `DASHBOARD_URL`, `ADMIN_KEY`, `ARTIFACTS` (target/dashboard-artifacts, made
/// here) and `env`. Asserts that it passed; returns what it printed.
pub async fn browser_script(
    app: &crate::testkit::TestApp,
    script: &str,
    env: &[(&str, String)],
) -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    assert!(
        std::path::Path::new(&format!(
            "{root}/tests/dashboard/node_modules/playwright-core"
        ))
        .exists(),
        "playwright-core is not installed: run `npm install --prefix tests/dashboard` (.ci/run does)"
    );
    let artifacts = format!("{root}/target/dashboard-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(format!("{root}/tests/dashboard/{script}"))
        .env("DASHBOARD_URL", app.url("/"))
        .env("ADMIN_KEY", crate::testkit::ADMIN_KEY)
        .env("ARTIFACTS", &artifacts)
        .env("NO_PROXY", "127.0.0.1")
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().await.expect("node runs (install nodejs)");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the browser run failed:\n{log}");
    log
}
