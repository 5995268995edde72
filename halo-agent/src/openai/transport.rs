//! The HTTP transport under async-openai: one request's attempts, on halo-protocol's
//! [`RetrySchedule`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use futures_util::FutureExt as _;
use halo_protocol::RetrySchedule;
use http::StatusCode;
use reqwest::header::AUTHORIZATION;

use crate::endpoint::retry_after;

/// The HTTP transport under async-openai: sends each request, and tries again after `429`,
/// `5xx`, a timeout or a failed connection, with exponential backoff and full jitter,
/// never sooner than `Retry-After`.
#[derive(Clone)]
pub(super) struct Transport {
    http: reqwest::Client,
    retry: RetrySchedule,
    /// The bound on one attempt, up to the answer's head.
    timeout: Option<Duration>,
    /// Whether an API key was given (else the empty `Authorization` is removed).
    authorized: bool,
}

/// An attempt that got no answer in time.
#[derive(Debug)]
pub(super) struct TimedOut(Duration);

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the model did not answer within {} ms",
            self.0.as_millis()
        )
    }
}

impl std::error::Error for TimedOut {}

/// How one attempt ended, before the decision to try again.
enum Attempt {
    /// An answer to hand on as it is.
    Answered(reqwest::Response),
    /// An answer worth another attempt (`429`, `5xx`), with its `Retry-After`.
    Status(reqwest::Response, Option<Duration>),
    /// No answer (a timeout, a failed connection); worth another attempt.
    Failed(OpenAIError),
}

impl Transport {
    /// A transport on `http`: `timeout` bounds each attempt up to the answer's head;
    /// without an API key (`authorized` false) the empty `Authorization` is removed.
    pub(super) fn new(
        http: reqwest::Client,
        retry: RetrySchedule,
        timeout: Option<Duration>,
        authorized: bool,
    ) -> Self {
        Self {
            http,
            retry,
            timeout,
            authorized,
        }
    }

    async fn send(self, factory: HttpRequestFactory) -> Result<reqwest::Response, OpenAIError> {
        let mut delays = self.retry.delays();
        loop {
            let attempt = self.attempt(&factory).await?;
            let (retry_after, reason) = match &attempt {
                Attempt::Answered(_) => (None, String::new()),
                Attempt::Status(response, retry_after) => {
                    (*retry_after, response.status().to_string())
                }
                Attempt::Failed(error) => (None, error.to_string()),
            };
            let delay = match attempt {
                Attempt::Answered(_) => None,
                _ => delays.next_delay(retry_after),
            };
            let Some(delay) = delay else {
                return match attempt {
                    Attempt::Answered(response) | Attempt::Status(response, _) => Ok(response),
                    Attempt::Failed(error) => Err(error),
                };
            };
            tracing::warn!(
                target: "halo_agent::openai",
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                %reason,
                "retrying the model request"
            );
            tokio::time::sleep(delay).await;
        }
    }

    /// One attempt: an answer, or a failure that may be worth another attempt.
    async fn attempt(&self, factory: &HttpRequestFactory) -> Result<Attempt, OpenAIError> {
        let mut request = factory.build().await?;
        if !self.authorized {
            request.headers_mut().remove(AUTHORIZATION);
        }
        let sent = self.http.execute(request);
        let outcome = match self.timeout {
            Some(limit) => match tokio::time::timeout(limit, sent).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    return Ok(Attempt::Failed(OpenAIError::Boxed(Box::new(TimedOut(
                        limit,
                    )))));
                }
            },
            None => sent.await,
        };
        let response = match outcome {
            Ok(response) => response,
            Err(error) if error.is_connect() || error.is_timeout() => {
                return Ok(Attempt::Failed(OpenAIError::Reqwest(error)));
            }
            Err(error) => return Err(OpenAIError::Reqwest(error)),
        };
        let status = response.status();
        if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
            return Ok(Attempt::Answered(response));
        }
        let retry_after = retry_after(response.headers());
        if status != StatusCode::TOO_MANY_REQUESTS {
            return Ok(Attempt::Status(response, retry_after));
        }
        // A spent quota is a 429 too, and waiting does not help it: read the body to tell,
        // and hand on a response rebuilt from it.
        let headers = response.headers().clone();
        let bytes = response.bytes().await.map_err(OpenAIError::Reqwest)?;
        let quota = String::from_utf8_lossy(&bytes).contains("insufficient_quota");
        let mut rebuilt = http::Response::new(bytes);
        *rebuilt.status_mut() = status;
        *rebuilt.headers_mut() = headers;
        let rebuilt = reqwest::Response::from(rebuilt);
        Ok(if quota {
            Attempt::Answered(rebuilt)
        } else {
            Attempt::Status(rebuilt, retry_after)
        })
    }
}

impl tower_service::Service<HttpRequestFactory> for Transport {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        self.clone().send(factory).boxed()
    }
}
