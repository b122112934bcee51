//! `/bulk-actions` (operator): cancel, resume or rerun every task a filter or a list of ids
//! matches, e.g. after an incident. The match is taken at creation (a relative `since` such as
//! `2h` is bound then); the workers apply the action in batches, and it can be followed and
//! aborted.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::auth::Tenancy;
use super::schemas::{BadBody, BadUri, Conflict, Guarded, Missing};
use super::{ApiError, ApiJson, AppState};
use crate::domain::bulk::{BulkKind, FromStep, TimeBound};
use crate::domain::status::TaskStatus;
use crate::store::bulk::{BulkActionRow, BulkFilter, BulkTarget, NewBulkAction};

/// What a bulk action does to each task.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum BulkActionKind {
    Cancel,
    Resume,
    Rerun,
}

impl From<BulkActionKind> for BulkKind {
    fn from(k: BulkActionKind) -> Self {
        match k {
            BulkActionKind::Cancel => BulkKind::Cancel,
            BulkActionKind::Resume => BulkKind::Resume,
            BulkActionKind::Rerun => BulkKind::Rerun,
        }
    }
}

/// The task list's filters. Without `since` or `until`, the last 7 days.
#[derive(Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct BulkFilterInput {
    /// Only tasks in this status.
    #[serde(default)]
    status: Option<TaskStatus>,
    /// Created at or after: an RFC 3339 time, or a span before now (`2h`, `30m`, `7d`), bound
    /// once when the action is created.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64, example = "2h")]
    since: Option<String>,
    /// Created before: as `since`.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64)]
    until: Option<String>,
    /// The description contains this text, in any case.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200)]
    q: Option<String>,
    /// Submitted from this template.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200)]
    template: Option<String>,
    /// The task's metadata contains these keys with these values.
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// `POST /bulk-actions`: a filter or ids, not both.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"action": "rerun", "filter": {"status": "failed", "since": "2h"},
    "from_step": "first_failed", "name": "after the payments outage"})))]
pub(super) struct BulkActionRequest {
    action: BulkActionKind,
    #[serde(default)]
    filter: Option<BulkFilterInput>,
    /// These tasks (at most 10,000).
    #[serde(default)]
    #[schema(min_items = 1, max_items = 10000)]
    ids: Option<Vec<Uuid>>,
    /// A rerun's first step: `first_failed` (the default: the first failed step in plan order,
    /// or the first that did not succeed) or a step id.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200, example = "first_failed")]
    from_step: Option<String>,
    /// Count the matching tasks; change nothing.
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    #[schema(max_length = 200)]
    name: Option<String>,
}

/// The action created, or what a dry run matched (no id).
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct BulkAccepted {
    /// None for a dry run.
    bulk_action_id: Option<Uuid>,
    /// The tasks it matched (it applies to these, and only these).
    matched: i64,
    dry_run: bool,
    /// The filter's bounds as bound at creation.
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
}

/// A task the action could not be applied to, and why.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct BulkFailure {
    task_id: Uuid,
    error: String,
}

/// A bulk action and its progress.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = BulkAction)]
pub(super) struct BulkActionView {
    bulk_action_id: Uuid,
    name: Option<String>,
    action: BulkActionKind,
    /// `running`, `done` or `aborted`.
    #[schema(pattern = "^(running|done|aborted)$")]
    status: String,
    /// Tasks matched at creation.
    matched: i32,
    /// Tasks it was applied to.
    done: i32,
    /// Tasks it could not be applied to (one no longer failed, say): see `failures`.
    failed: i32,
    /// The filter as given, with `since` and `until` bound (none: ids were given).
    #[schema(value_type = Option<Object>)]
    filter: Option<Value>,
    from_step: Option<String>,
    tenant: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
    /// `GET /bulk-actions/{id}` only: the first 20 tasks it could not be applied to.
    #[serde(skip_serializing_if = "Option::is_none")]
    failures: Option<Vec<BulkFailure>>,
}

impl BulkActionView {
    fn of(r: BulkActionRow, failures: Option<Vec<BulkFailure>>) -> Result<Self, ApiError> {
        let action = match r.action.parse::<BulkKind>() {
            Ok(BulkKind::Cancel) => BulkActionKind::Cancel,
            Ok(BulkKind::Resume) => BulkActionKind::Resume,
            Ok(BulkKind::Rerun) => BulkActionKind::Rerun,
            Err(e) => return Err(crate::store::StoreError::Corrupt(e).into()),
        };
        Ok(Self {
            bulk_action_id: r.id,
            name: r.name,
            action,
            status: r.state,
            matched: r.matched,
            done: r.done,
            failed: r.failed,
            filter: r.filter,
            from_step: r.from_step,
            tenant: r.tenant,
            created_at: r.created_at,
            updated_at: r.updated_at,
            finished_at: r.finished_at,
            failures,
        })
    }
}

/// The `{id}` of a bulk action route (documentation only).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct BulkPath {
    /// A bulk action id.
    id: Uuid,
}

type PathArg = super::ApiPath<String>;

fn bulk_id(path: PathArg) -> Result<Uuid, ApiError> {
    let super::ApiPath(raw) = path;
    Uuid::parse_str(&raw)
        .map_err(|_| ApiError::bad_request(format!("{raw:?} is not a bulk action id (UUID)")))
}

fn bound(field: &str, v: Option<&str>) -> Result<Option<TimeBound>, ApiError> {
    v.map(|s| {
        s.parse::<TimeBound>()
            .map_err(|e| ApiError::validation(format!("filter.{field}: {e}")))
    })
    .transpose()
}

/// The request checked into what the store creates.
fn checked(r: BulkActionRequest, tenancy: &Tenancy) -> Result<NewBulkAction, ApiError> {
    let action: BulkKind = r.action.into();
    let (target, filter_json) = match (r.filter, r.ids) {
        (Some(_), Some(_)) => {
            return Err(ApiError::validation("give either filter or ids, not both"));
        }
        (None, None) => return Err(ApiError::validation("give a filter or ids")),
        (None, Some(ids)) => {
            if ids.is_empty() || ids.len() > 10_000 {
                return Err(ApiError::validation("ids must hold 1 to 10000 task ids"));
            }
            (BulkTarget::Ids(ids), None)
        }
        (Some(f), None) => {
            let fields = [
                ("since", &f.since),
                ("until", &f.until),
                ("q", &f.q),
                ("template", &f.template),
            ];
            for (field, v) in fields {
                if v.as_deref()
                    .is_some_and(|v| v.is_empty() || v.chars().count() > 200)
                {
                    return Err(ApiError::validation(format!(
                        "filter.{field} must be 1 to 200 characters"
                    )));
                }
            }
            let json = serde_json::to_value(&f).map_err(|e| ApiError::validation(e.to_string()))?;
            let filter = BulkFilter {
                status: f.status,
                since: bound("since", f.since.as_deref())?,
                until: bound("until", f.until.as_deref())?,
                q: f.q,
                template: f.template,
                metadata: f.metadata.map(Value::Object),
            };
            (BulkTarget::Filter(filter), Some(json))
        }
    };
    let from_step = match (&r.from_step, action) {
        (Some(_), BulkKind::Cancel | BulkKind::Resume) => {
            return Err(ApiError::validation("from_step is for a rerun only"));
        }
        (Some(s), _) if s.is_empty() || s.chars().count() > 200 => {
            return Err(ApiError::validation(
                "from_step must be 1 to 200 characters",
            ));
        }
        (Some(s), _) => Some(FromStep::parse(s)),
        (None, BulkKind::Rerun) => Some(FromStep::FirstFailed),
        (None, _) => None,
    };
    if r.name.as_ref().is_some_and(|n| n.chars().count() > 200) {
        return Err(ApiError::validation("name must be at most 200 characters"));
    }
    Ok(NewBulkAction {
        id: Uuid::now_v7(),
        tenant: tenancy.home.clone(),
        scope: tenancy.filter().map(str::to_owned),
        name: r.name,
        action,
        target,
        filter_json,
        from_step,
        dry_run: r.dry_run,
    })
}

/// Start a bulk action (operator): the tasks are matched now (202 with the count), and the
/// workers apply it in batches. `dry_run`: only the count (no id; nothing is created).
#[utoipa::path(post, path = "/bulk-actions", operation_id = "create_bulk_action", tag = "tasks",
    security(("bearer" = [])), params(super::schemas::TenantParam), request_body = BulkActionRequest,
    responses(
        (status = 202, description = "created (the workers apply it), or a dry run's count", body = BulkAccepted, links(
            ("get" = (operation_id = "get_bulk_action", parameters(("id" = "$response.body#/bulk_action_id")))),
            ("abort" = (operation_id = "abort_bulk_action", parameters(("id" = "$response.body#/bulk_action_id")))),
        )),
        BadBody, BadUri, Guarded,
    ),
)]
pub(super) async fn create(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiJson(r): ApiJson<BulkActionRequest>,
) -> Result<Response, ApiError> {
    let new = checked(r, &tenancy)?;
    let m = st.store.create_bulk_action(&new).await?;
    let body = BulkAccepted {
        bulk_action_id: (!new.dry_run).then_some(new.id),
        matched: m.matched,
        dry_run: new.dry_run,
        since: m.since,
        until: m.until,
    };
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

/// `GET /bulk-actions`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct BulkListQuery {
    #[param(minimum = 1, maximum = 500, default = 50)]
    limit: Option<i64>,
}

/// Bulk actions, newest first.
#[utoipa::path(get, path = "/bulk-actions", operation_id = "list_bulk_actions", tag = "tasks",
    security(("bearer" = [])), params(BulkListQuery, super::schemas::TenantParam),
    responses((status = 200, description = "bulk actions", body = Vec<BulkActionView>), BadUri, Guarded),
)]
pub(super) async fn list(
    State(st): State<AppState>,
    tenancy: Tenancy,
    q: Result<Query<BulkListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<BulkActionView>>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::bad_request("limit must be between 1 and 500"));
    }
    let rows = st.store.list_bulk_actions(tenancy.filter(), limit).await?;
    rows.into_iter()
        .map(|r| BulkActionView::of(r, None))
        .collect::<Result<Vec<_>, _>>()
        .map(Json)
}

/// A bulk action's progress, with the first tasks it could not be applied to.
#[utoipa::path(get, path = "/bulk-actions/{id}", operation_id = "get_bulk_action", tag = "tasks",
    security(("bearer" = [])), params(BulkPath),
    responses((status = 200, description = "the action", body = BulkActionView), Missing, BadUri, Guarded),
)]
pub(super) async fn get(
    State(st): State<AppState>,
    tenancy: Tenancy,
    path: PathArg,
) -> Result<Json<BulkActionView>, ApiError> {
    let id = bulk_id(path)?;
    let row = st.store.bulk_action(id, tenancy.filter()).await?;
    let failures = st
        .store
        .bulk_failures(id, 20)
        .await?
        .into_iter()
        .map(|(task_id, error)| BulkFailure { task_id, error })
        .collect();
    BulkActionView::of(row, Some(failures)).map(Json)
}

/// Stop a running bulk action: it waits for the batch in progress, and no batch starts after.
#[utoipa::path(post, path = "/bulk-actions/{id}/abort", operation_id = "abort_bulk_action", tag = "tasks",
    security(("bearer" = [])), params(BulkPath),
    responses((status = 200, description = "aborted: its final progress", body = BulkActionView), Missing, Conflict, BadUri, Guarded),
)]
pub(super) async fn abort(
    State(st): State<AppState>,
    tenancy: Tenancy,
    path: PathArg,
) -> Result<Json<BulkActionView>, ApiError> {
    let id = bulk_id(path)?;
    let row = st.store.abort_bulk_action(id, tenancy.filter()).await?;
    BulkActionView::of(row, None).map(Json)
}
