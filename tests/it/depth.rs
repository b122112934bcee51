//! The claim at depth (queue-depth issue): with at least 20,000 tasks queued, priority,
//! fairness between tasks, the per-task, per-tool and task caps and deadlines all hold, and a
//! claim reads about what it takes.

use trellis::testkit as common;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use trellis::store::Store;
use trellis::store::step_queue::ClaimedStep;
use trellis::store::step_queue::{Claim, StepSuccess};
use trellis::testkit::{fresh_db, wait_for};
use uuid::Uuid;

const DEPTH: usize = 20_000;

/// `n` one-step `echo` tasks, bulk submitted (1,000 per statement).
async fn queue_one_step(store: &Store, n: usize, deadline_secs: i32) {
    let mut task = common::new_task(json!([{"id": "s1", "tool": "echo"}]));
    task.limits.task_timeout_secs = deadline_secs;
    for chunk in vec![task; n].chunks(1000) {
        store.submit_tasks_quietly(chunk).await.unwrap().unwrap();
    }
}

/// A task of `steps` independent `tool` steps.
fn wide_task(steps: usize, tool: &str) -> trellis::store::submit::NewTask {
    let steps: Vec<Value> = (0..steps)
        .map(|i| json!({"id": format!("s{i}"), "tool": tool}))
        .collect();
    common::new_task(Value::Array(steps))
}

pub(crate) fn claim(worker: Uuid, limit: i64, max_running_tasks: i64) -> Claim {
    Claim {
        worker_id: worker,
        limit,
        lease_secs: 30.0,
        max_running_tasks,
    }
}

/// Record the claimed steps as succeeded (one completion batch).
pub(crate) async fn complete(store: &Store, worker: Uuid, steps: &[ClaimedStep]) {
    let items: Vec<StepSuccess> = steps
        .iter()
        .map(|s| StepSuccess {
            cost: None,
            fence: s.fence(),
            worker_id: worker,
            tool: s.tool.clone(),
            parameters: json!({}),
            output: json!({"ok": true}),
            output_params: Default::default(),
            idempotency_key: None,
        })
        .collect();
    for r in store.complete_steps(&items, 30.0).await.unwrap() {
        r.unwrap();
    }
}

/// Shared buffers the claim's statements read (`EXPLAIN (ANALYZE, BUFFERS)`, rolled back),
/// with a task cap of `cap` (0: none).
async fn claim_buffers(store: &Store, cap: i64) -> i64 {
    let plans = store.explain_claim(64, cap).await.unwrap();
    plans.iter().map(|p| p.0).sum()
}

/// Claimed steps per task.
fn per_task(steps: &[ClaimedStep]) -> HashMap<Uuid, usize> {
    let mut out = HashMap::new();
    for s in steps {
        *out.entry(s.task_id).or_default() += 1;
    }
    out
}

/// A task of priority 10 submitted behind 20,000 queued tasks is the first one claimed.
#[tokio::test]
async fn a_high_priority_task_behind_20000_queued_starts_at_once() {
    let db = fresh_db().await;
    let store = &db.store;
    queue_one_step(store, DEPTH, 0).await;
    let mut urgent = common::new_task(json!([{"id": "s1", "tool": "echo"}]));
    urgent.priority = 10;
    let urgent = store.submit_task(&urgent).await.unwrap().task_id;
    let got = store
        .claim_steps(&claim(Uuid::now_v7(), 8, 0))
        .await
        .unwrap();
    assert_eq!(got.len(), 8);
    assert_eq!(got[0].task_id, urgent, "the urgent task's step comes first");
    assert_eq!(per_task(&got).len(), 8, "then the oldest queued tasks");
}

/// Fairness: a task with 10,000 ready steps holds at most its `max_concurrent_steps` of the
/// queue, so a one-step task submitted after it (and 20,000 more behind that) starts in the
/// first claim, and the big task never runs more than its cap.
#[tokio::test]
async fn a_task_with_10000_ready_steps_does_not_starve_one_submitted_after_it() {
    let db = fresh_db().await;
    let store = &db.store;
    let big = store
        .submit_task(&wide_task(10_000, "echo"))
        .await
        .unwrap()
        .task_id;
    let small = store
        .submit_task(&common::new_task(json!([{"id": "s1", "tool": "echo"}])))
        .await
        .unwrap()
        .task_id;
    queue_one_step(store, DEPTH, 0).await;
    let cap = store.get_task(big).await.unwrap().max_concurrent_steps as usize;
    let worker = Uuid::now_v7();
    let first = store.claim_steps(&claim(worker, 64, 0)).await.unwrap();
    assert_eq!(first.len(), 64);
    let by_task = per_task(&first);
    assert_eq!(by_task[&big], cap, "the big task takes its cap, no more");
    assert_eq!(
        by_task[&small], 1,
        "the task submitted after it starts at once"
    );
    complete(store, worker, &first).await;
    for round in 0..20 {
        let got = store.claim_steps(&claim(worker, 64, 0)).await.unwrap();
        let n = per_task(&got).get(&big).copied().unwrap_or(0);
        assert_eq!(n, cap, "round {round}: the big task gets its cap again");
        complete(store, worker, &got).await;
    }
    assert_eq!(
        store.get_task(small).await.unwrap().status.as_str(),
        "evaluating",
        "every step of it done"
    );
}

/// The per-task cap at depth: a task of 30 steps with `max_concurrent_steps = 3` ahead of
/// 20,000 queued tasks never has more than 3 running, however many workers claim, and gets
/// its 3 again each time its running steps finish.
#[tokio::test]
async fn the_per_task_cap_holds_at_depth() {
    let db = fresh_db().await;
    let store = &db.store;
    let mut capped = wide_task(30, "echo");
    capped.limits.max_concurrent_steps = 3;
    let capped = store.submit_task(&capped).await.unwrap().task_id;
    queue_one_step(store, DEPTH, 0).await;
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    for round in 0..10 {
        let from_a = store.claim_steps(&claim(a, 64, 0)).await.unwrap();
        let from_b = store.claim_steps(&claim(b, 64, 0)).await.unwrap();
        let running = store
            .list_steps(capped)
            .await
            .unwrap()
            .iter()
            .filter(|s| s.status.as_str() == "running")
            .count();
        assert_eq!(running, 3, "round {round}: the cap is used, never exceeded");
        assert_eq!(
            per_task(&from_b).get(&capped),
            None,
            "round {round}: a second claim finds no room"
        );
        complete(store, a, &from_a).await;
        complete(store, b, &from_b).await;
    }
    assert_eq!(
        store.get_task(capped).await.unwrap().status.as_str(),
        "evaluating",
        "its 30 steps done, 3 at a time"
    );
}

/// Tool limits at depth: `max_concurrency = 2` and a rate limit (burst 2) hold for tools whose
/// steps sit ahead of 20,000 queued ones; the other tasks still get the claim's other slots.
#[tokio::test]
async fn tool_limits_hold_at_depth() {
    let db = fresh_db().await;
    let store = &db.store;
    let mut narrow = common::http_tool("narrow", "http://127.0.0.1:9/narrow".into());
    narrow.max_concurrency = Some(2);
    store.create_tool(&narrow).await.unwrap();
    let mut paced = common::http_tool("paced", "http://127.0.0.1:9/paced".into());
    paced.rate_limit_per_sec = Some(0.001);
    paced.rate_limit_burst = 2;
    store.create_tool(&paced).await.unwrap();
    for tool in ["narrow", "paced"] {
        for _ in 0..5 {
            store.submit_task(&wide_task(1, tool)).await.unwrap();
        }
    }
    queue_one_step(store, DEPTH, 0).await;
    let worker = Uuid::now_v7();
    let tools = |got: &[ClaimedStep], t: &str| got.iter().filter(|s| s.tool == t).count();
    let first = store.claim_steps(&claim(worker, 64, 0)).await.unwrap();
    assert_eq!(first.len(), 64, "the rest of the claim goes to the queue");
    assert_eq!(tools(&first, "narrow"), 2);
    assert_eq!(tools(&first, "paced"), 2, "the burst");
    let second = store.claim_steps(&claim(worker, 64, 0)).await.unwrap();
    assert_eq!(second.len(), 64);
    assert_eq!(tools(&second, "narrow"), 0, "no room while two run");
    assert_eq!(tools(&second, "paced"), 0, "no token left");
    let one_narrow: Vec<ClaimedStep> = first
        .iter()
        .filter(|s| s.tool == "narrow")
        .take(1)
        .cloned()
        .collect();
    complete(store, worker, &one_narrow).await;
    let third = store.claim_steps(&claim(worker, 64, 0)).await.unwrap();
    assert_eq!(tools(&third, "narrow"), 1, "one slot came free");
    assert_eq!(tools(&third, "paced"), 0);
}

/// The task cap at depth (`max_concurrent_tasks = 2`): a claim starts steps of at most 2
/// tasks, the priority-10 one first; a task already running gets its next step even when it
/// sits behind 20,000 queued tasks of higher priority; a task that finishes makes room.
#[tokio::test]
async fn the_task_cap_holds_at_depth() {
    let db = fresh_db().await;
    let store = &db.store;
    let worker = Uuid::now_v7();
    let mut long = wide_task(3, "echo");
    long.limits.max_concurrent_steps = 2;
    let long = store.submit_task(&long).await.unwrap().task_id;
    let first = store.claim_steps(&claim(worker, 64, 2)).await.unwrap();
    assert_eq!(per_task(&first), HashMap::from([(long, 2)]));
    let mut queued = common::new_task(json!([{"id": "s1", "tool": "echo"}]));
    queued.priority = 5;
    for chunk in vec![queued; DEPTH].chunks(1000) {
        store.submit_tasks_quietly(chunk).await.unwrap().unwrap();
    }
    let second = store.claim_steps(&claim(worker, 64, 2)).await.unwrap();
    assert_eq!(second.len(), 1, "one task admitted: the cap is 2");
    assert_ne!(second[0].task_id, long);
    assert!(
        store
            .claim_steps(&claim(worker, 64, 2))
            .await
            .unwrap()
            .is_empty(),
        "the cap is full"
    );
    // one of the long task's steps finishes: its third step is claimable, priority 0, behind
    // 20,000 queued tasks of priority 5; it needs no admission
    complete(store, worker, &first[..1]).await;
    let third = store.claim_steps(&claim(worker, 64, 2)).await.unwrap();
    assert_eq!(per_task(&third), HashMap::from([(long, 1)]));
    // the admitted one-step task finishes: one more task may start
    complete(store, worker, &second).await;
    let fourth = store.claim_steps(&claim(worker, 64, 2)).await.unwrap();
    assert_eq!(fourth.len(), 1);
    assert!(![long, second[0].task_id].contains(&fourth[0].task_id));
}

/// Deadlines at depth: 20,000 queued tasks whose deadline passed are never started, and do
/// not hide a task submitted after them: claims drop their entries as they pass them, and the
/// sweep fails every one of them with `deadline_exceeded`.
#[tokio::test]
async fn deadlines_hold_at_depth() {
    let db = fresh_db().await;
    let store = &db.store;
    queue_one_step(store, DEPTH, 1).await;
    wait_for("the deadlines to pass", Duration::from_secs(20), || async {
        sqlx::query_scalar::<_, bool>("SELECT bool_and(deadline_at < now()) FROM tasks")
            .fetch_one(store.pool())
            .await
            .unwrap()
            .then_some(())
    })
    .await;
    let fresh = store
        .submit_task(&common::new_task(json!([{"id": "s1", "tool": "echo"}])))
        .await
        .unwrap()
        .task_id;
    let worker = Uuid::now_v7();
    let mut claims = 0;
    let got = loop {
        let got = store.claim_steps(&claim(worker, 64, 0)).await.unwrap();
        claims += 1;
        if !got.is_empty() || claims > DEPTH / 64 + 2 {
            break got;
        }
    };
    assert_eq!(got.len(), 1, "after {claims} claims");
    assert_eq!(got[0].task_id, fresh, "only the task with time left starts");
    let mut failed = 0;
    while failed < DEPTH as u64 {
        let n = store.expire_deadlines(1000).await.unwrap();
        assert!(n > 0, "the sweep makes progress ({failed} failed)");
        failed += n;
    }
    assert_eq!(store.count_tasks("failed").await.unwrap(), DEPTH as i64);
    assert_eq!(store.count_steps("running").await.unwrap(), 1);
}

/// A claim reads about what it takes: its shared buffers at 20,000 queued tasks are within
/// twice those at 2,000 (the claim the workers run, under `EXPLAIN (ANALYZE, BUFFERS)`).
#[tokio::test]
async fn a_claim_reads_about_what_it_takes() {
    let db = fresh_db().await;
    let store = &db.store;
    queue_one_step(store, 2_000, 0).await;
    let shallow: i64 = claim_buffers(store, 0).await;
    queue_one_step(store, DEPTH - 2_000, 0).await;
    let deep: i64 = claim_buffers(store, 0).await;
    assert!(
        deep <= 2 * shallow,
        "{deep} buffers at {DEPTH} queued against {shallow} at 2,000"
    );
    // and under a task cap (the checked claim's two statements)
    let capped: i64 = claim_buffers(store, 4).await;
    assert!(capped <= 2 * shallow, "{capped} buffers under a task cap");
}

/// Steady under a long transaction: while a REPEATABLE READ report holds its snapshot (so
/// VACUUM can free nothing), 20,000 tasks are claimed and completed; the ring's upkeep
/// truncates the slots they drained, so the queue a claim walks stays the size of its live
/// entries, and the claim's reads stay what they were before.
#[tokio::test]
async fn a_held_snapshot_does_not_slow_the_claim() {
    let db = fresh_db().await;
    let store = &db.store;
    queue_one_step(store, 2_000, 0).await;
    let before: i64 = claim_buffers(store, 0).await;
    let size_before = store.claim_queue_bytes().await.unwrap();
    let mut report = store.pool().acquire().await.unwrap();
    sqlx::query("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .execute(&mut *report)
        .await
        .unwrap();
    sqlx::query("SELECT count(*) FROM attempts")
        .execute(&mut *report)
        .await
        .unwrap();
    let worker = Uuid::now_v7();
    let mut truncated = 0;
    for _ in 0..10 {
        queue_one_step(store, 2_000, 0).await;
        loop {
            let got = store.claim_steps(&claim(worker, 500, 0)).await.unwrap();
            if got.is_empty() {
                break;
            }
            complete(store, worker, &got).await;
        }
        // turn at once (the workers turn every couple of seconds)
        truncated += store.claim_ring_upkeep(0.0).await.unwrap().truncated;
    }
    // the slot the last round drained is no longer the current one: its turn to go
    truncated += store.claim_ring_upkeep(0.0).await.unwrap().truncated;
    queue_one_step(store, 2_000, 0).await;
    let during: i64 = claim_buffers(store, 0).await;
    let size_during = store.claim_queue_bytes().await.unwrap();
    sqlx::query("COMMIT").execute(&mut *report).await.unwrap();
    // without the ring, the 20,000 dead entries stay on disk (12 times the live ones)
    assert!(
        size_during <= 3 * size_before,
        "the claim queue takes {size_during} bytes for 2,000 live entries (it took {size_before})"
    );
    assert!(
        during <= 2 * before,
        "{during} buffers with 20,000 entries claimed under the snapshot, against {before}"
    );
    assert!(truncated >= 5, "drained slots were truncated: {truncated}");
}

/// A quiet queue keeps its ring still: a trickle of tasks, each claimed and completed, leaves
/// slots too small to be worth a `TRUNCATE` (which makes every session plan its claim anew), so
/// the upkeep neither truncates nor turns, however often it runs; and the queue stays small.
#[tokio::test]
async fn a_quiet_queue_keeps_its_ring_still() {
    let db = fresh_db().await;
    let store = &db.store;
    let worker = Uuid::now_v7();
    let (mut truncated, mut turned) = (0, 0);
    for _ in 0..20 {
        queue_one_step(store, 5, 0).await;
        let got = store.claim_steps(&claim(worker, 10, 0)).await.unwrap();
        assert_eq!(got.len(), 5);
        complete(store, worker, &got).await;
        let u = store.claim_ring_upkeep(0.0).await.unwrap();
        truncated += u.truncated;
        turned += u32::from(u.turned);
    }
    assert_eq!(
        (truncated, turned),
        (0, 0),
        "the ring moved on a quiet queue"
    );
    let bytes = store.claim_queue_bytes().await.unwrap();
    assert!(
        bytes <= 4 * 128 * 1024,
        "{bytes} bytes of claim queue for 100 tasks"
    );
}

/// Plans made on empty tables stay keyed: a hot session that planned its statements while the
/// tables were empty (a new install) still reaches tasks and steps by primary key after
/// 20,000 tasks were queued, never through the status index or a partial index of every
/// running or ready step, and walks the claim queue in order.
#[tokio::test]
async fn plans_made_on_empty_tables_stay_keyed() {
    let db = fresh_db().await;
    let store = &db.store;
    let mut probe = store.plan_probe().await.unwrap();
    queue_one_step(store, DEPTH, 0).await;
    for (name, plan) in probe.explain().await.unwrap() {
        match name.as_str() {
            "probe_move" => assert!(plan.contains("tasks_pkey"), "{name}: {plan}"),
            "probe_complete" => assert!(plan.contains("steps_pkey"), "{name}: {plan}"),
            "probe_claim" => {
                // the partitions of claim_queue_claim_idx
                assert!(plan.contains("lane_priority"), "{name}: {plan}");
                assert!(plan.contains("steps_pkey"), "{name}: {plan}");
            }
            _ => {}
        }
        for wrong in [
            "tasks_status_created_idx",
            "steps_running",
            "steps_ready",
            "Seq Scan on steps",
            "Seq Scan on tasks",
        ] {
            assert!(!plan.contains(wrong), "{name} plans with {wrong}: {plan}");
        }
    }
}
