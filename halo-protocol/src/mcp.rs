//! Tool definitions and call outputs as MCP (Model Context Protocol) types, for the bridges
//! that serve a HALO API's tools over MCP (feature `mcp`).

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CacheScope, CallToolResult, ContentBlock, ListToolsResult, ProgressNotificationParam,
    ProgressToken, Tool, ToolAnnotations,
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
        // Blocks the answer carried itself, when every one of them is an MCP content block.
        let blocks = output.blocks.and_then(|blocks| {
            blocks
                .into_iter()
                .map(serde_json::from_value::<ContentBlock>)
                .collect::<Result<Vec<_>, _>>()
                .ok()
        });
        let content = blocks.unwrap_or_else(|| vec![ContentBlock::text(output.text)]);
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

/// How an MCP bridge lists a caller's tools: every one, or, above a budget, the two tools of
/// progressive disclosure (`search_tools`, `call_tool`); output schemas only when small,
/// unless all are asked for.
///
/// ```
/// use halo_protocol::{Call, ToolEntry, ToolListing, ToolSchema, tool_definitions};
///
/// let definitions = tool_definitions(&[(ToolEntry::new("/ping", "GET", "ping", "Ping."),
///                                       ToolSchema::new(Call::new("GET", "/ping")))]);
/// let (tools, progressive) = ToolListing::default().tools(definitions.clone());
/// assert_eq!((tools[0].name.as_ref(), progressive), ("ping", false));
/// let (tools, progressive) = ToolListing::default().budget(Some(1)).tools(definitions);
/// assert_eq!((tools[0].name.as_ref(), progressive), ("search_tools", true));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolListing {
    /// Above this many estimated tokens, the two tools of progressive disclosure; `None`
    /// lists every tool.
    pub budget: Option<usize>,
    /// Every output schema, not only those of at most
    /// [`SMALL_OUTPUT_TOKENS`](crate::SMALL_OUTPUT_TOKENS).
    pub all_output_schemas: bool,
}

impl Default for ToolListing {
    fn default() -> Self {
        Self {
            budget: Some(crate::DEFAULT_TOOL_BUDGET),
            all_output_schemas: false,
        }
    }
}

impl ToolListing {
    /// Sets the budget (`None`: list every tool).
    #[must_use]
    pub fn budget(mut self, budget: Option<usize>) -> Self {
        self.budget = budget;
        self
    }

    /// Lists every output schema (or only small ones).
    #[must_use]
    pub fn all_output_schemas(mut self, all: bool) -> Self {
        self.all_output_schemas = all;
        self
    }

    /// The MCP tools to list for these definitions, and whether they are the two tools of
    /// progressive disclosure.
    #[must_use]
    pub fn tools(
        &self,
        definitions: impl IntoIterator<Item = ToolDefinition>,
    ) -> (Vec<Tool>, bool) {
        let definitions: Vec<ToolDefinition> = definitions
            .into_iter()
            .map(|definition| {
                if self.all_output_schemas {
                    definition
                } else {
                    definition.with_output_within(crate::SMALL_OUTPUT_TOKENS)
                }
            })
            .collect();
        let cost: usize = definitions
            .iter()
            .map(ToolDefinition::estimated_tokens)
            .sum();
        if self.exceeded_by(cost) {
            (Self::progressive(), true)
        } else {
            (definitions.iter().map(Tool::from).collect(), false)
        }
    }

    /// Whether tools costing `tokens` are over the budget.
    #[must_use]
    pub fn exceeded_by(&self, tokens: usize) -> bool {
        self.budget.is_some_and(|budget| tokens > budget)
    }

    /// `search_tools` and `call_tool`, as MCP tools.
    #[must_use]
    pub fn progressive() -> Vec<Tool> {
        [
            crate::search_tools_definition(),
            crate::call_tool_definition(),
        ]
        .iter()
        .map(Tool::from)
        .collect()
    }
}

/// The tools of one `tools/list` page: at most `page_size` of `tools` from the position
/// `cursor` names (the start when `None`), with the cursor of the next page when more
/// follow. Cursors are opaque to clients; these are decimal positions.
///
/// # Errors
/// A cursor this function did not make, or one past the end: an `invalid_params` error,
/// as MCP asks for an invalid cursor.
///
/// ```
/// use halo_protocol::{Call, ToolEntry, ToolSchema, mcp_page, tool_definitions};
///
/// let tools: Vec<rmcp::model::Tool> = (0..5)
///     .map(|i| {
///         let url = format!("/t{i}");
///         let definition = &tool_definitions(&[(
///             ToolEntry::new(url.clone(), "GET", format!("t{i}"), ""),
///             ToolSchema::new(Call::new("GET", url)),
///         )])[0];
///         rmcp::model::Tool::from(definition)
///     })
///     .collect();
/// let first = mcp_page(&tools, None, 2).unwrap();
/// assert_eq!(first.tools.len(), 2);
/// let cursor = first.next_cursor.unwrap();
/// let second = mcp_page(&tools, Some(&cursor), 2).unwrap();
/// assert_eq!(second.tools[0].name, "t2");
/// assert!(mcp_page(&tools, Some("nonsense"), 2).is_err());
/// ```
pub fn mcp_page(
    tools: &[Tool],
    cursor: Option<&str>,
    page_size: usize,
) -> Result<ListToolsResult, ErrorData> {
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .ok()
            .filter(|start| *start > 0 && *start < tools.len())
            .ok_or_else(|| ErrorData::invalid_params("invalid cursor", None))?,
    };
    let end = start.saturating_add(page_size.max(1)).min(tools.len());
    let mut page = ListToolsResult::with_all_items(tools[start..end].to_vec());
    if end < tools.len() {
        page.next_cursor = Some(end.to_string());
    }
    Ok(page)
}

/// MCP's cache hints (`ttlMs`, `cacheScope`, MCP 2026-07-28) for a listing made from a HALO
/// discovery answer with these `Cache-Control` and `Vary` headers: fresh for its `max-age`
/// (0 when it has none, or says `no-store`/`no-cache`), private when the answer is
/// ([`depends_on_caller`](crate::depends_on_caller): `Cache-Control: private`, or a `Vary`
/// on `Authorization` or a cookie), else public.
///
/// ```
/// use halo_protocol::mcp_cache_hints;
/// use rmcp::model::CacheScope;
///
/// assert_eq!(mcp_cache_hints(Some("public, max-age=60"), Some("accept")), (60_000, CacheScope::Public));
/// assert_eq!(mcp_cache_hints(Some("private, max-age=60"), None), (60_000, CacheScope::Private));
/// assert_eq!(mcp_cache_hints(None, None), (0, CacheScope::Private));
/// ```
#[must_use]
pub fn mcp_cache_hints(cache_control: Option<&str>, vary: Option<&str>) -> (u64, CacheScope) {
    let Some(cache_control) = cache_control else {
        return (0, CacheScope::Private);
    };
    let mut ttl_ms = 0;
    for directive in cache_control.split(',').map(str::trim) {
        let (name, value) = directive.split_once('=').unwrap_or((directive, ""));
        match name.to_ascii_lowercase().as_str() {
            "max-age" => {
                ttl_ms = value
                    .trim_matches('"')
                    .parse::<u64>()
                    .map_or(0, |seconds| seconds.saturating_mul(1000));
            }
            "no-store" | "no-cache" => return (0, CacheScope::Private),
            _ => {}
        }
    }
    let scope = if crate::depends_on_caller(Some(cache_control), vary) {
        CacheScope::Private
    } else {
        CacheScope::Public
    };
    (ttl_ms, scope)
}

/// The result of a `search_tools` call: the [`search_answer`](crate::search_answer) as
/// JSON text and as structured content.
#[must_use]
pub fn search_tools_result(found: &[&ToolDefinition], more: usize) -> CallToolResult {
    let answer = crate::search_answer(found, more);
    let mut result = CallToolResult::success(vec![ContentBlock::text(answer.to_string())]);
    result.structured_content = Some(answer);
    result
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

    #[test]
    fn an_answer_that_carries_blocks_keeps_them() {
        let blocks = json!([
            {"type": "text", "text": "the cover"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "r"}}
        ]);
        let media = Some("application/vnd.halo.mcp-result+json; charset=utf-8");
        let answer = json!({"content": blocks, "structuredContent": {"pages": 3}});
        let result = CallToolResult::from(ToolOutput::from_answer(200, media, answer));
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(wire["content"], blocks);
        assert_eq!(wire["structuredContent"], json!({"pages": 3}));
        assert_eq!(wire["isError"], false);
        // A block MCP does not know is not passed on: the answer is read as JSON instead.
        let odd = json!({"content": [{"type": "hologram"}]});
        let result = CallToolResult::from(ToolOutput::from_answer(200, media, odd));
        assert_eq!(result.content.len(), 1);
        assert!(
            result.content[0]
                .as_text()
                .unwrap()
                .text
                .contains("hologram")
        );
        // Only a successful answer of that media type carries blocks.
        let failed = ToolOutput::from_answer(502, media, json!({"content": []}));
        assert!(failed.is_error && failed.blocks.is_none());
        let plain = ToolOutput::from_answer(200, None, json!({"content": blocks}));
        assert!(plain.blocks.is_none());
    }
}
