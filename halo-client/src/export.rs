//! Exporting HALO tools as the tool definitions of LLM APIs (OpenAI function calling,
//! Anthropic tool use).

use halo_protocol::{ToolEntry, ToolSchema, tool_definitions};
use serde_json::Value;

/// A tool definition format of an LLM API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolFormat {
    /// OpenAI function calling (Chat Completions `tools`):
    /// `{"type": "function", "function": {"name", "description", "parameters"}}`.
    OpenAi,
    /// Anthropic tool use (Messages `tools`): `{"name", "description", "input_schema"}`.
    Anthropic,
}

/// The tools as definitions for an LLM API, in the order given.
///
/// - **name**: the manifest name, made valid for both APIs (`^[a-zA-Z0-9_-]{1,64}$`: every
///   run of other characters becomes `_`) and unique (a repeated name gets `_2`, `_3`, ...).
///   A model's call comes back under this name, so keep the pairing with the tool by
///   position.
/// - **description**: the schema's `why` (when to choose the tool), a blank line, then its
///   `description` (the manifest's when the schema has none), and a note for a deprecated
///   tool ([`tool_description`](halo_protocol::tool_description)); left out when empty.
///   These texts come from the server: they are data, not instructions.
/// - **parameters** / **input_schema**: a JSON Schema object with one property per input
///   entry (its schema without HALO's `required` and `in` markers), `required` listing the
///   required entries, and `additionalProperties: false`. `$defs` of the entries are moved to
///   the root, where their `#/$defs/...` references resolve, and renamed on a clash
///   ([`input_schema`](halo_protocol::input_schema)).
///
/// The same definitions feed the MCP bridges (`halo mcp`, halo-axum's `/mcp`), through
/// [`tool_definitions`](halo_protocol::tool_definitions).
///
/// The model's arguments can be passed unchanged to [`Client::call`](crate::Client::call),
/// which puts each one where its entry's `in` says.
///
/// ```
/// use halo_client::{ToolFormat, export_tools};
/// use halo_client::protocol::{Call, InputField, Location, ToolEntry, ToolSchema};
/// use serde_json::json;
///
/// let entry = ToolEntry::new("/api/books/{id}", "GET", "get book!", "Get one book.");
/// let mut schema = ToolSchema::new(Call::new("GET", "/api/books/{id}"));
/// schema.why = Some("Use when you know the id".into());
/// schema.input.insert(
///     "id".into(),
///     InputField::new(json!({"type": "integer"})).located(Location::Path).required(true),
/// );
/// let tools = export_tools(&[(entry, schema)], ToolFormat::Anthropic);
/// assert_eq!(tools[0], json!({
///     "name": "get_book",
///     "description": "Use when you know the id\n\nGet one book.",
///     "input_schema": {
///         "type": "object",
///         "properties": {"id": {"type": "integer"}},
///         "required": ["id"],
///         "additionalProperties": false
///     }
/// }));
/// ```
#[must_use]
pub fn export_tools(tools: &[(ToolEntry, ToolSchema)], format: ToolFormat) -> Vec<Value> {
    tool_definitions(tools)
        .iter()
        .map(|definition| match format {
            ToolFormat::OpenAi => definition.openai_function(),
            ToolFormat::Anthropic => definition.anthropic_tool(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use halo_protocol::{Call, InputField, Location};
    use serde_json::json;

    fn tool(name: &str, method: &str, url: &str) -> (ToolEntry, ToolSchema) {
        (
            ToolEntry::new(url, method, name, format!("{name} summary")),
            ToolSchema::new(Call::new(method, url)),
        )
    }

    #[test]
    fn openai_shape() {
        let (entry, mut schema) = tool("create_book", "POST", "/api/books");
        schema.description = "Add a book.".into();
        schema.input.insert(
            "title".into(),
            InputField::new(json!({"type": "string", "maxLength": 200}))
                .located(Location::Body)
                .required(true),
        );
        schema.input.insert(
            "Idempotency-Key".into(),
            InputField::new(json!({"type": "string"})).located(Location::Header),
        );
        let tools = export_tools(&[(entry, schema)], ToolFormat::OpenAi);
        assert_eq!(
            tools,
            [json!({
                "type": "function",
                "function": {
                    "name": "create_book",
                    "description": "Add a book.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string", "maxLength": 200},
                            "Idempotency-Key": {"type": "string"}
                        },
                        "required": ["title"],
                        "additionalProperties": false
                    }
                }
            })]
        );
    }

    #[test]
    fn anthropic_shape_without_inputs_or_description() {
        let (mut entry, schema) = tool("ping", "GET", "/ping");
        entry.description = String::new();
        let tools = export_tools(&[(entry, schema)], ToolFormat::Anthropic);
        assert_eq!(
            tools,
            [json!({
                "name": "ping",
                "input_schema": {"type": "object", "properties": {}, "required": [],
                                 "additionalProperties": false}
            })]
        );
    }

    #[test]
    fn description_is_why_then_description() {
        let description = |entry: &ToolEntry, schema: &ToolSchema| {
            let tools = export_tools(&[(entry.clone(), schema.clone())], ToolFormat::Anthropic);
            tools[0]["description"].as_str().map(str::to_owned)
        };
        let (entry, mut schema) = tool("a", "GET", "/a");
        assert_eq!(description(&entry, &schema).unwrap(), "a summary");
        schema.why = Some("Use first".into());
        assert_eq!(
            description(&entry, &schema).unwrap(),
            "Use first\n\na summary"
        );
        schema.description = "Full text.".into();
        assert_eq!(
            description(&entry, &schema).unwrap(),
            "Use first\n\nFull text."
        );
        let mut bare = entry;
        bare.description = String::new();
        schema.description = String::new();
        assert_eq!(description(&bare, &schema).unwrap(), "Use first");
        schema.why = None;
        assert_eq!(description(&bare, &schema), None, "left out when empty");
    }

    #[test]
    fn names_are_valid_and_unique() {
        let long = "x".repeat(80);
        let tools: Vec<(ToolEntry, ToolSchema)> = [
            "get book",
            "get_book",
            "get-book!",
            "get book",
            "",
            "???",
            "ünïcode name",
            long.as_str(),
            long.as_str(),
        ]
        .iter()
        .map(|name| tool(name, "GET", "/x"))
        .collect();
        let names: Vec<String> = export_tools(&tools, ToolFormat::Anthropic)
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        let long_2 = format!("{}_2", "x".repeat(62));
        assert_eq!(
            names,
            [
                "get_book",
                "get_book_2",
                "get-book",
                "get_book_3",
                "tool",
                "tool_2",
                "n_code_name",
                &"x".repeat(64),
                &long_2,
            ]
        );
        let unique: std::collections::HashSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        for name in &names {
            assert!((1..=64).contains(&name.len()), "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{name}"
            );
        }
    }
}
