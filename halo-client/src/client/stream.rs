//! [`ToolStream`]: a streamed call opened, and its events read, resumed across dropped
//! connections.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use futures_util::StreamExt as _;
use halo_protocol::{CALL_ID_HEADER, EVENT_STREAM, Problem, RetryDelays, ToolEnd, ToolEvent};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use tokio::time::{Instant, Sleep};

use super::request::Encoded;
use super::{Prepared, checked, read};
use crate::breaker::{Pass, Verdict};
use crate::retry::Failure;
use crate::sse::{self, Broken, MAX_EVENT};
use crate::{CallId, CancelOutcome, Client, Error, Result, RetryPolicy, StreamEvent, ToolResponse};

/// The header that names the last event a reconnecting client received.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The events of a streamed call ([`Client::invoke_stream`], [`Client::call_stream`]): a
/// [`Stream`] of [`StreamEvent`]s that ends right after `tool_end` or `tool_error`, or
/// after an error item.
///
/// Each event is yielded once and in order, however often the connection drops: the client
/// reconnects with `Last-Event-ID` and `Halo-Call-Id`, the server sends what was missed, and
/// events seen before are dropped. Reconnections follow the client's [`RetryPolicy`]
/// (attempts and delays, counted afresh once a new event arrives). Resuming never runs the
/// tool again, so it happens even for a tool whose schema says `resilience.retry: false`.
/// Before `tool_start` has named the call, a dropped request is sent again only when that is
/// safe (as [`Client::invoke`] retries, and never for `retry: false`); otherwise the drop is
/// an error item. A server that refuses
/// the resumption (`404`, `410`, any error) ends the stream with an [`Error::is_status`]
/// item.
///
/// [`RetryPolicy`]: crate::RetryPolicy
///
/// ```no_run
/// use halo_client::{Client, Method};
/// use serde_json::json;
///
/// # async fn run() -> halo_client::Result<()> {
/// let client = Client::new("http://127.0.0.1:3000")?;
/// let end = client
///     .invoke_stream("/api/reports", Method::POST, json!({"year": 2026}))
///     .await?
///     .result()
///     .await?;
/// println!("{} {}", end.status, end.content);
/// # Ok(()) }
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct ToolStream {
    events: Pin<Box<dyn Stream<Item = Result<StreamEvent>> + Send>>,
    /// `POST /api/reports`, for errors.
    what: String,
    /// The call's id (its `Halo-Call-Id`), when the server streams it.
    call_id: Option<CallId>,
    /// For cancelling the call.
    client: Client,
}

impl ToolStream {
    fn new(client: Client, request: Prepared, opened: Opened) -> Self {
        let what = request.label().to_string();
        let call_id = match &opened {
            Opened::Events(response) => response
                .headers()
                .get(CALL_ID_HEADER)
                .and_then(|id| id.to_str().ok())
                .and_then(|id| CallId::new(id).ok()),
            Opened::Complete(_) => None,
            #[cfg(feature = "ws")]
            Opened::Socket(connection) => connection.call_id(),
        };
        let canceller = client.clone();
        let events: Pin<Box<dyn Stream<Item = Result<StreamEvent>> + Send>> = match opened {
            // A server that does not stream: its answer is the result.
            Opened::Complete(response) => {
                let end = ToolEnd::new(response.status().as_u16(), response.to_value());
                let event = StreamEvent::new(1, ToolEvent::ToolEnd(end));
                Box::pin(futures_util::stream::iter([Ok(event)]))
            }
            #[cfg(feature = "ws")]
            Opened::Socket(connection) => {
                let events = connection.into_events(client.stream_idle_timeout());
                Call::stream(client, request, what.clone(), Box::pin(events))
            }
            Opened::Events(response) => {
                let events = client.decode(response);
                Call::stream(client, request, what.clone(), events)
            }
        };
        Self {
            events,
            what,
            call_id,
            client: canceller,
        }
    }

    /// The call's id, as the server named it (`Halo-Call-Id`); `None` when the server
    /// answered without a stream (the call is then over).
    ///
    /// To cancel the call while still reading its events (to see its `tool_error`), give
    /// it to [`Client::cancel`].
    #[must_use]
    pub fn call_id(&self) -> Option<&CallId> {
        self.call_id.as_ref()
    }

    /// Cancels the call (`DELETE /.well-known/halo/calls/{call_id}`): the server drops its
    /// handler and ends its stream with a `409` `tool_error`. The stream is dropped; to read
    /// that last event, cancel with [`Client::cancel`] and [`call_id`](Self::call_id)
    /// instead.
    ///
    /// ```no_run
    /// use halo_client::{CancelOutcome, Client, Method};
    /// use serde_json::json;
    ///
    /// # async fn run() -> halo_client::Result<()> {
    /// let client = Client::new("http://127.0.0.1:3000")?;
    /// let events = client
    ///     .invoke_stream("/api/reports", Method::POST, json!({"year": 2026}))
    ///     .await?;
    /// match events.cancel().await? {
    ///     CancelOutcome::Cancelled => println!("stopped"),
    ///     CancelOutcome::AlreadyEnded => println!("it had finished"),
    ///     _ => {}
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Client::cancel`]: [`Error::is_status`] with `404` when the server no longer
    /// keeps the call, or does not let this caller cancel it.
    pub async fn cancel(self) -> Result<CancelOutcome> {
        match &self.call_id {
            Some(id) => self.client.cancel(id).await,
            // The server answered without a stream: the call is over.
            None => Ok(CancelOutcome::AlreadyEnded),
        }
    }

    /// Reads the stream to its end: the call's result.
    ///
    /// # Errors
    /// An error item of the stream; a `tool_error` as an [`Error::is_status`] error with the
    /// problem's status and the problem itself as [`Error::problem`]; and, as
    /// [`Client::invoke`] reports such an answer, a `tool_end` with a 4xx or 5xx status.
    pub async fn result(mut self) -> Result<ToolEnd> {
        while let Some(event) = self.events.next().await {
            match event?.into_event() {
                ToolEvent::ToolEnd(end) => return self.end(end),
                ToolEvent::ToolError(problem) => return Err(self.problem(problem)),
                _ => {}
            }
        }
        Err(Error::request(format!(
            "{}: the event stream ended without a result",
            self.what
        )))
    }

    fn end(&self, end: ToolEnd) -> Result<ToolEnd> {
        match StatusCode::from_u16(end.status) {
            Ok(status) if status.is_client_error() || status.is_server_error() => {
                let response = ToolResponse::from_value(status, HeaderMap::new(), end.content);
                Err(Error::from_response(response).with_context(self.what.clone()))
            }
            _ => Ok(end),
        }
    }

    fn problem(&self, problem: Problem) -> Error {
        let status = StatusCode::from_u16(problem.status)
            .ok()
            .filter(|s| s.is_client_error() || s.is_server_error())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        let body = serde_json::to_value(problem).unwrap_or_default();
        Error::from_response(ToolResponse::from_value(status, headers, body))
            .with_context(self.what.clone())
    }
}

impl Stream for ToolStream {
    type Item = Result<StreamEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.events.as_mut().poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.events.size_hint()
    }
}

impl fmt::Debug for ToolStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolStream")
            .field("call", &self.what)
            .finish_non_exhaustive()
    }
}

/// What one attempt at a streamed call got.
pub(super) enum Opened {
    /// A `2xx` event stream, its body still to be read.
    Events(reqwest::Response),
    /// An open WebSocket stream.
    #[cfg(feature = "ws")]
    Socket(Box<super::socket::Connection>),
    /// Any other answer, read whole.
    Complete(ToolResponse),
}

impl Client {
    /// Opens a streamed call: the request under its retry policy until the answer's head
    /// arrives, through its host's circuit breaker (opening counts as a call; the stream,
    /// once open, is never cut by it); an event stream is read by the [`ToolStream`], any
    /// other answer whole.
    pub(crate) async fn stream(&self, mut request: Prepared) -> Result<ToolStream> {
        request
            .headers
            .insert(ACCEPT, HeaderValue::from_static(EVENT_STREAM));
        let opened = {
            let what = request.label();
            let pass = self.pass();
            let outcome = request
                .policy
                .run(request.safe, &what, || {
                    self.timed(self.open(&request, &pass))
                })
                .await;
            pass.finish(&request.url, Verdict::of(&outcome));
            let opened =
                outcome.map_err(|failure| failure.into_error().with_context(what.to_string()))?;
            match opened {
                Opened::Complete(response) => Opened::Complete(checked(response, &what)?),
                events => events,
            }
        };
        Ok(ToolStream::new(self.clone(), request, opened))
    }

    /// Streams a request made elsewhere as a tool call: for a gateway that forwards a
    /// caller's call. `method` on `url` (a path of this API, with its query, or an absolute
    /// URL) is sent with `headers` and `body` as they are, the client's credential added as
    /// for any call, and read as [`call_stream`](Self::call_stream) reads a call: resumed
    /// across dropped connections, a server that does not stream giving its answer as
    /// `tool_end`. Before the server names the call, a dropped request is sent again only
    /// when `safe` says that cannot repeat a side effect.
    ///
    /// ```no_run
    /// use halo_client::{Client, Method};
    /// use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
    ///
    /// # async fn run() -> halo_client::Result<()> {
    /// let client = Client::new("http://127.0.0.1:3000")?;
    /// let mut headers = HeaderMap::new();
    /// headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    /// let body = Some(bytes::Bytes::from_static(br#"{"style": "short"}"#));
    /// let end = client
    ///     .stream_request(Method::POST, "/api/books/1/summarize", headers, body, false)
    ///     .await?
    ///     .result()
    ///     .await?;
    /// println!("{} {}", end.status, end.content);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`invoke_stream`](Self::invoke_stream).
    pub async fn stream_request(
        &self,
        method: Method,
        url: &str,
        mut headers: HeaderMap,
        body: Option<Bytes>,
        safe: bool,
    ) -> Result<ToolStream> {
        let body = body.map(|bytes| Encoded {
            content_type: headers
                .remove(CONTENT_TYPE)
                .unwrap_or_else(|| HeaderValue::from_static("application/octet-stream")),
            bytes,
        });
        let request = Prepared {
            method,
            url: self.resolve(url)?,
            headers,
            body,
            key_header: None,
            safe,
            policy: self.inner.retry,
        };
        self.stream(request).await
    }

    /// One attempt at a streamed call: send, follow redirects, then keep an event stream
    /// open or read any other answer whole.
    async fn open(&self, request: &Prepared, pass: &Pass<'_>) -> Result<Opened, Failure> {
        #[cfg(feature = "ws")]
        if self.transport() == crate::Transport::WebSocket {
            return self.open_socket(request, pass).await;
        }
        let response = self.send(request, pass).await?;
        if response.status().is_success() && is_event_stream(response.headers()) {
            return Ok(Opened::Events(response));
        }
        read(response).await.map(Opened::Complete)
    }
}

impl Client {
    /// The events of an event stream's body, which may stay silent for at most the client's
    /// idle timeout.
    fn decode(&self, response: reqwest::Response) -> Events {
        let limit = self.stream_idle_timeout();
        let body = Idle {
            body: Box::pin(response.bytes_stream()),
            limit,
            timer: limit.map(|limit| Box::pin(tokio::time::sleep(limit))),
        };
        Box::pin(sse::decode(body, MAX_EVENT))
    }
}

/// Whether a response's `Content-Type` is `text/event-stream` (parameters aside).
fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| halo_protocol::essence(v).eq_ignore_ascii_case(EVENT_STREAM))
}

/// The events of one connection.
type Events = Pin<Box<dyn Stream<Item = Result<StreamEvent, Broken<Dropped>>> + Send>>;

/// A streamed call in progress.
struct Call {
    client: Client,
    /// The request as first sent (`Accept: text/event-stream` included).
    request: Prepared,
    what: String,
    /// The current connection's events; `None` once the stream has ended.
    events: Option<Events>,
    /// From `tool_start`, for resuming.
    call_id: Option<HeaderValue>,
    /// The id of the last event yielded.
    last_id: u64,
    /// The delays of the reconnections since the last new event.
    schedule: RetryDelays,
    /// Whether an event was yielded since the last reconnection.
    progressed: bool,
}

impl Call {
    /// The events of a call from those of its first connection, resumed on new ones.
    fn stream(
        client: Client,
        request: Prepared,
        what: String,
        events: Events,
    ) -> Pin<Box<dyn Stream<Item = Result<StreamEvent>> + Send>> {
        let schedule = client.retry_policy().schedule();
        let call = Self {
            client,
            request,
            what,
            events: Some(events),
            call_id: None,
            last_id: 0,
            schedule,
            progressed: false,
        };
        Box::pin(futures_util::stream::unfold(call, |mut call| async move {
            let item = call.next().await?;
            Some((item, call))
        }))
    }

    /// The next event, reconnecting as needed; `None` after the last.
    async fn next(&mut self) -> Option<Result<StreamEvent>> {
        let item = loop {
            let events = self.events.as_mut()?;
            let lost = match events.next().await {
                Some(Ok(event)) => match self.accept(event) {
                    Ok(Some(event)) => break Ok(event),
                    Ok(None) => continue,
                    Err(error) => break Err(error),
                },
                Some(Err(Broken::Invalid(error))) => break Err(error),
                Some(Err(Broken::Dropped(dropped))) => dropped.into_error(&self.what),
                None => Error::request(format!(
                    "{}: the event stream ended before tool_end or tool_error",
                    self.what
                )),
            };
            self.events = None;
            match self.reconnect(lost).await {
                Ok(events) => self.events = Some(events),
                Err(error) => break Err(error),
            }
        };
        if !matches!(&item, Ok(event) if !event.event().is_terminal()) {
            self.events = None;
        }
        Some(item)
    }

    /// Notes the call id of `tool_start`; drops an event seen before.
    fn accept(&mut self, event: StreamEvent) -> Result<Option<StreamEvent>> {
        if let ToolEvent::ToolStart(start) = event.event() {
            let call_id = HeaderValue::try_from(start.call_id.as_str()).map_err(|_| {
                Error::decode("the call id of tool_start cannot be sent in a header")
            })?;
            match &self.call_id {
                Some(known) if *known != call_id => {
                    return Err(Error::decode(
                        "the server started another call instead of resuming this one",
                    ));
                }
                _ => self.call_id = Some(call_id),
            }
        }
        if event.id() <= self.last_id {
            tracing::debug!(
                target: "halo_client::stream",
                id = event.id(),
                "skipping an event received before"
            );
            return Ok(None);
        }
        self.last_id = event.id();
        self.progressed = true;
        Ok(Some(event))
    }

    /// A new connection after `lost`: resuming the call once it has an id, sending the
    /// request again before that only when it is safe.
    async fn reconnect(&mut self, mut lost: Error) -> Result<Events> {
        if std::mem::take(&mut self.progressed) {
            self.schedule = self.client.retry_policy().schedule();
        }
        let mut request = self.request.clone();
        match &self.call_id {
            Some(call_id) => {
                let headers = &mut request.headers;
                headers.insert(CALL_ID_HEADER, call_id.clone());
                headers.insert(LAST_EVENT_ID, HeaderValue::from(self.last_id));
            }
            // Sending it again could run a side effect twice, or the tool refuses retries.
            None if !request.safe || request.policy == RetryPolicy::none() => return Err(lost),
            None => {}
        }
        loop {
            let Some(delay) = self.schedule.next_delay(None) else {
                return Err(lost);
            };
            tracing::warn!(
                target: "halo_client::retry",
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                last_event_id = self.last_id,
                reason = %lost,
                "reconnecting {}",
                self.what
            );
            tokio::time::sleep(delay).await;
            // A stream already open is not cut by its host's circuit breaker, nor counted.
            let pass = Pass::free();
            let failure = match self.client.timed(self.client.open(&request, &pass)).await {
                Ok(Opened::Events(response)) => return Ok(self.client.decode(response)),
                #[cfg(feature = "ws")]
                Ok(Opened::Socket(connection)) => {
                    let idle = self.client.stream_idle_timeout();
                    return Ok(Box::pin(connection.into_events(idle)));
                }
                Ok(Opened::Complete(response)) => return Err(self.refused(response)),
                Err(failure) => failure,
            };
            lost = match failure {
                Failure::Transport(error) => Error::transport(error),
                Failure::TimedOut => Error::timeout(),
                // Its credential could not be had for now: another try may get it.
                Failure::NotSent(error) => error,
                Failure::Status { response, .. } => return Err(self.refused(response)),
                Failure::Fatal(error) => return Err(error),
            }
            .with_context(self.what.clone());
        }
    }

    /// An answer to a reconnection that is not an event stream.
    fn refused(&self, response: ToolResponse) -> Error {
        let status = response.status();
        let error = if status.is_client_error() || status.is_server_error() {
            Error::from_response(response)
        } else {
            Error::decode(format!(
                "the server answered the reconnection without an event stream ({status})"
            ))
        };
        error.with_context(self.what.clone())
    }
}

/// How a connection was lost.
#[derive(Debug)]
pub(super) enum Dropped {
    /// The body failed.
    Body(reqwest::Error),
    /// Nothing arrived for this long.
    Idle(Duration),
    /// The socket closed or failed before the terminal event (what happened).
    #[cfg(feature = "ws")]
    Closed(String),
}

impl Dropped {
    /// The error of call `what`.
    fn into_error(self, what: &str) -> Error {
        match self {
            Self::Body(error) => Error::transport(error).with_context(what),
            Self::Idle(limit) => Error::timeout().with_context(format!(
                "{what}: the event stream was silent for {} ms",
                limit.as_millis()
            )),
            #[cfg(feature = "ws")]
            Self::Closed(what_happened) => Error::request(format!("{what}: {what_happened}")),
        }
    }
}

/// A body that may stay silent for at most `limit`: then it ends with [`Dropped::Idle`].
struct Idle {
    body: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    limit: Option<Duration>,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Stream for Idle {
    type Item = Result<Bytes, Dropped>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match this.body.as_mut().poll_next(cx) {
            Poll::Ready(item) => {
                if let (Some(timer), Some(limit)) = (&mut this.timer, this.limit) {
                    timer.as_mut().reset(Instant::now() + limit);
                }
                Poll::Ready(item.map(|chunk| chunk.map_err(Dropped::Body)))
            }
            Poll::Pending => {
                let expired = this
                    .timer
                    .as_mut()
                    .is_some_and(|timer| timer.as_mut().poll(cx).is_ready());
                match this.limit {
                    Some(limit) if expired => {
                        this.timer = None;
                        Poll::Ready(Some(Err(Dropped::Idle(limit))))
                    }
                    _ => Poll::Pending,
                }
            }
        }
    }
}
