//! `resilience.timeout_ms`: the handler's answer, or `504` when the tool's deadline passes
//! first (the handler is dropped).

use std::future::Future;
use std::time::Duration;

use axum::response::Response;
use futures_util::FutureExt as _;
use futures_util::future::Either;
use http::StatusCode;

use crate::audit::Outcome;
use crate::problem;

/// The handler's answer, or `504` when `deadline` passes first. Not an `async fn`: one
/// holding both ways of awaiting `running` would keep room for it twice.
pub(crate) fn within<F, E>(
    deadline: Option<Duration>,
    running: F,
) -> impl Future<Output = Result<Response, E>>
where
    F: Future<Output = Result<Response, E>>,
{
    match deadline {
        None => Either::Right(running),
        Some(limit) => Either::Left(
            tokio::time::timeout(limit, running)
                .map(move |answer| answer.unwrap_or_else(|_| Ok(timed_out(limit)))),
        ),
    }
}

/// What the audit trail says of a call the handler ran: timed out when the answer is the
/// layer's own `504`.
pub(crate) fn outcome<E>(answer: &Result<Response, E>) -> Outcome {
    match answer {
        Ok(response) if response.extensions().get::<DeadlinePassed>().is_some() => {
            Outcome::TimedOut
        }
        _ => Outcome::Executed,
    }
}

/// Marks the layer's own `504`, for the audit trail.
#[derive(Debug, Clone, Copy)]
struct DeadlinePassed;

/// `504` for a handler that did not answer within `limit`.
fn timed_out(limit: Duration) -> Response {
    let mut response = problem::response(
        StatusCode::GATEWAY_TIMEOUT,
        format!(
            "the operation did not answer within its deadline of {} ms",
            limit.as_millis()
        ),
    );
    response.extensions_mut().insert(DeadlinePassed);
    response
}
