//! Scenario 17 (`--fairness`, the fairness issue), 2 in-process workers at the shipped
//! defaults, one-step `echo` tasks, figures from the attempts (database clock):
//! 1. **A small key behind a backlog**: key `a` has 50,000 queued tasks, then key `b` submits
//!    100. How many of `a`'s tasks had ended when `b`'s last one ended (the target: fewer than
//!    2,000).
//! 2. **Weights 3 : 1**: keys `heavy` (weight 3) and `light` (weight 1), 20,000 queued tasks
//!    each; the share served while both are backlogged (the first 10,000 to end).
//! 3. **Many keys at depth**: 100,000 queued tasks of 1 key, then of 1,000 keys (100 each):
//!    the claim's shared buffers (three samples) and the drain rate of the first 20,000.
//! 4. **Aging**: a stream of priority-5 tasks offered at capacity (50 ms sleeps on a small
//!    fleet), then one priority-0 task, with aging every 3 s up to 5 levels: how long it
//!    waited to start.
//! 5. **max_running**: 10,000 queued tasks of one key whose pattern sets `max_running` 2, drained
//!    by 4 workers: the most of its steps that ran at once, from the attempts' start and end.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::json;
use trellis::domain::PlanSpec;
use trellis::store::Store;
use trellis::store::submit::NewTask;

use crate::Bench;
use crate::sql::BenchSql;

fn task(key: Option<String>, priority: i32, i: usize) -> Result<NewTask> {
    tool_task(
        key,
        priority,
        json!({"id": "s", "tool": "echo", "parameters": {"i": i}}),
    )
}

fn tool_task(key: Option<String>, priority: i32, step: serde_json::Value) -> Result<NewTask> {
    let plan: PlanSpec = serde_json::from_value(json!({ "steps": [step] }))?;
    let mut t = trellis::testkit::new_task(json!([]));
    t.plan = Some(plan);
    t.description = "bench fairness".into();
    t.priority = priority;
    t.concurrency_key = key;
    Ok(t)
}

/// Submit `n` tasks of `key(i)` in batches of 5,000.
async fn submit(
    store: &Store,
    n: usize,
    priority: i32,
    key: impl Fn(usize) -> Option<String>,
) -> Result<()> {
    let mut i = 0;
    while i < n {
        let batch = (i..(i + 5_000).min(n))
            .map(|j| task(key(j), priority, j))
            .collect::<Result<Vec<_>>>()?;
        i += batch.len();
        store.submit_tasks_quietly(&batch).await?.ok();
    }
    Ok(())
}

async fn ended(store: &Store) -> Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM attempts WHERE finished_at IS NOT NULL")
            .fetch_one(store.pool())
            .await?,
    )
}

async fn wait_until(
    store: &Store,
    what: &str,
    limit: Duration,
    done: impl Fn(i64) -> bool,
) -> Result<()> {
    let start = Instant::now();
    while !done(ended(store).await?) {
        if start.elapsed() > limit {
            bail!("{what}: not within {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Part 1: how many of `a`'s tasks ended before `b`'s last one did.
pub async fn small_key(b: &Bench) -> Result<i64> {
    let (store, url) = b.fresh("fair_small").await?;
    submit(&store, 50_000, 0, |_| Some("a".into())).await?;
    submit(&store, 100, 0, |_| Some("b".into())).await?;
    let w = b.workers(&url, 2, |_| {}).await?;
    let start = Instant::now();
    loop {
        let left: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM tasks WHERE concurrency_key = 'b' AND finished_at IS NULL",
        )
        .fetch_one(store.pool())
        .await?;
        if left == 0 {
            break;
        }
        if start.elapsed() > Duration::from_secs(600) {
            bail!("b's tasks did not end");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    w.stop().await;
    let before: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM attempts a JOIN tasks t ON t.id = a.task_id
         WHERE t.concurrency_key = 'a' AND a.finished_at <= (
             SELECT max(x.finished_at) FROM attempts x JOIN tasks y ON y.id = x.task_id
             WHERE y.concurrency_key = 'b')",
    )
    .fetch_one(store.pool())
    .await?;
    drop(store);
    b.drop_db(&url).await;
    Ok(before)
}

/// Part 2: heavy ÷ light among the first 10,000 tasks to end.
pub async fn weights(b: &Bench) -> Result<(i64, i64)> {
    let (store, url) = b.fresh("fair_weights").await?;
    store.put_key_limit("heavy", 3.0, None).await?;
    // interleaved submits, as two customers would send them
    for _ in 0..4 {
        submit(&store, 5_000, 0, |_| Some("heavy".into())).await?;
        submit(&store, 5_000, 0, |_| Some("light".into())).await?;
    }
    let w = b.workers(&url, 2, |_| {}).await?;
    wait_until(&store, "10,000 tasks", Duration::from_secs(600), |n| {
        n >= 10_000
    })
    .await?;
    w.stop().await;
    let (heavy, light): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE k = 'heavy'), count(*) FILTER (WHERE k = 'light')
         FROM (SELECT t.concurrency_key AS k FROM attempts a JOIN tasks t ON t.id = a.task_id
               WHERE a.finished_at IS NOT NULL ORDER BY a.finished_at, a.id LIMIT 10000) x",
    )
    .fetch_one(store.pool())
    .await?;
    drop(store);
    b.drop_db(&url).await;
    Ok((heavy, light))
}

/// Part 3, one side: the claim's buffers at depth (three samples) and the drain rate of the
/// first 20,000 tasks of 100,000 queued over `keys` keys.
pub async fn at_depth(b: &Bench, keys: usize) -> Result<(Vec<i64>, f64)> {
    let (store, url) = b.fresh("fair_depth").await?;
    submit(&store, 100_000, 0, |i| Some(format!("k{}", i % keys))).await?;
    sqlx::query("ANALYZE").execute(store.pool()).await?;
    let mut buffers = Vec::new();
    for _ in 0..3 {
        buffers.push(store.explain_claim(64, 0).await?.iter().map(|p| p.0).sum());
    }
    buffers.sort_unstable();
    let w = b.workers(&url, 2, |_| {}).await?;
    wait_until(&store, "20,000 tasks", Duration::from_secs(900), |n| {
        n >= 20_000
    })
    .await?;
    w.stop().await;
    let (n, secs): (i64, f64) = sqlx::query_as(
        "SELECT count(*), extract(epoch FROM max(finished_at) - min(started_at))::float8
         FROM (SELECT started_at, finished_at FROM attempts WHERE finished_at IS NOT NULL
               ORDER BY finished_at, id LIMIT 20000) x",
    )
    .fetch_one(store.pool())
    .await?;
    drop(store);
    b.drop_db(&url).await;
    Ok((buffers, n as f64 / secs.max(1e-9)))
}

/// Part 4: seconds a priority-0 task waited to start behind a stream of priority-5 tasks
/// offered at capacity, with aging every `interval` up to 5 levels. The stream's tasks sleep
/// 50 ms on 2 workers of 8 slots (about 320 tasks/s, a rate the driver can offer on the same
/// cores); it is kept between 300 and 600 queued (one to two seconds of work: the workers
/// never run dry, and a stream task waits under an interval, so aging leaves it be).
pub async fn aging(b: &Bench, interval: Duration) -> Result<f64> {
    let (store, url) = b.fresh("fair_aging").await?;
    let sleepy = |n: usize| {
        (0..n)
            .map(|_| {
                tool_task(
                    None,
                    5,
                    json!({"id": "s", "tool": "sleep", "parameters": {"ms": 50}}),
                )
            })
            .collect::<Result<Vec<_>>>()
    };
    store.submit_tasks_quietly(&sleepy(600)?).await?.ok();
    let w = b
        .workers(&url, 2, |c| {
            c.concurrency = 8;
            c.aging = Some(trellis::worker::Aging {
                interval,
                max_boost: 5,
            });
        })
        .await?;
    let stream = async |store: &Store| -> Result<()> {
        if store.count_unfinished_tasks().await? < 300 {
            store.submit_tasks_quietly(&sleepy(300)?).await?.ok();
        }
        Ok(())
    };
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs(2) {
        stream(&store).await?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let low = store
        .submit_tasks_quietly(&[task(None, 0, 0)?])
        .await?
        .ok()
        .and_then(|mut v| v.pop())
        .map(|s| s.task_id)
        .ok_or_else(|| anyhow::anyhow!("the low task was not submitted"))?;
    let start = Instant::now();
    loop {
        let started: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM attempts WHERE task_id = $1)")
                .bind(low)
                .fetch_one(store.pool())
                .await?;
        if started {
            break;
        }
        if start.elapsed() > interval * 60 {
            bail!("the priority-0 task never started");
        }
        stream(&store).await?;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    w.stop().await;
    let waited: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM a.started_at - t.created_at)::float8
         FROM attempts a JOIN tasks t ON t.id = a.task_id WHERE t.id = $1 ORDER BY a.started_at LIMIT 1",
    )
    .bind(low)
    .fetch_one(store.pool())
    .await?;
    // the stream was there when it started: priority-5 tasks submitted before that moment
    // started after it
    let passed: i64 = sqlx::query_scalar(
        "WITH s AS (SELECT min(started_at) AS at FROM attempts WHERE task_id = $1)
         SELECT count(*) FROM attempts a JOIN tasks t ON t.id = a.task_id, s
         WHERE t.id <> $1 AND t.created_at < s.at AND a.started_at > s.at",
    )
    .bind(low)
    .fetch_one(store.pool())
    .await?;
    if passed == 0 {
        bail!(
            "no priority-5 task was queued when the priority-0 task started: the wait measures nothing"
        );
    }
    drop(store);
    b.drop_db(&url).await;
    Ok(waited)
}

/// Part 5: the most steps of one key (`max_running` 2) that ran at once while 4 workers drained
/// 10,000 of its tasks, from the attempts' start and end times; and the drain's tasks/s.
pub async fn capped(b: &Bench) -> Result<(i64, f64)> {
    let (store, url) = b.fresh("fair_cap").await?;
    store.put_key_limit("capped-*", 1.0, Some(2)).await?;
    submit(&store, 10_000, 0, |_| Some("capped-one".into())).await?;
    let w = b.workers(&url, 4, |_| {}).await?;
    wait_until(
        &store,
        "10,000 capped tasks",
        Duration::from_secs(900),
        |n| n >= 10_000,
    )
    .await?;
    w.stop().await;
    let (peak, rate): (i64, f64) = sqlx::query_as(
        "SELECT (SELECT max(n) FROM (
                     SELECT sum(d) OVER (ORDER BY at, d) AS n FROM (
                         SELECT started_at AS at, 1 AS d FROM attempts
                         UNION ALL SELECT finished_at, -1 FROM attempts) e) x),
                count(*) / extract(epoch FROM max(finished_at) - min(started_at))::float8
         FROM attempts",
    )
    .fetch_one(store.pool())
    .await?;
    drop(store);
    b.drop_db(&url).await;
    Ok((peak, rate))
}
