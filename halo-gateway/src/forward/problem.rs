//! The forwarder's own answers: problem documents (RFC 9457).

use axum::body::Body;
use axum::response::Response;
use halo_protocol::Problem;
use http::StatusCode;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};

/// A `status` answer whose problem document says `detail`.
pub(crate) fn answer(status: StatusCode, detail: impl Into<String>) -> Response {
    of(&Problem::new(status.as_u16()).with_detail(detail))
}

/// `problem` as the answer of its status (`502` when that is not an HTTP status).
pub(crate) fn of(problem: &Problem) -> Response {
    let mut response = Response::new(Body::from(problem.to_json()));
    *response.status_mut() = StatusCode::from_u16(problem.status)
        .ok()
        .filter(|status| status.is_client_error() || status.is_server_error())
        .unwrap_or(StatusCode::BAD_GATEWAY);
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("application/problem+json"),
    );
    headers.insert(CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    response
}
