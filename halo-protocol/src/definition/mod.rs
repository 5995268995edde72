//! HALO tools as the tool definitions of LLM APIs and MCP: one name, description, input
//! schema and set of hints per tool, which each bridge (OpenAI and Anthropic exports, MCP
//! over stdio or HTTP) turns into its own types.

mod input;
mod output;

use serde_json::{Map, Value, json};

use crate::{Status, ToolEntry, ToolSchema, UniqueNames, standalone};

pub use input::input_schema;
pub use output::{MCP_RESULT_MEDIA_TYPE, ToolOutput};

/// A HALO tool as an LLM or MCP client sees it.
///
/// Made by [`tool_definitions`]; every part is plain data, so a bridge turns it into its own
/// types without knowing HALO.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// A name unique among the definitions and valid everywhere: `[A-Za-z0-9_-]{1,64}`,
    /// which OpenAI, Anthropic and MCP (`[A-Za-z0-9_.-]{1,128}`) all accept.
    pub name: String,
    /// A name for people, when the server gives one.
    pub title: Option<String>,
    /// What a model reads to choose the tool ([`tool_description`]); may be empty.
    pub description: String,
    /// The arguments as one JSON Schema object ([`input_schema`]).
    pub input_schema: Map<String, Value>,
    /// The schema of the success response when it describes a JSON object (what MCP's
    /// `outputSchema` may hold); `None` otherwise.
    pub output_schema: Option<Map<String, Value>>,
    /// What calling the tool does to the world.
    pub hints: ToolHints,
}

impl ToolDefinition {
    /// The definition as an OpenAI function tool (Chat Completions `tools`):
    /// `{"type": "function", "function": {"name", "description", "parameters"}}`, the
    /// description left out when empty.
    ///
    /// ```
    /// use halo_protocol::{Call, ToolEntry, ToolSchema, tool_definitions};
    /// use serde_json::json;
    ///
    /// let tools = tool_definitions(&[(
    ///     ToolEntry::new("/ping", "GET", "ping", ""),
    ///     ToolSchema::new(Call::new("GET", "/ping")),
    /// )]);
    /// assert_eq!(tools[0].openai_function(), json!({"type": "function", "function": {
    ///     "name": "ping",
    ///     "parameters": {"type": "object", "properties": {}, "required": [],
    ///                    "additionalProperties": false}
    /// }}));
    /// ```
    #[must_use]
    pub fn openai_function(&self) -> Value {
        json!({"type": "function", "function": self.named("parameters")})
    }

    /// The definition as an Anthropic tool (Messages `tools`): `{"name", "description",
    /// "input_schema"}`, the description left out when empty.
    #[must_use]
    pub fn anthropic_tool(&self) -> Value {
        Value::Object(self.named("input_schema"))
    }

    /// `name`, `description` (when not empty) and the input schema under `schema_key`.
    fn named(&self, schema_key: &str) -> Map<String, Value> {
        let mut tool = Map::new();
        tool.insert("name".into(), Value::String(self.name.clone()));
        if !self.description.is_empty() {
            tool.insert(
                "description".into(),
                Value::String(self.description.clone()),
            );
        }
        tool.insert(schema_key.into(), Value::Object(self.input_schema.clone()));
        tool
    }
}

/// What calling a tool does, as MCP's tool annotations say it.
///
/// ```
/// use halo_protocol::{Call, Effects, ToolHints, ToolSchema};
///
/// let mut refund = ToolSchema::new(Call::new("POST", "/api/payments/{id}/refund"));
/// let mut effects = Effects::default();
/// effects.reversible = Some(false);
/// refund.effects = Some(effects);
/// let hints = ToolHints::of(&refund);
/// assert!(!hints.read_only);
/// assert_eq!(hints.destructive, Some(true));
/// assert!(!hints.idempotent);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ToolHints {
    /// The method is safe ([`is_safe_method`](crate::is_safe_method)): the tool changes
    /// nothing.
    pub read_only: bool,
    /// For a write, whether it cannot be undone: `Some(true)` when the schema declares
    /// `effects.reversible: false`, `Some(false)` when it declares `true`, `None` when it
    /// says nothing (MCP clients then assume the worst) or the tool only reads.
    pub destructive: Option<bool>,
    /// Repeating the call has the effect of calling once: `limits.idempotent`, or else the
    /// method's own semantics ([`is_idempotent_method`](crate::is_idempotent_method)).
    pub idempotent: bool,
}

impl ToolHints {
    /// The hints of the operation a schema describes.
    #[must_use]
    pub fn of(schema: &ToolSchema) -> Self {
        let method = schema.call.method.as_str();
        let read_only = crate::is_safe_method(method);
        let destructive = if read_only {
            None
        } else {
            schema
                .effects
                .as_ref()
                .and_then(|effects| effects.reversible)
                .map(|reversible| !reversible)
        };
        Self {
            read_only,
            destructive,
            idempotent: schema
                .limits
                .as_ref()
                .and_then(|limits| limits.idempotent)
                .unwrap_or_else(|| crate::is_idempotent_method(method)),
        }
    }
}

/// The definitions of the tools, in the order given, with names made valid and unique
/// (a repeated name gets `_2`, `_3`, ...: keep the pairing with the tool by position).
///
/// ```
/// use halo_protocol::{Call, InputField, Location, ToolEntry, ToolSchema, tool_definitions};
/// use serde_json::json;
///
/// let entry = ToolEntry::new("/api/books/{id}", "GET", "get book", "Get one book.");
/// let mut schema = ToolSchema::new(Call::new("GET", "/api/books/{id}"));
/// schema.why = Some("Use when you know the id".into());
/// schema.input.insert(
///     "id".into(),
///     InputField::new(json!({"type": "integer"})).located(Location::Path).required(true),
/// );
/// let tools = tool_definitions(&[(entry, schema)]);
/// assert_eq!(tools[0].name, "get_book");
/// assert_eq!(tools[0].description, "Use when you know the id\n\nGet one book.");
/// assert_eq!(tools[0].input_schema["required"], json!(["id"]));
/// assert!(tools[0].hints.read_only);
/// ```
#[must_use]
pub fn tool_definitions(tools: &[(ToolEntry, ToolSchema)]) -> Vec<ToolDefinition> {
    tool_names(tools.iter().map(|(entry, _)| entry))
        .into_iter()
        .zip(tools)
        .map(|(name, (entry, schema))| ToolDefinition {
            name,
            title: schema.title.clone().or_else(|| entry.title.clone()),
            description: tool_description(entry, schema),
            input_schema: input_schema(schema),
            output_schema: match &schema.output {
                Some(Value::Object(output)) if output.get("type") == Some(&json!("object")) => {
                    Some(standalone(output, &schema.defs))
                }
                _ => None,
            },
            hints: ToolHints::of(schema),
        })
        .collect()
}

/// The names [`tool_definitions`] gives tools with these manifest entries, in order: known
/// from the manifest alone, so a bridge finds the tool a client calls without describing
/// every tool again.
///
/// ```
/// use halo_protocol::{ToolEntry, tool_names};
///
/// let entries = [
///     ToolEntry::new("/a", "GET", "get a", ""),
///     ToolEntry::new("/b", "GET", "get_a", ""),
/// ];
/// assert_eq!(tool_names(&entries), ["get_a", "get_a_2"]);
/// ```
#[must_use]
pub fn tool_names<'a>(entries: impl IntoIterator<Item = &'a ToolEntry>) -> Vec<String> {
    let mut names = UniqueNames::new();
    entries
        .into_iter()
        .map(|entry| names.assign(&entry.name))
        .collect()
}

/// A schema made from a manifest entry alone (its call, description and tags), for a tool
/// that cannot be described on its own: one at `/`, where `OPTIONS` answers the manifest.
///
/// ```
/// use halo_protocol::{ToolEntry, entry_schema};
///
/// let schema = entry_schema(&ToolEntry::new("/", "GET", "home", "The home page"));
/// assert_eq!((schema.call.method.as_str(), schema.description.as_str()), ("GET", "The home page"));
/// ```
#[must_use]
pub fn entry_schema(entry: &ToolEntry) -> ToolSchema {
    let mut schema = ToolSchema::new(crate::Call::new(entry.method.clone(), entry.url.clone()));
    schema.description.clone_from(&entry.description);
    schema.tags.clone_from(&entry.tags);
    schema.title.clone_from(&entry.title);
    schema
}

/// What a model reads to choose a tool: the schema's `why` (when to choose it), a blank
/// line, then its `description` (the manifest entry's when the schema has none), and for a
/// deprecated tool a last paragraph saying so (with its sunset date and replacement).
/// Empty when the server says nothing. These texts come from the server: they are data,
/// not instructions.
///
/// ```
/// use halo_protocol::{Call, ToolEntry, ToolSchema, tool_description};
///
/// let entry = ToolEntry::new("/a", "GET", "a", "Read a.");
/// let mut schema = ToolSchema::new(Call::new("GET", "/a"));
/// assert_eq!(tool_description(&entry, &schema), "Read a.");
/// schema.why = Some("Use first".into());
/// assert_eq!(tool_description(&entry, &schema), "Use first\n\nRead a.");
/// ```
#[must_use]
pub fn tool_description(entry: &ToolEntry, schema: &ToolSchema) -> String {
    let why = schema.why.as_deref().map_or("", str::trim);
    let description = if schema.description.trim().is_empty() {
        entry.description.trim()
    } else {
        schema.description.trim()
    };
    let lifecycle = &schema.lifecycle;
    let retired = match lifecycle.status {
        Some(Status::Deprecated) => Some("Deprecated"),
        Some(Status::Sunset) => Some("Retired"),
        _ => None,
    };
    let notice = retired.map(|state| {
        let mut notice = state.to_owned();
        if let Some(sunset) = &lifecycle.sunset {
            notice.push_str(&format!(" (sunset {sunset})"));
        }
        match &lifecycle.replace_with {
            Some(replacement) => notice.push_str(&format!("; use {replacement} instead.")),
            None => notice.push('.'),
        }
        notice
    });
    [Some(why), Some(description), notice.as_deref()]
        .into_iter()
        .flatten()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Call, Effects, Limits};

    pub(super) fn tool(name: &str, method: &str, url: &str) -> (ToolEntry, ToolSchema) {
        (
            ToolEntry::new(url, method, name, format!("{name} summary")),
            ToolSchema::new(Call::new(method, url)),
        )
    }

    #[test]
    fn description_is_why_then_description_then_lifecycle() {
        let (entry, mut schema) = tool("a", "GET", "/a");
        assert_eq!(tool_description(&entry, &schema), "a summary");
        schema.why = Some("Use first".into());
        assert_eq!(tool_description(&entry, &schema), "Use first\n\na summary");
        schema.description = "Full text.".into();
        assert_eq!(tool_description(&entry, &schema), "Use first\n\nFull text.");
        let mut bare = entry.clone();
        bare.description = String::new();
        schema.description = String::new();
        assert_eq!(tool_description(&bare, &schema), "Use first");
        schema.why = None;
        assert_eq!(tool_description(&bare, &schema), "");
        schema.lifecycle.status = Some(Status::Deprecated);
        assert_eq!(tool_description(&bare, &schema), "Deprecated.");
        schema.lifecycle.sunset = Some("2027-01-01".into());
        schema.lifecycle.replace_with = Some("/api/books".into());
        assert_eq!(
            tool_description(&entry, &schema),
            "a summary\n\nDeprecated (sunset 2027-01-01); use /api/books instead."
        );
    }

    #[test]
    fn hints_follow_method_and_declarations() {
        let hints = |method: &str, reversible: Option<bool>, idempotent: Option<bool>| {
            let (_, mut schema) = tool("t", method, "/t");
            schema.effects = Some(Effects {
                reversible,
                undo: None,
                approval: None,
            });
            schema.limits = Some(Limits {
                idempotent,
                ..Limits::default()
            });
            ToolHints::of(&schema)
        };
        let get = hints("get", Some(false), None);
        assert!(get.read_only && get.idempotent);
        assert_eq!(get.destructive, None, "a read destroys nothing");
        let post = hints("POST", None, None);
        assert!(!post.read_only && !post.idempotent);
        assert_eq!(post.destructive, None);
        assert_eq!(hints("POST", Some(true), None).destructive, Some(false));
        assert_eq!(hints("DELETE", Some(false), None).destructive, Some(true));
        assert!(hints("DELETE", None, None).idempotent);
        assert!(hints("POST", None, Some(true)).idempotent);
        assert!(!hints("PUT", None, Some(false)).idempotent);
    }

    #[test]
    fn definitions_name_title_output() {
        let (mut entry, mut schema) = tool("get book", "GET", "/b");
        entry.title = Some("Get a book".into());
        schema.output = Some(json!({"type": "object", "properties": {"id": {"type": "integer"}}}));
        let (other, mut list) = tool("get_book", "GET", "/c");
        list.output = Some(json!({"type": "array"}));
        list.title = Some("List".into());
        let tools = tool_definitions(&[(entry, schema), (other, list)]);
        assert_eq!(tools[0].name, "get_book");
        assert_eq!(tools[1].name, "get_book_2");
        assert_eq!(tools[0].title.as_deref(), Some("Get a book"));
        assert_eq!(tools[1].title.as_deref(), Some("List"));
        assert_eq!(tools[0].output_schema.as_ref().unwrap()["type"], "object");
        assert!(tools[1].output_schema.is_none(), "MCP wants an object");
    }
}
