//! A hand-written HTTP/1.1 server that plays a script of answers and failures.
//!
//! Every connection carries one request and is closed after the answer
//! (`Connection: close`), so "the next connection" and "the next request" coincide.
//! Discovery requests (`OPTIONS` with the HALO `Accept`) are answered from the registered
//! schemas and never consume the script. A connection-level fault
//! ([`Action::ResetBeforeRead`]) at the head of the script fires on the next connection,
//! whatever it carries, so tests describe first (warming the client's cache) and script
//! after.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::lock;
pub use super::wire::{Reply, Request};
use super::wire::{read_request, reset, write};

/// What the server does with the next request (or connection).
#[derive(Debug, Clone)]
pub enum Action {
    /// Answer.
    Reply(Reply),
    /// Answer `status` with `Retry-After` as an HTTP date `after` from now.
    RetryAfterDate { status: u16, after: Duration },
    /// Reset the next connection without reading anything.
    ResetBeforeRead,
    /// Read the whole request, then reset the connection without answering.
    ResetAfterRead,
    /// Wait, then answer.
    Delay(Duration, Reply),
}

impl Action {
    /// A bare `status` answer.
    pub fn status(status: u16) -> Self {
        Self::Reply(Reply::status(status))
    }

    /// `status` with `Retry-After: <seconds>`.
    pub fn retry_after(status: u16, seconds: u64) -> Self {
        Self::Reply(Reply::status(status).header("Retry-After", &seconds.to_string()))
    }

    /// A redirect to `location`.
    pub fn redirect(status: u16, location: &str) -> Self {
        Self::Reply(Reply::status(status).header("Location", location))
    }

    /// A `200` after `delay`.
    pub fn slow(delay: Duration) -> Self {
        Self::Delay(delay, Reply::json(200, &json!({"slow": true})))
    }
}

#[derive(Debug, Default)]
struct State {
    connections: AtomicUsize,
    requests: Mutex<Vec<Request>>,
    /// Woken whenever a request joins `requests`.
    arrived: Notify,
    discoveries: Mutex<Vec<Request>>,
    script: Mutex<VecDeque<Action>>,
    /// Path template → discovery answer.
    described: Mutex<Vec<(String, Reply)>>,
    otherwise: Mutex<Option<Reply>>,
}

/// A scripted server on `127.0.0.1:<port>`, stopped when dropped.
#[derive(Debug)]
pub struct Server {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    pub addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl Server {
    /// Starts on a free port.
    pub async fn start() -> Self {
        Self::start_on("127.0.0.1:0".parse().expect("an address")).await
    }

    /// Starts on `addr` (a port that was free a moment ago, for refused-connection tests).
    pub async fn start_on(addr: SocketAddr) -> Self {
        let listener = TcpListener::bind(addr).await.expect("bind");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(State::default());
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                shared.connections.fetch_add(1, Ordering::SeqCst);
                // What it writes goes out at once, never held for a delayed ACK: tests on
                // tokio's paused clock see no real time pass.
                let _ = stream.set_nodelay(true);
                tokio::spawn(handle(Arc::clone(&shared), stream));
            }
        });
        Self {
            base: format!("http://{addr}"),
            addr,
            state,
            task,
        }
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Answers discovery of `template` (`{name}` matches any segment) with `schemas`: an
    /// array, or a single object as older servers send.
    pub fn describe(&self, template: &str, schemas: &Value) {
        let reply = Reply::status(200)
            .header("Content-Type", "application/llm+json")
            .header("Cache-Control", "public, max-age=60")
            .header("ETag", &format!("\"{:x}\"", schemas.to_string().len()))
            .header("Vary", "Accept")
            .body(schemas.to_string());
        self.describe_with(template, reply);
    }

    /// Answers discovery of `template` with any reply.
    pub fn describe_with(&self, template: &str, reply: Reply) {
        lock(&self.state.described).push((template.to_owned(), reply));
    }

    /// Appends actions to the script.
    pub fn script(&self, actions: impl IntoIterator<Item = Action>) {
        lock(&self.state.script).extend(actions);
    }

    /// The answer once the script is spent (by default, `200` with a JSON echo of the
    /// method and target).
    pub fn otherwise(&self, reply: Reply) {
        *lock(&self.state.otherwise) = Some(reply);
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Requests read so far, discovery excluded.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.state.requests).clone()
    }

    /// Waits until the server has read `count` requests (discovery aside), however long
    /// that takes: bound it with the test's own timeout if it may never happen.
    pub async fn await_requests(&self, count: usize) {
        loop {
            let mut arrived = std::pin::pin!(self.state.arrived.notified());
            // Registered before the count is read, so no request slips in between.
            arrived.as_mut().enable();
            if lock(&self.state.requests).len() >= count {
                return;
            }
            arrived.await;
        }
    }

    /// Discovery requests read so far.
    pub fn discoveries(&self) -> Vec<Request> {
        lock(&self.state.discoveries).clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(state: Arc<State>, mut stream: TcpStream) {
    {
        let mut script = lock(&state.script);
        if matches!(script.front(), Some(Action::ResetBeforeRead)) {
            script.pop_front();
            drop(script);
            reset(stream);
            return;
        }
    }
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    if is_discovery(&request) {
        let reply = discovery(&state, request.path());
        lock(&state.discoveries).push(request);
        write(&mut stream, &reply).await;
        return;
    }
    let echo = Reply::json(
        200,
        &json!({"method": request.method, "target": request.target}),
    );
    lock(&state.requests).push(request);
    state.arrived.notify_waiters();
    let action = lock(&state.script).pop_front();
    let action =
        action.unwrap_or_else(|| Action::Reply(lock(&state.otherwise).clone().unwrap_or(echo)));
    match action {
        Action::Reply(reply) => write(&mut stream, &reply).await,
        Action::RetryAfterDate { status, after } => {
            let date = httpdate::fmt_http_date(SystemTime::now() + after);
            write(
                &mut stream,
                &Reply::status(status).header("Retry-After", &date),
            )
            .await;
        }
        Action::ResetBeforeRead | Action::ResetAfterRead => reset(stream),
        Action::Delay(delay, reply) => {
            tokio::time::sleep(delay).await;
            write(&mut stream, &reply).await;
        }
    }
}

/// Whether a request is HALO discovery: `OPTIONS` asking for `application/llm+json`.
fn is_discovery(request: &Request) -> bool {
    request.method == "OPTIONS"
        && request
            .header("accept")
            .is_some_and(|accept| accept.contains("application/llm+json"))
}

/// The registered answer for a discovery of `path`, or a `404` problem.
fn discovery(state: &State, path: &str) -> Reply {
    lock(&state.described)
        .iter()
        .find(|(template, _)| matches(template, path))
        .map_or_else(
            || {
                Reply::status(404)
                    .header("Content-Type", "application/problem+json")
                    .body(
                        json!({"type": "about:blank", "title": "Not Found", "status": 404})
                            .to_string(),
                    )
            },
            |(_, reply)| reply.clone(),
        )
}

fn matches(template: &str, path: &str) -> bool {
    let template: Vec<&str> = template.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    template.len() == path.len()
        && template
            .iter()
            .zip(&path)
            .all(|(t, p)| t == p || (t.starts_with('{') && t.ends_with('}') && !p.is_empty()))
}

/// A minimal schema of `method` on `url`, with `extra` fields merged in.
pub fn schema(method: &str, url: &str, extra: &Value) -> Value {
    let mut schema = json!({"call": {"method": method, "url": url}});
    if let (Some(schema), Some(extra)) = (schema.as_object_mut(), extra.as_object()) {
        for (key, value) in extra {
            schema.insert(key.clone(), value.clone());
        }
    }
    schema
}
