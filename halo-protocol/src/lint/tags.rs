//! `missing-domain-tag`, `read-write-tag` and `tag-contradicts-method`: the tags say what
//! part of the API the tool belongs to and whether it reads or writes, as its method does.

use super::helpers::{domain, has_tag};
use super::{Rule, Tool};

impl Tool<'_> {
    pub(super) fn tags(&mut self) {
        let name = self.entry.name.clone();
        let tags = &self.entry.tags;
        let (read, write) = (has_tag(tags, "read"), has_tag(tags, "write"));
        if domain(tags).is_none() {
            let message = if tags.is_empty() {
                format!("`{name}` has no tags")
            } else {
                format!(
                    "`{name}` has no domain tag, only generic ones: {}",
                    quoted(tags)
                )
            };
            self.push_at(Rule::MissingDomainTag, "/tags", message);
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
    use crate::lint::{Linter, Rule};

    #[test]
    fn domain_and_read_write_tags() {
        let tagged = |tags: &[&str]| {
            ids(&with_first(|entry, _| {
                entry.tags = tags.iter().map(|t| (*t).to_owned()).collect();
            }))
        };
        assert_eq!(tagged(&["pets", "write", "admin"]), []);
        assert_eq!(tagged(&["write", "admin"]), [Rule::MissingDomainTag]);
        assert_eq!(tagged(&[]), [Rule::MissingDomainTag, Rule::ReadWriteTag]);
        assert_eq!(tagged(&["pets"]), [Rule::ReadWriteTag]);
        assert_eq!(tagged(&["pets", "read", "write"]), [Rule::ReadWriteTag]);
        let found = with_first(|entry, _| entry.tags = vec!["pets".into(), "Write".into()]);
        assert!(found[0].message.contains("neither"), "{found:?}");
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
