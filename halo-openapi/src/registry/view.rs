//! What discovery serves, rendered once per audience and language: the manifest (whole,
//! by tag, and empty), each path's schema array and `Allow`.

use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;
use halo_protocol::{SearchQuery, TagFilter};
use http::HeaderValue;

use super::{Audience, Cached, Registry, Rope, Tool};

/// Every discovery response for one audience and language.
#[derive(Debug)]
pub struct View {
    manifest: Cached,
    /// The manifest filtered by each single tag, and with no tools (an unknown tag).
    by_tag: HashMap<String, Cached>,
    no_tools: Cached,
    /// Each path's schema array; `None` when the audience may call nothing there.
    paths: Vec<Option<Cached>>,
    /// Each path's `Allow`: the methods the audience may call there, then `OPTIONS`.
    allows: Vec<HeaderValue>,
    /// Which tools it shows.
    shown: Vec<bool>,
}

impl Registry {
    /// Renders every discovery response for an audience (`None`: everyone) in a language
    /// (`None`: the base texts).
    #[must_use]
    pub fn render(&self, audience: Option<&Audience>, language: Option<&str>) -> View {
        let shown: Vec<bool> = self
            .tools
            .iter()
            .map(|tool| {
                tool.class
                    .is_none_or(|class| audience.is_none_or(|a| a.0[class]))
            })
            .collect();
        let localised: Vec<Option<(Bytes, Rope)>> = self
            .tools
            .iter()
            .map(|tool| language.and_then(|language| localise(tool, language)))
            .collect();
        let entry = |index: usize| {
            localised[index]
                .as_ref()
                .map_or(&self.tools[index].entry_bytes, |(entry, _)| entry)
        };
        let schema = |index: usize| {
            localised[index]
                .as_ref()
                .map_or(&self.tools[index].schema_bytes, |(_, schema)| schema)
        };
        let manifest = |keep: &dyn Fn(&Tool) -> bool| {
            self.render_manifest(
                (0..self.tools.len())
                    .filter(|&i| shown[i] && keep(&self.tools[i]))
                    .map(entry),
            )
        };
        let tags: BTreeSet<&String> = self
            .tools
            .iter()
            .flat_map(|tool| &tool.entry.tags)
            .collect();
        let by_tag = tags
            .into_iter()
            .map(|tag| (tag.clone(), manifest(&|tool| tool.entry.tags.contains(tag))))
            .collect();
        let (paths, allows) = self
            .paths
            .iter()
            .map(|path| {
                let visible: Vec<(&str, usize)> = path
                    .methods
                    .iter()
                    .copied()
                    .filter(|&(_, index)| shown[index])
                    .collect();
                let schemas = (!visible.is_empty())
                    .then(|| join_array(visible.iter().map(|&(_, index)| schema(index))));
                (schemas, allow(visible.iter().map(|&(method, _)| method)))
            })
            .unzip();
        View {
            manifest: manifest(&|_| true),
            by_tag,
            no_tools: manifest(&|_| false),
            paths,
            allows,
            shown,
        }
    }

    /// Concatenates manifest entries after the head.
    fn render_manifest<'e>(&self, entries: impl Iterator<Item = &'e Bytes>) -> Cached {
        let mut body = Vec::with_capacity(self.manifest_head.len() + 64 * self.tools.len());
        body.extend_from_slice(&self.manifest_head);
        join(&mut body, entries);
        body.extend_from_slice(b"]}");
        Cached::new(body)
    }
}

impl View {
    pub(super) fn empty() -> Self {
        Self {
            manifest: Cached::new(Vec::new()),
            by_tag: HashMap::new(),
            no_tools: Cached::new(Vec::new()),
            paths: Vec::new(),
            allows: Vec::new(),
            shown: Vec::new(),
        }
    }

    /// The manifest for a tag filter.
    ///
    /// Unfiltered and single-tag manifests are rendered with the view; a filter with several
    /// tags concatenates the entries of the tools it keeps.
    #[must_use]
    pub fn manifest(
        &self,
        registry: &Registry,
        filter: &TagFilter,
        language: Option<&str>,
    ) -> Cached {
        match filter.tags() {
            [] => self.manifest.clone(),
            [tag] => self.by_tag.get(tag).unwrap_or(&self.no_tools).clone(),
            _ => {
                let localised: Vec<Bytes> = registry
                    .tools
                    .iter()
                    .enumerate()
                    .filter(|(index, tool)| {
                        self.shown[*index]
                            && filter.matches(tool.entry.tags.iter().map(String::as_str))
                    })
                    .map(|(_, tool)| {
                        language
                            .and_then(|language| localise(tool, language))
                            .map_or_else(|| tool.entry_bytes.clone(), |(entry, _)| entry)
                    })
                    .collect();
                registry.render_manifest(localised.iter())
            }
        }
    }

    /// The manifest of a search (`OPTIONS /?q=`): the best matches among the tools the view
    /// shows and the filter keeps, best first, then `"search": {"q", "total"}` (how many
    /// matched before the limit).
    #[must_use]
    pub fn search(
        &self,
        registry: &Registry,
        search: &SearchQuery,
        filter: &TagFilter,
        language: Option<&str>,
    ) -> Cached {
        let hits = registry.index().search(&search.q, usize::MAX, |index| {
            self.shown[index]
                && filter.matches(registry.tools[index].entry.tags.iter().map(String::as_str))
        });
        let entries: Vec<Bytes> = hits
            .iter()
            .take(search.limit)
            .map(|hit| {
                let tool = &registry.tools[hit.index];
                language
                    .and_then(|language| localise(tool, language))
                    .map_or_else(|| tool.entry_bytes.clone(), |(entry, _)| entry)
            })
            .collect();
        let mut body = Vec::with_capacity(registry.manifest_head.len() + 256 * entries.len());
        body.extend_from_slice(&registry.manifest_head);
        join(&mut body, entries.iter());
        body.extend_from_slice(b"],\"search\":");
        let about = serde_json::json!({"q": search.q, "total": hits.len()});
        body.extend_from_slice(about.to_string().as_bytes());
        body.push(b'}');
        Cached::new(body)
    }

    /// The schemas of a path, `None` when the audience may call nothing there.
    #[must_use]
    pub fn path(&self, index: usize) -> Option<&Cached> {
        self.paths.get(index)?.as_ref()
    }

    /// The methods the audience may call at a path (given by index; `None` for a path with
    /// no described operation), then `OPTIONS`: `OPTIONS` alone where it may call nothing,
    /// as at any path the layer knows nothing of.
    #[must_use]
    pub fn allow(&self, index: Option<usize>) -> HeaderValue {
        index
            .and_then(|index| self.allows.get(index))
            .cloned()
            .unwrap_or(OPTIONS_ONLY)
    }
}

/// `Allow` for the described methods (`OPTIONS` too).
/// `Allow` for nothing but discovery.
const OPTIONS_ONLY: HeaderValue = HeaderValue::from_static("OPTIONS");

/// `Allow` for `methods` (`HEAD` implied by `GET`), then `OPTIONS`.
fn allow<'m>(methods: impl Iterator<Item = &'m str>) -> HeaderValue {
    let mut listed: Vec<&str> = Vec::new();
    for method in methods {
        if !listed.contains(&method) {
            listed.push(method);
        }
        if method == "GET" && !listed.contains(&"HEAD") {
            listed.push("HEAD");
        }
    }
    listed.push("OPTIONS");
    HeaderValue::try_from(listed.join(", ")).expect("method names are header text")
}

/// `[a,b,c]` from serialised JSON values.
fn join_array<'e>(items: impl Iterator<Item = &'e Rope>) -> Cached {
    let mut parts = vec![Rope::from_static(b"[")];
    for (i, item) in items.enumerate() {
        if i > 0 {
            parts.push(Rope::from_static(b","));
        }
        parts.push(item.clone());
    }
    parts.push(Rope::from_static(b"]"));
    Cached::from(Rope::join(parts))
}

fn join<'e>(out: &mut Vec<u8>, items: impl Iterator<Item = &'e Bytes>) {
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
}

/// The entry and schema of `tool` with its texts in `language`, falling back along the tag
/// (`en-GB` to `en`); `None` when it has none in that language.
fn localise(tool: &Tool, language: &str) -> Option<(Bytes, Rope)> {
    let mut tag = language;
    let text = loop {
        if let Some(text) = tool.locales.get(tag) {
            break text;
        }
        tag = &tag[..tag.rfind('-')?];
    };
    let mut entry = tool.entry.clone();
    let mut schema = tool.schema.clone();
    if let Some(name) = &text.name {
        entry.title = Some(name.clone());
        schema.title = Some(name.clone());
    }
    if let Some(description) = &text.description {
        entry.description = description
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        schema.description.clone_from(description);
    }
    if let Some(why) = &text.why {
        schema.why = Some(why.clone());
    }
    Some((
        Bytes::from(serde_json::to_vec(&entry).ok()?),
        tool.parts.render(&schema),
    ))
}
