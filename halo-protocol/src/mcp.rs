//! Tool definitions and call outputs as MCP (Model Context Protocol) types, for the bridges
//! that serve a HALO API's tools over MCP (feature `mcp`).

use std::sync::Arc;

use rmcp::model::{
    CallToolResult, ContentBlock, ProgressNotificationParam, ProgressToken, Tool, ToolAnnotations,
};
use serde_json::Value;

use crate::{ToolDefinition, ToolOutput};

/// The definition as an MCP tool: its name, title, description, input and output schemas,
/// and the annotations of its [`hints`](ToolDefinition::hints) (`readOnlyHint`,
/// `destructiveHint` when the schema says, `idempotentHint`).
///
/// ```
/// use halo_protocol::{Call, ToolEntry, ToolSchema, tool_definitions};
///
/// let entry = ToolEntry::new("/api/books", "GET", "list books", "List the books.");
/// let schema = ToolSchema::new(Call::new("GET", "/api/books"));
/// let tool = rmcp::model::Tool::from(&tool_definitions(&[(entry, schema)])[0]);
/// assert_eq!(tool.name, "list_books");
/// assert_eq!(tool.annotations.and_then(|hints| hints.read_only_hint), Some(true));
/// ```
impl From<&ToolDefinition> for Tool {
    fn from(definition: &ToolDefinition) -> Self {
        let hints = definition.hints;
        let mut annotations = ToolAnnotations::new()
            .read_only(hints.read_only)
            .idempotent(hints.idempotent);
        if let Some(destructive) = hints.destructive {
            annotations = annotations.destructive(destructive);
        }
        annotations.title.clone_from(&definition.title);
        let mut tool = Self::new(
            definition.name.clone(),
            definition.description.clone(),
            Arc::new(definition.input_schema.clone()),
        )
        .with_annotations(annotations);
        if definition.description.is_empty() {
            tool.description = None;
        }
        if let Some(title) = &definition.title {
            tool = tool.with_title(title);
        }
        if let Some(output) = &definition.output_schema {
            tool = tool.with_raw_output_schema(Arc::new(output.clone()));
        }
        tool
    }
}

/// The output as an MCP tool result: its text as the content, the JSON object as the
/// structured content, and `isError` for a failed call.
///
/// ```
/// use halo_protocol::ToolOutput;
/// use serde_json::json;
///
/// let output = ToolOutput::from_response(404, json!({"title": "Not Found", "status": 404}));
/// let result = rmcp::model::CallToolResult::from(output);
/// assert_eq!(result.is_error, Some(true));
/// ```
impl From<ToolOutput> for CallToolResult {
    fn from(output: ToolOutput) -> Self {
        let content = vec![ContentBlock::text(output.text)];
        let mut result = if output.is_error {
            Self::error(content)
        } else {
            Self::success(content)
        };
        result.structured_content = output.structured;
        result
    }
}

/// The data of the `count`-th `tool_progress` event of a call (counting from 1) as an MCP
/// progress notification for `token`.
///
/// The convention of HALO handlers, `{"step", "total", "message"}`, maps onto `progress`,
/// `total` and `message`. MCP asks for a progress that grows with every notification, so a
/// `step` that does not exceed the one before (`previous`, 0 at first) gives way to
/// `previous + 1`; data of another shape counts as one step, its JSON text the message.
///
/// ```
/// use halo_protocol::mcp_progress;
/// use rmcp::model::{NumberOrString, ProgressToken};
/// use serde_json::json;
///
/// let token = ProgressToken(NumberOrString::Number(7));
/// let data = json!({"step": 2, "total": 5, "message": "chapter 2"});
/// let note = mcp_progress(token, 1.0, &data);
/// assert_eq!((note.progress, note.total), (2.0, Some(5.0)));
/// assert_eq!(note.message.as_deref(), Some("chapter 2"));
/// ```
#[must_use]
pub fn mcp_progress(
    token: ProgressToken,
    previous: f64,
    data: &Value,
) -> ProgressNotificationParam {
    let next = previous + 1.0;
    let (progress, total, message) = match data {
        Value::Object(object) => (
            object
                .get("step")
                .and_then(Value::as_f64)
                .filter(|step| *step > previous)
                .unwrap_or(next),
            object.get("total").and_then(Value::as_f64),
            object
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
        ),
        Value::String(text) => (next, None, Some(text.clone())),
        Value::Null => (next, None, None),
        other => (next, None, Some(other.to_string())),
    };
    let mut note = ProgressNotificationParam::new(token, progress);
    note.total = total;
    note.message = message;
    note
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{Call, Effects, InputField, Location, ToolEntry, ToolSchema, tool_definitions};

    #[test]
    fn definitions_become_mcp_tools() {
        let mut entry = ToolEntry::new("/api/payments/{id}/refund", "POST", "refund", "Refund.");
        entry.title = Some("Refund a payment".into());
        let mut schema = ToolSchema::new(Call::new("POST", "/api/payments/{id}/refund"));
        schema.why = Some("Use when a customer asks".into());
        schema.effects = Some(Effects {
            reversible: Some(false),
            ..Effects::default()
        });
        schema.input.insert(
            "id".into(),
            InputField::new(json!({"type": "integer"}))
                .located(Location::Path)
                .required(true),
        );
        schema.output = Some(json!({"type": "object"}));
        let tool = Tool::from(&tool_definitions(&[(entry, schema)])[0]);
        let tool = serde_json::to_value(&tool).unwrap();
        assert_eq!(tool["name"], "refund");
        assert_eq!(tool["title"], "Refund a payment");
        assert_eq!(tool["description"], "Use when a customer asks\n\nRefund.");
        assert_eq!(tool["inputSchema"]["required"], json!(["id"]));
        assert_eq!(tool["outputSchema"], json!({"type": "object"}));
        assert_eq!(
            tool["annotations"],
            json!({"title": "Refund a payment", "readOnlyHint": false,
                   "destructiveHint": true, "idempotentHint": false})
        );
    }

    #[test]
    fn an_empty_description_is_left_out() {
        let entry = ToolEntry::new("/ping", "GET", "ping", "");
        let tool = Tool::from(
            &tool_definitions(&[(entry, ToolSchema::new(Call::new("GET", "/ping")))])[0],
        );
        let wire = serde_json::to_value(&tool).unwrap();
        assert!(wire.get("description").is_none(), "{wire}");
        assert!(
            wire["annotations"].get("destructiveHint").is_none(),
            "{wire}"
        );
    }

    #[test]
    fn progress_always_grows() {
        let token = || ProgressToken(rmcp::model::NumberOrString::Number(1));
        let first = mcp_progress(token(), 0.0, &json!({"step": 1, "total": 3}));
        assert_eq!(
            (first.progress, first.total, first.message),
            (1.0, Some(3.0), None)
        );
        // A step that repeats or goes back, a missing step, other shapes: one more.
        for data in [
            json!({"step": 1}),
            json!({"message": "m"}),
            json!("m"),
            json!(4),
            json!(null),
        ] {
            assert_eq!(mcp_progress(token(), 1.0, &data).progress, 2.0, "{data}");
        }
        assert_eq!(
            mcp_progress(token(), 1.0, &json!("half"))
                .message
                .as_deref(),
            Some("half")
        );
        assert_eq!(
            mcp_progress(token(), 1.0, &json!([1])).message.as_deref(),
            Some("[1]")
        );
        assert_eq!(
            mcp_progress(token(), 1.0, &json!({"step": 9.5})).progress,
            9.5
        );
    }

    #[test]
    fn outputs_become_results() {
        let result = CallToolResult::from(ToolOutput::from_response(
            404,
            json!({"type": "about:blank", "title": "Not Found", "status": 404,
                   "detail": "no book 9"}),
        ));
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(wire["isError"], true);
        assert_eq!(wire["structuredContent"]["detail"], "no book 9");
        let text = wire["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("no book 9"), "{text}");
        let ok = CallToolResult::from(ToolOutput::from_response(200, json!({"id": 1})));
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(ok.structured_content, Some(json!({"id": 1})));
    }
}
