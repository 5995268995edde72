//! The registry: every described operation, walked once at start-up from the OpenAPI
//! document, with every HALO response pre-serialised.

mod access;
mod auth;
mod builder;
pub(crate) mod bundle;
mod callers;
mod compile;
mod exclude;
mod input;
mod lenient;
mod links;
mod names;
mod operation;
mod rates;
mod rope;
mod route;
mod sensitive;
mod splice;
mod templates;
mod view;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use bytes::Bytes;
use halo_protocol::{LocalizedText, ToolEntry, ToolIndex, ToolSchema};
use http::{HeaderName, HeaderValue};
use serde_json::{Map, Value};

use self::access::Class;
pub use self::builder::RegistryBuilder;
pub(crate) use self::bundle::Problem;
use self::bundle::{Bundler, Direction};
pub use self::names::Names;
pub use self::operation::operation_tags;
pub use self::rope::{Rope, RopeBody};
pub use self::route::Route;
use self::templates::Templates;
pub use self::view::View;
use crate::validate::Validator;
use halo_auth::Principal;

use crate::{BuildError, Skipped};

/// OpenAPI operation keys, in the order tools are listed per path. `options` is left out: on
/// a HALO server, `OPTIONS` with the HALO media type is discovery.
const METHODS: [(&str, &str); 8] = [
    ("get", "GET"),
    ("post", "POST"),
    ("put", "PUT"),
    ("patch", "PATCH"),
    ("delete", "DELETE"),
    ("head", "HEAD"),
    ("trace", "TRACE"),
    ("query", "QUERY"),
];

/// Whether validation asserts `format` keywords.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Formats(pub(crate) bool);

/// Bytes served as they are, with their entity tag.
#[derive(Debug, Clone)]
pub struct Cached {
    /// The bytes.
    pub body: Rope,
    /// Their entity tag, a hash of the bytes in quotes.
    pub etag: HeaderValue,
}

impl Cached {
    /// `body`, with its entity tag.
    #[must_use]
    pub fn new(body: Vec<u8>) -> Self {
        Self::from(Rope::from(body))
    }
}

impl From<Rope> for Cached {
    fn from(body: Rope) -> Self {
        let etag = format!("\"{:016x}\"", body.hash());
        Self {
            body,
            etag: HeaderValue::try_from(etag)
                .expect("hex digits in quotes are a valid header value"),
        }
    }
}

/// One described operation.
#[derive(Debug)]
pub struct Tool {
    entry: ToolEntry,
    /// The serialised manifest entry.
    entry_bytes: Bytes,
    /// The schema as served, but for the parts pre-serialised in `parts`: its input entries
    /// have no `$defs` and it has no `output`.
    pub(crate) schema: ToolSchema,
    parts: Parts,
    schema_bytes: Rope,
    /// Localised texts by language tag.
    locales: BTreeMap<String, LocalizedText>,
    /// Who may call it: an index into the registry's access classes, `None` for anyone.
    class: Option<usize>,
    /// The compiled checks, when validation is on.
    pub(crate) validator: Option<Validator>,
    /// Its successful answer is the application's own event stream, passed through as it
    /// comes: a call asking for `text/event-stream` is not run as a tool stream.
    pub(crate) own_stream: bool,
    /// The input entries never written to the audit trail or shown to approvers
    /// (`writeOnly`, `format: password`), found once at build.
    pub(crate) sensitive: Vec<String>,
}

impl Tool {
    /// The manifest entry, as listed for everyone in the base language.
    #[inline]
    #[must_use]
    pub fn entry(&self) -> &ToolEntry {
        &self.entry
    }

    /// The manifest name.
    #[inline]
    #[must_use]
    pub fn name(&self) -> &str {
        &self.entry.name
    }

    /// Whether it is a hosted agent (`"kind": "agent"`).
    #[inline]
    #[must_use]
    pub fn is_agent(&self) -> bool {
        self.entry.kind == Some(halo_protocol::ToolKind::Agent)
    }

    /// Its schema as served, but for the parts served from shared pieces: its input
    /// entries have no `$defs`, it has no `output` and none of the `$defs` its schemas
    /// share.
    #[inline]
    #[must_use]
    pub fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    /// The compiled checks of its input, when the registry was built with validation.
    #[inline]
    #[must_use]
    pub fn validator(&self) -> Option<&Validator> {
        self.validator.as_ref()
    }

    /// Whether its successful answer is the application's own event stream, to pass
    /// through as it comes rather than run as a tool stream.
    #[inline]
    #[must_use]
    pub fn streams_itself(&self) -> bool {
        self.own_stream
    }

    /// The input entries never written to an audit trail or shown to approvers
    /// (`writeOnly`, `format: password`).
    #[inline]
    #[must_use]
    pub fn sensitive(&self) -> &[String] {
        &self.sensitive
    }
}

/// The pre-serialised parts of a tool's schema, and where they go.
#[derive(Debug, Default)]
struct Parts {
    /// The input entries with `$defs`, and the index of theirs.
    input: Vec<(String, usize)>,
    /// The index of the output schema.
    output: Option<usize>,
    /// The index of the definitions its schemas share, written at its root.
    shared: Option<usize>,
    ropes: Vec<Rope>,
}

impl Parts {
    /// Takes the output and the input entries' definitions out of `schema` and serialises
    /// them, the definitions from the bytes every schema shares; a definition two of its
    /// schemas reach is written once, at the tool's root.
    fn take(schema: &mut ToolSchema, bundler: &Bundler<'_>) -> Result<Self, Problem> {
        let mut parts = Self::default();
        let inputs = schema
            .input
            .values()
            .map(|field| bundler.defs_of_map(&field.schema, Direction::Input))
            .collect();
        let output = schema.output.take();
        let output_defs = output
            .as_ref()
            .map(|output| bundler.defs_of(output, Direction::Output))
            .unwrap_or_default();
        let defs = bundler.tool_defs(inputs, output_defs);
        for (name, own) in schema.input.keys().zip(&defs.inputs) {
            if !own.is_empty() {
                parts.input.push((name.clone(), parts.ropes.len()));
                parts.ropes.push(bundler.defs_rope(own, Direction::Input)?);
            }
        }
        if let Some(mut output) = output {
            let mut ropes = Vec::new();
            if !defs.output.is_empty()
                && let Value::Object(map) = &mut output
            {
                map.insert("$defs".to_owned(), splice::marker(0));
                ropes.push(bundler.defs_rope(&defs.output, Direction::Output)?);
            }
            parts.output = Some(parts.ropes.len());
            parts.ropes.push(splice::splice(&output, &ropes));
        }
        if !defs.shared.is_empty() {
            parts.shared = Some(parts.ropes.len());
            parts
                .ropes
                .push(bundler.defs_rope(&defs.shared, Direction::Input)?);
        }
        Ok(parts)
    }

    /// `schema` serialised with its parts in place.
    fn render(&self, schema: &ToolSchema) -> Rope {
        if self.ropes.is_empty() {
            return splice::splice(schema, &[]);
        }
        let mut marked = schema.clone();
        for (name, index) in &self.input {
            if let Some(field) = marked.input.get_mut(name) {
                field
                    .schema
                    .insert("$defs".to_owned(), splice::marker(*index));
            }
        }
        if let Some(index) = self.output {
            marked.output = Some(splice::marker(index));
        }
        match self.shared {
            Some(index) => splice::splice(&WithShared::new(&marked, index), &self.ropes),
            None => splice::splice(&marked, &self.ropes),
        }
    }
}

/// A tool's schema with the marker of its shared definitions last, as
/// [`ToolSchema::defs`] serialises.
#[derive(serde::Serialize)]
struct WithShared<'s> {
    #[serde(flatten)]
    schema: &'s ToolSchema,
    #[serde(rename = "$defs")]
    defs: Value,
}

impl<'s> WithShared<'s> {
    fn new(schema: &'s ToolSchema, index: usize) -> Self {
        Self {
            schema,
            defs: splice::marker(index),
        }
    }
}

/// An input schema with the definitions it reaches under `$defs`, for the validators.
fn with_defs(bundler: &Bundler<'_>, schema: &mut Map<String, Value>) {
    let defs = bundler.defs_of_map(schema, Direction::Input);
    if !defs.is_empty() {
        schema.insert(
            "$defs".to_owned(),
            Value::Object(bundler.defs_value(&defs, Direction::Input)),
        );
    }
}

/// One described path: its methods and their tools.
#[derive(Debug)]
pub(crate) struct PathEntry {
    /// The path template, as the document writes it.
    template: String,
    /// The described methods, and the index of each one's tool.
    methods: Vec<(&'static str, usize)>,
}

/// The callers an access class admits, per class: which classes a caller passes decides
/// what discovery shows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Audience(Vec<bool>);

/// Every described operation and every HALO response, ready to be looked up.
#[derive(Debug)]
pub struct Registry {
    manifest_head: Vec<u8>,
    tools: Vec<Tool>,
    templates: Templates,
    paths: Vec<PathEntry>,
    /// The distinct access requirements of the operations.
    classes: Vec<Class>,
    /// Every language some operation has texts in.
    languages: Vec<String>,
    /// The headers API keys travel in, by the security schemes.
    key_headers: Vec<HeaderName>,
    /// Every tool, indexed for `OPTIONS /?q=` on the first search: building it costs about
    /// as much as the rest of the registry (some 50 ms for 1,000 tools), which an app that
    /// is never searched should not pay at start-up.
    index: OnceLock<ToolIndex>,
    /// Everything, for everyone, in the base language.
    full: View,
    /// The path entry of `/`, when an operation is described there: looked up once, since
    /// every manifest request asks for it (its `Allow`).
    root: Option<usize>,
    /// What a lenient build left out or repaired, in document order.
    skipped: Vec<Skipped>,
}

impl Registry {
    /// The search index over every tool, built on first use.
    fn index(&self) -> &ToolIndex {
        self.index.get_or_init(|| {
            ToolIndex::new(
                self.tools
                    .iter()
                    .map(|tool| (&tool.entry, Some(&tool.schema))),
            )
        })
    }

    /// The view for everyone in the base language, rendered at start-up.
    #[must_use]
    pub fn full(&self) -> &View {
        &self.full
    }

    /// Which access classes `caller` passes.
    #[must_use]
    pub fn audience(&self, caller: Option<&Principal>) -> Audience {
        Audience(self.classes.iter().map(|c| c.admits(caller)).collect())
    }

    /// The scopes `caller` lacks to call `tool`: empty when it may, and when what keeps it
    /// out is the operation's list of callers (`x-halo-callers`), not its scopes.
    #[must_use]
    pub fn missing_scopes(&self, tool: &Tool, caller: &Principal) -> Vec<&str> {
        tool.class
            .map(|class| self.classes[class].missing(caller))
            .unwrap_or_default()
    }

    /// Whether `caller` may call `tool`.
    #[must_use]
    pub fn admits(&self, tool: &Tool, caller: Option<&Principal>) -> bool {
        tool.class
            .is_none_or(|class| self.classes[class].admits(caller))
    }

    /// What a [lenient](RegistryBuilder::lenient) build left out of the document or
    /// repaired, in document order; empty for a strict build (which fails instead). See
    /// [`Skipped`] for an example.
    #[must_use]
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// The languages operations have texts in.
    #[must_use]
    pub fn languages(&self) -> &[String] {
        &self.languages
    }

    /// The tool at `index`.
    #[inline]
    #[must_use]
    pub fn tool_at(&self, index: usize) -> &Tool {
        &self.tools[index]
    }

    /// Every tool, in index order.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.tools.iter()
    }

    /// The API-key headers of the security schemes.
    #[inline]
    #[must_use]
    pub fn key_headers(&self) -> &[HeaderName] {
        &self.key_headers
    }

    /// The index of a request path's entry, `/` without a lookup.
    #[must_use]
    pub fn path_index(&self, path: &str) -> Option<usize> {
        if path == "/" {
            return self.root;
        }
        self.templates.index(path)
    }

    /// The templates of the paths where some tool is kept by `keep` (given the tool's index).
    #[must_use]
    pub fn templates_where(&self, keep: impl Fn(usize) -> bool) -> Vec<&str> {
        self.paths
            .iter()
            .filter(|entry| entry.methods.iter().any(|&(_, tool)| keep(tool)))
            .map(|entry| entry.template.as_str())
            .collect()
    }
}

/// The operations of a path item that become tools, each with its method (upper case), in
/// the order the registry lists them. A `HEAD` beside a `GET` is not one of its own: HEAD is
/// implied by GET, and calls of it go to the GET tool (utoipa writes both for
/// `method(get, head)`). `options` is left out: on a HALO server, `OPTIONS` with the HALO
/// media type is discovery.
///
/// ```
/// use serde_json::json;
///
/// let item = json!({"get": {}, "head": {}, "post": {}, "options": {}, "summary": "Pets"});
/// let methods: Vec<&str> = halo_openapi::operations(&item).map(|(method, _)| method).collect();
/// assert_eq!(methods, ["GET", "POST"]);
/// ```
pub fn operations(path_item: &Value) -> impl Iterator<Item = (&'static str, &Value)> {
    let has_get = path_item.get("get").is_some_and(Value::is_object);
    METHODS.into_iter().filter_map(move |(key, method)| {
        let operation = path_item.get(key).filter(|op| op.is_object())?;
        (!(has_get && key == "head")).then_some((method, operation))
    })
}

/// The path template of a path key: the key without its `#fragment` (Box describes several
/// operations on one path as `/files/{file_id}#get_shared_link`).
fn template_of(key: &str) -> &str {
    key.split_once('#').map_or(key, |(template, _)| template)
}

/// The headers of the `apiKey` security schemes that travel in headers.
fn key_headers(schemes: Option<&Value>) -> Vec<HeaderName> {
    let mut headers: Vec<HeaderName> = schemes
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, scheme)| {
            scheme.get("type").and_then(Value::as_str) == Some("apiKey")
                && scheme.get("in").and_then(Value::as_str) == Some("header")
        })
        .filter_map(|(_, scheme)| HeaderName::try_from(scheme.get("name")?.as_str()?).ok())
        .collect();
    headers.dedup();
    headers
}

/// `{"api":…,"version":…,"description":…,"tools":[` from the document's `info`.
fn manifest_head(info: Option<&Value>) -> Result<Vec<u8>, BuildError> {
    let text = |key: &str| {
        info.and_then(|i| i.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let manifest = halo_protocol::Manifest::new(text("title"), text("version"))
        .with_description(text("description"));
    let mut head = serde_json::to_vec(&manifest).map_err(BuildError::document)?;
    // The serialised manifest ends with `"tools":[]}`; keep everything up to the `[`.
    head.truncate(head.len() - 2);
    Ok(head)
}
