//! A tool call's answer as an MCP tool result carries it, failures included.

use serde_json::Value;

use crate::Problem;

/// A tool call's answer as an MCP tool result carries it: text for the model, the JSON
/// object for programs, and whether the call failed.
///
/// A failed call is still a result, not a protocol error, so that the model reads what went
/// wrong: its text is the problem details (`status`, `title`, `detail`, `errors`) as JSON.
///
/// ```
/// use halo_protocol::ToolOutput;
/// use serde_json::json;
///
/// let ok = ToolOutput::from_response(200, json!({"id": 1, "title": "Dune"}));
/// assert!(!ok.is_error);
/// assert_eq!(ok.text, r#"{"id":1,"title":"Dune"}"#);
/// assert_eq!(ok.structured, Some(json!({"id": 1, "title": "Dune"})));
///
/// let problem = json!({"type": "about:blank", "title": "Unprocessable Content", "status": 422,
///                      "errors": [{"pointer": "/id", "message": "\"x\" is not an integer"}]});
/// let failed = ToolOutput::from_response(422, problem.clone());
/// assert!(failed.is_error);
/// assert_eq!(failed.structured, Some(problem));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolOutput {
    /// Whether the call failed (a `4xx`/`5xx` answer, or no answer at all).
    pub is_error: bool,
    /// What the model reads: the JSON answer, the text answer, a line for an empty one, or
    /// the problem details as JSON.
    pub text: String,
    /// The answer when it is a JSON object (the problem details for a failure).
    pub structured: Option<Value>,
    /// The MCP content blocks of an answer that carried them itself
    /// ([`MCP_RESULT_MEDIA_TYPE`]): an MCP client gets these (images, audio, resources)
    /// rather than `text`, which then joins their text blocks.
    pub blocks: Option<Vec<Value>>,
}

/// The media type of an answer that is an MCP tool result as the tool gave it,
/// `{"content": [blocks], "structuredContent": {...}}`: the MCP bridges return its content
/// blocks as they are. halo-rs's gateway answers so for an MCP server's result that is more
/// than one text block.
pub const MCP_RESULT_MEDIA_TYPE: &str = "application/vnd.halo.mcp-result+json";

/// The longest piece of a non-JSON error body kept as a problem's detail, in bytes.
const MAX_DETAIL: usize = 2000;

impl ToolOutput {
    /// The output of a call answered with `status` and `body` (`null` for no body, a string
    /// for a body that is not JSON).
    #[must_use]
    pub fn from_response(status: u16, body: Value) -> Self {
        if status >= 400 {
            return Self::problem(problem_of(status, body));
        }
        let (text, structured) = match body {
            Value::Null => (format!("status {status}, no content"), None),
            Value::String(text) => (text, None),
            Value::Object(object) => {
                let object = Value::Object(object);
                (object.to_string(), Some(object))
            }
            other => (other.to_string(), None),
        };
        Self {
            is_error: false,
            text,
            structured,
            blocks: None,
        }
    }

    /// As [`from_response`](Self::from_response), for an answer of media type `media_type`:
    /// a successful one of [`MCP_RESULT_MEDIA_TYPE`] keeps its content blocks.
    ///
    /// ```
    /// use halo_protocol::{MCP_RESULT_MEDIA_TYPE, ToolOutput};
    /// use serde_json::json;
    ///
    /// let result = json!({"content": [
    ///     {"type": "text", "text": "a chart"},
    ///     {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    /// ]});
    /// let output = ToolOutput::from_answer(200, Some(MCP_RESULT_MEDIA_TYPE), result);
    /// assert_eq!(output.blocks.as_ref().map(Vec::len), Some(2));
    /// assert_eq!(output.text, "a chart");
    /// let plain = ToolOutput::from_answer(200, Some("application/json"), json!({"a": 1}));
    /// assert!(plain.blocks.is_none());
    /// ```
    #[must_use]
    pub fn from_answer(status: u16, media_type: Option<&str>, body: Value) -> Self {
        let carries_blocks = (200..300).contains(&status)
            && media_type.is_some_and(|media| {
                media.split(';').next().is_some_and(|essence| {
                    essence.trim().eq_ignore_ascii_case(MCP_RESULT_MEDIA_TYPE)
                })
            });
        let Value::Object(mut result) = body else {
            return Self::from_response(status, body);
        };
        let blocks = match result.remove("content") {
            Some(Value::Array(blocks)) if carries_blocks => blocks,
            other => {
                if let Some(content) = other {
                    result.insert("content".to_owned(), content);
                }
                return Self::from_response(status, Value::Object(result));
            }
        };
        let texts: Vec<&str> = blocks
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect();
        let text = match texts.is_empty() {
            true => Value::Array(blocks.clone()).to_string(),
            false => texts.join("\n"),
        };
        Self {
            is_error: false,
            text,
            structured: result.remove("structuredContent").filter(Value::is_object),
            blocks: Some(blocks),
        }
    }

    /// The output of a call that got no answer, or could not be made (arguments that
    /// cannot be placed, an unreachable server): an error whose text is `message`.
    #[must_use]
    pub fn failure(message: impl Into<String>) -> Self {
        Self {
            is_error: true,
            text: message.into(),
            structured: None,
            blocks: None,
        }
    }

    /// The output of a call that ended with a problem.
    #[must_use]
    pub fn problem(problem: Problem) -> Self {
        let structured = serde_json::to_value(&problem).unwrap_or(Value::Null);
        Self {
            is_error: true,
            text: structured.to_string(),
            structured: Some(structured).filter(Value::is_object),
            blocks: None,
        }
    }
}

/// The problem an error answer carries, or one made from its status and body.
fn problem_of(status: u16, body: Value) -> Problem {
    if body.get("status").is_some()
        && let Ok(problem) = serde_json::from_value::<Problem>(body.clone())
    {
        return problem;
    }
    let detail = match body {
        Value::Null => return Problem::new(status),
        Value::String(text) => text,
        other => other.to_string(),
    };
    Problem::new(status).with_detail(crate::truncate::truncate(&detail, MAX_DETAIL))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn outputs() {
        let empty = ToolOutput::from_response(204, Value::Null);
        assert!(!empty.is_error);
        assert_eq!(empty.text, "status 204, no content");
        let list = ToolOutput::from_response(200, json!([1, 2]));
        assert_eq!((list.text.as_str(), list.structured), ("[1,2]", None));
        let text = ToolOutput::from_response(200, json!("plain"));
        assert_eq!(text.text, "plain");
        let bare = ToolOutput::from_response(503, Value::Null);
        assert!(bare.is_error);
        assert_eq!(
            bare.structured,
            Some(json!({"type": "about:blank", "title": "Service Unavailable", "status": 503}))
        );
        let html = ToolOutput::from_response(502, json!("é".repeat(1500)));
        let detail = html.structured.unwrap()["detail"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(detail.len() <= MAX_DETAIL && detail.starts_with('é'));
        let odd = ToolOutput::from_response(400, json!({"error": "nope"}));
        assert_eq!(odd.structured.unwrap()["detail"], r#"{"error":"nope"}"#);
        let failure = ToolOutput::failure("could not connect");
        assert!(failure.is_error && failure.structured.is_none());
    }
}
