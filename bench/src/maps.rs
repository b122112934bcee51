//! Scenario 16 (`--map`, the fan-out issue): 10,000 `echo` steps written out in one plan
//! against one step mapped over a list of 10,000 items (`max_parallel` 64), each drained by 2
//! worker processes at the shipped defaults but for the task's `max_concurrent_steps` (64 for
//! both, so the window and the cap are the same): steps/s from the first item's start to the
//! last one's end (database clock). The claim's buffers are read at a shallow queue (64
//! one-step tasks) and during the map, after its expansion.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};
use trellis::domain::PlanSpec;
use trellis::store::Store;

use crate::Bench;

/// One `--map` run.
pub struct MapRun {
    pub items: usize,
    /// Steps/s of the plan written out, and of the map.
    pub plan_rate: f64,
    pub map_rate: f64,
    /// Seconds from the map step's claim to its items' first start (the expansion).
    pub expansion_secs: f64,
    /// The claim's shared buffers: at a shallow queue, and during the map (min / median / max
    /// of the samples).
    pub shallow_buffers: i64,
    pub map_buffers: Vec<i64>,
}

fn task(steps: Value) -> Result<trellis::store::submit::NewTask> {
    let plan: PlanSpec = serde_json::from_value(json!({ "steps": steps }))?;
    let mut t = trellis::testkit::new_task(json!([]));
    t.plan = Some(plan);
    t.description = "bench map".into();
    t.limits.max_concurrent_steps = 64;
    Ok(t)
}

pub async fn run(b: &Bench, items: usize) -> Result<MapRun> {
    // the claim at a shallow queue: 64 one-step tasks
    let (store, url) = b.fresh("map_shallow").await?;
    let shallow = (0..64)
        .map(|i| task(json!([{"id": "s", "tool": "echo", "parameters": {"i": i}}])))
        .collect::<Result<Vec<_>>>()?;
    store.submit_tasks_quietly(&shallow).await?.ok();
    let shallow_buffers = store.explain_claim(64, 0).await?.iter().map(|p| p.0).sum();
    drop(store);
    b.drop_db(&url).await;

    // the plan written out
    let steps: Vec<Value> = (0..items)
        .map(|i| json!({"id": format!("s{i}"), "tool": "echo", "parameters": {"i": i}}))
        .collect();
    let (store, url) = b.fresh("map_plan").await?;
    store
        .submit_tasks_quietly(&[task(Value::Array(steps))?])
        .await?
        .ok();
    let w = b.workers(&url, 2, |c| c.concurrency = 64).await?;
    wait_ended(&store, Duration::from_secs(900)).await?;
    w.stop().await;
    let (n, secs) = span(&store, "s").await?;
    if n != items as i64 {
        bail!("the plan ran {n} of its {items} steps");
    }
    let plan_rate = n as f64 / secs.max(1e-9);
    drop(store);
    b.drop_db(&url).await;

    // the map: a producer, then the map over its output
    let list: Vec<Value> = (0..items).map(|i| json!({"i": i})).collect();
    let (store, url) = b.fresh("map_map").await?;
    store
        .submit_tasks_quietly(&[task(json!([
            {"id": "a", "tool": "echo", "parameters": {"items": list}},
            {"id": "m", "tool": "echo", "parameters": {"i": "${item.i}"}, "dependencies": ["a"],
             "map": {"over": "${a.output.items}", "max_items": items, "max_parallel": 64}}
        ]))?])
        .await?
        .ok();
    let w = b.workers(&url, 2, |c| c.concurrency = 64).await?;
    let mut map_buffers = Vec::new();
    let start = Instant::now();
    let mut next_sample = Duration::ZERO;
    while unfinished(&store).await? {
        if start.elapsed() > Duration::from_secs(900) {
            bail!("the map did not end");
        }
        // three samples, a few seconds apart: an EXPLAIN ANALYZE of a claim takes its locks
        // (rolled back), so sampling every second would slow the run it measures
        if map_buffers.len() < 3 && start.elapsed() >= next_sample && expanded(&store).await? {
            map_buffers.push(store.explain_claim(64, 0).await?.iter().map(|p| p.0).sum());
            next_sample = start.elapsed() + Duration::from_secs(2);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    w.stop().await;
    let (n, secs) = span(&store, "m[").await?;
    if n != items as i64 {
        bail!("the map ran {n} of its {items} items");
    }
    let (output_len,): (i64,) = sqlx::query_as(
        "SELECT coalesce(jsonb_array_length(output), -1)::int8 FROM steps WHERE step_key = 'm' AND status = 'succeeded'",
    )
    .fetch_one(store.pool())
    .await?;
    if output_len != items as i64 {
        bail!("the join has {output_len} outputs, not {items}");
    }
    let (expansion_secs,): (f64,) = sqlx::query_as(
        "SELECT extract(epoch FROM (SELECT min(started_at) FROM attempts WHERE step_key LIKE 'm[%')
                                   - (SELECT started_at FROM steps WHERE step_key = 'm'))::float8",
    )
    .fetch_one(store.pool())
    .await?;
    drop(store);
    b.drop_db(&url).await;
    Ok(MapRun {
        items,
        plan_rate,
        map_rate: n as f64 / secs.max(1e-9),
        expansion_secs,
        shallow_buffers,
        map_buffers,
    })
}

async fn unfinished(store: &Store) -> Result<bool> {
    Ok(
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM tasks WHERE finished_at IS NULL)")
            .fetch_one(store.pool())
            .await?,
    )
}

async fn wait_ended(store: &Store, limit: Duration) -> Result<()> {
    let start = Instant::now();
    while unfinished(store).await? {
        if start.elapsed() > limit {
            bail!("the task did not end in {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

async fn expanded(store: &Store) -> Result<bool> {
    Ok(sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM steps WHERE step_key = 'm' AND status = 'waiting')",
    )
    .fetch_one(store.pool())
    .await?)
}

/// Succeeded attempts of the steps whose key starts with `prefix`, and the seconds from the
/// first one's start to the last one's end.
async fn span(store: &Store, prefix: &str) -> Result<(i64, f64)> {
    Ok(sqlx::query_as(
        "SELECT count(*), coalesce(extract(epoch FROM max(finished_at) - min(started_at)), 0)::float8
         FROM attempts WHERE status = 'succeeded' AND starts_with(step_key, $1)",
    )
    .bind(prefix)
    .fetch_one(store.pool())
    .await?)
}
