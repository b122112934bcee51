//! The claim queue's invariant and the running index, held in the real system: random
//! operations by 4 workers (claims, completions, failures, releases, defers and waits given
//! up, lost leases and rescues, cancels, whole workers killed, steps parked on approvals and
//! events, waits resolved, events posted, waits and deadlines expired, reschedules, resumes,
//! reruns), and after each one the claim queue equals its definition (`queue/sync`'s,
//! recomputed for every task) and `running_steps` lists exactly the running steps.
//!
//! Every `claim_queue::sync` call of the store is reached by one of these operations: the
//! test fails when any one of them is removed (ARCHITECTURE.md, "The claim queue").

use trellis::testkit as common;

use serde_json::json;
use trellis::domain::status::{TaskStatus, WaitStatus};
use trellis::domain::wait::{OnTimeout, Resolution, WaitKind, WaitSpec};
use trellis::store::rerun::Rerun;
use trellis::store::step_queue::{
    Claim, ClaimedStep, FailurePolicy, StepFailure, StepSuccess, ToolWait,
};
use trellis::store::submit::{Resume, Start};
use trellis::store::waits::{Parked, WaitFilter, Waiter};
use trellis::testkit::fresh_db;
use trellis::worker::WorkerConfig;
use uuid::Uuid;

const POLICY: FailurePolicy = common::TEST_POLICY;

/// A small deterministic generator (xorshift64*): a failing seed replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One of the steps a worker holds, at random (it no longer holds it).
fn take_one(held: &mut Vec<ClaimedStep>, rng: &mut Rng) -> ClaimedStep {
    let i = rng.below(held.len());
    held.swap_remove(i)
}

/// A task of 1–5 steps, each depending on some earlier ones, at most 1–3 of them at once.
fn random_task(rng: &mut Rng) -> trellis::store::submit::NewTask {
    let n = 1 + rng.below(5);
    let steps: Vec<_> = (0..n)
        .map(|i| {
            let deps: Vec<String> = (0..i)
                .filter(|_| rng.below(3) == 0)
                .map(|d| format!("s{d}"))
                .collect();
            json!({"id": format!("s{i}"), "tool": "echo", "dependencies": deps})
        })
        .collect();
    let mut t = common::new_task(json!(steps));
    t.limits.max_concurrent_steps = 1 + rng.below(3) as i32;
    t.limits.max_task_replans = 1;
    // one task in ten has a deadline that the run outlives
    if rng.below(10) == 0 {
        t.limits.task_timeout_secs = 1;
    }
    // one in five starts later (a reschedule may move it)
    if rng.below(5) == 0 {
        t.start = Start::After(0.3);
    }
    t
}

/// Up to 50 tasks in `status`.
async fn ids_in(store: &trellis::store::Store, status: TaskStatus) -> Vec<Uuid> {
    sqlx::query_scalar("SELECT id FROM tasks WHERE status = $1 LIMIT 50")
        .bind(status.to_string())
        .fetch_all(store.pool())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_operations_keep_the_claim_queue_and_the_running_index() {
    let ops: usize = std::env::var("TRELLIS_INVARIANT_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let seed: u64 = std::env::var("TRELLIS_INVARIANT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_1234_abcd_0001);
    let db = fresh_db().await;
    let store = &db.store;
    let cfg = WorkerConfig::from_settings(&common::test_settings());
    let mut rng = Rng(seed);
    let workers: Vec<Uuid> = (0..4).map(|_| Uuid::now_v7()).collect();
    let mut held: Vec<Vec<ClaimedStep>> = vec![Vec::new(); workers.len()];
    let mut tasks: Vec<Uuid> = Vec::new();
    let mut counts = [0usize; 16];
    // the keys parked steps wait on, and how many events woke one
    let (mut keys, mut woken): (Vec<String>, usize) = (Vec::new(), 0);
    // tasks the deadline sweep ended
    let mut expired = 0u64;
    // a policy under which any wait on a tool is already too long (the step fails instead)
    let impatient = trellis::store::step_queue::FailurePolicy {
        max_wait_ms: 0,
        ..POLICY
    };

    for op in 0..ops {
        let w = rng.below(workers.len());
        let me = workers[w];
        let kind = match rng.below(28) {
            0..=2 => 0,   // submit
            3..=7 => 1,   // claim
            8..=12 => 2,  // complete
            13..=14 => 3, // fail
            15 => 4,      // release
            16 => 5,      // defer (or give the wait up)
            17 => 6,      // a lease lost, then rescued
            18 => 7,      // cancel a task
            19 => 8,      // a worker killed: every lease it holds lost, then rescued
            20..=21 => 9, // park a step on an approval or an event
            22 => 10,     // resolve an open wait
            23 => 11,     // post an event
            24 => 12,     // expire due waits and deadlines
            25 => 13,     // reschedule a task
            26 => 14,     // resume a task that needs intervention
            _ => 15,      // rerun a task that ended
        };
        // an operation that needs a held step falls back to a claim when there is none
        let kind = if ((2..=6).contains(&kind) || kind == 9) && held[w].is_empty() {
            1
        } else {
            kind
        };
        counts[kind] += 1;
        let what = match kind {
            0 => {
                let t = store.submit_task(&random_task(&mut rng)).await.unwrap();
                tasks.push(t.task_id);
                "submit"
            }
            1 => {
                let c = Claim {
                    worker_id: me,
                    limit: 1 + rng.below(4) as i64,
                    lease_secs: 60.0,
                    max_running_tasks: 0,
                };
                held[w].extend(store.claim_steps(&c).await.unwrap());
                "claim"
            }
            2 => {
                let s = take_one(&mut held[w], &mut rng);
                let ok = StepSuccess {
                    cost: None,
                    fence: s.fence(),
                    worker_id: me,
                    tool: s.tool.clone(),
                    parameters: json!({}),
                    output: json!({"op": op}),
                    output_params: Default::default(),
                    idempotency_key: None,
                };
                if let Ok(Some(d)) = store.complete_step(&ok, 60.0).await {
                    trellis::worker::run_decision_chain(store, &cfg, Some(d)).await;
                }
                "complete"
            }
            3 => {
                let s = take_one(&mut held[w], &mut rng);
                let failure = trellis::domain::ToolFailure::new(
                    "tool_error",
                    "random failure",
                    rng.below(2) == 0,
                );
                let f = StepFailure {
                    fence: s.fence(),
                    worker_id: me,
                    tool: s.tool.clone(),
                    parameters: json!({}),
                    failure,
                    idempotency_key: None,
                };
                if let Ok(out) = store.fail_step(&f, POLICY).await
                    && let Some(d) = out.decision
                {
                    trellis::worker::run_decision_chain(store, &cfg, Some(d)).await;
                }
                "fail"
            }
            4 => {
                let s = take_one(&mut held[w], &mut rng);
                let _ = store.release_step(&s.fence(), me).await;
                "release"
            }
            5 => {
                let s = take_one(&mut held[w], &mut rng);
                let wait = ToolWait {
                    tool: s.tool.clone(),
                    until: chrono::Utc::now() + chrono::Duration::milliseconds(50),
                    why: trellis::domain::circuit::Why::Held,
                };
                let policy = if rng.below(3) == 0 {
                    &impatient
                } else {
                    &POLICY
                };
                let _ = store.defer_step(&s.fence(), me, &wait, policy).await;
                "defer"
            }
            6 => {
                let s = take_one(&mut held[w], &mut rng);
                store.expire_lease(s.id).await.unwrap();
                store.rescue_expired(100, POLICY).await.unwrap();
                "lease lost"
            }
            7 => {
                if !tasks.is_empty() {
                    let _ = store.cancel_task(tasks[rng.below(tasks.len())]).await;
                }
                "cancel"
            }
            8 => {
                for s in std::mem::take(&mut held[w]) {
                    store.expire_lease(s.id).await.unwrap();
                }
                store.rescue_expired(1000, POLICY).await.unwrap();
                "worker killed"
            }
            9 => {
                let s = take_one(&mut held[w], &mut rng);
                let fence = s.fence();
                let waiter = Waiter {
                    fence: &fence,
                    step_key: &s.step_key,
                    attempt: s.attempt,
                    worker_id: me,
                };
                let on_event = rng.below(2) == 0;
                let spec = WaitSpec {
                    kind: if on_event {
                        WaitKind::Event
                    } else {
                        WaitKind::Approval
                    },
                    prompt: Some("go?".into()),
                    form: None,
                    role: None,
                    on_timeout: OnTimeout::Reject,
                    gated_tool: None,
                    parameters: None,
                    // a fresh key (an event posted earlier for it would resolve the wait at once)
                    event_key: on_event.then(|| format!("k{op}")),
                    matcher: None,
                    // a third expire at once (the next expiry pass resolves them)
                    expires_in_secs: (rng.below(3) == 0).then_some(0.0),
                    expires_at: None,
                    child_task_id: None,
                };
                match store.park_step(waiter, &spec).await {
                    // resolved by an earlier event: the worker still holds the step
                    Ok(Parked::Resolved(_)) => held[w].push(s),
                    Ok(Parked::Waiting(_)) => keys.extend(spec.event_key),
                    Err(_) => {}
                }
                "park"
            }
            10 => {
                let open = store
                    .list_waits(&WaitFilter {
                        status: Some(WaitStatus::Open),
                        limit: 50,
                        ..Default::default()
                    })
                    .await
                    .unwrap();
                if !open.is_empty() {
                    let wait = &open[rng.below(open.len())];
                    let r = if rng.below(2) == 0 {
                        Resolution::Approved {
                            parameters: None,
                            comment: None,
                            by_timeout: false,
                        }
                    } else {
                        Resolution::Rejected { comment: None }
                    };
                    let _ = store.resolve_wait(wait.id, &r, None).await;
                }
                "resolve"
            }
            11 => {
                // a key some step waits on, or (one time in four) one nobody does yet
                let key = if keys.is_empty() || rng.below(4) == 0 {
                    format!("k{}", op + 1 + rng.below(50))
                } else {
                    keys.swap_remove(rng.below(keys.len()))
                };
                if store
                    .post_event("default", &key, &json!({"op": op}))
                    .await
                    .unwrap()
                    > 0
                {
                    woken += 1;
                }
                "event"
            }
            12 => {
                store.expire_due_waits(100).await.unwrap();
                expired += store.expire_deadlines(100).await.unwrap();
                "expire"
            }
            13 => {
                if !tasks.is_empty() {
                    let at = chrono::Utc::now()
                        + chrono::Duration::milliseconds(rng.below(400) as i64 - 200);
                    let _ = store
                        .reschedule_task(tasks[rng.below(tasks.len())], at)
                        .await;
                }
                "reschedule"
            }
            14 => {
                let stuck = ids_in(store, TaskStatus::NeedsIntervention).await;
                if !stuck.is_empty() {
                    let id = stuck[rng.below(stuck.len())];
                    let _ = store.resume_task(id, &Resume::default()).await;
                }
                "resume"
            }
            _ => {
                let status = [
                    TaskStatus::Succeeded,
                    TaskStatus::Failed,
                    TaskStatus::Cancelled,
                ][rng.below(3)];
                let ended = ids_in(store, status).await;
                if !ended.is_empty() {
                    let id = ended[rng.below(ended.len())];
                    let r = Rerun {
                        from_step: "s0".into(),
                        ..Rerun::default()
                    };
                    let _ = store.rerun_task(id, &r).await;
                }
                "rerun"
            }
        };
        let queue = store.claim_queue_disagreements().await.unwrap();
        if let Some((task, _, _)) = queue.first() {
            let rows: Vec<(String, String, i32, i32, Option<String>)> = sqlx::query_as(
                "SELECT step_key, status, position, plan_version, tool_override FROM steps
                 WHERE task_id = $1 ORDER BY plan_version, position",
            )
            .bind(task)
            .fetch_all(store.pool())
            .await
            .unwrap();
            let t: (String, i32, i32) = sqlx::query_as(
                "SELECT status, max_concurrent_steps, plan_version FROM tasks WHERE id = $1",
            )
            .bind(task)
            .fetch_one(store.pool())
            .await
            .unwrap();
            let q: Vec<(uuid::Uuid,)> =
                sqlx::query_as("SELECT step_id FROM claim_queue WHERE task_id = $1")
                    .bind(task)
                    .fetch_all(store.pool())
                    .await
                    .unwrap();
            eprintln!("task {t:?}\nsteps {rows:#?}\nqueue {q:?}");
        }
        assert!(
            queue.is_empty(),
            "after operation {op} ({what}, seed {seed:#x}), the claim queue differs from its definition: {queue:?}"
        );
        assert_eq!(
            store.running_index_disagreements().await.unwrap(),
            0,
            "after operation {op} ({what}, seed {seed:#x}), running_steps differs from the running steps"
        );
    }
    // the run exercised every operation, and work went through to the end
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
    let succeeded = store.count_tasks("succeeded").await.unwrap();
    assert!(succeeded > 0, "no task succeeded in {ops} operations");
    assert!(woken > 0, "no event woke a waiting step");
    assert!(expired > 0, "no deadline passed");
    eprintln!(
        "invariants: {ops} operations {counts:?}, {} tasks, {succeeded} succeeded, {woken} events woke a step, {expired} deadlines passed",
        tasks.len()
    );
}
