//! API errors: `{"error": {"code", "message"}}` with a 4xx/5xx status. SQL text never leaks.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::domain::plan::PlanError;
use crate::store::StoreError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_error",
            message,
        )
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }
}

/// The body of every error answer.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
pub struct ErrorBody {
    #[schema(inline)]
    pub error: ErrorDetail,
}

/// What went wrong: a stable `code` (CONTRACT.md) and a message for people.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    pub code: &'static str,
    pub message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
            },
        };
        (self.status, Json(body)).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => Self::not_found(format!("{what} not found")),
            StoreError::Conflict(m) => Self::new(StatusCode::CONFLICT, "conflict", m),
            StoreError::Rejected(m) => Self::validation(m),
            StoreError::Fenced => Self::new(StatusCode::CONFLICT, "conflict", e.to_string()),
            StoreError::Db(err) => {
                tracing::error!(error = %err, "database error");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "database_unavailable",
                    "the database could not complete the request; try again",
                )
            }
            StoreError::Corrupt(_) | StoreError::Migrate(_) | StoreError::Schema(_) => {
                tracing::error!(error = %e, "internal error");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "internal error",
                )
            }
        }
    }
}

impl From<PlanError> for ApiError {
    fn from(e: PlanError) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_plan", e.message)
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let status = r.status();
        let code = match &r {
            JsonRejection::JsonDataError(_) => "invalid_body",
            JsonRejection::JsonSyntaxError(_) => "malformed_json",
            JsonRejection::MissingJsonContentType(_) => "unsupported_media_type",
            _ if status == StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            _ => "bad_request",
        };
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!(
                "request body is larger than {} bytes",
                super::MAX_BODY_BYTES
            )
        } else {
            r.body_text()
        };
        Self::new(status, code, message)
    }
}
