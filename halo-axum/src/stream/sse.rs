//! The event stream a client receives, and the end of a call from its handler's response.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::stream;
use halo_protocol::{EVENT_STREAM, Problem, ToolEnd, ToolEvent};
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderName, HeaderValue};
use serde_json::Value;

use super::ResultMeta;
use super::calls::{Call, Subscription};

pub(super) const KEEP_ALIVE: Bytes = Bytes::from_static(b": keep-alive\n\n");

/// The most of a handler's response body read into `tool_end`.
const MAX_RESULT: usize = 16 * 1024 * 1024;

/// What a stream does next.
enum Step {
    /// Send the frames up to this id; the flag says whether the call is over.
    Send((u64, Bytes), bool),
    End,
    KeepAlive,
    /// Something changed: look again.
    Look,
}

/// The `text/event-stream` response for a subscription, from the event after `after`.
pub(crate) fn respond(subscription: Subscription, after: u64, keep_alive: Duration) -> Response {
    let call_id = HeaderValue::try_from(subscription.id.as_str()).ok();
    let events = stream::unfold(
        (subscription, after, false),
        move |(subscription, after, done)| async move {
            if done {
                return None;
            }
            loop {
                let step = {
                    let changed = subscription.changed();
                    tokio::pin!(changed);
                    changed.as_mut().enable();
                    match subscription.frames_after(after) {
                        (Some(chunk), finished) => Step::Send(chunk, finished),
                        (None, true) => Step::End,
                        (None, false) => match tokio::time::timeout(keep_alive, changed).await {
                            Ok(()) => Step::Look,
                            Err(_) => Step::KeepAlive,
                        },
                    }
                };
                match step {
                    Step::Send((last, bytes), finished) => {
                        return Some((Ok::<_, Infallible>(bytes), (subscription, last, finished)));
                    }
                    Step::End => return None,
                    Step::KeepAlive => return Some((Ok(KEEP_ALIVE), (subscription, after, false))),
                    Step::Look => {}
                }
            }
        },
    );
    event_stream(Body::from_stream(events), call_id)
}

/// A `text/event-stream` response with `body`, for the call `call_id`.
pub(super) fn event_stream(body: Body, call_id: Option<HeaderValue>) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    if let Some(call_id) = call_id {
        headers.insert(super::CALL_ID, call_id);
    }
    response
}

/// Ends a call with its handler's response: `tool_end` for a success, `tool_error` (the
/// problem body, or one made from the status) otherwise.
pub(crate) async fn finish<E>(call: Arc<Call>, answer: Result<Response, E>) {
    let outcome = crate::govern::outcome(&answer);
    let event = match answer {
        Err(_) => ToolEvent::ToolError(
            Problem::new(500).with_detail("the operation failed without a response"),
        ),
        Ok(response) => {
            let (parts, body) = response.into_parts();
            let status = parts.status.as_u16();
            match axum::body::to_bytes(body, MAX_RESULT).await {
                Err(_) => ToolEvent::ToolError(
                    Problem::new(500).with_detail("the operation's response could not be read"),
                ),
                Ok(bytes) if parts.status.is_success() || parts.status.is_redirection() => {
                    let mut end = ToolEnd::new(status, content(&parts.headers, &bytes));
                    end.meta = parts.extensions.get::<ResultMeta>().map(|m| m.0.clone());
                    ToolEvent::ToolEnd(end)
                }
                Ok(bytes) => ToolEvent::ToolError(problem(status, &parts.headers, &bytes)),
            }
        }
    };
    match event {
        ToolEvent::ToolError(problem) => call.end(problem, outcome),
        event => call.push(&event),
    }
}

/// A body as the model sees it: JSON as itself, text as a string, nothing as `null`.
fn content(headers: &http::HeaderMap, bytes: &Bytes) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    let json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(halo_protocol::is_json);
    if json && let Ok(value) = serde_json::from_slice(bytes) {
        return value;
    }
    Value::String(String::from_utf8_lossy(bytes).into_owned())
}

/// The problem of an error response: its own body when that is one, else one made from the
/// status and the body's text.
fn problem(status: u16, headers: &http::HeaderMap, bytes: &Bytes) -> Problem {
    if let Ok(problem) = serde_json::from_slice::<Problem>(bytes) {
        return problem;
    }
    let problem = Problem::new(status);
    match content(headers, bytes) {
        Value::Null => problem,
        Value::String(text) => problem.with_detail(text),
        other => problem.with_detail(other.to_string()),
    }
}
