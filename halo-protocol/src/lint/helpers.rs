//! What several rules share: blank texts, tags, and whether a tool writes.

use super::{GENERIC_TAGS, Tool};

impl Tool<'_> {
    /// A write: tagged `write`, or on an unsafe method and not tagged `read`
    /// (`missing-example`, `missing-reversible`).
    pub(super) fn is_write(&self) -> bool {
        let tags = &self.entry.tags;
        has_tag(tags, "write")
            || (!has_tag(tags, "read") && !crate::is_safe_method(&self.entry.method))
    }
}

/// Whether a text says nothing.
pub(super) fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// Whether `tag` is among the tags (as written: tags are case-sensitive).
pub(super) fn has_tag(tags: &[String], tag: &str) -> bool {
    tags.iter().any(|t| t == tag)
}

/// A tool's domain: its first tag that is not one of the [`GENERIC_TAGS`]
/// (`missing-domain-tag`, `manifest-budget`).
pub(super) fn domain(tags: &[String]) -> Option<&str> {
    tags.iter()
        .map(String::as_str)
        .find(|tag| !GENERIC_TAGS.contains(tag))
}
