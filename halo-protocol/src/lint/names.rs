//! `duplicate-name` and `invalid-name`: a tool's name is unique among the listed tools and
//! valid where LLM APIs and MCP see it.

use super::{Rule, Tool};
use crate::{ToolEntry, tool_name};

impl Tool<'_> {
    pub(super) fn names(&mut self) {
        self.duplicate_name();
        self.invalid_name();
    }

    /// `duplicate-name`: the first listed tool with the name keeps it.
    fn duplicate_name(&mut self) {
        let (entry, listed) = (self.entry, self.listed);
        let first = listed.iter().find(|other| other.name == entry.name);
        if let Some(first) = first.filter(|first| !same_tool(first, entry)) {
            self.push(
                Rule::DuplicateName,
                format!(
                    "`{}` ({} {}) has the name of {} {}",
                    entry.name, entry.method, entry.url, first.method, first.url
                ),
            );
        }
    }

    /// `invalid-name`.
    fn invalid_name(&mut self) {
        let name = &self.entry.name;
        if tool_name(name) != *name {
            self.push(
                Rule::InvalidName,
                format!(
                    "`{name}` ({} {}) is not a valid tool name: LLM APIs and MCP will see it \
                     renamed",
                    self.entry.method, self.entry.url
                ),
            );
        }
    }
}

/// Whether two entries are one tool (one method on one path).
fn same_tool(a: &ToolEntry, b: &ToolEntry) -> bool {
    a.url == b.url && a.method.eq_ignore_ascii_case(&b.method)
}

#[cfg(test)]
mod tests {
    use crate::ToolEntry;
    use crate::lint::fixtures::{good, ids, with_first};
    use crate::lint::{Linter, Rule};

    #[test]
    fn names_are_unique_and_valid() {
        let mut tools = good();
        tools[2].0.name = "get_pet".into();
        let report = Linter::new().check(&tools);
        assert_eq!(ids(&report.findings), [Rule::DuplicateName]);
        assert_eq!(report.findings[0].tool, "get_pet");
        assert_eq!(report.findings[0].method, "DELETE");
        assert!(report.findings[0].message.contains("GET /pets/{id}"));
        // Among listed tools that are not checked (a tag filter), the first keeps the name.
        let listed: Vec<&ToolEntry> = tools.iter().map(|(entry, _)| entry).collect();
        let report = Linter::new().check_among(&tools[1..2], &listed);
        assert_eq!(ids(&report.findings), []);
        let report = Linter::new().check_among(&tools[2..], &listed);
        assert_eq!(ids(&report.findings), [Rule::DuplicateName]);
        // Links may name listed tools that are not checked.
        let report = Linter::new().check_among(&tools[..1], &listed);
        assert_eq!(ids(&report.findings), []);
        let report = Linter::new().check_among(&tools[..1], &listed[..1]);
        assert_eq!(ids(&report.findings), [Rule::UnknownLink]);
        let found = with_first(|entry, _| entry.name = "create pet".into());
        assert_eq!(ids(&found), [Rule::InvalidName]);
        let found = with_first(|entry, _| entry.name = "x".repeat(65));
        assert_eq!(ids(&found), [Rule::InvalidName]);
    }
}
