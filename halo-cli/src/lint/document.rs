//! `halo lint --openapi FILE`: what a server built from an OpenAPI document would serve, with
//! no server.
//!
//! The document is compiled by halo-openapi, as halo-axum's layer compiles it (with its
//! defaults), and the tools are read from the answers its discovery would give a caller that
//! sees every tool (the registry's full view): the manifest, then each path's schemas, as
//! `halo lint URL` reads them over HTTP. A tool at `/`, where `OPTIONS` answers the
//! manifest, has the schema its entry makes, as clients describe it.

use std::collections::HashMap;
use std::path::Path;

use halo_client::protocol::{Manifest, TagFilter, ToolEntry, ToolSchema, entry_schema};
use halo_openapi::Registry;
use serde_json::Value;

/// A document compiled as a server would compile it.
pub(super) struct Served {
    registry: Registry,
}

impl Served {
    /// Reads and compiles the document at `path`; why it cannot be, for people.
    pub(super) fn compile(path: &Path) -> Result<Self, String> {
        let document = read(path)?;
        let registry = Registry::builder(&document)
            .build()
            .map_err(|error| error.to_string())?;
        Ok(Self { registry })
    }

    /// The manifest, as `OPTIONS /` would answer it to a caller that sees every tool.
    pub(super) fn manifest(&self) -> Result<Manifest, String> {
        let manifest = self
            .registry
            .full()
            .manifest(&self.registry, &TagFilter::default(), None);
        read_back(&manifest.body.to_bytes())
            .map_err(|e| format!("the manifest it compiles to does not read back: {e}"))
    }

    /// The schema of each entry, as `OPTIONS` on its path would answer it: each path's
    /// schemas read once, the entry's method picked among them.
    pub(super) fn describe(
        &self,
        entries: Vec<ToolEntry>,
    ) -> Result<Vec<(ToolEntry, ToolSchema)>, String> {
        let view = self.registry.full();
        let mut paths: HashMap<usize, Vec<ToolSchema>> = HashMap::new();
        let mut tools = Vec::with_capacity(entries.len());
        for entry in entries {
            if entry.url == "/" || !entry.url.starts_with('/') {
                let schema = entry_schema(&entry);
                tools.push((entry, schema));
                continue;
            }
            let missing = || {
                format!(
                    "{} {} is listed but its path describes no such operation",
                    entry.method, entry.url
                )
            };
            let index = self.registry.path_index(&entry.url).ok_or_else(missing)?;
            let schemas = match paths.entry(index) {
                std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
                std::collections::hash_map::Entry::Vacant(new) => {
                    let answer = view.path(index).ok_or_else(missing)?;
                    let schemas = read_back(&answer.body.to_bytes()).map_err(|e| {
                        format!("the schemas of {} do not read back: {e}", entry.url)
                    })?;
                    new.insert(schemas)
                }
            };
            let schema = schemas
                .iter()
                .find(|schema| schema.call.method.eq_ignore_ascii_case(&entry.method))
                .cloned()
                .ok_or_else(missing)?;
            tools.push((entry, schema));
        }
        Ok(tools)
    }
}

/// An answer of discovery read as halo-client reads it, through a JSON value (which may list
/// an object's keys in another order than the bytes): the same document gives the same
/// report, its findings in the same order, linted here or through a server.
fn read_back<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    serde_json::from_slice::<Value>(bytes).and_then(serde_json::from_value)
}

/// The document at `path`, as JSON; a YAML one is refused with how to convert it.
fn read(path: &Path) -> Result<Value, String> {
    let text = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let document: Value = serde_json::from_slice(&text).map_err(|e| {
        if looks_like_yaml(&text) {
            format!(
                "it is YAML, which halo does not read yet; convert it to JSON first and lint \
                 that, e.g. `yq -o=json {} > openapi.json`",
                path.display()
            )
        } else {
            // serde_json's message names the line and column, never the content.
            format!("it is not JSON: {e}")
        }
    })?;
    // A `swagger` document is left to the compiler, which says how to convert it.
    if !["openapi", "swagger"]
        .iter()
        .any(|key| document.get(key).is_some())
    {
        return Err(
            "it is not an OpenAPI document (no `openapi` field naming its version)".to_owned(),
        );
    }
    Ok(document)
}

/// Whether `text` starts as a YAML OpenAPI or Swagger document: its first line that is not
/// blank, a comment or a document marker is an `openapi:` or `swagger:` key.
fn looks_like_yaml(text: &[u8]) -> bool {
    let text = String::from_utf8_lossy(text);
    let text = text.trim_start_matches('\u{feff}');
    let first = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#') && *line != "---");
    first.is_some_and(|line| {
        ["openapi", "swagger"].iter().any(|key| {
            [
                format!("{key}:"),
                format!("\"{key}\":"),
                format!("'{key}':"),
            ]
            .iter()
            .any(|start| line.starts_with(start.as_str()))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_is_told_from_broken_json() {
        for yaml in [
            "openapi: 3.0.3\ninfo:\n  title: Pets\n",
            "\u{feff}# Pets\n\n---\nswagger: '2.0'\n",
            "'openapi': 3.1.0\n",
        ] {
            assert!(looks_like_yaml(yaml.as_bytes()), "{yaml}");
        }
        for other in [
            "{\"openapi\": \"3.0.3\",",
            "",
            "title: Pets\nopenapi: 3.0.3\n",
            "openapi_version: 3",
        ] {
            assert!(!looks_like_yaml(other.as_bytes()), "{other}");
        }
    }
}
