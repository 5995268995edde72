//! The envelope of a streamed call: what a server sends, as Server-Sent Events, to a caller
//! that asked for `Accept: text/event-stream`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Problem;

/// The media type of an event stream, `text/event-stream`.
pub const EVENT_STREAM: &str = "text/event-stream";

/// The request header that names the call a reconnecting client resumes (with
/// `Last-Event-ID`), `Halo-Call-Id`.
pub const CALL_ID_HEADER: &str = "halo-call-id";

/// Where a server answers cancel requests (`DELETE`), the call's id after it
/// (`/.well-known/halo/calls/{call_id}`).
pub const CALLS_PATH: &str = "/.well-known/halo/calls/";

/// Whether `id` may name a call (a `Halo-Call-Id`, the end of a cancel request's path): 1 to
/// 128 of the characters a URL path carries as they are (RFC 3986 unreserved: letters,
/// digits, `-`, `.`, `_`, `~`).
///
/// ```
/// use halo_protocol::is_call_id;
///
/// assert!(is_call_id("report-2026.q4_~1"));
/// assert!(!is_call_id(""));
/// assert!(!is_call_id("a/b") && !is_call_id("a%20b") && !is_call_id("é"));
/// assert!(!is_call_id(&"x".repeat(129)));
/// ```
#[must_use]
pub fn is_call_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Where a server keeps the calls held for approval: `GET` lists the pending ones, `GET
/// /{id}` reads one, `POST /{id}/approve` and `POST /{id}/deny` decide one.
pub const APPROVALS_PATH: &str = "/.well-known/halo/approvals";

/// One event of a streamed tool call.
///
/// On the wire each event is one SSE event whose `event:` field is [`name`](Self::name), whose
/// `id:` counts from 1 within the call, and whose `data:` is this value as JSON:
/// `{"type":"tool_progress","data":{...}}`. [`ToolEnd`](Self::ToolEnd) and
/// [`ToolError`](Self::ToolError) are terminal: nothing follows them.
///
/// ```
/// use halo_protocol::ToolEvent;
/// use serde_json::json;
///
/// let event: ToolEvent = serde_json::from_value(json!({
///     "type": "tool_progress",
///     "data": {"step": 1, "message": "reading chapter 1"}
/// })).unwrap();
/// assert_eq!(event.name(), "tool_progress");
/// assert!(!event.is_terminal());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolEvent {
    /// The call has started.
    ToolStart(ToolStart),
    /// Progress from the handler: any JSON, by convention an object with `step`, `total`
    /// and `message`.
    ToolProgress(Value),
    /// The call finished; terminal.
    ToolEnd(ToolEnd),
    /// The call failed; terminal.
    ToolError(Problem),
    /// The call waits for approval (extension): the data is the approval, as
    /// `GET /.well-known/halo/approvals/{id}` shows it. The call's own events follow once it
    /// is approved; a `tool_error` (`403`) when it is denied or expires.
    ApprovalPending(Value),
}

impl ToolEvent {
    /// The SSE event name: `tool_start`, `tool_progress`, `tool_end`, `tool_error` or
    /// `approval_pending`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::ToolStart(_) => "tool_start",
            Self::ToolProgress(_) => "tool_progress",
            Self::ToolEnd(_) => "tool_end",
            Self::ToolError(_) => "tool_error",
            Self::ApprovalPending(_) => "approval_pending",
        }
    }

    /// Whether the call ends with this event.
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::ToolEnd(_) | Self::ToolError(_))
    }
}

/// The data of `tool_start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolStart {
    /// The call's id: what a reconnecting client sends in `Halo-Call-Id`.
    pub call_id: String,
    /// The tool's name, as in the manifest.
    pub tool: String,
}

impl ToolStart {
    /// The start of call `call_id` of `tool`.
    #[must_use]
    pub fn new(call_id: impl Into<String>, tool: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            tool: tool.into(),
        }
    }
}

/// The data of `tool_end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolEnd {
    /// The HTTP status the handler answered with.
    pub status: u16,
    /// The result, for the model.
    pub content: Value,
    /// Data for user interfaces, never for a model's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl ToolEnd {
    /// A result with `status` and `content`, without `meta`.
    #[must_use]
    pub fn new(status: u16, content: Value) -> Self {
        Self {
            status,
            content,
            meta: None,
        }
    }

    /// The same result with `meta`.
    #[must_use]
    pub fn with_meta(mut self, meta: Value) -> Self {
        self.meta = Some(meta);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_every_kind() {
        let events = [
            ToolEvent::ToolStart(ToolStart::new("c-1", "summarize_book")),
            ToolEvent::ToolProgress(json!({"step": 1, "message": "m"})),
            ToolEvent::ToolEnd(ToolEnd::new(200, json!({"a": 1})).with_meta(json!({"ui": 1}))),
            ToolEvent::ToolError(Problem::new(504).with_detail("timed out")),
            ToolEvent::ApprovalPending(json!({"id": "a1", "state": "pending"})),
        ];
        for event in events {
            let json = serde_json::to_value(&event).unwrap();
            assert_eq!(json["type"], event.name());
            let back: ToolEvent = serde_json::from_value(json).unwrap();
            assert_eq!(back, event);
        }
        assert_eq!(
            serde_json::to_value(ToolEvent::ToolEnd(ToolEnd::new(204, Value::Null))).unwrap(),
            json!({"type": "tool_end", "data": {"status": 204, "content": null}})
        );
    }
}
