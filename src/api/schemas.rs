//! The schemas and responses the resources share: statuses as named enumerations, the
//! parameters and error answers most routes declare (`BadBody`, `BadUri`, `Missing`, …), and
//! the schema functions fields name with `schema_with`. A leaf: it imports no other module of
//! the API, so every resource and `openapi` (which imports them all) can use it.

use std::collections::BTreeMap;

use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{
    AdditionalProperties, AnyOfBuilder, Object, ObjectBuilder, Schema, SchemaFormat, SchemaType,
    Type,
};
use utoipa::openapi::{Content, KnownFormat, RefOr, Required};
use utoipa::{IntoParams, IntoResponses, PartialSchema, ToSchema};

use crate::domain::status::{StepStatus, TaskStatus};

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
