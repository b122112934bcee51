//! `/templates`: workflow templates (parameterized plans), and turning a submit body that names
//! one into a plan.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use utoipa::ToSchema;

use super::ApiPath;
use super::auth::Tenancy;
use super::schemas::{BadBody, BadUri, Conflict, Guarded, Missing};
use super::{ApiError, ApiJson, AppState};
use crate::domain::PlanSpec;
use crate::domain::plan;
use crate::domain::template::{self, TemplateDef};

/// `POST /templates`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({
    "id": "greet",
    "description": "Greet someone",
    "input_schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    "plan": {"steps": [{"id": "hello", "tool": "echo", "parameters": {"text": "Hello, ${input.name}"}}]}
})))]
pub(super) struct TemplateInput {
    #[schema(pattern = "^[A-Za-z0-9_.:-]{1,128}$")]
    id: String,
    /// The default description of the tasks made from it.
    #[serde(default)]
    description: String,
    /// JSON Schema of the submit's input (default `{"type":"object"}`); when it declares
    /// properties, every `${input.key}` must be one of them.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    input_schema: Option<Value>,
    #[schema(schema_with = super::schemas::template_plan)]
    plan: Value,
    /// The concurrency key of the tasks made from it: text with `${input.key}` and
    /// `${metadata.key}` placeholders (e.g. `"${metadata.customer_id}"`), filled at each
    /// submit. A submit's own `concurrency_key` wins.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 256)]
    concurrency_key: Option<String>,
    /// The `limits.max_cost` of the tasks made from it (a submit's own wins).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1000000000)]
    max_cost: Option<f64>,
}

/// Register a workflow template (admin).
#[utoipa::path(post, path = "/templates", operation_id = "create_template", tag = "templates", security(("bearer" = [])),
    request_body = TemplateInput,
    responses(
        (status = 201, description = "registered", body = TemplateDef, links(
            ("get" = (operation_id = "get_template", parameters(("id" = "$response.body#/id")))),
            ("delete" = (operation_id = "delete_template", parameters(("id" = "$response.body#/id")))),
        )),
        Conflict, BadBody, Guarded,
    ),
)]
pub(super) async fn create(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiJson(t): ApiJson<TemplateInput>,
) -> Result<Response, ApiError> {
    super::tools::check_id(&t.id)?;
    let input_schema = t.input_schema.unwrap_or_else(|| json!({"type": "object"}));
    if !input_schema.is_object() {
        return Err(ApiError::validation("input_schema must be a JSON object"));
    }
    crate::domain::schema::check(&input_schema)
        .map_err(|e| ApiError::validation(format!("input_schema: {e}")))?;
    if !t.plan.is_object() {
        return Err(ApiError::validation("plan must be a JSON object"));
    }
    let mut paths =
        template::input_paths(&t.plan).map_err(|e| ApiError::validation(format!("plan: {e}")))?;
    if let Some(k) = &t.concurrency_key {
        if !(1..=256).contains(&k.chars().count()) {
            return Err(ApiError::validation(
                "concurrency_key must be 1 to 256 characters",
            ));
        }
        paths.extend(template::key_paths(k).map_err(ApiError::validation)?);
    }
    let undeclared = template::undeclared(&paths, &input_schema);
    if !undeclared.is_empty() {
        return Err(ApiError::validation(format!(
            "plan uses ${{input.{}}}, which input_schema does not declare in its properties",
            undeclared.join("}, ${input.")
        )));
    }
    // the plan's shape, checked with a stand-in value at every placeholder
    let probe = template::instantiate(&t.plan, &template::probe_input(&paths))
        .map_err(|e| ApiError::validation(format!("plan: {e}")))?;
    let spec: PlanSpec =
        serde_json::from_value(probe).map_err(|e| ApiError::validation(format!("plan: {e}")))?;
    super::rules::check_plan_size(&st, &spec)?;
    let known = st
        .store
        .tool_ids(&tenancy.home)
        .await?
        .into_iter()
        .collect();
    plan::validate(&spec, &known)?;
    if let Some(c) = t.max_cost
        && !(c.is_finite() && (0.0..=1e9).contains(&c))
    {
        return Err(ApiError::validation(
            "max_cost must be between 0 and 1000000000",
        ));
    }
    let row = st
        .store
        .create_template(
            &t.id,
            &t.description,
            &input_schema,
            &t.plan,
            (t.concurrency_key.as_deref(), t.max_cost),
            &tenancy.home,
        )
        .await?;
    Ok((StatusCode::CREATED, Json(row)).into_response())
}

/// Templates in id order (keyset: after, limit).
#[utoipa::path(get, path = "/templates", operation_id = "list_templates", tag = "templates", security(("bearer" = [])),
    params(super::tools::ListQuery),
    responses((status = 200, description = "templates", body = Vec<TemplateDef>), BadUri, Guarded),
)]
pub(super) async fn list(
    State(st): State<AppState>,
    tenancy: Tenancy,
    q: Result<
        axum::extract::Query<super::tools::ListQuery>,
        axum::extract::rejection::QueryRejection,
    >,
) -> Result<Json<Vec<TemplateDef>>, ApiError> {
    let (after, limit) = super::input::query(q)?.checked()?;
    Ok(Json(
        st.store
            .list_templates(tenancy.filter(), after.as_deref(), limit)
            .await?,
    ))
}

/// One template.
#[utoipa::path(get, path = "/templates/{id}", operation_id = "get_template", tag = "templates", security(("bearer" = [])),
    params(super::tools::RegistryPath),
    responses((status = 200, description = "template", body = TemplateDef), Missing, BadUri, Guarded),
)]
pub(super) async fn get(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<TemplateDef>, ApiError> {
    Ok(Json(owned(&st, &tenancy, &id).await?))
}

/// Template `id`, if the caller's tenant sees it (404 otherwise).
async fn owned(st: &AppState, tenancy: &Tenancy, id: &str) -> Result<TemplateDef, ApiError> {
    let t = st.store.get_template(id).await?;
    tenancy.owns(&t.tenant, format_args!("template {id:?}"))?;
    Ok(t)
}

/// Delete a template (admin; tasks made from it keep their plans).
#[utoipa::path(delete, path = "/templates/{id}", operation_id = "delete_template", tag = "templates", security(("bearer" = [])),
    params(super::tools::RegistryPath),
    responses((status = 204, description = "deleted"), Missing, BadUri, Guarded),
)]
pub(super) async fn delete(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    owned(&st, &tenancy, &id).await?;
    st.store.delete_template(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Templates a request has read, by id (a batch reads each once).
pub(super) type Seen = std::collections::HashMap<String, TemplateDef>;

/// The plan of a submit that names template `id`: `input` (default `{}`) checked against the
/// template's `input_schema`, then put in its placeholders. Returns the plan and the template's
/// description, and its concurrency key filled from `input` and `metadata`.
pub(super) async fn instantiate(
    st: &AppState,
    tenancy: &Tenancy,
    seen: &mut Seen,
    id: &str,
    input: Option<Value>,
    metadata: &Value,
) -> Result<(PlanSpec, String, Option<String>), ApiError> {
    if !seen.contains_key(id) {
        let t = match owned(st, tenancy, id).await {
            Ok(t) => t,
            Err(e) if e.status == StatusCode::NOT_FOUND => {
                return Err(ApiError::validation(format!(
                    "template {id:?} is not registered"
                )));
            }
            Err(e) => return Err(e),
        };
        seen.insert(id.to_string(), t);
    }
    let t = &seen[id];
    let input = input.unwrap_or_else(|| json!({}));
    if !input.is_object() {
        return Err(ApiError::validation("input must be a JSON object"));
    }
    let violations = crate::domain::schema::violations(&t.input_schema, &input);
    if !violations.is_empty() {
        return Err(ApiError::validation(format!(
            "input does not match template {id:?}'s input_schema: {}",
            violations.join("; ")
        )));
    }
    let plan = template::instantiate(&t.plan, &input).map_err(ApiError::validation)?;
    let plan: PlanSpec = serde_json::from_value(plan)
        .map_err(|e| ApiError::validation(format!("template {id:?} with this input: plan: {e}")))?;
    let key = match &t.concurrency_key {
        Some(k) => Some(
            template::concurrency_key(k, &input, metadata)
                .map_err(|e| ApiError::validation(format!("template {id:?}: {e}")))?,
        ),
        None => None,
    };
    Ok((plan, t.description.clone(), key))
}
