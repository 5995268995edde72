//! Streamed calls on real sockets: an event-stream server with a replay buffer per call, and
//! a TCP proxy that cuts connections part-way through an event stream (`proxy.rs`, beside
//! this file: halo-cli's tests and the workspace's include this file alone, by path).

// Relative to this file's folder however this file is included.
#[path = "proxy.rs"]
mod proxy;

// Not every test uses the proxy.
#[allow(unused_imports)]
pub use self::proxy::{Cut, Proxy};

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Serves `app` on `127.0.0.1:<free port>`: its address, and the task to abort to stop it.
/// The `halo` server of halo-client's test support uses it too (it is here because this
/// file is also included alone, by halo-cli's tests and the workspace's).
pub async fn serve(app: Router) -> (SocketAddr, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("serve");
    });
    (addr, task)
}

/// What every call of the server does.
#[derive(Debug, Clone)]
pub struct Script {
    /// How many `tool_progress` events come between `tool_start` and the end.
    pub progress: u64,
    /// The time between two events.
    pub every: Duration,
    /// An `agent_note` event (not a tool event) before each `tool_progress`.
    pub unknown: bool,
    /// End with `tool_error` (a `503` problem) instead of `tool_end`.
    pub error: bool,
}

/// Builds a [`Server`].
#[derive(Debug)]
#[must_use]
pub struct Builder {
    script: Script,
    plain: bool,
    keep_calls: bool,
    replay_all: bool,
    keep_alive: Option<Duration>,
    stall: Option<(u64, Duration)>,
}

impl Builder {
    /// `progress` events between start and end.
    pub fn progress(mut self, progress: u64) -> Self {
        self.script.progress = progress;
        self
    }

    /// The time between two events (5 ms by default).
    pub fn every(mut self, every: Duration) -> Self {
        self.script.every = every;
        self
    }

    /// An `agent_note` event before each progress event.
    pub fn unknown_events(mut self) -> Self {
        self.script.unknown = true;
        self
    }

    /// Calls end with `tool_error`.
    pub fn failing(mut self) -> Self {
        self.script.error = true;
        self
    }

    /// Answers with the final result only, as a server that does not stream.
    pub fn plain(mut self) -> Self {
        self.plain = true;
        self
    }

    /// Forgets every call at once: resumptions get `410 Gone`.
    pub fn forgetful(mut self) -> Self {
        self.keep_calls = false;
        self
    }

    /// Replays a resumed call from its first event, whatever `Last-Event-ID` says.
    pub fn replay_all(mut self) -> Self {
        self.replay_all = true;
        self
    }

    /// A `: keep-alive` comment whenever the stream has been silent for `every`.
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.keep_alive = Some(every);
        self
    }

    /// A first connection goes silent for `silence` after event `id`.
    pub fn stall_after(mut self, id: u64, silence: Duration) -> Self {
        self.stall = Some((id, silence));
        self
    }

    /// Starts the server on `127.0.0.1:0`.
    pub async fn start(self) -> Server {
        let state = Arc::new(Shared {
            settings: self,
            executions: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
            calls: Mutex::new(HashMap::new()),
        });
        let app = Router::new()
            .route("/jobs", post(run).options(describe))
            .route("/reports", get(run).options(describe))
            .with_state(Arc::clone(&state));
        let (addr, task) = serve(app).await;
        Server {
            base: format!("http://{addr}"),
            addr,
            state,
            task,
        }
    }
}

/// One tool request as the server saw it (discovery excluded).
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub uri: String,
    pub headers: HeaderMap,
}

impl Seen {
    /// A request header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

/// The events of one call so far, as `(id, event name, data)`; watched by its connections.
type Log = watch::Sender<Vec<(u64, String, String)>>;

#[derive(Debug)]
struct Shared {
    settings: Builder,
    executions: AtomicUsize,
    requests: Mutex<Vec<Seen>>,
    calls: Mutex<HashMap<String, Arc<Log>>>,
}

/// An event-stream server of two tools, `POST /jobs` (not idempotent) and `GET /reports`,
/// that describes them, streams each call from a replay buffer, and resumes a call from
/// `Last-Event-ID` + `Halo-Call-Id`. Stopped when dropped.
#[derive(Debug)]
pub struct Server {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    pub addr: SocketAddr,
    state: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Server {
    pub fn builder() -> Builder {
        Builder {
            script: Script {
                progress: 2,
                every: Duration::from_millis(5),
                unknown: false,
                error: false,
            },
            plain: false,
            keep_calls: true,
            replay_all: false,
            keep_alive: None,
            stall: None,
        }
    }

    /// How many calls ran (resumptions run nothing).
    pub fn executions(&self) -> usize {
        self.state.executions.load(Ordering::SeqCst)
    }

    /// The tool requests seen so far.
    pub fn requests(&self) -> Vec<Seen> {
        lock(&self.state.requests).clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `OPTIONS`: the schema of the path's tool.
async fn describe(uri: Uri) -> Response {
    let schema = match uri.path() {
        "/jobs" => json!({"call": {"method": "POST", "url": "/jobs"},
                          "limits": {"idempotent": false},
                          "stream": {"events": ["tool_progress"]}}),
        _ => json!({"call": {"method": "GET", "url": "/reports"},
                    "stream": {"events": ["tool_progress"]}}),
    };
    (
        [(header::CONTENT_TYPE, "application/llm+json")],
        json!([schema]).to_string(),
    )
        .into_response()
}

fn problem(status: u16, detail: &str) -> Response {
    (
        StatusCode::from_u16(status).expect("a status"),
        [(header::CONTENT_TYPE, "application/problem+json")],
        json!({"type": "about:blank", "status": status, "detail": detail}).to_string(),
    )
        .into_response()
}

/// A tool call: `{"reject": 422}` (in the body or the query) is refused before anything
/// runs; a request with `Halo-Call-Id` resumes that call.
async fn run(
    State(state): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    lock(&state.requests).push(Seen {
        method: method.to_string(),
        uri: uri.to_string(),
        headers: headers.clone(),
    });
    let args: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let reject = args["reject"].as_u64().or_else(|| {
        uri.query()?
            .strip_prefix("reject=")
            .and_then(|status| status.parse().ok())
    });
    if let Some(status) = reject {
        return problem(u16::try_from(status).unwrap(), "rejected before the stream");
    }
    let settings = &state.settings;
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(call_id) = text("halo-call-id") {
        let log = lock(&state.calls).get(call_id).cloned();
        let Some(log) = log.filter(|_| settings.keep_calls) else {
            return problem(410, "this call is no longer kept");
        };
        let after = match text("last-event-id") {
            Some(_) if settings.replay_all => 0,
            Some(id) => id.parse().unwrap_or(0),
            None => 0,
        };
        return stream(settings, &log, after, None);
    }

    let n = state.executions.fetch_add(1, Ordering::SeqCst) + 1;
    let call_id = format!("c-{n}");
    let log = Arc::new(watch::Sender::new(Vec::new()));
    lock(&state.calls).insert(call_id.clone(), Arc::clone(&log));
    let tool = if uri.path() == "/jobs" {
        "create_job"
    } else {
        "get_report"
    };
    let producer = tokio::spawn(produce(
        Arc::clone(&log),
        settings.script.clone(),
        call_id,
        tool,
    ));
    let accepts_events = text("accept").is_some_and(|accept| accept.contains("text/event-stream"));
    if settings.plain || !accepts_events {
        producer.await.expect("the call runs");
        let result = log.borrow().last().cloned().expect("a last event");
        let data: Value = serde_json::from_str(&result.2).unwrap();
        return (
            StatusCode::from_u16(
                u16::try_from(data["data"]["status"].as_u64().unwrap_or(500)).unwrap(),
            )
            .unwrap(),
            axum::Json(data["data"]["content"].clone()),
        )
            .into_response();
    }
    stream(settings, &log, 0, settings.stall)
}

/// Runs a call: its events go to the log, `every` apart.
async fn produce(log: Arc<Log>, script: Script, call_id: String, tool: &'static str) {
    let push = |name: &str, data: Value| {
        log.send_modify(|events| {
            let id = events.len() as u64 + 1;
            let data = json!({"type": name, "data": data}).to_string();
            events.push((id, name.to_owned(), data));
        });
    };
    push("tool_start", json!({"call_id": call_id, "tool": tool}));
    // Each progress event, then the end, one pace apart.
    for step in 1..=script.progress + 1 {
        tokio::time::sleep(script.every).await;
        if step > script.progress {
            break;
        }
        if script.unknown {
            push(
                "agent_note",
                json!({"text": format!("thinking about {step}")}),
            );
        }
        push(
            "tool_progress",
            json!({"step": step, "total": script.progress, "message": format!("step {step}")}),
        );
    }
    if script.error {
        push(
            "tool_error",
            json!({"type": "about:blank", "title": "Service Unavailable", "status": 503,
                   "detail": "the backend went away"}),
        );
    } else {
        push(
            "tool_end",
            json!({"status": 200, "content": {"steps": script.progress}, "meta": {"ms": 1}}),
        );
    }
}

/// The events of a call after id `after`, as an event stream that ends after the terminal
/// event; silent for a while after `stall.0` when asked.
fn stream(settings: &Builder, log: &Log, after: u64, stall: Option<(u64, Duration)>) -> Response {
    let receiver = log.subscribe();
    let events = futures_util::stream::unfold(
        (receiver, after, false),
        move |(mut receiver, last, done)| async move {
            if done {
                return None;
            }
            let next = loop {
                let next = receiver
                    .borrow_and_update()
                    .iter()
                    .find(|(id, ..)| *id > last)
                    .cloned();
                match next {
                    Some(next) => break next,
                    None => receiver.changed().await.ok()?,
                }
            };
            if let Some((at, silence)) = stall
                && next.0 == at + 1
            {
                tokio::time::sleep(silence).await;
            }
            let (id, name, data) = next;
            let terminal = name == "tool_end" || name == "tool_error";
            let event = Event::default().event(name).id(id.to_string()).data(data);
            Some((Ok::<_, Infallible>(event), (receiver, id, terminal)))
        },
    );
    match settings.keep_alive {
        Some(every) => Sse::new(events)
            .keep_alive(KeepAlive::new().interval(every).text("keep-alive"))
            .into_response(),
        None => Sse::new(events).into_response(),
    }
}
