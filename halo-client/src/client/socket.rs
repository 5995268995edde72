//! A streamed call over WebSocket (feature `ws`): the upgrade sent through the client's own
//! reqwest client (its TLS, credentials per host, redirects, timeouts and circuit breakers,
//! as [`send`](Client::send) sends every request), tokio-tungstenite framing the messages
//! over the upgraded connection, and each text message decoded into the [`StreamEvent`] the
//! SSE decoder would have yielded.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use futures_util::{SinkExt as _, StreamExt as _};
use halo_protocol::{
    CALL_ID_HEADER, EventMessage, METHOD_HEADER, Problem, REFUSAL_HEADERS, Refusal, ToolEvent,
    WEBSOCKET_PROTOCOL, close_status,
};
use reqwest::header::{
    ACCEPT, CONNECTION, CONTENT_TYPE, HeaderMap, HeaderValue, SEC_WEBSOCKET_ACCEPT,
    SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use tokio::time::{Instant, Sleep};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message};

use super::stream::{Dropped, Opened};
use super::{Client, Prepared, read};
use crate::breaker::Pass;
use crate::retry::Failure;
use crate::sse::{Broken, MAX_EVENT, TOOL_EVENTS};
use crate::{CallId, Error, StreamEvent, ToolResponse};

/// The socket of one connection.
type Socket = WebSocketStream<reqwest::Upgraded>;

/// An open socket of a streamed call: the first event already read when the call is new
/// (to learn its id, or its refusal, before the stream is handed out).
pub(super) struct Connection {
    socket: Socket,
    first: Option<StreamEvent>,
}

impl Connection {
    /// The call's id, from a first `tool_start`.
    pub(super) fn call_id(&self) -> Option<CallId> {
        match self.first.as_ref().map(StreamEvent::event) {
            Some(ToolEvent::ToolStart(start)) => CallId::new(&start.call_id).ok(),
            _ => None,
        }
    }

    /// The connection's events, each message at most the client's idle timeout after the
    /// last (the server pings every few seconds, so only a dead connection stays silent).
    pub(super) fn into_events(self, idle: Option<Duration>) -> Events {
        Events {
            socket: Some(self.socket),
            first: self.first,
            idle,
            timer: idle.map(|limit| Box::pin(tokio::time::sleep(limit))),
            done: false,
        }
    }
}

impl Client {
    /// One attempt at a streamed call over WebSocket: the upgrade (`GET` on the request's
    /// URL, its method in `Halo-Method`, its credential and headers), then, for a new call,
    /// the call message with the request's JSON body and the first message back (a refusal
    /// is this attempt's answer, as an HTTP refusal is over SSE). A request that carries
    /// `Halo-Call-Id` resumes: no call message.
    pub(super) async fn open_socket(
        &self,
        request: &Prepared,
        pass: &Pass<'_>,
    ) -> Result<Opened, Failure> {
        let resuming = request.headers.contains_key(CALL_ID_HEADER);
        let call = match (&request.body, resuming) {
            (_, true) => None,
            (None, false) => Some(r#"{"type":"call"}"#.to_owned()),
            (Some(body), false) => {
                Some(call_message(&body.content_type, &body.bytes).map_err(Failure::Fatal)?)
            }
        };
        let key = generate_key();
        let mut upgrade = request.clone();
        upgrade.method = Method::GET;
        upgrade.body = None;
        let headers = &mut upgrade.headers;
        headers.remove(ACCEPT);
        headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
        headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
        headers.insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
        headers.insert(
            SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(WEBSOCKET_PROTOCOL),
        );
        let key_value = HeaderValue::try_from(key.as_str())
            .map_err(|_| Failure::Fatal(Error::decode("a WebSocket key that is not a header")))?;
        headers.insert(SEC_WEBSOCKET_KEY, key_value);
        if request.method != Method::GET {
            let method = HeaderValue::try_from(request.method.as_str())
                .map_err(|_| Failure::Fatal(Error::argument("a method that is not a header")))?;
            headers.insert(METHOD_HEADER, method);
        }
        let response = self.send(&upgrade, pass).await?;
        if response.status() != StatusCode::SWITCHING_PROTOCOLS {
            // An HTTP answer: the refusal (`401`, `410`, …), read as any answer is.
            return read(response).await.map(Opened::Complete);
        }
        accepted(response.headers(), &key).map_err(Failure::Fatal)?;
        let upgraded = response.upgrade().await.map_err(Failure::Transport)?;
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_EVENT + 64 * 1024))
            .max_frame_size(Some(MAX_EVENT + 64 * 1024));
        let mut socket =
            WebSocketStream::from_raw_socket(upgraded, Role::Client, Some(config)).await;
        let Some(call) = call else {
            return Ok(Opened::Socket(Box::new(Connection {
                socket,
                first: None,
            })));
        };
        let lost = |error: tungstenite::Error| Failure::Fatal(socket_error(&error));
        socket.send(Message::text(call)).await.map_err(lost)?;
        // The first message: the call's start, or its refusal.
        loop {
            let message = match socket.next().await {
                Some(Ok(message)) => message,
                Some(Err(error)) => return Err(lost(error)),
                None => return Err(Failure::Fatal(Error::decode("the socket closed at once"))),
            };
            let text = match message {
                Message::Text(text) => text,
                Message::Close(frame) => return Err(closed(frame.as_ref())),
                _ => continue,
            };
            match decode(text.as_str()).map_err(Failure::Fatal)? {
                Incoming::Refused(refused) => return refusal(refused),
                Incoming::Other => {}
                Incoming::Event(event) => {
                    return Ok(Opened::Socket(Box::new(Connection {
                        socket,
                        first: Some(event),
                    })));
                }
            }
        }
    }
}

/// The call message of a request whose body is `bytes` of `content_type`: JSON only.
fn call_message(content_type: &HeaderValue, bytes: &[u8]) -> Result<String, Error> {
    let json = content_type.to_str().is_ok_and(halo_protocol::is_json);
    let body = std::str::from_utf8(bytes)
        .ok()
        .filter(|_| json)
        .ok_or_else(|| {
            Error::argument(
                "the WebSocket transport sends JSON bodies only; stream this call over SSE",
            )
        })?;
    let mut text = String::with_capacity(body.len() + 32);
    text.push_str(r#"{"type":"call","arguments":"#);
    text.push_str(if body.trim().is_empty() { "null" } else { body });
    text.push('}');
    Ok(text)
}

/// Checks the server's `101`: the key answered, the HALO subprotocol chosen.
fn accepted(headers: &HeaderMap, key: &str) -> Result<(), Error> {
    let expected = derive_accept_key(key.as_bytes());
    let answered = headers
        .get(SEC_WEBSOCKET_ACCEPT)
        .is_some_and(|value| value.as_bytes() == expected.as_bytes());
    let protocol = headers
        .get(SEC_WEBSOCKET_PROTOCOL)
        .is_some_and(|value| value.as_bytes() == WEBSOCKET_PROTOCOL.as_bytes());
    if answered && protocol {
        return Ok(());
    }
    Err(Error::decode(
        "the server upgraded to WebSocket without accepting the key or the halo-stream.v1 subprotocol",
    ))
}

/// A refusal message, as the HTTP refusal it stands for, with the headers it carries of
/// [`REFUSAL_HEADERS`] (so a `429`'s `Retry-After` paces the retry): a failure to retry for
/// a status worth retrying, as [`read`] decides for an HTTP answer.
#[allow(clippy::result_large_err)] // The failure `read` and every attempt give.
fn refusal(refusal: Refusal) -> Result<Opened, Failure> {
    let mut headers = HeaderMap::new();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    for name in REFUSAL_HEADERS {
        if let Some(value) = refusal
            .header(name)
            .and_then(|value| HeaderValue::from_str(value).ok())
        {
            headers.insert(name, value);
        }
    }
    let problem = refusal.into_problem();
    let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let body = serde_json::to_value(&problem).unwrap_or_default();
    let response = ToolResponse::from_value(status, headers, body);
    if Failure::is_retryable_status(status) {
        return Err(Failure::status(response));
    }
    Ok(Opened::Complete(response))
}

/// A close before the call started.
fn closed(frame: Option<&CloseFrame>) -> Failure {
    let code = frame.map_or(1005, |frame| u16::from(frame.code));
    let reason = frame.map_or("", |frame| frame.reason.as_str());
    match close_status(code) {
        Some(status) => {
            let problem = Problem::new(status).with_detail(reason);
            match refusal(Refusal::new(problem)) {
                Ok(Opened::Complete(response)) => Failure::Fatal(Error::from_response(response)),
                Ok(_) => Failure::Fatal(Error::decode(reason.to_owned())),
                Err(failure) => failure,
            }
        }
        None => Failure::Fatal(Error::decode(format!(
            "the server closed the socket ({code} {reason})"
        ))),
    }
}

/// A socket's failure as an error of its own.
fn socket_error(error: &tungstenite::Error) -> Error {
    Error::decode(format!("the WebSocket failed: {error}"))
}

/// What a server's text message is.
enum Incoming {
    Event(StreamEvent),
    /// The call was refused.
    Refused(Refusal),
    /// An event of another kind (an agent's, a newer version's): skipped, as over SSE.
    Other,
}

/// The type and id of a message, read before the rest.
#[derive(Deserialize)]
struct Head<'a> {
    id: Option<u64>,
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
}

/// A server's message.
fn decode(text: &str) -> Result<Incoming, Error> {
    // Nearly every message is a tool event: read whole in one pass; anything else is told
    // apart by its head.
    if let Ok(message) = serde_json::from_str::<EventMessage<ToolEvent>>(text) {
        return Ok(Incoming::Event(StreamEvent::new(message.id, message.event)));
    }
    let head: Head<'_> = serde_json::from_str(text)
        .map_err(|e| Error::decode(e).with_context("a WebSocket message"))?;
    if head.kind == "problem" && head.id.is_none() {
        let refusal: Refusal =
            serde_json::from_str(text).map_err(|e| Error::decode(e).with_context("a refusal"))?;
        return Ok(Incoming::Refused(refusal));
    }
    if !TOOL_EVENTS.contains(&head.kind.as_ref()) {
        tracing::debug!(target: "halo_client::stream", event = %head.kind, "skipping an event that is not a tool event");
        return Ok(Incoming::Other);
    }
    let Some(id) = head.id else {
        return Err(Error::decode(format!(
            "a `{}` event without an id",
            head.kind
        )));
    };
    let message: EventMessage<ToolEvent> = serde_json::from_str(text)
        .map_err(|e| Error::decode(e).with_context(format!("event {id} (`{}`)", head.kind)))?;
    Ok(Incoming::Event(StreamEvent::new(message.id, message.event)))
}

/// The events of one socket: each text message decoded; a close or a failure ends them (a
/// normal close after the terminal event quietly, anything else as a dropped connection,
/// to resume). Dropped before its end, the socket is closed normally, which cancels the call.
pub(super) struct Events {
    socket: Option<Socket>,
    first: Option<StreamEvent>,
    idle: Option<Duration>,
    timer: Option<Pin<Box<Sleep>>>,
    done: bool,
}

impl Stream for Events {
    type Item = Result<StreamEvent, Broken<Dropped>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            let Some(socket) = this.socket.as_mut() else {
                return Poll::Ready(None);
            };
            let message = match socket.poll_next_unpin(cx) {
                Poll::Ready(message) => message,
                Poll::Pending => {
                    let expired = this
                        .timer
                        .as_mut()
                        .is_some_and(|timer| timer.as_mut().poll(cx).is_ready());
                    return match this.idle {
                        Some(limit) if expired => {
                            this.done = true;
                            Poll::Ready(Some(Err(Broken::Dropped(Dropped::Idle(limit)))))
                        }
                        _ => Poll::Pending,
                    };
                }
            };
            if let (Some(timer), Some(limit)) = (&mut this.timer, this.idle) {
                timer.as_mut().reset(Instant::now() + limit);
            }
            let text = match message {
                None => {
                    this.done = true;
                    return Poll::Ready(Some(Err(Broken::Dropped(Dropped::Closed(
                        "the socket ended without a close".to_owned(),
                    )))));
                }
                Some(Err(error)) => {
                    this.done = true;
                    let error = socket_error(&error);
                    return Poll::Ready(Some(Err(Broken::Dropped(Dropped::Closed(
                        error.to_string(),
                    )))));
                }
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Close(frame))) => {
                    this.done = true;
                    let code = frame.as_ref().map_or(1005, |frame| u16::from(frame.code));
                    if code == 1000 {
                        return Poll::Ready(None);
                    }
                    let reason = frame.as_ref().map_or("", |frame| frame.reason.as_str());
                    return Poll::Ready(Some(Err(Broken::Dropped(Dropped::Closed(format!(
                        "the server closed the socket ({code} {reason})"
                    ))))));
                }
                Some(Ok(_)) => continue,
            };
            match decode(text.as_str()) {
                Ok(Incoming::Event(event)) => return Poll::Ready(Some(Ok(event))),
                Ok(Incoming::Other) => {}
                Ok(Incoming::Refused(refused)) => {
                    this.done = true;
                    let problem = refused.into_problem();
                    let detail = problem.detail.unwrap_or(problem.title);
                    let error = Error::decode(format!("the server refused the stream: {detail}"));
                    return Poll::Ready(Some(Err(Broken::Invalid(error))));
                }
                Err(error) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(Broken::Invalid(error))));
                }
            }
        }
    }
}

impl Drop for Events {
    /// Closes the socket: normally (`1000`) when the stream is dropped before its end,
    /// which cancels the call; as going away (`1001`) when the connection was given up (a
    /// silent one, to resume on another), which leaves the call running.
    fn drop(&mut self) {
        let Some(mut socket) = self.socket.take() else {
            return;
        };
        let code = if self.done {
            CloseCode::Away
        } else {
            CloseCode::Normal
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let frame = CloseFrame {
                code,
                reason: "".into(),
            };
            let close = socket.close(Some(frame));
            let _ = tokio::time::timeout(Duration::from_secs(5), close).await;
        });
    }
}
