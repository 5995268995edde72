//! Exporting HALO tools as the tool definitions of LLM APIs (OpenAI function calling,
//! Anthropic tool use), within each API's limits ([`ExportOptions`]).

use std::fmt;

use halo_protocol::lint::GENERIC_TAGS;
use halo_protocol::{
    DEFAULT_TOOL_BUDGET, ToolDefinition, ToolEntry, ToolIndex, ToolSchema, tool_definitions,
    tool_name,
};
use serde_json::{Map, Value, json};

use crate::strict::{exceeded_limit, strict_schema};

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

/// The tools as definitions for an LLM API, in the order given: every one of them, whatever
/// the API's limits ([`ExportOptions`] keeps to them).
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

impl fmt::Display for ToolFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OpenAi => "OpenAI",
            Self::Anthropic => "Anthropic",
        })
    }
}

/// The most functions OpenAI takes in one request (its API reference on `tools`: "a max of
/// 128 functions are supported"): the most an OpenAI export loads up front.
pub const OPENAI_MAX_TOOLS: usize = 128;

/// The most tools one Anthropic request may defer behind its tool search (the tool search
/// tool's documented limits).
pub const ANTHROPIC_MAX_DEFERRED: usize = 10_000;

/// The type of Anthropic's tool search tool, the BM25 variant (natural-language queries).
const ANTHROPIC_TOOL_SEARCH: &str = "tool_search_tool_bm25_20251119";

/// How long a namespace's description grows with the names of its tools.
const NAMESPACE_DESCRIPTION: usize = 800;

/// When an export defers tools behind the LLM API's own tool search, so that a model loads
/// only the definitions it searches for.
///
/// - **Anthropic** (the "tool search tool"): every tool is still sent in full, with
///   `"defer_loading": true`, after `{"type": "tool_search_tool_bm25_20251119", "name":
///   "tool_search_tool_bm25"}`, which is never deferred (a request needs one tool that is
///   not). At most [`ANTHROPIC_MAX_DEFERRED`] tools.
/// - **OpenAI** (Responses API "tool search", `gpt-5.4` and later): the functions, in the
///   Responses form (`{"type": "function", "name", ...}`) and with `"defer_loading": true`,
///   are grouped into `{"type": "namespace", "name", "description", "tools"}` by their domain
///   tag (the first tag that is not one of [`GENERIC_TAGS`]; OpenAI recommends namespaces,
///   which its models were trained to search, and a namespace's description is all the model
///   sees of it up front), followed by `{"type": "tool_search"}`. A tool without a domain
///   tag stays a deferred function of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Defer {
    /// Anthropic: defer when the tools cost more than the budget, list them as they are
    /// otherwise. OpenAI: never (its tool search changes the request to the Responses API
    /// and needs a recent model), so an export over its limits fails instead.
    #[default]
    Auto,
    /// Always defer.
    Always,
    /// Never defer: an OpenAI export over its limits fails.
    Never,
}

/// How to export tools for an LLM API within its limits: which tools (a search, a maximum),
/// whether to defer them behind the API's tool search ([`Defer`]), OpenAI's strict mode,
/// and the token budget of what a model loads up front.
///
/// An OpenAI export never loads more than [`OPENAI_MAX_TOOLS`] functions, nor more than a
/// [`budget`](Self::budget) that was set: above either, it is deferred when asked
/// ([`Defer::Always`]) and an error otherwise ([`ExportError::TooMany`], which says how many
/// tools there are); [`Exported::tokens`] says what it costs. An Anthropic export is deferred
/// above the budget ([`DEFAULT_TOOL_BUDGET`] estimated tokens unless set).
///
/// ```
/// use halo_client::protocol::{Call, ToolEntry, ToolSchema};
/// use halo_client::{Defer, ExportError, ExportOptions, ToolFormat};
///
/// let tools: Vec<(ToolEntry, ToolSchema)> = (0..200)
///     .map(|i| {
///         let url = format!("/things/{i}");
///         let entry = ToolEntry::new(url.as_str(), "GET", format!("get_thing_{i}"),
///                                    format!("Get thing number {i}"))
///             .with_tags(["things", "read"]);
///         (entry, ToolSchema::new(Call::new("GET", url.as_str())))
///     })
///     .collect();
///
/// // 200 functions are more than OpenAI takes.
/// let openai = ExportOptions::new(ToolFormat::OpenAi);
/// assert!(matches!(openai.export(&tools), Err(ExportError::TooMany { tools: 200, .. })));
///
/// // Chosen by a search...
/// let chosen = openai.clone().query("thing number 7").max(5).export(&tools).unwrap();
/// assert_eq!(chosen.tools.len(), 5);
/// assert_eq!(chosen.tools[0]["function"]["name"], "get_thing_7");
///
/// // ... or deferred behind tool search, in one namespace per domain tag.
/// let deferred = openai.defer(Defer::Always).export(&tools).unwrap();
/// assert_eq!(deferred.tools[0]["type"], "namespace");
/// assert_eq!(deferred.tools[0]["tools"][0]["defer_loading"], true);
/// assert_eq!(deferred.tools[1]["type"], "tool_search");
///
/// // Anthropic defers by itself above the budget.
/// let anthropic = ExportOptions::new(ToolFormat::Anthropic).export(&tools).unwrap();
/// assert!(anthropic.deferred);
/// assert_eq!(anthropic.tools[0]["name"], "tool_search_tool_bm25");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct ExportOptions {
    format: ToolFormat,
    strict: bool,
    defer: Defer,
    query: Option<String>,
    max: Option<usize>,
    /// The budget set, if any.
    budget: Option<usize>,
}

/// Tools exported by [`ExportOptions::export`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Exported {
    /// The `tools` of the LLM API's request: definitions (in namespaces, for a deferred
    /// OpenAI export) and, when deferred, the API's tool search tool.
    pub tools: Vec<Value>,
    /// The position, in the tools given, of each tool exported, in the order exported: a
    /// model's call comes back under the exported name, and this pairs it with its tool.
    pub selected: Vec<usize>,
    /// What listing the selected tools in full costs, in estimated tokens.
    pub tokens: usize,
    /// Whether the tools are deferred behind the API's tool search.
    pub deferred: bool,
    /// The tools exported without strict mode, though it was asked for, and why: their
    /// schemas exceed one of its size limits.
    pub not_strict: Vec<(String, String)>,
}

/// Why tools cannot be exported as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExportError {
    /// More tools, or more tokens, than the LLM API takes as asked.
    #[non_exhaustive]
    TooMany {
        /// The format asked for.
        format: ToolFormat,
        /// How many tools were selected.
        tools: usize,
        /// What listing them costs, in estimated tokens.
        tokens: usize,
        /// The most tools the format takes this way.
        max_tools: usize,
        /// The budget that was exceeded, if the tools are few enough.
        budget: Option<usize>,
    },
    /// Options that cannot be applied (an empty search, a maximum of 0, strict mode for a
    /// format that has none).
    Invalid(String),
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooMany {
                format,
                tools,
                tokens,
                max_tools,
                budget,
            } => {
                write!(
                    f,
                    "{tools} tools (~{tokens} tokens) are more than {format} takes "
                )?;
                match budget {
                    Some(budget) if tools <= max_tools => {
                        write!(f, "within a budget of {budget} tokens")?;
                    }
                    _ => write!(f, "this way (at most {max_tools})")?,
                }
                f.write_str(
                    ": select fewer (a search, a maximum, tags) or defer them behind tool search",
                )
            }
            Self::Invalid(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ExportError {}

impl ExportOptions {
    /// Every tool in `format`, deferred as [`Defer::Auto`] says, not strict, with no
    /// budget set.
    pub fn new(format: ToolFormat) -> Self {
        Self {
            format,
            strict: false,
            defer: Defer::Auto,
            query: None,
            max: None,
            budget: None,
        }
    }

    /// OpenAI's strict mode: each function says `"strict": true` and its parameters are
    /// rewritten as strict mode requires ([`strict_schema`](crate::strict_schema)). A tool
    /// whose schema exceeds strict mode's size limits is exported without it and named in
    /// [`Exported::not_strict`]. OpenAI only.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// When to defer the tools behind the API's tool search.
    pub fn defer(mut self, defer: Defer) -> Self {
        self.defer = defer;
        self
    }

    /// Only the tools that match these words, best first ([`ToolIndex`] over each tool's
    /// name, texts, tags, path and parameters).
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// At most this many tools: the best ones with a [`query`](Self::query), the first ones
    /// otherwise.
    pub fn max(mut self, max: usize) -> Self {
        self.max = Some(max);
        self
    }

    /// The most a model should load up front, in estimated tokens
    /// ([`ToolDefinition::estimated_tokens`], without output schemas, which exports do not
    /// list). Anthropic defers above it ([`DEFAULT_TOOL_BUDGET`] when not set); an OpenAI
    /// export above a budget set here fails unless deferred.
    pub fn budget(mut self, tokens: usize) -> Self {
        self.budget = Some(tokens);
        self
    }

    /// Exports the tools (manifest entries with their schemas, in the manifest's order).
    ///
    /// Names are given as [`export_tools`] gives them, over all the tools, so that a tool
    /// keeps its name whichever are selected.
    ///
    /// # Errors
    /// [`ExportError::TooMany`] when the selected tools exceed the format's limits and are
    /// not deferred, [`ExportError::Invalid`] for options that cannot be applied.
    pub fn export(&self, tools: &[(ToolEntry, ToolSchema)]) -> Result<Exported, ExportError> {
        if self.strict && self.format != ToolFormat::OpenAi {
            return Err(ExportError::Invalid(format!(
                "strict mode is OpenAI's; {} has no such option",
                self.format
            )));
        }
        if self.max == Some(0) {
            return Err(ExportError::Invalid(
                "the maximum number of tools must be at least 1".to_owned(),
            ));
        }
        let definitions = tool_definitions(tools);
        let selected: Vec<usize> = match &self.query {
            Some(query) if query.trim().is_empty() => {
                return Err(ExportError::Invalid(
                    "the search has no words: say what the tools are for".to_owned(),
                ));
            }
            Some(query) => {
                let index =
                    ToolIndex::new(tools.iter().map(|(entry, schema)| (entry, Some(schema))));
                index
                    .search(query, self.max.unwrap_or(usize::MAX), |_| true)
                    .iter()
                    .map(|hit| hit.index)
                    .collect()
            }
            None => (0..tools.len().min(self.max.unwrap_or(usize::MAX))).collect(),
        };
        let tokens = selected
            .iter()
            .map(|&i| listed_tokens(&definitions[i]))
            .sum();
        let budget = self.budget.unwrap_or(DEFAULT_TOOL_BUDGET);
        let deferred = match (self.format, self.defer) {
            (_, Defer::Always) => true,
            (ToolFormat::Anthropic, Defer::Auto) => tokens > budget,
            _ => false,
        };
        let too_many = |max_tools: usize| ExportError::TooMany {
            format: self.format,
            tools: selected.len(),
            tokens,
            max_tools,
            budget: self.budget.filter(|budget| tokens > *budget),
        };
        match self.format {
            ToolFormat::OpenAi
                if !deferred
                    && (selected.len() > OPENAI_MAX_TOOLS
                        || self.budget.is_some_and(|budget| tokens > budget)) =>
            {
                return Err(too_many(OPENAI_MAX_TOOLS));
            }
            ToolFormat::Anthropic if deferred && selected.len() > ANTHROPIC_MAX_DEFERRED => {
                return Err(too_many(ANTHROPIC_MAX_DEFERRED));
            }
            _ => {}
        }
        let mut not_strict = Vec::new();
        let chosen: Vec<(&ToolEntry, Map<String, Value>)> = selected
            .iter()
            .map(|&i| {
                let definition = &definitions[i];
                let tool = match self.format {
                    ToolFormat::OpenAi => self.openai(definition, &mut not_strict),
                    ToolFormat::Anthropic => match definition.anthropic_tool() {
                        Value::Object(tool) => tool,
                        _ => Map::new(),
                    },
                };
                (&tools[i].0, tool)
            })
            .collect();
        let tools = match (self.format, deferred) {
            (ToolFormat::OpenAi, true) => openai_deferred(chosen),
            (ToolFormat::Anthropic, true) => {
                let mut out = vec![json!({
                    "type": ANTHROPIC_TOOL_SEARCH,
                    "name": "tool_search_tool_bm25"
                })];
                out.extend(chosen.into_iter().map(|(_, mut tool)| {
                    tool.insert("defer_loading".into(), Value::Bool(true));
                    Value::Object(tool)
                }));
                out
            }
            (ToolFormat::OpenAi, false) => chosen
                .into_iter()
                .map(|(_, function)| json!({"type": "function", "function": function}))
                .collect(),
            (ToolFormat::Anthropic, false) => chosen
                .into_iter()
                .map(|(_, tool)| Value::Object(tool))
                .collect(),
        };
        Ok(Exported {
            tools,
            selected,
            tokens,
            deferred,
            not_strict,
        })
    }

    /// An OpenAI function (`name`, `description`, `parameters`, and `strict` when asked).
    fn openai(
        &self,
        definition: &ToolDefinition,
        not_strict: &mut Vec<(String, String)>,
    ) -> Map<String, Value> {
        let mut function = match definition.openai_function() {
            Value::Object(mut tool) => match tool.remove("function") {
                Some(Value::Object(function)) => function,
                _ => Map::new(),
            },
            _ => Map::new(),
        };
        if self.strict {
            let parameters = strict_schema(&definition.input_schema);
            match exceeded_limit(&parameters) {
                None => {
                    function.insert("parameters".into(), Value::Object(parameters));
                    function.insert("strict".into(), Value::Bool(true));
                }
                Some(reason) => {
                    function.insert("strict".into(), Value::Bool(false));
                    not_strict.push((definition.name.clone(), reason));
                }
            }
        }
        function
    }
}

/// What listing a definition costs up front, as exports list it (without output schema).
fn listed_tokens(definition: &ToolDefinition) -> usize {
    let mut listed = definition.clone();
    listed.output_schema = None;
    listed.estimated_tokens()
}

/// The Responses API's tool search form: deferred functions grouped into one namespace per
/// domain tag (the others on their own), then the `tool_search` tool.
fn openai_deferred(chosen: Vec<(&ToolEntry, Map<String, Value>)>) -> Vec<Value> {
    let mut namespaces: Vec<(String, String, Vec<Value>)> = Vec::new();
    let mut loose = Vec::new();
    for (entry, mut function) in chosen {
        let mut tool = Map::new();
        tool.insert("type".into(), json!("function"));
        tool.append(&mut function);
        tool.insert("defer_loading".into(), Value::Bool(true));
        let domain = entry
            .tags
            .iter()
            .find(|tag| !GENERIC_TAGS.contains(&tag.as_str()))
            .map(|tag| (tool_name(tag), tag.clone()))
            .filter(|(name, _)| !name.is_empty());
        match domain {
            Some((name, tag)) => match namespaces.iter_mut().find(|(n, ..)| *n == name) {
                Some((.., tools)) => tools.push(Value::Object(tool)),
                None => namespaces.push((name, tag, vec![Value::Object(tool)])),
            },
            None => loose.push(Value::Object(tool)),
        }
    }
    let mut out: Vec<Value> = namespaces
        .into_iter()
        .map(|(name, tag, tools)| {
            json!({
                "type": "namespace",
                "name": name,
                "description": namespace_description(&tag, &tools),
                "tools": tools,
            })
        })
        .collect();
    out.extend(loose);
    out.push(json!({"type": "tool_search"}));
    out
}

/// What a model sees of a namespace up front: its tag and the names of its tools.
fn namespace_description(tag: &str, tools: &[Value]) -> String {
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|tool| tool.get("name").and_then(Value::as_str))
        .collect();
    let mut description = format!(
        "{} tool{} tagged `{tag}`: ",
        names.len(),
        if names.len() == 1 { "" } else { "s" }
    );
    for (i, name) in names.iter().enumerate() {
        if description.len() + name.len() > NAMESPACE_DESCRIPTION {
            description.push_str(&format!("and {} more", names.len() - i));
            return description;
        }
        description.push_str(name);
        description.push_str(if i + 1 == names.len() { "." } else { ", " });
    }
    description
}

#[cfg(test)]
mod tests;
