//! Calling an app in process, where HTTP on the wire is not the point: the router is called
//! with `tower::ServiceExt::oneshot`, as a server would call it (the peer's address in the
//! request's `ConnectInfo`, which per-address budgets key on), and the whole answer is read.
//! No socket, so a test may run on Tokio's paused clock.
//!
//! [`Answer`] is also what the tests on a real socket read a `reqwest` response into.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::header::{ACCEPT, AUTHORIZATION, AsHeaderName, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, request};
use axum::response::Response;
use http_body_util::BodyExt as _;
use serde_json::Value;
use tower::ServiceExt as _;

/// Where every in-process request comes from.
pub const PEER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 50_000);

/// How long an in-process call may take before the test fails, on Tokio's clock: on a paused
/// clock a call that would never end fails at once instead of hanging.
const PATIENCE: Duration = Duration::from_secs(30);

/// An app (a router with its layers) called in process.
#[derive(Clone, Debug)]
pub struct App(Router);

impl App {
    pub fn new(router: Router) -> Self {
        Self(router)
    }

    /// The router, to serve on a socket.
    pub fn router(&self) -> Router {
        self.0.clone()
    }

    /// A `method` request of `uri` (a path and query).
    pub fn request(&self, method: Method, uri: &str) -> Call {
        Call {
            app: self.0.clone(),
            request: Request::builder().method(method).uri(uri),
            body: Body::empty(),
        }
    }

    pub fn get(&self, uri: &str) -> Call {
        self.request(Method::GET, uri)
    }

    pub fn post(&self, uri: &str) -> Call {
        self.request(Method::POST, uri)
    }

    /// HALO discovery: `OPTIONS uri` with `Accept: application/llm+json`.
    pub fn discover(&self, uri: &str) -> Call {
        self.request(Method::OPTIONS, uri)
            .header(ACCEPT, "application/llm+json")
    }
}

/// A request being written; [`Call::send`] makes it.
#[derive(Debug)]
#[must_use = "a call does nothing until it is sent"]
pub struct Call {
    app: Router,
    request: request::Builder,
    body: Body,
}

impl Call {
    pub fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        K: TryInto<HeaderName>,
        K::Error: Into<axum::http::Error>,
        V: TryInto<HeaderValue>,
        V::Error: Into<axum::http::Error>,
    {
        self.request = self.request.header(name, value);
        self
    }

    /// `Authorization: Bearer <token>`.
    pub fn bearer_auth(self, token: &str) -> Self {
        self.header(AUTHORIZATION, format!("Bearer {token}"))
    }

    /// As `token`'s holder, or anonymously when `None`.
    pub fn caller(self, token: Option<&str>) -> Self {
        match token {
            Some(token) => self.bearer_auth(token),
            None => self,
        }
    }

    /// `Accept: text/event-stream`.
    pub fn streamed(self) -> Self {
        self.header(ACCEPT, "text/event-stream")
    }

    /// `body` as JSON.
    pub fn json(self, body: &Value) -> Self {
        self.header(CONTENT_TYPE, "application/json")
            .body(body.to_string())
    }

    pub fn body(mut self, body: impl Into<Body>) -> Self {
        self.body = body.into();
        self
    }

    /// The response, its body not read yet (a stream to read as it comes).
    pub async fn response(self) -> Response {
        let mut request = self.request.body(self.body).expect("a valid request");
        request.extensions_mut().insert(ConnectInfo(PEER));
        let answered = tokio::time::timeout(PATIENCE, self.app.oneshot(request))
            .await
            .expect("an answer within the patience");
        let Ok(response) = answered;
        response
    }

    /// The response, read to its end.
    pub async fn send(self) -> Answer {
        let response = self.response().await;
        let (parts, body) = response.into_parts();
        let body = tokio::time::timeout(PATIENCE, body.collect())
            .await
            .expect("the body within the patience")
            .expect("an in-process body")
            .to_bytes();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }
}

/// A response read to its end.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    /// A response of a real server, read to its end.
    pub async fn read(response: reqwest::Response) -> Self {
        Self {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.text().await.expect("the body"),
        }
    }

    /// The header's value; empty when there is none.
    pub fn header(&self, name: impl AsHeaderName) -> &str {
        self.headers
            .get(name)
            .map_or("", |value| value.to_str().expect("a visible ASCII header"))
    }

    /// The body as JSON; `Null` when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// Asserts a problem answer (`application/problem+json`) with `status`.
    pub fn assert_problem(&self, status: StatusCode) {
        assert_eq!(self.status, status, "{}", self.body);
        assert_eq!(self.header("content-type"), "application/problem+json");
    }

    /// The body of a problem answer (`application/problem+json`, said or failed).
    pub fn problem(&self) -> Value {
        assert_eq!(
            self.header("content-type"),
            "application/problem+json",
            "a {} answer is a problem: {}",
            self.status,
            self.body
        );
        self.json()
    }

    /// The problem's `detail`.
    pub fn detail(&self) -> String {
        self.problem()["detail"]
            .as_str()
            .unwrap_or_else(|| panic!("a detail in {}", self.body))
            .to_owned()
    }
}

/// One event of an event stream.
#[derive(Debug, Clone)]
pub struct Event {
    pub id: u64,
    /// The `event:` name.
    pub name: String,
    pub data: Value,
}

/// The events of an event-stream text, in order.
pub fn events(text: &str) -> Vec<Event> {
    halo_tests::sse::data_events(text)
        .map(|event| {
            let field = |name: &str| event.field(name).unwrap_or_default();
            Event {
                id: field("id").parse().expect("an event id"),
                name: field("event").to_owned(),
                data: serde_json::from_str(field("data")).expect("JSON data"),
            }
        })
        .collect()
}

/// Reads `body` as text until `enough` holds of what was read (or the body ends): what was
/// read.
pub async fn read_until(body: &mut Body, mut enough: impl FnMut(&str) -> bool) -> String {
    let mut text = String::new();
    while !enough(&text) {
        let frame = tokio::time::timeout(PATIENCE, body.frame())
            .await
            .expect("more of the body within the patience");
        let Some(frame) = frame else {
            break;
        };
        if let Ok(data) = frame.expect("an in-process body").into_data() {
            text.push_str(std::str::from_utf8(&data).expect("a text body"));
        }
    }
    text
}
