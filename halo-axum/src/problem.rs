//! `application/problem+json` responses (RFC 9457): every error the layer answers itself.

use axum::body::Body;
use axum::response::Response;
use halo_protocol::{PROBLEM_MEDIA_TYPE, Problem};
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};

const PROBLEM_JSON: HeaderValue = HeaderValue::from_static(PROBLEM_MEDIA_TYPE);
const NO_STORE: HeaderValue = HeaderValue::from_static("no-store");

/// A problem response with `status` and `detail`.
pub(crate) fn response(status: StatusCode, detail: impl Into<String>) -> Response {
    from_problem(&Problem::new(status.as_u16()).with_detail(detail))
}

/// The response that carries `problem`, with its status.
pub(crate) fn from_problem(problem: &Problem) -> Response {
    with_body(problem.status, problem.to_json())
}

/// A problem response with `status` whose document, already serialised, is `json` (a
/// problem with extension members of its own).
pub(crate) fn with_body(status: u16, json: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(json));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, PROBLEM_JSON);
    headers.insert(CACHE_CONTROL, NO_STORE);
    response
}
