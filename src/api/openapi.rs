//! The OpenAPI document, generated from the handlers' types (utoipa with utoipa-axum): every
//! handler carries `#[utoipa::path]` (its route, parameters, body and every status it answers),
//! every body and view derives `ToSchema`, and `routes` registers each handler in the router
//! and in the document at once, so a route cannot exist without its entry.
//!
//! Rules across fields (a submit names a plan or a template, not both; reserved step ids) are
//! stated in descriptions and answered with a documented 422: encoded as `anyOf` / `not` they
//! broke the common client generators ([`document`]). `docs/openapi.json` is the document a
//! server with a brain serves, written from this module (a test fails when it is out of date).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::{Value, json};
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{
    AdditionalProperties, AnyOfBuilder, Object, ObjectBuilder, Schema, SchemaFormat, SchemaType,
    Type,
};
use utoipa::openapi::{Content, KnownFormat, RefOr, Required};
use utoipa::{IntoParams, IntoResponses, OpenApi, PartialSchema, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{
    AppState, auth, bulk, events, key_limits, mcp_servers, prices, schedules, secrets, system,
    tasks, templates, tenants, tools, waits, webhooks,
};
use crate::domain::status::{StepStatus, TaskStatus};

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
        .routes(routes!(system::openapi))
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

// ---- statuses and shared schemas ------------------------------------------------------------

fn string_enum(values: impl IntoIterator<Item = &'static str>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values))
        .into()
}

impl PartialSchema for TaskStatus {
    fn schema() -> RefOr<Schema> {
        string_enum(TaskStatus::ALL.iter().map(|s| s.as_str()))
    }
}
impl ToSchema for TaskStatus {}

impl PartialSchema for StepStatus {
    fn schema() -> RefOr<Schema> {
        string_enum(StepStatus::ALL.iter().map(|s| s.as_str()))
    }
}
impl ToSchema for StepStatus {}

impl PartialSchema for crate::domain::status::AttemptStatus {
    fn schema() -> RefOr<Schema> {
        string_enum(Self::ALL.iter().map(|s| s.as_str()))
    }
}
impl ToSchema for crate::domain::status::AttemptStatus {}

/// A key's role, as `POST /keys` takes it.
pub(super) fn role() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(
            crate::domain::auth::Role::ALL.iter().map(|r| r.as_str()),
        ))
        .build()
}

fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

/// The empty string: a query parameter given with no value means "not given".
fn empty() -> Object {
    string().max_length(Some(0)).build()
}

/// `?status=` of `GET /tasks`: a task status, or empty for any.
pub(super) fn status_filter() -> Schema {
    AnyOfBuilder::new()
        .item(TaskStatus::schema())
        .item(empty())
        .build()
        .into()
}

/// `?before=` of `GET /tasks`: a task id, an RFC 3339 timestamp, or empty for none.
pub(super) fn before_cursor() -> Schema {
    AnyOfBuilder::new()
        .item(string().format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid))))
        .item(string().format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime))))
        .item(empty())
        .build()
        .into()
}

/// An RFC 3339 time, or empty for none.
pub(super) fn time_or_empty() -> Schema {
    AnyOfBuilder::new()
        .item(string().format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime))))
        .item(empty())
        .build()
        .into()
}

/// An event sequence number (`after`, `Last-Event-ID`): 0 up to the largest BIGINT.
pub(super) fn event_seq() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(0))
        .maximum(Some(i64::MAX))
        .build()
}

/// The `Last-Event-ID` header of `GET /tasks/{id}/events`.
pub(super) struct LastEventId;

impl IntoParams for LastEventId {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            ParameterBuilder::new()
                .name("Last-Event-ID")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(
                    "the last event seq the client saw (resuming a stream); the same as after",
                ))
                .schema(Some(event_seq()))
                .build(),
        ]
    }
}

/// The `tenant` query parameter of lists and stats: an admin's key reads that tenant's rows
/// (all tenants' without it); another key reads its own tenant's, whatever it asks. Read by
/// the key check, for every route.
pub(super) struct TenantParam;

impl IntoParams for TenantParam {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            ParameterBuilder::new()
                .name("tenant")
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some(
                    "an admin key: only this tenant's rows (default: every tenant's); other keys see their own tenant's only",
                ))
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .pattern(Some("^[A-Za-z0-9_.-]{1,64}$"))
                        .build(),
                ))
                .build(),
        ]
    }
}

/// A template's plan as `POST /templates` takes it: steps whose strings may hold
/// `${input.key}` placeholders, so only its outline is checked before instantiation.
pub(super) fn template_plan() -> Object {
    let step = ObjectBuilder::new()
        .schema_type(Type::Object)
        .required("id")
        .required("tool")
        .property("id", string().min_length(Some(1)))
        .property("tool", string().min_length(Some(1)))
        .additional_properties(Some(AdditionalProperties::FreeForm(true)));
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(
            "a plan whose strings may use ${input.key} / ${input.key.sub}",
        ))
        .required("steps")
        .property(
            "steps",
            utoipa::openapi::schema::ArrayBuilder::new()
                .items(step)
                .min_items(Some(1)),
        )
        .additional_properties(Some(AdditionalProperties::FreeForm(true)))
        .build()
}

/// A tool's kind.
pub(super) fn tool_kind() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(crate::domain::tool::ToolKind::NAMES))
        .build()
}

/// A tool's mode.
pub(super) fn tool_mode() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["sync", "async"]))
        .build()
}

/// A wait's kind.
pub(super) fn wait_kind() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(
            crate::domain::wait::WaitKind::ALL
                .iter()
                .map(|k| k.as_str()),
        ))
        .build()
}

/// A wait's status.
pub(super) fn wait_status() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(
            crate::domain::status::WaitStatus::ALL
                .iter()
                .map(|s| s.as_str()),
        ))
        .build()
}

/// A circuit breaker's state.
pub(super) fn circuit_state() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["closed", "open", "half_open"]))
        .build()
}

/// A JSON Schema given as a value: an object, a boolean, or null for none.
pub(super) fn optional_json_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([
            Type::Object,
            Type::Boolean,
            Type::Null,
        ]))
        .build()
}

/// A step's or an attempt's output: whatever JSON the tool answered (any value, or null when
/// there is none yet).
pub(super) fn any_output() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::AnyValue)
        .description(Some(
            "the tool's output: any JSON value (null while there is none)",
        ))
        .build()
}

// ---- error answers --------------------------------------------------------------------------

fn error(description: &str) -> RefOr<Response> {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            Content::new(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                "Error",
            )))),
        )
        .into()
}

macro_rules! error_answers {
    ($($(#[$m:meta])* $name:ident: $($code:literal => $text:literal),+;)+) => {$(
        $(#[$m])*
        pub(super) struct $name;

        impl IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                BTreeMap::from([$(($code.to_string(), error($text))),+])
            }
        }
    )+};
}

error_answers! {
    /// Every `/api/v1` route: the key check, and a database that cannot be reached.
    Guarded:
        "401" => "no API key, or one that is unknown or revoked",
        "403" => "the key's role does not allow this",
        "503" => "the database is not reachable";
    /// A route with a path or query: a malformed one (400), or a NUL character in it (422).
    BadUri:
        "400" => "a malformed path or query parameter",
        "422" => "a NUL character in the path or query";
    /// A route with a JSON body.
    BadBody:
        "400" => "malformed JSON",
        "413" => "the body is too large",
        "415" => "not Content-Type: application/json",
        "422" => "the body does not match its schema, or breaks a rule (the message names it)";
    /// A keyless route asked about one tenant (`?tenant=`): the key must see it.
    TenantScoped:
        "401" => "?tenant= without an API key, or with one that is unknown or revoked",
        "404" => "?tenant= names a tenant the key does not see";
    /// A route about one resource.
    Missing:
        "404" => "no such resource";
    /// A change the resource's state does not allow.
    Conflict:
        "409" => "the resource's state does not allow this (the message says why)";
    /// Readiness: the database is unreachable or not migrated.
    NotReady:
        "503" => "not ready: the database is unreachable or not migrated";
    /// An answer a read of live state may give when the database fails mid-way.
    Internal:
        "500" => "the server or the database failed";
}
