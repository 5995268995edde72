//! What each upstream contributed to a gateway: its tools, and the operations left out and
//! why. `halo gateway check` prints it.

use std::fmt;

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
    left_out: Vec<LeftOut>,
}

/// An operation of an upstream that the gateway does not serve, and why.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeftOut {
    /// `METHOD path`, as the upstream's document writes it.
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
    pub(crate) fn new(name: &str, index: usize, entries: &[Entry]) -> Self {
        let mut tools = Vec::new();
        let mut left_out = Vec::new();
        for entry in entries.iter().filter(|e| e.upstream == index) {
            if let Some(exclude) = entry.effective.exclude.as_ref().filter(|s| s.value) {
                left_out.push(LeftOut {
                    operation: format!("{} {}", entry.method, entry.path),
                    reason: format!("left out by {}", exclude.origin),
                });
            } else {
                tools.push(entry.served.clone());
            }
        }
        Self {
            name: name.to_owned(),
            tools,
            left_out,
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

    /// Its operations the gateway does not serve.
    #[must_use]
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for upstream in &self.upstreams {
            writeln!(
                f,
                "{}: {} tools, {} left out",
                upstream.name,
                upstream.tools.len(),
                upstream.left_out.len()
            )?;
            for left in &upstream.left_out {
                writeln!(f, "  left out {}: {}", left.operation, left.reason)?;
            }
        }
        Ok(())
    }
}
