//! Lenient builds, for documents the user does not own: an operation that cannot be served
//! is left out (or repaired, where the repair is obvious and safe) and recorded as
//! [`Skipped`], never the whole document.
//!
//! A lenient build walks the document again without what the first walk left out, until a
//! walk leaves out nothing more: what is served is then exactly what a strict build of the
//! document without those operations serves (the same names, the same definitions inlined),
//! not something shaped by what was dropped half-way.

use std::collections::HashMap;

use super::Registry;
use super::compile::Settings;
use crate::{BuildError, Skipped};

/// How many walks a lenient build takes at most. The second leaves out only what the first
/// did; a third is needed only when leaving operations out changes what is inlined and a
/// schema outgrows `max_schema_bytes`. What the last walk leaves out, it leaves out too.
const MAX_PASSES: usize = 3;

/// Where an operation is in the document.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place<'d> {
    /// The index of its path key among the document's, and of its method in
    /// [`METHODS`](super::METHODS) (0 for a whole path item), for document order.
    pub(crate) order: (usize, usize),
    /// Upper-case; `*` for a whole path item.
    pub(crate) method: &'static str,
    /// The path key, as the document writes it.
    pub(crate) key: &'d str,
    pub(crate) operation_id: Option<&'d str>,
}

/// What one walk of the document left out or repaired; in a strict build, nothing: every
/// problem is the build's error.
#[derive(Debug, Default)]
pub(crate) struct Record {
    lenient: bool,
    /// The methods left out by earlier walks, by path key (`*`: the whole path item).
    left_out: HashMap<String, Vec<&'static str>>,
    /// This walk's entries, each with its place in document order.
    entries: Vec<((usize, usize), Skipped)>,
}

impl Record {
    /// A strict build's: every problem fails it.
    pub(crate) fn strict() -> Self {
        Self::default()
    }

    pub(crate) fn is_lenient(&self) -> bool {
        self.lenient
    }

    /// Whether an earlier walk left out the operation `method` of the path `key`.
    pub(crate) fn leaves_out(&self, key: &str, method: &'static str) -> bool {
        self.left_out
            .get(key)
            .is_some_and(|methods| methods.contains(&method))
    }

    /// The operation at `place` cannot be served: in a strict build, `error`; in a lenient
    /// one, it is recorded as left out.
    pub(crate) fn skip(&mut self, place: Place<'_>, error: BuildError) -> Result<(), BuildError> {
        if !self.lenient {
            return Err(error);
        }
        self.push(place, error.to_string(), false);
        Ok(())
    }

    /// The operation at `place` was kept, changed: `reason` says what was wrong and what
    /// was done.
    pub(crate) fn repair(&mut self, place: Place<'_>, reason: String) {
        self.push(place, reason, true);
    }

    fn push(&mut self, place: Place<'_>, reason: String, repaired: bool) {
        let skipped = Skipped::new(
            place.method,
            place.key,
            place.operation_id,
            reason,
            repaired,
        );
        self.entries.push((place.order, skipped));
    }
}

/// Builds the registry of `settings`' document, leniently: see the module's documentation.
pub(crate) fn build(settings: &Settings<'_>) -> Result<Registry, BuildError> {
    let mut left_out: Vec<((usize, usize), Skipped)> = Vec::new();
    let mut pass = 1;
    loop {
        let mut record = Record {
            lenient: true,
            ..Record::default()
        };
        for (_, skipped) in &left_out {
            let methods = record
                .left_out
                .entry(skipped.path().to_owned())
                .or_default();
            methods.push(skipped.method_key());
        }
        let mut registry = settings.compile(settings.described.clone(), &mut record)?;
        let (repaired, skipped): (Vec<_>, Vec<_>) = record
            .entries
            .into_iter()
            .partition(|(_, entry)| entry.is_repaired());
        let last = skipped.is_empty() || pass == MAX_PASSES;
        left_out.extend(skipped);
        if last {
            let mut entries = left_out;
            entries.extend(repaired);
            // Stable: an operation's entries stay in the order they were found.
            entries.sort_by_key(|(order, _)| *order);
            registry.skipped = entries.into_iter().map(|(_, entry)| entry).collect();
            return Ok(registry);
        }
        pass += 1;
    }
}

#[cfg(test)]
mod tests;
