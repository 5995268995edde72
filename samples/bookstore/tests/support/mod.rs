//! Test support: the bookstore on a real socket, and small request helpers.

#![allow(dead_code, unreachable_pub)] // each test file uses a different part

use reqwest::header::{CONTENT_TYPE, HeaderMap};
use reqwest::{Client, Method, RequestBuilder, Response, StatusCode};
use serde_json::Value;
use tokio::sync::oneshot;

/// A bookstore served on `127.0.0.1:<free port>`, stopped gracefully when dropped.
pub struct Server {
    pub base: String,
    pub client: Client,
    stop: Option<oneshot::Sender<()>>,
}

impl Server {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, bookstore::app())
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await
                .expect("serve");
        });
        Self {
            base: format!("http://{addr}"),
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
