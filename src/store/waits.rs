//! Waits: a running step parks (`running → waiting`, its lease and slot given back, no attempt)
//! with a row of `waits`; a resolution — an approval, an event, a callback, a time — is fenced
//! on the row being `open`, recorded on it, and wakes the step (`waiting → ready`) when the step
//! still waits in that attempt. The step's next run reads the resolution
//! ([`crate::domain::wait::after_wait`]).
//!
//! Locks, always in this order: an event key's advisory lock, then task rows (in id order),
//! then the wait row. A wait for an event and the event that resolves it both take the key's
//! advisory lock, so an event that comes just before its wait is registered is found by the
//! park (it reads `inbound_events` under the lock), and one that comes after finds the wait.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::step_queue::StepLease;
use super::steps::moved_one;
use super::{NewEvent, Result, Store, StoreError, Tx, lock_task};
use crate::domain::event::{self, Event};
use crate::domain::status::WaitStatus;
use crate::domain::transitions::StepMove;
use crate::domain::wait::{Resolution, WaitKind, WaitSpec};

/// A row of `waits`.
#[derive(Debug, Clone, sqlx::FromRow, PartialEq)]
pub struct WaitRow {
    pub id: Uuid,
    pub task_id: Uuid,
    pub step_id: Uuid,
    pub step_key: String,
    pub attempt: i32,
    pub kind: String,
    pub status: WaitStatus,
    pub prompt: Option<String>,
    pub form: Option<Value>,
    pub role: Option<String>,
    pub on_timeout: String,
    pub gated_tool: Option<String>,
    pub parameters: Option<Value>,
    pub event_key: Option<String>,
    #[sqlx(rename = "match")]
    pub matcher: Option<Value>,
    pub token_hash: Option<Vec<u8>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub resolved_at: Option<DateTime<Utc>>,
    pub resolution: Option<Value>,
    pub resolved_by: Option<Uuid>,
    /// A `child` wait's child task.
    #[sqlx(default)]
    pub child_task_id: Option<Uuid>,
    /// Its task's tenant.
    #[sqlx(default)]
    pub tenant: String,
}

impl WaitRow {
    pub fn kind(&self) -> Result<WaitKind> {
        WaitKind::parse(&self.kind)
            .ok_or_else(|| StoreError::Corrupt(format!("wait kind {:?}", self.kind)))
    }

    /// The resolution, typed (None while open or cancelled).
    pub fn resolution(&self) -> Result<Option<Resolution>> {
        self.resolution
            .as_ref()
            .map(|v| {
                serde_json::from_value(v.clone())
                    .map_err(|e| StoreError::Corrupt(format!("wait resolution: {e}")))
            })
            .transpose()
    }
}

/// What parking a step did.
#[derive(Debug, Clone)]
pub enum Parked {
    /// The step waits; its worker lets it go.
    Waiting(WaitRow),
    /// The wait was already resolved (an earlier event, a callback that beat the call's 2xx):
    /// the step did not park, and its worker goes on with the resolution.
    Resolved(WaitRow),
}

/// The step whose wait is written: its lease, and its key and attempt.
#[derive(Debug, Clone, Copy)]
pub struct Waiter<'a> {
    pub fence: &'a StepLease,
    pub step_key: &'a str,
    pub attempt: i32,
    pub worker_id: Uuid,
}

/// Which waits `GET /waits` lists.
#[derive(Debug, Clone, Default)]
pub struct WaitFilter {
    pub status: Option<WaitStatus>,
    pub kind: Option<WaitKind>,
    pub task_id: Option<Uuid>,
    pub limit: i64,
    /// Only this tenant's (none: every tenant's).
    pub tenant: Option<String>,
}

async fn insert_wait(
    tx: &mut Tx,
    w: Waiter<'_>,
    spec: &WaitSpec,
    token: Option<&[u8]>,
) -> Result<WaitRow> {
    Ok(sqlx::query_as(sql!("wait/insert"))
        .bind(Uuid::now_v7())
        .bind(w.fence.task_id)
        .bind(w.fence.step_id)
        .bind(w.step_key)
        .bind(w.attempt)
        .bind(spec.kind.as_str())
        .bind(&spec.prompt)
        .bind(&spec.form)
        .bind(spec.role.map(|r| r.as_str()))
        .bind(spec.on_timeout.as_str())
        .bind(&spec.gated_tool)
        .bind(&spec.parameters)
        .bind(&spec.event_key)
        .bind(&spec.matcher)
        .bind(token)
        .bind(spec.expires_at)
        .bind(spec.expires_in_secs)
        .bind(spec.child_task_id)
        .fetch_one(&mut **tx)
        .await?)
}

/// The resolution of a wait for the child task `child`, if the child has ended, or (with
/// `stopped_for`) has stopped in `needs_intervention` at least that many seconds ago.
async fn child_ended(
    tx: &mut Tx,
    child: Uuid,
    stopped_for: Option<f64>,
) -> Result<Option<Resolution>> {
    let row: Option<(String, Value, Value)> = sqlx::query_as(sql!("wait/child_ended"))
        .bind(child)
        .bind(stopped_for)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(row.map(|(status, outputs, error)| Resolution::ChildEnded {
        task_id: child,
        status,
        outputs,
        error,
    }))
}

async fn lock_open(tx: &mut Tx, id: Uuid) -> Result<Option<WaitRow>> {
    Ok(sqlx::query_as(sql!("wait/lock_open"))
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?)
}

async fn key_lock(tx: &mut Tx, key: &str) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 7))")
        .bind(key)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Record `r` on the open wait `w` (locked by the caller, its task too) and wake its step if it
/// still waits in that attempt. Returns the wait as resolved, and whether the step woke.
async fn resolve_locked(
    tx: &mut Tx,
    w: &WaitRow,
    r: &Resolution,
    by: Option<Uuid>,
) -> Result<(WaitRow, bool)> {
    let stmt = match r.wait_status() {
        "expired" => sql!("wait/expire"),
        _ => sql!("wait/resolve"),
    };
    let row: WaitRow = sqlx::query_as(stmt)
        .bind(w.id)
        .bind(serde_json::to_value(r).map_err(|e| StoreError::Corrupt(e.to_string()))?)
        .bind(by)
        .fetch_one(&mut **tx)
        .await?;
    if let (
        Resolution::Approved {
            parameters: Some(p),
            ..
        },
        Some(_),
    ) = (r, &w.gated_tool)
    {
        // an approver's edit of a gated call: the step's overrides, as a resume's would be
        sqlx::query(sql!("step/override_parameters"))
            .bind(w.step_id)
            .bind(p)
            .bind(None::<String>)
            .execute(&mut **tx)
            .await?;
    }
    let woke = sqlx::query(sql!("step/wake"))
        .bind(w.step_id)
        .bind(w.attempt)
        .execute(&mut **tx)
        .await?
        .rows_affected()
        > 0;
    if woke {
        tx.moved(StepMove::Wake, &[w.task_id]);
    }
    if let Resolution::ChildEnded {
        task_id, status, ..
    } = r
    {
        tx.push(NewEvent::new(
            w.task_id,
            Event::ChildTaskEnded(event::ChildTaskEnded {
                step_key: w.step_key.clone(),
                child_task_id: *task_id,
                status: status.clone(),
            }),
        ));
    }
    let waited = (row.resolved_at.unwrap_or(row.created_at) - row.created_at).num_milliseconds();
    tx.push(NewEvent::new(
        w.task_id,
        Event::WaitResolved(event::WaitResolved {
            step_key: w.step_key.clone(),
            wait_id: w.id,
            wait_kind: w.kind.clone(),
            outcome: outcome_name(r).into(),
            resolved_by: by,
            parameters: match r {
                Resolution::Approved { parameters, .. } => parameters.clone(),
                _ => None,
            },
            waited_secs: waited as f64 / 1000.0,
            woke_step: woke,
        }),
    ));
    Ok((row, woke))
}

fn outcome_name(r: &Resolution) -> &'static str {
    match r {
        Resolution::Approved { .. } => "approved",
        Resolution::Rejected { .. } => "rejected",
        Resolution::Event { .. } => "event",
        Resolution::Completed { .. } => "completed",
        Resolution::Failed { .. } => "failed",
        Resolution::Slept { .. } => "slept",
        Resolution::ChildEnded { .. } => "child_ended",
        Resolution::Timeout => "timeout",
    }
}

impl Store {
    /// The wait of `kind` of this attempt of the step, if one was written.
    pub async fn wait_of(
        &self,
        step_id: Uuid,
        attempt: i32,
        kind: WaitKind,
    ) -> Result<Option<WaitRow>> {
        Ok(
            sqlx::query_as("SELECT * FROM waits WHERE step_id = $1 AND attempt = $2 AND kind = $3")
                .bind(step_id)
                .bind(attempt)
                .bind(kind.as_str())
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    /// An async tool's wait, written before its call so that a callback that beats the call's
    /// answer finds it (the step keeps running). With a wait already there for this attempt
    /// (the step was released and claimed again), its token is replaced: only the new call's
    /// token calls back.
    pub async fn open_callback_wait(
        &self,
        w: Waiter<'_>,
        spec: &WaitSpec,
        token_hash: &[u8],
    ) -> Result<WaitRow> {
        in_tx!(self.pool, |tx| {
            let row = insert_wait(tx, w, spec, Some(token_hash)).await?;
            if row.token_hash.as_deref() != Some(token_hash) && row.status == WaitStatus::Open {
                sqlx::query(sql!("wait/rotate_token"))
                    .bind(row.id)
                    .bind(token_hash)
                    .bind(spec.expires_in_secs)
                    .execute(&mut **tx)
                    .await?;
            }
            Ok(row)
        })
    }

    /// Park a running step on its wait (fenced on its lease): the wait is written (or found),
    /// and unless it is already resolved the step goes `running → waiting`, giving back its
    /// lease and its slot.
    pub async fn park_step(&self, w: Waiter<'_>, spec: &WaitSpec) -> Result<Parked> {
        let task_id = w.fence.task_id;
        in_tx!(self.pool, |tx| {
            if let Some(key) = &spec.event_key {
                key_lock(tx, key).await?;
            }
            lock_task(tx, task_id).await?;
            super::step_queue::lock_running(tx, w.fence).await?;
            let row = insert_wait(tx, w, spec, None).await?;
            let Some(row) = lock_open(tx, row.id).await? else {
                return Ok(Parked::Resolved(self_read(tx, row.id).await?));
            };
            if let Some(child) = spec.child_task_id
                && let Some(r) = child_ended(tx, child, None).await?
            {
                // the child ended before its parent parked: no wait
                let (resolved, _) = resolve_locked(tx, &row, &r, None).await?;
                return Ok(Parked::Resolved(resolved));
            }
            if let Some(key) = &spec.event_key {
                let earlier: Option<Value> = sqlx::query_scalar(sql!("wait/earlier_event"))
                    .bind(key)
                    .bind(task_id)
                    .bind(&spec.matcher)
                    .fetch_optional(&mut **tx)
                    .await?;
                if let Some(payload) = earlier {
                    let r = Resolution::Event { payload };
                    let (resolved, _) = resolve_locked(tx, &row, &r, None).await?;
                    return Ok(Parked::Resolved(resolved));
                }
            }
            let n = sqlx::query(sql!("step/park"))
                .bind(w.fence.step_id)
                .execute(&mut **tx)
                .await?
                .rows_affected();
            moved_one(n, StepMove::Park, w.fence.step_id)?;
            tx.moved(StepMove::Park, &[task_id]);
            tx.push(NewEvent::new(
                task_id,
                Event::StepWaiting(event::StepWaiting {
                    step_key: w.step_key.to_string(),
                    wait_id: row.id,
                    wait_kind: row.kind.clone(),
                    attempt: w.attempt,
                    expires_at: row.expires_at,
                    worker_id: w.worker_id,
                }),
            ));
            tx.wake_steps();
            Ok(Parked::Waiting(row))
        })
    }

    /// Resolve the open wait `id` with `r` (decided by the key `by`). `None`: it is not open
    /// (resolved before, expired, cancelled) and nothing changed.
    pub async fn resolve_wait(
        &self,
        id: Uuid,
        r: &Resolution,
        by: Option<Uuid>,
    ) -> Result<Option<WaitRow>> {
        let Some(task_id) = self.wait_task(id).await? else {
            return Err(StoreError::NotFound(format!("wait {id}")));
        };
        in_tx!(self.pool, |tx| {
            lock_task(tx, task_id).await?;
            let Some(row) = lock_open(tx, id).await? else {
                return Ok(None);
            };
            let (resolved, woke) = resolve_locked(tx, &row, r, by).await?;
            if woke {
                tx.wake_steps();
            }
            Ok(Some(resolved))
        })
    }

    /// Resolve the open wait whose callback token hashes to `hash`. `Err(NotFound)`: no such
    /// token; `Ok(None)`: its wait is no longer open.
    /// The tenant of the wait a callback token names (none: no such wait).
    pub async fn callback_tenant(&self, hash: &[u8]) -> Result<Option<String>> {
        Ok(
            sqlx::query_scalar("SELECT tenant::text FROM waits WHERE token_hash = $1")
                .bind(hash)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    pub async fn resolve_callback(&self, hash: &[u8], r: &Resolution) -> Result<Option<WaitRow>> {
        let id: Option<Uuid> = sqlx::query_scalar("SELECT id FROM waits WHERE token_hash = $1")
            .bind(hash)
            .fetch_optional(&self.pool)
            .await?;
        let id = id.ok_or_else(|| StoreError::NotFound("callback".into()))?;
        self.resolve_wait(id, r, None).await
    }

    /// A callback's heartbeat: its wait lasts `extend_secs` more. `Err(NotFound)`: no open wait
    /// has this token.
    pub async fn extend_callback(&self, hash: &[u8], extend_secs: f64) -> Result<DateTime<Utc>> {
        let at: Option<DateTime<Utc>> = sqlx::query_scalar(sql!("wait/extend"))
            .bind(hash)
            .bind(extend_secs)
            .fetch_optional(&self.pool)
            .await?;
        at.ok_or_else(|| StoreError::NotFound("open callback".into()))
    }

    /// `POST /events` of `tenant`: record the event and resolve every open wait of the
    /// tenant's tasks for its key whose `match` the payload contains. Returns how many it
    /// resolved.
    pub async fn post_event(&self, tenant: &str, key: &str, payload: &Value) -> Result<usize> {
        in_tx!(self.pool, |tx| {
            key_lock(tx, key).await?;
            sqlx::query(sql!("wait/record_event"))
                .bind(key)
                .bind(payload)
                .bind(tenant)
                .execute(&mut **tx)
                .await?;
            let open: Vec<(Uuid, Uuid)> = sqlx::query_as(sql!("wait/matching"))
                .bind(key)
                .bind(payload)
                .bind(tenant)
                .fetch_all(&mut **tx)
                .await?;
            let (mut n, mut woken) = (0, Vec::new());
            for (id, task_id) in open {
                lock_task(tx, task_id).await?;
                let Some(row) = lock_open(tx, id).await? else {
                    continue;
                };
                let r = Resolution::Event {
                    payload: payload.clone(),
                };
                if resolve_locked(tx, &row, &r, None).await?.1 {
                    woken.push(task_id);
                }
                n += 1;
            }
            if !woken.is_empty() {
                woken.dedup();
                tx.wake_steps();
            }
            Ok(n)
        })
    }

    /// Expire (or, for a sleep or an approval that approves on timeout, resolve) up to `limit`
    /// open waits whose time has come. Returns how many.
    /// Resolve open child waits whose child task has ended, or has stopped in
    /// `needs_intervention` at least `intervention_wait_secs` ago (`[limits]
    /// child_intervention_wait_secs`: the parent does not wait on it longer, and the child is
    /// cancelled, its parent's recovery going on without it). Each in its own transaction,
    /// under the parent's lock, fenced on the wait being open; how many.
    pub async fn resolve_ended_children(
        &self,
        limit: i64,
        intervention_wait_secs: f64,
    ) -> Result<usize> {
        let ended: Vec<(Uuid, Uuid)> = sqlx::query_as(sql!("wait/children_ended"))
            .bind(limit)
            .bind(intervention_wait_secs)
            .fetch_all(&self.pool)
            .await?;
        let mut n = 0;
        for (id, task_id) in ended {
            let done = in_tx!(self.pool, |tx| {
                lock_task(tx, task_id).await?;
                let Some(row) = lock_open(tx, id).await? else {
                    return Ok(false);
                };
                let Some(child) = row.child_task_id else {
                    return Ok(false);
                };
                let Some(r) = child_ended(tx, child, Some(intervention_wait_secs)).await? else {
                    return Ok(false);
                };
                if resolve_locked(tx, &row, &r, None).await?.1 {
                    tx.wake_steps();
                }
                if matches!(&r, Resolution::ChildEnded { status, .. } if status == "needs_intervention")
                {
                    // given up on: nobody waits for it any more
                    super::submit::cancel_in(tx, child, None).await?;
                }
                Ok(true)
            })?;
            n += usize::from(done);
        }
        Ok(n)
    }

    pub async fn expire_due_waits(&self, limit: i64) -> Result<usize> {
        let due: Vec<(Uuid, Uuid)> = sqlx::query_as(
            "SELECT id, task_id FROM waits WHERE status = 'open' AND expires_at <= now()
             ORDER BY expires_at LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        let mut n = 0;
        for (id, task_id) in due {
            let done = in_tx!(self.pool, |tx| {
                lock_task(tx, task_id).await?;
                let Some(row) = lock_open(tx, id).await? else {
                    return Ok(false);
                };
                let now: DateTime<Utc> = sqlx::query_scalar("SELECT now()")
                    .fetch_one(&mut **tx)
                    .await?;
                if row.expires_at.is_none_or(|at| at > now) {
                    return Ok(false);
                }
                let on_timeout = match row.on_timeout.as_str() {
                    "approve" => crate::domain::wait::OnTimeout::Approve,
                    _ => crate::domain::wait::OnTimeout::Reject,
                };
                let r = Resolution::on_expiry(row.kind()?, on_timeout, now);
                if resolve_locked(tx, &row, &r, None).await?.1 {
                    tx.wake_steps();
                }
                Ok(true)
            })?;
            n += usize::from(done);
        }
        Ok(n)
    }

    /// One wait.
    pub async fn get_wait(&self, id: Uuid) -> Result<WaitRow> {
        sqlx::query_as("SELECT * FROM waits WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("wait {id}")))
    }

    /// Waits, newest first.
    pub async fn list_waits(&self, f: &WaitFilter) -> Result<Vec<WaitRow>> {
        Ok(sqlx::query_as(sql!("wait/list"))
            .bind(f.status)
            .bind(f.kind.map(|k| k.as_str()))
            .bind(f.task_id)
            .bind(f.limit)
            .bind(&f.tenant)
            .fetch_all(&self.pool)
            .await?)
    }

    async fn wait_task(&self, id: Uuid) -> Result<Option<Uuid>> {
        Ok(
            sqlx::query_scalar("SELECT task_id FROM waits WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?,
        )
    }
}

async fn self_read(tx: &mut Tx, id: Uuid) -> Result<WaitRow> {
    Ok(sqlx::query_as("SELECT * FROM waits WHERE id = $1")
        .bind(id)
        .fetch_one(&mut **tx)
        .await?)
}
