//! The soak (`--soak DURATION`, the proofs issue): the API and two workers as an operator runs
//! them (the shipped defaults, `[retention] finished_task_ttl_secs` = 600), fed through the API
//! at half their capacity with a mix of DAGs: 10 % of the steps fail at first, approvals that
//! the bench grants, a schedule, webhooks to a receiver on loopback. A worker is restarted
//! (SIGTERM, then started again) every 5 minutes.
//!
//! Every 10 minutes it reports p99 submit → finish (database clock), the tables' and indexes'
//! bytes, the most dead tuples seen, each process's RSS and its server sessions. It fails when
//! any of them rose after the first half of the run: the second half's largest value above
//! the first half's by more than 10 % (and a small absolute slack), or a figure that rose
//! window after window through the second half and ended more than 3 % higher; or when a
//! submitted task never ended, or an answer was a 5xx.
//!
//! `BENCH_SOAK_RATE` (tasks/s) skips measuring the capacity; `BENCH_SOAK_WINDOW_SECS`,
//! `BENCH_SOAK_RESTART_SECS` and `BENCH_SOAK_RETENTION_SECS` shrink the run for a quick look.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::fleet::{Client, Procs, api_base, db_name};
use crate::sql::BenchSql;
use crate::{Bench, env_usize, percentile};

/// `2h`, `90m`, `600s` or seconds.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = n.parse().with_context(|| format!("a duration: {s}"))?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => bail!("a duration is N, Ns, Nm or Nh: {s}"),
    };
    Ok(Duration::from_secs(secs))
}

/// The mix: task `i` of every 10 (28 steps in 10 tasks, 3 of them failing at first).
fn mix(i: usize, hook: &str) -> Value {
    let steps = match i % 10 {
        6 => json!([
            {"id": "a", "tool": "flaky", "parameters": {"fail_times": 1, "i": i}},
            {"id": "b", "tool": "echo", "dependencies": ["a"]}]),
        7 => json!([
            {"id": "a", "tool": "echo", "parameters": {"i": i}},
            {"id": "b", "tool": "flaky", "dependencies": ["a"], "parameters": {"fail_times": 2}}]),
        8 => json!([
            {"id": "a", "tool": "echo", "parameters": {"i": i}},
            {"id": "ok", "tool": "approval", "dependencies": ["a"], "parameters": {"prompt": "go?"}},
            {"id": "b", "tool": "echo", "dependencies": ["ok"], "parameters": {"from": "${a.output.i}"}}]),
        9 => json!([
            {"id": "a", "tool": "flaky", "parameters": {"fail_times": 1}},
            {"id": "b", "tool": "sleep", "parameters": {"ms": 50}},
            {"id": "c", "tool": "echo", "dependencies": ["a", "b"]}]),
        _ => json!([
            {"id": "a", "tool": "echo", "parameters": {"i": i}},
            {"id": "b", "tool": "sleep", "dependencies": ["a"], "parameters": {"ms": 100}},
            {"id": "c", "tool": "echo", "dependencies": ["b"], "parameters": {"from": "${a.output.i}"}}]),
    };
    let mut body = json!({"description": format!("soak {i}"), "plan": {"steps": steps}});
    if i.is_multiple_of(5) {
        body["webhook"] = json!(hook);
    }
    body
}

/// What the driver shares with its helpers.
struct Shared {
    /// Submitted, not yet seen finished.
    pending: Mutex<HashSet<Uuid>>,
    /// Submit → finish of the tasks seen finished in the current window, ms.
    latencies: Mutex<Vec<f64>>,
    approved: AtomicUsize,
}

/// The processes: the API, and the worker slots (restarted in turn).
struct Fleet {
    env: Vec<(&'static str, String)>,
    api: Procs,
    workers: Vec<Procs>,
}

impl Fleet {
    fn env_for(&self, name: &str) -> Vec<(&'static str, String)> {
        let mut env = self.env.clone();
        env.push(("APP_DATABASE__APPLICATION_NAME", name.to_string()));
        env
    }

    fn start_worker(&self, slot: usize) -> Result<Procs> {
        Procs::start(
            "--as-shipped-worker",
            1,
            &self.env_for(&format!("soak-worker-{slot}")),
        )
    }

    /// Each process's name and pid.
    /// Stop the workers, then the API (each SIGTERM, then waited for).
    async fn stop(self) -> Result<()> {
        let Fleet { api, workers, .. } = self;
        tokio::task::spawn_blocking(move || {
            for w in workers {
                w.stop();
            }
            api.stop();
        })
        .await?;
        Ok(())
    }

    fn pids(&self) -> Vec<(String, u32)> {
        let mut out = vec![("soak-api".to_string(), self.api.pids()[0])];
        for (slot, w) in self.workers.iter().enumerate() {
            out.push((format!("soak-worker-{slot}"), w.pids()[0]));
        }
        out
    }
}

/// Resident memory of a process, MB.
fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// One window's figures.
#[derive(Debug, Clone, Default)]
struct Window {
    end_min: f64,
    finished: usize,
    p50_ms: f64,
    p99_ms: f64,
    table_mb: f64,
    index_mb: f64,
    dead_max: i64,
    tasks_rows: i64,
    /// per process name: the largest RSS (MB) and sessions sampled in the window
    rss: HashMap<String, f64>,
    sessions: HashMap<String, i64>,
}

/// Run the soak for `duration`; `Ok(false)` when a figure rose or a task was lost.
pub async fn run(b: &Bench, duration: Duration) -> Result<bool> {
    let window = Duration::from_secs(env_usize("BENCH_SOAK_WINDOW_SECS", 600) as u64);
    let restart_every = Duration::from_secs(env_usize("BENCH_SOAK_RESTART_SECS", 300) as u64);
    let retention = env_usize("BENCH_SOAK_RETENTION_SECS", 600);
    let received = Arc::new(AtomicUsize::new(0));
    let hook = format!(
        "http://{}/",
        crate::waits::receiver(received.clone()).await?
    );

    let rate = match std::env::var("BENCH_SOAK_RATE")
        .ok()
        .and_then(|r| r.parse::<f64>().ok())
    {
        Some(r) => r,
        None => {
            let capacity = capacity(b, &hook, retention).await?;
            eprintln!("      capacity {capacity:.0} tasks/s; offering half");
            capacity / 2.0
        }
    };

    let (store, url) = b.fresh("soak").await?;
    let mut fleet = start(&url, retention).await?;
    let c = Arc::new(Client::new(format!(
        "{}/api/v1",
        api_base(&mut fleet.api).await?
    )));
    c.call(
        reqwest::Method::POST,
        "/schedules",
        Some(
            json!({"id": "soak-tick", "cron": "*/10 * * * * *", "description": "soak tick",
                    "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
        ),
    )
    .await?;
    let shared = Arc::new(Shared {
        pending: Mutex::new(HashSet::new()),
        latencies: Mutex::new(Vec::new()),
        approved: AtomicUsize::new(0),
    });
    let stop = tokio_util::sync::CancellationToken::new();
    let helpers = vec![
        tokio::spawn(approver(c.clone(), shared.clone(), stop.clone())),
        tokio::spawn(watcher(store.clone(), shared.clone(), stop.clone())),
    ];
    eprintln!(
        "      soak: {rate:.0} tasks/s for {} s, windows of {} s, a worker restarted every {} s, retention {retention} s",
        duration.as_secs(),
        window.as_secs(),
        restart_every.as_secs()
    );
    println!(
        "| min | tasks ended | p50 ms | p99 ms | tables MB | indexes MB | dead tuples (max) | task rows | RSS MB api / workers | sessions api / workers |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");

    let db = db_name(&url);
    let admin = b.admin_store().await?;
    let start_at = Instant::now();
    let mut submitted = 0usize;
    let mut windows: Vec<Window> = Vec::new();
    let mut cur = Window::default();
    let mut next_sample = Instant::now();
    let mut next_restart = start_at + restart_every;
    let mut next_window = start_at + window;
    let mut restarts = 0usize;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    while start_at.elapsed() < duration {
        tick.tick().await;
        // the offered load: what is due by now, in batches of at most 1,000
        let due = (rate * start_at.elapsed().as_secs_f64()) as usize;
        while submitted < due {
            let n = (due - submitted).min(1000);
            let bodies: Vec<Value> = (submitted..submitted + n).map(|i| mix(i, &hook)).collect();
            let got = c
                .call(
                    reqwest::Method::POST,
                    "/tasks/batch",
                    Some(json!({ "tasks": bodies })),
                )
                .await?;
            let mut p = shared.pending.lock().expect("pending");
            for t in got["tasks"].as_array().into_iter().flatten() {
                if let Some(id) = t["task_id"].as_str().and_then(|s| s.parse().ok()) {
                    p.insert(id);
                }
            }
            submitted += n;
        }
        if Instant::now() >= next_restart {
            let slot = restarts % fleet.workers.len();
            let new = fleet.start_worker(slot)?;
            let old = std::mem::replace(&mut fleet.workers[slot], new);
            tokio::task::spawn_blocking(move || old.stop());
            restarts += 1;
            next_restart += restart_every;
        }
        if Instant::now() >= next_sample {
            sample(&store, &admin, &db, &fleet, &mut cur).await?;
            next_sample += Duration::from_secs(15);
        }
        if Instant::now() >= next_window {
            sample(&store, &admin, &db, &fleet, &mut cur).await?;
            let mut l = std::mem::take(&mut *shared.latencies.lock().expect("latencies"));
            cur.end_min = start_at.elapsed().as_secs_f64() / 60.0;
            cur.finished = l.len();
            cur.p50_ms = percentile(&mut l, 50.0);
            cur.p99_ms = percentile(&mut l, 99.0);
            print_window(&cur);
            windows.push(std::mem::take(&mut cur));
            next_window += window;
        }
    }

    // the end: nothing more offered; every submitted task must end
    c.call(reqwest::Method::DELETE, "/schedules/soak-tick", None)
        .await?;
    let drain = Instant::now();
    while !shared.pending.lock().expect("pending").is_empty()
        && drain.elapsed() < Duration::from_secs(600)
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    stop.cancel();
    for h in helpers {
        h.await??;
    }
    let lost = shared.pending.lock().expect("pending").len();
    let (requests, fives) = c.counts();
    fleet.stop().await?;
    drop(store);
    b.drop_db(&url).await;

    println!(
        "{submitted} tasks submitted, {lost} never ended; {} approvals granted, {} webhook deliveries received; {restarts} worker restarts; {requests} requests, {fives} answered 5xx",
        shared.approved.load(Ordering::Relaxed),
        received.load(Ordering::Relaxed)
    );
    let rose = verdict(&windows);
    for r in &rose {
        println!("ROSE: {r}");
    }
    Ok(rose.is_empty() && lost == 0 && fives == 0)
}

/// The API and two workers on `url`, at the shipped defaults but for the retention window.
async fn start(url: &str, retention: usize) -> Result<Fleet> {
    let env = vec![
        ("DATABASE_URL", url.to_string()),
        ("APP_AUTH__DISABLED", "true".into()),
        ("APP_SERVER__PORT", "0".into()),
        ("APP_TOOLS__ALLOW_CIDRS", "127.0.0.1/32".into()),
        (
            "APP_WEBHOOKS__SIGNING_SECRET",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
        ),
        (
            "APP_RETENTION__FINISHED_TASK_TTL_SECS",
            retention.to_string(),
        ),
    ];
    let mut env_api = env.clone();
    env_api.push(("APP_DATABASE__APPLICATION_NAME", "soak-api".into()));
    let api = Procs::start("--as-shipped-api", 1, &env_api)?;
    let mut fleet = Fleet {
        env,
        api,
        workers: Vec::new(),
    };
    for slot in 0..2 {
        let w = fleet.start_worker(slot)?;
        fleet.workers.push(w);
    }
    Ok(fleet)
}

/// Capacity: 20,000 tasks of the mix submitted at once through the API of a fresh fleet; the
/// rate at which the middle 80 % of them ended (database clock), so that the tail of the last
/// retries and approvals does not count as a slow drain.
async fn capacity(b: &Bench, hook: &str, retention: usize) -> Result<f64> {
    let (store, url) = b.fresh("soak_capacity").await?;
    let mut fleet = start(&url, retention).await?;
    let c = Arc::new(Client::new(format!(
        "{}/api/v1",
        api_base(&mut fleet.api).await?
    )));
    let shared = Arc::new(Shared {
        pending: Mutex::new(HashSet::new()),
        latencies: Mutex::new(Vec::new()),
        approved: AtomicUsize::new(0),
    });
    let stop = tokio_util::sync::CancellationToken::new();
    let approver = tokio::spawn(approver(c.clone(), shared.clone(), stop.clone()));
    let n = env_usize("BENCH_SOAK_CAPACITY_TASKS", 20_000);
    let began = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let bodies: Vec<Value> = chunk.iter().map(|i| mix(*i, hook)).collect();
        c.call(
            reqwest::Method::POST,
            "/tasks/batch",
            Some(json!({ "tasks": bodies })),
        )
        .await?;
    }
    while store.any_unfinished().await? {
        if began.elapsed() > Duration::from_secs(900) {
            bail!("the capacity run did not end in 15 minutes");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let epoch = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    let mut ends: Vec<f64> = store
        .finished_since(epoch)
        .await?
        .into_iter()
        .map(|(_, _, at)| (at - epoch).num_microseconds().unwrap_or(0) as f64 / 1e6)
        .collect();
    let (t10, t90) = (percentile(&mut ends, 10.0), percentile(&mut ends, 90.0));
    let secs = began.elapsed().as_secs_f64();
    stop.cancel();
    approver.await??;
    fleet.stop().await?;
    drop(store);
    b.drop_db(&url).await;
    eprintln!("      capacity run: {n} tasks ended in {secs:.1} s");
    Ok(0.8 * n as f64 / (t90 - t10).max(1e-3))
}

/// Grant every open approval, twice a second.
async fn approver(
    c: Arc<Client>,
    shared: Arc<Shared>,
    stop: tokio_util::sync::CancellationToken,
) -> Result<()> {
    while !stop.is_cancelled() {
        let waits = c
            .call(
                reqwest::Method::GET,
                "/waits?status=open&kind=approval&limit=500",
                None,
            )
            .await?;
        for w in waits.as_array().into_iter().flatten() {
            let id = w["wait_id"].as_str().unwrap_or_default();
            // a wait resolved meanwhile answers 409: not a failure of the soak
            if c.call(
                reqwest::Method::POST,
                &format!("/waits/{id}/approve"),
                Some(json!({})),
            )
            .await
            .is_ok()
            {
                shared.approved.fetch_add(1, Ordering::Relaxed);
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(())
}

/// Every second, the tasks that finished since the last look (with 30 s of overlap: a
/// transaction's `finished_at` is its start, and it may commit later): each submitted one is
/// struck from `pending`, its submit → finish kept for the window.
async fn watcher(
    store: trellis::store::Store,
    shared: Arc<Shared>,
    stop: tokio_util::sync::CancellationToken,
) -> Result<()> {
    let mut since = store.db_now().await? - chrono::Duration::seconds(60);
    while !stop.is_cancelled() {
        let rows = store.finished_since(since).await?;
        let mut newest = since;
        {
            let mut p = shared.pending.lock().expect("pending");
            let mut l = shared.latencies.lock().expect("latencies");
            for (id, ms, at) in rows {
                newest = newest.max(at);
                if p.remove(&id) {
                    l.push(ms);
                }
            }
        }
        since = newest - chrono::Duration::seconds(30);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Ok(())
}

/// Fold one sample into the window: sizes at the sample, the most dead tuples, the largest RSS
/// and session count per process.
async fn sample(
    store: &trellis::store::Store,
    admin: &trellis::store::Store,
    db: &str,
    fleet: &Fleet,
    w: &mut Window,
) -> Result<()> {
    let s = store.soak_sizes().await?;
    w.table_mb = s.table_bytes as f64 / 1048576.0;
    w.index_mb = s.index_bytes as f64 / 1048576.0;
    w.dead_max = w.dead_max.max(s.dead_tuples);
    w.tasks_rows = s.tasks;
    for (name, pid) in fleet.pids() {
        let r = w.rss.entry(name).or_default();
        *r = r.max(rss_mb(pid));
    }
    for (name, n) in admin.sessions_by_name(db).await? {
        if name.starts_with("soak-") {
            let s = w.sessions.entry(name).or_default();
            *s = (*s).max(n);
        }
    }
    Ok(())
}

fn workers_of<T: Copy + PartialOrd + Default>(m: &HashMap<String, T>) -> T {
    m.iter()
        .filter(|(k, _)| k.starts_with("soak-worker"))
        .map(|(_, v)| *v)
        .fold(T::default(), |a, b| if b > a { b } else { a })
}

fn print_window(w: &Window) {
    println!(
        "| {:.0} | {} | {:.0} | {:.0} | {:.1} | {:.1} | {} | {} | {:.1} / {:.1} | {} / {} |",
        w.end_min,
        w.finished,
        w.p50_ms,
        w.p99_ms,
        w.table_mb,
        w.index_mb,
        w.dead_max,
        w.tasks_rows,
        w.rss.get("soak-api").copied().unwrap_or_default(),
        workers_of(&w.rss),
        w.sessions.get("soak-api").copied().unwrap_or_default(),
        workers_of(&w.sessions),
    );
}

/// The figures that rose: for each, the second half's largest above 110 % of the first
/// half's largest plus a slack (so that a figure near zero is not judged on noise).
fn verdict(windows: &[Window]) -> Vec<String> {
    if windows.len() < 2 {
        return vec![format!(
            "only {} windows: nothing to compare",
            windows.len()
        )];
    }
    let (first, last) = windows.split_at(windows.len() / 2);
    type Figure = (&'static str, fn(&Window) -> f64, f64);
    let figures: [Figure; 8] = [
        ("p99 submit → finish (ms)", |w| w.p99_ms, 20.0),
        ("tables (MB)", |w| w.table_mb, 1.0),
        ("indexes (MB)", |w| w.index_mb, 1.0),
        ("dead tuples", |w| w.dead_max as f64, 1000.0),
        (
            "API RSS (MB)",
            |w| w.rss.get("soak-api").copied().unwrap_or_default(),
            2.0,
        ),
        ("worker RSS (MB)", |w| workers_of(&w.rss), 2.0),
        (
            "API sessions",
            |w| w.sessions.get("soak-api").copied().unwrap_or_default() as f64,
            1.0,
        ),
        ("worker sessions", |w| workers_of(&w.sessions) as f64, 1.0),
    ];
    let max =
        |ws: &[Window], f: fn(&Window) -> f64| ws.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
    let mut rose = Vec::new();
    for (name, f, slack) in figures {
        let (a, b) = (max(first, f), max(last, f));
        println!("{name}: first half's largest {a:.1}, second half's {b:.1}");
        if b > a * 1.10 + slack {
            rose.push(format!("{name}: {a:.1} → {b:.1}"));
        }
        if let Some(t) = trend(last, f, slack) {
            rose.push(format!("{name} kept rising through the second half: {t}"));
        }
    }
    rose
}

/// A figure that rises through `windows` (each window at least the one before: a count of
/// sessions that goes 3, 6, 6, 5 is not a leak) and ends more than 3 % (and `slack`) above
/// where it began: a leak, even while it
/// is still within 10 % of the first half. `None` when it does not.
fn trend(windows: &[Window], f: fn(&Window) -> f64, slack: f64) -> Option<String> {
    let v: Vec<f64> = windows.iter().map(f).collect();
    let (first, last) = (*v.first()?, *v.last()?);
    let rising = v.windows(2).all(|p| p[1] >= p[0]);
    (v.len() >= 3 && rising && last > first * 1.03 + slack).then(|| {
        v.iter()
            .map(|x| format!("{x:.1}"))
            .collect::<Vec<_>>()
            .join(" → ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(tables: &[f64]) -> Vec<Window> {
        tables
            .iter()
            .map(|t| Window {
                table_mb: *t,
                ..Default::default()
            })
            .collect()
    }

    /// The 2-hour soak's second half of table sizes (BENCHMARKS.md): within 10 % of the first
    /// half, and still a leak.
    #[test]
    fn a_steady_rise_is_a_trend_and_noise_is_not() {
        let f: fn(&Window) -> f64 = |w| w.table_mb;
        let leak = windows(&[1092.1, 1122.6, 1139.1, 1139.8, 1157.1, 1162.2]);
        assert!(trend(&leak, f, 1.0).is_some());
        let noise = windows(&[1092.1, 1122.6, 1101.0, 1139.8, 1097.0, 1100.0]);
        assert!(trend(&noise, f, 1.0).is_none());
        let flat = windows(&[1092.1, 1092.5, 1093.0, 1092.8, 1093.1, 1093.4]);
        assert!(trend(&flat, f, 1.0).is_none());
        let sessions = windows(&[3.0, 6.0, 6.0, 5.0]);
        assert!(trend(&sessions, f, 1.0).is_none());
    }
}
