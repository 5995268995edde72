//! `missing-why` and `missing-description`: the texts a model reads to choose the tool.

use super::helpers::is_blank;
use super::{Rule, Tool};

impl Tool<'_> {
    pub(super) fn descriptions(&mut self) {
        let name = &self.entry.name;
        if self.schema.why.as_deref().is_none_or(is_blank) {
            let message = format!(
                "`{name}` has no `why`: nothing tells a model when to choose it over another tool"
            );
            self.push_at(Rule::MissingWhy, "/why", message);
        }
        if is_blank(&self.schema.description) && is_blank(&self.entry.description) {
            let message = format!("`{name}` has no description");
            self.push_at(Rule::MissingDescription, "/description", message);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lint::fixtures::{ids, with_first};
    use crate::lint::{Rule, Severity};

    #[test]
    fn missing_why() {
        let found = with_first(|_, schema| schema.why = Some("  ".into()));
        assert_eq!(ids(&found), [Rule::MissingWhy]);
        assert_eq!(found[0].severity, Severity::Warning);
        assert_eq!(found[0].tool, "create_pet");
        assert!(
            found[0].message.contains("`create_pet` has no `why`"),
            "{found:?}"
        );
        assert_eq!(found[0].pointer.as_deref(), Some("/why"));
        let found = with_first(|_, schema| schema.why = None);
        assert_eq!(ids(&found), [Rule::MissingWhy]);
    }

    #[test]
    fn missing_description() {
        // The manifest's description is enough.
        assert_eq!(ids(&with_first(|_, schema| schema.description.clear())), []);
        let found = with_first(|entry, schema| {
            schema.description.clear();
            entry.description = " ".into();
        });
        assert_eq!(ids(&found), [Rule::MissingDescription]);
        assert_eq!(found[0].severity, Severity::Warning);
    }
}
