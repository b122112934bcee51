//! Access control: `Authorization: Bearer <key>` on every `/api/v1` route, the role each call
//! needs ([`required_role`]), and the keys API. Only digests of keys are kept: the bootstrap
//! admin key's in memory, the others' in `api_keys`, looked up per request so that a
//! revocation holds at once on every API process.

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::schemas::{BadBody, BadUri, Guarded, Missing};
use super::views::{KeyView, WhoAmI};
use super::{ApiError, ApiJson, AppState, views};
use crate::domain::auth::{Role, required_role};
use crate::domain::tenant::{self, Scope};
use crate::store::keys::NewKey;

/// How the API authenticates callers.
#[derive(Clone)]
pub struct Auth {
    pub(super) enabled: bool,
    bootstrap: Option<[u8; 32]>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("enabled", &self.enabled)
            .field("bootstrap", &self.bootstrap.map(|_| "[digest]"))
            .finish()
    }
}

impl Auth {
    pub fn from_settings(s: &crate::config::AuthSettings) -> Self {
        Self {
            enabled: !s.disabled,
            bootstrap: s.bootstrap_admin_key.as_deref().map(|k| digest(k.trim())),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }
}

/// The key of an `Authorization: Bearer <key>` header, if one is presented.
pub(super) fn bearer(headers: &header::HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, key) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| key.trim())
        })
        .filter(|k| !k.is_empty())
}

/// A keyless route's caller that presents a key anyway: its tenant, unless the key is an
/// admin's (or unknown: the route needs none). What it names must be its tenant's.
pub(super) async fn presented_tenant(
    st: &AppState,
    headers: &header::HeaderMap,
) -> Result<Option<String>, ApiError> {
    let Some(key) = bearer(headers) else {
        return Ok(None);
    };
    let d = digest(key);
    if st.auth.bootstrap == Some(d) {
        return Ok(None);
    }
    Ok(match st.store.key_identity(&d).await? {
        Some((_, role, tenant)) if role != Role::Admin => Some(tenant),
        _ => None,
    })
}

/// A keyless route asked about one tenant (`/metrics?tenant=`): the caller's key must see
/// it. A 401 without a live key; a 404 for a key of another tenant (that tenant is not there
/// for it). An admin's key sees every tenant; with access control off, anyone does.
pub(super) async fn sees_tenant(
    st: &AppState,
    headers: &header::HeaderMap,
    asked: &str,
) -> Result<(), Response> {
    if !st.auth.enabled {
        return Ok(());
    }
    let Some(key) = bearer(headers) else {
        return Err(unauthorized(
            "?tenant= needs an API key that sees the tenant: Authorization: Bearer <key>",
        ));
    };
    let d = digest(key);
    if st.auth.bootstrap == Some(d) {
        return Ok(());
    }
    match st.store.key_identity(&d).await {
        Err(e) => Err(ApiError::from(e).into_response()),
        Ok(None) => Err(unauthorized("unknown or revoked API key")),
        Ok(Some((_, role, tenant))) if role == Role::Admin || tenant == asked => Ok(()),
        Ok(Some(_)) => {
            Err(ApiError::not_found(format!("tenant {asked:?} not found")).into_response())
        }
    }
}

/// SHA-256 of a key: what is stored and compared.
pub fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// A fresh key: `trk_` and 64 hex digits (244 random bits from two v4 UUIDs).
fn new_key() -> String {
    let a = uuid::Uuid::new_v4();
    let b = uuid::Uuid::new_v4();
    format!("trk_{}{}", a.simple(), b.simple())
}

fn unauthorized(message: &str) -> Response {
    let mut r = ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).into_response();
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    r
}

/// The caller's role, as the middleware found it (handlers may read it from the extensions).
#[derive(Debug, Clone, Copy)]
pub struct Caller(pub Role);

/// The id of the caller's API key (none: access control is off, or the bootstrap key).
#[derive(Debug, Clone, Copy)]
pub struct CallerKey(pub Option<uuid::Uuid>);

/// The caller's tenant: where what it creates goes (`home`), and whose rows it sees (`scope`).
/// A reader's or operator's key sees its own tenant's only; an admin's sees every tenant's,
/// or with `?tenant=` that one's (and then creates there).
#[derive(Debug, Clone)]
pub struct Tenancy {
    pub home: String,
    pub scope: Scope,
    /// An admin's key (it reads across tenants).
    pub admin: bool,
}

impl Tenancy {
    /// The tenant to filter reads by (none: every tenant).
    pub fn filter(&self) -> Option<&str> {
        self.scope.filter()
    }

    /// 404 unless a row of `tenant` is visible to the caller (`what`: as in "task 0196…").
    pub fn owns(&self, tenant: &str, what: impl std::fmt::Display) -> Result<(), ApiError> {
        if self.scope.sees(tenant) {
            Ok(())
        } else {
            Err(ApiError::not_found(format!("{what} not found")))
        }
    }

    /// The caller's tenancy for a key of `role` and `tenant`, asked with `query` (the URI's).
    fn of(role: Role, tenant: &str, query: Option<&str>) -> Result<Self, ApiError> {
        let asked = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .find(|(k, _)| k == "tenant")
            .map(|(_, v)| v.into_owned());
        if let Some(t) = &asked {
            crate::domain::tenant::check(t).map_err(ApiError::bad_request)?;
        }
        match asked {
            Some(t) if role == Role::Admin => Ok(Self {
                home: t.clone(),
                scope: Scope::One(t),
                admin: true,
            }),
            None if role == Role::Admin => Ok(Self {
                home: tenant.to_owned(),
                scope: Scope::All,
                admin: true,
            }),
            // another tenant's rows are not this key's to ask for: its own, whatever it asks
            _ => Ok(Self {
                home: tenant.to_owned(),
                scope: Scope::One(tenant.to_owned()),
                admin: false,
            }),
        }
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Tenancy {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Tenancy>().cloned().ok_or_else(|| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "internal error: the route is outside the key check",
            )
        })
    }
}

/// Middleware over `/mcp`: 401 without a live key (any role may open a session and list
/// tools; each tool call is the REST call it stands for, checked there).
pub(super) async fn require_any_key(st: State<AppState>, req: Request, next: Next) -> Response {
    check_key(st, req, next, Some(Role::Reader)).await
}

/// Middleware over `/api/v1`: 401 without a live key, 403 when its role may not make the call.
pub(super) async fn require_key(st: State<AppState>, req: Request, next: Next) -> Response {
    check_key(st, req, next, None).await
}

/// The key check; `needed` (default: what the route needs, [`required_role`]).
async fn check_key(
    State(st): State<AppState>,
    mut req: Request,
    next: Next,
    needed: Option<Role>,
) -> Response {
    if !st.auth.enabled {
        return match Tenancy::of(Role::Admin, tenant::DEFAULT, req.uri().query()) {
            Ok(t) => {
                req.extensions_mut().insert(Caller(Role::Admin));
                req.extensions_mut().insert(CallerKey(None));
                req.extensions_mut().insert(t);
                next.run(req).await
            }
            Err(e) => e.into_response(),
        };
    }
    let Some(key) = bearer(req.headers()) else {
        return unauthorized("this route needs an API key: Authorization: Bearer <key>");
    };
    let d = digest(key);
    let identity = if st.auth.bootstrap == Some(d) {
        Some((None, Role::Admin, tenant::DEFAULT.to_owned()))
    } else {
        match st.store.key_identity(&d).await {
            Ok(r) => r.map(|(id, role, t)| (Some(id), role, t)),
            Err(e) => return ApiError::from(e).into_response(),
        }
    };
    let Some((key_id, role, key_tenant)) = identity else {
        return unauthorized("unknown or revoked API key");
    };
    let needed = needed.unwrap_or_else(|| required_role(req.method().as_str(), req.uri().path()));
    if !role.allows(needed) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("a {role} key may not do this; it needs a {needed} key"),
        )
        .into_response();
    }
    let tenancy = match Tenancy::of(role, &key_tenant, req.uri().query()) {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    req.extensions_mut().insert(Caller(role));
    req.extensions_mut().insert(CallerKey(key_id));
    req.extensions_mut().insert(tenancy);
    next.run(req).await
}

/// `POST /keys`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"name": "ci pipeline", "role": "operator"})))]
pub(super) struct KeyInput {
    #[schema(min_length = 1, max_length = 200)]
    name: String,
    #[schema(schema_with = super::schemas::role)]
    role: String,
    /// The tenant the key belongs to (default: the caller's, or `?tenant=`'s); its calls see
    /// that tenant's rows only, unless it is an admin's.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,64}$")]
    tenant: Option<String>,
}

/// Create an API key (admin); the key is shown in this answer only.
#[utoipa::path(post, path = "/keys", operation_id = "create_key", tag = "keys", security(("bearer" = [])),
    request_body = KeyInput,
    responses(
        (status = 201, description = "created", body = KeyView, links(
            ("revoke" = (operation_id = "revoke_key", parameters(("id" = "$response.body#/id")))),
        )),
        BadBody, Guarded,
    ),
)]
pub(super) async fn create(
    State(st): State<AppState>,
    tenancy: Tenancy,
    ApiJson(k): ApiJson<KeyInput>,
) -> Result<Response, ApiError> {
    // the length as sent (the document's maxLength), then what is left once trimmed
    let name = k.name.trim();
    if name.is_empty() || k.name.chars().count() > 200 {
        return Err(ApiError::validation("name must be 1 to 200 characters"));
    }
    let role: Role = k.role.parse().map_err(ApiError::validation)?;
    let tenant = k.tenant.unwrap_or(tenancy.home);
    tenant::check(&tenant).map_err(ApiError::validation)?;
    let key = new_key();
    let d = digest(&key);
    let row = st
        .store
        .create_key(&NewKey {
            name,
            role,
            digest: &d,
            key_prefix: &key[..12],
            tenant: &tenant,
        })
        .await?;
    let mut v = views::key(&row);
    v.key = Some(key);
    Ok((StatusCode::CREATED, Json(v)).into_response())
}

/// Every key, revoked ones included (admin); never the key itself.
#[utoipa::path(get, path = "/keys", operation_id = "list_keys", tag = "keys", security(("bearer" = [])),
    responses((status = 200, description = "keys", body = Vec<KeyView>), Guarded),
)]
pub(super) async fn list(
    State(st): State<AppState>,
    tenancy: Tenancy,
) -> Result<Json<Vec<KeyView>>, ApiError> {
    Ok(Json(
        st.store
            .list_keys(tenancy.filter())
            .await?
            .iter()
            .map(views::key)
            .collect(),
    ))
}

/// Revoke a key (admin), at once on every API process.
#[utoipa::path(delete, path = "/keys/{id}", operation_id = "revoke_key", tag = "keys", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "a key id")),
    responses((status = 204, description = "revoked"), Missing, BadUri, Guarded),
)]
pub(super) async fn revoke(
    State(st): State<AppState>,
    super::ApiPath(raw): super::ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    let id = uuid::Uuid::parse_str(&raw)
        .map_err(|_| ApiError::bad_request(format!("{raw:?} is not a key id (UUID)")))?;
    st.store.revoke_key(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The caller's role.
#[utoipa::path(get, path = "/whoami", operation_id = "whoami", tag = "keys", security(("bearer" = [])),
    responses((status = 200, description = "the key's role", body = WhoAmI), Guarded),
)]
pub(super) async fn whoami(
    State(st): State<AppState>,
    axum::Extension(Caller(role)): axum::Extension<Caller>,
    tenancy: Tenancy,
) -> axum::Json<WhoAmI> {
    axum::Json(WhoAmI {
        role: role.as_str(),
        access_control: st.auth.enabled,
        tenant: tenancy.home,
    })
}
