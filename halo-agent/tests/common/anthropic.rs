//! A scripted server of Anthropic's Messages API, for tests and the providers' benchmark.
//!
//! [`ScriptedAnthropic`] serves `POST /v1/messages` on a loopback port. Each request takes
//! the next [`Reply`] of the script and answers it as the API streams: `message_start` (with
//! the input tokens), a `ping`, then per content block `content_block_start`, its deltas
//! (text in pieces of 4 characters, a tool call's arguments as `input_json_delta` pieces of
//! 5) and `content_block_stop`, then `message_delta` (the stop reason and output tokens)
//! and `message_stop`. A reply can also be an error status with the API's error body and a
//! `retry-after`, a body written by the test, an answer cut short, or no answer at all.
//! Every request is recorded. When the script runs out the server answers `400`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::stream;
use halo_tests::TestServer;
use halo_tests::llm::pieces;
use serde_json::{Value, json};

/// One answer of the script.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    kind: Kind,
    usage: (u64, u64),
    /// Only the first this many events are sent, then the body ends.
    cut_after: Option<usize>,
    delay: Duration,
}

#[derive(Debug, Clone)]
enum Kind {
    Blocks {
        text: Option<String>,
        /// Each call's name and its arguments as JSON text (valid or not).
        calls: Vec<(String, String)>,
    },
    Status {
        status: u16,
        body: Value,
        retry_after: Option<String>,
    },
    Raw(String),
    Hang,
}

impl Reply {
    fn of(kind: Kind) -> Self {
        Self {
            kind,
            usage: (10, 5),
            cut_after: None,
            delay: Duration::ZERO,
        }
    }

    /// Answers `text`, streamed in pieces of 4 characters; stops with `end_turn`.
    pub(crate) fn text(text: &str) -> Self {
        Self::of(Kind::Blocks {
            text: Some(text.to_owned()),
            calls: Vec::new(),
        })
    }

    /// Writes `text` (if any), then calls these tools with these arguments; stops with
    /// `tool_use`.
    pub(crate) fn calls<'a>(
        text: Option<&str>,
        calls: impl IntoIterator<Item = (&'a str, Value)>,
    ) -> Self {
        Self::raw_calls(
            text,
            calls
                .into_iter()
                .map(|(name, arguments)| (name.to_owned(), arguments.to_string())),
        )
    }

    /// As [`calls`](Self::calls), each call's arguments being this text as it is.
    pub(crate) fn raw_calls(
        text: Option<&str>,
        calls: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        Self::of(Kind::Blocks {
            text: text.map(str::to_owned),
            calls: calls.into_iter().collect(),
        })
    }

    /// Answers `status` with the API's error body of `kind` and `message`.
    pub(crate) fn status(status: u16, kind: &str, message: &str) -> Self {
        Self::of(Kind::Status {
            status,
            body: json!({"type": "error", "error": {"type": kind, "message": message},
                         "request_id": "req_scripted"}),
            retry_after: None,
        })
    }

    /// Answers `200` with this body as it is, as an event stream.
    pub(crate) fn raw(body: &str) -> Self {
        Self::of(Kind::Raw(body.to_owned()))
    }

    /// Never answers (the connection stays open and silent).
    pub(crate) fn hang() -> Self {
        Self::of(Kind::Hang)
    }

    /// Sends `retry-after: seconds` with an error status.
    pub(crate) fn retry_after(mut self, seconds: &str) -> Self {
        if let Kind::Status { retry_after, .. } = &mut self.kind {
            *retry_after = Some(seconds.to_owned());
        }
        self
    }

    /// Reports these tokens (10 input and 5 output by default).
    pub(crate) fn usage(mut self, input: u64, output: u64) -> Self {
        self.usage = (input, output);
        self
    }

    /// Ends the body after its first `events` events.
    pub(crate) fn cut_after(mut self, events: usize) -> Self {
        self.cut_after = Some(events);
        self
    }

    /// Waits this long before each event (none by default).
    pub(crate) fn every(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The events of a streamed reply, each one SSE frame (`event: ...\ndata: ...\n\n`);
    /// none for an error status or a hang, the body itself for a raw one.
    pub(crate) fn events(&self) -> Vec<String> {
        let (text, calls) = match &self.kind {
            Kind::Blocks { text, calls } => (text, calls),
            Kind::Raw(body) => return vec![body.clone()],
            Kind::Status { .. } | Kind::Hang => return Vec::new(),
        };
        let (input, output) = self.usage;
        let mut events = vec![
            json!({"type": "message_start", "message": {
                "id": "msg_scripted", "type": "message", "role": "assistant", "content": [],
                "model": "scripted", "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": input, "output_tokens": 1}}}),
            json!({"type": "ping"}),
        ];
        let mut index = 0;
        if let Some(text) = text {
            events.push(json!({"type": "content_block_start", "index": index,
                               "content_block": {"type": "text", "text": ""}}));
            events.extend(pieces(text, 4).into_iter().map(|piece| {
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "text_delta", "text": piece}})
            }));
            events.push(json!({"type": "content_block_stop", "index": index}));
            index += 1;
        }
        for (name, arguments) in calls {
            events.push(
                json!({"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": format!("toolu_{index}_{name}"), "name": name,
                "input": {}}}),
            );
            events.extend(pieces(arguments, 5).into_iter().map(|piece| {
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "input_json_delta", "partial_json": piece}})
            }));
            events.push(json!({"type": "content_block_stop", "index": index}));
            index += 1;
        }
        let stop_reason = if calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        events.push(json!({"type": "message_delta",
                           "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                           "usage": {"output_tokens": output}}));
        events.push(json!({"type": "message_stop"}));
        events
            .into_iter()
            .map(|event| {
                format!(
                    "event: {}\ndata: {event}\n\n",
                    event["type"].as_str().unwrap()
                )
            })
            .collect()
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) headers: HeaderMap,
    /// The body as JSON (`null` if it was not JSON).
    pub(crate) body: Value,
}

impl Recorded {
    /// The header `name`, if it was sent.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Debug, Default)]
struct Script {
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
}

type Shared = Arc<Mutex<Script>>;

fn lock(script: &Mutex<Script>) -> std::sync::MutexGuard<'_, Script> {
    script.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The scripted server (see the [module](self)); stopped when dropped.
#[derive(Debug)]
pub(crate) struct ScriptedAnthropic {
    server: TestServer,
    script: Shared,
}

impl ScriptedAnthropic {
    /// Serves `replies` on `127.0.0.1:<free port>`.
    pub(crate) async fn start(replies: impl IntoIterator<Item = Reply>) -> Self {
        let script: Shared = Arc::new(Mutex::new(Script {
            replies: replies.into_iter().collect(),
            requests: Vec::new(),
        }));
        let router = Router::new()
            .route("/v1/messages", post(messages))
            .with_state(Arc::clone(&script));
        Self {
            server: halo_tests::spawn(router).await,
            script,
        }
    }

    /// The base URL the provider takes: `http://127.0.0.1:<port>`, without `/v1`.
    pub(crate) fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// Adds replies at the end of the script.
    pub(crate) fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        lock(&self.script).replies.extend(replies);
    }

    /// Every request received so far, in order.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        lock(&self.script).requests.clone()
    }
}

async fn messages(State(script): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let reply = {
        let mut script = lock(&script);
        script.requests.push(Recorded { headers, body });
        script.replies.pop_front()
    };
    let Some(reply) = reply else {
        return Reply::status(
            400,
            "invalid_request_error",
            "the script has no more replies",
        )
        .respond();
    };
    reply.respond()
}

impl Reply {
    fn respond(self) -> Response {
        match &self.kind {
            Kind::Status {
                status,
                body,
                retry_after,
            } => {
                let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_GATEWAY);
                let mut response = (
                    status,
                    [(header::CONTENT_TYPE, "application/json")],
                    body.to_string(),
                )
                    .into_response();
                if let Some(seconds) = retry_after {
                    response
                        .headers_mut()
                        .insert(header::RETRY_AFTER, seconds.parse().unwrap());
                }
                response
            }
            Kind::Hang => (
                [(header::CONTENT_TYPE, "text/event-stream")],
                Body::from_stream(stream::pending::<Result<Bytes, Infallible>>()),
            )
                .into_response(),
            Kind::Blocks { .. } | Kind::Raw(_) => {
                let mut events = self.events();
                if let Some(keep) = self.cut_after {
                    events.truncate(keep);
                }
                let delay = self.delay;
                let body = stream::unfold(events.into_iter(), move |mut events| async move {
                    let event = events.next()?;
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    Some((Ok::<_, Infallible>(Bytes::from(event)), events))
                });
                (
                    [
                        (header::CONTENT_TYPE, "text/event-stream; charset=utf-8"),
                        (header::CACHE_CONTROL, "no-cache"),
                    ],
                    Body::from_stream(body),
                )
                    .into_response()
            }
        }
    }
}
