//! Tool calls streamed over Server-Sent Events on the operation's own route.
//!
//! A call of a described operation with `Accept: text/event-stream` runs the same handler,
//! in a task of its own, and answers with `tool_start`, the handler's `tool_progress`
//! events ([`Progress`]), and `tool_end` or `tool_error`. Events are kept for a while after
//! the call ends, so a client that lost the connection sends the request again with
//! `Last-Event-ID` and `Halo-Call-Id` and receives only what it missed.
//!
//! A running call, streamed or named by its caller (`Halo-Call-Id` on a call without a
//! stream), can be cancelled by its caller or an administrator:
//! `DELETE /.well-known/halo/calls/{call_id}` (see `cancel`).

mod calls;
mod cancel;
mod envelope;
mod resume;
#[cfg(feature = "ws")]
mod socket;
mod sse;

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::FromRequestParts;
use axum::response::{IntoResponse, Response};
use halo_protocol::ToolEvent;
use http::request::Parts;
use serde::Serialize;
use serde_json::{Value, json};

pub(crate) use self::calls::Cancel;
pub(crate) use self::calls::{Call, Calls};
pub(crate) use self::cancel::{
    CALL_ID, Found, Named, PREFIX, cancelled, is_cancel, is_named, problem,
};
pub(crate) use self::envelope::{open, spawn};
pub(crate) use self::resume::resume;
#[cfg(feature = "ws")]
pub use self::socket::WebSocketLimits;
#[cfg(feature = "ws")]
pub(crate) use self::socket::{Cancelling, first_call, relay};

/// Whether a request asks for an event stream.
#[inline] // On the pass-through path of `Halo::call` (see there).
pub(crate) fn wanted(headers: &http::HeaderMap) -> bool {
    headers.get_all(http::header::ACCEPT).iter().any(|value| {
        value
            .to_str()
            .is_ok_and(|accept| halo_protocol::accepts(accept, halo_protocol::EVENT_STREAM))
    })
}

/// What happens to a streamed call whose client goes away before it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnDisconnect {
    /// The handler runs on and its events are kept, so the client can reconnect and resume
    /// (the default).
    #[default]
    Continue,
    /// The handler is dropped as soon as no client is connected, and the call ends with a
    /// `tool_error`; a client that reconnects receives the events up to that error.
    Cancel,
}

/// How streamed calls are kept.
#[derive(Debug, Clone)]
pub(crate) struct StreamConfig {
    /// How long a finished call's events stay available for resuming.
    pub(crate) retention: Duration,
    /// The most events kept per call; older progress is dropped past it.
    pub(crate) max_events: usize,
    /// The most calls kept at once.
    pub(crate) max_calls: usize,
    /// The interval of keep-alive comments on an idle stream.
    pub(crate) keep_alive: Duration,
    pub(crate) on_disconnect: OnDisconnect,
    /// The scope that lets a caller cancel anyone's call (none by default).
    pub(crate) cancel_scope: Option<String>,
    /// The bounds of streams over WebSocket.
    #[cfg(feature = "ws")]
    pub(crate) websocket: WebSocketLimits,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            retention: Duration::from_secs(300),
            max_events: 16_384,
            max_calls: 10_000,
            keep_alive: Duration::from_secs(15),
            on_disconnect: OnDisconnect::Continue,
            cancel_scope: None,
            #[cfg(feature = "ws")]
            websocket: WebSocketLimits::default(),
        }
    }
}

/// Reports a handler's progress to a streaming caller, as `tool_progress` events.
///
/// An extractor: when the call is not streamed (the caller did not ask for
/// `text/event-stream`), the progress goes nowhere and costs nothing.
///
/// ```
/// use axum::Json;
/// use halo_axum::Progress;
/// use serde_json::{json, Value};
///
/// async fn summarize(progress: Progress) -> Json<Value> {
///     for chapter in 1..=3 {
///         progress.step(chapter, Some(3), format!("reading chapter {chapter}"));
///     }
///     Json(json!({"summary": "…"}))
/// }
/// # let _ = axum::Router::<()>::new().route("/summarize", axum::routing::post(summarize));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Progress {
    sink: Option<Sink>,
}

/// Where a handler's progress goes.
#[derive(Debug, Clone)]
enum Sink {
    /// A call streamed over SSE.
    Call(Arc<Call>),
    /// A caller in the same process (an MCP request with a progress token), which gets each
    /// event's data as it comes.
    #[cfg(feature = "mcp")]
    Relay(tokio::sync::mpsc::UnboundedSender<Value>),
}

impl Progress {
    pub(crate) fn attached(call: Arc<Call>) -> Self {
        Self {
            sink: Some(Sink::Call(call)),
        }
    }

    /// Progress that goes to `relay`: the layer does not stream the call, and whoever
    /// made the request in process reads the steps.
    #[cfg(feature = "mcp")]
    pub(crate) fn relayed(relay: tokio::sync::mpsc::UnboundedSender<Value>) -> Self {
        Self {
            sink: Some(Sink::Relay(relay)),
        }
    }

    /// Whether a client is receiving the events.
    #[must_use]
    pub fn is_streaming(&self) -> bool {
        self.sink.is_some()
    }

    /// The streamed call, for a handler that sends events of its own (a hosted agent's).
    #[cfg(feature = "agents")]
    pub(crate) fn call(&self) -> Option<&Arc<Call>> {
        match self.sink.as_ref()? {
            Sink::Call(call) => Some(call),
            #[cfg(feature = "mcp")]
            Sink::Relay(_) => None,
        }
    }

    /// Sends any JSON as the data of a `tool_progress` event. A value that fails to
    /// serialise is sent as `null`.
    pub fn send(&self, data: impl Serialize) {
        let Some(sink) = &self.sink else { return };
        let data = serde_json::to_value(data).unwrap_or(Value::Null);
        match sink {
            Sink::Call(call) => call.push(&ToolEvent::ToolProgress(data)),
            #[cfg(feature = "mcp")]
            Sink::Relay(relay) => {
                let _ = relay.send(data);
            }
        }
    }

    /// Sends `{"step": …, "total": …, "message": …}` (`total` left out when unknown).
    pub fn step(&self, step: u64, total: Option<u64>, message: impl Into<String>) {
        if self.sink.is_some() {
            let mut data = json!({"step": step, "message": message.into()});
            if let Some(total) = total {
                data["total"] = total.into();
            }
            self.send(data);
        }
    }
}

impl<S: Sync> FromRequestParts<S> for Progress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Self>().cloned().unwrap_or_default())
    }
}

/// A handler's result with data for user interfaces kept apart from what the model sees.
///
/// As an ordinary response it is `content` as JSON. In a streamed call, `tool_end` carries
/// both: `content` for the model and `meta` for the interface, which never goes into a
/// model's context.
///
/// ```
/// use halo_axum::ToolResult;
/// use serde_json::json;
///
/// async fn chart() -> ToolResult<serde_json::Value> {
///     ToolResult::new(json!({"trend": "up"})).with_meta(json!({"svg": "<svg/>"}))
/// }
/// # let _ = axum::Router::<()>::new().route("/chart", axum::routing::get(chart));
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ToolResult<T> {
    content: T,
    meta: Option<Value>,
}

impl<T> ToolResult<T> {
    /// A result of `content`, without `meta`.
    pub fn new(content: T) -> Self {
        Self {
            content,
            meta: None,
        }
    }

    /// The same result with data for user interfaces.
    pub fn with_meta(mut self, meta: impl Serialize) -> Self {
        self.meta = serde_json::to_value(meta).ok();
        self
    }
}

/// The `meta` of a [`ToolResult`], carried to the stream in the response's extensions.
#[derive(Debug, Clone)]
pub(crate) struct ResultMeta(pub(crate) Value);

impl<T: Serialize> IntoResponse for ToolResult<T> {
    fn into_response(self) -> Response {
        let mut response = Json(self.content).into_response();
        if let Some(meta) = self.meta {
            response.extensions_mut().insert(ResultMeta(meta));
        }
        response
    }
}
