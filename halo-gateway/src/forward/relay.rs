//! A streamed call to a HALO upstream: the layer streams the call to its caller, and this
//! streams it from the upstream through halo-client (resumed if the connection drops),
//! relaying the upstream's progress as the call's own and answering with its result.

use axum::response::{IntoResponse as _, Response};
use bytes::Bytes;
use futures_util::StreamExt as _;
use halo_axum::{Progress, ToolResult};
use halo_client::{CallId, Client, ToolStream};
use halo_protocol::ToolEvent;
use http::{HeaderMap, Method, StatusCode};
use serde_json::json;
use tokio::runtime::Handle;

use super::problem;

/// Streams `method` on `url` from the upstream `name` through `client`, each of its
/// `tool_progress` events sent to `progress`; the answer is its `tool_end` (status, content
/// and meta) or its `tool_error` (the problem).
pub(super) async fn stream(
    client: &Client,
    name: &str,
    progress: &Progress,
    (method, url, headers): (Method, &str, HeaderMap),
    body: Option<Bytes>,
) -> Response {
    // What may be sent again before the upstream names the call: what cannot repeat a side
    // effect (the layer's own idempotency keys travel with the headers).
    let safe = halo_protocol::is_idempotent_method(method.as_str());
    let mut events = match client
        .stream_request(method, url, headers, body, safe)
        .await
    {
        Ok(events) => events,
        Err(error) => return failed(name, &error),
    };
    let mut running = Running {
        client,
        call: events.call_id().cloned(),
    };
    let answer = relay(&mut events, name, progress).await;
    // The upstream's stream ended (or failed): nothing of it runs on.
    running.call = None;
    answer
}

/// Relays `events` until their end: the answer is the upstream's `tool_end` or `tool_error`.
async fn relay(events: &mut ToolStream, name: &str, progress: &Progress) -> Response {
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event.into_event(),
            Err(error) => return failed(name, &error),
        };
        match event {
            ToolEvent::ToolProgress(data) => progress.send(data),
            ToolEvent::ApprovalPending(_) => progress.send(json!({
                "message": format!("the upstream `{name}` holds the call for its own approval")
            })),
            ToolEvent::ToolEnd(end) => {
                let status = StatusCode::from_u16(end.status).unwrap_or(StatusCode::OK);
                let mut result = ToolResult::new(end.content);
                if let Some(meta) = end.meta {
                    result = result.with_meta(meta);
                }
                let mut response = result.into_response();
                *response.status_mut() = status;
                return response;
            }
            ToolEvent::ToolError(problem) => return problem::of(&problem),
            // `tool_start`, and what a later version may add.
            _ => {}
        }
    }
    problem::answer(
        StatusCode::BAD_GATEWAY,
        format!("the upstream `{name}` ended its stream without a result"),
    )
}

/// The upstream's call while the gateway's runs: when the gateway's call is dropped before
/// its end (cancelled by its caller, or stopped by the layer), the upstream is asked to cancel
/// its call too, rather than run it to the end for nobody.
struct Running<'c> {
    client: &'c Client,
    call: Option<CallId>,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let (Some(call), Ok(runtime)) = (self.call.take(), Handle::try_current()) else {
            return;
        };
        if std::thread::panicking() {
            return;
        }
        let client = self.client.clone();
        runtime.spawn(async move {
            if let Err(error) = client.cancel(&call).await {
                tracing::debug!(%error, "an upstream call could not be cancelled");
            }
        });
    }
}

/// The answer to a call the upstream refused or that could not be streamed: the upstream's
/// own problem when it answered with one, else `502`/`504`.
fn failed(name: &str, error: &halo_client::Error) -> Response {
    if let Some(problem) = error.problem() {
        return problem::of(&problem);
    }
    if let Some(status) = error.status() {
        return problem::answer(status, format!("the upstream `{name}` answered {status}"));
    }
    // halo-client's errors name the call by method and path, never its query.
    tracing::warn!(upstream = name, cause = %error, "a streamed upstream call failed");
    let (status, what) = match error.is_timeout() {
        true => (StatusCode::GATEWAY_TIMEOUT, "did not answer in time"),
        false => (StatusCode::BAD_GATEWAY, "could not be streamed"),
    };
    problem::answer(status, format!("the upstream `{name}` {what}"))
}
