//! A call of an MCP upstream's tool: the JSON body the layer validated becomes the
//! `tools/call`'s arguments, and the result the HTTP answer: its structured content, else its
//! one text block (as JSON when it is JSON), else the whole result (images, audio,
//! resources), which `/mcp` returns to MCP callers block for block; a result marked
//! `isError` and a server's failure become problem documents whose statuses say what happened.

use axum::Json;
use axum::body::Body;
use axum::response::{IntoResponse as _, Response};
use halo_axum::Progress;
use halo_protocol::MCP_RESULT_MEDIA_TYPE;
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
        Ok(result) => answer(result),
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

/// A successful result as an answer: its structured content, or its one text block (parsed
/// when it is JSON), when its blocks are all text; otherwise the result as MCP writes it, of
/// media type [`MCP_RESULT_MEDIA_TYPE`], so that the layer's `/mcp` hands its images, audio
/// and resources to MCP callers as they are.
fn answer(result: CallToolResult) -> Response {
    let all_text = result.content.iter().all(|block| block.as_text().is_some());
    if all_text && let Some(structured) = result.structured_content {
        return Json(structured).into_response();
    }
    if let [only] = result.content.as_slice()
        && let Some(text) = only.as_text()
    {
        let value =
            serde_json::from_str(&text.text).unwrap_or_else(|_| Value::String(text.text.clone()));
        return Json(value).into_response();
    }
    let mut whole = serde_json::Map::new();
    whole.insert(
        "content".to_owned(),
        serde_json::to_value(&result.content).unwrap_or(Value::Null),
    );
    if let Some(structured) = result.structured_content {
        whole.insert("structuredContent".to_owned(), structured);
    }
    let mut response = Json(Value::Object(whole)).into_response();
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(MCP_RESULT_MEDIA_TYPE),
    );
    response
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
