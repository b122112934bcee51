//! Fleets as an operator runs them: worker (and API) processes at the shipped defaults, this
//! binary re-executed as `trellis-worker` / `trellis-api` would run (`--as-shipped-worker`,
//! `--as-shipped-api`: the same `startup` code, configured by `APP_*` in an empty directory).
//!
//! - scenario 10's configurations (`--depth`): each depth drained by 2 processes at the shipped
//!   defaults and at every configuration of a grid; the defaults ÷ the best.
//! - scenario 14 (`--fleet`): 20,000 one-step tasks drained by 1 / 8 / 32 / 64 worker processes
//!   directly and through a transaction pooler (PgBouncer started here from Debian's package,
//!   or `BENCH_POOLER_URL`), the server connections at the peak; submit → start through the
//!   pooler with `listen_url`; and the whole fleet through the pooler: the API and 64 workers,
//!   20,000 one-step tasks and 200 DAG tasks with an approval, a schedule, 8 workers killed.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use trellis::store::Store;
use trellis::testkit::with_database;

use crate::sql::BenchSql;
use crate::{Bench, percentile};

/// Processes of this binary, each in an empty directory; SIGTERM and wait on [`Procs::stop`],
/// killed on drop.
pub struct Procs {
    children: Vec<(Child, PathBuf)>,
}

impl Procs {
    /// `n` processes running `role` (`--as-shipped-worker` or `--as-shipped-api`), with `env`.
    pub fn start(role: &str, n: usize, env: &[(&str, String)]) -> Result<Self> {
        let exe = std::env::current_exe()?;
        let mut children = Vec::new();
        for _ in 0..n {
            let dir = std::env::temp_dir().join(format!(
                "trellis-bench-proc-{}",
                uuid::Uuid::new_v4().simple()
            ));
            std::fs::create_dir_all(&dir)?;
            let child = Command::new(&exe)
                .arg(role)
                .current_dir(&dir)
                .env_remove("DATABASE_URL")
                .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
                .env(
                    "RUST_LOG",
                    std::env::var("RUST_LOG").unwrap_or("warn".into()),
                )
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .context("starting a process")?;
            children.push((child, dir));
        }
        Ok(Self { children })
    }

    /// SIGKILL the first `n`.
    pub fn kill_9(&mut self, n: usize) {
        for (c, _) in self.children.iter_mut().take(n) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// How many have exited on their own (not counting those [`Procs::kill_9`] killed).
    pub fn exited(&mut self, skip: usize) -> usize {
        self.children
            .iter_mut()
            .skip(skip)
            .map(|(c, _)| matches!(c.try_wait(), Ok(Some(_))))
            .filter(|exited| *exited)
            .count()
    }

    /// The processes' ids.
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(|(c, _)| c.id()).collect()
    }

    pub fn stop(mut self) {
        for (c, _) in &self.children {
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        }
        for (c, dir) in &mut self.children {
            let _ = c.wait();
            let _ = std::fs::remove_dir_all(dir);
        }
        self.children.clear();
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for (c, dir) in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The most server sessions on database `db`, sampled every 50 ms while it runs.
pub struct Peak {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<i64>,
}

impl Peak {
    pub fn watch(admin: Store, db: String) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let task = tokio::spawn(async move {
            let mut peak = 0;
            while !s.load(Ordering::Acquire) {
                if let Ok(n) = admin.sessions_on(&db).await {
                    peak = peak.max(n);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            peak
        });
        Self { stop, task }
    }

    pub async fn done(self) -> i64 {
        self.stop.store(true, Ordering::Release);
        self.task.await.unwrap_or(0)
    }
}

/// The database name of a URL.
pub(crate) fn db_name(url: &str) -> String {
    url.rsplit('/')
        .next()
        .unwrap_or_default()
        .split('?')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// How processes reach the database: directly, or through the pooler (LISTEN on the direct
/// URL when `listen`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Route {
    Direct,
    Pooler { listen: bool },
}

impl Route {
    fn env(self, direct: &str, pooled: &str) -> Vec<(&'static str, String)> {
        match self {
            Route::Direct => vec![("DATABASE_URL", direct.to_string())],
            Route::Pooler { listen } => {
                let mut env = vec![
                    ("DATABASE_URL", pooled.to_string()),
                    ("APP_DATABASE__POOLER", "transaction".into()),
                    ("APP_DATABASE__MIGRATE", "false".into()),
                ];
                if listen {
                    env.push(("APP_DATABASE__LISTEN_URL", direct.to_string()));
                }
                env
            }
        }
    }
}

/// One drain: `tasks` one-step tasks queued, then `workers` processes at the shipped defaults
/// plus `config`; the drain rate (database clock) and the server sessions at the peak. Workers
/// that exit early (directly, more than `max_connections` allows) are said on stderr.
pub async fn drain(
    b: &Bench,
    tasks: usize,
    workers: usize,
    route: Route,
    pooler: Option<&str>,
    config: &[(&'static str, String)],
) -> Result<(f64, i64)> {
    let (store, url) = b.fresh("drain").await?;
    Bench::enqueue_one_step(&store, tasks, 0).await?;
    store.analyze_queue().await?;
    let pooled = pooler
        .map(|p| with_database(p, &db_name(&url)))
        .unwrap_or_default();
    let mut env = route.env(&url, &pooled);
    env.extend(config.iter().cloned());
    let peak = Peak::watch(b.admin_store().await?, db_name(&url));
    let mut procs = Procs::start("--as-shipped-worker", workers, &env)?;
    let limit = Instant::now() + Duration::from_secs(900);
    while store.any_unfinished().await? && Instant::now() < limit {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let peak = peak.done().await;
    let exited = procs.exited(0);
    if exited > 0 {
        eprintln!("      {exited} of {workers} workers exited (could not connect?)");
    }
    procs.stop();
    let (finished, secs) = store.drain_span().await?;
    if (finished as usize) < tasks {
        bail!("only {finished} of {tasks} tasks finished");
    }
    drop(store);
    b.drop_db(&url).await;
    Ok((finished as f64 / secs.max(1e-9), peak))
}

/// The configurations the depth sweep tries beside the shipped defaults: each concurrency with
/// a claim batch as large (`BENCH_DEPTH_GRID`, default `16,32,64,128,256`).
pub fn grid() -> Vec<(String, Vec<(&'static str, String)>)> {
    let list = std::env::var("BENCH_DEPTH_GRID").unwrap_or_else(|_| "16,32,64,128,256".into());
    let mut out = vec![("defaults".to_string(), Vec::new())];
    for c in list
        .split(',')
        .filter_map(|c| c.trim().parse::<usize>().ok())
    {
        out.push((
            format!("concurrency {c}, claim batch {c}"),
            vec![
                ("APP_WORKER__CONCURRENCY", c.to_string()),
                ("APP_WORKER__CLAIM_BATCH", c.to_string()),
            ],
        ));
    }
    out
}

/// Scenario 10 at one depth: every configuration of [`grid`] with 2 worker processes; prints a
/// line each and the defaults ÷ the best.
pub async fn depth_configs(b: &Bench, run: usize, depth: usize) -> Result<()> {
    let mut rates = Vec::new();
    for (name, config) in grid() {
        let (rate, peak) = drain(b, depth, 2, Route::Direct, None, &config).await?;
        println!(
            "run {run}: depth {depth:>8}: {name:<34} {rate:>7.0} tasks/s, {peak} server sessions at the peak"
        );
        rates.push((name, rate));
    }
    let defaults = rates[0].1;
    let (best, top) = rates
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .cloned()
        .unwrap_or_default();
    println!(
        "run {run}: depth {depth:>8}: the shipped defaults drain {:.2} × the best ({best}: {top:.0} tasks/s)",
        defaults / top.max(1e-9)
    );
    Ok(())
}

/// The pooler's URL (any database; the name is replaced): `BENCH_POOLER_URL`, or a PgBouncer
/// started here in transaction mode with 20 server connections in front of `admin`'s server
/// (through its Unix socket in `socket_dir` when the bench started the server: a pooler on the
/// database's host).
pub fn pooler(
    admin: &str,
    socket_dir: Option<PathBuf>,
) -> Result<(String, Option<trellis::devbouncer::TempBouncer>)> {
    if let Ok(u) = std::env::var("BENCH_POOLER_URL")
        && !u.is_empty()
    {
        return Ok((u, None));
    }
    let url = url::Url::parse(admin)?;
    let port = url.port().unwrap_or(5432);
    let bouncer = trellis::devbouncer::TempBouncer::start(
        port,
        &trellis::devbouncer::BouncerConfig {
            server_connections: env_u32("BENCH_POOLER_SERVERS", 20),
            socket_dir,
            ..Default::default()
        },
    )?;
    Ok((bouncer.url("postgres"), Some(bouncer)))
}

fn env_u32(k: &str, d: u32) -> u32 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

/// Scenario 14's sweep: each fleet size, directly and through the pooler.
pub async fn sweep(b: &Bench, run: usize, pooler: &str) -> Result<()> {
    let sizes: Vec<usize> = std::env::var("BENCH_FLEETS")
        .unwrap_or_else(|_| "1 8 32 64".into())
        .split([' ', ','])
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let tasks = crate::env_usize("BENCH_FLEET_TASKS", 20_000);
    // BENCH_FLEET_ROUTES=direct or =pooler runs one side alone (for a profile of it)
    let routes = std::env::var("BENCH_FLEET_ROUTES").unwrap_or_default();
    let (mut direct, mut direct_peak, mut pooled, mut pooled_peak) = (f64::NAN, 0, f64::NAN, 0);
    for n in sizes {
        if routes != "pooler" {
            (direct, direct_peak) = drain(b, tasks, n, Route::Direct, None, &[]).await?;
        }
        if routes != "direct" {
            (pooled, pooled_peak) = drain(
                b,
                tasks,
                n,
                Route::Pooler { listen: false },
                Some(pooler),
                &[],
            )
            .await?;
        }
        println!(
            "run {run}: fleet {n:>3}: direct {direct:>6.0} tasks/s ({direct_peak} server sessions at the peak); through the pooler {pooled:>6.0} tasks/s ({pooled_peak}) = {:.2} × direct",
            pooled / direct.max(1e-9)
        );
    }
    Ok(())
}

/// Submit → step started (database clock) through the pooler, one idle worker with
/// `listen_url`: p50 and p99 in milliseconds over `n` tasks submitted one at a time.
pub async fn latency(b: &Bench, pooler: &str, n: usize) -> Result<(f64, f64)> {
    let (store, url) = b.fresh("pooled_latency").await?;
    let pooled_url = with_database(pooler, &db_name(&url));
    let pooled = Store::connect_with(
        &pooled_url,
        &trellis::store::PoolConfig {
            max_connections: 2,
            pooler: trellis::store::Pooler::Transaction,
            ..Default::default()
        },
    )
    .await?;
    let procs = Procs::start(
        "--as-shipped-worker",
        1,
        &Route::Pooler { listen: true }.env(&url, &pooled_url),
    )?;
    // the worker is up once it has registered
    let up = Instant::now();
    while store.workers_alive().await? == 0 && up.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await; // idle, listening
    for i in 0..n {
        Bench::submit(
            &pooled,
            json!([{"id": "s1", "tool": "echo", "parameters": {"i": i}}]),
            false,
        )
        .await?;
        Bench::wait_succeeded(&store, i as i64 + 1, Duration::from_secs(30)).await?;
    }
    procs.stop();
    let mut l = store.start_latencies_ms().await?;
    drop(store);
    b.drop_db(&url).await;
    Ok((percentile(&mut l, 50.0), percentile(&mut l, 99.0)))
}

/// What the whole fleet through the pooler did.
pub struct FleetRun {
    pub tasks: i64,
    pub succeeded: i64,
    pub fives: usize,
    pub requests: usize,
    pub twice: i64,
    pub killed: usize,
    pub died: usize,
    pub secs: f64,
    pub peak: i64,
}

/// An HTTP client of the API that counts 5xx answers.
pub(crate) struct Client {
    http: reqwest::Client,
    base: String,
    requests: AtomicUsize,
    fives: AtomicUsize,
}

impl Client {
    /// A client of the API at `base` (`…/api/v1`).
    pub(crate) fn new(base: String) -> Self {
        Self {
            http: reqwest::Client::new(),
            base,
            requests: AtomicUsize::new(0),
            fives: AtomicUsize::new(0),
        }
    }

    /// Requests made, and how many were answered 5xx.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (
            self.requests.load(Ordering::Relaxed),
            self.fives.load(Ordering::Relaxed),
        )
    }

    pub(crate) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value> {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        if res.status().is_server_error() {
            self.fives.fetch_add(1, Ordering::Relaxed);
        }
        let status = res.status();
        let v: Value = res.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{status} from {path}: {v}");
        }
        Ok(v)
    }
}

/// The API process's base URL, from its "listening on" line.
pub(crate) async fn api_base(procs: &mut Procs) -> Result<String> {
    use tokio::io::AsyncBufReadExt;
    let out = procs.children[0]
        .0
        .stdout
        .take()
        .context("the API's stdout")?;
    let out = tokio::process::ChildStdout::from_std(out)?;
    let mut lines = tokio::io::BufReader::new(out).lines();
    let line = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(l) = lines.next_line().await? {
            if let Some(base) = l.strip_prefix("listening on ") {
                return Ok::<_, std::io::Error>(Some(base.to_string()));
            }
        }
        Ok(None)
    })
    .await??;
    line.context("the API printed no listening line")
}

/// Acceptance 1 of the fleet issue: through the pooler, the API and `workers` worker processes
/// at the shipped defaults; `one_step` one-step tasks and `dags` DAG tasks with an approval
/// submitted through the API, a schedule firing every second, an approver; `kill` workers
/// `kill -9`ed when a third of the work is done.
pub async fn whole(
    b: &Bench,
    pooler: &str,
    workers: usize,
    one_step: usize,
    dags: usize,
    kill: usize,
) -> Result<FleetRun> {
    let (store, url) = b.fresh("fleet").await?;
    let pooled = with_database(pooler, &db_name(&url));
    let route = Route::Pooler { listen: true };
    let mut env = route.env(&url, &pooled);
    env.push(("APP_AUTH__DISABLED", "true".into()));
    env.push(("APP_SERVER__PORT", "0".into()));
    let peak = Peak::watch(b.admin_store().await?, db_name(&url));
    let mut api = Procs::start("--as-shipped-api", 1, &env)?;
    let c = Client {
        http: reqwest::Client::new(),
        base: format!("{}/api/v1", api_base(&mut api).await?),
        requests: AtomicUsize::new(0),
        fives: AtomicUsize::new(0),
    };
    let mut fleet = Procs::start("--as-shipped-worker", workers, &env)?;
    let start = Instant::now();
    c.call(
        reqwest::Method::POST,
        "/schedules",
        Some(
            json!({"id": "tick", "cron": "* * * * * *", "description": "tick",
                    "plan": {"steps": [{"id": "s", "tool": "echo"}]}}),
        ),
    )
    .await?;
    let dag = json!({"description": "dag", "plan": {"steps": [
        {"id": "a", "tool": "echo", "parameters": {"n": 1}},
        {"id": "ok", "tool": "approval", "parameters": {"prompt": "go?"}, "dependencies": ["a"]},
        {"id": "b", "tool": "echo", "dependencies": ["ok"], "parameters": {"from": "${a.output.n}"}},
        {"id": "c", "tool": "echo", "dependencies": ["ok"]},
        {"id": "d", "tool": "echo", "dependencies": ["b", "c"]}]}});
    let one = json!({"description": "one", "plan": {"steps": [{"id": "s", "tool": "echo"}]}});
    let mut bodies: Vec<Value> = vec![dag; dags];
    bodies.extend(std::iter::repeat_n(one, one_step));
    // the kill comes a third of the way through the submits, while the fleet drains them
    let batches = bodies.chunks(1000).count();
    let mut killed = 0;
    for (i, chunk) in bodies.chunks(1000).enumerate() {
        c.call(
            reqwest::Method::POST,
            "/tasks/batch",
            Some(json!({ "tasks": chunk })),
        )
        .await?;
        if i + 1 == batches.div_ceil(3) {
            let running = store.count_steps("running").await?;
            fleet.kill_9(kill);
            killed = kill;
            eprintln!("      killed {kill} workers while {running} steps ran");
        }
    }
    loop {
        let waits = c
            .call(
                reqwest::Method::GET,
                "/waits?status=open&kind=approval&limit=500",
                None,
            )
            .await?;
        for w in waits.as_array().into_iter().flatten() {
            let id = w["wait_id"].as_str().unwrap_or_default();
            c.call(
                reqwest::Method::POST,
                &format!("/waits/{id}/approve"),
                Some(json!({})),
            )
            .await?;
        }
        if !store.any_unfinished().await? {
            break;
        }
        if start.elapsed() > Duration::from_secs(1800) {
            bail!("the fleet did not finish in 30 minutes");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    c.call(reqwest::Method::DELETE, "/schedules/tick", None)
        .await?;
    // a tick that fired just before the delete runs to its end too
    while store.any_unfinished().await? {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let secs = start.elapsed().as_secs_f64();
    let died = fleet.exited(killed);
    fleet.stop();
    api.stop();
    let peak = peak.done().await;
    let (all, succeeded, twice) = store.fleet_audit().await?;
    drop(store);
    b.drop_db(&url).await;
    Ok(FleetRun {
        tasks: all,
        succeeded,
        fives: c.fives.load(Ordering::Relaxed),
        requests: c.requests.load(Ordering::Relaxed),
        twice,
        killed,
        died,
        secs,
        peak,
    })
}

/// Submit → start as a client reads it: the API and `workers` worker processes at the shipped
/// defaults (directly, with LISTEN), an idle queue, one-step tasks submitted one at a time over
/// HTTP, each waited for; per task, its `step_started` event's time minus its `task_submitted`
/// event's (the database's clock), split at the moment a listener of the bench's own received
/// the workers' wake-up (the system clock the database reads too). The first `warm` tasks are
/// left out: the first use of each of the API's pool connections plans the submit (about 12 ms
/// on a stock server).
pub struct ClientLatency {
    /// Submit → start, per task counted (ms).
    pub total: Vec<f64>,
    /// Submit → the wake-up received.
    pub to_wake: Vec<f64>,
    /// The wake-up received → start.
    pub to_claim: Vec<f64>,
    /// Submit → start of the first `warm` tasks.
    pub cold: Vec<f64>,
}

pub async fn client_latency(
    b: &Bench,
    workers: usize,
    warm: usize,
    samples: usize,
) -> Result<ClientLatency> {
    let (store, url) = b.fresh("client_latency").await?;
    let mut env = Route::Direct.env(&url, "");
    env.push(("APP_AUTH__DISABLED", "true".into()));
    env.push(("APP_SERVER__PORT", "0".into()));
    let mut api = Procs::start("--as-shipped-api", 1, &env)?;
    let base = format!("{}/api/v1", api_base(&mut api).await?);
    let fleet = Procs::start("--as-shipped-worker", workers, &env)?;
    let http = reqwest::Client::new();
    let mut listener = sqlx::postgres::PgListener::connect(&url).await?;
    listener.listen(trellis::store::READY_CHANNEL).await?;
    let (woke_tx, mut woke) = tokio::sync::mpsc::unbounded_channel();
    let listening = tokio::spawn(async move {
        while listener.recv().await.is_ok() {
            let at = chrono::Utc::now().timestamp_micros() as f64 / 1000.0;
            if woke_tx.send(at).is_err() {
                break;
            }
        }
    });
    let mut wakes = Vec::new();
    let mut posts = Vec::new();
    // the workers registered, and idle
    while store.workers_alive().await? < workers as i64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for i in 0..warm + samples {
        while woke.try_recv().is_ok() {}
        let now_ms = || chrono::Utc::now().timestamp_micros() as f64 / 1000.0;
        let sent = now_ms();
        let r = http
            .post(format!("{base}/tasks"))
            .json(&json!({"description": "latency", "plan": {"steps": [
                {"id": "s", "tool": "echo", "parameters": {"i": i}}]}}))
            .send()
            .await?;
        if r.status() != reqwest::StatusCode::ACCEPTED {
            bail!("submit answered {}", r.status());
        }
        posts.push((sent, now_ms()));
        let id = r.json::<Value>().await?["task_id"]
            .as_str()
            .context("a task id")?
            .to_string();
        wakes.push(
            tokio::time::timeout(Duration::from_secs(30), woke.recv())
                .await?
                .context("the listener")?,
        );
        let limit = Instant::now() + Duration::from_secs(30);
        loop {
            let t: Value = http
                .get(format!("{base}/tasks/{id}"))
                .send()
                .await?
                .json()
                .await?;
            if t["status"] == "succeeded" {
                break;
            }
            if Instant::now() > limit {
                bail!("task {id} did not succeed within 30 s: {t}");
            }
            // a client polling now and then (a tight loop of reads would take the cores the
            // submit and the claim share on a small machine)
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        // an idle queue again: the next submit finds the workers waiting
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    fleet.stop();
    api.stop();
    listening.abort();
    let times = store
        .event_times_ms("task_submitted", "step_started")
        .await?;
    drop(store);
    b.drop_db(&url).await;
    if times.len() != wakes.len() {
        bail!("{} tasks started, {} submitted", times.len(), wakes.len());
    }
    let mut r = ClientLatency {
        total: vec![],
        to_wake: vec![],
        to_claim: vec![],
        cold: vec![],
    };
    if std::env::var("BENCH_VERBOSE").is_ok() {
        // per counted task: POST sent → submit's now(), → answer read, answer read → wake-up
        let (mut pre, mut answered, mut woke_after) = (vec![], vec![], vec![]);
        for (((submitted, _), (sent, read)), woke) in
            times.iter().zip(&posts).zip(&wakes).skip(warm)
        {
            pre.push(submitted - sent);
            answered.push(read - submitted);
            woke_after.push(woke - read);
        }
        eprintln!(
            "POST sent → submit's now() p50 {:.2} ms; → answer read p50 {:.2} ms; answer read → wake-up p50 {:.2} ms",
            percentile(&mut pre, 50.0),
            percentile(&mut answered, 50.0),
            percentile(&mut woke_after, 50.0)
        );
    }
    for (i, ((submitted, started), woke)) in times.into_iter().zip(wakes).enumerate() {
        if i < warm {
            r.cold.push(started - submitted);
        } else {
            r.total.push(started - submitted);
            r.to_wake.push(woke - submitted);
            r.to_claim.push(started - woke);
        }
    }
    Ok(r)
}
