//! HALO tools as the tool definitions of LLM APIs and MCP: one name, description, input
//! schema and set of hints per tool, which each bridge (OpenAI and Anthropic exports, MCP
//! over stdio or HTTP) turns into its own types.

use serde_json::{Map, Value, json};

use crate::{Problem, Status, ToolEntry, ToolSchema, UniqueNames, is_data_keyword};

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
}

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
    Problem::new(status).with_detail(crate::search::truncate(&detail, MAX_DETAIL))
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
                    Some(output.clone())
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

/// A tool's input entries as one JSON Schema object: one property per entry (its schema
/// without HALO's `required` and `in` markers), `required` listing the required entries,
/// and `additionalProperties: false`. The entries' `$defs` move to the root, where their
/// `#/$defs/...` references resolve, renamed on a clash (identical definitions are shared).
///
/// A variable of the call's URL template that the input does not describe (servers that
/// describe bodies only leave path parameters out) becomes a required string, so that a
/// model knows to pass it and a strict client does not refuse it.
///
/// Arguments that follow this schema can be placed back into a request by
/// [`place_arguments`](crate::place_arguments).
///
/// ```
/// use halo_protocol::{Call, InputField, Location, ToolSchema, input_schema};
/// use serde_json::{Value, json};
///
/// let mut schema = ToolSchema::new(Call::new("GET", "/api/books"));
/// schema.input.insert(
///     "q".into(),
///     InputField::new(json!({"type": "string"})).located(Location::Query),
/// );
/// assert_eq!(
///     Value::Object(input_schema(&schema)),
///     json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": [],
///            "additionalProperties": false})
/// );
/// ```
#[must_use]
pub fn input_schema(schema: &ToolSchema) -> Map<String, Value> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut defs = Map::new();
    for (name, field) in &schema.input {
        let mut property = field.schema.clone();
        if let Some(Value::Object(own)) = property.remove("$defs") {
            hoist(own, &mut property, &mut defs);
        }
        properties.insert(name.clone(), Value::Object(property));
        if field.required {
            required.push(Value::String(name.clone()));
        }
    }
    for variable in crate::place::template_variables(&schema.call.url) {
        if !variable.is_empty() && !properties.contains_key(variable) {
            let description = format!("The `{{{variable}}}` segment of {}", schema.call.url);
            properties.insert(
                variable.to_owned(),
                json!({"type": "string", "description": description}),
            );
            required.push(Value::String(variable.to_owned()));
        }
    }
    let mut parameters = Map::new();
    parameters.insert("type".into(), json!("object"));
    parameters.insert("properties".into(), Value::Object(properties));
    parameters.insert("required".into(), Value::Array(required));
    parameters.insert("additionalProperties".into(), Value::Bool(false));
    if !defs.is_empty() {
        parameters.insert("$defs".into(), Value::Object(defs));
    }
    parameters
}

/// Moves an entry's `$defs` into the root's, renaming a definition whose name is taken by a
/// different one (and rewriting the references to it) until everything settles.
fn hoist(
    own: Map<String, Value>,
    property: &mut Map<String, Value>,
    root: &mut Map<String, Value>,
) {
    let mut renames: Vec<(String, String)> = Vec::new();
    loop {
        let mut changed = false;
        for (name, definition) in &own {
            if renames.iter().any(|(from, _)| from == name) {
                continue;
            }
            let mut rewritten = definition.clone();
            rewrite_refs(&mut rewritten, &renames);
            if root
                .get(name)
                .is_some_and(|existing| *existing != rewritten)
            {
                let mut n = 2_u32;
                let fresh = loop {
                    let candidate = format!("{name}_{n}");
                    let clashes = root.contains_key(&candidate)
                        || own.contains_key(&candidate)
                        || renames.iter().any(|(_, to)| *to == candidate);
                    if !clashes {
                        break candidate;
                    }
                    n += 1;
                };
                renames.push((name.clone(), fresh));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (name, mut definition) in own {
        rewrite_refs(&mut definition, &renames);
        let target = renames
            .iter()
            .find(|(from, _)| *from == name)
            .map_or(name, |(_, to)| to.clone());
        root.entry(target).or_insert(definition);
    }
    if !renames.is_empty() {
        let mut value = Value::Object(std::mem::take(property));
        rewrite_refs(&mut value, &renames);
        if let Value::Object(map) = value {
            *property = map;
        }
    }
}

/// Rewrites `{"$ref": "#/$defs/from"}` to `#/$defs/to`, outside data keywords.
fn rewrite_refs(value: &mut Value, renames: &[(String, String)]) {
    if renames.is_empty() {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get_mut("$ref")
                && let Some(name) = reference.strip_prefix("#/$defs/")
                && let Some((_, to)) = renames.iter().find(|(from, _)| from == name)
            {
                *reference = format!("#/$defs/{to}");
            }
            for (keyword, inner) in map.iter_mut() {
                if !is_data_keyword(keyword) && keyword != "$ref" {
                    rewrite_refs(inner, renames);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rewrite_refs(item, renames);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Call, Effects, InputField, Limits, Location, is_self_contained};

    fn tool(name: &str, method: &str, url: &str) -> (ToolEntry, ToolSchema) {
        (
            ToolEntry::new(url, method, name, format!("{name} summary")),
            ToolSchema::new(Call::new(method, url)),
        )
    }

    fn input(schema: &ToolSchema) -> Value {
        Value::Object(input_schema(schema))
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
    fn undescribed_path_variables_become_required_strings() {
        // As halo-fastapi serves it: the path parameter is not part of the input.
        let bare = ToolSchema::new(Call::new("GET", "/notes/{note_id}/files/{*path}"));
        let parameters = Value::Object(input_schema(&bare));
        assert_eq!(parameters["required"], json!(["note_id", "path"]));
        assert_eq!(parameters["properties"]["note_id"]["type"], "string");
        assert_eq!(parameters["additionalProperties"], false);

        // A described one keeps its own schema and requiredness.
        let mut described = ToolSchema::new(Call::new("GET", "/notes/{id}"));
        described.input.insert(
            "id".into(),
            InputField::new(json!({"type": "integer"}))
                .located(Location::Path)
                .required(true),
        );
        let parameters = Value::Object(input_schema(&described));
        assert_eq!(parameters["properties"], json!({"id": {"type": "integer"}}));
        assert_eq!(parameters["required"], json!(["id"]));
    }

    #[test]
    fn hints_follow_method_and_declarations() {
        let hints = |method: &str, reversible: Option<bool>, idempotent: Option<bool>| {
            let (_, mut schema) = tool("t", method, "/t");
            schema.effects = Some(Effects {
                reversible,
                undo: None,
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

    #[test]
    fn entries_become_properties() {
        let (_, mut schema) = tool("create_book", "POST", "/api/books");
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
        assert_eq!(
            input(&schema),
            json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string", "maxLength": 200},
                    "Idempotency-Key": {"type": "string"}
                },
                "required": ["title"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn nested_entries_are_unwrapped() {
        let body = json!({"type": "object", "description": "The pet", "required": ["name"],
                          "properties": {"name": {"type": "string"}}});
        let (_, mut schema) = tool("add", "POST", "/pets");
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
        let parameters = input(&read);
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
        let (_, mut schema) = tool("t", "POST", "/t");
        schema.input.insert("a".into(), entry_with("a"));
        schema.input.insert("same".into(), entry_with("a"));
        schema.input.insert("b".into(), entry_with("b"));
        let parameters = input(&schema);
        assert!(is_self_contained(&parameters), "{parameters:#}");
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
        let (_, mut schema) = tool("t", "POST", "/t");
        schema.input.insert("one".into(), entry_with("string"));
        schema.input.insert("two".into(), entry_with("integer"));
        let parameters = input(&schema);
        assert!(is_self_contained(&parameters), "{parameters:#}");
        let two = &parameters["properties"]["two"]["$ref"];
        let tree = two.as_str().unwrap().strip_prefix("#/$defs/").unwrap();
        assert_eq!(tree, "Tree_2");
        let leaf_ref = parameters["$defs"][tree]["items"]["$ref"].as_str().unwrap();
        let leaf = leaf_ref.strip_prefix("#/$defs/").unwrap();
        assert_eq!(parameters["$defs"][leaf]["type"], "integer");
        assert_eq!(parameters["$defs"]["Leaf"]["type"], "string");
    }
}
