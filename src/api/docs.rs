//! Swagger UI at `/docs`: the files of the `utoipa-swagger-ui` crate, vendored into the binary
//! when it is built (its `vendored` feature: nothing is downloaded, at build time or when a
//! browser opens the page), over the OpenAPI document that `/docs/openapi.json` serves.
//!
//! Like the UI, that copy of the document needs no key: it describes the API and holds no
//! data. Every call the UI's "Try it out" makes goes to `/api/v1` and needs a key, which the
//! UI's Authorize button takes (kept for the page only: `persistAuthorization` is off).

use std::sync::{Arc, LazyLock};

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use utoipa_swagger_ui::Config;

use super::ApiError;
use super::ApiPath;

/// The UI's settings (its `swagger-initializer.js`). The document's URL is relative to the
/// page, so the UI works behind a proxy that mounts Trellis under a prefix. No validator: the
/// stock UI would send the document to `validator.swagger.io` for a badge.
static CONFIG: LazyLock<Arc<Config<'static>>> = LazyLock::new(|| {
    Arc::new(
        Config::new(["./openapi.json"])
            .validator_url("none")
            .persist_authorization(false)
            .display_request_duration(true)
            .filter(true),
    )
});

/// `GET /docs`: the UI's files are addressed relative to `/docs/` (a relative redirect, so a
/// proxy that mounts Trellis under a prefix keeps it).
pub(super) async fn redirect() -> Redirect {
    Redirect::permanent("docs/")
}

/// `GET /docs/`: the UI's page.
pub(super) async fn index() -> Response {
    file("index.html")
}

/// `GET /docs/{file}`: one of the UI's files.
pub(super) async fn asset(ApiPath(name): ApiPath<String>) -> Response {
    file(&name)
}

fn file(name: &str) -> Response {
    match utoipa_swagger_ui::serve(name, CONFIG.clone()) {
        Ok(Some(f)) => {
            let mut res = (
                [
                    (header::CONTENT_TYPE, f.content_type),
                    (header::CACHE_CONTROL, "no-cache".to_string()),
                ],
                f.bytes.into_owned(),
            )
                .into_response();
            if f.gzpipped {
                res.headers_mut().insert(
                    header::CONTENT_ENCODING,
                    header::HeaderValue::from_static("gzip"),
                );
            }
            res
        }
        Ok(None) => ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such file in the API documentation",
        )
        .into_response(),
        Err(e) => {
            tracing::error!(error = %e, file = name, "the Swagger UI file could not be rendered");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "the API documentation page could not be rendered",
            )
            .into_response()
        }
    }
}
