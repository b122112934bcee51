//! Queues of other projects, run beside Trellis on the same server in the same run:
//! graphile-worker (npm, `bench/peers/graphile/peer.mjs`), with its defaults and with the
//! settings of its own performance test. apalis-postgres runs in-process (`Bench::apalis`).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::Bench;
use crate::sql::BenchSql;

/// graphile-worker's directory, its packages installed (`npm ci` the first time); None when
/// Node.js is not installed (the peer is skipped, and says so).
pub fn graphile() -> Result<Option<PathBuf>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/graphile");
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("      node is not installed: graphile-worker is not measured");
        return Ok(None);
    }
    if !dir.join("node_modules/graphile-worker").exists() {
        let ok = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&dir)
            .status()
            .context("running npm ci for graphile-worker")?
            .success();
        if !ok {
            bail!("npm ci failed in {}", dir.display());
        }
    }
    Ok(Some(dir))
}

/// Worker processes, stopped (SIGTERM, then kill) when dropped.
struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            trellis::devpg::stop_child(c, libc::SIGTERM, Duration::from_secs(10));
        }
    }
}

/// `jobs` no-op jobs queued first, then drained by `workers` graphile-worker processes in
/// `mode` (`default` or `batched`): jobs per second, from the first job done to an empty queue
/// (as Trellis's drain is timed from its first attempt: neither pays for its start-up).
pub async fn graphile_drain(
    b: &Bench,
    dir: &PathBuf,
    jobs: usize,
    workers: usize,
    mode: &str,
) -> Result<f64> {
    let (store, url) = b.fresh("graphile").await?;
    let added = Command::new("node")
        .args(["peer.mjs", "add", &url, &jobs.to_string()])
        .current_dir(dir)
        .status()
        .context("queueing graphile-worker jobs")?;
    if !added.success() {
        bail!("graphile-worker could not queue its jobs");
    }
    let start = Instant::now();
    let mut children = Workers(Vec::new());
    for _ in 0..workers {
        children.0.push(
            Command::new("node")
                .args(["peer.mjs", "work", &url, mode])
                .current_dir(dir)
                .stdout(Stdio::null())
                .spawn()
                .context("starting a graphile-worker process")?,
        );
    }
    let limit = Duration::from_secs(crate::env_usize("BENCH_DEPTH_LIMIT_SECS", 1800) as u64);
    let mut first: Option<(Instant, i64)> = None;
    loop {
        let left = store.graphile_left().await?;
        if first.is_none() && left < jobs as i64 {
            first = Some((Instant::now(), left));
        }
        if left == 0 {
            break;
        }
        if start.elapsed() > limit {
            bail!("graphile-worker {mode} did not drain {jobs} jobs in {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (from, left) = first.unwrap_or((start, jobs as i64));
    let rate = left as f64 / from.elapsed().as_secs_f64().max(1e-3);
    drop(children);
    store.pool().close().await;
    b.drop_db(&url).await;
    Ok(rate)
}
