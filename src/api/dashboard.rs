//! The dashboard at `/`: one page of plain HTML, CSS and JavaScript (`src/api/dashboard/`),
//! compiled into the binary, so building needs no Node and serving fetches nothing from
//! elsewhere. It reads and acts only through `/api/v1` with the key it is given (kept in the
//! tab's session storage), so the API's role checks are the dashboard's: a `reader` key sees
//! no button it cannot use (`GET /api/v1/whoami`), and a request it could still craft is
//! refused by the API.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::ApiPath;
use super::{ApiError, AppState};

const INDEX: &str = include_str!("dashboard/index.html");
const APP_JS: &str = include_str!("dashboard/app.js");
const APP_CSS: &str = include_str!("dashboard/app.css");

/// Only this origin: scripts, styles and requests (`connect-src`) stay on the server.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

fn page(body: impl IntoResponse, content_type: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `GET /`: the page, told whether keys are checked (so it asks for one before any request).
pub(super) async fn index(State(st): State<AppState>) -> Response {
    let access = if st.auth.enabled { "on" } else { "off" };
    page(
        INDEX.replace("{{access_control}}", access),
        "text/html; charset=utf-8",
    )
}

/// `GET /ui/{file}`: its script and style sheet.
pub(super) async fn asset(ApiPath(name): ApiPath<String>) -> Response {
    match name.as_str() {
        "app.js" => page(APP_JS, "text/javascript; charset=utf-8"),
        "app.css" => page(APP_CSS, "text/css; charset=utf-8"),
        _ => ApiError::not_found(format!("no dashboard file {name:?}")).into_response(),
    }
}
