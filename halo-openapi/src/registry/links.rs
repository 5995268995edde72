//! The links a schema declares (`undo`, `next[].suggest`, `replace_with`, `fallback`) must
//! each name a described operation, so that nothing drifts: a strict build fails on one that
//! does not; a lenient one drops it and records the repair.

use halo_protocol::ToolSchema;

use super::Registry;
use super::lenient::{Place, Record};
use crate::BuildError;

impl Registry {
    /// Whether a relative link names no described path (or not its method there).
    fn dangles(&self, link: &str) -> bool {
        halo_protocol::link_target(link).is_some_and(|(method, path)| {
            !self.templates.index(path).is_some_and(|index| {
                let methods = &self.paths[index].methods;
                method.is_none_or(|method| methods.iter().any(|(m, _)| *m == method))
            })
        })
    }

    /// Every relative link a schema declares must name a described path.
    pub(super) fn check_links(&self) -> Result<(), BuildError> {
        for tool in &self.tools {
            let schema = &tool.schema;
            for (field, link) in links(schema) {
                let Some(link) = link else { continue };
                if self.dangles(link) {
                    return Err(BuildError::dangling_link(&label(schema), field, link));
                }
            }
        }
        Ok(())
    }

    /// Drops every link that names no described path, recording each as a repair of its
    /// tool, whose schema is serialised again; `places` are the tools' places, by index.
    pub(super) fn repair_links(&mut self, places: &[Place<'_>], record: &mut Record) {
        for (index, place) in places.iter().enumerate() {
            let schema = &self.tools[index].schema;
            let dangling: Vec<(&'static str, String)> = links(schema)
                .filter_map(|(field, link)| Some((field, link?)))
                .filter(|(_, link)| self.dangles(link))
                .map(|(field, link)| (field, link.to_owned()))
                .collect();
            if dangling.is_empty() {
                continue;
            }
            let label = label(schema);
            let tool = &mut self.tools[index];
            for (field, link) in dangling {
                let schema = &mut tool.schema;
                match field {
                    "effects.undo" => {
                        if let Some(effects) = schema.effects.as_mut() {
                            effects.undo = None;
                        }
                    }
                    "replace_with" => schema.lifecycle.replace_with = None,
                    "resilience.fallback" => {
                        if let Some(resilience) = schema.resilience.as_mut() {
                            resilience.fallback = None;
                        }
                    }
                    _ => schema.next.retain(|next| next.suggest != link),
                }
                let error = BuildError::dangling_link(&label, field, &link);
                record.repair(*place, format!("{error}; the link was dropped"));
            }
            tool.schema_bytes = tool.parts.render(&tool.schema);
        }
    }
}

/// `GET /books/{id}`, as a link's error names its operation.
fn label(schema: &ToolSchema) -> String {
    format!("{} {}", schema.call.method, schema.call.url)
}

/// Each link field of a schema, with its link if it has one.
fn links(schema: &ToolSchema) -> impl Iterator<Item = (&'static str, Option<&str>)> {
    [
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
    )
}
