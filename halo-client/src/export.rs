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
    use halo_protocol::{Call, InputField, Location, is_self_contained};
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

    #[test]
    fn nested_entries_are_unwrapped() {
        let body = json!({"type": "object", "description": "The pet", "required": ["name"],
                          "properties": {"name": {"type": "string"}}});
        let (entry, mut schema) = tool("add", "POST", "/pets");
        schema.input.insert(
            "body".into(),
            InputField::new(body.clone())
                .located(Location::Body)
                .required(true),
        );
        // Through the wire form, as a client reads it.
        let wire = serde_json::to_value(&schema).unwrap();
        assert!(wire["input"]["body"]["allOf"].is_array());
        let read: ToolSchema = serde_json::from_value(wire).unwrap();
        let tools = export_tools(&[(entry, read)], ToolFormat::OpenAi);
        let parameters = &tools[0]["function"]["parameters"];
        assert_eq!(parameters["properties"]["body"], body);
        assert_eq!(parameters["required"], json!(["body"]));
    }

    #[test]
    fn defs_move_to_the_root_and_clashes_are_renamed() {
        let node = |kind: &str| {
            json!({"type": "object", "properties": {
                "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                "kind": {"const": kind}
            }})
        };
        let entry_with = |kind: &str| {
            let mut field = node(kind);
            field["$defs"] = json!({"Node": node(kind)});
            field["example"] = json!({"$ref": "#/$defs/Node"});
            InputField::new(field).located(Location::Body)
        };
        let (entry, mut schema) = tool("t", "POST", "/t");
        schema.input.insert("a".into(), entry_with("a"));
        schema.input.insert("same".into(), entry_with("a"));
        schema.input.insert("b".into(), entry_with("b"));
        let tools = export_tools(&[(entry, schema)], ToolFormat::Anthropic);
        let parameters = &tools[0]["input_schema"];
        assert!(is_self_contained(parameters), "{parameters:#}");
        let defs = parameters["$defs"].as_object().unwrap();
        assert_eq!(
            defs.keys().collect::<Vec<_>>(),
            ["Node", "Node_2"],
            "identical definitions are shared"
        );
        assert_eq!(defs["Node"], node("a"));
        let properties = &parameters["properties"];
        assert!(properties["a"].get("$defs").is_none());
        assert_eq!(
            properties["a"]["properties"]["kids"]["items"]["$ref"],
            "#/$defs/Node"
        );
        assert_eq!(
            properties["b"]["properties"]["kids"]["items"]["$ref"],
            "#/$defs/Node_2"
        );
        assert_eq!(
            defs["Node_2"]["properties"]["kids"]["items"]["$ref"],
            "#/$defs/Node_2"
        );
        assert_eq!(defs["Node_2"]["properties"]["kind"]["const"], "b");
        // Data is never rewritten.
        assert_eq!(properties["b"]["example"]["$ref"], "#/$defs/Node");
    }

    #[test]
    fn a_renamed_definition_renames_those_that_use_it() {
        let entry_with = |leaf: &str| {
            InputField::new(json!({
                "$ref": "#/$defs/Tree",
                "$defs": {
                    "Tree": {"type": "array", "items": {"$ref": "#/$defs/Leaf"}},
                    "Leaf": {"type": leaf}
                }
            }))
        };
        let (entry, mut schema) = tool("t", "POST", "/t");
        schema.input.insert("one".into(), entry_with("string"));
        schema.input.insert("two".into(), entry_with("integer"));
        let tools = export_tools(&[(entry, schema)], ToolFormat::Anthropic);
        let parameters = &tools[0]["input_schema"];
        assert!(is_self_contained(parameters), "{parameters:#}");
        let two = &parameters["properties"]["two"]["$ref"];
        let tree = two.as_str().unwrap().strip_prefix("#/$defs/").unwrap();
        assert_eq!(tree, "Tree_2");
        let leaf_ref = parameters["$defs"][tree]["items"]["$ref"].as_str().unwrap();
        let leaf = leaf_ref.strip_prefix("#/$defs/").unwrap();
        assert_eq!(parameters["$defs"][leaf]["type"], "integer");
        assert_eq!(parameters["$defs"]["Leaf"]["type"], "string");
    }
}
