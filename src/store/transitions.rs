//! The only writer of a task's, a step's or a decision's status. Every statement here is one
//! named move of [`crate::domain::transitions`]: its SQL is rendered from the move, so it sets
//! the move's target status and only matches rows in the move's source statuses. A move of one
//! named row (a task, a step, a decision) that matches nothing is an error
//! ([`StoreError::Corrupt`]), never a silent overwrite; set-based moves (skip the open steps,
//! supersede a version) move exactly the rows in their sources.
//!
//! The statuses are rendered as literals (not bound), so the planner still sees the partial
//! indexes' predicates (`WHERE status = 'ready'`, `'running'`).
//!
//! A move that names its rows by key (an id, a list of ids) checks their status as
//! `(status IN (…)) IS NOT FALSE`: the same test (a status is never NULL), but one that no index
//! and no partial index's predicate matches, so the planner reaches the rows by their key. With
//! `status IN (…)` it could walk the status index or a partial index of every running (or
//! ready) row instead, and a generic plan made while the tables were empty did, then kept
//! doing it as the queue grew (a move of 34 tasks took 16 ms behind 60,000 queued), and under a
//! long transaction such a walk passes every entry dead since it began.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{Result, StoreError, Tx};
use crate::domain::records::TaskRow;
use crate::domain::status::DecisionKind;
use crate::domain::transitions::{DecisionMove, StepMove, TaskMove};

/// Replace `{to}` with the move's target and `{from}` with the list of its sources.
fn render(template: &str, to: &str, from: &[&str]) -> String {
    let from: Vec<String> = from.iter().map(|s| format!("'{s}'")).collect();
    template
        .replace("{to}", &format!("'{to}'"))
        .replace("{from}", &format!("({})", from.join(", ")))
}

macro_rules! statement {
    ($(#[$m:meta])* $name:ident = $mv:expr, $sql:expr) => {
        $(#[$m])*
        static $name: LazyLock<String> = LazyLock::new(|| {
            let m = $mv;
            let from: Vec<&str> = m.from().iter().map(|s| s.as_str()).collect();
            render($sql, m.to().as_str(), &from)
        });
    };
}

/// A single-row move that matched no row: the caller checked the row's status under its lock,
/// so this is our bug, never a state to overwrite.
fn illegal(m: impl std::fmt::Debug, id: Uuid) -> StoreError {
    StoreError::Corrupt(format!(
        "{m:?} of {id} matched no row in its source statuses"
    ))
}

/// Run a move's statement whose only parameter is one id; rows it changed.
async fn exec_for(tx: &mut Tx, sql: &'static str, id: Uuid) -> Result<u64> {
    Ok(sqlx::query(sql)
        .bind(id)
        .execute(&mut **tx)
        .await?
        .rows_affected())
}

// ---------------------------------------------------------------------------------------------
// Tasks

/// The statement of a task move: one task (`id = $1`), or with `many` a set (`id = ANY($1)`)
/// returning the moved rows.
fn task_move_sql(m: TaskMove, many: bool) -> &'static str {
    static ALL: LazyLock<Vec<(TaskMove, bool, String)>> = LazyLock::new(|| {
        TaskMove::ALL
            .iter()
            .flat_map(|m| [(*m, false), (*m, true)])
            .map(|(m, many)| {
                let from: Vec<&str> = m.from().iter().map(|s| s.as_str()).collect();
                let (which, returning) = if many {
                    ("id = ANY($1)", " RETURNING *")
                } else {
                    ("id = $1", "")
                };
                let sql = render(
                    &format!(
                        "UPDATE tasks SET status = {{to}}, updated_at = now(), state_version = state_version + 1,
                                finished_at = CASE WHEN {{to}} IN ('succeeded', 'failed', 'cancelled') THEN now() END
                         WHERE {which} AND (status IN {{from}}) IS NOT FALSE{returning}"
                    ),
                    m.to().as_str(),
                    &from,
                );
                (m, many, sql)
            })
            .collect()
    });
    ALL.iter()
        .find(|(k, n, _)| *k == m && *n == many)
        .map(|(_, _, s)| s.as_str())
        .expect("every move has its statements")
}

/// Move every task of `task_ids` (distinct ids) in one statement; their rows after the move.
/// Every one must be in one of the move's source statuses; otherwise the move is an error
/// (the transaction is rolled back).
pub(crate) async fn move_tasks(
    tx: &mut Tx,
    task_ids: &[Uuid],
    m: TaskMove,
) -> Result<Vec<TaskRow>> {
    if task_ids.is_empty() {
        return Ok(vec![]);
    }
    let rows: Vec<TaskRow> = sqlx::query_as(task_move_sql(m, true))
        .bind(task_ids)
        .fetch_all(&mut **tx)
        .await?;
    if rows.len() != task_ids.len() {
        return Err(StoreError::Corrupt(format!(
            "{m:?} (to {}) moved {} of {} tasks: the others are not in its source statuses",
            m.to(),
            rows.len(),
            task_ids.len()
        )));
    }
    Ok(rows)
}

/// Move a task (and bump `state_version`, which fences task decisions). The task must be in
/// one of the move's source statuses; otherwise nothing changes and the move is an error.
pub(crate) async fn move_task(tx: &mut Tx, task_id: Uuid, m: TaskMove) -> Result<()> {
    if try_move_task(&mut **tx, task_id, m).await? {
        Ok(())
    } else {
        Err(StoreError::Corrupt(format!(
            "task {task_id}: {m:?} (to {}) is not allowed from its status",
            m.to()
        )))
    }
}

/// Move a task if it is in one of the move's source statuses; false when it was not.
pub(crate) async fn try_move_task(
    db: impl sqlx::PgExecutor<'_>,
    task_id: Uuid,
    m: TaskMove,
) -> Result<bool> {
    let n = sqlx::query(task_move_sql(m, false))
        .bind(task_id)
        .execute(db)
        .await?
        .rows_affected();
    Ok(n == 1)
}

statement!(
    /// [`TaskMove::SucceedAtOnce`] for tasks whose pure evaluation passed in the completion that
    /// finished them, with their final scores: one write of each task row.
    SUCCEED_AT_ONCE = TaskMove::SucceedAtOnce,
    "
    UPDATE tasks t SET status = {to}, updated_at = now(), state_version = t.state_version + 1,
           finished_at = now(), final_score = s.score
    FROM unnest($1::uuid[], $2::float8[]) AS s(id, score)
    WHERE t.id = s.id AND (t.status IN {from}) IS NOT FALSE"
);

/// `running → succeeded` with the final score, for tasks whose pure evaluation passed (each must
/// be `running`; otherwise the move is an error and the transaction rolls back).
pub(crate) async fn succeed_at_once(tx: &mut Tx, task_ids: &[Uuid], scores: &[f64]) -> Result<()> {
    if task_ids.is_empty() {
        return Ok(());
    }
    let n = sqlx::query(SUCCEED_AT_ONCE.as_str())
        .bind(task_ids)
        .bind(scores)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    if n as usize != task_ids.len() {
        return Err(StoreError::Corrupt(format!(
            "{:?} moved {n} of {} tasks: the others are not running",
            TaskMove::SucceedAtOnce,
            task_ids.len()
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Steps

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
    pub actions: Value,
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
}

/// The claim statements' shared middle: lease the picked steps, number their `step_started`
/// events per task, bump the tasks' event sequence, append the events. Starts with `), claimed`.
macro_rules! claim_lease_and_log {
    () => {
        r#"
    ), claimed AS (
        -- by primary key: an id list, not a join the planner might drive from the ready index
        UPDATE steps s
        SET status = {to}, lease_owner = $3, lease_token = s.lease_token + 1,
            lease_expires_at = now() + make_interval(secs => $4), started_at = clock_timestamp(), updated_at = now()
        WHERE s.id = ANY(ARRAY(SELECT id FROM picked)) AND (s.status IN {from}) IS NOT FALSE
        RETURNING s.id, s.task_id, s.plan_version, s.step_key, coalesce(s.tool_override, s.tool) AS tool,
                  s.parameters, s.param_overrides, s.actions, s.attempts + 1 AS attempt,
                  s.lease_token, s.started_at, s.run_after, s.dependencies
    ), ev AS (
        SELECT c.task_id, p.ord,
               row_number() OVER (PARTITION BY c.task_id ORDER BY p.ord) AS rn,
               jsonb_build_object('step_id', c.step_key, 'attempt', c.attempt, 'tool', c.tool,
                                  'worker_id', $3::uuid) AS payload
        FROM claimed c JOIN picked p ON p.id = c.id
    ), bump AS (
        UPDATE tasks t SET event_seq = t.event_seq + n.n
        FROM (SELECT task_id, count(*) AS n FROM ev GROUP BY task_id) n
        WHERE t.id = n.task_id
        RETURNING t.id, t.event_seq AS last_seq, n.n, t.metadata || t.runtime_metadata AS metadata,
                  t.context
    ), logged AS (
        INSERT INTO events (task_id, seq, kind, payload)
        SELECT ev.task_id, b.last_seq - b.n + ev.rn, $5, ev.payload
        FROM ev JOIN bump b ON b.id = ev.task_id
"#
    };
}

/// The claim statements' shared result: each claimed step with its task's merged metadata and
/// context and its direct dependencies' outputs, in pick order.
macro_rules! claim_result {
    () => {
        r#"
    )
    SELECT c.id, c.task_id, c.plan_version, c.step_key, c.tool, c.parameters, c.param_overrides,
           c.actions, c.attempt, c.lease_token, c.started_at, c.run_after AS due_at, b.metadata,
           b.context,
           CASE WHEN cardinality(c.dependencies) = 0 THEN '{}'::jsonb ELSE
           (SELECT coalesce(jsonb_object_agg(d.step_key, coalesce(d.output, 'null'::jsonb)), '{}'::jsonb)
            FROM steps d
            WHERE d.task_id = c.task_id AND d.plan_version = c.plan_version
              AND d.step_key = ANY(c.dependencies) AND d.status IN ('succeeded', 'skipped')) END AS outputs,
           (SELECT version FROM tool_registry) AS tools_version
    FROM claimed c JOIN bump b ON b.id = c.task_id JOIN picked p ON p.id = c.id
    ORDER BY p.ord
"#
    };
}

/// How many steps of a limited tool may start now: its free slots under `max_concurrency` and
/// the whole tokens of its bucket (the tool's `tools` row is `t`, its `tool_buckets` row `b`;
/// the argument is the SQL naming the tool's id). `least()` skips NULLs, hence the `CASE`:
/// without a rate limit the burst must not count.
macro_rules! tool_room {
    ($tool:literal) => {
        concat!(
            "least(coalesce(t.max_concurrency - (SELECT count(*) FROM steps r
                 WHERE r.status = 'running' AND coalesce(r.tool_override, r.tool) = ",
            $tool,
            "), 2147483647),
             CASE WHEN t.rate_limit_per_sec IS NULL THEN 2147483647
                  ELSE floor(least(t.rate_limit_burst::float8,
                       b.tokens + extract(epoch FROM now() - b.refilled_at) * t.rate_limit_per_sec))::bigint
             END)"
        )
    };
}
pub(crate) use tool_room;

/// The plain claim's entries: the head of lane '' (tools without limits) in claim order, and
/// the delayed entries of lane '' whose backoff ended, each `LIMIT $1 FOR UPDATE SKIP LOCKED`;
/// the best `$1` of both. Defines `cand`.
macro_rules! plain_candidates {
    () => {
        r#"
    WITH due AS MATERIALIZED (
        SELECT q.step_id, q.task_id, q.priority, q.task_created_at, q.position
        FROM claim_queue q
        WHERE q.delayed AND q.run_after <= now() AND q.lane = ''
        ORDER BY q.run_after
        LIMIT $1
        FOR UPDATE SKIP LOCKED
    ), head AS MATERIALIZED (
        SELECT q.step_id, q.task_id, q.priority, q.task_created_at, q.position
        FROM claim_queue q
        WHERE q.lane = '' AND NOT q.delayed
        ORDER BY q.lane, q.priority DESC, q.task_created_at, q.task_id, q.position
        LIMIT $1
        FOR UPDATE SKIP LOCKED
    ), cand AS MATERIALIZED (
        SELECT * FROM head UNION ALL SELECT * FROM due
        ORDER BY priority DESC, task_created_at, task_id, position
        LIMIT $1
"#
    };
}

statement!(
    /// The claim when no tool has limits in play and no task cap is set: one statement. Take
    /// the head of the claim queue, lock its tasks (`SKIP LOCKED`: a task another transaction
    /// holds keeps its entries for a later claim), dequeue and lease the entries of running
    /// tasks with time left, and append their `step_started` events. Entries are claimable by
    /// construction (`claim_queue::sync`): no count is taken here. Entries of a task that no
    /// longer runs, or whose deadline passed, are dropped.
    CLAIM_PLAIN = StepMove::Claim,
    concat!(
        plain_candidates!(),
        r#"
    ), locked AS MATERIALIZED (
        SELECT t.id, t.status = 'running' AND (t.deadline_at IS NULL OR t.deadline_at > now()) AS ok
        FROM tasks t,
             (SELECT set_config('synchronous_commit',
                     CASE WHEN $2 THEN 'off' ELSE current_setting('synchronous_commit') END, true)) AS commit_mode
        -- by primary key (an id list, never a join the planner could turn into a scan)
        WHERE t.id = ANY(ARRAY(SELECT DISTINCT task_id FROM cand))
        ORDER BY t.id
        FOR NO KEY UPDATE OF t SKIP LOCKED
    ), taken AS MATERIALIZED (
        -- every entry of a locked task leaves the queue: claimed when the task runs with time
        -- left; dropped when it no longer runs or its deadline passed (the sweep fails it), so
        -- that no later claim walks over it again
        SELECT c.*, l.ok FROM cand c JOIN locked l ON l.id = c.task_id
    ), dequeued AS (
        DELETE FROM claim_queue q
        WHERE q.task_id = ANY(ARRAY(SELECT DISTINCT task_id FROM taken))
          AND q.step_id = ANY(ARRAY(SELECT step_id FROM taken))
    ), picked AS MATERIALIZED (
        SELECT step_id AS id,
               row_number() OVER (ORDER BY priority DESC, task_created_at, task_id, position) AS ord
        FROM taken WHERE ok
"#,
        claim_lease_and_log!(),
        claim_result!()
    )
);

/// `ready → running` for up to `c.limit` steps from the head of the claim queue's lane ''
/// ([`CLAIM_PLAIN`]). With `async_commit` the transaction commits without waiting for its WAL
/// flush (see `step_queue::claim_in`).
pub(crate) async fn claim_plain(
    tx: &mut Tx,
    c: &Claim,
    async_commit: bool,
) -> Result<Vec<ClaimedStep>> {
    let q = plain_args(sqlx::query_as(CLAIM_PLAIN.as_str()), c, async_commit);
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
        .bind(crate::domain::model::event_kind::STEP_STARTED)
}

/// [`CLAIM`]'s parameters.
fn checked_args<'q, O>(q: PgQueryAs<'q, O>, p: &'q Picked, c: &Claim) -> PgQueryAs<'q, O> {
    q.bind(&p.steps)
        .bind(c.limit)
        .bind(c.worker_id)
        .bind(c.lease_secs)
        .bind(crate::domain::model::event_kind::STEP_STARTED)
        .bind(&p.tools)
        .bind(p.admit)
        .bind(&p.tasks)
}

statement!(
    /// The checked claim's second statement, with a snapshot taken after the first locked the
    /// candidate entries, their tasks and the limited tools (`claim_queue::pick`), so that the
    /// counts below are exact: each locked limited tool's running steps and tokens give its
    /// room, and under a task cap ($7 >= 0) only tasks already running steps and the first $7
    /// others in claim order get steps. Dequeue and lease what passes, append the
    /// `step_started` events, spend the tokens.
    CLAIM = StepMove::Claim,
    concat!(
        r#"
    WITH cap AS MATERIALIZED (
        -- steps each limited tool may start now: 0 for a tool another claim holds ($6 lists the
        -- ones this transaction locked), else the least of its free slots and its whole tokens
        SELECT b.tool_id,
               CASE WHEN NOT (b.tool_id = ANY($6::text[])) THEN 0 ELSE "#,
        tool_room!("b.tool_id"),
        r#" END AS cap
        FROM tool_buckets b JOIN tools t ON t.id = b.tool_id
    ), cand AS MATERIALIZED (
        SELECT q.step_id, q.task_id, q.priority, q.task_created_at, q.position, q.lane
        FROM claim_queue q
        WHERE q.task_id = ANY($8::uuid[]) AND q.step_id = ANY($1::uuid[])
    ), state AS MATERIALIZED (
        -- the locked tasks (their rows are stable): may they get steps, do they run some
        SELECT t.id,
               t.status = 'running' AND (t.deadline_at IS NULL OR t.deadline_at > now()) AS ok,
               EXISTS (SELECT 1 FROM steps r WHERE r.task_id = t.id AND r.status = 'running') AS active,
               t.priority, t.created_at
        FROM tasks t WHERE t.id = ANY($8::uuid[])
    ), admitted AS MATERIALIZED (
        SELECT s.id FROM (
            SELECT s.id, s.active,
                   row_number() OVER (PARTITION BY s.active ORDER BY s.priority DESC, s.created_at, s.id) AS nth
            FROM state s WHERE s.ok) s
        WHERE $7 < 0 OR s.active OR s.nth <= $7
    ), offered AS MATERIALIZED (
        SELECT c.*, row_number() OVER (PARTITION BY c.lane
                                       ORDER BY c.priority DESC, c.task_created_at, c.task_id, c.position) AS nth
        FROM cand c WHERE c.task_id IN (SELECT id FROM admitted)
    ), chosen AS MATERIALIZED (
        SELECT o.* FROM offered o
        WHERE o.lane = '' OR o.nth <= coalesce((SELECT cap FROM cap WHERE cap.tool_id = o.lane), 0)
        ORDER BY o.priority DESC, o.task_created_at, o.task_id, o.position
        LIMIT $2
    ), dequeued AS (
        -- what is claimed leaves the queue; so do the entries of tasks no longer running or
        -- past their deadline
        DELETE FROM claim_queue q
        WHERE q.task_id = ANY($8::uuid[])
          AND (q.step_id IN (SELECT step_id FROM chosen)
               OR (q.step_id = ANY($1::uuid[])
                   AND q.task_id IN (SELECT id FROM state WHERE NOT ok)))
    ), picked AS MATERIALIZED (
        SELECT step_id AS id,
               row_number() OVER (ORDER BY priority DESC, task_created_at, task_id, position) AS ord
        FROM chosen
"#,
        claim_lease_and_log!(),
        r#"
    ), spent AS (
        -- one token per step started, from buckets refilled up to now
        UPDATE tool_buckets b
        SET tokens = least(t.rate_limit_burst::float8,
                           b.tokens + extract(epoch FROM now() - b.refilled_at) * t.rate_limit_per_sec) - n.n,
            refilled_at = now()
        FROM (SELECT tool, count(*) AS n FROM claimed GROUP BY tool) n, tools t
        WHERE b.tool_id = n.tool AND t.id = b.tool_id AND t.rate_limit_per_sec IS NOT NULL
"#,
        claim_result!()
    )
);

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

/// What the checked claim's first statement locked (`claim_queue::pick`).
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
}

/// `ready → running` for up to `c.limit` of the entries `p` locked, within the limits of the
/// tools it locked (other limited tools start nothing), starting at most `p.admit` tasks that
/// have no running steps (-1: any).
pub(crate) async fn claim_checked(tx: &mut Tx, p: &Picked, c: &Claim) -> Result<Vec<ClaimedStep>> {
    let q = checked_args(sqlx::query_as(CLAIM.as_str()), p, c);
    Ok(q.fetch_all(&mut **tx).await?)
}

/// [`CLAIM_PLAIN`] under `EXPLAIN (ANALYZE, BUFFERS)`: (shared buffers, the plan).
#[cfg(feature = "testing")]
pub(crate) async fn explain_claim_plain(tx: &mut Tx, c: &Claim) -> Result<(i64, String)> {
    let sql = format!("EXPLAIN (ANALYZE, BUFFERS) {}", CLAIM_PLAIN.as_str());
    let q = plain_args(sqlx::query_as(sqlx::AssertSqlSafe(sql)), c, false);
    Ok(plan_of(q.fetch_all(&mut **tx).await?))
}

/// [`CLAIM`] under `EXPLAIN (ANALYZE, BUFFERS)`: (shared buffers, the plan).
#[cfg(feature = "testing")]
pub(crate) async fn explain_claim_checked(
    tx: &mut Tx,
    p: &Picked,
    c: &Claim,
) -> Result<(i64, String)> {
    let sql = format!("EXPLAIN (ANALYZE, BUFFERS) {}", CLAIM.as_str());
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
            task_move_sql(TaskMove::Evaluate, true).to_string(),
            "('{00000000-0000-0000-0000-000000000000}')",
        ),
        (
            "probe_complete",
            COMPLETE.to_string(),
            "('{}', '{}', '{}', '{}', '{}', '{}', '{}')",
        ),
        (
            "probe_claim",
            CLAIM_PLAIN.to_string(),
            "(0, false, '00000000-0000-0000-0000-000000000000', 30, 'step_started')",
        ),
    ]
}

/// A step a completion batch marked succeeded.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct DoneStep {
    pub id: Uuid,
    pub task_id: Uuid,
    pub step_key: String,
    pub plan_version: i32,
    pub attempts: i32,
}

/// One fenced success: (step, task, lease token, output), and what its attempt records.
pub(crate) struct Success<'a> {
    pub step_id: Uuid,
    pub task_id: Uuid,
    pub lease_token: i64,
    pub output: &'a Value,
    pub tool: &'a str,
    pub parameters: &'a Value,
    pub worker_id: Uuid,
}

statement!(
    /// Mark every item whose lease holds `succeeded` and insert its attempt, in one statement.
    COMPLETE = StepMove::Complete,
    r#"
    WITH i AS (
        SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::jsonb[], $5::text[],
                             $6::jsonb[], $7::uuid[])
             AS i(step_id, task_id, token, output, tool, parameters, worker_id)
    ), done AS (
        UPDATE steps s
        SET status = {to}, output = i.output, error = NULL, attempts = s.attempts + 1,
            lease_owner = NULL, lease_expires_at = NULL, finished_at = clock_timestamp(), updated_at = now()
        FROM i
        -- by primary key (the task and status checks are written so no index matches them)
        WHERE s.id = i.step_id AND s.lease_token = i.token
          AND (s.task_id = i.task_id AND s.status IN {from}) IS NOT FALSE
        RETURNING s.id, s.task_id, s.step_key, s.plan_version, s.attempts, s.started_at, s.output
    ), recorded AS (
        INSERT INTO attempts (task_id, step_id, step_key, plan_version, attempt, tool, parameters,
                              status, output, worker_id, started_at, finished_at)
        SELECT d.task_id, d.id, d.step_key, d.plan_version, d.attempts, i.tool, i.parameters,
               'succeeded', d.output, i.worker_id, coalesce(d.started_at, now()), clock_timestamp()
        FROM done d JOIN i ON i.step_id = d.id
    ), healed AS (
        -- a success closes its tool's circuit and resets its count of outages in a row; a
        -- tool with no circuit row, or a closed one with nothing counted, is not written
        UPDATE tool_circuits c
        SET consecutive_failures = 0, open_until = NULL, probe_until = NULL, updated_at = now()
        WHERE c.tool_id IN (SELECT DISTINCT i.tool FROM i)
          AND (c.consecutive_failures > 0 OR c.open_until IS NOT NULL)
    )
    SELECT id, task_id, step_key, plan_version, attempts FROM done
    "#
);

/// `running → succeeded` for every item whose lease still holds, with its attempt row (one
/// statement); a taken-over lease is simply not matched.
pub(crate) async fn complete_running(tx: &mut Tx, items: &[Success<'_>]) -> Result<Vec<DoneStep>> {
    Ok(sqlx::query_as(COMPLETE.as_str())
        .bind(items.iter().map(|i| i.step_id).collect::<Vec<_>>())
        .bind(items.iter().map(|i| i.task_id).collect::<Vec<_>>())
        .bind(items.iter().map(|i| i.lease_token).collect::<Vec<_>>())
        .bind(items.iter().map(|i| i.output.clone()).collect::<Vec<_>>())
        .bind(items.iter().map(|i| i.tool).collect::<Vec<_>>())
        .bind(
            items
                .iter()
                .map(|i| i.parameters.clone())
                .collect::<Vec<_>>(),
        )
        .bind(items.iter().map(|i| i.worker_id).collect::<Vec<_>>())
        .fetch_all(&mut **tx)
        .await?)
}

statement!(
    /// Promote, and count what is left of each plan version, in one statement. Promotion moves
    /// `blocked → ready`, both open, so the open count does not depend on it; the ready count
    /// adds the promoted steps to those ready before.
    PROMOTE = StepMove::Promote,
    r#"
    WITH a AS (
        SELECT * FROM unnest($1::uuid[], $2::int[]) AS a(task_id, plan_version)
    ), promoted AS (
        UPDATE steps d SET status = {to}, run_after = now(), updated_at = now()
        FROM a
        WHERE d.task_id = a.task_id AND d.plan_version = a.plan_version AND d.status IN {from}
          AND NOT EXISTS (
              SELECT 1 FROM steps p
              WHERE p.task_id = d.task_id AND p.plan_version = d.plan_version
                AND p.step_key = ANY(d.dependencies)
                AND p.status NOT IN ('succeeded', 'skipped', 'superseded'))
        RETURNING d.task_id, d.step_key, d.position
    ), counts AS (
        SELECT s.task_id,
               count(*) FILTER (WHERE s.status IN ('blocked', 'ready', 'running', 'failed')) AS open,
               count(*) FILTER (WHERE s.status = 'ready') AS ready
        FROM steps s JOIN a ON s.task_id = a.task_id AND s.plan_version = a.plan_version
        GROUP BY s.task_id
    )
    SELECT c.task_id, c.open,
           c.ready + (SELECT count(*) FROM promoted p WHERE p.task_id = c.task_id) AS ready,
           coalesce((SELECT array_agg(p.step_key ORDER BY p.position) FROM promoted p
                     WHERE p.task_id = c.task_id), '{}') AS promoted
    FROM counts c
    "#
);

/// What promotion left of one task's plan version.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct Promoted {
    pub task_id: Uuid,
    /// Steps still blocked, ready, running or failed.
    pub open: i64,
    pub ready: i64,
    /// Keys of the steps just promoted, in plan order.
    pub promoted: Vec<String>,
}

/// `blocked → ready` for the steps of these (task, plan version)s whose dependencies are all
/// done; per task, what is left open.
pub(crate) async fn promote_and_count(
    tx: &mut Tx,
    task_ids: &[Uuid],
    versions: &[i32],
) -> Result<Vec<Promoted>> {
    Ok(sqlx::query_as(PROMOTE.as_str())
        .bind(task_ids)
        .bind(versions)
        .fetch_all(&mut **tx)
        .await?)
}

/// How a failed attempt leaves its (locked, running) step.
pub(crate) struct FailedRun<'a> {
    pub step_id: Uuid,
    /// [`StepMove::RetryAfterFailure`] (after `delay_ms`) or [`StepMove::Fail`].
    pub step_move: StepMove,
    pub error: &'a Value,
    pub attempts: i32,
    pub retry_count: i32,
    pub rescue_count: i32,
    pub delay_ms: f64,
}

statement!(
    FAIL_RETRY = StepMove::RetryAfterFailure,
    "
    UPDATE steps SET status = {to}, error = $2, attempts = $3, retry_count = $4, rescue_count = $5,
           lease_owner = NULL, lease_expires_at = NULL, started_at = NULL, updated_at = now(),
           run_after = now() + make_interval(secs => $6 / 1000.0), finished_at = NULL
    WHERE id = $1 AND (status IN {from}) IS NOT FALSE"
);
statement!(
    FAIL = StepMove::Fail,
    "
    UPDATE steps SET status = {to}, error = $2, attempts = $3, retry_count = $4, rescue_count = $5,
           lease_owner = NULL, lease_expires_at = NULL, started_at = NULL, updated_at = now(),
           run_after = now() + make_interval(secs => $6 / 1000.0), finished_at = now()
    WHERE id = $1 AND (status IN {from}) IS NOT FALSE"
);

/// `running → ready` (plain retry) or `running → failed`, with the attempt counted.
pub(crate) async fn fail_running(tx: &mut Tx, f: &FailedRun<'_>) -> Result<()> {
    let sql = match f.step_move {
        StepMove::RetryAfterFailure => FAIL_RETRY.as_str(),
        StepMove::Fail => FAIL.as_str(),
        other => {
            return Err(StoreError::Corrupt(format!(
                "{other:?} is not a move after a failed attempt"
            )));
        }
    };
    let n = sqlx::query(sql)
        .bind(f.step_id)
        .bind(f.error)
        .bind(f.attempts)
        .bind(f.retry_count)
        .bind(f.rescue_count)
        .bind(f.delay_ms)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    if n == 0 {
        return Err(StoreError::Fenced);
    }
    Ok(())
}

statement!(
    RELEASE = StepMove::Release,
    "
    UPDATE steps SET status = {to}, lease_owner = NULL, lease_expires_at = NULL,
           started_at = NULL, run_after = greatest(now(), coalesce($2, now())), updated_at = now()
    WHERE id = $1 AND (status IN {from}) IS NOT FALSE"
);

/// `running → ready` without an attempt (the caller holds the fenced step lock), claimable
/// again at once or, with `until`, not before then.
pub(crate) async fn release_running(
    tx: &mut Tx,
    step_id: Uuid,
    until: Option<DateTime<Utc>>,
) -> Result<()> {
    let n = sqlx::query(RELEASE.as_str())
        .bind(step_id)
        .bind(until)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    match n {
        0 => Err(illegal(StepMove::Release, step_id)),
        _ => Ok(()),
    }
}

statement!(
    RERUN = StepMove::Rerun,
    "
    UPDATE steps SET status = {to}, param_overrides = param_overrides || coalesce($2, '{}'::jsonb),
           tool_override = coalesce($3, tool_override), finished_at = NULL, updated_at = now(),
           run_after = now() + make_interval(secs => $4 / 1000.0)
    WHERE id = $1 AND (status IN {from}) IS NOT FALSE"
);

/// Tier 1: `failed → ready` on the same row, overrides merged, after `delay_ms`.
pub(crate) async fn rerun_failed(
    tx: &mut Tx,
    step_id: Uuid,
    params: Option<Value>,
    tool: Option<&str>,
    delay_ms: u64,
) -> Result<()> {
    let n = sqlx::query(RERUN.as_str())
        .bind(step_id)
        .bind(params)
        .bind(tool)
        .bind(delay_ms as f64)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    match n {
        0 => Err(illegal(StepMove::Rerun, step_id)),
        _ => Ok(()),
    }
}

statement!(
    RERUN_ALL = StepMove::Rerun,
    "
    WITH r AS (
        UPDATE steps SET status = {to}, retry_count = 0, run_after = now(),
               finished_at = NULL, updated_at = now()
        WHERE task_id = $1 AND plan_version = $2 AND status IN {from}
        RETURNING 1)
    SELECT (SELECT count(*) FROM r),
           (SELECT count(*) FROM steps WHERE task_id = $1 AND plan_version = $2
              AND status IN ('blocked', 'ready', 'running'))"
);

/// Resume: every failed step of the plan version `failed → ready` with a fresh retry count.
/// Returns (steps rerun, steps already open).
pub(crate) async fn rerun_all_failed(
    tx: &mut Tx,
    task_id: Uuid,
    version: i32,
) -> Result<(i64, i64)> {
    Ok(sqlx::query_as(RERUN_ALL.as_str())
        .bind(task_id)
        .bind(version)
        .fetch_one(&mut **tx)
        .await?)
}

statement!(
    SUPERSEDE_ONE = StepMove::Supersede,
    "
    UPDATE steps SET status = {to}, finished_at = now(), updated_at = now()
    WHERE id = $1 AND (status IN {from}) IS NOT FALSE"
);

/// Tier 2: the failed row makes way for its repaired definition.
pub(crate) async fn supersede_step(tx: &mut Tx, step_id: Uuid) -> Result<()> {
    exec_for(tx, SUPERSEDE_ONE.as_str(), step_id)
        .await
        .map(drop)
}

statement!(
    SUPERSEDE_OPEN = StepMove::Supersede,
    "
    UPDATE steps SET status = {to}, updated_at = now(), finished_at = coalesce(finished_at, now())
    WHERE task_id = $1 AND plan_version = $2 AND status IN {from}"
);

/// A new plan version replaces this one: its open and failed rows are superseded.
pub(crate) async fn supersede_version(tx: &mut Tx, task_id: Uuid, version: i32) -> Result<()> {
    sqlx::query(SUPERSEDE_OPEN.as_str())
        .bind(task_id)
        .bind(version)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

statement!(
    SKIP = StepMove::Skip,
    "
    UPDATE steps SET status = {to}, updated_at = now(), finished_at = now()
    WHERE task_id = $1 AND status IN {from}"
);

/// Blocked and ready steps of a task become skipped. Returns how many.
pub(crate) async fn skip_open_steps(tx: &mut Tx, task_id: Uuid) -> Result<u64> {
    exec_for(tx, SKIP.as_str(), task_id).await
}

statement!(
    /// Lock unfinished tasks whose deadline passed (those a `Fail` may leave), oldest deadline
    /// first, skipping tasks another transaction holds.
    DEADLINE_DUE = TaskMove::Fail,
    "
    SELECT id FROM tasks
    WHERE deadline_at < now() AND status IN {from}
    ORDER BY deadline_at LIMIT $1
    FOR NO KEY UPDATE SKIP LOCKED"
);

/// Up to `limit` tasks past their deadline that can still fail, locked.
pub(crate) async fn lock_past_deadline(tx: &mut Tx, limit: i64) -> Result<Vec<Uuid>> {
    Ok(sqlx::query_scalar(DEADLINE_DUE.as_str())
        .bind(limit)
        .fetch_all(&mut **tx)
        .await?)
}

statement!(
    /// Every running step of a task fails with `$2` as its error (category `$3`), its lease
    /// token bumped so the holder's late result matches nothing; one failed attempt each.
    FENCE_RUNNING = StepMove::Fail,
    "
    WITH held AS (
        SELECT id, lease_owner, started_at FROM steps
        WHERE task_id = $1 AND status IN {from} FOR UPDATE
    ), failed AS (
        UPDATE steps s SET status = {to}, error = $2, attempts = s.attempts + 1,
               lease_token = s.lease_token + 1, lease_owner = NULL, lease_expires_at = NULL,
               updated_at = now(), finished_at = now()
        FROM held WHERE s.id = held.id
        RETURNING s.id, s.task_id, s.step_key, s.plan_version, s.attempts,
                  coalesce(s.tool_override, s.tool) AS tool,
                  s.parameters || s.param_overrides AS parameters
    ), recorded AS (
        INSERT INTO attempts (task_id, step_id, step_key, plan_version, attempt, tool, parameters,
                              status, error, error_category, worker_id, started_at, finished_at)
        SELECT f.task_id, f.id, f.step_key, f.plan_version, f.attempts, f.tool, f.parameters,
               'failed', $2, $3, held.lease_owner, coalesce(held.started_at, now()), clock_timestamp()
        FROM failed f JOIN held ON held.id = f.id
        RETURNING step_key
    )
    SELECT coalesce(array_agg(step_key ORDER BY step_key), '{}') FROM recorded"
);

/// The task's running steps fail (fenced: their holders' results change nothing), with an
/// attempt each. Returns their step keys.
pub(crate) async fn fence_running_steps(
    tx: &mut Tx,
    task_id: Uuid,
    error: &Value,
    category: &str,
) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar(FENCE_RUNNING.as_str())
        .bind(task_id)
        .bind(error)
        .bind(category)
        .fetch_one(&mut **tx)
        .await?)
}

// ---------------------------------------------------------------------------------------------
// Decisions

/// A decision this worker now holds a lease on.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedDecision {
    pub id: Uuid,
    pub task_id: Uuid,
    pub kind: DecisionKind,
    pub step_id: Option<Uuid>,
    pub input: Value,
    pub lease_token: i64,
    pub rescue_count: i32,
}

statement!(
    CLAIM_DECISIONS = DecisionMove::Claim,
    r#"
    WITH c AS (
        SELECT id FROM decisions
        WHERE status IN {from} AND run_after <= now()
        ORDER BY created_at LIMIT $1
        FOR UPDATE SKIP LOCKED
    )
    UPDATE decisions d
    SET status = {to}, lease_owner = $2, lease_token = d.lease_token + 1,
        lease_expires_at = now() + make_interval(secs => $3)
    FROM c WHERE d.id = c.id
    RETURNING d.id, d.task_id, d.kind, d.step_id, d.input, d.lease_token, d.rescue_count
    "#
);

/// `pending → running` for up to `limit` decisions (`FOR UPDATE SKIP LOCKED`).
pub(crate) async fn claim_pending_decisions(
    db: impl sqlx::PgExecutor<'_>,
    worker_id: Uuid,
    limit: i64,
    lease_secs: f64,
) -> Result<Vec<ClaimedDecision>> {
    Ok(sqlx::query_as(CLAIM_DECISIONS.as_str())
        .bind(limit)
        .bind(worker_id)
        .bind(lease_secs)
        .fetch_all(db)
        .await?)
}

statement!(
    REQUEUE_EXPIRED = DecisionMove::Requeue,
    r#"
    UPDATE decisions SET status = {to}, lease_owner = NULL, lease_expires_at = NULL,
           rescue_count = rescue_count + 1
    WHERE id IN (SELECT id FROM decisions WHERE status IN {from} AND lease_expires_at < now()
                 ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
    "#
);

/// `running → pending` for decisions whose lease expired (nothing was applied or counted).
pub(crate) async fn requeue_expired_decisions(tx: &mut Tx, limit: i64) -> Result<u64> {
    Ok(sqlx::query(REQUEUE_EXPIRED.as_str())
        .bind(limit)
        .execute(&mut **tx)
        .await?
        .rows_affected())
}

statement!(
    REQUEUE = DecisionMove::Requeue,
    "
    UPDATE decisions SET status = {to}, lease_owner = NULL, lease_expires_at = NULL
    WHERE id = $1 AND lease_token = $2 AND (status IN {from}) IS NOT FALSE"
);

/// `running → pending`, fenced on the lease (a release on shutdown). False when fenced.
pub(crate) async fn requeue_decision(tx: &mut Tx, id: Uuid, lease_token: i64) -> Result<bool> {
    let n = sqlx::query(REQUEUE.as_str())
        .bind(id)
        .bind(lease_token)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    Ok(n == 1)
}

statement!(FINISH_APPLIED = DecisionMove::Apply, "
    UPDATE decisions SET status = {to}, lease_owner = NULL, lease_expires_at = NULL, finished_at = now()
    WHERE id = $1 AND (status IN {from}) IS NOT FALSE");
statement!(FINISH_STALE = DecisionMove::Cancel, "
    UPDATE decisions SET status = {to}, lease_owner = NULL, lease_expires_at = NULL, finished_at = now()
    WHERE id = $1 AND (status IN {from}) IS NOT FALSE");

/// The (locked, running) decision ends: applied, or cancelled as stale.
pub(crate) async fn finish_decision(tx: &mut Tx, id: Uuid, applied: bool) -> Result<()> {
    let (m, sql) = if applied {
        (DecisionMove::Apply, FINISH_APPLIED.as_str())
    } else {
        (DecisionMove::Cancel, FINISH_STALE.as_str())
    };
    match exec_for(tx, sql, id).await? {
        0 => Err(illegal(m, id)),
        _ => Ok(()),
    }
}

statement!(
    CANCEL_OPEN = DecisionMove::Cancel,
    "
    UPDATE decisions SET status = {to}, lease_owner = NULL, lease_expires_at = NULL,
           finished_at = now()
    WHERE task_id = $1 AND status IN {from}"
);

/// Every pending or running decision of a task is cancelled.
pub(crate) async fn cancel_open_decisions(tx: &mut Tx, task_id: Uuid) -> Result<u64> {
    exec_for(tx, CANCEL_OPEN.as_str(), task_id).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_rendered_from_their_moves() {
        assert!(CLAIM.contains("SET status = 'running'"));
        assert!(CLAIM.contains("s.status IN ('ready')"));
        assert!(CLAIM_PLAIN.contains("s.status IN ('ready')"));
        assert!(SKIP.contains("status IN ('blocked', 'ready')"));
        assert!(SUPERSEDE_OPEN.contains("status IN ('blocked', 'ready', 'failed')"));
        assert!(CANCEL_OPEN.contains("status IN ('pending', 'running')"));
        for (m, many) in TaskMove::ALL.iter().flat_map(|m| [(m, false), (m, true)]) {
            let sql = task_move_sql(*m, many);
            assert!(sql.contains(&format!("SET status = '{}'", m.to())), "{m:?}");
            for f in m.from() {
                assert!(sql.contains(&format!("'{f}'")), "{m:?} from {f}");
            }
            assert!(!sql.contains('{'), "{m:?} left a placeholder: {sql}");
            assert_eq!(sql.contains("id = ANY($1)"), many, "{sql}");
            assert_eq!(sql.ends_with("RETURNING *"), many, "{sql}");
        }
    }
}
