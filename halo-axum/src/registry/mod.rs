//! The registry: every described operation, walked once at start-up from the OpenAPI
//! document, with every HALO response pre-serialised.

mod auth;
mod input;
mod names;
mod operation;
mod refs;

use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;
use halo_protocol::{Metadata, TagFilter, ToolSchema};
use http::HeaderValue;
use serde_json::Value;

use self::names::Names;
use self::operation::Source;
use self::refs::Resolver;
use crate::BuildError;

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

/// Bytes served as they are, with their entity tag.
#[derive(Debug, Clone)]
pub(crate) struct Cached {
    pub(crate) body: Bytes,
    pub(crate) etag: HeaderValue,
}

impl Cached {
    fn new(body: Vec<u8>) -> Self {
        let etag = format!("\"{:016x}\"", xxhash_rust::xxh3::xxh3_64(&body));
        Self {
            body: Bytes::from(body),
            etag: HeaderValue::try_from(etag)
                .expect("hex digits in quotes are a valid header value"),
        }
    }
}

/// One described operation.
#[derive(Debug)]
pub(crate) struct Tool {
    /// The serialised manifest entry.
    entry: Bytes,
    tags: Vec<String>,
    /// The schema as served.
    schema: ToolSchema,
}

/// One described path: the array of its schemas, one per method.
#[derive(Debug)]
pub(crate) struct PathEntry {
    pub(crate) schemas: Cached,
    /// The described methods.
    methods: Vec<&'static str>,
    /// The methods and `OPTIONS`, for `Allow` when the app has no `OPTIONS` answer of its own.
    pub(crate) allow: HeaderValue,
}

/// Every described operation and every HALO response, ready to be looked up.
#[derive(Debug)]
pub(crate) struct Registry {
    manifest_head: Vec<u8>,
    tools: Vec<Tool>,
    manifest: Cached,
    /// The manifest filtered by each single tag, and with no tools (an unknown tag).
    by_tag: HashMap<String, Cached>,
    no_tools: Cached,
    templates: matchit::Router<usize>,
    paths: Vec<PathEntry>,
}

impl Registry {
    /// Walks the document (OpenAPI 3.x as JSON) and pre-serialises every response.
    ///
    /// `described` attaches metadata by `operationId`, over what the operation's own
    /// extensions say.
    pub(crate) fn build(
        document: &Value,
        mut described: HashMap<String, Metadata>,
    ) -> Result<Self, BuildError> {
        let memo = refs::Memo::default();
        let resolver = Resolver::new(document, &memo);
        let schemes = document.pointer("/components/securitySchemes");
        let default_security = document.get("security");
        let path_items = match document.get("paths") {
            None | Some(Value::Null) => &serde_json::Map::new(),
            Some(Value::Object(paths)) => paths,
            Some(_) => return Err(BuildError::document("`paths` is not an object")),
        };

        let mut templates = matchit::Router::new();
        let mut names = Names::default();
        let mut tools = Vec::new();
        let mut paths = Vec::new();
        for (template, path_item) in path_items {
            let first_tool = tools.len();
            let mut methods = Vec::new();
            for (key, method) in METHODS {
                let Some(operation) = path_item.get(key).filter(|op| op.is_object()) else {
                    continue;
                };
                let source = Source {
                    template,
                    method,
                    path_item,
                    operation,
                };
                let mut meta = source.metadata()?;
                if let Some(extra) = source.operation_id().and_then(|id| described.remove(id)) {
                    meta.merge(extra);
                }
                let name = names.assign(source.operation_id(), method, template);
                let (entry, schema) =
                    operation::build(&source, name, meta, resolver, schemes, default_security)?;
                methods.push(method);
                tools.push(Tool {
                    entry: Bytes::from(serde_json::to_vec(&entry).map_err(BuildError::document)?),
                    tags: entry.tags,
                    schema,
                });
            }
            if methods.is_empty() {
                continue;
            }
            let schemas: Vec<&ToolSchema> = tools[first_tool..].iter().map(|t| &t.schema).collect();
            templates
                .insert(template.clone(), paths.len())
                .map_err(|e| BuildError::invalid_path(template, e))?;
            let allow = HeaderValue::try_from(format!("{}, OPTIONS", methods.join(", ")))
                .map_err(|e| BuildError::invalid_path(template, e))?;
            paths.push(PathEntry {
                schemas: Cached::new(serde_json::to_vec(&schemas).map_err(BuildError::document)?),
                methods,
                allow,
            });
        }
        if let Some(operation_id) = described.keys().next() {
            return Err(BuildError::unknown_operation(operation_id));
        }

        let manifest_head = manifest_head(document.get("info"))?;
        let mut registry = Self {
            manifest: Cached::new(Vec::new()),
            by_tag: HashMap::new(),
            no_tools: Cached::new(Vec::new()),
            manifest_head,
            tools,
            templates,
            paths,
        };
        registry.check_links()?;
        registry.manifest = registry.render_manifest(|_| true);
        registry.no_tools = registry.render_manifest(|_| false);
        let tags: BTreeSet<&String> = registry.tools.iter().flat_map(|tool| &tool.tags).collect();
        let by_tag = tags
            .into_iter()
            .map(|tag| {
                (
                    tag.clone(),
                    registry.render_manifest(|tool| tool.tags.contains(tag)),
                )
            })
            .collect();
        registry.by_tag = by_tag;
        Ok(registry)
    }

    /// The manifest for a tag filter.
    ///
    /// Unfiltered and single-tag manifests are rendered at start-up; a filter with several
    /// tags concatenates the pre-serialised entries of the tools it keeps.
    pub(crate) fn manifest(&self, filter: &TagFilter) -> Cached {
        match filter.tags() {
            [] => self.manifest.clone(),
            [tag] => self.by_tag.get(tag).unwrap_or(&self.no_tools).clone(),
            _ => self.render_manifest(|tool| filter.matches(tool.tags.iter().map(String::as_str))),
        }
    }

    /// The schemas of the path a request names (`/api/books/42` → `/api/books/{id}`).
    pub(crate) fn path(&self, path: &str) -> Option<&PathEntry> {
        let matched = self.templates.at(path).ok()?;
        self.paths.get(*matched.value)
    }

    /// Concatenates the pre-serialised entries of the tools that pass `keep`.
    fn render_manifest(&self, keep: impl Fn(&Tool) -> bool) -> Cached {
        let mut body = Vec::with_capacity(self.manifest_head.len() + 64 * self.tools.len());
        body.extend_from_slice(&self.manifest_head);
        let mut first = true;
        for tool in self.tools.iter().filter(|tool| keep(tool)) {
            if !first {
                body.push(b',');
            }
            first = false;
            body.extend_from_slice(&tool.entry);
        }
        body.extend_from_slice(b"]}");
        Cached::new(body)
    }

    /// Every relative link a schema declares must name a described path, so that nothing
    /// drifts: `undo`, `next[].suggest`, `replace_with`, `fallback`.
    fn check_links(&self) -> Result<(), BuildError> {
        for tool in &self.tools {
            let schema = &tool.schema;
            let links = [
                (
                    "effects.undo",
                    schema.effects.as_ref().and_then(|e| e.undo.as_deref()),
                ),
                ("replace_with", schema.lifecycle.replace_with.as_deref()),
                (
                    "resilience.fallback",
                    schema
                        .resilience
                        .as_ref()
                        .and_then(|r| r.fallback.as_deref()),
                ),
            ]
            .into_iter()
            .chain(
                schema
                    .next
                    .iter()
                    .map(|next| ("next.suggest", Some(next.suggest.as_str()))),
            );
            for (field, link) in links {
                let Some(link) = link else { continue };
                if let Some((method, path)) = relative_link(link)
                    && !self.path(path).is_some_and(|entry| {
                        method.is_none_or(|method| entry.methods.contains(&method))
                    })
                {
                    let label = format!("{} {}", schema.call.method, schema.call.url);
                    return Err(BuildError::dangling_link(&label, field, link));
                }
            }
        }
        Ok(())
    }
}

/// The method and path of a link written `/path`, `/path?query` or `METHOD /path`; `None`
/// for absolute URLs, which point at other hosts and cannot be checked here.
fn relative_link(link: &str) -> Option<(Option<&str>, &str)> {
    let link = link.trim();
    let (method, link) = match link.split_once(' ') {
        Some((method, rest)) if method.bytes().all(|b| b.is_ascii_uppercase()) => {
            (Some(method), rest.trim())
        }
        _ => (None, link),
    };
    let path = link.split(['?', '#']).next().unwrap_or_default();
    path.starts_with('/').then_some((method, path))
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
