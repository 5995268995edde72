//! A call of an MCP upstream's tool: the JSON body the layer validated becomes the
//! `tools/call`'s arguments, and the result the HTTP answer: its structured content, else its
//! one text block (as JSON when it is JSON), else its content blocks; a result marked
//! `isError` and a server's failure become problem documents whose statuses say what happened.

use axum::Json;
use axum::body::Body;
use axum::response::{IntoResponse as _, Response};
use halo_axum::Progress;
use http::StatusCode;
use http::request::Parts;
use http_body_util::BodyExt as _;
use rmcp::model::{CallToolResult, ErrorCode, JsonObject};
use serde_json::Value;

use super::problem;
use crate::upstream::mcp::{CallError, Server};

/// The most of a failed tool's text a problem's detail carries.
const MAX_DETAIL: usize = 4 * 1024;

/// Calls the tool at `rest` (its name) of the MCP upstream `name`.
pub(super) async fn forward(
    name: &str,
    rest: &str,
    server: &Server,
    parts: &Parts,
    body: Body,
) -> Response {
    let Ok(bytes) = body.collect().await.map(|body| body.to_bytes()) else {
        return problem::answer(
            StatusCode::BAD_REQUEST,
            "the request body could not be read",
        );
    };
    let arguments = match bytes.is_empty() {
        true => None,
        false => match serde_json::from_slice::<JsonObject>(&bytes) {
            Ok(arguments) => Some(arguments),
            Err(_) => {
                return problem::answer(
                    StatusCode::BAD_REQUEST,
                    "an MCP tool's arguments are a JSON object",
                );
            }
        },
    };
    let progress = parts.extensions.get::<Progress>();
    match server.call(rest, arguments, progress).await {
        Ok(result) if result.is_error == Some(true) => problem::answer(
            StatusCode::BAD_GATEWAY,
            format!(
                "the tool `{rest}` of the upstream `{name}` reported an error: {}",
                bounded(&text(&result))
            ),
        ),
        Ok(result) => Json(content(result)).into_response(),
        Err(CallError::Refused(error)) => {
            let status = match error.code {
                ErrorCode::INVALID_PARAMS => StatusCode::UNPROCESSABLE_ENTITY,
                _ => StatusCode::BAD_GATEWAY,
            };
            problem::answer(
                status,
                format!(
                    "the upstream `{name}` refused the call of `{rest}`: {}",
                    bounded(&error.message)
                ),
            )
        }
        Err(CallError::Unavailable(why)) => problem::answer(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the upstream `{name}` is unavailable: {why}"),
        ),
        Err(CallError::TimedOut) => problem::answer(
            StatusCode::GATEWAY_TIMEOUT,
            format!("the upstream `{name}` did not answer in time"),
        ),
    }
}

/// A successful result as JSON: its structured content, else its one text block (parsed
/// when it is JSON), else its content blocks as MCP writes them.
fn content(result: CallToolResult) -> Value {
    if let Some(structured) = result.structured_content {
        return structured;
    }
    if let [only] = result.content.as_slice()
        && let Some(text) = only.as_text()
    {
        return serde_json::from_str(&text.text)
            .unwrap_or_else(|_| Value::String(text.text.clone()));
    }
    serde_json::to_value(&result.content).unwrap_or(Value::Null)
}

/// The text blocks of a result, one per line.
fn text(result: &CallToolResult) -> String {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect();
    match texts.is_empty() {
        true => "(no text)".to_owned(),
        false => texts.join("\n"),
    }
}

/// `text` cut to [`MAX_DETAIL`] bytes, at a character boundary, `…` where it was cut.
fn bounded(text: &str) -> String {
    match halo_protocol::truncate(text, MAX_DETAIL) {
        whole if whole.len() == text.len() => whole.to_owned(),
        cut => format!("{cut}…"),
    }
}
