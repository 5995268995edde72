//! The answers of the shared stores' refusals: a store that cannot be reached, and one
//! that holds as many idempotency records as it may.

use axum::response::Response;
use halo_govern::{Full, Unavailable, seconds_up};
use http::header::RETRY_AFTER;
use http::{HeaderValue, StatusCode};

use crate::problem;

/// `503` with `Retry-After` for a call refused because the store of `what` could not be
/// reached. It names no host, URL or credential.
pub(crate) fn unavailable(_: Unavailable, what: &str) -> Response {
    let mut response = problem::response(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "the shared store of {what} cannot be reached, so the request was not run; \
             send it again shortly"
        ),
    );
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// `429` (the caller's share) or `503` (the store's), with `Retry-After`, for a key that
/// does not fit among the kept idempotency records.
pub(crate) fn full(full: Full) -> Response {
    let (status, wait, detail) = match full {
        Full::Caller(wait) => (
            StatusCode::TOO_MANY_REQUESTS,
            wait,
            "this caller already has as many idempotency keys kept as it may, so the \
             request was not run; its oldest key expires in",
        ),
        Full::Store(wait) => (
            StatusCode::SERVICE_UNAVAILABLE,
            wait,
            "the server keeps as many idempotency records as it can, so the request was \
             not run; the oldest expires in",
        ),
    };
    let seconds = seconds_up(wait).max(1);
    let mut response = problem::response(
        status,
        format!("{detail} {seconds} s (a repeat of a key already kept is answered as usual)"),
    );
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    response
}
