//! Lint: the quality of a HALO API's descriptions, checked rule by rule.
//!
//! An agent chooses and calls tools from what the API says about them, so a missing `why`,
//! an undescribed argument or a write that does not say whether it can be undone is a bug
//! of the API. [`Linter`] checks a list of tools (manifest entries with their schemas, as
//! discovered) against a fixed set of [`Rule`]s and returns a [`Report`] of [`Finding`]s;
//! each rule has a stable id, a default [`Level`], and can be allowed, warned or denied like
//! a clippy lint. What a plain OpenAPI app cannot say until someone adds HALO's metadata (a
//! `why`, a `read` or `write` tag) is a warning by default, so that linting an app that has
//! just put the layer on passes; what is wrong or contradicts itself is an error. Nothing
//! here does I/O: `halo lint` fetches the tools, other tools can do the same with their own.

// This file holds the types and the driver (`Linter`, and `Tool`, which runs the rules over
// one tool); each rule is checked in the file named after it (`names`, `descriptions`,
// `tags`, `input_descriptions`, `examples`, `reversible`, `sunset`, `links`,
// `rate_arguments`, `budgets`),
// with its tests; the rules' ids, levels and hints are in `rule`, what several rules share
// in `helpers`.

mod budgets;
mod descriptions;
mod examples;
#[cfg(test)]
mod fixtures;
mod helpers;
mod input_descriptions;
mod links;
mod names;
mod rate_arguments;
mod reversible;
mod rule;
mod sunset;
mod tags;

use std::collections::HashMap;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::{ToolEntry, ToolSchema};

pub use budgets::{DEFAULT_MANIFEST_BUDGET, DEFAULT_SCHEMA_BUDGET, thousands};
pub use rule::{Rule, UnknownRule};

/// What a rule's findings are: ignored, warnings, or errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Level {
    /// The rule is not checked.
    Allow,
    /// Findings are warnings.
    Warn,
    /// Findings are errors.
    Deny,
}

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    /// Worth fixing; fails a check only when warnings are denied.
    Warning,
    /// Fails the check.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Warning => "warning",
            Self::Error => "error",
        })
    }
}

/// One problem found in one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// The rule that found it.
    pub rule: Rule,
    /// How serious it is, after configuration.
    #[serde(rename = "level")]
    pub severity: Severity,
    /// The tool's name (as listed); `manifest` for a finding about the whole manifest
    /// (`manifest-budget`).
    pub tool: String,
    /// The tool's method (`OPTIONS` for the manifest).
    pub method: String,
    /// The tool's path template (`/` for the manifest).
    pub url: String,
    /// The argument concerned, for findings about inputs and examples.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// Where in the tool's schema (a JSON Pointer): the field that is wrong or missing. Input
    /// entries are pointed into as [`InputField::schema`](crate::InputField::schema) holds
    /// them, without the `allOf` nesting of an object entry on the wire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// What is wrong, naming the tool.
    pub message: String,
    /// How to fix it, in one line.
    pub hint: String,
}

/// What a [`Linter`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// How many tools were checked.
    pub tools_checked: usize,
    /// How many findings are errors.
    pub errors: usize,
    /// How many findings are warnings.
    pub warnings: usize,
    /// The findings, tool by tool in the order the tools were given.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Whether any finding is an error (a check gated on lint fails).
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.errors > 0
    }
}

/// Checks tools against the [`Rule`]s, each at its configured [`Level`].
///
/// ```
/// use halo_protocol::lint::{Level, Linter, Rule};
/// use halo_protocol::{Call, ToolEntry, ToolSchema};
///
/// let entry = ToolEntry::new("/pets", "GET", "list_pets", "List pets.").with_tags(["pets", "read"]);
/// let schema = ToolSchema::new(Call::new("GET", "/pets"));
/// let tools = [(entry, schema)];
/// let report = Linter::new().check(&tools);
/// assert_eq!(report.tools_checked, 1);
/// assert_eq!(report.findings[0].rule, Rule::MissingWhy);
/// assert!(!report.has_errors(), "no `why` is a warning");
///
/// // `-D warnings`: every warning fails; or one rule.
/// assert!(Linter::new().warnings(Level::Deny).check(&tools).has_errors());
/// assert!(Linter::new().level(Rule::MissingWhy, Level::Deny).check(&tools).has_errors());
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Linter {
    levels: HashMap<Rule, Level>,
    warnings: Option<Level>,
    today: Option<i64>,
    /// The schema budget set, if any.
    schema_budget: Option<usize>,
    /// The manifest budget set, if any.
    manifest_budget: Option<usize>,
}

impl Linter {
    /// Every rule at its default level; `past-sunset` is not checked until [`at`](Self::at)
    /// gives the date.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the level of one rule (`--allow`, `--warn`, `--deny` of `halo lint`).
    pub fn level(mut self, rule: Rule, level: Level) -> Self {
        self.levels.insert(rule, level);
        self
    }

    /// Sets what warnings become: `Level::Deny` makes every rule at warn level an error
    /// (`-D warnings`), `Level::Allow` silences them; a rule set to allow stays allowed.
    pub fn warnings(mut self, level: Level) -> Self {
        self.warnings = Some(level);
        self
    }

    /// The most one tool's schema (as `OPTIONS` on its path answers it) may cost a model, in
    /// estimated tokens ([`estimate_tokens`](crate::estimate_tokens)), before `schema-budget`
    /// finds it; [`DEFAULT_SCHEMA_BUDGET`] unless set.
    pub fn schema_budget(mut self, tokens: usize) -> Self {
        self.schema_budget = Some(tokens);
        self
    }

    /// The most the manifest's tool list may cost a model, in estimated tokens, before
    /// `manifest-budget` finds it; [`DEFAULT_MANIFEST_BUDGET`] unless set.
    pub fn manifest_budget(mut self, tokens: usize) -> Self {
        self.manifest_budget = Some(tokens);
        self
    }

    /// Checks sunset dates against this time (`past-sunset`). Without it, that rule finds
    /// nothing, so the result depends on nothing but the tools.
    pub fn at(mut self, now: SystemTime) -> Self {
        let days = match now.duration_since(UNIX_EPOCH) {
            Ok(since) => i64::try_from(since.as_secs() / 86_400).unwrap_or(i64::MAX),
            Err(before) => -i64::try_from(before.duration().as_secs() / 86_400 + 1).unwrap_or(0),
        };
        self.today = Some(days);
        self
    }

    /// The level a rule's findings get under this configuration.
    #[must_use]
    pub fn level_of(&self, rule: Rule) -> Level {
        let level = self
            .levels
            .get(&rule)
            .copied()
            .unwrap_or(rule.default_level());
        match (level, self.warnings) {
            (Level::Warn, Some(warnings)) => warnings,
            _ => level,
        }
    }

    /// Checks each tool (a manifest entry with its schema) and returns the findings.
    #[must_use]
    pub fn check(&self, tools: &[(ToolEntry, ToolSchema)]) -> Report {
        let listed: Vec<&ToolEntry> = tools.iter().map(|(entry, _)| entry).collect();
        self.check_among(tools, &listed)
    }

    /// Checks some of the tools an API lists (those a tag filter selects): `listed` is
    /// every entry of the manifest, which links may name and names must differ from.
    ///
    /// ```
    /// use halo_protocol::lint::Linter;
    /// use halo_protocol::{Call, Effects, ToolEntry, ToolSchema};
    ///
    /// let refund = ToolEntry::new("/refunds", "POST", "refund", "Refund.").with_tags(["payments", "write"]);
    /// let charge = ToolEntry::new("/charges", "POST", "charge", "Charge.").with_tags(["payments", "write"]);
    /// let mut schema = ToolSchema::new(Call::new("POST", "/charges"));
    /// let mut effects = Effects::default();
    /// effects.reversible = Some(true);
    /// effects.undo = Some("POST /refunds".into());
    /// schema.effects = Some(effects);
    /// let report = Linter::new().check_among(&[(charge.clone(), schema)], &[&charge, &refund]);
    /// assert!(report.findings.iter().all(|finding| finding.rule.id() != "unknown-link"));
    /// ```
    #[must_use]
    pub fn check_among(&self, tools: &[(ToolEntry, ToolSchema)], listed: &[&ToolEntry]) -> Report {
        let mut found = Vec::new();
        let schema_budget = (self.level_of(Rule::SchemaBudget) != Level::Allow)
            .then(|| self.schema_budget.unwrap_or(DEFAULT_SCHEMA_BUDGET));
        for (entry, schema) in tools {
            let mut tool = Tool {
                entry,
                schema,
                listed,
                today: self.today,
                schema_budget,
                found: Vec::new(),
            };
            tool.check();
            found.extend(tool.found);
        }
        if self.level_of(Rule::ManifestBudget) != Level::Allow {
            let budget = self.manifest_budget.unwrap_or(DEFAULT_MANIFEST_BUDGET);
            found.extend(budgets::manifest_budget(listed, budget));
        }
        let mut report = Report {
            tools_checked: tools.len(),
            ..Report::default()
        };
        for mut finding in found {
            finding.severity = match self.level_of(finding.rule) {
                Level::Allow => continue,
                Level::Warn => Severity::Warning,
                Level::Deny => Severity::Error,
            };
            match finding.severity {
                Severity::Warning => report.warnings += 1,
                Severity::Error => report.errors += 1,
            }
            report.findings.push(finding);
        }
        report
    }
}

/// Tags that say something about a tool but name no domain (HALO's recommended tags): a
/// tool's domain is its first other tag (`missing-domain-tag` when it has none but `read`
/// and `write`, `generic-domain-tag` when it has others of these; the exports group tools
/// by it).
///
/// ```
/// use halo_protocol::lint::GENERIC_TAGS;
///
/// let tags = ["read", "books"];
/// let domain = tags.iter().find(|tag| !GENERIC_TAGS.contains(tag));
/// assert_eq!(domain, Some(&"books"));
/// ```
pub const GENERIC_TAGS: [&str; 7] = [
    "read",
    "write",
    "delete",
    "admin",
    "async",
    "expensive",
    "realtime",
];

impl Finding {
    /// A finding of `rule` about `tool` (`method` `url`), with the rule's hint. Its severity
    /// is set from the configuration when the report is made.
    fn new(rule: Rule, tool: &str, method: &str, url: &str, message: String) -> Self {
        Self {
            rule,
            severity: Severity::Error,
            tool: tool.to_owned(),
            method: method.to_owned(),
            url: url.to_owned(),
            param: None,
            pointer: None,
            message,
            hint: rule.hint().to_owned(),
        }
    }
}

/// One tool being checked, and what was found so far.
struct Tool<'a> {
    entry: &'a ToolEntry,
    schema: &'a ToolSchema,
    listed: &'a [&'a ToolEntry],
    today: Option<i64>,
    /// The schema budget, unless `schema-budget` is allowed.
    schema_budget: Option<usize>,
    found: Vec<Finding>,
}

impl Tool<'_> {
    /// Runs every rule on the tool; its findings are then in the order of [`Rule::ALL`].
    fn check(&mut self) {
        self.names();
        self.descriptions();
        self.tags();
        self.input_descriptions();
        self.examples();
        self.reversible();
        self.sunset();
        self.links();
        self.rate_arguments();
        self.budget();
        self.found.sort_by_key(|finding| {
            Rule::ALL
                .iter()
                .position(|r| *r == finding.rule)
                .unwrap_or(usize::MAX)
        });
    }

    fn push(&mut self, rule: Rule, message: String) -> &mut Finding {
        let entry = self.entry;
        let finding = Finding::new(rule, &entry.name, &entry.method, &entry.url, message);
        self.found.push(finding);
        self.found.last_mut().expect("just pushed")
    }

    /// Records a finding at `pointer` in the schema.
    fn push_at(&mut self, rule: Rule, pointer: &str, message: String) -> &mut Finding {
        let finding = self.push(rule, message);
        finding.pointer = Some(pointer.to_owned());
        finding
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use serde_json::json;

    use super::*;
    use crate::lint::fixtures::good;
    use crate::{Call, Effects};

    #[test]
    fn good_tools_pass_every_rule() {
        let report = Linter::new().warnings(Level::Deny).check(&good());
        assert_eq!(report.findings, [], "{report:#?}");
        assert_eq!(
            (report.tools_checked, report.errors, report.warnings),
            (3, 0, 0)
        );
        assert!(!report.has_errors());
    }

    /// What a plain app (utoipa annotations, no HALO metadata) is described as: a domain tag
    /// (its own, or derived from the path), a description, no `why`, no `read`/`write`.
    #[test]
    fn a_plain_apps_tools_only_warn() {
        let plain = |method: &str, url: &str, name: &str| {
            let entry = ToolEntry::new(url, method, name, "Does something.").with_tags(["pets"]);
            let mut schema = ToolSchema::new(Call::new(method, url));
            schema.description = "Does something.".into();
            schema.tags.clone_from(&entry.tags);
            (entry, schema)
        };
        let tools = [
            plain("GET", "/pets", "list_pets"),
            plain("POST", "/pets", "add_pet"),
            plain("DELETE", "/pets/{id}", "remove_pet"),
        ];
        let report = Linter::new().check(&tools);
        assert_eq!(report.errors, 0, "{report:#?}");
        let found: HashSet<Rule> = report.findings.iter().map(|f| f.rule).collect();
        assert_eq!(
            found,
            HashSet::from([
                Rule::MissingWhy,
                Rule::ReadWriteTag,
                Rule::MissingExample,
                Rule::MissingReversible,
            ])
        );
        assert!(
            report
                .findings
                .iter()
                .all(|finding| finding.severity == Severity::Warning)
        );
        // `-D warnings` fails them.
        let denied = Linter::new().warnings(Level::Deny).check(&tools);
        assert_eq!((denied.errors, denied.warnings), (report.warnings, 0));
        // What is wrong rather than missing stays an error: `write` on GET.
        let mut contradicting = tools;
        contradicting[0].0.tags.push("write".into());
        let report = Linter::new().check(&contradicting);
        assert!(report.has_errors());
        assert!(report.findings.iter().any(|finding| {
            finding.rule == Rule::TagContradictsMethod && finding.severity == Severity::Error
        }));
    }

    #[test]
    fn levels_are_configurable_like_clippy() {
        let mut tools = good();
        // An error: reversible, with no undo.
        tools[0].1.effects = Some(Effects {
            reversible: Some(true),
            undo: None,
            approval: None,
        });
        tools[0].1.examples.clear(); // a warning
        let counts = |linter: Linter| {
            let report = linter.check(&tools);
            (report.errors, report.warnings, report.findings.len())
        };
        assert_eq!(counts(Linter::new()), (1, 1, 2));
        assert_eq!(counts(Linter::new().warnings(Level::Deny)), (2, 0, 2));
        assert_eq!(counts(Linter::new().warnings(Level::Allow)), (1, 0, 1));
        assert_eq!(
            counts(Linter::new().level(Rule::MissingUndo, Level::Allow)),
            (0, 1, 1)
        );
        assert_eq!(
            counts(Linter::new().level(Rule::MissingUndo, Level::Warn)),
            (0, 2, 2)
        );
        assert_eq!(
            counts(Linter::new().level(Rule::MissingExample, Level::Deny)),
            (2, 0, 2)
        );
        // -D warnings leaves allowed rules allowed.
        let linter = Linter::new()
            .warnings(Level::Deny)
            .level(Rule::MissingExample, Level::Allow);
        assert_eq!(linter.level_of(Rule::MissingExample), Level::Allow);
        assert_eq!(linter.level_of(Rule::MissingReversible), Level::Deny);
        assert_eq!(counts(linter), (1, 0, 1));
    }

    #[test]
    fn findings_serialise_for_machines() {
        let mut tools = good();
        tools[1].1.input["id"].schema.remove("description");
        let report = Linter::new().check(&tools);
        assert_eq!(
            serde_json::to_value(&report).unwrap(),
            json!({
                "tools_checked": 3, "errors": 0, "warnings": 1,
                "findings": [{
                    "rule": "missing-input-description", "level": "warning",
                    "tool": "get_pet", "method": "GET", "url": "/pets/{id}",
                    "param": "id", "pointer": "/input/id",
                    "message": "`get_pet`: input `id` has no description",
                    "hint": Rule::MissingInputDescription.hint(),
                }]
            })
        );
    }
}
