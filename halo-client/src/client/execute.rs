//! A request under its retry policy, the client's timeout and its host's circuit breaker,
//! and its answer read.

use super::{Client, Prepared};
use crate::breaker::{Pass, Verdict};
use crate::retry::Failure;
use crate::{Error, Result, ToolResponse};

impl Client {
    /// Sends a request as [`fetch`](Self::fetch) does; a call held for approval (`202` with
    /// its `Location`) is waited for, and answers as the call does once it ran
    /// ([`crate::approval`]).
    pub(super) async fn execute(&self, request: &Prepared) -> Result<ToolResponse> {
        let response = self.fetch(request).await?;
        self.settle(request, response).await
    }

    /// Sends a request under its retry policy, through its host's circuit breaker (the
    /// call's verdict counts once, after its retries); a 4xx or 5xx answer becomes an error
    /// that keeps the response and names the request (`POST /api/orders`).
    pub(crate) async fn fetch(&self, request: &Prepared) -> Result<ToolResponse> {
        let what = request.label();
        let pass = self.pass();
        let outcome = request
            .policy
            .run(request.safe, &what, || {
                self.timed(self.attempt(request, &pass))
            })
            .await;
        pass.finish(&request.url, Verdict::of(&outcome));
        let response =
            outcome.map_err(|failure| failure.into_error().with_context(what.to_string()))?;
        checked(response, &what)
    }

    /// An attempt under the client's timeout. One timer around the whole attempt costs less
    /// than reqwest's own (a boxed timer for the headers and another for the body); for an
    /// event stream it ends with the answer's head, so that it never cuts a long stream.
    pub(crate) async fn timed<T>(
        &self,
        attempt: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        match self.inner.timeout {
            Some(limit) => tokio::time::timeout(limit, attempt)
                .await
                .unwrap_or(Err(Failure::TimedOut)),
            None => attempt.await,
        }
    }

    /// One attempt: send, follow redirects, read the body.
    async fn attempt(&self, request: &Prepared, pass: &Pass<'_>) -> Result<ToolResponse, Failure> {
        read(self.send(request, pass).await?).await
    }
}

/// Reads an answer's body; a status worth retrying is a failure for the policy to judge.
pub(crate) async fn read(mut response: reqwest::Response) -> Result<ToolResponse, Failure> {
    let status = response.status();
    let headers = std::mem::take(response.headers_mut());
    let bytes = response.bytes().await.map_err(Failure::Transport)?;
    let response = ToolResponse::new(status, headers, &bytes);
    if Failure::is_retryable_status(status) {
        return Err(Failure::status(response));
    }
    Ok(response)
}

/// A 4xx or 5xx answer as an error naming the request.
pub(crate) fn checked(
    response: ToolResponse,
    what: &impl std::fmt::Display,
) -> Result<ToolResponse> {
    if response.status().is_client_error() || response.status().is_server_error() {
        return Err(Error::from_response(response).with_context(what.to_string()));
    }
    Ok(response)
}
