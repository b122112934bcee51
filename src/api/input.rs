//! Hostile input: a NUL character anywhere in a body, a path or a query is a `422` naming where
//! it is (PostgreSQL cannot store it in text or jsonb, and it is never meaningful), checked
//! before a body is turned into its request type.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ApiError;
use crate::domain::nul::find_nul;

/// A JSON body, checked for NUL characters, as the request type `T`.
pub fn typed<T: DeserializeOwned>(v: Value) -> Result<T, ApiError> {
    if let Some(field) = find_nul(&v, "") {
        return Err(nul_in(&field));
    }
    // the error names the field it is about (`limits.task_timeout_secs: invalid type …`)
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if path == "." {
            format!("Failed to deserialize the JSON body into the target type: {inner}")
        } else {
            format!("Failed to deserialize the JSON body into the target type: {path}: {inner}")
        };
        ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            message,
        )
    })
}

/// A body that is present must say it is JSON (state-changing routes accept nothing else).
pub fn require_json(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let json = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|m| {
            let m = m.trim().to_ascii_lowercase();
            m == "application/json" || (m.starts_with("application/") && m.ends_with("+json"))
        })
        .unwrap_or(false);
    if json {
        Ok(())
    } else {
        Err(ApiError::new(
            axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "Expected request with `Content-Type: application/json`",
        ))
    }
}

/// `?limit=&offset=` of a per-task history list: at most [`MAX_PAGE`] rows a call.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// At most this many rows (default 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<i64>,
    /// Skip this many rows first.
    #[param(minimum = 0, maximum = 1000000)]
    offset: Option<i64>,
}

/// Most rows one call of a history list returns.
pub const MAX_PAGE: i64 = 1000;

impl PageQuery {
    pub fn page(&self) -> Result<crate::store::Page, ApiError> {
        let limit = self.limit.unwrap_or(MAX_PAGE);
        let offset = self.offset.unwrap_or(0);
        if !(1..=MAX_PAGE).contains(&limit) || !(0..=1_000_000).contains(&offset) {
            return Err(ApiError::bad_request(format!(
                "limit must be between 1 and {MAX_PAGE}, offset between 0 and 1000000"
            )));
        }
        Ok(crate::store::Page { limit, offset })
    }
}

/// A query string as `T`; a malformed one is a 400 that says why.
pub fn query<T: serde::de::DeserializeOwned>(
    q: Result<axum::extract::Query<T>, axum::extract::rejection::QueryRejection>,
) -> Result<T, ApiError> {
    q.map(|axum::extract::Query(v)| v)
        .map_err(|e| ApiError::bad_request(e.body_text()))
}

fn nul_in(field: &str) -> ApiError {
    ApiError::validation(format!(
        "{field} contains a NUL character (\\u0000), which is not allowed"
    ))
}

/// Middleware: a `%00` in the path or the query is a 422 naming it.
pub(super) async fn reject_nul_in_uri(req: Request, next: Next) -> Response {
    let uri = req.uri();
    if has_nul(uri.path()) {
        return nul_in("the path").into_response();
    }
    if let Some(q) = uri.query()
        && has_nul(q)
    {
        let name = q
            .split('&')
            .find(|pair| has_nul(pair))
            .map(|pair| pair.split('=').next().unwrap_or(""))
            .filter(|n| !has_nul(n) && !n.is_empty())
            .map(|n| format!("query parameter {n:?}"))
            .unwrap_or_else(|| "the query".into());
        return nul_in(&name).into_response();
    }
    next.run(req).await
}

/// A NUL can reach a URI only percent-encoded.
fn has_nul(s: &str) -> bool {
    s.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'%' && w[1] == b'0' && w[2] == b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_reaches_a_uri_only_percent_encoded() {
        assert!(has_nul("/api/v1/tools/a%00b") && !has_nul("/api/v1/tools/a%20b"));
    }
}
