//! Real `trellis-worker` processes for the crash and chaos tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use trellis::store::Store;
use trellis::testkit::TestDb;
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
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_trellis-worker"));
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
