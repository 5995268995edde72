//! The HTTP side of [`AnthropicProvider`](super::AnthropicProvider): one request's attempts,
//! on halo-protocol's [`RetrySchedule`], and an error answer read into an [`Error`].

use std::time::Duration;

use futures_util::StreamExt as _;
use halo_protocol::RetrySchedule;
use http::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::endpoint::{retry_after, shorten, transport_error};
use crate::{Error, Result};

/// The most of an error answer's body read, in bytes.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Sends a request to the Messages endpoint, and tries again after `429`, `5xx` (`529`,
/// overloaded, among them), a timeout or a failed connection, with exponential backoff and
/// full jitter, never sooner than `Retry-After`. (No `Debug`: it holds the API key.)
pub(super) struct Transport {
    pub(super) http: reqwest::Client,
    pub(super) url: reqwest::Url,
    /// The headers of every request, the API key marked sensitive.
    pub(super) headers: HeaderMap,
    pub(super) retry: RetrySchedule,
    /// The bound on one attempt, up to the answer's head.
    pub(super) timeout: Option<Duration>,
    /// The endpoint as errors name it.
    pub(super) endpoint: String,
}

/// How one attempt ended.
enum Attempt {
    /// A success, or an error status not worth another attempt.
    Answered(reqwest::Response),
    /// An answer worth another attempt (`429`, `5xx`), with its `Retry-After`.
    Status(reqwest::Response, Option<Duration>),
    /// No answer (a timeout, a failed connection); worth another attempt.
    Failed(Error),
}

impl Transport {
    /// Sends `body` until an attempt is answered with a success, or the schedule is spent.
    ///
    /// # Errors
    /// An error status with the API's message, or the last failure to get an answer.
    pub(super) async fn send(&self, body: &[u8]) -> Result<reqwest::Response> {
        let mut delays = self.retry.delays();
        loop {
            let (outcome, retry_after) = match self.attempt(body).await? {
                Attempt::Answered(response) if response.status().is_success() => {
                    return Ok(response);
                }
                Attempt::Answered(response) => return Err(self.refusal(response).await),
                Attempt::Status(response, retry_after) => (Ok(response), retry_after),
                Attempt::Failed(error) => (Err(error), None),
            };
            let Some(delay) = delays.next_delay(retry_after) else {
                return Err(match outcome {
                    Ok(response) => self.refusal(response).await,
                    Err(error) => error,
                });
            };
            let reason = match outcome {
                Ok(response) => response.status().to_string(),
                Err(error) => error.to_string(),
            };
            tracing::warn!(
                target: "halo_agent::anthropic",
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                %reason,
                "retrying the model request"
            );
            tokio::time::sleep(delay).await;
        }
    }

    /// One attempt: an answer, or a failure that may be worth another attempt.
    async fn attempt(&self, body: &[u8]) -> Result<Attempt> {
        let sent = self
            .http
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body.to_vec())
            .send();
        let outcome = match self.timeout {
            Some(limit) => match tokio::time::timeout(limit, sent).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    return Ok(Attempt::Failed(
                        Error::timeout(format!(
                            "the model did not answer within {} ms",
                            limit.as_millis()
                        ))
                        .at(&self.endpoint),
                    ));
                }
            },
            None => sent.await,
        };
        let response = match outcome {
            Ok(response) => response,
            Err(error) if error.is_connect() || error.is_timeout() => {
                return Ok(Attempt::Failed(transport_error(error).at(&self.endpoint)));
            }
            Err(error) => return Err(transport_error(error)),
        };
        let status = response.status();
        Ok(
            if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
                let retry_after = retry_after(response.headers());
                Attempt::Status(response, retry_after)
            } else {
                Attempt::Answered(response)
            },
        )
    }

    /// An error answer as an error: its status and the API's message (`type: message`), or
    /// the start of its body when it is not the API's error object. A `404` names the
    /// endpoint: the base URL is the likely mistake.
    async fn refusal(&self, response: reqwest::Response) -> Error {
        let status = response.status();
        let body = read_some(response, MAX_ERROR_BODY).await;
        let mut message = shorten(&api_message(&body));
        if message.is_empty() {
            message = "no message".to_owned();
        }
        if status != StatusCode::NOT_FOUND {
            return Error::answered(status, message);
        }
        message.push_str("; the base URL is what comes before /v1/messages");
        Error::answered(status, message).at(&self.endpoint)
    }
}

/// At most `limit` bytes of a body; what could be read when it fails.
async fn read_some(response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        let room = limit - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= limit {
            break;
        }
    }
    body
}

/// The message of an error body: the Messages API's `{"type": "error", "error": {"type",
/// "message"}}` as `type: message`, else the body as text (empty when there is none).
pub(super) fn api_message(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        let error = value.get("error").unwrap_or(&value);
        let text = |key: &str| error.get(key).and_then(Value::as_str);
        match (text("type"), text("message")) {
            (Some(kind), Some(message)) => return format!("{kind}: {message}"),
            (None, Some(message)) => return message.to_owned(),
            _ => {}
        }
    }
    String::from_utf8_lossy(body).trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies() {
        assert_eq!(
            api_message(
                br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"},"request_id":"req_1"}"#
            ),
            "invalid_request_error: max_tokens: Field required"
        );
        assert_eq!(api_message(br#"{"message":"no"}"#), "no");
        assert_eq!(
            api_message(b"<html>Bad gateway</html>\n"),
            "<html>Bad gateway</html>"
        );
        assert_eq!(api_message(b""), "");
    }
}
