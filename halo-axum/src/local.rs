//! The app's own tools, discovered and called in process: requests sent through the app
//! wrapped by its HALO layer, with a caller's credentials, so that identity, visibility,
//! validation, limits and audit apply as they do over HTTP. Shared by the MCP service and
//! hosted agents.

use std::convert::Infallible;
use std::net::SocketAddr;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::Response;
use halo_protocol::{
    MEDIA_TYPE, Payload, Problem, ToolEntry, ToolOutput, ToolSchema, entry_schema, place_arguments,
};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Limited};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;
use tower_layer::Layer as _;
use tower_service::Service;

use crate::HaloLayer;

/// Characters escaped in a query name or value: all but RFC 3986 unreserved.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A search's manifest, as far as the MCP service reads it.
#[cfg(feature = "mcp")]
#[derive(serde::Deserialize)]
struct Searched {
    tools: Vec<ToolEntry>,
    search: SearchTotal,
}

#[cfg(feature = "mcp")]
#[derive(serde::Deserialize)]
struct SearchTotal {
    total: usize,
}

/// The largest discovery answer read (a manifest or a path's schemas).
const MAX_DISCOVERY_BYTES: usize = 16 * 1024 * 1024;

/// The app wrapped by its layer, and which headers of a caller's request go with each
/// request sent through it.
#[derive(Clone)]
pub(crate) struct Local {
    /// The app wrapped by its HALO layer.
    app: Router,
    /// The headers of the caller's request passed on.
    forward: Vec<HeaderName>,
    /// The largest answer of a call read.
    max_response_bytes: usize,
}

/// What went wrong while discovering.
pub(crate) enum Failure {
    /// The caller may not see the path (`404`) or the tool asked for: as if it did not
    /// exist.
    Hidden,
    /// The app answered with an error status: its body, as a tool output.
    Answered(ToolOutput),
    /// Something else.
    Other(String),
}

/// The headers always passed on: `Authorization`, the API-key headers of the API's security
/// schemes, `Accept-Language` and the trace headers.
pub(crate) fn forwarded(layer: &HaloLayer) -> Vec<HeaderName> {
    let mut forward = vec![
        http::header::AUTHORIZATION,
        http::header::ACCEPT_LANGUAGE,
        HeaderName::from_static("traceparent"),
        HeaderName::from_static("tracestate"),
        HeaderName::from_static("x-request-id"),
    ];
    forward.extend(
        layer
            .shared
            .discovery
            .registry
            .key_headers()
            .iter()
            .cloned(),
    );
    forward
}

impl Local {
    /// `app` wrapped by `layer` (outermost, so that each request goes through the layer's
    /// checks exactly once), passing `forward` on.
    pub(crate) fn new<S>(
        layer: &HaloLayer,
        app: S,
        forward: Vec<HeaderName>,
        max_response_bytes: usize,
    ) -> Self
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        Self {
            app: Router::new().fallback_service(layer.layer(app)),
            forward,
            max_response_bytes,
        }
    }

    /// The headers passed on.
    #[cfg(feature = "mcp")]
    pub(crate) fn forward(&self) -> &[HeaderName] {
        &self.forward
    }

    /// Also passes `name` on.
    #[cfg(feature = "mcp")]
    pub(crate) fn forward_header(&mut self, name: HeaderName) {
        if !self.forward.contains(&name) {
            self.forward.push(name);
        }
    }

    /// Sets the largest answer of a call read.
    #[cfg(feature = "mcp")]
    pub(crate) fn set_max_response_bytes(&mut self, bytes: usize) {
        self.max_response_bytes = bytes;
    }

    /// A request to the app carrying the caller's credentials (and client address);
    /// `target` must be a path of the app (with its query).
    pub(crate) fn request(
        &self,
        caller: Option<&Parts>,
        method: Method,
        target: &str,
    ) -> Result<Request<Body>, String> {
        let uri = http::Uri::try_from(target)
            .ok()
            .filter(|uri| target.starts_with('/') && uri.authority().is_none())
            .ok_or_else(|| format!("`{target}` is not a path of this app"))?;
        let mut request = Request::new(Body::empty());
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        if let Some(caller) = caller {
            let headers = request.headers_mut();
            for name in &self.forward {
                for value in caller.headers.get_all(name) {
                    headers.append(name.clone(), value.clone());
                }
            }
            if let Some(address) = caller.extensions.get::<ConnectInfo<SocketAddr>>() {
                request.extensions_mut().insert(*address);
            }
        }
        Ok(request)
    }

    /// Sends a request through the app and reads the answer: status, headers, body.
    async fn send(
        &self,
        request: Request<Body>,
        limit: usize,
    ) -> Result<(StatusCode, HeaderMap, Value), String> {
        let mut app = self.app.clone();
        let Ok(response) = app.call(request).await;
        let (parts, body) = response.into_parts();
        let bytes = Limited::new(body, limit)
            .collect()
            .await
            .map_err(|e| format!("the answer could not be read: {e}"))?
            .to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else if parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(halo_protocol::is_json)
        {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        } else {
            Value::String(String::from_utf8_lossy(&bytes).into_owned())
        };
        Ok((parts.status, parts.headers, body))
    }

    /// A HALO discovery answer (`OPTIONS` with the HALO media type) as `T`.
    pub(crate) async fn discover<T: serde::de::DeserializeOwned>(
        &self,
        caller: Option<&Parts>,
        path: &str,
    ) -> Result<T, Failure> {
        Ok(self.discover_with_headers(caller, path).await?.0)
    }

    /// A HALO discovery answer as `T`, with the answer's headers (for its caching).
    pub(crate) async fn discover_with_headers<T: serde::de::DeserializeOwned>(
        &self,
        caller: Option<&Parts>,
        path: &str,
    ) -> Result<(T, HeaderMap), Failure> {
        let mut request = self
            .request(caller, Method::OPTIONS, path)
            .map_err(Failure::Other)?;
        request
            .headers_mut()
            .insert(ACCEPT, HeaderValue::from_static(MEDIA_TYPE));
        let (status, headers, body) = self
            .send(request, MAX_DISCOVERY_BYTES)
            .await
            .map_err(Failure::Other)?;
        if status == StatusCode::NOT_FOUND {
            return Err(Failure::Hidden);
        }
        if !status.is_success() {
            return Err(Failure::Answered(ToolOutput::from_response(
                status.as_u16(),
                body,
            )));
        }
        let answer = serde_json::from_value(body).map_err(|e| {
            Failure::Other(format!(
                "OPTIONS {path} did not answer HALO (is the app wrapped by its HaloLayer?): {e}"
            ))
        })?;
        Ok((answer, headers))
    }

    /// The caller's tools that `keep` keeps: the manifest it may see and each kept tool's
    /// schema.
    #[cfg(feature = "agents")]
    pub(crate) async fn tools(
        &self,
        caller: Option<&Parts>,
        keep: impl Fn(&ToolEntry) -> bool,
    ) -> Result<Vec<(ToolEntry, ToolSchema)>, Failure> {
        let manifest: halo_protocol::Manifest = self.discover(caller, "/").await?;
        self.describe(
            caller,
            manifest.tools.into_iter().filter(|entry| keep(entry)),
        )
        .await
    }

    /// The caller's tools that best match a search (`OPTIONS /?q=`), best first, and how
    /// many matched in all.
    #[cfg(feature = "mcp")]
    pub(crate) async fn search(
        &self,
        caller: Option<&Parts>,
        search: &halo_protocol::SearchRequest,
    ) -> Result<(Vec<ToolEntry>, usize), Failure> {
        let mut path = String::from("/?q=");
        path.extend(utf8_percent_encode(&search.query, QUERY));
        path.push_str(&format!("&limit={}", search.limit));
        if !search.tags.is_empty() {
            path.push_str("&tags=");
            path.extend(utf8_percent_encode(&search.tags.tags().join(","), QUERY));
        }
        let found: Searched = self.discover(caller, &path).await?;
        Ok((found.tools, found.search.total))
    }

    /// The schema of each entry, each path fetched once.
    pub(crate) async fn describe(
        &self,
        caller: Option<&Parts>,
        entries: impl IntoIterator<Item = ToolEntry>,
    ) -> Result<Vec<(ToolEntry, ToolSchema)>, Failure> {
        let entries = entries.into_iter();
        let mut tools = Vec::with_capacity(entries.size_hint().0);
        let mut described: Vec<(String, Vec<ToolSchema>)> = Vec::new();
        for entry in entries {
            let schema = self.schema(caller, &entry, &mut described).await?;
            tools.push((entry, schema));
        }
        Ok(tools)
    }

    /// The schema of one manifest entry, fetching its path's schemas once. [`Failure::Hidden`]
    /// when the caller may not see it.
    pub(crate) async fn schema(
        &self,
        caller: Option<&Parts>,
        entry: &ToolEntry,
        described: &mut Vec<(String, Vec<ToolSchema>)>,
    ) -> Result<ToolSchema, Failure> {
        if entry.url == "/" || !entry.url.starts_with('/') {
            return Ok(entry_schema(entry));
        }
        let index = match described.iter().position(|(path, _)| *path == entry.url) {
            Some(index) => index,
            None => {
                let schemas = self.discover(caller, &entry.url).await?;
                described.push((entry.url.clone(), schemas));
                described.len() - 1
            }
        };
        described[index]
            .1
            .iter()
            .find(|schema| schema.call.method.eq_ignore_ascii_case(&entry.method))
            .cloned()
            .ok_or(Failure::Hidden)
    }

    /// Calls a tool in process and reads its answer. Arguments that cannot be placed are a
    /// `400` problem, for the model to correct.
    #[cfg(feature = "agents")]
    pub(crate) async fn call(
        &self,
        caller: Option<&Parts>,
        schema: &ToolSchema,
        args: Value,
    ) -> ToolOutput {
        match self.tool_request(caller, schema, args) {
            Ok(request) => self.answer(request).await,
            Err(output) => output,
        }
    }

    /// The request that calls a tool with `args`, or the output of a call that cannot be
    /// made.
    #[allow(
        clippy::result_large_err,
        reason = "a ToolOutput passes 128 bytes where serde_json's `preserve_order` is on \
                  (rig-core turns it on); the error is the call's answer, not a hot path"
    )]
    pub(crate) fn tool_request(
        &self,
        caller: Option<&Parts>,
        schema: &ToolSchema,
        args: Value,
    ) -> Result<Request<Body>, ToolOutput> {
        let Ok(method) = Method::from_bytes(schema.call.method.as_bytes()) else {
            return Err(ToolOutput::failure(
                "the tool's method is not an HTTP method",
            ));
        };
        let placed = match place_arguments(&schema.call.url, method.as_str(), Some(schema), args) {
            Ok(placed) => placed,
            Err(error) => {
                return Err(ToolOutput::problem(
                    Problem::new(400).with_detail(format!("invalid arguments: {error}")),
                ));
            }
        };
        let mut target = placed.target;
        for (i, (name, value)) in placed.query.iter().enumerate() {
            target.push(if i == 0 { '?' } else { '&' });
            target.extend(utf8_percent_encode(name, QUERY));
            target.push('=');
            target.extend(utf8_percent_encode(value, QUERY));
        }
        let mut request = self
            .request(caller, method, &target)
            .map_err(ToolOutput::failure)?;
        let headers = request.headers_mut();
        for (name, value) in placed.headers {
            // `place_arguments` vouches for both.
            if let (Ok(name), Ok(value)) = (
                HeaderName::try_from(name.as_str()),
                HeaderValue::try_from(value),
            ) {
                headers.insert(name, value);
            }
        }
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        match placed.body {
            Some(Payload::Json(value)) => {
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                *request.body_mut() = Body::from(value.to_string());
            }
            Some(Payload::Raw {
                content_type,
                bytes,
            }) => {
                if let Ok(value) = HeaderValue::try_from(content_type) {
                    headers.insert(CONTENT_TYPE, value);
                }
                *request.body_mut() = Body::from(bytes);
            }
            None => {}
        }
        Ok(request)
    }

    /// Sends a request through the app: the status, headers and body of its answer, read up
    /// to the largest answer of a call.
    #[cfg(feature = "mcp")]
    pub(crate) async fn exchange(
        &self,
        request: Request<Body>,
    ) -> Result<(StatusCode, HeaderMap, Value), String> {
        self.send(request, self.max_response_bytes).await
    }

    /// Sends a tool's request through the app: the output of its answer.
    #[cfg(feature = "agents")]
    pub(crate) async fn answer(&self, request: Request<Body>) -> ToolOutput {
        match self.send(request, self.max_response_bytes).await {
            Ok((status, _, body)) => ToolOutput::from_response(status.as_u16(), body),
            Err(message) => ToolOutput::failure(message),
        }
    }
}
