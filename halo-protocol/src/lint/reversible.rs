//! `missing-reversible` and `missing-undo`: a write says whether it can be undone, and a
//! reversible one how.

use super::helpers::is_blank;
use super::{Rule, Tool};

impl Tool<'_> {
    pub(super) fn reversible(&mut self) {
        let name = self.entry.name.clone();
        let effects = self.schema.effects.as_ref();
        let reversible = effects.and_then(|effects| effects.reversible);
        if self.is_write() && reversible.is_none() {
            let message = format!(
                "`{name}` changes state but does not say whether it can be undone; MCP clients \
                 will treat it as destructive"
            );
            self.push_at(Rule::MissingReversible, "/effects/reversible", message);
        }
        let undo = effects.and_then(|effects| effects.undo.as_deref());
        if reversible == Some(true) && undo.is_none_or(is_blank) {
            let message = format!("`{name}` is reversible but does not say how to undo it");
            self.push_at(Rule::MissingUndo, "/effects/undo", message);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Effects;
    use crate::lint::fixtures::{good, ids, rules, with_first};
    use crate::lint::{Rule, Severity};

    #[test]
    fn writes_say_whether_they_can_be_undone() {
        let found = with_first(|_, schema| schema.effects = None);
        assert_eq!(ids(&found), [Rule::MissingReversible]);
        assert_eq!(found[0].severity, Severity::Warning);
        let found = with_first(|_, schema| schema.effects = Some(Effects::default()));
        assert_eq!(ids(&found), [Rule::MissingReversible]);
        // Reads need not.
        let mut tools = good();
        tools[1].1.effects = None;
        assert_eq!(rules(&tools), []);
    }

    #[test]
    fn reversible_writes_say_how() {
        let found = with_first(|_, schema| {
            schema.effects.as_mut().unwrap().undo = None;
        });
        assert_eq!(ids(&found), [Rule::MissingUndo]);
        assert_eq!(
            (found[0].severity, found[0].pointer.as_deref()),
            (Severity::Error, Some("/effects/undo"))
        );
        // Irreversible ones need no undo.
        let found = with_first(|_, schema| {
            schema.effects = Some(Effects {
                reversible: Some(false),
                undo: None,
                approval: None,
            });
        });
        assert_eq!(ids(&found), []);
    }
}
