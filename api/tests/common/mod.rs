//! The real `trellis-api --dev` as a child process: started with a throwaway PostgreSQL and
//! its output in files, stopped with SIGTERM.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
        let dir = std::env::temp_dir().join(format!("trellis-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (out_path, err_path) = (dir.join("stdout.log"), dir.join("stderr.log"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_trellis-api"))
            .arg("--dev")
            .current_dir(&dir)
            .env_remove("DATABASE_URL")
            .env_remove("APP_DATABASE__URL")
            .env("APP_SERVER__PORT", "0")
            .env("APP_WORKER__POLL_MS", "100")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .expect("start trellis-api --dev");
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
        let _ = std::fs::remove_dir_all(&self.dir);
        logs
    }
}
