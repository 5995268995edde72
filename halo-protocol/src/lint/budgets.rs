//! `schema-budget` and `manifest-budget`: what an API's descriptions cost a model,
//! estimated with `estimate_tokens`, against a budget, and their largest parts.

use serde_json::Value;

use super::helpers::domain;
use super::{Finding, Rule, Tool};
use crate::{ToolEntry, escape_token};

/// The default budget of one tool's schema, in estimated tokens (as the progressive
/// disclosure of a whole API's definitions, [`DEFAULT_TOOL_BUDGET`](crate::DEFAULT_TOOL_BUDGET)).
pub const DEFAULT_SCHEMA_BUDGET: usize = 4_000;

/// The default budget of the manifest's tool list, in estimated tokens: about 150 tools of a
/// one-sentence summary and two tags each (the sample bookstore's entries cost ~55 each).
pub const DEFAULT_MANIFEST_BUDGET: usize = 8_000;

/// The most parts a budget finding names.
const BUDGET_PARTS: usize = 5;

impl Tool<'_> {
    /// `schema-budget`: the schema as `OPTIONS` answers it, compact, against the budget.
    pub(super) fn budget(&mut self) {
        let Some(budget) = self.schema_budget else {
            return;
        };
        let Ok(Value::Object(wire)) = serde_json::to_value(self.schema) else {
            return;
        };
        let total = crate::estimate_tokens(&Value::Object(wire.clone()).to_string());
        if total <= budget {
            return;
        }
        let member = |key: &str, value: &Value| {
            crate::estimate_tokens(&format!("{}:{value}", Value::String(key.to_owned())))
        };
        let mut parts: Vec<(String, String, usize)> = Vec::new();
        for (key, value) in &wire {
            match (key.as_str(), value) {
                ("input", Value::Object(entries)) => {
                    for (name, entry) in entries {
                        parts.push((
                            format!("input.{name}"),
                            format!("/input/{}", escape_token(name)),
                            member(name, entry),
                        ));
                    }
                }
                _ => parts.push((
                    key.clone(),
                    format!("/{}", escape_token(key)),
                    member(key, value),
                )),
            }
        }
        parts.sort_by_key(|part| std::cmp::Reverse(part.2));
        let pointer = parts
            .first()
            .map_or_else(String::new, |(_, pointer, _)| pointer.clone());
        let message = format!(
            "`{}`: the schema of {} {} costs ~{} tokens (budget {}): {}",
            self.entry.name,
            self.entry.method,
            self.entry.url,
            thousands(total),
            thousands(budget),
            largest(
                parts.into_iter().map(|(label, _, tokens)| (label, tokens)),
                total
            )
        );
        self.push_at(Rule::SchemaBudget, &pointer, message);
    }
}

/// `manifest-budget`: the manifest's tool list (every listed entry), compact, against the
/// budget; its parts are the domains (a tool's first tag that is not generic).
pub(super) fn manifest_budget(listed: &[&ToolEntry], budget: usize) -> Option<Finding> {
    let total = crate::estimate_tokens(&serde_json::to_string(listed).ok()?) + 2;
    if total <= budget {
        return None;
    }
    let mut domains: Vec<(String, usize, usize)> = Vec::new();
    for entry in listed {
        let tokens = serde_json::to_string(entry).map_or(0, |text| crate::estimate_tokens(&text));
        let label = domain(&entry.tags)
            .map_or_else(|| "(no domain tag)".to_owned(), |tag| format!("tag {tag}"));
        match domains.iter_mut().find(|(name, ..)| *name == label) {
            Some((_, sum, count)) => {
                *sum += tokens;
                *count += 1;
            }
            None => domains.push((label, tokens, 1)),
        }
    }
    domains.sort_by_key(|domain| std::cmp::Reverse(domain.1));
    let parts = domains.into_iter().map(|(domain, tokens, count)| {
        let tools = if count == 1 { "tool" } else { "tools" };
        (format!("{domain} ({count} {tools})"), tokens)
    });
    let message = format!(
        "the manifest lists {} tools costing ~{} tokens (budget {}): {}",
        listed.len(),
        thousands(total),
        thousands(budget),
        largest(parts, total)
    );
    let mut finding = Finding::new(Rule::ManifestBudget, "manifest", "OPTIONS", "/", message);
    finding.pointer = Some("/tools".to_owned());
    Some(finding)
}

/// The largest parts, largest first: those that make up a twentieth of the total or more,
/// at most [`BUDGET_PARTS`] (at least one), then how many more there are.
fn largest(parts: impl Iterator<Item = (String, usize)>, total: usize) -> String {
    let parts: Vec<(String, usize)> = parts.collect();
    let shown: Vec<String> = parts
        .iter()
        .enumerate()
        .take_while(|(i, (_, tokens))| *i == 0 || tokens * 20 >= total)
        .take(BUDGET_PARTS)
        .map(|(_, (label, tokens))| format!("{label} ~{}", thousands(*tokens)))
        .collect();
    let mut text = shown.join(", ");
    if parts.len() > shown.len() {
        text.push_str(&format!(", and {} smaller", parts.len() - shown.len()));
    }
    text
}

/// A count with its thousands separated, as findings write counts: `16,000`.
///
/// ```
/// assert_eq!(halo_protocol::lint::thousands(4_228), "4,228");
/// ```
#[must_use]
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::thousands;
    use crate::lint::fixtures::{good, good_read, ids};
    use crate::lint::{Level, Linter, Rule, Severity};
    use crate::{InputField, Location, ToolEntry};

    #[test]
    fn schemas_over_the_budget_name_their_largest_parts() {
        let mut tools = good();
        let properties: Map<String, Value> = (0..300)
            .map(|i| {
                (
                    format!("field_{i}"),
                    json!({"type": "string", "description": "A field"}),
                )
            })
            .collect();
        tools[1].1.output = Some(json!({"type": "object", "properties": properties}));
        tools[1].1.input.insert(
            "labels".into(),
            InputField::new(json!({"type": "array", "description": "x ".repeat(600)}))
                .located(Location::Query),
        );
        let found = Linter::new().check(&tools).findings;
        assert_eq!(ids(&found), [Rule::SchemaBudget]);
        let finding = &found[0];
        assert_eq!(finding.severity, Severity::Warning);
        assert_eq!(finding.pointer.as_deref(), Some("/output"));
        let message = &finding.message;
        assert!(
            message.starts_with("`get_pet`: the schema of GET /pets/{id} costs ~"),
            "{message}"
        );
        assert!(message.contains("(budget 4,000): output ~"), "{message}");
        assert!(message.contains(", input.labels ~"), "{message}");
        assert!(message.contains("smaller"), "{message}");
        // The budget is configurable, and the rule can be allowed.
        assert_eq!(
            ids(&Linter::new().schema_budget(100_000).check(&tools).findings),
            []
        );
        let tight = Linter::new().schema_budget(10).check(&good()).findings;
        assert_eq!(ids(&tight), [Rule::SchemaBudget; 3]);
        assert!(
            tight[0].message.contains("(budget 10)"),
            "{}",
            tight[0].message
        );
        let allowed = Linter::new().level(Rule::SchemaBudget, Level::Allow);
        assert_eq!(ids(&allowed.check(&tools).findings), []);
    }

    #[test]
    fn a_manifest_over_the_budget_names_its_largest_domains() {
        let mut tools = good();
        for i in 0..400 {
            let (mut entry, schema) = good_read();
            entry.name = format!("get_thing_{i}");
            entry.url = format!("/things/{i}");
            entry.tags = vec![
                if i % 4 == 0 { "owners" } else { "things" }.into(),
                "read".into(),
            ];
            tools.push((entry, schema));
        }
        let listed: Vec<&ToolEntry> = tools.iter().map(|(entry, _)| entry).collect();
        // Found once, whichever tools are checked.
        let report = Linter::new().check_among(&tools[..1], &listed);
        assert_eq!(ids(&report.findings), [Rule::ManifestBudget]);
        let finding = &report.findings[0];
        assert_eq!(
            (
                finding.tool.as_str(),
                finding.method.as_str(),
                finding.url.as_str()
            ),
            ("manifest", "OPTIONS", "/")
        );
        assert_eq!(report.warnings, 1);
        let message = &finding.message;
        assert!(
            message.starts_with("the manifest lists 403 tools costing ~"),
            "{message}"
        );
        assert!(
            message.contains("(budget 8,000): tag things (300 tools) ~"),
            "{message}"
        );
        assert!(message.contains(", tag owners (100 tools) ~"), "{message}");
        let roomy = Linter::new().manifest_budget(1_000_000);
        assert_eq!(ids(&roomy.check_among(&tools[..1], &listed).findings), []);
        let denied = Linter::new().level(Rule::ManifestBudget, Level::Deny);
        assert!(denied.check_among(&tools[..1], &listed).has_errors());
    }

    #[test]
    fn counts_read_with_separators() {
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(16_000), "16,000");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
