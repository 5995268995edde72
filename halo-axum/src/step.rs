//! What each step of a call's path gives back: the value to go on with, or a [`Stop`]: the
//! answer to send instead of running the handler, and what the audit trail says of it.

use axum::response::Response;
use http::{HeaderName, HeaderValue};

use crate::audit::Outcome;

/// Go on with `T`, or stop.
pub(crate) type Step<T> = Result<T, Stop>;

/// The answer a step sends instead of going on (boxed: refusals are the rare path, and a
/// `Response` is large).
#[derive(Debug)]
pub(crate) struct Stop(Box<(Response, Outcome)>);

impl Stop {
    pub(crate) fn new(outcome: Outcome, response: Response) -> Self {
        Self(Box::new((response, outcome)))
    }

    /// Adds `headers` to the answer (those a step before said every answer carries).
    pub(crate) fn with_headers(mut self, headers: &[(HeaderName, HeaderValue)]) -> Self {
        self.0.0.headers_mut().extend(headers.iter().cloned());
        self
    }

    pub(crate) fn into_parts(self) -> (Response, Outcome) {
        *self.0
    }

    pub(crate) fn into_response(self) -> Response {
        self.0.0
    }
}
