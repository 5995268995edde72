//! The WebSocket binding of streamed calls (extension): the same events, ids and resumption
//! as the SSE envelope ([`ToolEvent`], [`AgentEvent`](crate::AgentEvent)), one text message
//! per event.
//!
//! The client opens the stream with a `GET` upgrade on the operation's own path, offering the
//! subprotocol [`WEBSOCKET_PROTOCOL`] and naming the operation's method in [`METHOD_HEADER`]
//! (`GET` when absent). A new call then sends one [`ClientMessage::Call`] with its body's
//! arguments; a client resuming a call sends `Halo-Call-Id` and `Last-Event-ID` on the
//! upgrade request, as over SSE, and no call message. The server sends each event as an
//! [`EventMessage`], `{"id": n, "type": "<event>", "data": {...}}`, and closes the socket with
//! code `1000` after the terminal one. A call refused once the socket is open (its arguments
//! invalid, its rate spent) gets one [`Refusal`] message, `{"type": "problem", "data":
//! <problem>, "headers": {...}}`, and the close code `4000 + status`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Problem, ToolEvent};

/// The WebSocket subprotocol of HALO streams, `halo-stream.v1`: offered by the client in
/// `Sec-WebSocket-Protocol`, chosen by the server. An upgrade that does not offer it is not a
/// HALO stream (it goes to the application, which may have WebSocket routes of its own).
pub const WEBSOCKET_PROTOCOL: &str = "halo-stream.v1";

/// The upgrade request's header that names the method of the operation called,
/// `Halo-Method` (the upgrade itself is a `GET`); `GET` when absent.
pub const METHOD_HEADER: &str = "halo-method";

/// The close code after the terminal event, or in answer to a client's close: `1000`.
pub const CLOSE_NORMAL: u16 = 1000;
/// The close code for a client message the server does not accept (not JSON, not one of
/// [`ClientMessage`], a second call): `1008`.
pub const CLOSE_POLICY: u16 = 1008;
/// The close code for a binary message (the binding is text only): `1003`.
pub const CLOSE_UNSUPPORTED: u16 = 1003;
/// The close code for a client message larger than the server accepts: `1009`.
pub const CLOSE_TOO_BIG: u16 = 1009;

/// The close code that carries an HTTP status: `4000 + status` (`4422` for arguments that do
/// not match the schema, `4429` for a rate spent, `4408` for a client silent past the idle
/// limit).
///
/// ```
/// use halo_protocol::{close_code, close_status};
///
/// assert_eq!(close_code(429), 4429);
/// assert_eq!(close_status(4422), Some(422));
/// assert_eq!(close_status(1000), None);
/// ```
#[must_use]
pub fn close_code(status: u16) -> u16 {
    4000 + status.clamp(100, 999)
}

/// The HTTP status a close code carries ([`close_code`]), if it carries one.
#[must_use]
pub fn close_status(code: u16) -> Option<u16> {
    (4100..=4999).contains(&code).then(|| code - 4000)
}

/// A message from the client on a HALO WebSocket stream.
///
/// ```
/// use halo_protocol::ClientMessage;
/// use serde_json::json;
///
/// let call = ClientMessage::call(Some(json!({"style": "short"})));
/// assert_eq!(
///     serde_json::to_value(&call).unwrap(),
///     json!({"type": "call", "arguments": {"style": "short"}})
/// );
/// let cancel: ClientMessage = serde_json::from_str(r#"{"type": "cancel"}"#).unwrap();
/// assert_eq!(cancel, ClientMessage::Cancel);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClientMessage {
    /// Starts the call, once, first: `arguments` is the request's JSON body (absent for an
    /// operation without one). Path, query and header arguments go on the upgrade request.
    Call {
        /// The body, as JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<Value>,
    },
    /// Cancels the call, as `DELETE /.well-known/halo/calls/{call_id}` would: the stream ends
    /// with the cancelled call's terminal event.
    Cancel,
}

impl ClientMessage {
    /// The call message with `arguments` as its body.
    #[must_use]
    pub fn call(arguments: Option<Value>) -> Self {
        Self::Call { arguments }
    }
}

/// One event of a streamed call as a WebSocket text message: the event's JSON (as the SSE
/// `data:` carries it) with its id beside `type` and `data`.
///
/// ```
/// use halo_protocol::{EventMessage, ToolEvent, ToolStart};
/// use serde_json::json;
///
/// let message = EventMessage::new(1, ToolEvent::ToolStart(ToolStart::new("c-1", "summarize")));
/// let text = serde_json::to_string(&message).unwrap();
/// assert_eq!(
///     serde_json::from_str::<serde_json::Value>(&text).unwrap(),
///     json!({"id": 1, "type": "tool_start", "data": {"call_id": "c-1", "tool": "summarize"}})
/// );
/// assert_eq!(serde_json::from_str::<EventMessage>(&text).unwrap(), message);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EventMessage<E = ToolEvent> {
    /// The event's id: counts from 1 within the call, as over SSE.
    pub id: u64,
    /// The event.
    #[serde(flatten)]
    pub event: E,
}

impl<E> EventMessage<E> {
    /// Event `event` with id `id`.
    pub fn new(id: u64, event: E) -> Self {
        Self { id, event }
    }
}

/// The answer headers a [`Refusal`] carries when the HTTP answer had them: what a client
/// waits on before trying again (`Retry-After`) and the rate it was held to (`RateLimit`,
/// `RateLimit-Policy`). Lower case, as HTTP/2 writes them.
pub const REFUSAL_HEADERS: [&str; 3] = ["retry-after", "ratelimit", "ratelimit-policy"];

/// The message of a call refused after the socket opened, `{"type": "problem", "data":
/// <problem>, "headers": {...}}`, before the close code `4000 + status`. `headers` holds those
/// of [`REFUSAL_HEADERS`] the HTTP answer had (left out when none), so that a client reads
/// the refusal whole, as it would have read the answer: a `429`'s `Retry-After` included.
///
/// ```
/// use halo_protocol::{Problem, Refusal};
///
/// let refusal = Refusal::new(Problem::new(429)).with_header("retry-after", "3");
/// let text = serde_json::to_string(&refusal).unwrap();
/// assert!(text.starts_with(r#"{"type":"problem","data":{"#));
/// assert!(text.ends_with(r#""headers":{"retry-after":"3"}}"#));
/// let read: Refusal = serde_json::from_str(&text).unwrap();
/// assert_eq!(read.problem().status, 429);
/// assert_eq!(read.header("Retry-After"), Some("3"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Refusal {
    #[serde(rename = "type")]
    kind: RefusalKind,
    data: Problem,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
}

/// The one type of [`Refusal`], `problem`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RefusalKind {
    Problem,
}

impl Refusal {
    /// A refusal with `problem`, as the HTTP answer would have carried it, and no headers.
    #[must_use]
    pub fn new(problem: Problem) -> Self {
        Self {
            kind: RefusalKind::Problem,
            data: problem,
            headers: BTreeMap::new(),
        }
    }

    /// With the header `name` (kept lower case) set to `value`.
    #[must_use]
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.insert(name.to_ascii_lowercase(), value.into());
        self
    }

    /// The problem document.
    #[must_use]
    pub fn problem(&self) -> &Problem {
        &self.data
    }

    /// The problem document, taken.
    #[must_use]
    pub fn into_problem(self) -> Problem {
        self.data
    }

    /// The value of the header `name` (any case), if the refusal carries it.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// Every header it carries, by lower-case name.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
    }
}

/// An event's message from its JSON as the SSE `data:` line carries it (`{"type": …}`) and its
/// id, without parsing it again: `None` when `event` is not a JSON object.
///
/// ```
/// use halo_protocol::event_message;
///
/// assert_eq!(
///     event_message(3, r#"{"type":"tool_progress","data":{"step":1}}"#).as_deref(),
///     Some(r#"{"id":3,"type":"tool_progress","data":{"step":1}}"#)
/// );
/// assert_eq!(event_message(1, "[]"), None);
/// ```
#[must_use]
pub fn event_message(id: u64, event: &str) -> Option<String> {
    let rest = event.trim_start().strip_prefix('{')?;
    let rest = rest.trim_start();
    let mut text = String::with_capacity(event.len() + 24);
    text.push_str("{\"id\":");
    text.push_str(&id.to_string());
    if !rest.starts_with('}') {
        text.push(',');
    }
    text.push_str(rest);
    Some(text)
}
