//! A HALO API on a real socket, recording what it sees: the [`shop`](super::shop) (or a
//! generated API) behind `HaloLayer`, and an outermost middleware that records every
//! request with its answer.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::HttpBody as _;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use halo_axum::{HaloBuilder, HaloLayer};
use serde_json::Value;
use tokio::task::JoinHandle;

use super::lock;
use super::shop::{many, shop};
use super::sse::serve;

/// How many times each tool's handler ran (discovery never reaches them).
#[derive(Debug, Default)]
pub struct Executions {
    pub get_item: AtomicUsize,
    pub search: AtomicUsize,
    pub create_order: AtomicUsize,
    pub pay: AtomicUsize,
    pub put_item: AtomicUsize,
    pub delete_item: AtomicUsize,
    pub validate: AtomicUsize,
    pub note: AtomicUsize,
    pub tag_all: AtomicUsize,
    pub write_note: AtomicUsize,
    pub pop: AtomicUsize,
}

/// Reads a counter.
pub fn count(counter: &AtomicUsize) -> usize {
    counter.load(Ordering::SeqCst)
}

/// One request as the server saw it, with what it answered.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// The path and query exactly as sent (still percent-encoded).
    pub uri: String,
    pub headers: HeaderMap,
    pub status: u16,
    /// The exact size of the response body, when the body knows it.
    pub body_len: Option<u64>,
}

impl Seen {
    /// A request header as text (`None` when absent).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// The path without the query.
    pub fn path(&self) -> &str {
        self.uri.split('?').next().unwrap_or_default()
    }
}

/// State shared by the handlers and the recording middleware.
#[derive(Debug, Default)]
pub struct Recorder {
    pub executions: Executions,
    seen: Mutex<Vec<Seen>>,
    record: bool,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    fail_next: AtomicUsize,
    options_latency: Duration,
    /// What `POST /payments` answered, by idempotency key: a repeat gets the stored answer
    /// and runs nothing, as on a server that honours the key.
    pub(super) payments: Mutex<HashMap<String, Value>>,
}

impl Recorder {
    /// A `503` instead of the tool's answer while `fail_next` is positive (the execution
    /// has been counted already: the side effect "happened").
    pub(super) fn failure(&self) -> Option<Response> {
        self.fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .ok()
            .map(|_| StatusCode::SERVICE_UNAVAILABLE.into_response())
    }
}

/// Which API the server describes.
#[derive(Debug, Clone, Copy)]
enum Api {
    /// The small shop below, with real handlers.
    Shop,
    /// A generated document of `paths` paths with `methods` methods each, discovery only.
    Many { paths: usize, methods: usize },
}

/// Builds a [`Server`].
#[derive(Debug)]
#[must_use]
pub struct Builder {
    api: Api,
    max_age: Duration,
    options_latency: Duration,
    record: bool,
}

impl Builder {
    /// `Cache-Control: max-age` of discovery answers (60 s by default).
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// An artificial delay before every `OPTIONS` is answered.
    pub fn options_latency(mut self, latency: Duration) -> Self {
        self.options_latency = latency;
        self
    }

    /// Whether requests are recorded (turned off by benchmarks).
    pub fn record(mut self, record: bool) -> Self {
        self.record = record;
        self
    }

    /// Describes `paths` generated paths (`/tools/t0` ...) with `methods` methods each
    /// (GET, then DELETE) instead of the shop. Only discovery is served.
    pub fn many(mut self, paths: usize, methods: usize) -> Self {
        self.api = Api::Many { paths, methods };
        self
    }

    /// Starts the server on `127.0.0.1:0`.
    pub async fn start(self) -> Server {
        let recorder = Arc::new(Recorder {
            record: self.record,
            options_latency: self.options_latency,
            ..Recorder::default()
        });
        let (router, layer) = match self.api {
            Api::Shop => {
                let (router, api) = shop();
                let layer = HaloLayer::builder(api)
                    .max_age(self.max_age)
                    .build()
                    .expect("the shop is a valid HALO API");
                (router.with_state(Arc::clone(&recorder)), layer)
            }
            Api::Many { paths, methods } => {
                let layer = HaloBuilder::from_openapi_json(many(paths, methods))
                    .max_age(self.max_age)
                    .build()
                    .expect("the generated document is a valid HALO API");
                (Router::new(), layer)
            }
        };
        let app = router.layer(layer).layer(middleware::from_fn_with_state(
            Arc::clone(&recorder),
            record,
        ));
        let (addr, task) = serve(app).await;
        Server {
            base: format!("http://{addr}"),
            addr,
            recorder,
            task,
        }
    }
}

/// A HALO API on `127.0.0.1:<free port>`, stopped when dropped.
#[derive(Debug)]
pub struct Server {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    pub addr: SocketAddr,
    recorder: Arc<Recorder>,
    task: JoinHandle<()>,
}

impl Server {
    /// The shop with default settings.
    pub async fn start() -> Self {
        Self::builder().start().await
    }

    pub fn builder() -> Builder {
        Builder {
            api: Api::Shop,
            max_age: Duration::from_secs(60),
            options_latency: Duration::ZERO,
            record: true,
        }
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The handlers' execution counters.
    pub fn executions(&self) -> &Executions {
        &self.recorder.executions
    }

    /// Every request seen so far, in the order they finished.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.recorder.seen).clone()
    }

    /// The `OPTIONS` requests seen so far.
    pub fn discoveries(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|seen| seen.method == "OPTIONS")
            .collect()
    }

    /// The requests of `method` on `path` (without query) seen so far.
    pub fn calls(&self, method: &str, path: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|seen| seen.method == method && seen.path() == path)
            .collect()
    }

    /// The most requests that were being answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        count(&self.recorder.max_in_flight)
    }

    /// The next `n` tool executions answer `503` after running.
    pub fn fail_next(&self, n: usize) {
        self.recorder.fail_next.store(n, Ordering::SeqCst);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The outermost middleware: counts requests in flight, delays `OPTIONS` when asked, and
/// records each request with its answer.
async fn record(State(recorder): State<Arc<Recorder>>, request: Request, next: Next) -> Response {
    let now = recorder.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    recorder.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let options = request.method() == axum::http::Method::OPTIONS;
    let parts = recorder.record.then(|| {
        let uri = request
            .uri()
            .path_and_query()
            .map_or_else(|| request.uri().path().to_owned(), ToString::to_string);
        (request.method().to_string(), uri, request.headers().clone())
    });
    if options && !recorder.options_latency.is_zero() {
        tokio::time::sleep(recorder.options_latency).await;
    }
    let response = next.run(request).await;
    recorder.in_flight.fetch_sub(1, Ordering::SeqCst);
    if let Some((method, uri, headers)) = parts {
        let seen = Seen {
            method,
            uri,
            headers,
            status: response.status().as_u16(),
            body_len: response.body().size_hint().exact(),
        };
        lock(&recorder.seen).push(seen);
    }
    response
}
