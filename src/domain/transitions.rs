//! The transition tables: every status change Trellis makes is one of these named moves, and
//! the store's `transitions` module is the only code that writes a status. A move lists the
//! statuses it may start from; the store's SQL only matches rows in those statuses, so an
//! illegal move changes nothing and is reported as an error. A test compares the edges of these
//! moves with the diagrams of `docs/state-machine.md`, both ways.

use super::status::{DecisionStatus, DeliveryStatus, StepStatus, TaskStatus, WaitStatus};

macro_rules! moves {
    ($(#[$m:meta])* $name:ident: $status:ident {
        $($(#[$vm:meta])* $variant:ident: [$($from:ident),+] => $to:ident),+ $(,)?
    }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            /// Every move.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The statuses this move may start from.
            pub fn from(self) -> &'static [$status] {
                match self { $($name::$variant => &[$($status::$from),+]),+ }
            }

            /// The status this move ends in.
            pub fn to(self) -> $status {
                match self { $($name::$variant => $status::$to),+ }
            }

            /// Whether a row in `from` may take this move.
            pub fn allows(self, from: $status) -> bool {
                self.from().contains(&from)
            }

            /// Every (from, to) edge of every move, without repeats, in declaration order.
            pub fn edges() -> Vec<($status, $status)> {
                let mut out = Vec::new();
                for m in Self::ALL {
                    for f in m.from() {
                        if !out.contains(&(*f, m.to())) {
                            out.push((*f, m.to()));
                        }
                    }
                }
                out
            }
        }
    };
}

moves!(
    /// A task's named moves.
    TaskMove: TaskStatus {
        /// A worker took up the `plan` decision of a description-only task.
        StartPlanning: [Pending] => Planning,
        /// A plan version is installed (planning, replanning, resume).
        Run: [Planning, Replanning, NeedsIntervention] => Running,
        /// Every step of the plan is done (or a new plan version has nothing left to run).
        Evaluate: [Running, Planning, Replanning, NeedsIntervention] => Evaluating,
        /// Tier 3: reflect on the whole task (a step's recovery escalated, or an unsuccessful
        /// evaluation with rounds left).
        Reflect: [Running, Evaluating] => Reflecting,
        Replan: [Reflecting] => Replanning,
        /// `POST /tasks/{id}/rerun`: an ended task gets a new plan version (installed in the
        /// same transaction, which then takes `Run`).
        Rerun: [Succeeded, Failed, Cancelled, NeedsIntervention] => Replanning,
        Succeed: [Evaluating] => Succeeded,
        /// Every step done and the pure evaluation (the rules brain's) passed, applied in the
        /// completion that finished the plan: the task never rests in `evaluating`.
        SucceedAtOnce: [Running] => Succeeded,
        /// Also from `pending`: a deadline passes before any plan is installed.
        Fail: [Pending, Planning, Running, Reflecting, Replanning, Evaluating] => Failed,
        /// The overall reflection says stop and ask a person.
        NeedIntervention: [Reflecting] => NeedsIntervention,
        Cancel: [Pending, Planning, Running, Reflecting, Replanning, Evaluating, NeedsIntervention]
            => Cancelled,
    }
);

moves!(
    /// A step's named moves.
    StepMove: StepStatus {
        /// Every dependency is done.
        Promote: [Blocked] => Ready,
        /// Leased to a worker (`lease_token + 1`).
        Claim: [Ready] => Running,
        /// The attempt succeeded (fenced).
        Complete: [Running] => Succeeded,
        /// The attempt failed (or its worker was lost) and a plain retry follows after a backoff.
        RetryAfterFailure: [Running] => Ready,
        /// The attempt failed: a step reflection decides, or the task fails.
        Fail: [Running] => Failed,
        /// Given back on shutdown; no attempt is recorded.
        Release: [Running] => Ready,
        /// Tier 1 retry (overrides merged) or a resume.
        Rerun: [Failed] => Ready,
        /// Replaced: tier 2 repair (a new row with the same key) or a new plan version.
        Supersede: [Blocked, Ready, Failed, Waiting] => Superseded,
        /// The task failed or was cancelled.
        Skip: [Blocked, Ready, Waiting] => Skipped,
        /// Its tool waits (an approval, an event, a callback, a time): the lease and the
        /// worker's slot are given back, no attempt is recorded.
        Park: [Running] => Waiting,
        /// Its wait was resolved (or expired): claimable again, and its next run reads the
        /// resolution.
        Wake: [Waiting] => Ready,
        /// A map step's list was resolved: its items are inserted and it waits for them, with
        /// no lease and no slot.
        Expand: [Running] => Waiting,
        /// The last item of a map step ended: the step succeeds with their outputs.
        Join: [Waiting] => Succeeded,
        /// An item of a map with `on_item_failure: continue` failed past its retries and
        /// repair: its map goes on without it.
        GiveUp: [Failed] => Skipped,
    }
);

moves!(
    /// A decision's named moves.
    DecisionMove: DecisionStatus {
        /// Leased to a worker (`lease_token + 1`).
        Claim: [Pending] => Running,
        /// Its lease expired (rescue), or it was given back on shutdown.
        Requeue: [Running] => Pending,
        /// Its outcome was applied (fenced).
        Apply: [Running] => Done,
        /// Stale (the state it was made for changed), or its task was cancelled or failed.
        Cancel: [Pending, Running] => Cancelled,
    }
);

moves!(
    /// A wait's named moves (one row of `waits` per wait of one attempt of a step).
    WaitMove: WaitStatus {
        /// Approved, rejected, its event came, its callback came, or its sleep ended.
        Resolve: [Open] => Resolved,
        /// Nobody resolved it in time: its step fails with `wait_timeout`.
        Expire: [Open] => Expired,
        /// Its task ended (cancel, failure, deadline) while it was open.
        Cancel: [Open] => Cancelled,
    }
);

moves!(
    /// A webhook delivery's named moves (a failed try that is not the last stays `pending`,
    /// with a later `next_attempt_at`).
    DeliveryMove: DeliveryStatus {
        /// The receiver answered 2xx.
        Deliver: [Pending] => Delivered,
        /// The last try failed.
        GiveUp: [Pending] => Dead,
        /// `POST /webhooks/{id}/deliveries/{delivery_id}/redeliver`.
        Redeliver: [Delivered, Dead] => Pending,
    }
);

/// Whether a move can change which steps are claimable: the claim queue holds the first ready
/// steps of each running task, as many as its room (`max_concurrent_steps` less its running
/// steps). The store's write context re-syncs a task's entries when a move of it says so
/// (`store::write`).
pub trait Claimable: Copy + std::fmt::Debug {
    fn changes_claimable(self) -> bool;
}

impl Claimable for StepMove {
    /// A step that enters or leaves `ready`, or leaves `running` (its slot is free), changes
    /// its task's entries; a claim's statement takes the entry with the step itself.
    fn changes_claimable(self) -> bool {
        match self {
            StepMove::Claim => false,
            m => {
                m.to() == StepStatus::Ready
                    || m.from().contains(&StepStatus::Ready)
                    || m.from().contains(&StepStatus::Running)
            }
        }
    }
}

impl Claimable for TaskMove {
    /// Only a running task has entries: a move into `running`, or out of it while steps may
    /// be ready. `Evaluate` and `SucceedAtOnce` leave `running` only when every step is done,
    /// so the task has no entry to drop.
    fn changes_claimable(self) -> bool {
        match self {
            TaskMove::Evaluate | TaskMove::SucceedAtOnce => false,
            m => m.to() == TaskStatus::Running || m.from().contains(&TaskStatus::Running),
        }
    }
}

/// Statuses a new delivery starts in.
pub const DELIVERY_INITIAL: &[DeliveryStatus] = &[DeliveryStatus::Pending];

/// Statuses a new wait starts in.
pub const WAIT_INITIAL: &[WaitStatus] = &[WaitStatus::Open];

/// Statuses a new task starts in: `running` with a plan, `pending` without one.
pub const TASK_INITIAL: &[TaskStatus] = &[TaskStatus::Running, TaskStatus::Pending];

/// Statuses a new step row starts in: `ready` or `blocked`; a step a replan keeps starts
/// `succeeded` (its output copied), one it drops starts `skipped`.
pub const STEP_INITIAL: &[StepStatus] = &[
    StepStatus::Ready,
    StepStatus::Blocked,
    StepStatus::Succeeded,
    StepStatus::Skipped,
];

/// Statuses a new decision starts in: `running` when leased to the worker that caused it,
/// `pending` otherwise.
pub const DECISION_INITIAL: &[DecisionStatus] = &[DecisionStatus::Running, DecisionStatus::Pending];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The `stateDiagram-v2` block under `## {section}` of docs/state-machine.md, as edges:
    /// `[*]` is `None`.
    fn drawn(section: &str) -> BTreeSet<(Option<String>, String)> {
        let doc = include_str!("../../docs/state-machine.md");
        let start = doc
            .find(&format!("## {section}\n"))
            .unwrap_or_else(|| panic!("no section {section}"));
        let rest = &doc[start..];
        let block = &rest[rest.find("```mermaid").expect("a diagram")..];
        let block = &block[..block[3..].find("```").expect("closed") + 3];
        block
            .lines()
            .filter_map(|l| {
                let (a, b) = l.split_once("-->")?;
                let b = b.split(':').next().unwrap().trim();
                let a = a.trim();
                // edges into [*] mark terminal statuses, not moves
                (b != "[*]").then(|| ((a != "[*]").then(|| a.to_string()), b.to_string()))
            })
            .collect()
    }

    fn coded<S: std::fmt::Display>(
        edges: Vec<(S, S)>,
        initial: &[S],
    ) -> BTreeSet<(Option<String>, String)> {
        edges
            .into_iter()
            .map(|(a, b)| (Some(a.to_string()), b.to_string()))
            .chain(initial.iter().map(|s| (None, s.to_string())))
            .collect()
    }

    fn same(section: &str, code: BTreeSet<(Option<String>, String)>) {
        let doc = drawn(section);
        let undrawn: Vec<_> = code.difference(&doc).collect();
        let untaken: Vec<_> = doc.difference(&code).collect();
        assert!(
            undrawn.is_empty() && untaken.is_empty(),
            "{section}: moves the code takes but the doc does not draw: {undrawn:?}; \
             edges the doc draws but no move takes: {untaken:?}"
        );
    }

    #[test]
    fn task_moves_are_the_drawn_edges() {
        same("Task", coded(TaskMove::edges(), TASK_INITIAL));
    }

    #[test]
    fn step_moves_are_the_drawn_edges() {
        same("Step", coded(StepMove::edges(), STEP_INITIAL));
    }

    #[test]
    fn delivery_moves_are_the_drawn_edges() {
        same(
            "Webhook delivery",
            coded(DeliveryMove::edges(), DELIVERY_INITIAL),
        );
    }

    #[test]
    fn wait_moves_are_the_drawn_edges() {
        same("Wait", coded(WaitMove::edges(), WAIT_INITIAL));
    }

    #[test]
    fn decision_moves_are_the_drawn_edges() {
        same("Decision", coded(DecisionMove::edges(), DECISION_INITIAL));
    }

    /// The comparison itself can fail: an edge no move takes is reported.
    #[test]
    fn an_undrawn_edge_is_caught() {
        let mut code = coded(TaskMove::edges(), TASK_INITIAL);
        code.insert((Some("succeeded".into()), "running".into()));
        let doc = drawn("Task");
        assert!(code.difference(&doc).next().is_some());
    }

    /// Only a client's rerun (`POST /tasks/{id}/rerun`) takes a task out of a terminal status;
    /// nothing the workers do ever does.
    #[test]
    fn claimable_moves_follow_their_statuses() {
        let step: Vec<StepMove> = StepMove::ALL
            .iter()
            .copied()
            .filter(|m| !m.changes_claimable())
            .collect();
        assert_eq!(step, [StepMove::Claim, StepMove::Join, StepMove::GiveUp]);
        let task: Vec<TaskMove> = TaskMove::ALL
            .iter()
            .copied()
            .filter(|m| m.changes_claimable())
            .collect();
        assert_eq!(
            task,
            [
                TaskMove::Run,
                TaskMove::Reflect,
                TaskMove::Fail,
                TaskMove::Cancel
            ]
        );
    }

    #[test]
    fn terminal_task_statuses_have_no_way_out_but_a_rerun() {
        for m in TaskMove::ALL.iter().filter(|m| **m != TaskMove::Rerun) {
            for from in m.from() {
                assert!(!from.is_terminal(), "{m:?} leaves terminal {from}");
            }
        }
        assert!(
            TaskMove::Rerun
                .from()
                .iter()
                .all(|s| { s.is_terminal() || *s == TaskStatus::NeedsIntervention })
        );
        assert!(TaskMove::Cancel.allows(TaskStatus::NeedsIntervention));
        assert!(!TaskMove::Run.allows(TaskStatus::Succeeded));
    }
}
