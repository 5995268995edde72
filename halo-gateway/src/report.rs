//! What each upstream contributed to a gateway: its tools, and the operations left out and
//! why. `halo gateway check` prints it.

use std::fmt;

use halo_axum::Skipped;

use crate::merge::Entry;

/// What every upstream contributed, in the configuration's order.
#[derive(Debug, Clone)]
pub struct Report {
    upstreams: Vec<UpstreamReport>,
}

/// One upstream's part of a [`Report`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UpstreamReport {
    name: String,
    tools: Vec<String>,
    left_out: Vec<Finding>,
    repaired: Vec<Finding>,
    notes: Vec<String>,
}

/// An operation of an upstream that the gateway does not serve, or serves repaired, and why.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Finding {
    /// `METHOD path`, as the upstream's document writes it (`*` for every method of a path).
    pub operation: String,
    /// Why.
    pub reason: String,
}

impl Report {
    pub(crate) fn new(upstreams: Vec<UpstreamReport>) -> Self {
        Self { upstreams }
    }

    /// Each upstream's part.
    pub fn upstreams(&self) -> impl Iterator<Item = &UpstreamReport> {
        self.upstreams.iter()
    }

    /// The tools served, in all.
    #[must_use]
    pub fn tools(&self) -> usize {
        self.upstreams.iter().map(|u| u.tools.len()).sum()
    }
}

impl UpstreamReport {
    /// Upstream `index`'s part: its `entries` (those a policy left out among them), what the
    /// compiler `skipped` or repaired of the merged document, and what reading its document
    /// changed (`notes`).
    pub(crate) fn new(
        name: &str,
        index: usize,
        entries: &[Entry],
        skipped: &[Skipped],
        notes: Vec<String>,
    ) -> Self {
        let mut tools = Vec::new();
        let mut left_out = Vec::new();
        for entry in entries.iter().filter(|e| e.upstream == index) {
            if let Some(exclude) = entry.effective.exclude.as_ref().filter(|s| s.value) {
                left_out.push(Finding {
                    operation: format!("{} {}", entry.method, entry.path),
                    reason: format!("left out by {}", exclude.origin),
                });
            } else {
                tools.push(entry.served.clone());
            }
        }
        let mut repaired = Vec::new();
        let prefix = format!("/{name}");
        for skip in skipped {
            let Some(rest) = skip.path().strip_prefix(&prefix) else {
                continue;
            };
            if !(rest.is_empty() || rest.starts_with('/')) {
                continue;
            }
            // The compiler's reason starts with the operation as the merged document names
            // it (`POST /<upstream>/path (name): ...`); the finding names it already.
            let label = format!("{} {}", skip.method(), skip.path());
            let reason = skip.reason();
            let reason = reason
                .strip_prefix(label.as_str())
                .and_then(|rest| rest.split_once(": "))
                .map_or(reason, |(_, why)| why);
            let finding = Finding {
                operation: format!(
                    "{} {}",
                    skip.method(),
                    if rest.is_empty() { "/" } else { rest }
                ),
                reason: reason.to_owned(),
            };
            if skip.is_repaired() {
                repaired.push(finding);
            } else {
                if let Some(id) = skip.operation_id() {
                    tools.retain(|tool| tool != id);
                }
                left_out.push(finding);
            }
        }
        Self {
            name: name.to_owned(),
            tools,
            left_out,
            repaired,
            notes,
        }
    }

    /// The upstream's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The names of its tools, as the gateway serves them.
    #[must_use]
    pub fn tools(&self) -> &[String] {
        &self.tools
    }

    /// Its operations the gateway does not serve: left out by a policy, or that could not
    /// be served as the document writes them.
    #[must_use]
    pub fn left_out(&self) -> &[Finding] {
        &self.left_out
    }

    /// Its operations served repaired (a path parameter the document did not declare, a
    /// link to an operation left out dropped).
    #[must_use]
    pub fn repaired(&self) -> &[Finding] {
        &self.repaired
    }

    /// What reading its document changed (a Swagger 2.0 document converted, ...).
    #[must_use]
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for upstream in &self.upstreams {
            writeln!(
                f,
                "{}: {} tools, {} left out, {} repaired",
                upstream.name,
                upstream.tools.len(),
                upstream.left_out.len(),
                upstream.repaired.len()
            )?;
            for note in &upstream.notes {
                writeln!(f, "  note: {note}")?;
            }
            for left in &upstream.left_out {
                writeln!(f, "  left out {}: {}", left.operation, left.reason)?;
            }
            for repaired in &upstream.repaired {
                writeln!(f, "  repaired {}: {}", repaired.operation, repaired.reason)?;
            }
        }
        Ok(())
    }
}
