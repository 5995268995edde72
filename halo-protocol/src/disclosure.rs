//! Progressive disclosure: when an API's tools would cost a model more than a budget, it
//! gets two tools instead, `search_tools` and `call_tool`, and loads only the definitions
//! it searches for. Every channel (the MCP bridges, the agent loops, the exports) shares
//! these definitions, their arguments and their answers.

use serde_json::{Map, Value, json};

use crate::{
    MAX_SEARCH_LIMIT, TagFilter, ToolDefinition, ToolEntry, ToolHints, ToolIndex, ToolSchema,
    estimate_tokens, tool_definitions,
};

/// The name of the tool that finds tools.
pub const SEARCH_TOOLS: &str = "search_tools";

/// The name of the tool that calls a tool by its name.
pub const CALL_TOOL: &str = "call_tool";

/// The default budget, in tokens, of the tool definitions a model is given up front: above
/// it, the tools are found through [`SEARCH_TOOLS`].
pub const DEFAULT_TOOL_BUDGET: usize = 4_000;

/// The largest output schema, in estimated tokens, listed with its tool unless every output
/// schema is asked for: larger ones cost a model more than they help it.
pub const SMALL_OUTPUT_TOKENS: usize = 1_000;

impl ToolDefinition {
    /// What listing this definition costs a model, in estimated tokens
    /// ([`estimate_tokens`]): its name, title, description, input schema and output schema
    /// (when it has one) as JSON.
    #[must_use]
    pub fn estimated_tokens(&self) -> usize {
        self.function_tokens()
            + self
                .output_schema
                .as_ref()
                .map_or(0, |output| json_tokens(output) + 4)
    }

    /// What this definition costs as a function tool of an LLM API, which carries no output
    /// schema: [`estimated_tokens`](Self::estimated_tokens) without it.
    ///
    /// ```
    /// use halo_protocol::{Call, ToolEntry, ToolSchema, tool_definitions};
    /// use serde_json::json;
    ///
    /// let mut schema = ToolSchema::new(Call::new("GET", "/books"));
    /// schema.output = Some(json!({"type": "object", "properties": {"title": {"type": "string"}}}));
    /// let tool = &tool_definitions(&[(ToolEntry::new("/books", "GET", "list_books", "List"), schema)])[0];
    /// assert!(tool.function_tokens() < tool.estimated_tokens());
    /// ```
    #[must_use]
    pub fn function_tokens(&self) -> usize {
        let mut tokens = estimate_tokens(&self.name) + estimate_tokens(&self.description) + 12;
        if let Some(title) = &self.title {
            tokens += estimate_tokens(title) + 4;
        }
        tokens + json_tokens(&self.input_schema)
    }

    /// The definition without an output schema that costs more than `max_tokens`.
    #[must_use]
    pub fn with_output_within(mut self, max_tokens: usize) -> Self {
        if self
            .output_schema
            .as_ref()
            .is_some_and(|output| json_tokens(output) > max_tokens)
        {
            self.output_schema = None;
        }
        self
    }
}

/// What listing these definitions costs a model as function tools, in estimated tokens
/// ([`ToolDefinition::function_tokens`]): each one's name, title, description and input
/// schema, without the output schema that function tools do not carry. An agent loop
/// compares it with its tool budget ([`DEFAULT_TOOL_BUDGET`] by default): above it, the
/// model is given [`SEARCH_TOOLS`] and [`CALL_TOOL`] instead.
///
/// ```
/// use halo_protocol::{Call, ToolEntry, ToolSchema, listed_tokens, tool_definitions};
/// use serde_json::json;
///
/// let mut schema = ToolSchema::new(Call::new("GET", "/books"));
/// schema.output = Some(json!({"type": "object", "properties": {"title": {"type": "string"}}}));
/// let tools = tool_definitions(&[(ToolEntry::new("/books", "GET", "list_books", "List the books"), schema)]);
/// assert!(listed_tokens(&tools) < tools[0].estimated_tokens());
/// ```
#[must_use]
pub fn listed_tokens(definitions: &[ToolDefinition]) -> usize {
    definitions
        .iter()
        .map(ToolDefinition::function_tokens)
        .sum()
}

fn json_tokens(value: &Map<String, Value>) -> usize {
    serde_json::to_string(value).map_or(0, |text| estimate_tokens(&text))
}

/// The definition of [`SEARCH_TOOLS`]: finds the API's tools for a task, answering each
/// one's name, description and input schema ([`search_answer`]).
///
/// ```
/// let tool = halo_protocol::search_tools_definition();
/// assert_eq!(tool.name, "search_tools");
/// assert_eq!(tool.input_schema["required"], serde_json::json!(["query"]));
/// ```
#[must_use]
pub fn search_tools_definition() -> ToolDefinition {
    let input = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What you want to do, in a few words"},
            "tags": {"type": "array", "items": {"type": "string"},
                     "description": "Only tools with any of these tags"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT,
                      "description": "How many tools to answer (5 by default)"}
        },
        "required": ["query"],
        "additionalProperties": false
    });
    ToolDefinition {
        name: SEARCH_TOOLS.to_owned(),
        title: Some("Search tools".to_owned()),
        description: "Find this API's tools for a task. Answers the best matches with their \
                      names, descriptions and input schemas; call one with call_tool (or by \
                      its name)."
            .to_owned(),
        input_schema: object(input),
        output_schema: None,
        hints: ToolHints {
            read_only: true,
            destructive: None,
            idempotent: true,
        },
    }
}

/// The definition of [`CALL_TOOL`]: calls a tool that [`SEARCH_TOOLS`] found, by name.
///
/// ```
/// let tool = halo_protocol::call_tool_definition();
/// assert_eq!(tool.input_schema["required"], serde_json::json!(["name", "arguments"]));
/// ```
#[must_use]
pub fn call_tool_definition() -> ToolDefinition {
    let input = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool's name, as search_tools answered it"},
            "arguments": {"type": "object", "description": "The tool's arguments, as its input schema says"}
        },
        "required": ["name", "arguments"],
        "additionalProperties": false
    });
    ToolDefinition {
        name: CALL_TOOL.to_owned(),
        title: Some("Call a tool".to_owned()),
        description: "Call one of this API's tools by the name search_tools answered, with \
                      arguments that follow its input schema."
            .to_owned(),
        input_schema: object(input),
        output_schema: None,
        // Whatever the tool called does.
        hints: ToolHints::default(),
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The arguments of a [`SEARCH_TOOLS`] call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchRequest {
    /// What to look for.
    pub query: String,
    /// Only tools with any of these tags (none: every tool).
    pub tags: TagFilter,
    /// How many tools to answer, 1 to [`MAX_SEARCH_LIMIT`].
    pub limit: usize,
}

/// How many tools `search_tools` answers when the model does not say: few, so that an
/// answer stays small.
pub const SEARCH_TOOLS_LIMIT: usize = 5;

impl SearchRequest {
    /// A request for `query`, with no tag filter and the default limit.
    #[must_use]
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            tags: TagFilter::default(),
            limit: SEARCH_TOOLS_LIMIT,
        }
    }

    /// Reads a model's arguments (`{"query", "tags"?, "limit"?}`).
    ///
    /// # Errors
    /// A message for the model when the arguments are not of that shape (a missing or empty
    /// query, tags that are not strings, a limit that is not an integer from 1 to
    /// [`MAX_SEARCH_LIMIT`]).
    ///
    /// ```
    /// use halo_protocol::SearchRequest;
    /// use serde_json::json;
    ///
    /// let request = SearchRequest::from_arguments(&json!({"query": "open an issue", "limit": 3})).unwrap();
    /// assert_eq!((request.query.as_str(), request.limit), ("open an issue", 3));
    /// assert!(SearchRequest::from_arguments(&json!({"limit": 3})).is_err());
    /// ```
    pub fn from_arguments(arguments: &Value) -> Result<Self, String> {
        let query = arguments
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|query| !query.is_empty())
            .ok_or("`query` must be a non-empty string: what you want to do")?;
        let tags = match arguments.get("tags") {
            None | Some(Value::Null) => TagFilter::default(),
            Some(Value::Array(tags)) => {
                let tags: Option<Vec<&str>> = tags.iter().map(Value::as_str).collect();
                TagFilter::parse(&tags.ok_or("`tags` must be an array of strings")?.join(","))
            }
            Some(Value::String(tags)) => TagFilter::parse(tags),
            Some(_) => return Err("`tags` must be an array of strings".to_owned()),
        };
        let limit = match arguments.get("limit") {
            None | Some(Value::Null) => SEARCH_TOOLS_LIMIT,
            Some(limit) => limit
                .as_u64()
                .and_then(|limit| usize::try_from(limit).ok())
                .filter(|limit| (1..=MAX_SEARCH_LIMIT).contains(limit))
                .ok_or(format!(
                    "`limit` must be an integer from 1 to {MAX_SEARCH_LIMIT}"
                ))?,
        };
        Ok(Self {
            query: query.to_owned(),
            tags,
            limit,
        })
    }
}

/// The arguments of a [`CALL_TOOL`] call: which tool, with what.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallRequest {
    /// The tool's name.
    pub name: String,
    /// Its arguments (an object, or `null` for none).
    pub arguments: Value,
}

impl CallRequest {
    /// Reads a model's arguments (`{"name", "arguments"}`; `arguments` may be left out for
    /// a tool that takes none).
    ///
    /// # Errors
    /// A message for the model when `name` is not a string or `arguments` not an object.
    ///
    /// ```
    /// use halo_protocol::CallRequest;
    /// use serde_json::json;
    ///
    /// let call = CallRequest::from_arguments(&json!({"name": "get_book", "arguments": {"id": 7}})).unwrap();
    /// assert_eq!(call.name, "get_book");
    /// assert!(CallRequest::from_arguments(&json!({"name": 7})).is_err());
    /// ```
    pub fn from_arguments(arguments: &Value) -> Result<Self, String> {
        let name = arguments
            .get("name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .ok_or("`name` must be the name of a tool search_tools answered")?;
        let arguments = match arguments.get("arguments") {
            None | Some(Value::Null) => Value::Null,
            Some(Value::Object(object)) => Value::Object(object.clone()),
            // Some models send the arguments as JSON text.
            Some(Value::String(text)) => match serde_json::from_str(text) {
                Ok(Value::Object(object)) => Value::Object(object),
                _ => return Err("`arguments` must be an object".to_owned()),
            },
            Some(_) => return Err("`arguments` must be an object".to_owned()),
        };
        Ok(Self {
            name: name.to_owned(),
            arguments,
        })
    }
}

/// The most tokens a [`search_answer`] spends on input schemas and descriptions.
pub const SEARCH_ANSWER_TOKENS: usize = 2_500;

/// The most characters of a tool's description in a [`search_answer`].
const ANSWER_DESCRIPTION_CHARS: usize = 400;

/// What [`SEARCH_TOOLS`] answers: the tools found, best first, each with its name, brief
/// description and brief input schema ([`brief_text`](crate::brief_text),
/// [`brief_schema`](crate::brief_schema): what a model needs to call it, without the notes),
/// and how many more matched than are answered.
///
/// The answer stays within about [`SEARCH_ANSWER_TOKENS`]: the tools past that are
/// answered by name and description only, and searching for a tool's name answers its
/// schema first.
///
/// ```
/// use halo_protocol::{Call, ToolEntry, ToolSchema, search_answer, tool_definitions};
///
/// let found = tool_definitions(&[(ToolEntry::new("/ping", "GET", "ping", "Ping."),
///                                 ToolSchema::new(Call::new("GET", "/ping")))]);
/// let answer = search_answer(&found.iter().collect::<Vec<_>>(), 0);
/// assert_eq!(answer["tools"][0]["name"], "ping");
/// assert_eq!(answer["tools"][0]["inputSchema"]["type"], "object");
/// assert!(answer.get("more").is_none());
/// ```
#[must_use]
pub fn search_answer(found: &[&ToolDefinition], more: usize) -> Value {
    let mut spent = 0;
    let mut unschematised = false;
    let tools: Vec<Value> = found
        .iter()
        .enumerate()
        .map(|(rank, tool)| {
            let mut entry = Map::new();
            entry.insert("name".into(), Value::String(tool.name.clone()));
            let description = crate::brief_text(&tool.description, ANSWER_DESCRIPTION_CHARS);
            spent += estimate_tokens(&description);
            if !description.is_empty() {
                entry.insert("description".into(), Value::String(description));
            }
            let schema = crate::brief_schema(&tool.input_schema);
            let cost = json_tokens(&schema);
            // The best match always comes with its schema.
            if rank == 0 || spent + cost <= SEARCH_ANSWER_TOKENS {
                spent += cost;
                entry.insert("inputSchema".into(), Value::Object(schema));
            } else {
                unschematised = true;
            }
            Value::Object(entry)
        })
        .collect();
    let mut answer = Map::new();
    answer.insert("tools".into(), Value::Array(tools));
    if more > 0 {
        answer.insert("more".into(), json!(more));
    }
    if unschematised {
        answer.insert(
            "hint".into(),
            json!("Tools without an inputSchema: search for the tool's name to get it."),
        );
    }
    Value::Object(answer)
}

/// An API's tools as a model may be given them: every definition, a search index over
/// them, and what listing them all would cost.
///
/// Clients build one from what they discovered (the MCP bridge over stdio, the agent
/// loops), so that search works against any HALO server, whether it searches or not.
///
/// ```
/// use halo_protocol::{Call, SearchRequest, ToolCatalog, ToolEntry, ToolSchema};
///
/// let tools = vec![
///     (ToolEntry::new("/books", "GET", "list_books", "List the books"),
///      ToolSchema::new(Call::new("GET", "/books"))),
///     (ToolEntry::new("/weather", "GET", "weather", "Today's weather"),
///      ToolSchema::new(Call::new("GET", "/weather"))),
/// ];
/// let catalog = ToolCatalog::new(&tools);
/// assert!(catalog.tokens() < 4_000);
/// let (found, more) = catalog.search(&SearchRequest::new("books"));
/// assert_eq!((found[0].name.as_str(), more), ("list_books", 0));
/// assert!(catalog.get("weather").is_some());
/// ```
#[derive(Debug)]
pub struct ToolCatalog {
    definitions: Vec<ToolDefinition>,
    tags: Vec<Vec<String>>,
    index: ToolIndex,
    tokens: usize,
}

impl ToolCatalog {
    /// The catalog of described tools (manifest entries with their schemas), definitions
    /// made by [`tool_definitions`].
    #[must_use]
    pub fn new(tools: &[(ToolEntry, ToolSchema)]) -> Self {
        let definitions = tool_definitions(tools);
        let tokens = definitions
            .iter()
            .map(ToolDefinition::estimated_tokens)
            .sum();
        Self {
            index: ToolIndex::new(tools.iter().map(|(entry, schema)| (entry, Some(schema)))),
            tags: tools.iter().map(|(entry, _)| entry.tags.clone()).collect(),
            definitions,
            tokens,
        }
    }

    /// Every definition, in the order the tools were given.
    #[must_use]
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// The definition named `name`, and its position.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<(usize, &ToolDefinition)> {
        self.definitions
            .iter()
            .enumerate()
            .find(|(_, definition)| definition.name == name)
    }

    /// What listing every definition costs, in estimated tokens.
    #[must_use]
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// Whether listing every definition costs more than `budget` tokens.
    #[must_use]
    pub fn exceeds(&self, budget: usize) -> bool {
        self.tokens > budget
    }

    /// The best matches of a search, best first, and how many more matched.
    #[must_use]
    pub fn search(&self, request: &SearchRequest) -> (Vec<&ToolDefinition>, usize) {
        let hits = self.index.search(&request.query, usize::MAX, |index| {
            request
                .tags
                .matches(self.tags[index].iter().map(String::as_str))
        });
        let more = hits.len().saturating_sub(request.limit);
        let found = hits
            .iter()
            .take(request.limit)
            .map(|hit| &self.definitions[hit.index])
            .collect();
        (found, more)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Call, InputField};

    #[test]
    fn meta_tools_are_valid_definitions() {
        for tool in [search_tools_definition(), call_tool_definition()] {
            assert!(tool.estimated_tokens() < 300, "{}", tool.name);
            assert_eq!(tool.input_schema["type"], "object");
            let function = tool.openai_function();
            assert_eq!(function["function"]["name"], tool.name.as_str());
        }
    }

    #[test]
    fn search_arguments() {
        let read = |value: Value| SearchRequest::from_arguments(&value);
        let request = read(json!({"query": " books ", "tags": ["a", "b"]})).unwrap();
        assert_eq!(request.query, "books");
        assert_eq!(request.tags.tags(), ["a", "b"]);
        assert_eq!(request.limit, SEARCH_TOOLS_LIMIT);
        assert_eq!(
            read(json!({"query": "x", "tags": "a,b"}))
                .unwrap()
                .tags
                .tags(),
            ["a", "b"]
        );
        for bad in [
            json!({}),
            json!({"query": ""}),
            json!({"query": 7}),
            json!({"query": "x", "tags": [1]}),
            json!({"query": "x", "tags": {}}),
            json!({"query": "x", "limit": 0}),
            json!({"query": "x", "limit": 101}),
            json!({"query": "x", "limit": -1}),
            json!({"query": "x", "limit": 2.5}),
            json!(null),
            json!([]),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn call_arguments() {
        let call = CallRequest::from_arguments(&json!({"name": "a"})).unwrap();
        assert_eq!(call.arguments, Value::Null);
        let call =
            CallRequest::from_arguments(&json!({"name": "a", "arguments": "{\"id\":1}"})).unwrap();
        assert_eq!(call.arguments, json!({"id": 1}));
        for bad in [
            json!({}),
            json!({"name": ""}),
            json!({"name": "a", "arguments": [1]}),
            json!({"name": "a", "arguments": "[1]"}),
        ] {
            assert!(CallRequest::from_arguments(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn large_outputs_are_left_out() {
        let entry = ToolEntry::new("/a", "GET", "a", "A.");
        let mut schema = ToolSchema::new(Call::new("GET", "/a"));
        let properties: Map<String, Value> = (0..200)
            .map(|i| (format!("field_{i}"), json!({"type": "string"})))
            .collect();
        schema.output = Some(json!({"type": "object", "properties": properties}));
        schema
            .input
            .insert("id".into(), InputField::new(json!({"type": "integer"})));
        let definition = tool_definitions(&[(entry, schema)]).remove(0);
        let full = definition.estimated_tokens();
        let small = definition.with_output_within(SMALL_OUTPUT_TOKENS);
        assert!(small.output_schema.is_none());
        assert!(small.estimated_tokens() < full / 10, "{full}");
    }

    #[test]
    fn catalog_search_filters_by_tags_and_counts_the_rest() {
        let tool = |name: &str, tags: &[&str]| {
            (
                ToolEntry::new(format!("/{name}"), "GET", name, format!("{name} books"))
                    .with_tags(tags.to_vec()),
                ToolSchema::new(Call::new("GET", format!("/{name}"))),
            )
        };
        let tools = vec![
            tool("list", &["books"]),
            tool("count", &["books"]),
            tool("sell", &["orders"]),
        ];
        let catalog = ToolCatalog::new(&tools);
        let mut request = SearchRequest::new("books");
        request.limit = 1;
        let (found, more) = catalog.search(&request);
        assert_eq!((found.len(), more), (1, 2));
        request.tags = TagFilter::parse("orders");
        let (found, more) = catalog.search(&request);
        assert_eq!((found[0].name.as_str(), more), ("sell", 0));
        let answer = search_answer(&found, more);
        assert_eq!(answer["tools"][0]["inputSchema"]["type"], "object");
    }
}
