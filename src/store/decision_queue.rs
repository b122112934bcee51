//! The decision queue: brain calls as claimable, leased, fenced work. A decision is created in
//! the transaction of the change that needs it (leased at once to the worker that caused it, or
//! pending for any worker), claimed with `SKIP LOCKED`, requeued when its worker dies, and
//! applied at most once by [`super::apply`].

use std::collections::HashMap;

use uuid::Uuid;

use super::steps::moved_one;
use super::tasks::try_move_task;
use super::{Result, Store, StoreError, Tx};
use crate::domain::decision::{DecisionContext, DecisionInput, Meter, ToolEvidence};
use crate::domain::records::StepRow;
use crate::domain::status::DecisionKind;
use crate::domain::tool::ToolDef;
use crate::domain::transitions::{DecisionMove, TaskMove};

/// A decision this worker now holds a lease on.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedDecision {
    pub id: Uuid,
    pub task_id: Uuid,
    pub kind: DecisionKind,
    pub step_id: Option<Uuid>,
    /// Decoded when read: a row that does not decode is `Corrupt`, never an empty input.
    pub input: sqlx::types::Json<DecisionInput>,
    pub lease_token: i64,
    pub rescue_count: i32,
}

/// Identifies one lease on one decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DecisionFence {
    pub id: Uuid,
    pub task_id: Uuid,
    pub lease_token: i64,
}

impl ClaimedDecision {
    pub fn fence(&self) -> DecisionFence {
        DecisionFence {
            id: self.id,
            task_id: self.task_id,
            lease_token: self.lease_token,
        }
    }

    /// What the decision was created with.
    pub fn input(&self) -> DecisionInput {
        self.input.0.clone()
    }
}

/// Who takes the lease of a decision created inside a transaction (the worker that caused it
/// runs it at once). `None` where a lease is optional: it waits, pending, for any worker.
#[derive(Debug, Clone, Copy)]
pub struct Lease {
    pub worker_id: Uuid,
    pub lease_secs: f64,
}

/// Create a decision; leased to `lease` at once when given (returned), else pending.
pub(crate) async fn create_decision(
    tx: &mut Tx,
    task_id: Uuid,
    kind: DecisionKind,
    step_id: Option<Uuid>,
    input: &DecisionInput,
    lease: Option<Lease>,
) -> Result<Option<ClaimedDecision>> {
    let d: ClaimedDecision = sqlx::query_as(sql!("decision/create"))
        .bind(Uuid::now_v7())
        .bind(task_id)
        .bind(kind)
        .bind(step_id)
        .bind(serde_json::to_value(input).expect("input serializes"))
        .bind(lease.map(|l| l.worker_id))
        .bind(lease.map(|l| l.lease_secs).unwrap_or(0.0))
        .fetch_one(&mut **tx)
        .await?;
    if lease.is_some() {
        Ok(Some(d))
    } else {
        tx.wake_decisions();
        Ok(None)
    }
}

/// At most this many workflow templates (in id order) are offered to the planning brain.
pub const MAX_TEMPLATES_OFFERED: i64 = 50;

/// How many of the fleet's most recent attempts the alternatives' success rates are read from.
pub const EVIDENCE_WINDOW: i64 = 10_000;

impl Store {
    /// Claim pending decisions (`FOR UPDATE SKIP LOCKED`), leasing them to this worker.
    pub async fn claim_decisions(
        &self,
        worker_id: Uuid,
        limit: i64,
        lease_secs: f64,
    ) -> Result<Vec<ClaimedDecision>> {
        claim_pending_decisions(&self.pool, worker_id, limit, lease_secs).await
    }

    /// Decisions whose worker died go back to pending (nothing was applied, nothing counted).
    pub async fn rescue_expired_decisions(&self, limit: i64) -> Result<u64> {
        in_tx!(self.pool, |tx| {
            let n = requeue_expired_decisions(tx, limit).await?;
            if n > 0 {
                tx.wake_decisions();
            }
            Ok(n)
        })
    }

    /// Give a decision back (graceful shutdown): pending again, nothing applied. Fenced.
    pub async fn release_decision(&self, f: &DecisionFence) -> Result<()> {
        in_tx!(self.pool, |tx| {
            if !requeue_decision(tx, f.id, f.lease_token).await? {
                return Err(StoreError::Fenced);
            }
            tx.wake_decisions();
            Ok(())
        })
    }

    /// A worker took up a description-only task's plan decision: `pending → planning` (a task
    /// already planning, after a rescue, stays as it is).
    pub async fn start_planning(&self, task_id: Uuid) -> Result<()> {
        try_move_task(&self.pool, task_id, TaskMove::StartPlanning).await?;
        Ok(())
    }

    /// Recent outcomes of the alternatives of a step's tools, when there are several to choose
    /// from: the fleet's last [`EVIDENCE_WINDOW`] attempts (a primary-key range, whatever the
    /// history's size).
    async fn evidence(
        &self,
        step: &StepRow,
        tools: &HashMap<String, ToolDef>,
    ) -> Result<HashMap<String, ToolEvidence>> {
        let alts: Vec<String> = [Some(&step.tool), step.tool_override.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|t| tools.get(t))
            .flat_map(|d| d.alternatives.iter().cloned())
            .collect();
        if alts.len() < 2 {
            return Ok(HashMap::new());
        }
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT tool, count(*), count(*) FILTER (WHERE status = 'succeeded') FROM attempts
             WHERE id > (SELECT coalesce(max(id), 0) FROM attempts) - $2 AND tool = ANY($1)
             GROUP BY tool",
        )
        .bind(&alts)
        .bind(EVIDENCE_WINDOW)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(tool, attempts, succeeded)| {
                let e = ToolEvidence {
                    attempts,
                    succeeded,
                };
                (tool, e)
            })
            .collect())
    }

    /// The plan versions a chain of repairs led from to `version` (each repair is a version of
    /// its own, origin `repair`): `version - 1` when `version` is a repair, and so on.
    async fn repaired_versions(&self, task_id: Uuid, version: i32) -> Result<Vec<i32>> {
        let origins: Vec<(i32, String)> = sqlx::query_as(
            "SELECT version, origin FROM plans WHERE task_id = $1 AND version <= $2
             ORDER BY version DESC",
        )
        .bind(task_id)
        .bind(version)
        .fetch_all(&self.pool)
        .await?;
        Ok(origins
            .iter()
            .take_while(|(_, origin)| origin == "repair")
            .map(|(v, _)| v - 1)
            .collect())
    }

    /// Everything a brain may read for this decision.
    pub async fn decision_context(
        &self,
        d: &ClaimedDecision,
        max_rescues: i32,
    ) -> Result<DecisionContext> {
        let task = self.get_task(d.task_id).await?;
        let steps = self.live_steps(task.id, task.plan_version).await?;
        // the decision's step is nearly always live in the current version: no round trip
        let step: Option<StepRow> = match d.step_id {
            Some(id) => match steps.iter().find(|s| s.id == id) {
                Some(s) => Some(s.clone()),
                None => {
                    sqlx::query_as("SELECT * FROM steps WHERE id = $1")
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await?
                }
            },
            None => None,
        };
        let attempts = self.list_attempts(task.id, super::Page::ALL).await?;
        let tools = self.list_tools(Some(&task.tenant), None, i64::MAX).await?;
        let counters = task.counters(step.as_ref(), max_rescues);
        // only a capped task needs the counts
        let (llm_calls_used, llm_tokens_used): (i64, i64) =
            if task.max_llm_calls.is_some() || task.max_llm_tokens.is_some() {
                sqlx::query_as(
                    "SELECT count(*), coalesce(sum(total_tokens), 0)::bigint FROM llm_calls
                     WHERE task_id = $1",
                )
                .bind(task.id)
                .fetch_one(&self.pool)
                .await?
            } else {
                (0, 0)
            };
        let tools: HashMap<String, ToolDef> =
            tools.into_iter().map(|t| (t.id.clone(), t)).collect();
        let evidence = match &step {
            Some(s) => self.evidence(s, &tools).await?,
            None => HashMap::new(),
        };
        // version 1 is never a repair: no read on the common path
        let repaired_versions = match &step {
            Some(_) if task.plan_version > 1 => {
                self.repaired_versions(task.id, task.plan_version).await?
            }
            _ => vec![],
        };
        let templates = if d.kind == DecisionKind::Plan {
            self.list_templates(Some(&task.tenant), None, MAX_TEMPLATES_OFFERED)
                .await?
        } else {
            vec![]
        };
        Ok(DecisionContext {
            task,
            steps,
            step,
            attempts,
            tools,
            evidence,
            templates,
            repaired_versions,
            counters,
            input: d.input(),
            llm_calls_used,
            llm_tokens_used,
            meter: Meter::default(),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// A decision's status moves ([`DecisionMove`]): one named statement each in `sql/decision/`.

/// `pending → running` for up to `limit` decisions (`FOR UPDATE SKIP LOCKED`).
pub(crate) async fn claim_pending_decisions(
    db: impl sqlx::PgExecutor<'_>,
    worker_id: Uuid,
    limit: i64,
    lease_secs: f64,
) -> Result<Vec<ClaimedDecision>> {
    Ok(sqlx::query_as(sql!("decision/claim"))
        .bind(limit)
        .bind(worker_id)
        .bind(lease_secs)
        .fetch_all(db)
        .await?)
}

/// `running → pending` for decisions whose lease expired (nothing was applied or counted).
pub(crate) async fn requeue_expired_decisions(tx: &mut Tx, limit: i64) -> Result<u64> {
    Ok(sqlx::query(sql!("decision/requeue_expired"))
        .bind(limit)
        .execute(&mut **tx)
        .await?
        .rows_affected())
}

/// `running → pending`, fenced on the lease (a release on shutdown). False when fenced.
pub(crate) async fn requeue_decision(tx: &mut Tx, id: Uuid, lease_token: i64) -> Result<bool> {
    let n = sqlx::query(sql!("decision/requeue"))
        .bind(id)
        .bind(lease_token)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    Ok(n == 1)
}

/// The (locked, running) decision ends: applied, or cancelled as stale.
pub(crate) async fn finish_decision(tx: &mut Tx, id: Uuid, applied: bool) -> Result<()> {
    let (m, sql) = if applied {
        (DecisionMove::Apply, sql!("decision/apply"))
    } else {
        (DecisionMove::Cancel, sql!("decision/cancel_stale"))
    };
    let n = sqlx::query(sql)
        .bind(id)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    moved_one(n, m, id)
}

/// Every pending or running decision of a task is cancelled.
pub(crate) async fn cancel_open_decisions(tx: &mut Tx, task_id: Uuid) -> Result<u64> {
    Ok(sqlx::query(sql!("decision/cancel_open"))
        .bind(task_id)
        .execute(&mut **tx)
        .await?
        .rows_affected())
}
