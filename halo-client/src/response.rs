//! What a call gives back.

use halo_protocol::ToolOutput;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;

/// The response of a tool call: status, headers and body, kept whole.
#[derive(Debug, Clone)]
pub struct ToolResponse {
    status: StatusCode,
    headers: HeaderMap,
    body: Body,
}

/// A response body, decoded by its `Content-Type`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Body {
    /// No body (`204`, `304`, or zero bytes).
    Empty,
    /// A JSON body (`application/json`, `application/problem+json`, any `+json`).
    Json(Value),
    /// Any other body, as text (invalid UTF-8 replaced).
    Text(String),
}

impl ToolResponse {
    pub(crate) fn new(status: StatusCode, headers: HeaderMap, bytes: &[u8]) -> Self {
        let body = if bytes.is_empty() {
            Body::Empty
        } else if is_json(&headers) {
            serde_json::from_slice(bytes).map_or_else(
                |_| Body::Text(String::from_utf8_lossy(bytes).into_owned()),
                Body::Json,
            )
        } else {
            Body::Text(String::from_utf8_lossy(bytes).into_owned())
        };
        Self {
            status,
            headers,
            body,
        }
    }

    /// An answer that arrived as JSON inside an event (`tool_end`'s content, `tool_error`'s
    /// problem); `null` is no body.
    pub(crate) fn from_value(status: StatusCode, headers: HeaderMap, value: Value) -> Self {
        let body = match value {
            Value::Null => Body::Empty,
            value => Body::Json(value),
        };
        Self {
            status,
            headers,
            body,
        }
    }

    /// The status code.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The response headers.
    #[must_use]
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The body.
    #[must_use]
    pub fn body(&self) -> &Body {
        &self.body
    }

    /// The body, taken out.
    #[must_use]
    pub fn into_body(self) -> Body {
        self.body
    }

    /// The JSON body, if it is one.
    #[must_use]
    pub fn json(&self) -> Option<&Value> {
        match &self.body {
            Body::Json(value) => Some(value),
            _ => None,
        }
    }

    /// The body as a JSON value for a model or a program: the JSON itself, text as a string,
    /// `null` when empty.
    #[must_use]
    pub fn to_value(&self) -> Value {
        match &self.body {
            Body::Empty => Value::Null,
            Body::Json(value) => value.clone(),
            Body::Text(text) => Value::String(text.clone()),
        }
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(halo_protocol::is_json)
}

/// The answer as a tool's output for a model or an MCP client: the JSON, the text or the
/// problem details, failed for a `4xx`/`5xx` status.
impl From<&ToolResponse> for ToolOutput {
    fn from(response: &ToolResponse) -> Self {
        Self::from_response(response.status().as_u16(), response.to_value())
    }
}
