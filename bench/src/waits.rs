//! Scenario 13 (`--waits`): 10,000 steps waiting for events, resolved by `POST /events`'s store
//! call from 16 concurrent clients (resolutions/s, and until every task ended); then 1,000
//! webhook deliveries to a receiver on loopback (deliveries/s, database clock).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::json;
use trellis::domain::PlanSpec;
use trellis::domain::status::WaitStatus;
use trellis::store::Store;
use trellis::store::submit::NewTask;
use trellis::store::waits::WaitFilter;

use crate::Bench;
use crate::sql::BenchSql;

/// What the scenario measured.
pub struct Waits {
    pub waits: usize,
    pub resolutions_per_sec: f64,
    pub end_to_end_per_sec: f64,
    pub deliveries: usize,
    pub deliveries_per_sec: f64,
}

fn task(steps: serde_json::Value) -> Result<NewTask> {
    let plan: PlanSpec = serde_json::from_value(json!({ "steps": steps }))?;
    let mut t = trellis::testkit::new_task(json!([]));
    t.plan = Some(plan);
    t.description = "bench waits".into();
    Ok(t)
}

async fn submit_all(store: &Store, tasks: Vec<NewTask>) -> Result<()> {
    for chunk in tasks.chunks(1000) {
        if let Err(missing) = store.submit_tasks_quietly(chunk).await? {
            bail!("unknown tools {missing:?}");
        }
    }
    store.announce_ready(false).await?;
    Ok(())
}

async fn open_waits(store: &Store) -> Result<usize> {
    Ok(store
        .list_waits(&WaitFilter {
            status: Some(WaitStatus::Open),
            limit: 20_000,
            ..Default::default()
        })
        .await?
        .len())
}

pub async fn run(b: &Bench, n: usize, deliveries: usize) -> Result<Waits> {
    let (store, url) = b.fresh("waits").await?;
    let tasks = (0..n)
        .map(|i| {
            task(json!([{"id": "w", "tool": "wait_event", "parameters": {"key": format!("k{i}")}}]))
        })
        .collect::<Result<Vec<_>>>()?;
    submit_all(&store, tasks).await?;
    let w = b
        .workers(&url, 2, |c| {
            c.concurrency = 64;
            // the receiver is on loopback
            c.outbound = trellis::net::Outbound::new(
                vec!["127.0.0.1/32".parse().expect("a network")],
                1 << 20,
            );
        })
        .await?;
    let start = Instant::now();
    while open_waits(&store).await? < n {
        if start.elapsed() > Duration::from_secs(300) {
            bail!("the steps did not all park");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "      {n} steps wait (parked in {:.1} s)",
        start.elapsed().as_secs_f64()
    );
    let next = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..16 {
        let (store, next) = (store.clone(), next.clone());
        clients.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<_, anyhow::Error>(());
                }
                let got = store
                    .post_event("default", &format!("k{i}"), &json!({"i": i}))
                    .await?;
                if got != 1 {
                    bail!("event k{i} resolved {got} waits");
                }
            }
        }));
    }
    for c in clients {
        c.await??;
    }
    let resolved = began.elapsed();
    Bench::wait_succeeded(&store, n as i64, Duration::from_secs(600)).await?;
    let ended = began.elapsed();

    // webhooks: a subscription to task_succeeded at a receiver on loopback
    let received = Arc::new(AtomicUsize::new(0));
    let addr = receiver(received.clone()).await?;
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    store
        .create_webhook(
            &format!("http://{addr}/"),
            &["task_succeeded".into()],
            None,
            secret,
            trellis::domain::tenant::DEFAULT,
        )
        .await?;
    let tasks = (0..deliveries)
        .map(|_| task(json!([{"id": "e", "tool": "echo"}])))
        .collect::<Result<Vec<_>>>()?;
    submit_all(&store, tasks).await?;
    let start = Instant::now();
    while received.load(Ordering::Relaxed) < deliveries {
        if start.elapsed() > Duration::from_secs(300) {
            bail!(
                "only {} deliveries arrived",
                received.load(Ordering::Relaxed)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    w.stop().await;
    let (first, last) = store.delivery_span().await?;
    let secs = (last - first).num_milliseconds().max(1) as f64 / 1000.0;
    Ok(Waits {
        waits: n,
        resolutions_per_sec: n as f64 / resolved.as_secs_f64(),
        end_to_end_per_sec: n as f64 / ended.as_secs_f64(),
        deliveries,
        deliveries_per_sec: deliveries as f64 / secs,
    })
}

/// A receiver answering 204 to every `POST`, counting them.
pub(crate) async fn receiver(count: Arc<AtomicUsize>) -> Result<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move || {
            let count = count.clone();
            async move {
                count.fetch_add(1, Ordering::Relaxed);
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(addr)
}
