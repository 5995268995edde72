//! Test support: the bookstore on a real socket, and small request helpers.

#![allow(dead_code, unreachable_pub)] // each test file uses a different part

pub mod process;
pub mod weather_service;

use halo_axum::protocol::ToolEvent;
use reqwest::header::{CONTENT_TYPE, HeaderMap, WWW_AUTHENTICATE};
use reqwest::{Client, Method, RequestBuilder, Response, StatusCode};
use serde_json::Value;
use tokio::sync::oneshot;

/// A bookstore served on `127.0.0.1:<free port>` as the binary serves it
/// ([`bookstore::serve`]), stopped gracefully when dropped.
pub struct Server {
    pub base: String,
    pub addr: std::net::SocketAddr,
    pub client: Client,
    stop: Option<oneshot::Sender<()>>,
}

impl Server {
    /// The stock of `sku`, as the inventory key holder reads it.
    pub async fn stock(&self, sku: &str) -> Value {
        let (_, _, stock) = send(
            self.get(&format!("/api/inventory/{sku}"))
                .header(API_KEY_HEADER_NAME, KEY),
        )
        .await;
        stock
    }

    pub async fn start() -> Self {
        Self::start_with(bookstore::app(), bookstore::Limits::default()).await
    }

    /// `app` served within `limits`.
    pub async fn start_with(app: axum::Router, limits: bookstore::Limits) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(bookstore::serve(listener, app, limits, async move {
            let _ = stopped.await;
        }));
        Self {
            base: format!("http://{addr}"),
            addr,
            client: Client::new(),
            stop: Some(stop),
        }
    }

    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, format!("{}{path}", self.base))
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.request(Method::GET, path)
    }

    pub fn post(&self, path: &str) -> RequestBuilder {
        self.request(Method::POST, path)
    }

    /// `OPTIONS path` with `Accept: application/llm+json`.
    pub fn discover(&self, path: &str) -> RequestBuilder {
        self.request(Method::OPTIONS, path)
            .header("accept", "application/llm+json")
    }

    /// `OPTIONS path` with `Accept: application/llm+json`, as `caller`.
    pub fn discover_as(&self, caller: Caller, path: &str) -> RequestBuilder {
        caller.sign(self.discover(path))
    }

    /// The admin's call `POST path` with the JSON `body`, held for approval (`202`): the
    /// approval's location, and the answer.
    pub async fn held_for_the_admin(&self, path: &str, body: &Value) -> (String, Value) {
        let (status, headers, held) = send(self.post(path).bearer_auth(ADMIN).json(body)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{held}");
        let location = headers["location"].to_str().expect("a location").to_owned();
        (location, held)
    }

    /// The approval at `location`, approved by the admin (`200`): the approval as the
    /// answer gives it.
    pub async fn approved_by_the_admin(&self, location: &str) -> Value {
        let approve = self.post(&format!("{location}/approve")).bearer_auth(ADMIN);
        let (status, _, decided) = send(approve).await;
        assert_eq!(status, StatusCode::OK, "{decided}");
        decided
    }

    /// The names of the tools the manifest lists for `caller`, sorted.
    pub async fn tool_names(&self, caller: Caller) -> Vec<String> {
        let (status, _, manifest) = send(self.discover_as(caller, "/")).await;
        assert_eq!(status, StatusCode::OK, "{caller:?}: {manifest}");
        let mut names: Vec<String> = manifest["tools"]
            .as_array()
            .expect("tools is an array")
            .iter()
            .map(|tool| tool["name"].as_str().expect("a name").to_owned())
            .collect();
        names.sort_unstable();
        names
    }
}

/// Who sends a request: nobody, or one of the demo credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    Anonymous,
    Admin,
    Reader,
    Key,
}

impl Caller {
    /// `request` with this caller's credentials.
    pub fn sign(self, request: RequestBuilder) -> RequestBuilder {
        match self {
            Self::Anonymous => request,
            Self::Admin => request.bearer_auth(ADMIN),
            Self::Reader => request.bearer_auth(READER),
            Self::Key => request.header("X-API-Key", KEY),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The status, headers and JSON body (`Null` when there is none) of a response.
pub async fn read(response: Response) -> (StatusCode, HeaderMap, Value) {
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.expect("body");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|error| {
            panic!(
                "{status}: body is not JSON ({error}): {}",
                String::from_utf8_lossy(&bytes)
            )
        })
    };
    (status, headers, body)
}

/// Sends the request and reads the response.
pub async fn send(request: RequestBuilder) -> (StatusCode, HeaderMap, Value) {
    read(request.send().await.expect("request")).await
}

/// Asserts a problem details answer (RFC 9457) with `status`, and returns its body.
pub async fn expect_problem(request: RequestBuilder, status: u16) -> (HeaderMap, Value) {
    let (actual, headers, body) = send(request).await;
    assert_eq!(actual.as_u16(), status, "body: {body}");
    assert_eq!(
        headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()),
        Some("application/problem+json"),
        "problem responses are application/problem+json"
    );
    assert_eq!(body["status"], status, "body: {body}");
    assert!(body["type"].is_string(), "body: {body}");
    assert!(
        body["title"].as_str().is_some_and(|t| !t.is_empty()),
        "body: {body}"
    );
    assert!(
        body["detail"].as_str().is_some_and(|d| !d.is_empty()),
        "body: {body}"
    );
    (headers, body)
}

/// Asserts a `401` problem with a `WWW-Authenticate` challenge, and returns the challenge.
pub async fn expect_unauthorized(request: RequestBuilder) -> String {
    let (headers, _) = expect_problem(request, 401).await;
    headers
        .get(WWW_AUTHENTICATE)
        .expect("a 401 carries WWW-Authenticate")
        .to_str()
        .expect("an ASCII challenge")
        .to_owned()
}

/// Sends `request` with `Accept: text/event-stream`, asserts an event stream, and reads it to
/// its end: every event, in order.
pub async fn stream(request: RequestBuilder) -> Vec<ToolEvent> {
    let response = request
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    let text = response.text().await.expect("the event stream");
    events(&text)
}

/// The events of a `text/event-stream` body; each event's `event:` name matches its data.
pub fn events(text: &str) -> Vec<ToolEvent> {
    halo_tests::sse::data_events(text)
        .map(|block| {
            let text = block.text();
            let field = |name: &str| {
                block
                    .field(name)
                    .unwrap_or_else(|| panic!("no {name}: in {text:?}"))
            };
            let event: ToolEvent = serde_json::from_str(field("data"))
                .unwrap_or_else(|error| panic!("{error}: {text:?}"));
            assert_eq!(field("event"), event.name(), "{text:?}");
            event
        })
        .collect()
}

/// The JSON pointers of a validation problem's `errors`, sorted and deduplicated (the order of
/// the errors is not part of the contract).
pub fn pointers(problem: &Value) -> Vec<&str> {
    let mut pointers: Vec<&str> = problem["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .filter_map(|e| e["pointer"].as_str())
                .collect()
        })
        .unwrap_or_default();
    pointers.sort_unstable();
    pointers.dedup();
    pointers
}

pub const ADMIN: &str = "demo-admin";
pub const READER: &str = "demo-reader";
pub const KEY: &str = "demo-key";
const API_KEY_HEADER_NAME: &str = "X-API-Key";

/// Starts the real `bookstore` binary on a free loopback port with `args` and `env`, logging
/// off, its standard output piped (see [`stdout_lines`]) and its standard error discarded.
pub fn spawn_bookstore(args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
    use std::process::{Command, Stdio};

    Command::new(env!("CARGO_BIN_EXE_bookstore"))
        .args(["--addr", "127.0.0.1:0"])
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start bookstore")
}

/// The lines `child` writes to standard output, read on a thread that keeps draining the pipe
/// so that the server never writes to a closed one. `child` must have a piped stdout.
pub fn stdout_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::{BufRead, BufReader};

    let stdout = child.stdout.take().expect("stdout");
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    lines_rx
}

/// Sends `child` SIGTERM and waits for it to exit; its exit status.
#[cfg(unix)]
pub async fn terminate(mut child: std::process::Child) -> std::process::ExitStatus {
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(killed.success());
    tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .expect("wait")
}

/// Starts the real `bookstore` binary on a free loopback port with `args`, logging everything
/// (`RUST_LOG=trace`, no colours): the process, with its standard output piped (see
/// [`stdout_lines`]), and the whole log it writes to standard error, once it exits.
pub fn spawn_traced(args: &[&str]) -> (std::process::Child, std::thread::JoinHandle<String>) {
    use std::io::Read as _;
    use std::process::{Command, Stdio};

    let mut child = Command::new(env!("CARGO_BIN_EXE_bookstore"))
        .args(["--addr", "127.0.0.1:0"])
        .args(args)
        .env("RUST_LOG", "trace")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bookstore");
    // Drained to the end, so that the server never blocks on a full pipe.
    let mut stderr = child.stderr.take().expect("stderr");
    let log = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    });
    (child, log)
}
