//! The WebSocket writer of a streamed call: the event stream the engine answers with
//! (`text/event-stream`, from `envelope` or `resume`) re-framed as one text message per event,
//! while the client's messages (a cancel, a close) and silence are watched.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt as _, StreamExt as _};
use halo_protocol::{
    CLOSE_NORMAL, CLOSE_POLICY, CLOSE_TOO_BIG, CLOSE_UNSUPPORTED, ClientMessage, EVENT_STREAM,
    EventMessage, Problem, REFUSAL_HEADERS, Refusal, ToolEnd, ToolEvent, close_code, event_message,
};
use http::HeaderValue;
use http::header::CONTENT_TYPE;
use serde_json::Value;
use tokio::time::{Instant, MissedTickBehavior};

use super::WebSocketLimits;

/// Cancels the socket's call (as a cancel request of its caller would), for a cancel message
/// or a client's normal close.
pub(crate) type Cancelling = Box<dyn FnMut() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// The most of a refusal's body read into its message.
const MAX_REFUSAL: usize = 64 * 1024;

/// Waits for a new call's first message, [`ClientMessage::Call`], within the idle limit: its
/// arguments (`Some(None)` for a call without a body), or `None` when the socket was closed
/// instead (with the close code that says why).
pub(crate) async fn first_call(
    socket: &mut WebSocket,
    limits: &WebSocketLimits,
) -> Option<Option<Value>> {
    let deadline = tokio::time::sleep(limits.idle());
    tokio::pin!(deadline);
    loop {
        let message = tokio::select! {
            () = &mut deadline => {
                close(socket, close_code(408), "no call message in time").await;
                return None;
            }
            message = socket.recv() => message,
        };
        match message? {
            Err(error) => return failed(socket, error).await,
            Ok(Message::Text(text)) => {
                return match serde_json::from_str::<ClientMessage>(text.as_str()) {
                    Ok(ClientMessage::Call { arguments }) => Some(arguments),
                    Ok(ClientMessage::Cancel) => {
                        close(socket, CLOSE_NORMAL, "cancelled before it started").await;
                        None
                    }
                    Ok(_) | Err(_) => {
                        let reason = r#"the first message must be {"type":"call"}"#;
                        close(socket, CLOSE_POLICY, reason).await;
                        None
                    }
                };
            }
            Ok(Message::Binary(_)) => {
                close(socket, CLOSE_UNSUPPORTED, "text messages only").await;
                return None;
            }
            Ok(Message::Close(_)) => return None,
            Ok(Message::Ping(_) | Message::Pong(_)) => {}
        }
    }
}

/// Writes the engine's answer to the socket: each event of an event stream as an
/// [`EventMessage`] (pings every `keep_alive` in place of keep-alive comments), then a
/// `1000` close after the terminal one; any other answer as a [`Refusal`] and a `4000 +
/// status` close (a success without a stream as one `tool_end`). A cancel message, or the
/// client's normal close (`1000`), runs `cancel`; a client gone otherwise (a cut, a close
/// with another code, silence past the idle limit) leaves the call to the layer's
/// `OnDisconnect`, as an SSE client that leaves does.
pub(crate) async fn relay(
    mut socket: WebSocket,
    response: Response,
    keep_alive: Duration,
    limits: WebSocketLimits,
    mut cancel: Cancelling,
) {
    if !is_event_stream(&response) {
        return refuse(socket, response).await;
    }
    let mut body = response.into_body().into_data_stream();
    let mut pending = BytesMut::new();
    let mut ping = tokio::time::interval_at(Instant::now() + keep_alive, keep_alive);
    ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let idle = tokio::time::sleep(limits.idle());
    tokio::pin!(idle);
    loop {
        tokio::select! {
            biased;
            message = socket.recv() => {
                idle.as_mut().reset(Instant::now() + limits.idle());
                match message {
                    // Cut: the call is left as the layer's `OnDisconnect` says.
                    None => return,
                    Some(Err(error)) => {
                        failed::<()>(&mut socket, error).await;
                        return;
                    }
                    Some(Ok(Message::Text(text))) => {
                        match serde_json::from_str::<ClientMessage>(text.as_str()) {
                            // The stream goes on to the cancelled call's terminal event.
                            Ok(ClientMessage::Cancel) => cancel().await,
                            Ok(_) | Err(_) => {
                                close(&mut socket, CLOSE_POLICY, "the call has started").await;
                                return;
                            }
                        }
                    }
                    Some(Ok(Message::Binary(_))) => {
                        close(&mut socket, CLOSE_UNSUPPORTED, "text messages only").await;
                        return;
                    }
                    Some(Ok(Message::Close(frame))) => {
                        // A normal close (or one without a code) asks for the call to end.
                        if frame.is_none_or(|frame| frame.code == CLOSE_NORMAL) {
                            cancel().await;
                        }
                        let _ = socket.flush().await;
                        return;
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                }
            }
            chunk = body.next() => match chunk {
                Some(Ok(bytes)) => {
                    pending.extend_from_slice(&bytes);
                    let mut sent = false;
                    while let Some(text) = next_message(&mut pending) {
                        if socket.feed(Message::Text(Utf8Bytes::from(text))).await.is_err() {
                            return;
                        }
                        sent = true;
                    }
                    if sent && socket.flush().await.is_err() {
                        return;
                    }
                }
                // The terminal event was sent (or the stream of another instance's call ran
                // dry): the call is over for this client.
                Some(Err(_)) | None => {
                    close(&mut socket, CLOSE_NORMAL, "the call ended").await;
                    return;
                }
            },
            _ = ping.tick() => {
                if socket.send(Message::Ping(Bytes::new())).await.is_err() {
                    return;
                }
            }
            () = &mut idle => {
                close(&mut socket, close_code(408), "the client was silent too long").await;
                return;
            }
        }
    }
}

/// The next whole event of `pending` (SSE bytes) as its message, the event taken out;
/// keep-alive comments are dropped on the way. `None` until a whole event is there.
fn next_message(pending: &mut BytesMut) -> Option<String> {
    loop {
        let end = memchr::memmem::find(pending, b"\n\n")?;
        let block = pending.split_to(end + 2);
        let block = &block[..end];
        if block.first() == Some(&b':') {
            continue;
        }
        let Ok(text) = std::str::from_utf8(block) else {
            continue;
        };
        let mut id = None;
        let mut data = None;
        for line in text.split('\n') {
            if let Some(value) = line.strip_prefix("id: ") {
                id = value.parse::<u64>().ok();
            } else if let Some(value) = line.strip_prefix("data: ") {
                data = Some(value);
            }
        }
        if let (Some(id), Some(data)) = (id, data)
            && let Some(message) = event_message(id, data)
        {
            return Some(message);
        }
        tracing::debug!(target: "halo_axum::stream", "an event without an id or data skipped");
    }
}

/// Sends the answer of a call the engine did not stream: a problem as a [`Refusal`] (with
/// the answer's `Retry-After` and rate headers) and a `4000 + status` close; a success as one `tool_end` (id 1) and a normal close.
async fn refuse(mut socket: WebSocket, response: Response) {
    let (parts, body) = response.into_parts();
    let status = parts.status.as_u16();
    let bytes = axum::body::to_bytes(body, MAX_REFUSAL)
        .await
        .unwrap_or_default();
    if parts.status.is_success() || parts.status.is_redirection() {
        let content = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let end = EventMessage::new(1, ToolEvent::ToolEnd(ToolEnd::new(status, content)));
        if let Ok(text) = serde_json::to_string(&end) {
            let _ = socket.send(Message::Text(Utf8Bytes::from(text))).await;
        }
        return close(&mut socket, CLOSE_NORMAL, "the call ended").await;
    }
    let problem =
        serde_json::from_slice::<Problem>(&bytes).unwrap_or_else(|_| Problem::new(status));
    let title = problem.title.clone();
    let refusal = REFUSAL_HEADERS
        .iter()
        .fold(Refusal::new(problem), |refusal, name| {
            match parts.headers.get(*name).map(HeaderValue::to_str) {
                Some(Ok(value)) => refusal.with_header(name, value),
                _ => refusal,
            }
        });
    if let Ok(text) = serde_json::to_string(&refusal) {
        let _ = socket.send(Message::Text(Utf8Bytes::from(text))).await;
    }
    close(&mut socket, close_code(status), &title).await;
}

/// Closes the socket with `code` and `reason` (cut to the 123 bytes a close frame carries).
pub(crate) async fn close(socket: &mut WebSocket, code: u16, reason: &str) {
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from(&reason[..end]),
    };
    let _ = socket.send(Message::Close(Some(frame))).await;
}

/// A read that failed: a message past the limit is answered with `1009`; anything else is
/// a connection gone. Always `None`.
async fn failed<T>(socket: &mut WebSocket, error: axum::Error) -> Option<T> {
    use tokio_tungstenite::tungstenite::Error;
    if let Ok(error) = error.into_inner().downcast::<Error>()
        && matches!(*error, Error::Capacity(_))
    {
        close(
            socket,
            CLOSE_TOO_BIG,
            "the message is larger than the server accepts",
        )
        .await;
    }
    None
}

/// Whether the engine answered with an event stream.
fn is_event_stream(response: &Response) -> bool {
    response.status().is_success()
        && response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| halo_protocol::essence(value) == EVENT_STREAM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_cut_out_of_sse_bytes_whole() {
        let mut pending = BytesMut::from(
            &b": keep-alive\n\nevent: tool_start\nid: 1\ndata: {\"type\":\"tool_start\",\"data\":{}}\n\nevent: tool_pro"[..],
        );
        assert_eq!(
            next_message(&mut pending).as_deref(),
            Some(r#"{"id":1,"type":"tool_start","data":{}}"#)
        );
        assert_eq!(next_message(&mut pending), None);
        pending
            .extend_from_slice(b"gress\nid: 2\ndata: {\"type\":\"tool_progress\",\"data\":1}\n\n");
        assert_eq!(
            next_message(&mut pending).as_deref(),
            Some(r#"{"id":2,"type":"tool_progress","data":1}"#)
        );
        assert!(pending.is_empty());
    }
}
