//! The claim queue's invariant and the running index, held in the real system: random
//! operations by 4 workers (claims, completions, failures, releases, defers and waits given
//! up, lost leases and rescues, cancels, whole workers killed, steps parked on approvals and
//! events, waits resolved, events posted, waits and deadlines expired, reschedules, resumes,
//! reruns, map steps expanded and their items run, joined and given up, child tasks started,
//! ended and cancelled with their trees, cost stops, bulk actions), and after each one the
//! claim queue equals its definition (`queue/sync`'s, recomputed for every task) and
//! `running_steps` lists exactly the running steps.
//!
//! Every call site of the write context's `touch` and `moved` in the store is reached by these
//! operations, and every move of a step or a task is said through `moved`; the test records
//! both and fails when a call site of the source or a move is missing. So a write that forgets
//! what it touched shows as a disagreement, and a new call site or move no operation reaches
//! fails too (ARCHITECTURE.md, "The claim queue and the running index").

use trellis::testkit as common;

use serde_json::{Value, json};
use std::collections::BTreeSet;

use trellis::brain::rules::RulesBrain;
use trellis::brain::{Answer, Brain, BrainFuture, DecisionContext, Planned};
use trellis::domain::StepSpec;
use trellis::domain::bulk::{BulkKind, FromStep};
use trellis::domain::child::ChildSpec;
use trellis::domain::recovery::{
    Evaluation, OverallReflection, StepAction, StepReflection, Strategy,
};
use trellis::domain::status::{TaskStatus, WaitStatus};
use trellis::domain::transitions::{StepMove, TaskMove};
use trellis::domain::wait::{OnTimeout, Resolution, WaitKind, WaitSpec};
use trellis::store::bulk::{BulkTarget, NewBulkAction};
use trellis::store::children::ChildOf;
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

/// The rules brain, but every step failure goes to the overall reflection, which replans the
/// whole task, and no evaluation is good enough: new plan versions all the time, with the items
/// of maps that succeeded kept (a map that runs again joins at its expansion).
#[derive(Debug)]
struct ReplanningBrain;

impl Brain for ReplanningBrain {
    fn name(&self) -> &'static str {
        "replanning"
    }
    fn plan<'a>(&'a self, c: &'a DecisionContext) -> BrainFuture<'a, Planned> {
        RulesBrain.plan(c)
    }
    fn reflect_step<'a>(&'a self, _: &'a DecisionContext) -> BrainFuture<'a, StepReflection> {
        Box::pin(async {
            Ok(Answer::plain(StepReflection {
                root_cause_category: "test".into(),
                root_cause: "a replan is wanted".into(),
                analysis: String::new(),
                confidence: 90.0,
                is_recoverable: true,
                alternative_solutions: vec![],
                suggested_action: StepAction::TriggerOverallReflection("replan".into()),
            }))
        })
    }
    fn repair_step<'a>(&'a self, c: &'a DecisionContext) -> BrainFuture<'a, StepSpec> {
        RulesBrain.repair_step(c)
    }
    fn reflect_overall<'a>(&'a self, _: &'a DecisionContext) -> BrainFuture<'a, OverallReflection> {
        Box::pin(async {
            Ok(Answer::plain(OverallReflection {
                should_replan: true,
                root_causes: vec![],
                incorrect_assumptions: vec![],
                alternative_approaches: vec![],
                lessons_learned: vec![],
                stop_reason: String::new(),
                optimization_suggestions: vec![],
                replanning_strategy: Some(Strategy::FullReplan),
            }))
        })
    }
    fn replan<'a>(&'a self, c: &'a DecisionContext) -> BrainFuture<'a, Planned> {
        RulesBrain.replan(c)
    }
    fn evaluate<'a>(&'a self, c: &'a DecisionContext) -> BrainFuture<'a, Evaluation> {
        // never good enough: another round (a full replan) while rounds are left
        let mut e = RulesBrain::evaluate(c);
        e.overall_score = 10.0;
        Box::pin(async move { Ok(Answer::plain(e)) })
    }
}

/// A task of 1–5 steps, each depending on some earlier ones, at most 1–3 of them at once;
/// now and then one of them is a map over 1–4 items, or starts a child task (whose plan may
/// start one of its own), and the task has a `max_cost` its tools' costs may reach.
fn random_task(rng: &mut Rng) -> trellis::store::submit::NewTask {
    let n = 1 + rng.below(5);
    let mut steps: Vec<Value> = Vec::new();
    for i in 0..n {
        let mut deps: Vec<String> = (0..i)
            .filter(|_| rng.below(3) == 0)
            .map(|d| format!("s{d}"))
            .collect();
        // the step after a map depends on it: a map's join promotes something
        if i > 0 && steps[i - 1].get("map").is_some() && !deps.contains(&format!("s{}", i - 1)) {
            deps.push(format!("s{}", i - 1));
        }
        let mut step = json!({"id": format!("s{i}"), "tool": "echo", "dependencies": deps});
        match rng.below(6) {
            0 => {
                let on_failure = ["continue", "fail"][rng.below(2)];
                step["map"] = json!({"over": "${context.xs}", "max_parallel": ([1, 2, 4][rng.below(3)]),
                                     "on_item_failure": on_failure});
                step["parameters"] = json!({"x": "${item}"});
            }
            // an HTTP tool (never called here): its circuit holds and releases its steps
            2 => step["tool"] = json!(REMOTE),
            // an agent: each run is a turn whose calls become its items, or its answer
            3 => {
                step["tool"] = json!("agent");
                step["parameters"] = json!({"instructions": "go", "tools": ["echo"]});
            }
            1 => {
                let grandchild = rng.below(3) == 0;
                step["tool"] = json!("task");
                step["parameters"] = json!({"plan": {"steps": if grandchild {
                    json!([{"id": "g", "tool": "task", "parameters": {"plan": {"steps": [
                        {"id": "e", "tool": "echo"}]}}}])
                } else {
                    json!([{"id": "e", "tool": "echo"}, {"id": "f", "tool": "echo"}])
                }}});
            }
            _ => {}
        }
        steps.push(step);
    }
    let mut t = common::new_task(json!(steps));
    t.context = json!({"xs": (0..1 + rng.below(4)).collect::<Vec<_>>()});
    if rng.below(8) == 0 {
        t.limits.max_cost = Some(1.0);
    }
    t.limits.max_concurrent_steps = 1 + rng.below(3) as i32;
    t.limits.max_task_replans = 2;
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
    store
        .create_tool(&common::http_tool(REMOTE, "http://127.0.0.1:9/".into()))
        .await
        .unwrap();
    let cfg = WorkerConfig::from_settings(&common::test_settings());
    // one failure in two is recovered by replanning the whole task
    let replanning = WorkerConfig {
        brain: std::sync::Arc::new(ReplanningBrain),
        ..cfg.clone()
    };
    let mut rng = Rng(seed);
    let workers: Vec<Uuid> = (0..4).map(|_| Uuid::now_v7()).collect();
    let mut held: Vec<Vec<ClaimedStep>> = vec![Vec::new(); workers.len()];
    let mut tasks: Vec<Uuid> = Vec::new();
    let mut counts = [0usize; 17];
    // what the fan-out, cost and bulk operations did
    let (mut expanded, mut children, mut cost_stops, mut bulk_batches) = (0, 0, 0, 0);
    // steps of the HTTP tool its circuit let through or gave a release slot
    let mut released = (0, 0);
    let mut joined_at_once = 0;
    // agent turns stored (with calls, answered)
    let mut agent_turns = (0, 0);
    // the keys parked steps wait on, and how many events woke one
    let (mut keys, mut woken): (Vec<String>, usize) = (Vec::new(), 0);
    // tasks the deadline sweep ended
    let mut expired = 0u64;
    // a policy under which any wait on a tool is already too long (the step fails instead)
    let impatient = trellis::store::step_queue::FailurePolicy {
        max_wait_ms: 0,
        ..POLICY
    };

    let (_, reached) = trellis::store::write::sites::recording(async {
        map_joined_at_its_expansion(store, &cfg).await;
        for op in 0..ops {
            let w = rng.below(workers.len());
            let me = workers[w];
            let kind = match rng.below(29) {
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
                27 => 16,     // a bulk action: cancel, resume or rerun some tasks
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
                    if let Some(map) = &s.map {
                        // a map step's run is its expansion
                        let fence = trellis::store::maps::MapFence {
                            step_id: s.id,
                            task_id: s.task_id,
                            lease_token: s.lease_token,
                            step_key: &s.step_key,
                        };
                        let parallel = map.0.max_parallel.unwrap_or(4) as i32;
                        if store
                            .expand_map(fence, &s.context["xs"], parallel)
                            .await
                            .is_ok()
                        {
                            expanded += 1;
                            // a replan kept every item: the map joined at its expansion
                            let status: String =
                                sqlx::query_scalar("SELECT status FROM steps WHERE id = $1")
                                    .bind(s.id)
                                    .fetch_one(store.pool())
                                    .await
                                    .unwrap();
                            joined_at_once += usize::from(status == "succeeded");
                        }
                        "expand"
                    } else if s.tool == "agent" {
                        agent_turn(store, &s, &cfg, &mut rng, &mut agent_turns).await;
                        "agent turn"
                    } else if s.tool == "task" {
                        // a child task, and the step parked on it (or its wait already resolved)
                        let fence = s.fence();
                        let spec = ChildSpec::from_params(&s.parameters).unwrap();
                        let parent = ChildOf {
                            fence: &fence,
                            step_key: &s.step_key,
                            attempt: s.attempt,
                            call_key: &format!("tr1-{}", s.id.simple()),
                            bounds: cfg.plan_bounds,
                            tree: cfg.tree,
                        };
                        if let Ok(Ok(child)) = store.start_child(parent, &spec).await {
                            children += 1;
                            let waiter = Waiter {
                                fence: &fence,
                                step_key: &s.step_key,
                                attempt: s.attempt,
                                worker_id: me,
                            };
                            if let Ok(Parked::Resolved(_)) =
                                store.park_step(waiter, &WaitSpec::child(child)).await
                            {
                                held[w].push(s);
                            }
                        }
                        "child"
                    } else {
                        // a tool that reports a cost now and then (a task with a max_cost stops)
                        let cost = (rng.below(3) == 0).then_some(0.6);
                        let ok = StepSuccess {
                            cost,
                            fence: s.fence(),
                            worker_id: me,
                            tool: s.tool.clone(),
                            parameters: json!({}),
                            output: json!({"op": op}),
                            output_params: Default::default(),
                            idempotency_key: None,
                        };
                        let done = store.complete_step(&ok, 60.0).await;
                        // the completion keeps the max_cost in its own commit
                        if done.is_ok() && cost.is_some() && stopped_at_cost(store, s.task_id).await
                        {
                            cost_stops += 1;
                        }
                        if let Ok(Some(d)) = done {
                            // an evaluation: one in four asks for another round
                            let brain = if rng.below(4) == 0 { &replanning } else { &cfg };
                            trellis::worker::run_decision_chain(store, brain, Some(d)).await;
                        }
                        "complete"
                    }
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
                    let brain = if rng.below(2) == 0 { &replanning } else { &cfg };
                    if let Ok(out) = store.fail_step(&f, POLICY).await
                        && let Some(d) = out.decision
                    {
                        trellis::worker::run_decision_chain(store, brain, Some(d)).await;
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
                    // a step of the HTTP tool asks its circuit, as a worker does: now and then
                    // the tool is held first (a 429's Retry-After), and the step waits for the
                    // release slot the gate gives it
                    let until = if s.tool == REMOTE {
                        held_slot(store, &s, &mut rng, &mut released).await
                    } else {
                        None
                    };
                    let wait = ToolWait {
                        tool: s.tool.clone(),
                        until: until.unwrap_or_else(|| {
                            chrono::Utc::now() + chrono::Duration::milliseconds(50)
                        }),
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
                    // children that ended (or stopped for a person) wake their parents; the
                    // children of parents that ended are cancelled
                    store.resolve_ended_children(100, 0.0).await.unwrap();
                    store.cancel_orphans(100).await.unwrap();
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
                16 => {
                    if !tasks.is_empty() {
                        let ids: Vec<Uuid> = (0..1 + rng.below(5))
                            .map(|_| tasks[rng.below(tasks.len())])
                            .collect();
                        let action =
                            [BulkKind::Cancel, BulkKind::Resume, BulkKind::Rerun][rng.below(3)];
                        let a = NewBulkAction {
                            id: Uuid::now_v7(),
                            tenant: "default".into(),
                            scope: None,
                            name: None,
                            action,
                            target: BulkTarget::Ids(ids),
                            filter_json: None,
                            from_step: Some(FromStep::FirstFailed),
                            dry_run: false,
                        };
                        store.create_bulk_action(&a).await.unwrap();
                        while let Some(b) = store.run_bulk_batch(2).await.unwrap() {
                            bulk_batches += usize::from(b.done > 0);
                        }
                    }
                    "bulk"
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
            check(store, &format!("operation {op} ({what}, seed {seed:#x})")).await;
        }
    })
    .await;
    // the run exercised every operation, and work went through to the end
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
    assert!(
        expanded > 0 && joined_at_once > 0 && children > 0 && cost_stops > 0 && bulk_batches > 0,
        "maps expanded {expanded} ({joined_at_once} joined at once), children started {children}, \
         cost stops {cost_stops}, bulk batches {bulk_batches}"
    );
    assert!(
        released.0 > 0 && released.1 > 0,
        "the HTTP tool's circuit let {} through and gave {} slots",
        released.0,
        released.1
    );
    // items waiting out a backoff lent their places (`map/lend`)
    let lent: i64 = sqlx::query_scalar("SELECT coalesce(sum(lent), 0)::bigint FROM step_maps")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert!(lent > 0, "no map item lent its place");
    assert!(
        agent_turns.0 > 0 && agent_turns.1 > 0,
        "agent turns with calls {}, answered {}",
        agent_turns.0,
        agent_turns.1
    );
    let sites = touch_call_sites();
    assert!(!sites.is_empty(), "no call site found in the source");
    let missed: Vec<_> = sites
        .iter()
        .filter(|(f, l)| !reached.sites.iter().any(|(rf, rl)| rf == f && rl == l))
        .collect();
    assert!(
        missed.is_empty(),
        "touch and moved call sites no operation reached (seed {seed:#x}): {missed:?}"
    );
    // every move of a step or a task said what it touched (the claim keeps the queue itself;
    // the completion cycle touches what its promotion reports; `StartPlanning` (a task with no
    // steps yet) and `SucceedAtOnce` (the pure evaluation's, of a plan that is done) change
    // nothing claimable, and this test's brain is not pure)
    let unsaid: Vec<String> = StepMove::ALL
        .iter()
        .filter(|m| !matches!(m, StepMove::Claim | StepMove::Complete | StepMove::Promote))
        .map(|m| format!("{m:?}"))
        .chain(
            TaskMove::ALL
                .iter()
                .filter(|m| !matches!(m, TaskMove::StartPlanning | TaskMove::SucceedAtOnce))
                .map(|m| format!("{m:?}")),
        )
        .filter(|m| !reached.moves.contains(m))
        .collect();
    assert!(
        unsaid.is_empty(),
        "moves no operation said it made (seed {seed:#x}): {unsaid:?}"
    );
    let succeeded = store.count_tasks("succeeded").await.unwrap();
    assert!(succeeded > 0, "no task succeeded in {ops} operations");
    assert!(woken > 0, "no event woke a waiting step");
    assert!(expired > 0, "no deadline passed");
    eprintln!(
        "invariants: {ops} operations {counts:?}, {} tasks, {succeeded} succeeded, {woken} events woke a step, {expired} deadlines passed, {expanded} maps expanded ({joined_at_once} joined at once), {children} children, {cost_stops} cost stops, {bulk_batches} bulk batches, {lent} places lent, the HTTP tool's circuit let {} through and gave {} slots",
        tasks.len(),
        released.0,
        released.1
    );
}

/// An agent step's run: a turn asking for 0–3 calls of `echo` (stored with them, the step
/// parked until they end), or, one time in three, its answer (the step completes).
async fn agent_turn(
    store: &trellis::store::Store,
    s: &ClaimedStep,
    cfg: &WorkerConfig,
    rng: &mut Rng,
    turns: &mut (usize, usize),
) {
    use trellis::store::agent::{NewCall, NewTurn};
    let turn = store.agent_turns(s.id).await.unwrap().len() as i32 + 1;
    let n = if rng.below(3) == 0 {
        0
    } else {
        1 + rng.below(3)
    };
    let calls: Vec<NewCall> = (1..=n)
        .map(|i| NewCall {
            key: format!("{}.{turn}.{i}", s.step_key),
            tool: "echo".into(),
            parameters: json!({"i": i}),
            item: json!({"tool_call_id": format!("c{i}"), "approval": false}),
        })
        .collect();
    let t = NewTurn {
        fence: trellis::store::maps::MapFence {
            step_id: s.id,
            task_id: s.task_id,
            lease_token: s.lease_token,
            step_key: &s.step_key,
        },
        turn,
        messages: json!([{"role": "assistant", "content": "x"}]),
        tool_calls: json!([]),
        calls,
        llm: trellis::domain::decision::LlmCallRecord {
            name: "agent_turn".into(),
            model: "m".into(),
            ok: true,
            error: None,
            usage: Default::default(),
            latency_ms: 1,
            exchange: None,
        },
        asked_again: false,
        ended: (n == 0).then(|| json!({"output": "done"})),
    };
    let stored = store.record_agent_turn(&t, 0.8).await.is_ok();
    if !stored || n > 0 {
        turns.0 += usize::from(stored && n > 0);
        return;
    }
    let ok = StepSuccess {
        cost: None,
        fence: s.fence(),
        worker_id: Uuid::now_v7(),
        tool: "agent".into(),
        parameters: json!({}),
        output: json!("done"),
        output_params: Default::default(),
        idempotency_key: None,
    };
    if let Ok(d) = store.complete_step(&ok, 60.0).await {
        turns.1 += 1;
        trellis::worker::run_decision_chain(store, cfg, d).await;
    }
}

/// Every call of the write context's `touch` and `moved` in the store's source:
/// `(file, line)`, as the compiler names a call site (`src/store/maps.rs`).
fn touch_call_sites() -> BTreeSet<(String, u32)> {
    fn walk(dir: &std::path::Path, out: &mut BTreeSet<(String, u32)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
                continue;
            }
            // the context itself, and the statements only tests run (feature `testing`)
            if path.extension().is_none_or(|e| e != "rs")
                || path.ends_with("write.rs")
                || path.ends_with("testing.rs")
            {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let rel = path
                .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .unwrap()
                .to_string_lossy()
                .trim_start_matches('/')
                .to_string();
            for (i, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if (code.contains("tx.touch(") || code.contains("tx.moved("))
                    && !code.starts_with("//")
                {
                    out.insert((rel.clone(), i as u32 + 1));
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store"),
        &mut out,
    );
    out
}

/// The invariants, after `when`: the claim queue equals its definition, and `running_steps`
/// lists exactly the running steps.
async fn check(store: &trellis::store::Store, when: &str) {
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
        "after {when}, the claim queue differs from its definition: {queue:?}"
    );
    assert_eq!(
        store.running_index_disagreements().await.unwrap(),
        0,
        "after {when}, running_steps differs from the running steps"
    );
    // a map's item is repaired on its own budget, never past it; a plan step spends the task's
    let over: Vec<(String, i32)> = sqlx::query_as(
        "SELECT s.step_key, s.repair_count FROM steps s JOIN tasks t ON t.id = s.task_id
         WHERE s.repair_count > t.max_single_step_repairs
            OR (s.repair_count > 0 AND s.map_step_id IS NULL)",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert!(
        over.is_empty(),
        "after {when}, repairs past an item's budget: {over:?}"
    );
}

/// A path too rare for the random operations to take reliably, walked first: a map whose items
/// all succeeded runs again after a replan, keeps them all and joins at its expansion, which
/// promotes its dependent. The invariants are checked after every move.
async fn map_joined_at_its_expansion(store: &trellis::store::Store, cfg: &WorkerConfig) {
    let mut t = common::new_task(json!([
        {"id": "m", "tool": "echo", "parameters": {"x": "${item}"},
         "map": {"over": "${context.xs}", "max_parallel": 2}},
        {"id": "d", "tool": "echo", "dependencies": ["m"]}
    ]));
    t.context = json!({"xs": [1, 2]});
    let task = store.submit_task(&t).await.unwrap().task_id;
    let me = Uuid::now_v7();
    let claim = |limit| Claim {
        worker_id: me,
        limit,
        lease_secs: 60.0,
        max_running_tasks: 0,
    };
    let expand = |s: ClaimedStep| async move {
        let fence = trellis::store::maps::MapFence {
            step_id: s.id,
            task_id: s.task_id,
            lease_token: s.lease_token,
            step_key: &s.step_key,
        };
        store.expand_map(fence, &json!([1, 2]), 2).await.unwrap();
        s.id
    };
    let complete = |s: ClaimedStep| async move {
        let ok = StepSuccess {
            cost: None,
            fence: s.fence(),
            worker_id: me,
            tool: s.tool.clone(),
            parameters: json!({}),
            output: json!({"done": s.step_key}),
            output_params: Default::default(),
            idempotency_key: None,
        };
        store.complete_step(&ok, 60.0).await.unwrap()
    };
    let mut map = store.claim_steps(&claim(1)).await.unwrap();
    expand(map.remove(0)).await;
    check(store, "the map's expansion").await;
    for item in store.claim_steps(&claim(2)).await.unwrap() {
        complete(item).await;
        check(store, "an item's completion").await;
    }
    let d = store.claim_steps(&claim(1)).await.unwrap().remove(0);
    assert_eq!(d.step_key, "d");
    // the evaluation asks for another round: a full replan, the map runs again
    let evaluation = complete(d).await;
    let replanning = WorkerConfig {
        brain: std::sync::Arc::new(ReplanningBrain),
        ..cfg.clone()
    };
    trellis::worker::run_decision_chain(store, &replanning, evaluation).await;
    check(store, "the replan").await;
    let mut again = store.claim_steps(&claim(1)).await.unwrap();
    assert_eq!(again.first().map(|s| s.step_key.as_str()), Some("m"));
    let m = expand(again.remove(0)).await;
    check(store, "the map's expansion with every item kept").await;
    let (status, queued): (String, i64) = sqlx::query_as(
        "SELECT (SELECT status FROM steps WHERE id = $1),
                (SELECT count(*) FROM claim_queue WHERE task_id = $2)",
    )
    .bind(m)
    .bind(task)
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(status, "succeeded", "the map joined at its expansion");
    assert_eq!(queued, 1, "its dependent is claimable");
}

/// Whether a task ended stopped at its `max_cost`.
async fn stopped_at_cost(store: &trellis::store::Store, task_id: Uuid) -> bool {
    sqlx::query_scalar::<_, bool>(
        "SELECT coalesce(status = 'failed' AND error->>'code' = 'cost_limit_exceeded', false) FROM tasks WHERE id = $1",
    )
    .bind(task_id)
    .fetch_one(store.pool())
    .await
    .unwrap()
}

/// The HTTP tool some steps call (never called here: no worker runs).
const REMOTE: &str = "remote";

/// A step of the HTTP tool at its circuit's gate, as a worker asks it before a call: one time
/// in three the tool is held first for 40 ms (paced at 10 ms). Returns the release slot the
/// gate gave it, if it must wait; `released` counts (let through, given a slot).
async fn held_slot(
    store: &trellis::store::Store,
    s: &ClaimedStep,
    rng: &mut Rng,
    released: &mut (usize, usize),
) -> Option<chrono::DateTime<chrono::Utc>> {
    use trellis::domain::circuit::Gate;
    if rng.below(3) == 0 {
        store.hold_tool(REMOTE, 40, Some(10)).await.unwrap();
    }
    match store.gate_tool(REMOTE, 500, true, s.id).await.unwrap() {
        (Gate::Wait(until, _), _) => {
            released.1 += 1;
            Some(until)
        }
        _ => {
            released.0 += 1;
            None
        }
    }
}
