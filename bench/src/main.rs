//! `trellis-bench`: every scenario of BENCHMARKS.md on one PostgreSQL server with durable
//! commits (`fsync=on`, `synchronous_commit=on`), ratios measured in the same run.
//!
//! `cargo run --release -p trellis-bench [-- --json] [-- --quick]`; `--latency`, `--submit`,
//! `--memory` and `--profile` run one scenario alone.
//! With `DATABASE_URL` set it uses that server (the role must be able to CREATE DATABASE);
//! otherwise it starts a throwaway cluster from the local PostgreSQL binaries.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use trellis::config::{DEFAULT_CONCURRENCY, Settings, WORKER_POOL};
use trellis::devpg::{TempPostgres, find_bindir};
use trellis::domain::Limits;
use trellis::domain::PlanSpec;
use trellis::store::Store;
use trellis::store::submit::NewTask;
use trellis::testkit::with_database;
use trellis::worker::{self, WorkerConfig};
use uuid::Uuid;

mod fairness;
mod fleet;
mod maps;
mod peers;
mod recovery;
mod soak;
mod sql;
mod waits;
use sql::BenchSql;

struct Sizes {
    /// Concurrency of each worker (Trellis and apalis alike) in the throughput scenarios.
    concurrency: usize,
    tasks: usize,
    steps: usize,
    workers: usize,
    latency_samples: usize,
    recovery_samples: usize,
    history_tasks: i64,
    pgbench_secs: u32,
    /// Tasks posted one by one in the single-submit scenario.
    single_submits: usize,
    /// Requests of 1000 tasks in the bulk-submit scenario.
    bulk_batches: usize,
}

/// What one step cost the server, amortized over a throughput run.
#[derive(Debug, Clone, Copy)]
struct PerStep {
    statements: f64,
    commits: f64,
    wal_bytes: f64,
}

#[derive(Debug, Clone)]
struct Row {
    figure: &'static str,
    value: f64,
    unit: &'static str,
    target: &'static str,
    met: bool,
    detail: String,
}

struct Bench {
    admin: String,
    bindir: Option<PathBuf>,
    sizes: Sizes,
    /// the last throughput run's WAL range (start, end), for `--profile`'s WAL by relation
    wal_range: std::sync::Mutex<Option<(String, String)>>,
}

/// An RFC 3339 time halfway through [`BenchSql::load_task_list`]'s tasks.
fn chrono_mid(tasks: i64) -> String {
    let mid = std::time::SystemTime::now() - Duration::from_secs((tasks / 2) as u64);
    let secs = mid
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let idx = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[idx.min(v.len() - 1)]
}

fn median(mut v: Vec<f64>) -> f64 {
    percentile(&mut v, 50.0)
}

impl Bench {
    /// `GET /api/v1/tasks` as the dashboard's task list calls it, through the real API on a
    /// loopback listener, over `BENCH_LIST_TASKS` tasks (default 1,000,000): the newest page,
    /// a status filter (common and rare), a time cursor in the middle, and 100 keyset pages
    /// walked one after another. Each case: milliseconds per request, client clock.
    async fn task_list(&self) -> Result<Vec<(&'static str, Vec<f64>)>> {
        let n = env_usize("BENCH_LIST_TASKS", 1_000_000) as i64;
        let (store, _) = self.fresh("task_list").await?;
        eprintln!("loading {n} tasks…");
        store.load_task_list(n).await?;
        let mut settings = Settings::default();
        settings.auth.disabled = true;
        settings.server.host = "127.0.0.1".into();
        settings.server.port = 0;
        let app =
            trellis::startup::Application::build_with_store(store.clone(), settings, false).await?;
        let root = format!("http://{}/api/v1", app.addr());
        let stop = CancellationToken::new();
        let server = tokio::spawn(app.run_until_stopped(stop.clone()));
        let http = reqwest::Client::builder().no_proxy().build()?;
        let get = |q: String| {
            // `q` is a query on the task list, or another route of the API after a `/`
            let url = if q.starts_with('/') {
                format!("{root}{q}")
            } else {
                format!("{root}/tasks?{q}")
            };
            let http = http.clone();
            async move {
                let began = Instant::now();
                let page: Value = http
                    .get(&url)
                    .send()
                    .await?
                    .error_for_status()?
                    .json()
                    .await?;
                anyhow::Ok((began.elapsed().as_secs_f64() * 1000.0, page))
            }
        };
        let middle = get(format!("limit=1&before={}", chrono_mid(n))).await?.1;
        let mid_id = middle[0]["task_id"]
            .as_str()
            .context("a middle task")?
            .to_string();
        let mut out = Vec::new();
        let since = chrono_mid(n / 50); // the newest 2% of the table
        let cases: [(&'static str, String); 12] = [
            ("newest 50", "limit=50".into()),
            (
                "text in 1 of 977 (q=customer 500), 50",
                "limit=50&q=customer%20500".into(),
            ),
            (
                "text in 1 task (q=report 1234), 50",
                "limit=50&q=report%201234%20".into(),
            ),
            (
                "text in no task (q=nowhere), 50",
                "limit=50&q=nowhere".into(),
            ),
            ("since (newest 2%), 50", format!("limit=50&since={since}")),
            ("status=failed, newest 50", "limit=50&status=failed".into()),
            (
                "status=running (1 in 1000), newest 50",
                "limit=50&status=running".into(),
            ),
            (
                "cursor in the middle (before=id), 50",
                format!("limit=50&before={mid_id}"),
            ),
            (
                "status=failed, cursor in the middle, 50",
                format!("limit=50&status=failed&before={mid_id}"),
            ),
            // the overview's reads, and the whole-history counts it no longer reads
            ("overview: GET /stats/activity", "/stats/activity".into()),
            ("overview: GET /workers", "/workers".into()),
            ("whole history: GET /stats", "/stats".into()),
        ];
        for (case, q) in cases {
            get(q.clone()).await?; // warm the plan and the pages
            let mut ms = Vec::new();
            for _ in 0..30 {
                ms.push(get(q.clone()).await?.0);
            }
            out.push((case, ms));
        }
        let mut ms = Vec::new();
        let mut q = "limit=50".to_string();
        for _ in 0..100 {
            let (t, page) = get(q).await?;
            ms.push(t);
            let last = page
                .as_array()
                .and_then(|p| p.last())
                .context("a full page")?["task_id"]
                .as_str()
                .unwrap()
                .to_string();
            q = format!("limit=50&before={last}");
        }
        out.push(("100 keyset pages in a row, each", ms));
        // the overview's worst hour: many recent tasks, their pages not yet vacuumed
        let recent = (n * 3 / 10).max(1);
        eprintln!("adding {recent} tasks submitted in the last hour…");
        store.load_recent_tasks(recent).await?;
        get("/stats/activity".into()).await?;
        let mut ms = Vec::new();
        for _ in 0..30 {
            ms.push(get("/stats/activity".into()).await?.0);
        }
        out.push(("overview, 30% of the tasks in the last hour", ms));
        stop.cancel();
        server.await??;
        Ok(out)
    }

    /// A connection to the server's admin database (for `pg_stat_activity`).
    async fn admin_store(&self) -> Result<Store> {
        Ok(Store::connect(&self.admin, 2, Duration::from_secs(30)).await?)
    }

    async fn fresh(&self, name: &str) -> Result<(Store, String)> {
        let db = format!("bench_{name}_{}", Uuid::new_v4().simple());
        let admin = Store::connect(&self.admin, 2, Duration::from_secs(30)).await?;
        admin.create_database(&db).await?;
        admin.pool().close().await;
        let url = with_database(&self.admin, &db);
        let store = Store::connect(&url, 40, Duration::from_secs(30)).await?;
        store.migrate().await?;
        // per-step statement counts need it (preloaded by the throwaway cluster); optional
        let _ = store.enable_statement_stats().await;
        Ok((store, url))
    }

    fn limits(sequential: bool) -> Limits {
        let mut l = Limits::from_settings(&Settings::default());
        if sequential {
            l.max_concurrent_steps = 1;
        }
        l
    }

    async fn submit(store: &Store, steps: Value, sequential: bool) -> Result<Uuid> {
        let plan: PlanSpec = serde_json::from_value(json!({ "steps": steps }))?;
        Ok(store
            .submit_task(&NewTask {
                description: "bench".into(),
                metadata: json!({}),
                context: json!({}),
                priority: 0,
                idempotency_key: None,
                limits: Self::limits(sequential),
                plan: Some(plan),
                template: None,
                start: Default::default(),
                webhook: None,
                parent: None,
                concurrency_key: None,
                tenant: trellis::domain::tenant::DEFAULT.into(),
            })
            .await?
            .task_id)
    }

    fn worker_cfg(tweak: impl FnOnce(&mut WorkerConfig)) -> WorkerConfig {
        let mut s = Settings::default();
        s.worker.poll_ms = std::env::var("BENCH_POLL_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200);
        let mut cfg = WorkerConfig::from_settings(&s);
        tweak(&mut cfg);
        cfg
    }

    /// Start `n` in-process workers, each with its own connection pool.
    async fn workers(
        &self,
        url: &str,
        n: usize,
        tweak: impl Fn(&mut WorkerConfig),
    ) -> Result<Workers> {
        let stop = CancellationToken::new();
        let mut handles = Vec::new();
        for _ in 0..n {
            let store = Store::connect(url, worker_pool(), Duration::from_secs(30)).await?;
            let cfg = Self::worker_cfg(&tweak);
            handles.push(tokio::spawn(worker::run(store, cfg, stop.clone())));
        }
        Ok(Workers { stop, handles })
    }

    /// Wait until no task is unfinished and `n` have succeeded in all (checks the cheap
    /// unfinished count first: the succeeded count grows with history).
    async fn wait_succeeded(store: &Store, n: i64, limit: Duration) -> Result<Duration> {
        let start = Instant::now();
        loop {
            if store.count_unfinished_tasks().await? == 0 {
                let ok = store.count_tasks("succeeded").await?;
                if ok < n {
                    bail!("only {ok} of {n} tasks succeeded");
                }
                return Ok(start.elapsed());
            }
            if start.elapsed() > limit {
                bail!("timed out waiting for {n} tasks to succeed");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Wait until no task is unfinished (`n` were); the statements the watching ran.
    async fn watch_unfinished(store: &Store, n: i64, limit: Duration) -> Result<(Duration, i64)> {
        let start = Instant::now();
        let mut queries = 0;
        loop {
            queries += 1;
            if store.count_unfinished_tasks().await? == 0 {
                return Ok((start.elapsed(), queries));
            }
            if start.elapsed() > limit {
                bail!("timed out waiting for {n} tasks to finish");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Enqueue N independent M-step echo tasks (bulk submit, 1000 per statement).
    async fn enqueue_echo(&self, store: &Store) -> Result<()> {
        let steps: Vec<Value> = (1..=self.sizes.steps)
            .map(|i| json!({"id": format!("s{i}"), "tool": "echo", "parameters": {"i": i}}))
            .collect();
        let plan: PlanSpec = serde_json::from_value(json!({ "steps": steps }))?;
        let task = NewTask {
            description: "bench".into(),
            metadata: json!({}),
            context: json!({}),
            priority: 0,
            idempotency_key: None,
            limits: Self::limits(false),
            plan: Some(plan),
            template: None,
            start: Default::default(),
            webhook: None,
            parent: None,
            concurrency_key: None,
            tenant: trellis::domain::tenant::DEFAULT.into(),
        };
        let all = vec![task; self.sizes.tasks];
        for chunk in all.chunks(1000) {
            if let Err(missing) = store.submit_tasks(chunk).await? {
                bail!("unknown tools {missing:?}");
            }
        }
        Ok(())
    }

    /// Scenario 1 (and 6): enqueue N × M echo steps, then start W workers; steps/s until done,
    /// and what each step cost the server (statements, commits, WAL bytes; None when
    /// pg_stat_statements is not preloaded).
    async fn throughput(&self, store: &Store, url: &str) -> Result<(f64, Option<PerStep>)> {
        self.throughput_with(store, url, |_| {}).await
    }

    /// [`Bench::throughput`] with the workers' configuration tweaked.
    async fn throughput_with(
        &self,
        store: &Store,
        url: &str,
        tweak: impl Fn(&mut WorkerConfig),
    ) -> Result<(f64, Option<PerStep>)> {
        self.enqueue_echo(store).await?;
        let unfinished_before = store.count_unfinished_tasks().await?;
        let c = self.sizes.concurrency;
        // backends report commits to the statistics system when they go idle, at most every
        // second, and an idle one only after 10 s: let the setup's commits (migrations, the
        // enqueue) be reported before the first snapshot, so they are not counted as the run's
        if store.cost_snapshot().await.is_ok() {
            tokio::time::sleep(Duration::from_millis(10_500)).await;
        }
        let cost_before = store.cost_snapshot().await.ok();
        let lsn_before = store.wal_lsn().await?;
        let w = self
            .workers(url, self.sizes.workers, |cfg| {
                cfg.concurrency = c;
                cfg.claim_batch = c;
                tweak(cfg);
            })
            .await?;
        let (elapsed, watched) =
            Self::watch_unfinished(store, unfinished_before, Duration::from_secs(300)).await?;
        w.stop().await;
        // the run's WAL, for `pg_waldump -s … -e …` (a breakdown by table and index)
        let lsn_after = store.wal_lsn().await?;
        eprintln!("      WAL of the run: {lsn_before} … {lsn_after}");
        if let Ok(mut range) = self.wal_range.lock() {
            *range = Some((lsn_before, lsn_after));
        }
        let steps = (self.sizes.tasks * self.sizes.steps) as f64;
        let per_step = match cost_before {
            Some(b) => {
                // backends report commits and WAL to the statistics system within a second
                tokio::time::sleep(Duration::from_millis(1500)).await;
                store.cost_snapshot().await.ok().map(|a| PerStep {
                    // the watcher's own polls are neither the workers' statements nor commits
                    statements: (a.statements - b.statements - watched - 1) as f64 / steps,
                    commits: (a.commits - b.commits - watched - 1) as f64 / steps,
                    wal_bytes: (a.wal_bytes - b.wal_bytes) as f64 / steps,
                })
            }
            None => None,
        };
        Ok((steps / elapsed.as_secs_f64(), per_step))
    }

    /// Scenario 8: single `POST /api/v1/tasks` (2-step tasks) from 16 connections, no workers;
    /// then bulk `POST /api/v1/tasks/batch` with 1000 tasks per request. Tasks/s of each.
    async fn submit_rates(&self) -> Result<(f64, f64)> {
        let (store, _) = self.fresh("submit").await?;
        let mut settings = Settings::default();
        settings.server.host = "127.0.0.1".into();
        settings.server.port = 0;
        // an admin key held in memory: what a deployment's submitters use (no key lookup query)
        const KEY: &str = "bench-admin-key-0123456789";
        settings.auth.bootstrap_admin_key = Some(KEY.into());
        let app = trellis::startup::Application::build_with_store(store, settings, false).await?;
        let base = format!("http://{}", app.addr());
        let stop = CancellationToken::new();
        let server = tokio::spawn(app.run_until_stopped(stop.clone()));
        let mut auth = reqwest::header::HeaderMap::new();
        auth.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {KEY}").parse()?,
        );
        let client = reqwest::Client::builder()
            .no_proxy()
            .default_headers(auth)
            .build()?;
        let body = |i: usize| {
            json!({"description": format!("submit {i}"), "plan": {"steps": [
                {"id": "a", "tool": "echo", "parameters": {"i": i}},
                {"id": "b", "tool": "echo", "dependencies": ["a"], "parameters": {"x": "${a.output.i}"}}
            ]}})
        };
        let (clients, per_client) = (16, self.sizes.single_submits / 16);
        let start = Instant::now();
        let runs = (0..clients).map(|c| {
            let (client, url) = (client.clone(), format!("{base}/api/v1/tasks"));
            async move {
                for i in 0..per_client {
                    let r = client
                        .post(&url)
                        .json(&body(c * per_client + i))
                        .send()
                        .await?;
                    if r.status() != reqwest::StatusCode::ACCEPTED {
                        bail!("submit answered {}", r.status());
                    }
                }
                Ok::<(), anyhow::Error>(())
            }
        });
        for r in futures::future::join_all(runs).await {
            r?;
        }
        let single = (clients * per_client) as f64 / start.elapsed().as_secs_f64();

        let batches = self.sizes.bulk_batches;
        let requests: Vec<Value> = (0..batches)
            .map(|b| json!({"tasks": (0..1000).map(|i| body(b * 1000 + i)).collect::<Vec<_>>()}))
            .collect();
        let start = Instant::now();
        let url = format!("{base}/api/v1/tasks/batch");
        let runs = requests.chunks(batches.div_ceil(2)).map(|part| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                for req in part {
                    let r = client.post(&url).json(req).send().await?;
                    if r.status() != reqwest::StatusCode::ACCEPTED {
                        bail!("bulk submit answered {}", r.status());
                    }
                }
                Ok::<(), anyhow::Error>(())
            }
        });
        for r in futures::future::join_all(runs).await {
            r?;
        }
        let bulk = (batches * 1000) as f64 / start.elapsed().as_secs_f64();
        stop.cancel();
        server.await??;
        Ok((single, bulk))
    }

    fn pgbench(&self, url: &str) -> Result<f64> {
        let bin = self
            .bindir
            .as_ref()
            .map(|d| d.join("pgbench"))
            .unwrap_or_else(|| PathBuf::from("pgbench"));
        let init = Command::new(&bin)
            .args(["-i", "-q", "-s", "1", url])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .context("running pgbench -i")?;
        if !init.status.success() {
            bail!(
                "pgbench -i failed: {}",
                String::from_utf8_lossy(&init.stderr)
            );
        }
        let run = Command::new(&bin)
            .args([
                "-N",
                "-c",
                "8",
                "-j",
                "2",
                "-n",
                "-T",
                &self.sizes.pgbench_secs.to_string(),
                url,
            ])
            .output()
            .context("running pgbench -N")?;
        let out = String::from_utf8_lossy(&run.stdout);
        out.lines()
            .find_map(|l| {
                l.strip_prefix("tps = ")
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|n| n.parse::<f64>().ok())
            })
            .with_context(|| format!("no tps in pgbench output: {out}"))
    }

    /// Scenario 2: apalis-postgres burning the same number of no-op jobs, same workers.
    async fn apalis(&self, url: &str) -> Result<f64> {
        use apalis::prelude::*;
        use apalis_postgres::{PgPool, PostgresStorage};
        use futures::StreamExt;

        let store = Store::connect(url, 4, Duration::from_secs(30)).await?;
        let pool = PgPool::connect(url).await?;
        PostgresStorage::setup(&pool).await?;
        let total = self.sizes.tasks * self.sizes.steps;
        let mut backend = PostgresStorage::new(&pool);
        let mut items = futures::stream::iter(0..total as u64).map(|i| TaskBuilder::new(i).build());
        backend.push_all(&mut items).await?;

        async fn noop(_job: u64) -> Result<(), BoxDynError> {
            Ok(())
        }
        let stop = CancellationToken::new();
        let start = Instant::now();
        let mut runs = Vec::new();
        for i in 0..self.sizes.workers {
            let pool = PgPool::connect(url).await?;
            let backend = PostgresStorage::new(&pool);
            let worker = WorkerBuilder::new(format!("bench-{i}"))
                .backend(backend)
                .concurrency(self.sizes.concurrency)
                .build(noop);
            let stop = stop.clone();
            runs.push(async move {
                let _ = worker
                    .run_until(async move {
                        stop.cancelled().await;
                        Ok::<(), std::io::Error>(())
                    })
                    .await;
            });
        }
        // the workers run inside this task (apalis's worker future is not Send-friendly for
        // tokio::spawn); the watcher ends the race
        let watch = async {
            loop {
                if store.apalis_done().await? >= total as i64 {
                    return Ok::<Duration, anyhow::Error>(start.elapsed());
                }
                if start.elapsed() > Duration::from_secs(300) {
                    bail!("apalis-postgres did not finish {total} jobs in 300 s");
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        let all = futures::future::join_all(runs);
        tokio::pin!(all);
        let elapsed = tokio::select! {
            r = watch => r?,
            _ = &mut all => bail!("apalis workers stopped early"),
        };
        stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), all).await;
        Ok(total as f64 / elapsed.as_secs_f64())
    }

    /// Scenario 3: idle worker; one-step tasks one at a time; submit → step started.
    async fn latency(&self) -> Result<(f64, f64)> {
        let (store, url) = self.fresh("latency").await?;
        let w = self.workers(&url, 1, |_| {}).await?;
        tokio::time::sleep(Duration::from_millis(300)).await; // let the worker go idle
        for i in 0..self.sizes.latency_samples {
            Self::submit(
                &store,
                json!([{"id": "s1", "tool": "echo", "parameters": {"i": i}}]),
                false,
            )
            .await?;
            Self::wait_succeeded(&store, i as i64 + 1, Duration::from_secs(30)).await?;
        }
        w.stop().await;
        let mut l = store.start_latencies_ms().await?;
        Ok((percentile(&mut l, 50.0), percentile(&mut l, 99.0)))
    }

    /// Scenario 4: 5 independent 100 ms steps, then 5 depending on them; parallel vs sequential.
    async fn dag(&self) -> Result<(f64, f64)> {
        let (store, url) = self.fresh("dag").await?;
        let w = self.workers(&url, 1, |_| {}).await?;
        let mut steps: Vec<Value> = (1..=5)
            .map(|i| json!({"id": format!("a{i}"), "tool": "sleep", "parameters": {"ms": 100}}))
            .collect();
        let firsts: Vec<String> = (1..=5).map(|i| format!("a{i}")).collect();
        steps.extend((1..=5).map(|i| json!({"id": format!("b{i}"), "tool": "sleep", "dependencies": firsts, "parameters": {"ms": 100}})));
        let mut done = 0;
        for sequential in [false, true, false, true, false, true] {
            Self::submit(&store, Value::Array(steps.clone()), sequential).await?;
            done += 1;
            Self::wait_succeeded(&store, done, Duration::from_secs(60)).await?;
        }
        w.stop().await;
        let d = store.task_durations_ms().await?;
        let par = median(d.iter().step_by(2).copied().collect());
        let seq = median(d.iter().skip(1).step_by(2).copied().collect());
        Ok((par, seq))
    }

    /// Scenario 5: a step failing once with a retryable error, no backoff: failure → retry start.
    async fn recovery(&self) -> Result<f64> {
        let (store, url) = self.fresh("recovery").await?;
        let w = self
            .workers(&url, 1, |c| {
                c.policy.retry.initial_interval_ms = 0;
                c.policy.retry.max_interval_ms = 0;
            })
            .await?;
        for i in 0..self.sizes.recovery_samples {
            Self::submit(
                &store,
                json!([{"id": "s1", "tool": "flaky", "parameters": {"fail_times": 1}}]),
                false,
            )
            .await?;
            Self::wait_succeeded(&store, i as i64 + 1, Duration::from_secs(30)).await?;
        }
        w.stop().await;
        Ok(median(store.retry_gaps_ms().await?))
    }

    /// `n` one-step `echo` tasks (bulk submit, 1000 per statement), with `priority`.
    async fn enqueue_one_step(store: &Store, n: usize, priority: i32) -> Result<()> {
        let plan: PlanSpec = serde_json::from_value(
            json!({"steps": [{"id": "s1", "tool": "echo", "parameters": {"i": 1}}]}),
        )?;
        let task = NewTask {
            description: "depth".into(),
            metadata: json!({}),
            context: json!({}),
            priority,
            idempotency_key: None,
            limits: Self::limits(false),
            plan: Some(plan),
            template: None,
            start: Default::default(),
            webhook: None,
            parent: None,
            concurrency_key: None,
            tenant: trellis::domain::tenant::DEFAULT.into(),
        };
        let chunk = vec![task; 1000];
        let mut left = n;
        while left > 0 {
            let k = left.min(1000);
            if let Err(missing) = store.submit_tasks_quietly(&chunk[..k]).await? {
                bail!("unknown tools {missing:?}");
            }
            left -= k;
        }
        Ok(())
    }

    /// Start `n` worker processes (this binary re-executed with `--as-worker`), each with
    /// concurrency `c`.
    fn worker_procs(url: &str, n: usize, c: usize) -> Result<WorkerProcs> {
        let exe = std::env::current_exe()?;
        let mut children = Vec::new();
        for _ in 0..n {
            children.push(
                Command::new(&exe)
                    .args(["--as-worker", url, &c.to_string()])
                    .stdin(Stdio::null())
                    .spawn()
                    .context("starting a worker process")?,
            );
        }
        Ok(WorkerProcs { children })
    }

    /// Scenario 10 (`--depth`): `depth` one-step tasks queued while no worker runs, then
    /// drained by 2 worker processes. The claim's `EXPLAIN (ANALYZE, BUFFERS)` at that depth
    /// (in a rolled-back transaction), and the drain rate (tasks / (last task finished − first
    /// attempt started), database clock). Stops waiting after `limit` and reports the rate so
    /// far.
    async fn depth(&self, depth: usize, limit: Duration) -> Result<DepthRun> {
        let (store, url) = self.fresh("depth").await?;
        let load = Instant::now();
        Self::enqueue_one_step(&store, depth, 0).await?;
        store.analyze_queue().await?;
        eprintln!(
            "      {depth} tasks queued in {:.1} s",
            load.elapsed().as_secs_f64()
        );
        let plans = store.explain_claim(64, 0).await?;
        let profile = std::env::var("BENCH_PROFILE").is_ok();
        if profile {
            store.enable_statement_stats().await?;
        }
        let procs = Self::worker_procs(&url, 2, self.sizes.concurrency)?;
        let start = Instant::now();
        // the watcher's own probe is one index lookup (a count would read the whole backlog)
        while store.any_unfinished().await? && start.elapsed() < limit {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        procs.stop();
        if profile {
            print_statements(&store, 12).await?;
        }
        let (finished, secs) = store.drain_span().await?;
        let run = DepthRun {
            depth,
            finished,
            rate: finished as f64 / secs.max(1e-9),
            plans,
        };
        drop(store);
        self.drop_db(&url).await;
        Ok(run)
    }

    /// Scenario 11 (`--long-transaction`): 2 worker processes; one-step tasks offered at
    /// `rate` per second (a bulk submit every 100 ms); after `warm`, a report opens a
    /// REPEATABLE READ transaction, reads the recovery views (its snapshot is taken) and holds
    /// it for `hold`; then `after` more. Each second: the backlog (steps queued, not started). Per
    /// phase: tasks offered and finished per second, p99 submit → finish (database clock).
    async fn long_transaction(&self, rate: f64, phases: [Duration; 3]) -> Result<LongTx> {
        let [warm, hold, after] = phases;
        let (store, url) = self.fresh("longtx").await?;
        let profile = std::env::var("BENCH_PROFILE").is_ok();
        if profile {
            store.enable_statement_stats().await?;
        }
        let procs = Self::worker_procs(&url, 2, self.sizes.concurrency)?;
        let per_tick = rate / 10.0;
        let started = Instant::now();
        let mut owed = 0.0;
        let mut report = None;
        let mut marks = Vec::new(); // database clock at each phase boundary
        marks.push(store.db_now().await?);
        let mut backlog = Vec::new();
        let mut next_sample = Duration::ZERO;
        let end = warm + hold + after;
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            let t = started.elapsed();
            if t >= end {
                break;
            }
            if report.is_none() && t >= warm && marks.len() == 1 {
                eprintln!("      the report opens its snapshot…");
                report = Some(store.open_report().await?);
                marks.push(store.db_now().await?);
            }
            if t >= warm + hold
                && let Some(r) = report.take()
            {
                store.close_report(r).await?;
                marks.push(store.db_now().await?);
                eprintln!("      the report committed");
            }
            owed += per_tick;
            let n = owed.floor() as usize;
            if n > 0 {
                Self::enqueue_one_step_notify(&store, n).await?;
                owed -= n as f64;
            }
            if t >= next_sample {
                backlog.push((t.as_secs_f64(), store.queued_entries().await?));
                next_sample += Duration::from_secs(1);
            }
        }
        marks.push(store.db_now().await?);
        procs.stop();
        if profile {
            print_statements(&store, 15).await?;
        }
        let phases = store.phase_figures(&marks).await?;
        drop(store);
        self.drop_db(&url).await;
        Ok(LongTx { backlog, phases })
    }

    /// `n` one-step `echo` tasks, submitted as a client would (the workers are woken).
    async fn enqueue_one_step_notify(store: &Store, n: usize) -> Result<()> {
        let plan: PlanSpec = serde_json::from_value(
            json!({"steps": [{"id": "s1", "tool": "echo", "parameters": {"i": 1}}]}),
        )?;
        let task = NewTask {
            description: "offered".into(),
            metadata: json!({}),
            context: json!({}),
            priority: 0,
            idempotency_key: None,
            limits: Self::limits(false),
            plan: Some(plan),
            template: None,
            start: Default::default(),
            webhook: None,
            parent: None,
            concurrency_key: None,
            tenant: trellis::domain::tenant::DEFAULT.into(),
        };
        for chunk in vec![task; n].chunks(1000) {
            if let Err(missing) = store.submit_tasks(chunk).await? {
                bail!("unknown tools {missing:?}");
            }
        }
        Ok(())
    }

    /// Drop a benchmark database (the sweep's largest ones would fill the disk otherwise).
    async fn drop_db(&self, url: &str) {
        if std::env::var("BENCH_KEEP_DB").is_ok() {
            eprintln!("      kept {url}");
            return;
        }
        let name = url.rsplit('/').next().unwrap_or_default().to_string();
        if let Ok(admin) = Store::connect(&self.admin, 2, Duration::from_secs(30)).await {
            let _ = admin.drop_database(&name).await;
        }
    }

    /// Scenario 7: peak RSS of a worker process running 64 concurrent sleep steps.
    async fn memory(&self) -> Result<f64> {
        let (store, url) = self.fresh("memory").await?;
        let exe = std::env::current_exe()?;
        // BENCH_WORKER_WRAP (e.g. `heaptrack -o /tmp/worker`) runs the child under a profiler
        let wrap = std::env::var("BENCH_WORKER_WRAP").unwrap_or_default();
        let mut words = wrap.split_whitespace();
        let mut cmd = match words.next() {
            Some(program) => {
                let mut c = Command::new(program);
                c.args(words).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        let mut child = cmd
            .args(["--as-worker", &url, "64"])
            .stdin(Stdio::null())
            .spawn()
            .context("starting the worker child")?;
        for _ in 0..8 {
            let steps: Vec<Value> = (1..=8)
                .map(
                    |i| json!({"id": format!("s{i}"), "tool": "sleep", "parameters": {"ms": 1500}}),
                )
                .collect();
            Self::submit(&store, Value::Array(steps), false).await?;
        }
        Self::wait_succeeded(&store, 8, Duration::from_secs(60)).await?;
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()))?;
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let _ = child.wait();
        let kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .context("no VmHWM in /proc status")?;
        Ok(kb / 1024.0)
    }
}

/// The per-step cost rows of one throughput run.
fn cost_rows(c: PerStep, when: &str) -> [Row; 3] {
    [
        Row {
            figure: "statements per step (pg_stat_statements)",
            value: c.statements,
            unit: "",
            target: "≤ 3",
            met: c.statements <= 3.0,
            detail: when.to_string(),
        },
        Row {
            figure: "commits per step (pg_stat_database)",
            value: c.commits,
            unit: "",
            target: "≤ 0.1",
            met: c.commits <= 0.1,
            detail: when.to_string(),
        },
        Row {
            figure: "WAL bytes per step (pg_stat_wal)",
            value: c.wal_bytes,
            unit: "B",
            target: "reported",
            met: true,
            detail: when.to_string(),
        },
    ]
}

struct Workers {
    stop: CancellationToken,
    handles: Vec<tokio::task::JoinHandle<Result<(), trellis::store::StoreError>>>,
}

impl Workers {
    async fn stop(self) {
        self.stop.cancel();
        for h in self.handles {
            let _ = h.await;
        }
    }
}

/// Worker processes of a benchmark scenario; stopped with SIGTERM.
struct WorkerProcs {
    children: Vec<std::process::Child>,
}

impl WorkerProcs {
    fn stop(mut self) {
        for c in &self.children {
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        }
        for c in &mut self.children {
            let _ = c.wait();
        }
    }
}

/// The long-transaction scenario's figures.
struct LongTx {
    /// (seconds since the start, steps queued and not started), every second.
    backlog: Vec<(f64, i64)>,
    /// Per phase (before, during, after the report): tasks offered per second, finished per
    /// second, p99 submit → finish in seconds (unfinished tasks count until the phase's end).
    phases: Vec<(f64, f64, f64)>,
}

/// One depth of the sweep.
struct DepthRun {
    depth: usize,
    finished: i64,
    rate: f64,
    /// The claim's statements under `EXPLAIN (ANALYZE, BUFFERS)`: (shared buffers read or
    /// hit, the plan's text).
    plans: Vec<(i64, String)>,
}

/// One `--recovery` run: a line per case and mode, then the totals the targets are about.
fn print_recovery(run: usize, r: &recovery::Run) {
    let pct = |mut v: Vec<f64>, p: f64| {
        if v.is_empty() {
            f64::NAN
        } else {
            percentile(&mut v, p) / 1000.0
        }
    };
    println!(
        "run {run}: {:<34} {:>6} {:>8} {:>9} {:>9} {:>7} | {:>6} {:>8} {:>9} {:>9} {:>7}",
        "case",
        "healed",
        "extra/h",
        "p50 s",
        "p99 s",
        "runaway",
        "healed",
        "extra/h",
        "p50 s",
        "p99 s",
        "runaway"
    );
    let line = |f: &recovery::Figures| {
        let share = if f.recoverable { f.healed } else { f.bounded };
        format!(
            "{:>5}% {:>8.2} {:>9.2} {:>9.2} {:>7}",
            100 * share / f.tasks.max(1),
            f.extra_calls as f64 / f.healed.max(1) as f64,
            pct(f.times_ms.clone(), 50.0),
            pct(f.times_ms.clone(), 99.0),
            f.runaway
        )
    };
    let none = recovery::Figures::default();
    for (i, a) in r.rules.iter().enumerate() {
        let b = r.plain.get(i).unwrap_or(&none);
        let kind = if a.recoverable {
            ""
        } else {
            " (unrecoverable: bounded)"
        };
        let early = if a.early_calls + b.early_calls > 0 {
            format!(" early calls {} | {}", a.early_calls, b.early_calls)
        } else {
            String::new()
        };
        let case = match a.at_once == recovery::MAP_ITEMS {
            true => format!("{} map×{}", a.case, a.at_once),
            false => format!("{} ×{}", a.case, a.at_once),
        };
        println!(
            "run {run}: {case:<34} {} | {}{kind}{early}",
            line(a),
            line(b)
        );
    }
    for (mode, figs) in [("rules brain", &r.rules), ("plain retry", &r.plain)] {
        if figs.is_empty() {
            continue;
        }
        for at_once in recovery::AT_ONCE {
            let sized: Vec<&recovery::Figures> =
                figs.iter().filter(|f| f.at_once == at_once).collect();
            let rec: Vec<&&recovery::Figures> = sized.iter().filter(|f| f.recoverable).collect();
            let unrec: Vec<&&recovery::Figures> = sized.iter().filter(|f| !f.recoverable).collect();
            let tasks: usize = rec.iter().map(|f| f.tasks).sum();
            let healed: usize = rec.iter().map(|f| f.healed).sum();
            let extra: i64 = rec.iter().map(|f| f.extra_calls).sum();
            let times: Vec<f64> = rec.iter().flat_map(|f| f.times_ms.clone()).collect();
            let runaway: usize = sized.iter().map(|f| f.runaway).sum();
            let early: usize = sized.iter().map(|f| f.early_calls).sum();
            let unrec_tasks: usize = unrec.iter().map(|f| f.tasks).sum();
            let bounded: usize = unrec.iter().map(|f| f.bounded).sum();
            let missed: Vec<String> = rec
                .iter()
                .filter(|f| f.healed < f.tasks)
                .map(|f| format!("{} {}/{}", f.case, f.healed, f.tasks))
                .collect();
            let shape = match at_once == recovery::MAP_ITEMS {
                true => format!("a {at_once}-item map"),
                false => format!("{at_once} at once"),
            };
            println!(
                "run {run}: {mode}, {shape}: healed {:.1}% of recoverable ({healed}/{tasks}), {:.2} calls beyond the minimum per healed task, heal p50 {:.2} s p99 {:.2} s, {early} calls before a reset, {runaway} runaway, {:.0}% of unrecoverable bounded ({bounded}/{unrec_tasks}){}",
                100.0 * healed as f64 / tasks.max(1) as f64,
                extra as f64 / healed.max(1) as f64,
                pct(times.clone(), 50.0),
                pct(times, 99.0),
                100.0 * bounded as f64 / unrec_tasks.max(1) as f64,
                if missed.is_empty() {
                    String::new()
                } else {
                    format!("; not healed: {}", missed.join(", "))
                }
            );
        }
    }
}

impl Bench {
    /// The last throughput run's WAL by relation, in bytes per step: `pg_waldump` over its LSN
    /// range, each record counted whole against the first relation it names (a record without
    /// one, such as a commit, against its resource manager). Needs the server's files on this
    /// host (the throwaway cluster); elsewhere it says why it printed nothing.
    async fn print_wal_by_relation(&self, store: &Store, steps: f64) -> Result<()> {
        let range = self.wal_range.lock().ok().and_then(|r| r.clone());
        let (Some((start, end)), Some(bindir)) = (range, self.bindir.clone()) else {
            println!("wal by relation: no WAL range or no pg_waldump");
            return Ok(());
        };
        let wal = PathBuf::from(store.data_directory().await?).join("pg_wal");
        let out = tokio::process::Command::new(bindir.join("pg_waldump"))
            .arg("-p")
            .arg(&wal)
            .args(["-s", &start, "-e", &end])
            .output()
            .await?;
        if !out.status.success() && out.stdout.is_empty() {
            println!(
                "wal by relation: pg_waldump failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return Ok(());
        }
        let mut by: std::collections::HashMap<String, u64> = Default::default();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let total = line
                .split("len (rec/tot):")
                .nth(1)
                .and_then(|r| r.split(',').next())
                .and_then(|r| r.split('/').nth(1))
                .and_then(|t| t.trim().parse::<u64>().ok());
            let Some(total) = total else { continue };
            let key = match line.split(" rel ").nth(1) {
                Some(r) => r.split_whitespace().next().unwrap_or("?").to_string(),
                None => format!(
                    "({})",
                    line.split_whitespace().nth(1).unwrap_or("?").to_lowercase()
                ),
            };
            *by.entry(key).or_default() += total;
        }
        // file nodes to names, summed (a relation may have been rewritten during the run)
        let mut named: std::collections::HashMap<String, u64> = Default::default();
        for (key, bytes) in by {
            let name = match key.rsplit('/').next().and_then(|n| n.parse::<i64>().ok()) {
                Some(node) if key.contains('/') => store
                    .relation_of_filenode(node)
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or(key),
                _ => key,
            };
            *named.entry(name).or_default() += bytes;
        }
        let mut rows: Vec<_> = named.into_iter().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.1));
        let total: u64 = rows.iter().map(|r| r.1).sum();
        println!(
            "wal by relation: {:.0} B per step in all",
            total as f64 / steps
        );
        for (name, bytes) in rows.into_iter().take(30) {
            println!("wal {name:<40} {:>8.1} B per step", bytes as f64 / steps);
        }
        Ok(())
    }
}

/// The statements that took the database's time, one line each (pg_stat_statements).
async fn print_statements(store: &Store, n: i64) -> Result<()> {
    for (calls, total_ms, query) in store.statement_stats(n).await? {
        let q: String = query.split_whitespace().collect::<Vec<_>>().join(" ");
        println!(
            "{calls:>8} calls {total_ms:>10.1} ms  {}",
            q.chars().take(150).collect::<String>()
        );
    }
    Ok(())
}

async fn as_worker(url: &str, concurrency: usize) -> Result<()> {
    let store = Store::connect(url, 20, Duration::from_secs(30)).await?;
    let cfg = Bench::worker_cfg(|c| {
        c.concurrency = concurrency;
        c.claim_batch = concurrency;
    });
    let stop = CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move {
        trellis::shutdown_signal().await;
        s.cancel();
    });
    worker::run(store, cfg, stop).await?;
    Ok(())
}

/// `trellis-worker` as an operator runs it: `startup::run_worker` over `APP_*` (the bench
/// starts it in an empty directory, so only the shipped defaults and its environment count).
async fn as_shipped_worker() -> Result<()> {
    let settings = Settings::load()?;
    let stop = CancellationToken::new();
    trellis::startup::cancel_on_signal(stop.clone());
    trellis::startup::run_worker(&settings, stop).await
}

/// `trellis-api` (no in-process worker) the same way; prints its `listening on` line.
async fn as_shipped_api() -> Result<()> {
    let settings = Settings::load()?;
    let app = trellis::startup::Application::build(settings, false).await?;
    println!("listening on http://{}", app.addr());
    let stop = CancellationToken::new();
    trellis::startup::cancel_on_signal(stop.clone());
    app.run_until_stopped(stop).await
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--as-shipped-worker") => return as_shipped_worker().await,
        Some("--as-shipped-api") => return as_shipped_api().await,
        _ => {}
    }
    if args.first().map(String::as_str) == Some("--as-worker") {
        let url = args.get(1).context("--as-worker URL CONCURRENCY")?;
        let n = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(64);
        return as_worker(url, n).await;
    }
    let json_out = args.iter().any(|a| a == "--json");
    let quick = args.iter().any(|a| a == "--quick");
    let sizes = if quick {
        Sizes {
            concurrency: env_usize("BENCH_CONCURRENCY", DEFAULT_CONCURRENCY as usize),
            tasks: 50,
            steps: 10,
            workers: 2,
            latency_samples: 50,
            recovery_samples: 20,
            history_tasks: 10_000,
            pgbench_secs: 5,
            single_submits: 1600,
            bulk_batches: 6,
        }
    } else {
        Sizes {
            concurrency: env_usize("BENCH_CONCURRENCY", DEFAULT_CONCURRENCY as usize),
            // 20,000 steps: short runs flatter everyone (their first cycles plan the statements)
            tasks: env_usize("BENCH_TASKS", 2_000),
            steps: 10,
            workers: 2,
            latency_samples: 200,
            recovery_samples: 50,
            history_tasks: 100_000,
            pgbench_secs: 10,
            single_submits: 8000,
            bulk_batches: 30,
        }
    };
    let _telemetry = trellis::telemetry::init(&Default::default(), "trellis-bench")?;
    let mut _cluster = None;
    let admin = match std::env::var("DATABASE_URL") {
        Ok(u) if !u.is_empty() => u,
        _ => {
            // stock: the server's own defaults (shared_buffers 128 MB, jit on, max_connections
            // 100), as a user's PostgreSQL has them; `BENCH_SERVER=tuned`: 256 MB of shared
            // buffers and room for 400 connections (--fleet: PostgreSQL's default 100 either way)
            let tuned = std::env::var("BENCH_SERVER").is_ok_and(|s| s == "tuned");
            eprintln!(
                "starting a throwaway PostgreSQL ({}, fsync=on, synchronous_commit=on)…",
                if tuned { "tuned" } else { "stock" }
            );
            let mut settings = vec![
                ("fsync", "on"),
                ("synchronous_commit", "on"),
                ("shared_preload_libraries", "pg_stat_statements"),
            ];
            if tuned && !args.iter().any(|a| a == "--fleet") {
                settings.extend([("shared_buffers", "256MB"), ("max_connections", "400")]);
            }
            let pg =
                tokio::task::spawn_blocking(move || TempPostgres::start_with(&settings)).await??;
            let url = pg.url();
            _cluster = Some(pg);
            url
        }
    };
    let b = Bench {
        admin,
        bindir: find_bindir().ok(),
        sizes,
        wal_range: std::sync::Mutex::new(None),
    };
    if args.iter().any(|a| a == "--profile") {
        // scenario 1 only, then the statements that took the database's time
        let (store, url) = b.fresh("profile").await?;
        let history = env_usize("BENCH_HISTORY_TASKS", 0) as i64;
        if history > 0 {
            store.load_history(history, 10).await?;
        }
        store.enable_statement_stats().await?;
        let (tput, per_step) = b.throughput(&store, &url).await?;
        println!("per step: {per_step:?}");
        println!(
            "{tput:.0} steps/s for {} steps",
            b.sizes.tasks * b.sizes.steps
        );
        print_statements(&store, 25).await?;
        // the hot-path issue's HOT ratio: which updates had to touch an index
        let steps = (b.sizes.tasks * b.sizes.steps).max(1) as f64;
        for t in store.table_writes().await? {
            println!(
                "writes {:<24} {:>8.3} inserts {:>8.3} updates ({:>5.1} % HOT) {:>8.3} deletes per step",
                t.relation,
                t.inserted as f64 / steps,
                t.updated as f64 / steps,
                100.0 * t.hot as f64 / (t.updated.max(1)) as f64,
                t.deleted as f64 / steps,
            );
        }
        b.print_wal_by_relation(&store, steps).await?;
        return Ok(());
    }
    if args.iter().any(|a| a == "--latency") {
        // scenarios 3 and 5 only
        let (p50, p99) = b.latency().await?;
        let recovery = b.recovery().await?;
        println!(
            "submit → start p50 {p50:.2} ms, p99 {p99:.2} ms; failure → retry start p50 {recovery:.2} ms"
        );
        let mut c = fleet::client_latency(&b, 2, 20, b.sizes.latency_samples).await?;
        if std::env::var("BENCH_VERBOSE").is_ok() {
            let slow: Vec<String> = c
                .total
                .iter()
                .enumerate()
                .filter(|(_, v)| **v > 10.0)
                .map(|(i, v)| format!("#{i}: {v:.1}"))
                .collect();
            eprintln!("slow: {}", slow.join(", "));
        }
        println!(
            "as a client reads it (the API and 2 worker processes, events' times, after 20 tasks): submit → start p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms (submit → wake-up p50 {:.2} ms, wake-up → start p50 {:.2} ms); the first 20: p50 {:.2} ms, max {:.2} ms",
            percentile(&mut c.total, 50.0),
            percentile(&mut c.total, 90.0),
            percentile(&mut c.total, 99.0),
            percentile(&mut c.total, 100.0),
            percentile(&mut c.to_wake, 50.0),
            percentile(&mut c.to_claim, 50.0),
            percentile(&mut c.cold, 50.0),
            percentile(&mut c.cold, 100.0)
        );
        return Ok(());
    }
    if args.iter().any(|a| a == "--memory") {
        // scenario 7 only
        println!("worker peak RSS {:.1} MB", b.memory().await?);
        return Ok(());
    }
    if args.iter().any(|a| a == "--task-list") {
        // the dashboard's task list over a large table (scenario 9)
        for (case, ms) in b.task_list().await? {
            let mut v = ms.clone();
            println!(
                "{case:<44} min {:>7.2} ms  median {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms",
                percentile(&mut v, 0.0),
                percentile(&mut v, 50.0),
                percentile(&mut v, 99.0),
                percentile(&mut v, 100.0)
            );
        }
        return Ok(());
    }
    if args.iter().any(|a| a == "--depth") {
        // scenario 10: the depth sweep, BENCH_DEPTH_RUNS times (default 1), with the pgbench
        // ceiling of the same run: the claim's buffers at each depth, then each depth drained
        // at the shipped defaults and at every configuration of the grid
        let depths: Vec<usize> = std::env::var("BENCH_DEPTHS")
            .unwrap_or_else(|_| "2000,100000".into())
            .split(',')
            .filter_map(|d| d.trim().parse().ok())
            .collect();
        let limit = Duration::from_secs(env_usize("BENCH_DEPTH_LIMIT_SECS", 1800) as u64);
        let show_plans = std::env::var("BENCH_SHOW_PLANS").is_ok();
        let configs = std::env::var("BENCH_DEPTH_CONFIGS").map_or(true, |v| v != "0");
        // graphile-worker beside it (BENCH_PEERS=0 leaves it out)
        let graphile = match std::env::var("BENCH_PEERS").map_or(true, |v| v != "0") {
            true => peers::graphile()?,
            false => None,
        };
        for run in 1..=env_usize("BENCH_DEPTH_RUNS", 1) {
            let (_, pgb_url) = b.fresh("pgbench").await?;
            let ceiling = b.pgbench(&pgb_url)?;
            b.drop_db(&pgb_url).await;
            println!("run {run}: pgbench -N ceiling {ceiling:.0} TPS");
            let mut base = None;
            for &d in &depths {
                eprintln!("[depth] {d} one-step tasks…");
                let r = b.depth(d, limit).await?;
                let base_rate = *base.get_or_insert(r.rate);
                let buffers: Vec<String> = r.plans.iter().map(|(b, _)| b.to_string()).collect();
                println!(
                    "run {run}: depth {:>8}: {:>8} finished, {:>7.0} tasks/s = {:.2} × the first depth, {:.2} × ceiling; claim buffers {}",
                    r.depth,
                    r.finished,
                    r.rate,
                    r.rate / base_rate,
                    r.rate / ceiling,
                    buffers.join(" + ")
                );
                if show_plans {
                    for (_, plan) in &r.plans {
                        println!("{plan}");
                    }
                }
                if configs {
                    fleet::depth_configs(&b, run, d).await?;
                }
                if let Some(dir) = &graphile {
                    for mode in ["default", "batched"] {
                        eprintln!("[depth] graphile-worker {mode}, {d} jobs…");
                        let rate = peers::graphile_drain(&b, dir, d, 2, mode).await?;
                        println!(
                            "run {run}: depth {d:>8}: graphile-worker {mode:<7} (2 processes) {rate:>7.0} jobs/s = {:.2} × ceiling; Trellis's first drain is {:.2} × it",
                            rate / ceiling,
                            r.rate / rate
                        );
                    }
                }
            }
        }
        return Ok(());
    }
    if args.iter().any(|a| a == "--fleet") {
        // scenario 14: fleets directly and through a transaction pooler
        let socket = _cluster
            .as_ref()
            .map(|pg: &TempPostgres| pg.socket_dir().to_path_buf());
        let (pooler, _bouncer) = fleet::pooler(&b.admin, socket)?;
        for run in 1..=env_usize("BENCH_FLEET_RUNS", 1) {
            fleet::sweep(&b, run, &pooler).await?;
            let samples = env_usize("BENCH_LATENCY_SAMPLES", 200);
            if samples > 0 {
                let (p50, p99) = fleet::latency(&b, &pooler, samples).await?;
                println!(
                    "run {run}: through the pooler with listen_url: submit → start p50 {p50:.2} ms, p99 {p99:.2} ms"
                );
            }
            if std::env::var("BENCH_FLEET_WHOLE").map_or(true, |v| v != "0") {
                let r = fleet::whole(
                    &b,
                    &pooler,
                    env_usize("BENCH_FLEET_WORKERS", 64),
                    env_usize("BENCH_FLEET_TASKS", 20_000),
                    env_usize("BENCH_FLEET_DAGS", 200),
                    env_usize("BENCH_FLEET_KILL", 8),
                )
                .await?;
                println!(
                    "run {run}: the API and {} workers through the pooler: {}/{} tasks succeeded in {:.1} s, {} of {} answers 5xx, {} steps completed twice, {} killed (-9), {} died otherwise, {} server sessions at the peak",
                    env_usize("BENCH_FLEET_WORKERS", 64),
                    r.succeeded,
                    r.tasks,
                    r.secs,
                    r.fives,
                    r.requests,
                    r.twice,
                    r.killed,
                    r.died,
                    r.peak
                );
            }
        }
        return Ok(());
    }
    if args.iter().any(|a| a == "--long-transaction") {
        // scenario 11: capacity from a 20,000-task drain (or BENCH_CAPACITY), half of it
        // offered, a 3-minute REPEATABLE READ report in the middle
        let secs = |k: &str, d: usize| Duration::from_secs(env_usize(k, d) as u64);
        let phases = [
            secs("BENCH_LONGTX_WARM_SECS", 60),
            secs("BENCH_LONGTX_HOLD_SECS", 180),
            secs("BENCH_LONGTX_AFTER_SECS", 60),
        ];
        for run in 1..=env_usize("BENCH_LONGTX_RUNS", 1) {
            let capacity = match std::env::var("BENCH_CAPACITY")
                .ok()
                .and_then(|v| v.parse().ok())
            {
                Some(c) => c,
                None => {
                    eprintln!("[long transaction] capacity: 20,000 one-step tasks drained…");
                    b.depth(20_000, Duration::from_secs(600)).await?.rate
                }
            };
            let rate = capacity / 2.0;
            eprintln!("[long transaction] offering {rate:.0} tasks/s…");
            let r = b.long_transaction(rate, phases).await?;
            println!("run {run}: capacity {capacity:.0} tasks/s, offered {rate:.0} tasks/s");
            for (name, (offered, finished, p99)) in ["before", "during the report", "after"]
                .iter()
                .zip(&r.phases)
            {
                println!(
                    "run {run}: {name:<18} offered {offered:>6.0}/s finished {finished:>6.0}/s = {:.2} × offered, p99 submit → finish {p99:.2} s",
                    finished / offered.max(1e-9)
                );
            }
            let at = |t: f64| {
                r.backlog
                    .iter()
                    .min_by(|a, b| (a.0 - t).abs().partial_cmp(&(b.0 - t).abs()).unwrap())
                    .map(|b| b.1)
                    .unwrap_or(0)
            };
            let (w, h) = (phases[0].as_secs_f64(), phases[1].as_secs_f64());
            let before = at(w - 1.0);
            let peak = r.backlog.iter().map(|b| b.1).max().unwrap_or(0);
            println!(
                "run {run}: backlog before the report {before}, peak {peak}, at the commit {}, 60 s after {}",
                at(w + h),
                at(w + h + 60.0)
            );
            if std::env::var("BENCH_SHOW_BACKLOG").is_ok() {
                for (t, n) in &r.backlog {
                    println!("{t:.0} {n}");
                }
            }
        }
        return Ok(());
    }
    if args.iter().any(|a| a == "--recovery") {
        // scenario 12: every fault class with the three tiers and with plain retries
        for run in 1..=env_usize("BENCH_RECOVERY_RUNS", 1) {
            let plain = env_usize("BENCH_RECOVERY_PLAIN", 1) != 0;
            let r = recovery::run(async |name: &str| b.fresh(name).await, plain).await?;
            print_recovery(run, &r);
        }
        return Ok(());
    }
    if args.iter().any(|a| a == "--waits") {
        // scenario 13: waits resolved by events, webhook deliveries
        let n = env_usize("BENCH_WAITS", if quick { 1_000 } else { 10_000 });
        let d = env_usize("BENCH_DELIVERIES", if quick { 200 } else { 1_000 });
        let r = waits::run(&b, n, d).await?;
        println!(
            "{} waits resolved by events: {:.0} resolutions/s ({:.0} tasks/s to their end); {} webhook deliveries: {:.0} deliveries/s",
            r.waits,
            r.resolutions_per_sec,
            r.end_to_end_per_sec,
            r.deliveries,
            r.deliveries_per_sec
        );
        return Ok(());
    }
    if args.iter().any(|a| a == "--fairness") {
        // scenario 17: fair queues (the fairness issue); BENCH_FAIR_PARTS picks parts
        // (small,weights,depth,cap,aging)
        let parts = std::env::var("BENCH_FAIR_PARTS")
            .unwrap_or_else(|_| "small,weights,depth,cap,aging".into());
        let part = |p: &str| parts.split(',').any(|x| x.trim() == p);
        if part("small") {
            let before = fairness::small_key(&b).await?;
            println!(
                "a small key behind a backlog: key a had 50,000 queued, key b then 100; {before} of a's tasks had ended when b's last one did (target < 2,000): {}",
                if before < 2_000 { "ok" } else { "MISSED" }
            );
        }
        if part("weights") {
            let (heavy, light) = fairness::weights(&b).await?;
            let ratio = heavy as f64 / light.max(1) as f64;
            println!(
                "weights 3 : 1, both backlogged: {heavy} : {light} of the first 10,000 = {ratio:.2} (target 3 ± 10 %): {}",
                if (2.7..=3.3).contains(&ratio) {
                    "ok"
                } else {
                    "MISSED"
                }
            );
        }
        if part("depth") {
            let (one_bufs, one_rate) = fairness::at_depth(&b, 1).await?;
            let (many_bufs, many_rate) = fairness::at_depth(&b, 1_000).await?;
            let worst = |v: &[i64]| v.last().copied().unwrap_or(0);
            println!(
                "100,000 queued: 1 key: claim buffers {one_bufs:?}, drain {one_rate:.0} tasks/s; 1,000 keys: claim buffers {many_bufs:?}, drain {many_rate:.0} tasks/s = {:.2} × (targets: buffers within 2 ×, drain ≥ 0.8 ×): {}",
                many_rate / one_rate,
                if worst(&many_bufs) <= 2 * worst(&one_bufs).max(1) && many_rate >= 0.8 * one_rate {
                    "ok"
                } else {
                    "MISSED"
                }
            );
        }
        if part("cap") {
            let (peak, rate) = fairness::capped(&b).await?;
            println!(
                "max_running 2 on a key, 4 workers, 10,000 queued tasks of it: at most {peak} ran at once ({rate:.0} tasks/s): {}",
                if peak <= 2 { "ok" } else { "MISSED" }
            );
        }
        if part("aging") {
            // an interval longer than a stream task's wait (the stream is kept one to two seconds
            // of work deep), so that aging raises only the task left behind
            let interval = Duration::from_secs(3);
            let waited = fairness::aging(&b, interval).await?;
            // five levels, each within 1.1 intervals of its due time, and a claim
            let bound = 5.0 * 1.1 * interval.as_secs_f64() + 1.0;
            println!(
                "aging every {interval:?} up to 5 levels: a priority-0 task behind a stream of priority-5 tasks started after {waited:.2} s (bound {bound:.1} s): {}",
                if waited <= bound { "ok" } else { "MISSED" }
            );
        }
        return Ok(());
    }
    if args.iter().any(|a| a == "--map") {
        // scenario 16: a map over 10,000 items against the same steps written out
        let n = env_usize("BENCH_MAP_ITEMS", if quick { 1_000 } else { 10_000 });
        for run in 1..=env_usize("BENCH_MAP_RUNS", 1) {
            let r = maps::run(&b, n).await?;
            let mut bufs = r.map_buffers.clone();
            bufs.sort_unstable();
            let (lo, mid, hi) = match bufs.as_slice() {
                [] => (0, 0, 0),
                v => (v[0], v[v.len() / 2], v[v.len() - 1]),
            };
            println!(
                "run {run}: {} steps written out {:.0} steps/s; a map over {} items {:.0} steps/s = {:.2} × (expanded in {:.2} s); claim buffers shallow {} / during the map {lo} / {mid} / {hi}",
                r.items,
                r.plan_rate,
                r.items,
                r.map_rate,
                r.map_rate / r.plan_rate,
                r.expansion_secs,
                r.shallow_buffers
            );
        }
        return Ok(());
    }
    if let Some(i) = args.iter().position(|a| a == "--soak") {
        // the proofs issue's soak: hours at half capacity, figures per 10 minutes
        let d = args.get(i + 1).context("--soak DURATION (2h, 90m, 600s)")?;
        if !soak::run(&b, soak::parse_duration(d)?).await? {
            bail!("the soak failed: a figure rose, a task was lost or an answer was 5xx");
        }
        return Ok(());
    }
    if args.iter().any(|a| a == "--submit") {
        // scenario 8 only
        let (single, bulk) = b.submit_rates().await?;
        println!("single {single:.0} tasks/s, bulk {bulk:.0} tasks/s");
        return Ok(());
    }
    let s = &b.sizes;
    let mut rows = Vec::new();
    let total_steps = s.tasks * s.steps;

    eprintln!(
        "[1/7] throughput: {} tasks × {} echo steps, {} workers × {}…",
        s.tasks, s.steps, s.workers, s.concurrency
    );
    let (store1, url1) = b.fresh("throughput").await?;
    let (tput, cost) = b.throughput(&store1, &url1).await?;
    eprintln!("      pgbench -N -c 8 for {} s…", s.pgbench_secs);
    let (_, pgb_url) = b.fresh("pgbench").await?;
    let ceiling = b.pgbench(&pgb_url)?;
    rows.push(Row {
        figure: "no-op steps/s ÷ pgbench -N ceiling (2 workers)",
        value: tput / ceiling,
        unit: "×",
        target: "≥ 1.0",
        met: tput / ceiling >= 1.0,
        detail: format!("{tput:.0} steps/s vs {ceiling:.0} TPS"),
    });

    eprintln!(
        "[2/7] apalis-postgres: {total_steps} no-op jobs, {} workers × {}…",
        s.workers, s.concurrency
    );
    let (_, apalis_url) = b.fresh("apalis").await?;
    let peer = b.apalis(&apalis_url).await?;
    rows.push(Row {
        figure: "Trellis ÷ apalis-postgres no-op throughput",
        value: tput / peer,
        unit: "×",
        target: "≥ 1.5",
        met: tput / peer >= 1.5,
        detail: format!("{tput:.0} steps/s vs {peer:.0} jobs/s"),
    });

    if let Some(c) = cost {
        rows.extend(cost_rows(c, "empty queue"));
    }

    eprintln!("[8] submit: single POSTs from 16 connections, then bulk POSTs of 1000…");
    let (single, bulk) = b.submit_rates().await?;
    rows.push(Row {
        figure: "single POST /tasks (2-step) ÷ pgbench -N ceiling, 16 connections",
        value: single / ceiling,
        unit: "×",
        target: "≥ 0.5",
        met: single / ceiling >= 0.5,
        detail: format!("{single:.0} tasks/s vs {ceiling:.0} TPS"),
    });
    rows.push(Row {
        figure: "bulk POST /tasks/batch (1000 per request)",
        value: bulk,
        unit: "tasks/s",
        target: "≥ 20000",
        met: bulk >= 20000.0,
        detail: format!("{} requests, 2 connections", b.sizes.bulk_batches),
    });

    eprintln!(
        "[3/7] latency: {} one-step tasks, idle worker…",
        s.latency_samples
    );
    let (p50, p99) = b.latency().await?;
    rows.push(Row {
        figure: "submit → start latency p50, idle",
        value: p50,
        unit: "ms",
        target: "≤ 5",
        met: p50 <= 5.0,
        detail: String::new(),
    });
    rows.push(Row {
        figure: "submit → start latency p99, idle",
        value: p99,
        unit: "ms",
        target: "≤ 25",
        met: p99 <= 25.0,
        detail: String::new(),
    });
    eprintln!("[3b] latency as a client reads it: the API and 2 worker processes…");
    let mut c = fleet::client_latency(&b, 2, 20, s.latency_samples).await?;
    let (p50, p99) = (
        percentile(&mut c.total, 50.0),
        percentile(&mut c.total, 99.0),
    );
    rows.push(Row {
        figure: "submit → start p50 as a client reads it (events), idle",
        value: p50,
        unit: "ms",
        target: "≤ 3",
        met: p50 <= 3.0,
        detail: format!(
            "API + 2 worker processes over HTTP; submit → wake-up p50 {:.2} ms",
            percentile(&mut c.to_wake, 50.0)
        ),
    });
    rows.push(Row {
        figure: "submit → start p99 as a client reads it (events), idle",
        value: p99,
        unit: "ms",
        target: "≤ 10",
        met: p99 <= 10.0,
        detail: format!(
            "after 20 warm-up tasks (their max {:.1} ms)",
            percentile(&mut c.cold, 100.0)
        ),
    });

    eprintln!("[4/7] DAG: 5 + 5 steps of 100 ms, parallel vs sequential…");
    let (par, seq) = b.dag().await?;
    rows.push(Row {
        figure: "DAG parallel speedup (scenario 4)",
        value: seq / par,
        unit: "×",
        target: "≥ 4.5",
        met: seq / par >= 4.5,
        detail: format!("parallel {par:.0} ms, sequential {seq:.0} ms"),
    });

    eprintln!(
        "[5/7] recovery overhead: {} steps failing once…",
        s.recovery_samples
    );
    let gap = b.recovery().await?;
    rows.push(Row {
        figure: "recovery overhead p50 (failure → retry started)",
        value: gap,
        unit: "ms",
        target: "≤ 10",
        met: gap <= 10.0,
        detail: "through step reflection (rules brain), tier 1".into(),
    });

    eprintln!(
        "[6/7] history: loading {} finished steps…",
        s.history_tasks * 10
    );
    let (store6, url6) = b.fresh("history").await?;
    let load = Instant::now();
    store6.load_history(s.history_tasks, 10).await?;
    let loaded = store6.count_all_steps().await?;
    eprintln!(
        "      loaded {loaded} steps in {:.0} s; throughput again…",
        load.elapsed().as_secs_f64()
    );
    let (tput_hist, cost_hist) = b.throughput(&store6, &url6).await?;
    rows.push(Row {
        figure: "throughput after 1M finished steps ÷ empty",
        value: tput_hist / tput,
        unit: "×",
        target: "≥ 0.9",
        met: tput_hist / tput >= 0.9,
        detail: format!("{tput_hist:.0} vs {tput:.0} steps/s, {loaded} steps in the table"),
    });

    if let Some(c) = cost_hist {
        rows.extend(cost_rows(c, "with history"));
    }

    eprintln!("      throughput again while the workers prune the expired history…");
    let history_before = store6.count_tasks("succeeded").await?;
    let (tput_prune, _) = b
        .throughput_with(&store6, &url6, |cfg| {
            cfg.retention.finished_task_ttl_secs = 3600;
            cfg.retention.interval = Duration::from_millis(200);
        })
        .await?;
    let pruned = history_before + s.tasks as i64 - store6.count_tasks("succeeded").await?;
    rows.push(Row {
        figure: "throughput while pruning history ÷ empty",
        value: tput_prune / tput,
        unit: "×",
        target: "reported",
        met: true,
        detail: format!(
            "{tput_prune:.0} vs {tput:.0} steps/s; {pruned} expired tasks deleted meanwhile"
        ),
    });

    eprintln!("[7/7] memory: worker process with 64 concurrent sleep steps…");
    let rss = b.memory().await?;
    rows.push(Row {
        figure: "worker peak RSS at 64 concurrent steps",
        value: rss,
        unit: "MB",
        target: "≤ 60",
        met: rss <= 60.0,
        detail: String::new(),
    });

    if json_out {
        let v: Vec<Value> = rows
            .iter()
            .map(|r| json!({"figure": r.figure, "value": r.value, "unit": r.unit, "target": r.target, "met": r.met, "detail": r.detail}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("| figure | measured | target | met | detail |");
        println!("|---|---|---|---|---|");
        for r in &rows {
            println!(
                "| {} | {:.2} {} | {} | {} | {} |",
                r.figure,
                r.value,
                r.unit,
                r.target,
                if r.met { "yes" } else { "no" },
                r.detail
            );
        }
    }
    Ok(())
}

/// A worker's pool in the throughput scenarios: the shipped size ([`WORKER_POOL`], whatever the
/// worker's concurrency), or `BENCH_WORKER_POOL`.
fn worker_pool() -> u32 {
    env_usize("BENCH_WORKER_POOL", WORKER_POOL as usize) as u32
}
