//! A scripted OpenAI-compatible chat-completions server, for tests of agents.
//!
//! [`ScriptedLlm`] serves `POST /v1/chat/completions` on a loopback port. Each request takes
//! the next [`Turn`] of the script the test wrote, and answers it the way OpenAI streams:
//! `chat.completion.chunk` events (`data: {...}`), text in small pieces, each tool call's
//! arguments split across several chunks (several calls per turn interleaved, as parallel
//! tool calls are), a last chunk with the token usage when the request asked for it
//! (`stream_options.include_usage`), then `data: [DONE]`. A turn can also be an error status
//! (an injected `500`, a `429`), or an answer that never comes.
//!
//! A request that does not ask for a stream (`"stream": true`) gets the turn whole, as one
//! `chat.completion` object with its message, tool calls and usage.
//!
//! Every request is recorded, so a test can assert what the model saw (and that no secret
//! was ever sent to it); a test can also await a client leaving an answer before its end
//! ([`ScriptedLlm::cut_short`]). When the script runs out, the server answers `400` with an
//! OpenAI error body, which clients do not retry: a test fails clearly instead of hanging.
//!
//! ```no_run
//! use halo_tests::llm::{ScriptedLlm, Turn, Call};
//! use serde_json::json;
//! # async fn run() {
//!
//! let llm = ScriptedLlm::start([
//!     Turn::status(500),
//!     Turn::calls([Call::new("search_books", json!({"q": "Dune"}))]),
//!     Turn::text("Dune is in stock."),
//! ])
//! .await;
//! // ... point an agent at llm.base_url() ...
//! assert_eq!(llm.requests().len(), 3);
//! # }
//! ```

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
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::TestServer;

/// One answer of the script.
#[derive(Debug, Clone)]
pub struct Turn {
    kind: Kind,
    usage: (u64, u64),
    delay: Duration,
}

#[derive(Debug, Clone)]
enum Kind {
    Text(String),
    Calls {
        text: Option<String>,
        calls: Vec<Call>,
    },
    Status(u16, Value),
    Hang,
}

/// A tool call the scripted model makes.
#[derive(Debug, Clone)]
pub struct Call {
    name: String,
    arguments: String,
}

impl Call {
    /// A call of `name` with `arguments` (written as JSON text).
    #[must_use]
    pub fn new(name: &str, arguments: Value) -> Self {
        Self {
            name: name.to_owned(),
            arguments: arguments.to_string(),
        }
    }

    /// A call of `name` whose arguments are `text` as it is, valid JSON or not.
    #[must_use]
    pub fn raw(name: &str, text: &str) -> Self {
        Self {
            name: name.to_owned(),
            arguments: text.to_owned(),
        }
    }
}

impl Turn {
    fn of(kind: Kind) -> Self {
        Self {
            kind,
            usage: (10, 5),
            delay: Duration::from_millis(1),
        }
    }

    /// Answers `text`, streamed in pieces of a few characters.
    #[must_use]
    pub fn text(text: &str) -> Self {
        Self::of(Kind::Text(text.to_owned()))
    }

    /// Calls these tools (all in one turn, as parallel tool calls), each call's arguments
    /// split across several chunks and the calls' pieces interleaved.
    #[must_use]
    pub fn calls(calls: impl IntoIterator<Item = Call>) -> Self {
        Self::of(Kind::Calls {
            text: None,
            calls: calls.into_iter().collect(),
        })
    }

    /// Writes `text`, then calls these tools in the same turn.
    #[must_use]
    pub fn text_and_calls(text: &str, calls: impl IntoIterator<Item = Call>) -> Self {
        Self::of(Kind::Calls {
            text: Some(text.to_owned()),
            calls: calls.into_iter().collect(),
        })
    }

    /// Answers with an error status and an OpenAI error body, without a stream.
    #[must_use]
    pub fn status(status: u16) -> Self {
        Self::status_with(
            status,
            json!({"error": {"message": format!("scripted failure {status}"),
                             "type": "server_error", "param": null, "code": null}}),
        )
    }

    /// Answers with an error status and `body`.
    #[must_use]
    pub fn status_with(status: u16, body: Value) -> Self {
        Self::of(Kind::Status(status, body))
    }

    /// Never answers (the connection stays open and silent).
    #[must_use]
    pub fn hang() -> Self {
        Self::of(Kind::Hang)
    }

    /// Reports this usage in the last chunk (10 prompt and 5 completion tokens by default).
    #[must_use]
    pub fn usage(mut self, prompt: u64, completion: u64) -> Self {
        self.usage = (prompt, completion);
        self
    }

    /// Waits this long between two chunks (1 ms by default).
    #[must_use]
    pub fn every(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The request's headers.
    pub headers: HeaderMap,
    /// The request body (JSON; `null` if it was not JSON).
    pub body: Value,
}

impl Recorded {
    /// The `Authorization` header, if any.
    #[must_use]
    pub fn authorization(&self) -> Option<&str> {
        self.headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
    }

    /// The messages sent, as JSON.
    #[must_use]
    pub fn messages(&self) -> &[Value] {
        self.body["messages"].as_array().map_or(&[], Vec::as_slice)
    }

    /// The names of the tools offered.
    #[must_use]
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|tool| tool["function"]["name"].as_str())
            .map(str::to_owned)
            .collect()
    }
}

#[derive(Debug, Default)]
struct Script {
    turns: VecDeque<Turn>,
    requests: Vec<Recorded>,
}

/// What the server's requests share: the script, and how many streamed answers were cut
/// short.
#[derive(Debug, Clone)]
struct Shared {
    script: Arc<Mutex<Script>>,
    cut_short: Arc<watch::Sender<usize>>,
}

/// The scripted server (see the [module](self)); stopped when dropped.
#[derive(Debug)]
pub struct ScriptedLlm {
    server: TestServer,
    shared: Shared,
}

fn lock(script: &Mutex<Script>) -> std::sync::MutexGuard<'_, Script> {
    script.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ScriptedLlm {
    /// Serves `turns` on `127.0.0.1:<free port>`.
    ///
    /// # Panics
    /// When no local port can be bound.
    pub async fn start(turns: impl IntoIterator<Item = Turn>) -> Self {
        let shared = Shared {
            script: Arc::new(Mutex::new(Script {
                turns: turns.into_iter().collect(),
                requests: Vec::new(),
            })),
            cut_short: Arc::new(watch::Sender::new(0)),
        };
        let router = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(shared.clone());
        Self {
            server: crate::spawn(router).await,
            shared,
        }
    }

    /// The base URL an OpenAI client takes: `http://127.0.0.1:<port>/v1`.
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    /// Adds turns at the end of the script.
    pub fn push(&self, turns: impl IntoIterator<Item = Turn>) {
        lock(&self.shared.script).turns.extend(turns);
    }

    /// Every request received so far, in order.
    #[must_use]
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.script).requests.clone()
    }

    /// Every request received so far as one text (headers and bodies), to search for what
    /// must never be sent.
    #[must_use]
    pub fn transcript(&self) -> String {
        let requests = self.requests();
        let mut text = String::new();
        for request in &requests {
            for (name, value) in &request.headers {
                text.push_str(name.as_str());
                text.push_str(": ");
                text.push_str(&String::from_utf8_lossy(value.as_bytes()));
                text.push('\n');
            }
            text.push_str(&request.body.to_string());
            text.push('\n');
        }
        text
    }

    /// How many turns are left.
    #[must_use]
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).turns.len()
    }

    /// Waits until a client leaves a streamed answer before its end (drops the response, or
    /// the connection breaks): how a test sees that an agent stopped reading.
    pub async fn cut_short(&self) {
        let mut cut_short = self.shared.cut_short.subscribe();
        // The sender lives as long as `self`: the wait ends with a count.
        let _count = cut_short.wait_for(|count| *count > 0).await;
    }
}

/// A streamed answer not yet sent to its end: counted as cut short when it is dropped so.
struct Unfinished(Option<Arc<watch::Sender<usize>>>);

impl Unfinished {
    /// The last frame is on its way: the answer is no longer cut short when dropped.
    fn finished(&mut self) {
        self.0 = None;
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(cut_short) = self.0.take() {
            cut_short.send_modify(|count| *count += 1);
        }
    }
}

async fn complete(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let turn = {
        let mut script = lock(&shared.script);
        script.requests.push(Recorded {
            headers,
            body: body.clone(),
        });
        script.turns.pop_front()
    };
    let Some(turn) = turn else {
        return json_answer(
            StatusCode::BAD_REQUEST,
            json!({"error": {"message": "the scripted model has no more turns",
                             "type": "invalid_request_error", "param": null, "code": null}}),
        );
    };
    let model = body["model"].as_str().unwrap_or("scripted").to_owned();
    let with_usage = body["stream_options"]["include_usage"] == json!(true);
    let (prompt, completion) = turn.usage;
    if body["stream"] != json!(true) {
        return whole(turn, &model);
    }
    let chunks = match turn.kind {
        Kind::Status(status, body) => {
            return json_answer(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                body,
            );
        }
        Kind::Hang => {
            let body = Body::from_stream(stream::pending::<Result<Bytes, Infallible>>());
            return ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response();
        }
        Kind::Text(text) => {
            let mut deltas = vec![json!({"role": "assistant", "content": ""})];
            deltas.extend(pieces(&text, 4).into_iter().map(|p| json!({"content": p})));
            let mut chunks: Vec<Value> = deltas.into_iter().map(|d| choice(d, None)).collect();
            chunks.push(choice(json!({}), Some("stop")));
            chunks
        }
        Kind::Calls { text, calls } => calls_chunks(text.as_deref(), &calls),
    };
    let id = "chatcmpl-scripted";
    let mut frames: Vec<String> = chunks
        .into_iter()
        .map(|mut chunk| {
            chunk["id"] = json!(id);
            chunk["object"] = json!("chat.completion.chunk");
            chunk["created"] = json!(1_767_225_600);
            chunk["model"] = json!(model);
            if with_usage {
                chunk["usage"] = Value::Null;
            }
            format!("data: {chunk}\n\n")
        })
        .collect();
    if with_usage {
        let usage = json!({"id": id, "object": "chat.completion.chunk", "created": 1_767_225_600,
                           "model": model, "choices": [],
                           "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                     "total_tokens": prompt + completion}});
        frames.push(format!("data: {usage}\n\n"));
    }
    frames.push("data: [DONE]\n\n".to_owned());
    let delay = turn.delay;
    let unfinished = Unfinished(Some(Arc::clone(&shared.cut_short)));
    let body = stream::unfold(
        (frames.into_iter(), unfinished),
        move |(mut frames, mut unfinished)| async move {
            let frame = frames.next()?;
            tokio::time::sleep(delay).await;
            if frames.as_slice().is_empty() {
                unfinished.finished();
            }
            Some((
                Ok::<_, Infallible>(Bytes::from(frame)),
                (frames, unfinished),
            ))
        },
    );
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// A turn answered whole (`"object": "chat.completion"`), to a request that did not ask for
/// a stream.
fn whole(turn: Turn, model: &str) -> Response {
    let (prompt, completion) = turn.usage;
    let (content, calls) = match turn.kind {
        Kind::Status(status, body) => {
            return json_answer(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                body,
            );
        }
        Kind::Hang => {
            let body = Body::from_stream(stream::pending::<Result<Bytes, Infallible>>());
            return ([(header::CONTENT_TYPE, "application/json")], body).into_response();
        }
        Kind::Text(text) => (Some(text), Vec::new()),
        Kind::Calls { text, calls } => (text, calls),
    };
    let finish_reason = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                json!({"id": format!("call_{index}_{}", call.name), "type": "function",
                       "function": {"name": call.name, "arguments": call.arguments}})
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    let answer = json!({
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 1_767_225_600,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion}
    });
    json_answer(StatusCode::OK, answer)
}

/// The chunks of a turn that calls tools: any text first, then each call's id and name, then
/// the arguments in pieces, the calls' pieces taking turns.
fn calls_chunks(text: Option<&str>, calls: &[Call]) -> Vec<Value> {
    let mut chunks = vec![choice(json!({"role": "assistant", "content": null}), None)];
    if let Some(text) = text {
        chunks.extend(
            pieces(text, 4)
                .into_iter()
                .map(|p| choice(json!({"content": p}), None)),
        );
    }
    for (index, call) in calls.iter().enumerate() {
        chunks.push(choice(
            json!({"tool_calls": [{"index": index, "id": format!("call_{index}_{}", call.name),
                                   "type": "function",
                                   "function": {"name": call.name, "arguments": ""}}]}),
            None,
        ));
    }
    let split: Vec<Vec<String>> = calls.iter().map(|c| pieces(&c.arguments, 5)).collect();
    let rounds = split.iter().map(Vec::len).max().unwrap_or(0);
    for round in 0..rounds {
        for (index, parts) in split.iter().enumerate() {
            if let Some(part) = parts.get(round) {
                chunks.push(choice(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": part}}]}),
                    None,
                ));
            }
        }
    }
    chunks.push(choice(json!({}), Some("tool_calls")));
    chunks
}

fn choice(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({"choices": [{"index": 0, "delta": delta, "logprobs": null,
                        "finish_reason": finish_reason}]})
}

/// `text` in pieces of at most `size` characters, as a streaming model writes it.
#[must_use]
pub fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect()
}

/// `body` as JSON with `status`.
fn json_answer(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}
