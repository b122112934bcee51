//! `/schedules`: cron schedules that submit a task per tick (a template with its input, or a
//! plan). Any worker fires them; one task per tick (its idempotency key is
//! `schedule:<id>:<tick>`).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::ApiPath;
use super::auth::Tenancy;
use super::rules::{LimitsInput, PRIORITIES, apply_limits, check_plan_size, named_tools};
use super::schemas::{BadBody, BadUri, Conflict, Guarded, Missing};
use super::{ApiError, ApiJson, AppState};
use crate::domain::model::PlanSpec;
use crate::domain::plan;
use crate::domain::schedule::CronSchedule;
use crate::domain::tenant::Scope;
use crate::store::schedules::{NewSchedule, ScheduleRow};

/// `POST /schedules`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({
    "id": "nightly-report", "cron": "0 30 2 * * *", "timezone": "Europe/Berlin",
    "template": "report", "input": {"day": "yesterday"}, "overlap": "skip"
})))]
pub(super) struct ScheduleInput {
    #[schema(pattern = "^[A-Za-z0-9_.:-]{1,128}$")]
    id: String,
    /// 5 fields (minute first), or 6 with seconds first; `@daily` and friends.
    #[schema(min_length = 1, max_length = 200)]
    cron: String,
    /// An IANA time zone the expression is read in (default `UTC`).
    timezone: Option<String>,
    /// A workflow template each tick submits (with `input`); or give `plan`.
    template: Option<String>,
    #[schema(value_type = Option<Object>)]
    input: Option<Value>,
    /// The plan each tick submits; or give `template`.
    plan: Option<PlanSpec>,
    #[serde(default)]
    description: String,
    #[schema(minimum = -1000, maximum = 1000)]
    priority: Option<i32>,
    limits: Option<LimitsInput>,
    /// Default true.
    enabled: Option<bool>,
    /// `allow` (default): a tick submits even while the previous run goes on; `skip`: not.
    #[schema(schema_with = overlap)]
    overlap: Option<String>,
}

/// `PATCH /schedules/{id}`: any field of the schedule; absent ones are kept.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SchedulePatch {
    #[schema(min_length = 1, max_length = 200)]
    cron: Option<String>,
    timezone: Option<String>,
    template: Option<String>,
    #[schema(value_type = Option<Object>)]
    input: Option<Value>,
    plan: Option<PlanSpec>,
    description: Option<String>,
    #[schema(minimum = -1000, maximum = 1000)]
    priority: Option<i32>,
    limits: Option<LimitsInput>,
    enabled: Option<bool>,
    #[schema(schema_with = overlap)]
    overlap: Option<String>,
}

fn overlap() -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(["allow", "skip"]))
        .build()
}

/// A schedule.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Schedule)]
pub(super) struct ScheduleView {
    id: String,
    cron: String,
    timezone: String,
    description: String,
    template: Option<String>,
    #[schema(value_type = Option<Object>)]
    input: Option<Value>,
    #[schema(value_type = Option<Object>)]
    plan: Option<Value>,
    priority: i32,
    #[schema(value_type = Object)]
    limits: Value,
    enabled: bool,
    #[schema(schema_with = overlap)]
    overlap: String,
    /// The next tick (null: paused, or no tick left).
    next_fire_at: Option<DateTime<Utc>>,
    /// The next five ticks from now.
    next_fire_times: Vec<DateTime<Utc>>,
    last_tick: Option<DateTime<Utc>>,
    last_task_id: Option<Uuid>,
    /// Why the last tick made no task (a template gone, an input it no longer takes).
    last_error: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    /// The tenant whose tasks its ticks submit.
    tenant: String,
}

fn view(s: &ScheduleRow, now: DateTime<Utc>) -> ScheduleView {
    let upcoming = CronSchedule::parse(&s.cron, &s.timezone)
        .map(|c| c.upcoming(now, 5))
        .unwrap_or_default();
    ScheduleView {
        id: s.id.clone(),
        cron: s.cron.clone(),
        timezone: s.timezone.clone(),
        description: s.description.clone(),
        template: s.template.clone(),
        input: s.input.clone(),
        plan: s.plan.clone(),
        priority: s.priority,
        limits: serde_json::to_value(s.limits.0).unwrap_or_default(),
        enabled: s.enabled,
        overlap: s.overlap.clone(),
        next_fire_at: s.next_fire_at.filter(|_| s.enabled),
        next_fire_times: if s.enabled { upcoming } else { Vec::new() },
        last_tick: s.last_tick,
        last_task_id: s.last_task_id,
        last_error: s.last_error.clone(),
        created_at: s.created_at,
        updated_at: s.updated_at,
        tenant: s.tenant.clone(),
    }
}

/// Check a whole schedule (new, or patched) and turn it into the row to write.
async fn checked(st: &AppState, tenant: &str, s: ScheduleInput) -> Result<NewSchedule, ApiError> {
    let own = Tenancy {
        home: tenant.to_owned(),
        scope: Scope::One(tenant.to_owned()),
        admin: false,
    };
    super::tools::check_id(&s.id)?;
    let timezone = s.timezone.unwrap_or_else(|| "UTC".into());
    CronSchedule::parse(&s.cron, &timezone).map_err(ApiError::validation)?;
    let priority = s.priority.unwrap_or(0);
    if !PRIORITIES.contains(&priority) {
        return Err(ApiError::validation(format!(
            "priority must be between {} and {}",
            PRIORITIES.start(),
            PRIORITIES.end()
        )));
    }
    let overlap = s.overlap.unwrap_or_else(|| "allow".into());
    if !["allow", "skip"].contains(&overlap.as_str()) {
        return Err(ApiError::validation("overlap must be allow or skip"));
    }
    if s.description.chars().count() > 10_000 {
        return Err(ApiError::validation(
            "description must be at most 10000 characters",
        ));
    }
    let plan = checked_plan(st, &own, &s.template, s.plan, &s.input).await?;
    Ok(NewSchedule {
        id: s.id,
        cron: s.cron.trim().to_string(),
        timezone,
        description: s.description,
        template: s.template,
        input: s.input,
        plan,
        priority,
        limits: apply_limits(st.default_limits(), s.limits)?,
        enabled: s.enabled.unwrap_or(true),
        overlap,
        tenant: tenant.to_owned(),
    })
}

/// A schedule's template (checked now with its input: a tick re-checks it) or its own plan
/// (checked, and returned to store).
async fn checked_plan(
    st: &AppState,
    own: &Tenancy,
    template: &Option<String>,
    plan: Option<crate::domain::PlanSpec>,
    input: &Option<Value>,
) -> Result<Option<Value>, ApiError> {
    Ok(match (template, plan, input) {
        (Some(_), Some(_), _) => {
            return Err(ApiError::validation(
                "give either a plan or a template, not both",
            ));
        }
        (None, None, _) => {
            return Err(ApiError::validation(
                "a schedule needs a template or a plan",
            ));
        }
        (None, Some(_), Some(_)) => {
            return Err(ApiError::validation(
                "input is only for a schedule that names a template",
            ));
        }
        (Some(t), None, input) => {
            // the template and its input are checked now (a tick re-checks them)
            let mut seen = Default::default();
            let (p, _, _) =
                super::templates::instantiate(st, own, &mut seen, t, input.clone(), &json!({}))
                    .await?;
            plan::validate(&p, &named_tools(&p))?;
            None
        }
        (None, Some(p), None) => {
            check_plan_size(st, &p)?;
            plan::validate(&p, &named_tools(&p))?;
            let unknown = st
                .store
                .unknown_tools(Some(&own.home), &named_tools(&p))
                .await?;
            if !unknown.is_empty() {
                return Err(ApiError::validation(format!(
                    "the plan names tools that are not registered: {}",
                    unknown.join(", ")
                )));
            }
            Some(serde_json::to_value(&p).map_err(|e| ApiError::validation(e.to_string()))?)
        }
    })
}

/// Register a schedule (operator).
#[utoipa::path(post, path = "/schedules", operation_id = "create_schedule", tag = "schedules",
    security(("bearer" = [])), request_body = ScheduleInput,
    responses(
        (status = 201, description = "created", body = ScheduleView, links(
            ("get" = (operation_id = "get_schedule", parameters(("id" = "$response.body#/id")))),
            ("update" = (operation_id = "update_schedule", parameters(("id" = "$response.body#/id")))),
            ("trigger" = (operation_id = "trigger_schedule", parameters(("id" = "$response.body#/id")))),
            ("delete" = (operation_id = "delete_schedule", parameters(("id" = "$response.body#/id")))),
        )),
        Conflict, BadBody, Guarded,
    ),
)]
pub(super) async fn create(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiJson(s): ApiJson<ScheduleInput>,
) -> Result<Response, ApiError> {
    let new = checked(&st, &tenancy.home, s).await?;
    let row = st.store.create_schedule(&new).await?;
    let now = st.store.now().await?;
    Ok((StatusCode::CREATED, Json(view(&row, now))).into_response())
}

/// Every schedule, by id.
#[utoipa::path(get, path = "/schedules", operation_id = "list_schedules", tag = "schedules",
    security(("bearer" = [])), params(super::schemas::TenantParam),
    responses((status = 200, description = "schedules", body = Vec<ScheduleView>), BadUri, Guarded),
)]
pub(super) async fn list(
    State(st): State<AppState>,
    tenancy: Tenancy,
) -> Result<Json<Vec<ScheduleView>>, ApiError> {
    let now = st.store.now().await?;
    Ok(Json(
        st.store
            .list_schedules(tenancy.filter())
            .await?
            .iter()
            .map(|s| view(s, now))
            .collect(),
    ))
}

/// One schedule, with its next five ticks.
#[utoipa::path(get, path = "/schedules/{id}", operation_id = "get_schedule", tag = "schedules",
    security(("bearer" = [])), params(super::tools::RegistryPath),
    responses((status = 200, description = "schedule", body = ScheduleView), Missing, BadUri, Guarded),
)]
pub(super) async fn get(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ScheduleView>, ApiError> {
    let row = owned(&st, &tenancy, &id).await?;
    Ok(Json(view(&row, st.store.now().await?)))
}

/// Change a schedule (`{"enabled": false}` pauses it, `true` resumes it); its next tick is
/// computed again from now.
#[utoipa::path(patch, path = "/schedules/{id}", operation_id = "update_schedule", tag = "schedules",
    security(("bearer" = [])), params(super::tools::RegistryPath), request_body = SchedulePatch,
    responses((status = 200, description = "updated", body = ScheduleView), Missing, BadBody, BadUri, Guarded),
)]
pub(super) async fn update(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
    ApiJson(p): ApiJson<SchedulePatch>,
) -> Result<Json<ScheduleView>, ApiError> {
    let row = owned(&st, &tenancy, &id).await?;
    let stored_plan: Option<PlanSpec> = match &row.plan {
        Some(v) => Some(
            serde_json::from_value(v.clone())
                .map_err(|e| ApiError::validation(format!("stored plan: {e}")))?,
        ),
        None => None,
    };
    // a new template replaces the plan and the other way round
    let (template, plan, input) = match (p.template, p.plan) {
        (Some(t), None) => (Some(t), None, p.input.or(row.input.clone())),
        (None, Some(pl)) => (None, Some(pl), p.input),
        (Some(t), Some(pl)) => (Some(t), Some(pl), p.input),
        (None, None) => (
            row.template.clone(),
            stored_plan,
            p.input.or(row.input.clone()),
        ),
    };
    let limits = match p.limits {
        Some(l) => Some(l),
        None => Some(LimitsInput::from(row.limits.0)),
    };
    let merged = ScheduleInput {
        id: row.id.clone(),
        cron: p.cron.unwrap_or(row.cron.clone()),
        timezone: Some(p.timezone.unwrap_or(row.timezone.clone())),
        template,
        input,
        plan,
        description: p.description.unwrap_or(row.description.clone()),
        priority: Some(p.priority.unwrap_or(row.priority)),
        limits,
        enabled: Some(p.enabled.unwrap_or(row.enabled)),
        overlap: Some(p.overlap.unwrap_or(row.overlap.clone())),
    };
    let new = checked(&st, &row.tenant, merged).await?;
    let row = st.store.replace_schedule(&new).await?;
    Ok(Json(view(&row, st.store.now().await?)))
}

/// Delete a schedule (its tasks are kept).
#[utoipa::path(delete, path = "/schedules/{id}", operation_id = "delete_schedule", tag = "schedules",
    security(("bearer" = [])), params(super::tools::RegistryPath),
    responses((status = 204, description = "deleted"), Missing, BadUri, Guarded),
)]
pub(super) async fn delete(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    let row = owned(&st, &tenancy, &id).await?;
    st.store.delete_schedule(&row.tenant, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /schedules/{id}/trigger`: the task a tick submits.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct Triggered {
    task_id: Uuid,
}

/// Submit one task now, whatever the schedule's next tick (a paused one too).
#[utoipa::path(post, path = "/schedules/{id}/trigger", operation_id = "trigger_schedule", tag = "schedules",
    security(("bearer" = [])), params(super::tools::RegistryPath),
    responses((status = 202, description = "submitted", body = Triggered), Missing, BadUri, Guarded),
)]
pub(super) async fn trigger(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
) -> Result<(StatusCode, Json<Triggered>), ApiError> {
    let row = owned(&st, &tenancy, &id).await?;
    let task_id = st.store.trigger_schedule(&row.tenant, &id).await?;
    Ok((StatusCode::ACCEPTED, Json(Triggered { task_id })))
}

/// Schedule `id` of the caller's tenant (ids are each tenant's own; an admin names another
/// tenant's with `?tenant=`).
async fn owned(st: &AppState, tenancy: &Tenancy, id: &str) -> Result<ScheduleRow, ApiError> {
    let tenant = tenancy.filter().unwrap_or(&tenancy.home);
    Ok(st.store.get_schedule(tenant, id).await?)
}
