//! The claim: up to `limit` claimable steps leased to a worker in one short transaction,
//! reading about what it takes at any depth. The claim queue (`claim_queue`, kept by
//! `claim_queue::sync`) holds a task's next claimable steps, so no count is taken here
//! unless a task cap or a tool limit is in play. Statements: `sql/step/claim_plain.sql` (one
//! statement: no cap, no limited tool), or `claim_pick.sql` then `claim_checked.sql`; both end
//! with `_claim_lease.sql` (lease, `step_started` events) and `_claim_result.sql`.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::super::claim_queue::LaneCache;
use super::super::{Result, Store, Tx};
use crate::domain::tenant::Caps;

/// A step this worker now holds a lease on, with what it needs to run (no further reads for a
/// step whose placeholders name only its direct dependencies).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedStep {
    pub id: Uuid,
    pub task_id: Uuid,
    pub plan_version: i32,
    pub step_key: String,
    /// Effective tool (a recovery override wins).
    pub tool: String,
    pub parameters: Value,
    pub param_overrides: Value,
    pub actions: sqlx::types::Json<Vec<crate::domain::ActionSpec>>,
    /// Number of the attempt this run will record.
    pub attempt: i32,
    pub lease_token: i64,
    pub started_at: DateTime<Utc>,
    /// When the step was due: it became ready (dependencies done, or submitted ready) or its
    /// retry backoff ended. `started_at - due_at` is its queue lag (database clock).
    pub due_at: DateTime<Utc>,
    /// The task's metadata with its runtime metadata overlaid.
    pub metadata: Value,
    /// The task's `context` (`${context.…}` placeholders).
    pub context: Value,
    /// Outputs of the step's direct dependencies that are done, by step key.
    pub outputs: Value,
    /// `tool_registry.version` as of the claim (tool definitions newer than a worker's cache).
    pub tools_version: i64,
    /// Why the step runs again: a later step failed on what this one produced (set by a replan
    /// from this step; sent to the tool as `feedback`).
    pub feedback: Option<Value>,
    /// A map step's `map`: the worker expands it instead of calling its tool.
    pub map: Option<sqlx::types::Json<crate::domain::model::MapSpec>>,
    /// An item step's item and index (`${item}`, `${item_index}`).
    pub item: Option<Value>,
    pub item_index: Option<i32>,
    /// The map's `as` name, for an item step.
    pub item_name: Option<String>,
}

/// Who claims, how many, for how long.
#[derive(Debug, Clone)]
pub struct Claim {
    pub worker_id: Uuid,
    pub limit: i64,
    pub lease_secs: f64,
    /// `[orchestrator] max_concurrent_tasks`: at most this many tasks with running steps,
    /// fleet-wide (0: no cap).
    pub max_running_tasks: i64,
}

/// What the checked claim's first statement locked ([`pick`]).
#[derive(Debug, Default, sqlx::FromRow)]
pub(crate) struct Picked {
    /// Candidate entries (their steps), locked.
    pub steps: Vec<Uuid>,
    /// Their tasks this transaction locked.
    pub tasks: Vec<Uuid>,
    /// The limited tools locked (`tool_buckets` rows).
    pub tools: Vec<String>,
    /// Tasks without running steps the claim may start (-1: no cap).
    pub admit: i64,
    /// The key patterns with a `max_running` locked (`key_limits` rows): the keys they govern
    /// may start steps up to their room; the others none.
    pub patterns: Vec<String>,
    /// The capped tenants locked: they may start work up to their room; the others none.
    pub tenants: Vec<String>,
    /// Under `[fairness] default_max_running`, the keys no pattern caps that were locked.
    pub default_keys: Vec<String>,
    /// The caps (not a column: the next statement's parameters).
    #[sqlx(skip)]
    pub caps: ClaimCaps,
}

/// What the claim keeps beyond the registries (tools, key patterns, tenants' rows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClaimCaps {
    /// The `[tenants]` caps of a tenant without a row of its own.
    pub tenants: Caps,
    /// `[fairness] default_max_running`: a key that no pattern caps (0: none).
    pub key_max_running: i32,
}

impl ClaimCaps {
    /// Some cap is configured: claims take the checked path.
    pub fn any(&self) -> bool {
        self.tenants.any() || self.key_max_running > 0
    }
}

/// The plain claim (no task cap, no limited tool): one statement.
const CLAIM_PLAIN: &str = concat!(
    sql!("step/claim_plain"),
    sql!("step/_claim_lease"),
    sql!("step/_claim_result")
);

/// The checked claim's first statement: lock the candidates, their tasks and the limited tools.
const CLAIM_PICK: &str = sql!("step/claim_pick");

/// The checked claim's second statement: count with a later snapshot, claim, spend tokens.
const CLAIM_CHECKED: &str = concat!(
    sql!("step/claim_checked"),
    sql!("step/_claim_lease"),
    sql!("step/_claim_spend"),
    sql!("step/_claim_result")
);

impl Store {
    /// Claim up to `c.limit` steps from the claim queue in one short transaction
    /// (`claim_in`): one statement while no task cap and no limited tool is in play, else the
    /// checked claim's two. The commit is asynchronous: losing it in a crash loses only the
    /// claim (`docs/internals.md`, "The hot path").
    pub async fn claim_steps(&self, c: &Claim) -> Result<Vec<ClaimedStep>> {
        in_tx!(hot self, |tx| claim_in(tx, c, true, &self.lanes, self.claim_caps).await)
    }

    /// [`Store::claim_steps`]; when it claimed fewer than asked, also the milliseconds until
    /// the earliest ready step in backoff falls due (read in the same transaction: an idle
    /// worker's poll costs no extra commit).
    pub async fn claim_steps_or_next_due(
        &self,
        c: &Claim,
    ) -> Result<(Vec<ClaimedStep>, Option<f64>)> {
        in_tx!(hot self, |tx| {
            let claimed = claim_in(tx, c, true, &self.lanes, self.claim_caps).await?;
            let due = if (claimed.len() as i64) < c.limit {
                let (due, registry) = next_due(&mut **tx).await?;
                // an idle worker learns of a tool that gained limits (its steps moved to a
                // lane the plain claim does not read) at its next poll
                self.lanes.saw(registry);
                due
            } else {
                None
            };
            Ok((claimed, due))
        })
    }

    /// Milliseconds until the earliest ready step in backoff becomes due (None: none waiting).
    pub async fn next_due_ms(&self) -> Result<Option<f64>> {
        Ok(next_due(&self.pool).await?.0)
    }
}

/// Milliseconds until the earliest claimable step in backoff falls due, or an empty rate-limit
/// bucket gets its next token (None: neither); and the tool registry's version.
async fn next_due(db: impl sqlx::PgExecutor<'_>) -> Result<(Option<f64>, i64)> {
    // also when the next token of an empty rate-limit bucket arrives (its steps may wait)
    Ok(sqlx::query_as(sql!("step/next_due")).fetch_one(db).await?)
}

/// Claim inside `tx` from the claim queue ([`super::claim_queue`]).
///
/// With no task cap and no tool limits in play, one statement ([`claim_plain`]); otherwise
/// the checked claim: the admission lock (under a cap), the candidates and their tasks and
/// tools locked ([`pick`]), then a statement with a later snapshot that counts
/// and claims ([`claim_checked`]).
///
/// With `async_commit` (a claim on its own) the transaction commits with
/// `synchronous_commit = off`: its commit returns before its WAL
/// is flushed, so the task rows it locked are free again after microseconds rather than after an
/// fsync. Losing such a commit in a crash loses only the claim: the steps are `ready` again and
/// are claimed anew (the worker's completion of a step whose claim was lost is fenced). Any later
/// durable commit (a completion) flushes the WAL up to it, claims included.
pub(crate) async fn claim_in(
    tx: &mut Tx,
    c: &Claim,
    async_commit: bool,
    lanes: &LaneCache,
    caps: ClaimCaps,
) -> Result<Vec<ClaimedStep>> {
    let claimed = if c.max_running_tasks > 0 || caps.any() || lanes.limited(tx).await? {
        let admission = c.max_running_tasks > 0 && try_admission_lock(tx).await?;
        let picked = pick(tx, c, async_commit, admission, caps).await?;
        if picked.tasks.is_empty() {
            return Ok(vec![]);
        }
        claim_checked(tx, &picked, c).await?
    } else {
        claim_plain(tx, c, async_commit).await?
    };
    if let Some(s) = claimed.first() {
        lanes.saw(s.tools_version);
    }
    Ok(claimed)
}

#[cfg(feature = "testing")]
impl Store {
    /// The claim's statements under `EXPLAIN (ANALYZE, BUFFERS)` for a claim of `limit` steps
    /// (the plain claim, or with a task cap the checked claim's two), in a transaction rolled
    /// back afterwards: (shared buffers hit or read, the plan) per statement.
    pub async fn explain_claim(
        &self,
        limit: i64,
        max_running_tasks: i64,
    ) -> Result<Vec<(i64, String)>> {
        let mut out = Vec::new();
        let c = Claim {
            worker_id: Uuid::nil(),
            limit,
            lease_secs: 30.0,
            max_running_tasks,
        };
        // planned as the workers' hot transactions plan it
        let r: Result<()> = in_tx!(hot self, |tx| {
            if max_running_tasks > 0 {
                let admission = try_admission_lock(tx).await?;
                let sql = format!("EXPLAIN (ANALYZE, BUFFERS) {CLAIM_PICK}");
                let lines: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                    .bind(limit)
                    .bind(false)
                    .bind(max_running_tasks)
                    .bind(admission)
                    .bind(self.claim_caps.tenants.max_running_tasks)
                    .bind(self.claim_caps.tenants.max_running_steps)
                    .bind(self.claim_caps.key_max_running)
                    .fetch_all(&mut **tx)
                    .await?;
                out.push((buffers_of(&lines), lines.join("\n")));
                let picked = pick(tx, &c, false, admission, self.claim_caps).await?;
                out.push(explain_claim_checked(tx, &picked, &c).await?);
            } else {
                out.push(explain_claim_plain(tx, &c).await?);
            }
            Err(super::super::StoreError::Conflict("explained; rolled back".into()))
        });
        match r {
            Err(super::super::StoreError::Conflict(_)) | Ok(()) => Ok(out),
            Err(e) => Err(e),
        }
    }
}

/// Under `max_running_tasks`, only one claim at a time may start tasks that have no running
/// steps (others claim only for tasks already running steps): a transaction-scoped advisory
/// lock, tried without waiting. Taken in a statement of its own, so that the count of running
/// tasks the next statement makes sees every admission committed before.
async fn try_admission_lock(tx: &mut Tx) -> Result<bool> {
    Ok(sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
        .bind(ADMISSION_LOCK)
        .fetch_one(&mut **tx)
        .await?)
}

/// The advisory lock key of task admissions under `max_concurrent_tasks` ("trellis" in ASCII).
const ADMISSION_LOCK: i64 = 0x0074_7265_6c6c_6973;

/// `ready → running` for up to `c.limit` steps from the head of the claim queue's lane ''
/// ([`CLAIM_PLAIN`]). With `async_commit` the transaction commits without waiting for its WAL
/// flush (see `step_queue::claim_in`).
pub(crate) async fn claim_plain(
    tx: &mut Tx,
    c: &Claim,
    async_commit: bool,
) -> Result<Vec<ClaimedStep>> {
    let q = plain_args(sqlx::query_as(CLAIM_PLAIN), c, async_commit);
    Ok(q.fetch_all(&mut **tx).await?)
}

/// A query with its parameters still to bind.
type PgQueryAs<'q, O> = sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>;

/// [`CLAIM_PLAIN`]'s parameters.
fn plain_args<'q, O>(q: PgQueryAs<'q, O>, c: &Claim, async_commit: bool) -> PgQueryAs<'q, O> {
    q.bind(c.limit)
        .bind(async_commit)
        .bind(c.worker_id)
        .bind(c.lease_secs)
        .bind(crate::domain::event::StepStarted::KIND)
}

/// [`CLAIM_CHECKED`]'s parameters.
fn checked_args<'q, O>(q: PgQueryAs<'q, O>, p: &'q Picked, c: &Claim) -> PgQueryAs<'q, O> {
    q.bind(&p.steps)
        .bind(c.limit)
        .bind(c.worker_id)
        .bind(c.lease_secs)
        .bind(crate::domain::event::StepStarted::KIND)
        .bind(&p.tools)
        .bind(p.admit)
        .bind(&p.tasks)
        .bind(&p.patterns)
        .bind(&p.tenants)
        .bind(p.caps.tenants.max_running_tasks)
        .bind(p.caps.tenants.max_running_steps)
        .bind(p.caps.key_max_running)
        .bind(&p.default_keys)
}

/// `ready → running` for up to `c.limit` of the entries `p` locked, within the limits of the
/// tools it locked (other limited tools start nothing), starting at most `p.admit` tasks that
/// have no running steps (-1: any).
pub(crate) async fn claim_checked(tx: &mut Tx, p: &Picked, c: &Claim) -> Result<Vec<ClaimedStep>> {
    let q = checked_args(sqlx::query_as(CLAIM_CHECKED), p, c);
    Ok(q.fetch_all(&mut **tx).await?)
}

/// [`CLAIM_PLAIN`] under `EXPLAIN (ANALYZE, BUFFERS)`: (shared buffers, the plan).
#[cfg(feature = "testing")]
pub(crate) async fn explain_claim_plain(tx: &mut Tx, c: &Claim) -> Result<(i64, String)> {
    let sql = format!("EXPLAIN (ANALYZE, BUFFERS) {}", CLAIM_PLAIN);
    let q = plain_args(sqlx::query_as(sqlx::AssertSqlSafe(sql)), c, false);
    Ok(plan_of(q.fetch_all(&mut **tx).await?))
}

/// [`CLAIM_CHECKED`] under `EXPLAIN (ANALYZE, BUFFERS)`: (shared buffers, the plan).
#[cfg(feature = "testing")]
pub(crate) async fn explain_claim_checked(
    tx: &mut Tx,
    p: &Picked,
    c: &Claim,
) -> Result<(i64, String)> {
    let sql = format!("EXPLAIN (ANALYZE, BUFFERS) {}", CLAIM_CHECKED);
    let q = checked_args(sqlx::query_as(sqlx::AssertSqlSafe(sql)), p, c);
    Ok(plan_of(q.fetch_all(&mut **tx).await?))
}

/// A text plan's lines: (shared buffers of its top node, the plan).
#[cfg(feature = "testing")]
fn plan_of(rows: Vec<(String,)>) -> (i64, String) {
    let lines: Vec<String> = rows.into_iter().map(|(l,)| l).collect();
    (buffers_of(&lines), lines.join("\n"))
}

/// Shared buffers (hit + read) of a text plan's top node.
#[cfg(feature = "testing")]
pub(crate) fn buffers_of(lines: &[String]) -> i64 {
    let Some(l) = lines
        .iter()
        .find(|l| l.trim_start().starts_with("Buffers:"))
    else {
        return 0;
    };
    ["hit=", "read="]
        .iter()
        .filter_map(|k| {
            let at = l.find(k)? + k.len();
            l[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse::<i64>()
                .ok()
        })
        .sum()
}

/// The hot statements a plan probe prepares: (name, SQL, a parameter list that matches
/// nothing), for `testing::PlanProbe`.
#[cfg(feature = "testing")]
pub(crate) fn probe_statements() -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            "probe_move",
            sql!("task/evaluate_many").to_string(),
            "('{00000000-0000-0000-0000-000000000000}')",
        ),
        (
            "probe_complete",
            sql!("step/complete").to_string(),
            "('{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}')",
        ),
        (
            "probe_claim",
            CLAIM_PLAIN.to_string(),
            "(0, false, '00000000-0000-0000-0000-000000000000', 30, 'step_started')",
        ),
    ]
}

/// The checked claim's first statement ([`CLAIM_PICK`]): with a task cap or a limited tool in
/// play, lock the candidate entries (the head of lane '', the limited lanes each as far as its
/// tool has room, delayed entries now due, and under a cap the entries of tasks already running
/// steps), their tasks and the limited tools, all `SKIP LOCKED`. The next statement
/// ([`claim_checked`]) counts with a later snapshot and claims.
pub(crate) async fn pick(
    tx: &mut Tx,
    c: &Claim,
    async_commit: bool,
    admission: bool,
    caps: ClaimCaps,
) -> Result<Picked> {
    let mut p: Picked = sqlx::query_as(CLAIM_PICK)
        .bind(c.limit)
        .bind(async_commit)
        .bind(c.max_running_tasks)
        .bind(admission)
        .bind(caps.tenants.max_running_tasks)
        .bind(caps.tenants.max_running_steps)
        .bind(caps.key_max_running)
        .fetch_one(&mut **tx)
        .await?;
    p.caps = caps;
    Ok(p)
}
