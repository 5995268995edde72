//! Test support: real servers on loopback ports, in the style of reqwest's `tests/support`.
//!
//! - [`halo`]: a HALO API built with axum + utoipa + `HaloLayer`. Its handlers count their
//!   executions, and an outermost middleware records every request it sees (discovery
//!   included), the status it answered and the size of the body it sent.
//! - [`fault`]: a hand-written HTTP/1.1 server on a raw `TcpListener` that plays a script of
//!   answers and failures (error statuses, `Retry-After`, resets, slow answers, redirects),
//!   counts connections and requests, and answers HALO discovery from fixed schemas.
//! - [`sse`]: an event-stream server that runs streamed calls from a replay buffer per call
//!   and resumes them, and a TCP proxy that cuts event streams part-way.
//!
//! Each test file uses a different part, hence `dead_code`.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use halo_client::RetryPolicy;

/// A retry policy for tests: a few attempts with millisecond delays.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy::new()
        .max_attempts(4)
        .min_delay(Duration::from_millis(5))
        .max_delay(Duration::from_millis(20))
}

/// The `host:port` of a base URL such as `http://127.0.0.1:4000`.
pub fn authority(base: &str) -> &str {
    base.trim_start_matches("http://")
}

pub mod sse;

pub mod halo {
    //! A HALO API on a real socket, recording what it sees.

    use std::collections::HashMap;
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::Duration;

    use axum::body::HttpBody as _;
    use axum::extract::{Path, RawQuery, Request, State};
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::middleware::{self, Next};
    use axum::response::{IntoResponse, Response};
    use axum::{Json, Router};
    use halo_axum::{HaloBuilder, HaloLayer, halo};
    use serde::{Deserialize, Serialize};
    use serde_json::{Map, Value, json};
    use tokio::task::JoinHandle;
    use utoipa::{OpenApi, ToSchema};
    use utoipa_axum::{router::OpenApiRouter, routes};

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
        payments: Mutex<HashMap<String, Value>>,
    }

    impl Recorder {
        /// A `503` instead of the tool's answer while `fail_next` is positive (the execution
        /// has been counted already: the side effect "happened").
        fn failure(&self) -> Option<Response> {
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
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind 127.0.0.1:0");
            let addr = listener.local_addr().expect("local address");
            let task = tokio::spawn(async move {
                axum::serve(listener, app).await.expect("serve");
            });
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
            self.recorder
                .seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
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
    async fn record(
        State(recorder): State<Arc<Recorder>>,
        request: Request,
        next: Next,
    ) -> Response {
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
            recorder
                .seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(seen);
        }
        response
    }

    type Shared = State<Arc<Recorder>>;

    fn header_text(headers: &HeaderMap, name: &str) -> Value {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map_or(Value::Null, |v| Value::String(v.to_owned()))
    }

    /// An item.
    #[derive(Debug, Serialize, Deserialize, ToSchema)]
    pub struct Item {
        /// Its name.
        pub name: String,
    }

    /// An order to place.
    #[derive(Debug, Serialize, Deserialize, ToSchema)]
    pub struct NewOrder {
        /// What to order.
        pub item: String,
        /// How many.
        pub qty: u32,
    }

    /// A charge.
    #[derive(Debug, Serialize, Deserialize, ToSchema)]
    pub struct Charge {
        /// Amount in cents.
        pub amount: u32,
    }

    /// An amount to validate.
    #[derive(Debug, Serialize, Deserialize, ToSchema)]
    pub struct Amount {
        /// Must be positive.
        pub amount: i64,
    }

    /// Get one item.
    #[utoipa::path(get, path = "/items/{id}", tags = ["items", "read"],
        params(("id" = String, Path, description = "Item id"),
               ("fields" = Option<String>, Query, description = "Fields to return"),
               ("X-Trace" = Option<String>, Header, description = "Correlation id")),
        responses((status = 200, description = "The item")))]
    async fn get_item(
        State(recorder): Shared,
        Path(id): Path<String>,
        RawQuery(query): RawQuery,
        headers: HeaderMap,
    ) -> Response {
        recorder.executions.get_item.fetch_add(1, Ordering::SeqCst);
        if let Some(failure) = recorder.failure() {
            return failure;
        }
        Json(json!({"id": id, "query": query, "trace": header_text(&headers, "x-trace")}))
            .into_response()
    }

    /// Search items.
    #[utoipa::path(get, path = "/search", tags = ["items", "read", "two words"],
        params(("q" = Option<String>, Query, description = "Free text"),
               ("tag" = Option<Vec<String>>, Query, description = "Any of these tags")),
        responses((status = 200, description = "Matches")))]
    async fn search(State(recorder): Shared, RawQuery(query): RawQuery) -> Json<Value> {
        recorder.executions.search.fetch_add(1, Ordering::SeqCst);
        Json(json!({"query": query}))
    }

    /// Place an order (not idempotent, no idempotency key).
    #[utoipa::path(post, path = "/orders", tags = ["orders", "write"], request_body = NewOrder,
        responses((status = 201, description = "Placed")))]
    async fn create_order(State(recorder): Shared, Json(order): Json<NewOrder>) -> Response {
        let n = recorder
            .executions
            .create_order
            .fetch_add(1, Ordering::SeqCst)
            + 1;
        if let Some(failure) = recorder.failure() {
            return failure;
        }
        (
            StatusCode::CREATED,
            Json(json!({"order": n, "item": order.item, "qty": order.qty})),
        )
            .into_response()
    }

    /// Charge a card (made safe to repeat by an idempotency key).
    #[halo(idempotency_key = "Idempotency-Key")]
    #[utoipa::path(post, path = "/payments", tags = ["payments", "write", "R&D"],
        request_body = Charge, responses((status = 200, description = "Charged")))]
    async fn pay(
        State(recorder): Shared,
        headers: HeaderMap,
        Json(charge): Json<Charge>,
    ) -> Response {
        let key = headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let stored = key
            .as_ref()
            .and_then(|key| recorder.payments.lock().unwrap().get(key).cloned());
        let body = stored.unwrap_or_else(|| {
            recorder.executions.pay.fetch_add(1, Ordering::SeqCst);
            let body =
                json!({"amount": charge.amount, "key": header_text(&headers, "idempotency-key")});
            if let Some(key) = key {
                recorder.payments.lock().unwrap().insert(key, body.clone());
            }
            body
        });
        // A failure after the side effect: the answer is lost on its way back.
        if let Some(failure) = recorder.failure() {
            return failure;
        }
        Json(body).into_response()
    }

    /// Replace an item.
    #[utoipa::path(put, path = "/items/{id}", tags = ["items", "write"],
        params(("id" = String, Path)), request_body = Item,
        responses((status = 200, description = "Replaced")))]
    async fn put_item(
        State(recorder): Shared,
        Path(id): Path<String>,
        Json(item): Json<Item>,
    ) -> Response {
        recorder.executions.put_item.fetch_add(1, Ordering::SeqCst);
        if let Some(failure) = recorder.failure() {
            return failure;
        }
        Json(json!({"id": id, "name": item.name})).into_response()
    }

    /// Delete an item.
    #[utoipa::path(delete, path = "/items/{id}", tags = ["items", "write", "admin"],
        params(("id" = String, Path)), responses((status = 204, description = "Deleted")))]
    async fn delete_item(State(recorder): Shared, Path(_id): Path<String>) -> StatusCode {
        recorder
            .executions
            .delete_item
            .fetch_add(1, Ordering::SeqCst);
        StatusCode::NO_CONTENT
    }

    /// Validate an amount: always refused with a problem document.
    #[utoipa::path(post, path = "/validate", tags = ["write"], request_body = Amount,
        responses((status = 422, description = "Invalid")))]
    async fn validate(State(recorder): Shared, Json(amount): Json<Amount>) -> Response {
        recorder.executions.validate.fetch_add(1, Ordering::SeqCst);
        let problem = json!({
            "type": "about:blank",
            "title": "Unprocessable Content",
            "status": 422,
            "detail": "the amount must be positive",
            "instance": "/validate",
            "errors": [{"pointer": "/amount",
                        "message": format!("{} is less than the minimum of 1", amount.amount)}]
        });
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            [(header::CONTENT_TYPE, "application/problem+json")],
            problem.to_string(),
        )
            .into_response()
    }

    /// Read the note, as plain text.
    #[utoipa::path(get, path = "/note", tags = ["notes"],
        responses((status = 200, body = String, content_type = "text/plain")))]
    async fn note(State(recorder): Shared) -> &'static str {
        recorder.executions.note.fetch_add(1, Ordering::SeqCst);
        "hello, agent"
    }

    /// Tag everything: the body is a whole JSON array.
    #[utoipa::path(post, path = "/tags", tags = ["items", "write"], request_body = Vec<String>,
        responses((status = 200, description = "The tags")))]
    async fn tag_all(State(recorder): Shared, Json(tags): Json<Vec<String>>) -> Json<Value> {
        recorder.executions.tag_all.fetch_add(1, Ordering::SeqCst);
        Json(json!({"tags": tags}))
    }

    /// Write a note: the body is plain text, sent raw.
    #[utoipa::path(post, path = "/notes", tags = ["notes", "write"],
        request_body(content = String, content_type = "text/plain"),
        responses((status = 200, description = "What arrived")))]
    async fn write_note(State(recorder): Shared, headers: HeaderMap, body: String) -> Json<Value> {
        recorder
            .executions
            .write_note
            .fetch_add(1, Ordering::SeqCst);
        Json(json!({"content_type": header_text(&headers, "content-type"), "text": body}))
    }

    /// Take the first item of the queue: a DELETE that is declared not idempotent.
    #[halo(idempotent = false)]
    #[utoipa::path(delete, path = "/queue/head", tags = ["queue", "write"],
        responses((status = 200, description = "The item taken")))]
    async fn pop(State(recorder): Shared) -> Response {
        let n = recorder.executions.pop.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(failure) = recorder.failure() {
            return failure;
        }
        Json(json!({"popped": n})).into_response()
    }

    #[derive(OpenApi)]
    #[openapi(info(
        title = "Test Shop",
        version = "1.0.0",
        description = "A shop for tests"
    ))]
    struct ApiDoc;

    /// The shop's router (needing the recorder as state) and its OpenAPI document.
    fn shop() -> (Router<Arc<Recorder>>, utoipa::openapi::OpenApi) {
        OpenApiRouter::with_openapi(ApiDoc::openapi())
            .routes(routes!(get_item, put_item, delete_item))
            .routes(routes!(search))
            .routes(routes!(create_order))
            .routes(routes!(pay))
            .routes(routes!(validate))
            .routes(routes!(note))
            .routes(routes!(tag_all))
            .routes(routes!(write_note))
            .routes(routes!(pop))
            .split_for_parts()
    }

    /// An OpenAPI document of `paths` paths `/tools/t{i}/{id}` with GET (and DELETE when
    /// `methods` is 2).
    fn many(paths: usize, methods: usize) -> Value {
        let mut items = Map::new();
        for i in 0..paths {
            let mut item = Map::new();
            for method in ["get", "delete"].into_iter().take(methods) {
                item.insert(
                    method.to_owned(),
                    json!({
                        "operationId": format!("{method}_t{i}"),
                        "summary": format!("{method} tool {i}"),
                        "tags": ["generated"],
                        "parameters": [
                            {"name": "id", "in": "path", "required": true,
                             "schema": {"type": "integer"}},
                            {"name": "q", "in": "query", "schema": {"type": "string"}}
                        ],
                        "responses": {"200": {"description": "ok", "content": {
                            "application/json": {"schema": {"type": "object"}}}}}
                    }),
                );
            }
            items.insert(format!("/tools/t{i}/{{id}}"), Value::Object(item));
        }
        json!({
            "openapi": "3.1.0",
            "info": {"title": "Many", "version": "1"},
            "paths": items
        })
    }
}

pub mod fault {
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
    use std::sync::{Arc, Mutex, PoisonError};
    use std::time::{Duration, Instant, SystemTime};

    use axum::http::StatusCode;
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::task::JoinHandle;

    /// A canned answer.
    #[derive(Debug, Clone)]
    #[must_use]
    pub struct Reply {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    }

    impl Reply {
        /// An answer with `status` and no body.
        pub fn status(status: u16) -> Self {
            Self {
                status,
                headers: Vec::new(),
                body: Vec::new(),
            }
        }

        /// A `status` answer with a JSON body.
        pub fn json(status: u16, body: &Value) -> Self {
            Self::status(status)
                .header("Content-Type", "application/json")
                .body(body.to_string())
        }

        pub fn header(mut self, name: &str, value: &str) -> Self {
            self.headers.push((name.to_owned(), value.to_owned()));
            self
        }

        pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
            self.body = body.into();
            self
        }
    }

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

    /// One request as read from the socket.
    #[derive(Debug, Clone)]
    pub struct Request {
        pub method: String,
        /// The request target (path and query), as sent.
        pub target: String,
        /// Header names lower-cased.
        pub headers: Vec<(String, String)>,
        pub body: Vec<u8>,
        /// When its head was read.
        pub at: Instant,
    }

    impl Request {
        /// The first value of a header.
        pub fn header(&self, name: &str) -> Option<&str> {
            let name = name.to_ascii_lowercase();
            self.headers
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.as_str())
        }

        /// The path without the query.
        pub fn path(&self) -> &str {
            self.target.split('?').next().unwrap_or_default()
        }

        /// The body as JSON (`Null` when empty).
        pub fn json(&self) -> Value {
            if self.body.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&self.body).expect("a JSON request body")
            }
        }

        fn is_discovery(&self) -> bool {
            self.method == "OPTIONS"
                && self
                    .header("accept")
                    .is_some_and(|accept| accept.contains("application/llm+json"))
        }
    }

    #[derive(Debug, Default)]
    struct State {
        connections: AtomicUsize,
        requests: Mutex<Vec<Request>>,
        discoveries: Mutex<Vec<Request>>,
        script: Mutex<VecDeque<Action>>,
        /// Path template → discovery answer.
        described: Mutex<Vec<(String, Reply)>>,
        otherwise: Mutex<Option<Reply>>,
    }

    fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(PoisonError::into_inner)
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
        if request.is_discovery() {
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

    /// Closes with `RST` instead of `FIN`.
    fn reset(stream: TcpStream) {
        stream.set_zero_linger().expect("SO_LINGER");
        drop(stream);
    }

    async fn read_request(stream: &mut TcpStream) -> Option<Request> {
        let mut buffer = Vec::with_capacity(1024);
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            if let Some(end) = find(&buffer, b"\r\n\r\n") {
                break end;
            }
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 || buffer.len() > 1 << 20 {
                return None;
            }
            buffer.extend_from_slice(&chunk[..n]);
        };
        let at = Instant::now();
        let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut request_line = lines.next()?.split(' ');
        let method = request_line.next()?.to_owned();
        let target = request_line.next()?.to_owned();
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(name, _)| name == "content-length")
            .and_then(|(_, value)| value.parse().ok())
            .unwrap_or(0);
        let mut body = buffer[head_end + 4..].to_vec();
        while body.len() < length {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            body.extend_from_slice(&chunk[..n]);
        }
        body.truncate(length);
        Some(Request {
            method,
            target,
            headers,
            body,
            at,
        })
    }

    fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
        haystack
            .windows(needle.len())
            .position(|window| window == needle)
    }

    async fn write(stream: &mut TcpStream, reply: &Reply) {
        let reason = StatusCode::from_u16(reply.status)
            .ok()
            .and_then(|status| status.canonical_reason())
            .unwrap_or("Unknown");
        let mut head = format!("HTTP/1.1 {} {reason}\r\n", reply.status);
        for (name, value) in &reply.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            reply.body.len()
        ));
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(&reply.body).await;
        let _ = stream.shutdown().await;
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
}
