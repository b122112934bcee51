//! The write context: a transaction together with the chores every write must do before it
//! commits. `in_tx!` hands one ([`Tx`]) to its work; a function that changes rows says what it
//! changed, and `Tx::commit` does the rest, in this order, just before `COMMIT`:
//!
//! 1. re-sync the claim queue of the tasks it touched (`Tx::touch`, `Tx::moved`): one
//!    statement for all of them (`claim_queue::sync`, called from here only);
//! 2. append its events (`Tx::event`): one statement for all of them;
//! 3. wake the workers it asked to wake (`Tx::wake_steps`, `Tx::wake_decisions`);
//!    `NOTIFY` is delivered at commit, whenever it is sent.
//!
//! Which tasks a status move touches follows from the move itself
//! ([`crate::domain::transitions::Claimable`]): a function that runs a
//! `-- move:` statement calls `Tx::moved` with it, and a test checks that each does. Before
//! commit is the same point as "right after the move" for every write but one: the completion
//! cycle claims in its own transaction, so it syncs first (`Tx::sync_now`). A bulk action
//! runs each task in a savepoint (`Tx::savepoint`): a refused task's chores go with its rows.
//!
//! A read's context has no chores: its commit is a plain `COMMIT`.

use std::ops::{Deref, DerefMut};

use serde_json::Value;
use uuid::Uuid;

use super::db::Conn;
use super::{DECISIONS_PAYLOAD, READY_CHANNEL, Result, claim_queue};
use crate::domain::event::Event;
use crate::domain::transitions::Claimable;

/// An event to append to a task's log.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub task_id: Uuid,
    pub event: Event,
}

impl NewEvent {
    pub fn new(task_id: Uuid, event: Event) -> Self {
        Self { task_id, event }
    }
}

/// A transaction and its pending chores, as `in_tx!` hands it to its work: `&mut **tx` is what
/// statements run on.
pub struct Tx {
    conn: Conn,
    chores: Chores,
}

/// What the transaction must do before it commits.
#[derive(Default)]
struct Chores {
    events: Vec<NewEvent>,
    /// Tasks whose claim queue entries to re-sync (may repeat; deduplicated at sync).
    touched: Vec<Uuid>,
    wake_steps: bool,
    wake_decisions: bool,
}

/// Where a savepoint began: the chores pending then.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    events: usize,
    touched: usize,
    wake_steps: bool,
    wake_decisions: bool,
}

impl Tx {
    pub(crate) fn new(conn: Conn) -> Self {
        Self {
            conn,
            chores: Chores::default(),
        }
    }

    /// Append `event` to the task's log at commit.
    pub(crate) fn event(&mut self, task_id: Uuid, event: Event) {
        self.chores.events.push(NewEvent::new(task_id, event));
    }

    /// Append `event` at commit.
    pub(crate) fn push(&mut self, event: NewEvent) {
        self.chores.events.push(event);
    }

    /// The events pending so far, to amend one (the completion names the steps a step's
    /// success promoted in its `step_completed`).
    pub(crate) fn pending_events(&mut self) -> &mut [NewEvent] {
        &mut self.chores.events
    }

    /// Append these events at commit, in order.
    pub(crate) fn events(&mut self, events: impl IntoIterator<Item = NewEvent>) {
        self.chores.events.extend(events);
    }

    /// The claimable steps of these tasks (their rows locked) may have changed: re-sync their
    /// claim queue entries at commit. For changes that are not a status move (steps inserted,
    /// a step's time or tool changed, a task's room changed); a move says it with `Tx::moved`.
    ///
    /// Under test, the call site is noted ([`sites`]).
    #[track_caller]
    pub(crate) fn touch(&mut self, task_ids: &[Uuid]) {
        #[cfg(feature = "testing")]
        if !task_ids.is_empty() {
            sites::note(std::panic::Location::caller());
        }
        self.chores.touched.extend_from_slice(task_ids);
    }

    /// This transaction ran `m` on steps or tasks of these tasks: touch them if the move
    /// changes what is claimable (the transition table says).
    #[track_caller]
    pub(crate) fn moved(&mut self, m: impl Claimable, task_ids: &[Uuid]) {
        #[cfg(feature = "testing")]
        if !task_ids.is_empty() {
            sites::note(std::panic::Location::caller());
            sites::note_move(format!("{m:?}"));
        }
        if m.changes_claimable() {
            self.chores.touched.extend_from_slice(task_ids);
        }
    }

    /// Wake idle workers for ready steps at commit.
    pub(crate) fn wake_steps(&mut self) {
        self.chores.wake_steps = true;
    }

    /// Wake workers for a pending decision at commit: workers claim decisions when told to,
    /// or at their poll interval, not on every claim of steps.
    pub(crate) fn wake_decisions(&mut self) {
        self.chores.wake_decisions = true;
    }

    /// Sync the touched tasks and append the pending events now: for a transaction that
    /// claims after its writes (the completion cycle), which reads the claim queue and writes
    /// its own events.
    pub(crate) async fn sync_now(&mut self) -> Result<()> {
        let mut touched = std::mem::take(&mut self.chores.touched);
        if !touched.is_empty() {
            touched.sort_unstable();
            touched.dedup();
            claim_queue::sync(&mut self.conn, &touched).await?;
        }
        let events = std::mem::take(&mut self.chores.events);
        append_events(&mut self.conn, &events).await
    }

    /// Open a savepoint: `Tx::rollback_to` undoes its rows and its chores.
    pub(crate) async fn savepoint(&mut self) -> Result<Mark> {
        sqlx::query("SAVEPOINT chores")
            .execute(&mut self.conn)
            .await?;
        Ok(Mark {
            events: self.chores.events.len(),
            touched: self.chores.touched.len(),
            wake_steps: self.chores.wake_steps,
            wake_decisions: self.chores.wake_decisions,
        })
    }

    /// Keep what was done since the savepoint.
    pub(crate) async fn release(&mut self, _: Mark) -> Result<()> {
        sqlx::query("RELEASE SAVEPOINT chores")
            .execute(&mut self.conn)
            .await?;
        Ok(())
    }

    /// Undo what was done since the savepoint: its rows and its chores.
    pub(crate) async fn rollback_to(&mut self, m: Mark) -> Result<()> {
        sqlx::query("ROLLBACK TO SAVEPOINT chores")
            .execute(&mut self.conn)
            .await?;
        let c = &mut self.chores;
        c.events.truncate(m.events);
        c.touched.truncate(m.touched);
        c.wake_steps = m.wake_steps;
        c.wake_decisions = m.wake_decisions;
        Ok(())
    }

    /// Do the chores, then commit.
    pub(crate) async fn commit(mut self) -> Result<()> {
        self.sync_now().await?;
        if self.chores.wake_steps {
            sqlx::query(sql!("queue/notify_ready"))
                .bind(READY_CHANNEL)
                .execute(&mut self.conn)
                .await?;
        }
        if self.chores.wake_decisions {
            sqlx::query(sql!("queue/notify_decisions"))
                .bind(READY_CHANNEL)
                .bind(DECISIONS_PAYLOAD)
                .execute(&mut self.conn)
                .await?;
        }
        self.conn.commit().await?;
        Ok(())
    }

    /// Roll back: nothing is done, no chore runs.
    pub(crate) async fn rollback(self) -> Result<(), sqlx::Error> {
        self.conn.rollback().await
    }
}

impl Deref for Tx {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.conn
    }
}

/// Append events (any number of tasks) in one statement. Sequence numbers come from
/// `tasks.event_seq`, bumped in the same statement; the transaction holds the task rows'
/// locks, so per-task sequences are gap-free and ordered by commit.
async fn append_events(conn: &mut Conn, events: &[NewEvent]) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let task_ids: Vec<Uuid> = events.iter().map(|e| e.task_id).collect();
    // the one place an event is serialized (the claim and the submit statement build theirs in
    // SQL; tests/it/events.rs reads every kind back as its variant)
    let kinds: Vec<&str> = events.iter().map(|e| e.event.kind()).collect();
    let payloads: Vec<Value> = events.iter().map(|e| e.event.payload()).collect();
    sqlx::query(sql!("event/append"))
        .bind(&task_ids)
        .bind(&kinds)
        .bind(&payloads)
        .execute(conn)
        .await?;
    Ok(())
}

/// The call sites of `Tx::touch` and `Tx::moved` a test reached (feature
/// `testing`): noted while a future runs inside [`sites::recording`], for that future only
/// (other tests of the same process are not counted). The invariant test fails when a call
/// site of the source is never reached.
#[cfg(feature = "testing")]
pub mod sites {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    /// `(file, line)` of a call site, as the compiler names it (`src/store/maps.rs`).
    pub type Site = (&'static str, u32);

    /// What a run reached: call sites, and the moves said through `moved` (`StepMove::Park`
    /// as `Park`, by their `Debug` names).
    #[derive(Debug, Default, Clone)]
    pub struct Reached {
        pub sites: BTreeSet<Site>,
        pub moves: BTreeSet<String>,
    }

    tokio::task_local! {
        static REACHED: Arc<Mutex<Reached>>;
    }

    pub(super) fn note(at: &'static std::panic::Location<'static>) {
        let _ = REACHED.try_with(|r| {
            r.lock()
                .expect("sites")
                .sites
                .insert((at.file(), at.line()))
        });
    }

    pub(super) fn note_move(m: String) {
        let _ = REACHED.try_with(|r| r.lock().expect("sites").moves.insert(m));
    }

    /// Run `f`, and the call sites of `touch` and `moved` it reached (with at least one
    /// task), with the moves it said.
    pub async fn recording<F: Future>(f: F) -> (F::Output, Reached) {
        let reached: Arc<Mutex<Reached>> = Arc::default();
        let out = REACHED.scope(reached.clone(), f).await;
        let r = reached.lock().expect("sites").clone();
        (out, r)
    }
}
