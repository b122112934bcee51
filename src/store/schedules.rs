//! Cron schedules: the registry, and firing the due ones. A worker locks due rows with
//! `FOR UPDATE SKIP LOCKED`, submits one task per schedule for the latest due tick (idempotency
//! key `schedule:<id>:<tick>`, so a crash between the submit and the row's update re-fires the
//! same tick into the same task) and moves `next_fire_at` past now.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use super::submit::{NewTask, Start};
use super::{Result, Store, StoreError};
use crate::domain::limits::Limits;
use crate::domain::model::PlanSpec;
use crate::domain::schedule::{CronSchedule, tick_key};
use crate::domain::template;

/// A row of `schedules`.
#[derive(Debug, Clone, sqlx::FromRow, PartialEq)]
pub struct ScheduleRow {
    pub id: String,
    pub cron: String,
    pub timezone: String,
    pub description: String,
    pub template: Option<String>,
    pub input: Option<Value>,
    pub plan: Option<Value>,
    pub priority: i32,
    pub limits: sqlx::types::Json<Limits>,
    pub enabled: bool,
    pub overlap: String,
    pub next_fire_at: Option<DateTime<Utc>>,
    pub last_tick: Option<DateTime<Utc>>,
    pub last_task_id: Option<Uuid>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub tenant: String,
}

/// A schedule as written (created or replaced).
#[derive(Debug, Clone)]
pub struct NewSchedule {
    pub id: String,
    pub cron: String,
    pub timezone: String,
    pub description: String,
    pub template: Option<String>,
    pub input: Option<Value>,
    pub plan: Option<Value>,
    pub priority: i32,
    pub limits: Limits,
    pub enabled: bool,
    pub overlap: String,
    /// The tenant whose tasks its ticks submit (set at create; a replace keeps it).
    pub tenant: String,
}

/// A tick fired: the schedule, the tick, and the task it made (none: skipped, the previous
/// run still going).
#[derive(Debug, Clone)]
pub struct Fired {
    pub schedule_id: String,
    pub tick: DateTime<Utc>,
    pub task_id: Option<Uuid>,
}

impl Store {
    /// Register a schedule; an existing id is a conflict. Its first tick is the first after
    /// now (database clock).
    pub async fn create_schedule(&self, s: &NewSchedule) -> Result<ScheduleRow> {
        let next = self.next_tick(s).await?;
        let row: Option<ScheduleRow> = sqlx::query_as(sql!("schedule/create"))
            .bind(&s.id)
            .bind(&s.cron)
            .bind(&s.timezone)
            .bind(&s.description)
            .bind(&s.template)
            .bind(&s.input)
            .bind(&s.plan)
            .bind(s.priority)
            .bind(sqlx::types::Json(&s.limits))
            .bind(s.enabled)
            .bind(&s.overlap)
            .bind(next)
            .bind(&s.tenant)
            .fetch_optional(&self.pool)
            .await?;
        row.ok_or_else(|| StoreError::Conflict(format!("schedule {:?} already exists", s.id)))
    }

    /// Replace a schedule's definition (a `PATCH` merged by the caller); its next tick is
    /// computed again from now.
    pub async fn replace_schedule(&self, s: &NewSchedule) -> Result<ScheduleRow> {
        let next = self.next_tick(s).await?;
        let row: Option<ScheduleRow> = sqlx::query_as(sql!("schedule/replace"))
            .bind(&s.id)
            .bind(&s.cron)
            .bind(&s.timezone)
            .bind(&s.description)
            .bind(&s.template)
            .bind(&s.input)
            .bind(&s.plan)
            .bind(s.priority)
            .bind(sqlx::types::Json(&s.limits))
            .bind(s.enabled)
            .bind(&s.overlap)
            .bind(next)
            .bind(&s.tenant)
            .fetch_optional(&self.pool)
            .await?;
        row.ok_or_else(|| StoreError::NotFound(format!("schedule {}", s.id)))
    }

    async fn next_tick(&self, s: &NewSchedule) -> Result<Option<DateTime<Utc>>> {
        let cron = CronSchedule::parse(&s.cron, &s.timezone).map_err(StoreError::Rejected)?;
        Ok(cron.next_after(self.now().await?))
    }

    /// The database's clock.
    pub async fn now(&self) -> Result<DateTime<Utc>> {
        Ok(sqlx::query_scalar("SELECT now()")
            .fetch_one(&self.pool)
            .await?)
    }

    /// `tenant`'s schedule `id` (ids are each tenant's own).
    pub async fn get_schedule(&self, tenant: &str, id: &str) -> Result<ScheduleRow> {
        sqlx::query_as("SELECT * FROM schedules WHERE tenant = $1 AND id = $2")
            .bind(tenant)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("schedule {id}")))
    }

    /// `tenant`'s schedules (none: every tenant's), by id.
    pub async fn list_schedules(&self, tenant: Option<&str>) -> Result<Vec<ScheduleRow>> {
        Ok(sqlx::query_as(
            "SELECT * FROM schedules WHERE $1::text IS NULL OR tenant = $1 ORDER BY id",
        )
        .bind(tenant)
        .fetch_all(&self.pool)
        .await?)
    }

    pub async fn delete_schedule(&self, tenant: &str, id: &str) -> Result<()> {
        let n = sqlx::query(sql!("schedule/delete"))
            .bind(id)
            .bind(tenant)
            .execute(&self.pool)
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::NotFound(format!("schedule {id}")));
        }
        Ok(())
    }

    /// The task one tick of a schedule submits.
    async fn task_of(&self, s: &ScheduleRow, tick: DateTime<Utc>) -> Result<NewTask> {
        let metadata = json!({"schedule_id": s.id, "tick": tick});
        let (plan, description, key) = match (&s.plan, &s.template) {
            (Some(p), _) => (p.clone(), String::new(), None),
            (None, Some(t)) => {
                let t = self.get_template(t).await?;
                if t.tenant != s.tenant {
                    return Err(StoreError::NotFound(format!("template {:?}", t.id)));
                }
                let input = s.input.clone().unwrap_or_else(|| json!({}));
                let plan = template::instantiate(&t.plan, &input).map_err(StoreError::Rejected)?;
                let key = match &t.concurrency_key {
                    Some(k) => Some(
                        template::concurrency_key(k, &input, &metadata)
                            .map_err(StoreError::Rejected)?,
                    ),
                    None => None,
                };
                (plan, t.description, key)
            }
            (None, None) => {
                return Err(StoreError::Corrupt(format!(
                    "schedule {} has no plan",
                    s.id
                )));
            }
        };
        let plan: PlanSpec = serde_json::from_value(plan)
            .map_err(|e| StoreError::Rejected(format!("schedule {}: plan: {e}", s.id)))?;
        let description = [s.description.as_str(), description.as_str()]
            .into_iter()
            .find(|d| !d.trim().is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| format!("schedule {}", s.id));
        Ok(NewTask {
            description,
            metadata,
            context: json!({}),
            priority: s.priority,
            idempotency_key: Some(tick_key(&s.id, tick)),
            limits: s.limits.0,
            plan: Some(plan),
            template: s.template.clone(),
            start: Start::Now,
            webhook: None,
            parent: None,
            concurrency_key: key,
            tenant: s.tenant.clone(),
        })
    }

    /// Submit the task of `tick` of `s` (idempotent: the same tick is the same task) and mark
    /// it as the schedule's.
    async fn submit_tick(&self, s: &ScheduleRow, tick: DateTime<Utc>) -> Result<Uuid> {
        let task = self.task_of(s, tick).await?;
        let id = self.submit_task(&task).await?.task_id;
        sqlx::query(sql!("schedule/mark_task"))
            .bind(id)
            .bind(&s.id)
            .execute(&self.pool)
            .await?;
        Ok(id)
    }

    /// `POST /schedules/{id}/trigger`: one task now (its tick is now, database clock), whatever
    /// the schedule's next tick and `enabled`.
    pub async fn trigger_schedule(&self, tenant: &str, id: &str) -> Result<Uuid> {
        let s = self.get_schedule(tenant, id).await?;
        let now = self.now().await?;
        self.submit_tick(&s, now).await
    }

    /// Fire up to `limit` due schedules (another worker's are skipped). Returns the ticks fired.
    pub async fn fire_due_schedules(&self, limit: i64) -> Result<Vec<Fired>> {
        in_tx!(self.pool, |tx| {
            let due: Vec<ScheduleRow> = sqlx::query_as(sql!("schedule/lock_due"))
                .bind(limit)
                .fetch_all(&mut **tx)
                .await?;
            if due.is_empty() {
                return Ok(Vec::new());
            }
            let now: DateTime<Utc> = sqlx::query_scalar("SELECT now()")
                .fetch_one(&mut **tx)
                .await?;
            let mut fired = Vec::new();
            for s in due {
                let Some(next_fire_at) = s.next_fire_at else {
                    continue;
                };
                let (tick, next, mut error) = match CronSchedule::parse(&s.cron, &s.timezone) {
                    Ok(c) => {
                        let (tick, next) = c.due(next_fire_at, now);
                        (tick, next, None)
                    }
                    Err(e) => (None, None, Some(e)),
                };
                let mut task_id = None;
                if let Some(tick) = tick {
                    let busy = s.overlap == "skip" && self.still_running(s.last_task_id).await?;
                    if !busy {
                        // the submit commits on its own connection while this row stays
                        // locked; a crash before this transaction commits re-fires the same
                        // tick, whose idempotency key names the same task
                        match self.submit_tick(&s, tick).await {
                            Ok(id) => task_id = Some(id),
                            Err(StoreError::Rejected(e) | StoreError::NotFound(e)) => {
                                error = Some(e)
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    fired.push(Fired {
                        schedule_id: s.id.clone(),
                        tick,
                        task_id,
                    });
                }
                sqlx::query(sql!("schedule/advance"))
                    .bind(&s.id)
                    .bind(next)
                    .bind(tick)
                    .bind(task_id)
                    .bind(&error)
                    .bind(&s.tenant)
                    .execute(&mut **tx)
                    .await?;
            }
            Ok(fired)
        })
    }

    async fn still_running(&self, task: Option<Uuid>) -> Result<bool> {
        let Some(id) = task else { return Ok(false) };
        Ok(sqlx::query_scalar(
            "SELECT status NOT IN ('succeeded', 'failed', 'cancelled') FROM tasks WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .unwrap_or(false))
    }

    /// Seconds until the earliest enabled schedule's next tick (None: no schedule).
    pub async fn next_schedule_in(&self) -> Result<Option<f64>> {
        Ok(sqlx::query_scalar(
            "SELECT extract(epoch FROM min(next_fire_at) - now())::float8 FROM schedules WHERE enabled",
        )
        .fetch_one(&self.pool)
        .await?)
    }
}
