//! A worker's connection budget (direct, no pooler): at most 3 server connections (its pool of
//! 2 and LISTEN's) whatever its concurrency and load, so 25 workers and the API fit in
//! PostgreSQL's default `max_connections = 100` under a failure storm.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use trellis::devpg::TempPostgres;
use trellis::store::Store;
use trellis::testkit::procs::{DevApi, WorkerProc, terminal_tasks};
use trellis::testkit::{TestDb, fresh_db, fresh_db_on, wait_for};

/// The most server sessions of `db` seen while sampling (every 20 ms until `stop`): one worker
/// process's (each names its sessions `worker-<n>`) and the database's in all.
#[derive(Default, Debug)]
struct Peaks {
    per_worker: i64,
    total: i64,
}

fn sample(admin: Store, db: String, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<Peaks> {
    tokio::spawn(async move {
        let mut p = Peaks::default();
        while !stop.load(Ordering::Acquire) {
            let (per_worker, total): (Option<i64>, Option<i64>) = sqlx::query_as(
                "SELECT max(n) FILTER (WHERE app LIKE 'worker-%'), sum(n)::int8
                 FROM (SELECT application_name AS app, count(*) AS n FROM pg_stat_activity
                       WHERE datname = $1 AND pid <> pg_backend_pid()
                       GROUP BY application_name) x",
            )
            .bind(&db)
            .fetch_one(admin.pool())
            .await
            .unwrap();
            p.per_worker = p.per_worker.max(per_worker.unwrap_or(0));
            p.total = p.total.max(total.unwrap_or(0));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        p
    })
}

/// A worker process whose sessions are named `worker-<n>`.
fn worker(db: &TestDb, n: usize, concurrency: &str) -> WorkerProc {
    let name = format!("worker-{n}");
    WorkerProc::start(
        db,
        &[
            ("APP_WORKER__CONCURRENCY", concurrency),
            ("APP_WORKER__LEASE_SECS", "30"),
            ("APP_WORKER__RETRY_BACKOFF_MS", "10"),
            ("APP_WORKER__RETRY_BACKOFF_MAX_MS", "50"),
            ("APP_DATABASE__APPLICATION_NAME", &name),
        ],
    )
}

/// A failure storm: `n` tasks whose step fails twice and heals, `n` whose step never
/// heals (every tier of recovery runs, each a decision), and `n` plain ones.
fn storm(n: usize) -> Vec<serde_json::Value> {
    let mut tasks = Vec::new();
    for i in 0..n {
        for (fail, label) in [(2, "heals"), (1000, "fails"), (0, "plain")] {
            tasks.push(json!({"description": label, "plan": {"steps": [
                {"id": "s", "tool": "flaky", "parameters": {"fail_times": fail, "i": i}}]}}));
        }
    }
    tasks
}

/// One worker at concurrency 256 under a failure storm holds at most 3 server connections.
#[tokio::test]
async fn a_worker_holds_three_connections_at_concurrency_256() {
    let db = fresh_db().await;
    let store = db.store.clone();
    for body in storm(150) {
        let t: trellis::store::submit::NewTask =
            trellis::testkit::new_task(body["plan"]["steps"].clone());
        store.submit_task(&t).await.unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let peaks = sample(store.clone(), db.name.clone(), stop.clone());
    let mut w = worker(&db, 0, "256");
    wait_for("the storm to end", Duration::from_secs(240), || async {
        (terminal_tasks(&store).await == 450).then_some(())
    })
    .await;
    stop.store(true, Ordering::Release);
    let peaks = peaks.await.unwrap();
    eprintln!("server sessions at the peak: {peaks:?}");
    assert!(w.child.try_wait().unwrap().is_none(), "the worker is alive");
    assert!(
        (2..=3).contains(&peaks.per_worker),
        "a worker's sessions at the peak: {peaks:?}"
    );
    assert_eq!(store.count_tasks("succeeded").await.unwrap(), 300);
}

/// 25 workers and the API, on a server with `max_connections = 100`, through a failure storm
/// submitted through the API: no process runs out of connections, no answer is a 5xx, every
/// task ends, and the server always had room left.
#[tokio::test]
async fn twenty_five_workers_and_the_api_fit_in_100_connections() {
    let pg = tokio::task::spawn_blocking(|| {
        TempPostgres::start_with(&[
            ("fsync", "off"),
            ("full_page_writes", "off"),
            ("max_connections", "100"),
        ])
    })
    .await
    .unwrap()
    .unwrap();
    let db = fresh_db_on(&pg.url()).await;
    let store = db.store.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let peaks = sample(store.clone(), db.name.clone(), stop.clone());
    let api = DevApi::start_args(
        "fit-api",
        &[],
        &[
            ("DATABASE_URL", db.url.as_str()),
            ("APP_AUTH__DISABLED", "true"),
            ("APP_DATABASE__APPLICATION_NAME", "api"),
        ],
    )
    .await;
    let mut workers: Vec<WorkerProc> = (0..25).map(|n| worker(&db, n, "64")).collect();
    let http = reqwest::Client::new();
    let bodies = storm(100);
    let mut fives = Vec::new();
    for chunk in bodies.chunks(100) {
        let res = http
            .post(format!("{}/api/v1/tasks/batch", api.base))
            .json(&json!({ "tasks": chunk }))
            .send()
            .await
            .unwrap();
        if res.status().is_server_error() {
            fives.push(res.status());
        }
        assert!(res.status().is_success(), "{:?}", res.text().await);
    }
    wait_for("the storm to end", Duration::from_secs(300), || async {
        let (s, v) = {
            let r = http
                .get(format!("{}/api/v1/stats", api.base))
                .send()
                .await
                .unwrap();
            (r.status(), r.json::<serde_json::Value>().await.unwrap())
        };
        if s.is_server_error() {
            panic!("a 5xx from the API: {s} {v}");
        }
        (terminal_tasks(&store).await == 300).then_some(())
    })
    .await;
    stop.store(true, Ordering::Release);
    let peaks = peaks.await.unwrap();
    eprintln!("server sessions at the peak: {peaks:?}");
    assert!(fives.is_empty(), "{fives:?}");
    for w in &mut workers {
        assert!(
            w.child.try_wait().unwrap().is_none(),
            "every worker is alive"
        );
    }
    assert!(peaks.per_worker <= 3, "{peaks:?}");
    assert!(
        peaks.total <= 25 * 3 + 20 + 2,
        "workers, the API's 20 and the test's own: {peaks:?}"
    );
    assert_eq!(store.count_tasks("succeeded").await.unwrap(), 200);
    drop(api);
}
