//! `missing-domain-tag`, `generic-domain-tag`, `read-write-tag` and `tag-contradicts-method`:
//! the tags say what part of the API the tool belongs to and whether it reads or writes, as
//! its method does.

use super::helpers::{domain, has_tag};
use super::{Rule, Tool};

impl Tool<'_> {
    pub(super) fn tags(&mut self) {
        let name = self.entry.name.clone();
        let tags = &self.entry.tags;
        let (read, write) = (has_tag(tags, "read"), has_tag(tags, "write"));
        if domain(tags).is_none() {
            // A generic word where the domain would be (utoipa's module-name tag, `admin`)
            // is a warning; nothing there at all is an error.
            let (rule, message) = if tags.is_empty() {
                (Rule::MissingDomainTag, format!("`{name}` has no tags"))
            } else if tags.iter().all(|tag| tag == "read" || tag == "write") {
                let message = format!("`{name}` has no domain tag, only {}", quoted(tags));
                (Rule::MissingDomainTag, message)
            } else {
                let message = format!(
                    "`{name}` has no domain tag, only generic ones: {}; if one of them names \
                     the part of the API (a module's name), it reads as a kind of operation",
                    quoted(tags)
                );
                (Rule::GenericDomainTag, message)
            };
            self.push_at(rule, "/tags", message);
        }
        if read == write {
            let message = if read {
                format!("`{name}` is tagged both `read` and `write`")
            } else {
                format!("`{name}` is tagged neither `read` nor `write`")
            };
            self.push_at(Rule::ReadWriteTag, "/tags", message);
            return;
        }
        let method = self.entry.method.to_ascii_uppercase();
        if write && crate::is_safe_method(&method) {
            let message = format!(
                "`{name}` is tagged `write` but {method} is a safe method, which must not \
                 change anything"
            );
            self.push_at(Rule::TagContradictsMethod, "/tags", message)
                .hint = format!(
                "tag it `read` if it only reads; if it changes state, use POST, PUT, PATCH or \
                 DELETE instead of {method}"
            );
        }
        if read && matches!(method.as_str(), "PUT" | "PATCH" | "DELETE") {
            let message = format!(
                "`{name}` is tagged `read` but {method} replaces, modifies or removes a resource"
            );
            self.push_at(Rule::TagContradictsMethod, "/tags", message)
                .hint = format!(
                "tag it `write`; a tool that only reads should use GET (or POST for a query \
                 with a body), not {method}"
            );
        }
    }
}

/// The tags as a list: `` `read`, `admin` ``.
fn quoted(tags: &[String]) -> String {
    tags.iter()
        .map(|tag| format!("`{tag}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use crate::lint::fixtures::{good, ids, rules, with_first};
    use crate::lint::{Level, Linter, Rule, Severity};

    #[test]
    fn domain_and_read_write_tags() {
        let tagged = |tags: &[&str]| {
            ids(&with_first(|entry, _| {
                entry.tags = tags.iter().map(|t| (*t).to_owned()).collect();
            }))
        };
        assert_eq!(tagged(&["pets", "write", "admin"]), []);
        assert_eq!(tagged(&["write"]), [Rule::MissingDomainTag]);
        assert_eq!(
            tagged(&["read", "write"]),
            [Rule::MissingDomainTag, Rule::ReadWriteTag]
        );
        assert_eq!(tagged(&[]), [Rule::MissingDomainTag, Rule::ReadWriteTag]);
        // A generic word where the domain would be: utoipa's tag for a handler in `mod admin`.
        assert_eq!(tagged(&["write", "admin"]), [Rule::GenericDomainTag]);
        assert_eq!(
            tagged(&["admin"]),
            [Rule::GenericDomainTag, Rule::ReadWriteTag]
        );
        assert_eq!(tagged(&["pets"]), [Rule::ReadWriteTag]);
        assert_eq!(tagged(&["pets", "read", "write"]), [Rule::ReadWriteTag]);
        let found = with_first(|entry, _| entry.tags = vec!["pets".into(), "Write".into()]);
        assert!(found[0].message.contains("neither"), "{found:?}");
    }

    #[test]
    fn a_generic_word_for_a_domain_warns_and_nothing_there_is_an_error() {
        let tagged = |tags: &[&str], linter: Linter| {
            let mut tools = good();
            tools[1].0.tags = tags.iter().map(|t| (*t).to_owned()).collect();
            linter.check(&tools)
        };
        let module = tagged(&["admin", "read"], Linter::new());
        assert_eq!(ids(&module.findings), [Rule::GenericDomainTag]);
        assert_eq!(module.findings[0].severity, Severity::Warning);
        assert!(!module.has_errors());
        let message = &module.findings[0].message;
        assert!(
            message.starts_with("`get_pet` has no domain tag, only generic ones: `admin`, `read`"),
            "{message}"
        );
        assert!(module.findings[0].hint.contains("module"), "{module:?}");
        // Denied, it fails; and a tool with no candidate at all fails by default.
        let denied = tagged(
            &["admin", "read"],
            Linter::new().level(Rule::GenericDomainTag, Level::Deny),
        );
        assert!(denied.has_errors());
        let bare = tagged(&["read"], Linter::new());
        assert_eq!(ids(&bare.findings), [Rule::MissingDomainTag]);
        assert_eq!(bare.findings[0].severity, Severity::Error);
        assert_eq!(
            bare.findings[0].message,
            "`get_pet` has no domain tag, only `read`"
        );
    }

    #[test]
    fn tags_that_contradict_the_method() {
        // `write` on GET.
        let mut tools = good();
        tools[1].0.tags = vec!["pets".into(), "write".into()];
        let report = Linter::new().check(&tools);
        assert_eq!(
            ids(&report.findings),
            [
                Rule::TagContradictsMethod,
                Rule::MissingExample,
                Rule::MissingReversible
            ]
        );
        assert!(report.findings[0].message.contains("GET is a safe method"));
        // `read` on DELETE.
        let mut tools = good();
        tools[2].0.tags = vec!["pets".into(), "read".into()];
        assert_eq!(rules(&tools), [Rule::TagContradictsMethod]);
        // `read` on POST is a query with a body: allowed, and then no write rule applies.
        let found = with_first(|entry, schema| {
            entry.tags = vec!["pets".into(), "read".into()];
            schema.examples.clear();
            schema.effects = None;
        });
        assert_eq!(ids(&found), []);
    }
}
