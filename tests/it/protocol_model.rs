//! The claim / lease / fence protocol as a model, checked exhaustively by `stateright` in
//! `cargo test`: every interleaving of claims, completions, failures, releases, lost leases and
//! their rescues, worker crashes and cancels, steps parked on a callback that races the call's
//! 2xx, and recovery decisions with leases of their own, for 2 workers and 2 tasks of 3 steps.
//!
//! Each action is named after the statement that implements it (`step/claim_plain`,
//! `step/complete`, …) and does what that statement does to the rows it touches: the claim
//! takes an entry of the claim queue (it counts nothing), a completion is accepted only with its
//! fence (step id, lease token, status running), `queue/sync` runs where the store runs it
//! and picks a task's ready steps by `run_after` (a step made ready after others sorts after
//! them: an item waiting out a backoff does not keep a place from one that is due).
//! The properties are the protocol's promises:
//! - no step completes twice, and no completion lands after its fence moved;
//! - a task's running steps never exceed its `max_concurrent_steps`, a limited tool's running
//!   attempts its `max_concurrency`, and the tasks with running steps
//!   `[orchestrator] max_concurrent_tasks` (checked with that cap at 1);
//! - the claim queue equals its definition after every action;
//! - a callback wakes its step whether it lands before or after the park, and a late one (of
//!   an attempt that was rescued) changes nothing: no step waits on a callback that came;
//! - a decision is applied once, and never by a worker whose decision lease moved on;
//! - every task ends, when workers keep coming back (a bounded number of disruptions).
//!
//! Two known bugs, each behind a switch, must be found with a trace: a completion that does
//! not check its fence, and a claim that takes a ready step past the task's cap.
//! `TRELLIS_MODEL_WIDE=1` checks 3 workers (3.2 million states, about 15 s in a release build).

use std::collections::BTreeSet;

use stateright::{Checker, Model, Property};

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
enum StepStatus {
    Blocked,
    Ready,
    Running,
    Succeeded,
    Failed,
    /// Parked on a wait: no slot, no lease.
    Waiting,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum TaskStatus {
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Step {
    task: usize,
    status: StepStatus,
    /// `steps.lease_token`: a claim adds one; a completion must present it.
    token: u8,
    /// The lease's deadline passed (the database clock moved past `lease_expires_at`).
    expired: bool,
    failures: u8,
    /// Accepted completions: the property says at most one.
    completed: u8,
    /// Steps of the same task this one depends on.
    deps: Vec<usize>,
    /// Its tool is the limited one (`max_concurrency` 1, shared by the tasks' first steps).
    limited: bool,
    /// An async tool: the call's 2xx parks the step (`step/park`) until its callback.
    callback_tool: bool,
    /// The attempt (token) whose call is out and whose callback has not landed yet.
    call_out: Option<u8>,
    /// The current attempt's callback landed (the wait is resolved): the step completes
    /// with it, without calling the tool again.
    resolved: bool,
    /// `steps.run_after` as a rank among the ready steps (0 for the others): a step made
    /// ready sorts after those already ready ([`LATER`] until the action ends), steps made
    /// ready together in step order.
    run_after: u8,
}

/// The `run_after` of a step made ready by the current action: after every step already
/// ready (a retry's is `now()` plus its backoff); [`Protocol::rank_ready`] makes it a rank.
const LATER: u8 = u8::MAX;

/// A recovery decision about a failed step: a `decisions` row.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Decision {
    /// `running` (claimed, leased) or `pending`.
    running: bool,
    token: u8,
    expired: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct State {
    steps: Vec<Step>,
    tasks: Vec<TaskStatus>,
    /// `claim_queue`: the step ids with an entry.
    queue: BTreeSet<usize>,
    /// What each worker process believes it holds: (step, token, the call went out and the
    /// step must park before anything else).
    held: Vec<BTreeSet<(usize, u8, bool)>>,
    /// Each step's open decision.
    decisions: Vec<Option<Decision>>,
    /// The decisions each worker believes it holds: (step, token).
    held_decisions: Vec<BTreeSet<(usize, u8)>>,
    /// Repairs each task has left (`max_single_step_repairs`).
    repairs_left: Vec<u8>,
    /// Disruptions left (crashes, lost leases, failures, releases, cancels): bounded so that
    /// every path ends, and with none left the workers keep coming back.
    disruptions: u8,
    /// A completion was accepted with a token other than the step's current one.
    stale_accepted: bool,
    /// A decision was applied to a step that was not failed, or of a task that had ended.
    decision_misapplied: bool,
    /// Decisions applied, per step (a repaired step may fail again and get a new one).
    applied: Vec<u8>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum Action {
    /// `step/claim_plain` (+ `step/_claim_lease`): a worker takes a queue entry.
    ClaimPlain { worker: usize, step: usize },
    /// `step/complete` (+ `step/promote`, `queue/sync`, `task/succeed_at_once`).
    Complete {
        worker: usize,
        step: usize,
        token: u8,
    },
    /// `step/fail_retry` or `step/fail` (+ `task/fail`, `queue/sync`).
    Fail {
        worker: usize,
        step: usize,
        token: u8,
    },
    /// `step/release` (+ `queue/sync`): a draining worker gives a step back.
    Release {
        worker: usize,
        step: usize,
        token: u8,
    },
    /// The database clock passes a running step's lease deadline (its worker paused or died).
    LeaseExpires { step: usize },
    /// `rescue_expired`: the expired lease fails as `worker_lost` through `step/fail_retry`.
    Rescue { step: usize },
    /// A worker process dies and another takes its place (it holds nothing).
    Crash { worker: usize },
    /// `task/cancel` (+ `queue/sync`, `wait/cancel_open`, `decision/cancel_open`): the task's
    /// entries, waits and decision go; running steps run on.
    Cancel { task: usize },
    /// `step/park` (+ `wait/insert`, `queue/sync`): the async call answered 2xx; the step
    /// waits, unless its callback already landed (then its worker goes on with it).
    Park {
        worker: usize,
        step: usize,
        token: u8,
    },
    /// `wait/resolve` (+ `step/wake`, `queue/sync`): the callback of the call made by
    /// attempt `token` lands.
    Callback { step: usize, token: u8 },
    /// `decision/claim`: a worker leases the pending decision about `step`.
    ClaimDecision { worker: usize, step: usize },
    /// `decision/apply` (+ `step/rerun`, or `task/fail` and `decision/cancel_open`,
    /// `queue/sync`), fenced by the decision's lease.
    ApplyDecision {
        worker: usize,
        step: usize,
        token: u8,
    },
    /// A decision's lease deadline passes.
    DecisionLeaseExpires { step: usize },
    /// `decision/requeue_expired`.
    RequeueDecision { step: usize },
}

/// The model's actions, by the moves of `src/store/sql` they stand for (`-- move:` lines).
const MODELLED: &[(&str, &str)] = &[
    ("StepMove::Claim", "ClaimPlain"),
    ("StepMove::Complete", "Complete"),
    ("StepMove::Promote", "Complete"),
    ("StepMove::Fail", "Fail"),
    ("StepMove::RetryAfterFailure", "Fail, Rescue"),
    ("StepMove::Release", "Release"),
    ("TaskMove::SucceedAtOnce", "Complete"),
    ("TaskMove::Fail", "Fail"),
    ("TaskMove::Cancel", "Cancel"),
    ("StepMove::Park", "Park"),
    // an agent step woken by the end of its turn's last call (`agent/wake`) makes the same
    // move, in the transaction that ends the call; its park (`map/expand`) inserts the calls,
    // so no call can end before it (tests/it/agent.rs, tests/it/invariants.rs)
    ("StepMove::Wake", "Callback"),
    ("WaitMove::Resolve", "Callback"),
    ("WaitMove::Cancel", "Cancel"),
    ("StepMove::Rerun", "ApplyDecision (a repair)"),
    ("DecisionMove::Claim", "ClaimDecision"),
    ("DecisionMove::Apply", "ApplyDecision"),
    ("DecisionMove::Cancel", "Cancel"),
    ("DecisionMove::Requeue", "RequeueDecision"),
];

/// Moves this model leaves out, and why: what a decision does beyond a repair or the task's
/// failure (plan changes, evaluations, reflections), a whole-task rerun, waits' expiry,
/// planning, webhook deliveries; their fences are checked by the integration tests named.
const OUTSIDE: &[(&str, &str)] = &[
    ("StepMove::Expand", "map steps (tests/it/maps.rs)"),
    ("StepMove::Join", "map steps (tests/it/maps.rs)"),
    ("StepMove::GiveUp", "map steps (tests/it/maps.rs)"),
    ("StepMove::Skip", "plan changes (tests/it/state_table.rs)"),
    (
        "StepMove::Supersede",
        "plan changes (tests/it/state_table.rs)",
    ),
    ("TaskMove::Evaluate", "decisions (tests/it/state_table.rs)"),
    ("TaskMove::Reflect", "decisions (tests/it/state_table.rs)"),
    ("TaskMove::Replan", "decisions (tests/it/state_table.rs)"),
    (
        "TaskMove::NeedIntervention",
        "decisions (tests/it/state_table.rs)",
    ),
    ("TaskMove::Succeed", "decisions (tests/it/state_table.rs)"),
    ("TaskMove::Rerun", "rerun (tests/it/scheduling.rs)"),
    ("TaskMove::Run", "planning (tests/it/execution.rs)"),
    (
        "TaskMove::StartPlanning",
        "planning (tests/it/execution.rs)",
    ),
    ("WaitMove::Expire", "waits (tests/it/waits.rs)"),
    ("DeliveryMove::Deliver", "webhooks (tests/it/webhooks.rs)"),
    ("DeliveryMove::Redeliver", "webhooks (tests/it/webhooks.rs)"),
    ("DeliveryMove::GiveUp", "webhooks (tests/it/webhooks.rs)"),
];

/// The system checked: its size, and the two bugs it can be given.
#[derive(Clone)]
struct Protocol {
    workers: usize,
    tasks: usize,
    steps_per_task: usize,
    /// `max_concurrent_steps` of every task.
    cap: usize,
    /// `max_concurrency` of the limited tool (the first step of every task calls it).
    tool_cap: usize,
    /// `[orchestrator] max_concurrent_tasks` (0: none).
    task_cap: usize,
    /// A failure is retried once; then a decision repairs the step once, or fails the task.
    max_failures: u8,
    repairs: u8,
    disruptions: u8,
    /// The second step of every task calls an async tool (parks until its callback).
    callbacks: bool,
    /// A step that fails past its retries gets a recovery decision (else its task fails).
    decisions: bool,
    /// Bug 1: a completion is accepted without checking its fence.
    unfenced_completion: bool,
    /// Bug 2: a claim takes any ready step of a running task, past the cap.
    claim_skips_cap: bool,
}

impl Protocol {
    fn new(workers: usize, tasks: usize, steps_per_task: usize) -> Self {
        Self {
            workers,
            tasks,
            steps_per_task,
            cap: 2,
            tool_cap: 1,
            task_cap: 0,
            max_failures: 2,
            repairs: 1,
            disruptions: 2,
            callbacks: false,
            decisions: false,
            unfenced_completion: false,
            claim_skips_cap: false,
        }
    }

    fn running(s: &State, task: usize) -> usize {
        s.steps
            .iter()
            .filter(|x| x.task == task && x.status == StepStatus::Running)
            .count()
    }

    fn running_limited(s: &State) -> usize {
        s.steps
            .iter()
            .filter(|x| x.limited && x.status == StepStatus::Running)
            .count()
    }

    fn active_tasks(s: &State) -> usize {
        (0..s.tasks.len())
            .filter(|t| Self::running(s, *t) > 0)
            .count()
    }

    /// `queue/sync`'s definition: a running task's first ready steps by `run_after`, then
    /// step order, as many as its room.
    fn wanted(&self, s: &State, task: usize) -> BTreeSet<usize> {
        if s.tasks[task] != TaskStatus::Running {
            return BTreeSet::new();
        }
        let room = self.cap.saturating_sub(Self::running(s, task));
        let mut ready: Vec<(u8, usize)> = s
            .steps
            .iter()
            .enumerate()
            .filter(|(_, x)| x.task == task && x.status == StepStatus::Ready)
            .map(|(i, x)| (x.run_after, i))
            .collect();
        ready.sort_unstable();
        ready.into_iter().take(room).map(|(_, i)| i).collect()
    }

    /// Ready steps' `run_after` as ranks 1.. (in their order), the others' 0: the order is
    /// kept and states that differ only in clock readings are one.
    fn rank_ready(s: &mut State) {
        let mut ready: Vec<(u8, usize)> = s
            .steps
            .iter()
            .enumerate()
            .filter(|(_, x)| x.status == StepStatus::Ready)
            .map(|(i, x)| (x.run_after, i))
            .collect();
        ready.sort_unstable();
        for x in s.steps.iter_mut() {
            x.run_after = 0;
        }
        for (rank, (_, i)) in ready.into_iter().enumerate() {
            s.steps[i].run_after = rank as u8 + 1;
        }
    }

    /// `queue/sync` for one task (under its row lock).
    fn sync(&self, s: &mut State, task: usize) {
        let want = self.wanted(s, task);
        let steps = &s.steps;
        s.queue.retain(|i| steps[*i].task != task);
        s.queue.extend(want);
    }

    /// Whether the claim may start `step` now: its task admitted under the task cap, its
    /// tool under its cap (the claim locks the tool's row and the tasks' rows, so it counts
    /// these exactly).
    fn admits(&self, s: &State, step: usize) -> bool {
        let x = &s.steps[step];
        let tool_ok = !x.limited || Self::running_limited(s) < self.tool_cap;
        let task_ok = self.task_cap == 0
            || Self::running(s, x.task) > 0
            || Self::active_tasks(s) < self.task_cap;
        tool_ok && task_ok
    }

    /// `step/promote`, then the task's end when every step succeeded (`task/succeed_at_once`).
    fn promote(&self, s: &mut State, task: usize) {
        for i in 0..s.steps.len() {
            let x = &s.steps[i];
            if x.task == task
                && x.status == StepStatus::Blocked
                && x.deps
                    .iter()
                    .all(|d| s.steps[*d].status == StepStatus::Succeeded)
            {
                s.steps[i].status = StepStatus::Ready;
                s.steps[i].run_after = LATER;
            }
        }
        if s.tasks[task] == TaskStatus::Running
            && s.steps
                .iter()
                .filter(|x| x.task == task)
                .all(|x| x.status == StepStatus::Succeeded)
        {
            s.tasks[task] = TaskStatus::Succeeded;
        }
    }

    /// `decision/cancel_open`: a task that ended drops its open decisions.
    fn drop_decisions(&self, s: &mut State, task: usize) {
        for (i, x) in s.steps.iter().enumerate() {
            if x.task == task {
                s.decisions[i] = None;
            }
        }
    }

    /// The fence every change to a claimed step checks: same token, still running.
    fn fenced(&self, s: &State, step: usize, token: u8) -> bool {
        let x = &s.steps[step];
        x.status == StepStatus::Running && x.token == token
    }

    /// A failed attempt, fenced: retried (`step/fail_retry`), or the step fails (`step/fail`)
    /// and a recovery decision is created for it (`decision/create`); the task's queue is
    /// synced either way.
    fn fail(&self, s: &mut State, step: usize) {
        let x = &mut s.steps[step];
        x.failures += 1;
        x.expired = false;
        x.resolved = false;
        let task = x.task;
        if x.failures < self.max_failures {
            x.status = StepStatus::Ready;
            x.run_after = LATER;
        } else {
            x.status = StepStatus::Failed;
            if s.tasks[task] == TaskStatus::Running && !self.decisions {
                s.tasks[task] = TaskStatus::Failed;
            } else if s.tasks[task] == TaskStatus::Running {
                s.decisions[step] = Some(Decision {
                    running: false,
                    token: 0,
                    expired: false,
                });
            }
        }
        self.sync(s, task);
    }
}

impl Model for Protocol {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let mut steps = Vec::new();
        for t in 0..self.tasks {
            let base = steps.len();
            for k in 0..self.steps_per_task {
                // a small DAG: the last step depends on the first (the others are independent)
                let deps = if k + 1 == self.steps_per_task && k > 0 {
                    vec![base]
                } else {
                    vec![]
                };
                steps.push(Step {
                    task: t,
                    status: if deps.is_empty() {
                        StepStatus::Ready
                    } else {
                        StepStatus::Blocked
                    },
                    token: 0,
                    expired: false,
                    failures: 0,
                    completed: 0,
                    deps,
                    // the first step calls the limited tool, the second an async one
                    limited: k == 0,
                    callback_tool: self.callbacks && k == 1,
                    call_out: None,
                    resolved: false,
                    run_after: 0,
                });
            }
        }
        let mut s = State {
            steps,
            tasks: vec![TaskStatus::Running; self.tasks],
            queue: BTreeSet::new(),
            held: vec![BTreeSet::new(); self.workers],
            decisions: vec![None; self.tasks * self.steps_per_task],
            held_decisions: vec![BTreeSet::new(); self.workers],
            repairs_left: vec![self.repairs; self.tasks],
            disruptions: self.disruptions,
            stale_accepted: false,
            decision_misapplied: false,
            applied: vec![0; self.tasks * self.steps_per_task],
        };
        // task/submit writes the first entries
        for t in 0..self.tasks {
            self.sync(&mut s, t);
        }
        Self::rank_ready(&mut s);
        vec![s]
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        for worker in 0..self.workers {
            let claimable: Vec<usize> = if self.claim_skips_cap {
                (0..s.steps.len())
                    .filter(|i| {
                        s.steps[*i].status == StepStatus::Ready
                            && s.tasks[s.steps[*i].task] == TaskStatus::Running
                    })
                    .collect()
            } else {
                s.queue.iter().copied().collect()
            };
            for step in claimable {
                if self.admits(s, step) {
                    out.push(Action::ClaimPlain { worker, step });
                }
            }
            for &(step, token, must_park) in &s.held[worker] {
                if must_park {
                    out.push(Action::Park {
                        worker,
                        step,
                        token,
                    });
                } else {
                    out.push(Action::Complete {
                        worker,
                        step,
                        token,
                    });
                }
                if s.disruptions > 0 {
                    out.push(Action::Fail {
                        worker,
                        step,
                        token,
                    });
                    out.push(Action::Release {
                        worker,
                        step,
                        token,
                    });
                }
            }
            if s.disruptions > 0
                && !(s.held[worker].is_empty() && s.held_decisions[worker].is_empty())
            {
                out.push(Action::Crash { worker });
            }
            for (step, d) in s.decisions.iter().enumerate() {
                if d.as_ref().is_some_and(|d| !d.running) {
                    out.push(Action::ClaimDecision { worker, step });
                }
            }
            for &(step, token) in &s.held_decisions[worker] {
                out.push(Action::ApplyDecision {
                    worker,
                    step,
                    token,
                });
            }
        }
        for (step, x) in s.steps.iter().enumerate() {
            if x.status == StepStatus::Running {
                if x.expired {
                    out.push(Action::Rescue { step });
                } else if s.disruptions > 0 || !s.held.iter().any(|h| h.iter().any(|e| e.0 == step))
                {
                    // a lease nobody renews always runs out; one a live worker holds only as a
                    // disruption (the worker paused past it)
                    out.push(Action::LeaseExpires { step });
                }
            }
            if let Some(token) = x.call_out {
                out.push(Action::Callback { step, token });
            }
        }
        for (step, d) in s.decisions.iter().enumerate() {
            if let Some(d) = d
                && d.running
            {
                if d.expired {
                    out.push(Action::RequeueDecision { step });
                } else if s.disruptions > 0
                    || !s
                        .held_decisions
                        .iter()
                        .any(|h| h.iter().any(|e| e.0 == step))
                {
                    out.push(Action::DecisionLeaseExpires { step });
                }
            }
        }
        if s.disruptions > 0 {
            for task in 0..self.tasks {
                if s.tasks[task] == TaskStatus::Running {
                    out.push(Action::Cancel { task });
                }
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::ClaimPlain { worker, step } => {
                let task = s.steps[step].task;
                // the claim locks the task row and leases what it took from the queue
                if s.tasks[task] != TaskStatus::Running
                    || s.steps[step].status != StepStatus::Ready
                    || !self.admits(&s, step)
                {
                    return None;
                }
                s.queue.remove(&step);
                let x = &mut s.steps[step];
                x.status = StepStatus::Running;
                x.token += 1;
                x.expired = false;
                // an async step whose callback has not landed calls its tool (the call is
                // out from now on: its callback may land before the 2xx)
                let must_park = x.callback_tool && !x.resolved;
                if must_park {
                    x.call_out = Some(x.token);
                }
                s.held[worker].insert((step, x.token, must_park));
            }
            Action::Complete {
                worker,
                step,
                token,
            } => {
                s.held[worker].remove(&(step, token, false));
                let accepted = if self.unfenced_completion {
                    s.steps[step].status != StepStatus::Succeeded || s.steps[step].token != token
                } else {
                    self.fenced(&s, step, token)
                };
                if accepted {
                    if s.steps[step].token != token {
                        s.stale_accepted = true;
                    }
                    let x = &mut s.steps[step];
                    x.status = StepStatus::Succeeded;
                    x.completed += 1;
                    x.expired = false;
                    let task = x.task;
                    if s.tasks[task] == TaskStatus::Running {
                        self.promote(&mut s, task);
                    }
                    self.sync(&mut s, task);
                }
            }
            Action::Fail {
                worker,
                step,
                token,
            } => {
                s.held[worker].retain(|e| (e.0, e.1) != (step, token));
                s.disruptions -= 1;
                if self.fenced(&s, step, token) {
                    self.fail(&mut s, step);
                }
            }
            Action::Release {
                worker,
                step,
                token,
            } => {
                s.held[worker].retain(|e| (e.0, e.1) != (step, token));
                s.disruptions -= 1;
                if self.fenced(&s, step, token) {
                    let x = &mut s.steps[step];
                    x.status = StepStatus::Ready;
                    x.run_after = LATER;
                    x.expired = false;
                    let task = x.task;
                    self.sync(&mut s, task);
                }
            }
            Action::LeaseExpires { step } => {
                if s.held.iter().any(|h| h.iter().any(|e| e.0 == step)) {
                    s.disruptions -= 1;
                }
                s.steps[step].expired = true;
            }
            Action::Rescue { step } => {
                // fenced on the expired lease: the step is still running with it
                if !(s.steps[step].status == StepStatus::Running && s.steps[step].expired) {
                    return None;
                }
                self.fail(&mut s, step);
            }
            Action::Crash { worker } => {
                s.disruptions -= 1;
                s.held[worker].clear();
                s.held_decisions[worker].clear();
            }
            Action::Cancel { task } => {
                s.disruptions -= 1;
                s.tasks[task] = TaskStatus::Cancelled;
                self.drop_decisions(&mut s, task);
                self.sync(&mut s, task);
            }
            Action::Park {
                worker,
                step,
                token,
            } => {
                s.held[worker].remove(&(step, token, true));
                if !self.fenced(&s, step, token) {
                    return Some(s);
                }
                if s.steps[step].resolved {
                    // the callback beat the 2xx: the worker goes on with the step
                    s.held[worker].insert((step, token, false));
                } else {
                    s.steps[step].status = StepStatus::Waiting;
                    s.steps[step].expired = false;
                    let task = s.steps[step].task;
                    self.sync(&mut s, task);
                }
            }
            Action::Callback { step, token } => {
                s.steps[step].call_out = None;
                let task = s.steps[step].task;
                // the wait of attempt `token`, still open on a running task: else it is a
                // late callback, and changes nothing
                let x = &mut s.steps[step];
                if x.token != token || s.tasks[task] != TaskStatus::Running {
                    return Some(s);
                }
                match x.status {
                    StepStatus::Running => x.resolved = true,
                    StepStatus::Waiting => {
                        x.resolved = true;
                        x.status = StepStatus::Ready;
                        x.run_after = LATER;
                        self.sync(&mut s, task);
                    }
                    _ => {}
                }
            }
            Action::ClaimDecision { worker, step } => {
                let d = s.decisions[step].as_mut()?;
                if d.running {
                    return None;
                }
                d.running = true;
                d.token += 1;
                d.expired = false;
                s.held_decisions[worker].insert((step, d.token));
            }
            Action::ApplyDecision {
                worker,
                step,
                token,
            } => {
                s.held_decisions[worker].remove(&(step, token));
                let Some(d) = s.decisions[step].clone() else {
                    return Some(s);
                };
                // fenced: still running with this worker's token
                if !(d.running && d.token == token) {
                    return Some(s);
                }
                s.decisions[step] = None;
                s.applied[step] += 1;
                let task = s.steps[step].task;
                if s.tasks[task] != TaskStatus::Running
                    || s.steps[step].status != StepStatus::Failed
                {
                    // only an open decision of a running task about a failed step is applied
                    s.decision_misapplied = true;
                }
                if s.repairs_left[task] > 0 {
                    // a repair: the step runs again (`step/rerun`)
                    s.repairs_left[task] -= 1;
                    let x = &mut s.steps[step];
                    x.status = StepStatus::Ready;
                    x.run_after = LATER;
                    x.failures = 0;
                } else {
                    s.tasks[task] = TaskStatus::Failed;
                    self.drop_decisions(&mut s, task);
                }
                self.sync(&mut s, task);
            }
            Action::DecisionLeaseExpires { step } => {
                if s.held_decisions
                    .iter()
                    .any(|h| h.iter().any(|e| e.0 == step))
                {
                    s.disruptions -= 1;
                }
                s.decisions[step].as_mut()?.expired = true;
            }
            Action::RequeueDecision { step } => {
                let d = s.decisions[step].as_mut()?;
                if !(d.running && d.expired) {
                    return None;
                }
                d.running = false;
                d.expired = false;
            }
        }
        Self::rank_ready(&mut s);
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut p = vec![
            Property::<Self>::always("no step completes twice", |_, s| {
                s.steps.iter().all(|x| x.completed <= 1)
            }),
            Property::<Self>::always("no completion lands after its fence moved", |_, s| {
                !s.stale_accepted
            }),
            Property::<Self>::always("a task's running steps stay within its cap", |m, s| {
                (0..m.tasks).all(|t| Protocol::running(s, t) <= m.cap)
            }),
            Property::<Self>::always(
                "a limited tool's running steps stay within its cap",
                |m, s| Protocol::running_limited(s) <= m.tool_cap,
            ),
            Property::<Self>::always(
                "tasks with running steps stay within the task cap",
                |m, s| m.task_cap == 0 || Protocol::active_tasks(s) <= m.task_cap,
            ),
            Property::<Self>::always("the claim queue equals its definition", |m, s| {
                let mut want = BTreeSet::new();
                for t in 0..m.tasks {
                    want.extend(m.wanted(s, t));
                }
                want == s.queue
            }),
            Property::<Self>::always("no step waits on a callback that landed", |_, s| {
                s.steps.iter().all(|x| {
                    !(x.status == StepStatus::Waiting
                        && (x.resolved || x.call_out != Some(x.token)))
                        || s.tasks[x.task] != TaskStatus::Running
                })
            }),
            Property::<Self>::always("a decision is applied once, by its lease", |m, s| {
                !s.decision_misapplied && s.applied.iter().all(|n| *n <= m.repairs + 1)
            }),
            Property::<Self>::eventually("every task ends", |_, s| {
                s.tasks.iter().all(|t| *t != TaskStatus::Running)
            }),
            Property::<Self>::sometimes("a rescued step is completed", |_, s| {
                s.steps
                    .iter()
                    .any(|x| x.failures > 0 && x.status == StepStatus::Succeeded)
            }),
        ];
        if self.callbacks {
            p.push(Property::<Self>::sometimes(
                "a callback lands before its 2xx",
                |_, s| {
                    s.held.iter().flatten().any(|&(i, t, must_park)| {
                        let x = &s.steps[i];
                        !must_park
                            && x.callback_tool
                            && x.token == t
                            && x.resolved
                            && x.status == StepStatus::Running
                    })
                },
            ));
        }
        if self.decisions {
            p.push(Property::<Self>::sometimes(
                "a repaired step succeeds",
                |m, s| {
                    (0..m.tasks).any(|t| {
                        s.repairs_left[t] < m.repairs && s.tasks[t] == TaskStatus::Succeeded
                    })
                },
            ));
        }
        p
    }
}

fn check(m: Protocol) -> impl Checker<Protocol> {
    m.checker().spawn_bfs().join()
}

/// Claims, completions, failures, releases, lost leases, rescues, crashes and cancels, with
/// the per-task and per-tool caps: 2 workers, 2 tasks of 3 steps (3 workers wide).
#[test]
fn the_protocol_keeps_its_promises_in_every_interleaving() {
    let wide = std::env::var_os("TRELLIS_MODEL_WIDE").is_some();
    let m = Protocol::new(if wide { 3 } else { 2 }, 2, 3);
    let c = check(m);
    eprintln!("protocol model: {} states", c.unique_state_count());
    c.assert_properties();
}

/// The same with `[orchestrator] max_concurrent_tasks` = 1.
#[test]
fn the_task_cap_holds_in_every_interleaving() {
    let mut m = Protocol::new(2, 2, 3);
    m.task_cap = 1;
    let c = check(m);
    eprintln!(
        "protocol model, task cap 1: {} states",
        c.unique_state_count()
    );
    c.assert_properties();
}

/// Callbacks racing their call's 2xx, late callbacks of rescued attempts, and recovery
/// decisions with leases that expire and are requeued: 2 workers (3 wide), a task of 3
/// steps. (Two such tasks pass ten million states: more than `cargo test` should spend.)
#[test]
fn callbacks_and_decisions_keep_their_promises_in_every_interleaving() {
    let wide = std::env::var_os("TRELLIS_MODEL_WIDE").is_some();
    let mut m = Protocol::new(if wide { 3 } else { 2 }, 1, 3);
    m.callbacks = true;
    m.decisions = true;
    let c = check(m);
    eprintln!(
        "protocol model with callbacks and decisions: {} states",
        c.unique_state_count()
    );
    c.assert_properties();
}

#[test]
fn a_completion_without_its_fence_is_found() {
    let mut m = Protocol::new(2, 1, 2);
    m.unfenced_completion = true;
    let c = check(m);
    let found = c
        .discovery("no completion lands after its fence moved")
        .or_else(|| c.discovery("no step completes twice"));
    let trace = found.expect("the model finds the unfenced completion");
    eprintln!("counterexample: {:?}", trace.into_actions());
}

#[test]
fn a_claim_that_skips_the_cap_is_found() {
    let mut m = Protocol::new(2, 1, 3);
    m.claim_skips_cap = true;
    m.cap = 1;
    let c = check(m);
    let trace = c
        .discovery("a task's running steps stay within its cap")
        .expect("the model finds the claim past the cap");
    eprintln!("counterexample: {:?}", trace.into_actions());
}

/// Every `-- move:` of the store is either an action of the model or named, with its reason,
/// as outside it: a new move is placed on purpose.
#[test]
fn every_move_of_the_store_is_placed() {
    let mut moves = BTreeSet::new();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/store/sql");
    let mut stack = vec![std::path::PathBuf::from(dir)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "sql") {
                for line in std::fs::read_to_string(&p).unwrap().lines() {
                    if let Some(m) = line.strip_prefix("-- move: ") {
                        let m = m.split_whitespace().next().unwrap().to_string();
                        moves.insert(m);
                    }
                }
            }
        }
    }
    assert!(moves.len() > 20, "{moves:?}");
    let placed: BTreeSet<String> = MODELLED
        .iter()
        .chain(OUTSIDE)
        .map(|(m, _)| m.to_string())
        .collect();
    let unplaced: Vec<_> = moves.difference(&placed).collect();
    assert!(
        unplaced.is_empty(),
        "moves neither modelled nor placed outside: {unplaced:?}"
    );
    let gone: Vec<_> = placed.difference(&moves).collect();
    assert!(
        gone.is_empty(),
        "placed moves no statement declares: {gone:?}"
    );
}
