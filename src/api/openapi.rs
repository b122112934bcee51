//! The OpenAPI document, generated from the handlers' types (utoipa with utoipa-axum): every
//! handler carries `#[utoipa::path]` (its route, parameters, body and every status it answers),
//! every body and view derives `ToSchema`, and `routes` registers each handler in the router
//! and in the document at once, so a route cannot exist without its entry.
//!
//! Rules across fields (a submit names a plan or a template, not both; reserved step ids) are
//! stated in descriptions and answered with a documented 422: encoded as `anyOf` / `not` they
//! broke the common client generators ([`document`]). `docs/openapi.json` is the document a
//! server with a brain serves, written from this module (a test fails when it is out of date).

use std::sync::LazyLock;

use serde_json::{Value, json};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{
    AppState, agent, auth, bulk, events, key_limits, mcp_servers, prices, schedules, secrets,
    system, tasks, templates, tenants, tools, waits, webhooks,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Trellis",
        description = "Durable task orchestration on PostgreSQL. Errors are {\"error\": {\"code\", \"message\"}} with a 4xx/5xx status; invalid input changes nothing. Any text with a NUL character (\\u0000), in a body, a path or a query, is refused with a 422."
    ),
    tags(
        (name = "tasks", description = "Submit tasks, follow them (status, plan, attempts, events, reflections, evaluations) and act on them (cancel, resume, rerun)."),
        (name = "templates", description = "Workflow templates: parameterized plans a task is submitted from by id (registry writes need an admin key)."),
        (name = "tools", description = "The tool registry: built-in tools and HTTP tools, with their schemas and fleet-wide limits (writes need an admin key)."),
        (name = "waits", description = "Steps that wait: the approvals inbox, events that resolve wait_event steps, and async tools' callbacks (no API key: the token in the URL is the credential)."),
        (name = "schedules", description = "Cron schedules: a task per tick (a template with its input, or a plan), fired by any worker, one task per tick."),
        (name = "webhooks", description = "Subscriptions to task events (admin), delivered at least once, in order per task, signed the Standard Webhooks way; their delivery logs and redelivery."),
        (name = "secrets", description = "Tool credentials (admin): write-only values, sealed at rest, named by tools' headers as ${secret.NAME}."),
        (name = "fairness", description = "Concurrency keys (admin): each key pattern's weight, its share of the claim within a priority."),
        (name = "keys", description = "API keys and their roles (admin only), and the role of the key presented."),
        (name = "system", description = "Statistics, the worker fleet, this document, health, readiness and Prometheus metrics."),
    ),
    components(schemas(super::error::ErrorBody)),
    modifiers(&BearerKey),
)]
struct ApiDoc;

/// The `bearer` security scheme every `/api/v1` operation names.
struct BearerKey;

impl utoipa::Modify for BearerKey {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some(
                "An API key (CONTRACT.md \"Access control\"): admin, operator or reader.",
            ))
            .build();
        doc.components
            .get_or_insert_with(Default::default)
            .add_security_scheme("bearer", SecurityScheme::Http(scheme));
    }
}

/// Every documented route: those under `/api/v1` (the caller puts the key check on them) and
/// those at the root. The router and the document both come from here.
pub(super) fn routes() -> (OpenApiRouter<AppState>, OpenApiRouter<AppState>) {
    use axum::extract::DefaultBodyLimit;
    let (schemas, paths, batch) = routes!(tasks::submit_batch);
    let batch = batch.layer(DefaultBodyLimit::max(super::MAX_BATCH_BODY_BYTES));
    let v1 = OpenApiRouter::new()
        .routes(routes!(tasks::submit, tasks::list))
        .routes((schemas, paths, batch))
        .routes(routes!(tasks::get))
        .routes(routes!(tasks::result))
        .routes(routes!(tasks::plan))
        .routes(routes!(tasks::attempts))
        .routes(routes!(events::list_or_stream))
        .routes(routes!(tasks::cancel))
        .routes(routes!(tasks::reschedule))
        .routes(routes!(tasks::resume))
        .routes(routes!(tasks::rerun))
        .routes(routes!(tasks::reflections))
        .routes(routes!(tasks::evaluations))
        .routes(routes!(agent::turns))
        .routes(routes!(tools::create, tools::list))
        .routes(routes!(tools::get, tools::delete))
        .routes(routes!(tools::pause))
        .routes(routes!(tools::resume))
        .routes(routes!(templates::create, templates::list))
        .routes(routes!(templates::get, templates::delete))
        .routes(routes!(system::stats))
        .routes(routes!(system::recovery_stats))
        .routes(routes!(system::activity))
        .routes(routes!(system::workers))
        .routes(routes!(auth::create, auth::list))
        .routes(routes!(auth::revoke))
        .routes(routes!(auth::whoami))
        .routes(routes!(serve))
        .routes(routes!(schedules::create, schedules::list))
        .routes(routes!(
            schedules::get,
            schedules::update,
            schedules::delete
        ))
        .routes(routes!(schedules::trigger))
        .routes(routes!(webhooks::create, webhooks::list))
        .routes(routes!(webhooks::delete))
        .routes(routes!(webhooks::deliveries))
        .routes(routes!(webhooks::redeliver))
        .routes(routes!(mcp_servers::create, mcp_servers::list))
        .routes(routes!(mcp_servers::delete))
        .routes(routes!(mcp_servers::refresh))
        .routes(routes!(secrets::list))
        .routes(routes!(secrets::put, secrets::delete))
        .routes(routes!(key_limits::list))
        .routes(routes!(key_limits::put, key_limits::delete))
        .routes(routes!(prices::put, prices::list))
        .routes(routes!(bulk::create, bulk::list))
        .routes(routes!(bulk::get))
        .routes(routes!(bulk::abort))
        .routes(routes!(tenants::list))
        .routes(routes!(tenants::put, tenants::delete))
        .routes(routes!(waits::list))
        .routes(routes!(waits::get))
        .routes(routes!(waits::approve))
        .routes(routes!(waits::reject))
        .routes(routes!(waits::post_event));
    let root = OpenApiRouter::new()
        .routes(routes!(system::health))
        .routes(routes!(system::ready))
        .routes(routes!(system::metrics))
        .routes(routes!(waits::complete))
        .routes(routes!(waits::fail))
        .routes(routes!(waits::heartbeat));
    (v1, root)
}

/// Put the two halves of [`routes`] together under the document's header.
pub(super) fn assemble(
    v1: OpenApiRouter<AppState>,
    root: OpenApiRouter<AppState>,
) -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .nest("/api/v1", v1)
        .merge(root)
}

/// The served document. Generated from the handlers' types, then made plain for client
/// generators (`for_generators`): rules across fields (a plan or a template, not both; a
/// plan without a planning brain) are stated in descriptions and answered with a documented
/// 422, never encoded as `anyOf` / `not`, which the common generators turn into broken or
/// duplicate models. `with_planner` only changes the submit body's description.
pub fn document(with_planner: bool) -> &'static str {
    static DOCS: LazyLock<[String; 2]> = LazyLock::new(|| {
        let (v1, root) = routes();
        let doc = assemble(v1, root).into_openapi();
        let mut doc = serde_json::to_value(doc).expect("the document serializes");
        for_generators(&mut doc);
        let with = serde_json::to_string_pretty(&doc).expect("JSON") + "\n";
        let submit = &mut doc["components"]["schemas"]["SubmitTask"]["description"];
        *submit = json!(format!(
            "{} This server has no planning brain: a task needs a plan or a template (a description alone is a 422 plan_required).",
            submit.as_str().unwrap_or_default()
        ));
        [with, doc.to_string()]
    });
    &DOCS[usize::from(!with_planner)]
}

/// Enumerations that get a name of their own (a component), by their values.
const NAMED_ENUMS: &[(&str, &[&str])] = &[
    ("Role", &["admin", "operator", "reader"]),
    ("ScheduleOverlap", &["allow", "skip"]),
    ("ToolMode", &["sync", "async"]),
    ("ToolKind", &crate::domain::tool::ToolKind::NAMES),
    ("CircuitState", &["closed", "open", "half_open"]),
    ("WaitKind", &crate::domain::wait::WaitKind::NAMES),
    ("WaitStatus", &["open", "resolved", "expired", "cancelled"]),
    ("DeliveryStatus", &["pending", "delivered", "dead"]),
];

/// What the common generators (openapi-python-client, openapi-typescript) need: every
/// free-form object says that its values may be anything (`additionalProperties: true`, else
/// openapi-typescript types it `Record<string, never>`), every enumeration is a named component
/// (else each property gets a model of its own), and the submit body's description states the
/// rules across its fields.
fn for_generators(doc: &mut Value) {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                let is_object = match m.get("type") {
                    Some(Value::String(t)) => t == "object",
                    Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
                    _ => false,
                };
                let shaped = [
                    "properties",
                    "additionalProperties",
                    "$ref",
                    "allOf",
                    "oneOf",
                    "anyOf",
                ]
                .iter()
                .any(|k| m.contains_key(*k));
                if is_object && !shaped {
                    m.insert("additionalProperties".into(), json!(true));
                }
                let named = m.get("enum").and_then(Value::as_array).and_then(|values| {
                    NAMED_ENUMS.iter().find(|(_, known)| {
                        values.len() == known.len()
                            && values.iter().zip(known.iter()).all(|(a, b)| a == b)
                    })
                });
                if let Some((name, _)) = named
                    && m.get("type") == Some(&json!("string"))
                {
                    m.remove("enum");
                    m.remove("type");
                    m.insert("$ref".into(), json!(format!("#/components/schemas/{name}")));
                }
                for child in m.values_mut() {
                    walk(child);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(doc);
    let schemas = &mut doc["components"]["schemas"];
    for (name, values) in NAMED_ENUMS {
        schemas[*name] = json!({"type": "string", "enum": values});
    }
    let reserved = crate::domain::plan::RESERVED_STEP_IDS.join(", ");
    let step_id = &mut schemas["Step"]["properties"]["id"]["description"];
    *step_id = json!(format!("The step's id in its plan; not one of {reserved}."));
    let submit = &mut schemas["SubmitTask"]["description"];
    *submit = json!(
        "A task: a plan, or a template with its input (not both), or — with a planning brain configured — a description alone. A body that breaks one of these rules is a 422 naming it."
    );
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", operation_id = "openapi", tag = "system", security(("bearer" = [])),
    responses((status = 200, description = "the OpenAPI 3.1 document", body = Object), super::schemas::Guarded),
)]
pub(super) async fn serve(
    axum::extract::State(st): axum::extract::State<AppState>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let doc = document(st.settings.llm.enabled());
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        doc,
    )
        .into_response()
}
