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

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::date::epoch_days;
use crate::{Status, ToolEntry, ToolSchema, escape_token, tool_name, unescape_token};

/// One check of a tool's description.
///
/// Every rule has a stable [`id`](Self::id) (`missing-why`), a default [`Level`], a one-line
/// summary and a hint saying how to fix what it finds.
///
/// ```
/// use halo_protocol::lint::{Level, Rule};
///
/// let rule: Rule = "missing-why".parse().unwrap();
/// assert_eq!(rule, Rule::MissingWhy);
/// // A plain app has no `why` yet: a warning, unless warnings are denied.
/// assert_eq!(rule.default_level(), Level::Warn);
/// assert_eq!(Rule::TagContradictsMethod.default_level(), Level::Deny);
/// assert!("missing-whyy".parse::<Rule>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Rule {
    /// `missing-why`: the tool has no `why` (warning: a plain app has none yet).
    MissingWhy,
    /// `missing-description`: the tool has no description at all (warning).
    MissingDescription,
    /// `missing-domain-tag`: no tag names the part of the API the tool belongs to (error).
    MissingDomainTag,
    /// `read-write-tag`: the tool is tagged neither `read` nor `write`, or both (warning: a
    /// plain app has neither yet).
    ReadWriteTag,
    /// `tag-contradicts-method`: `write` on a safe method, or `read` on `PUT`, `PATCH` or
    /// `DELETE` (error).
    TagContradictsMethod,
    /// `missing-input-description`: an argument, or a property inside one, has no
    /// description (warning).
    MissingInputDescription,
    /// `missing-example`: a write has no example (warning).
    MissingExample,
    /// `example-mismatch`: an example passes an argument the tool does not take, or leaves
    /// out a required one (error).
    ExampleMismatch,
    /// `missing-reversible`: a write does not say whether it can be undone (warning).
    MissingReversible,
    /// `missing-undo`: a reversible write does not say how to undo it (error).
    MissingUndo,
    /// `missing-sunset`: a deprecated or retired tool has no `sunset` date (warning: a plain
    /// app's deprecated operations have none yet).
    MissingSunset,
    /// `invalid-sunset`: a `sunset` that is not a date (YYYY-MM-DD) (error).
    InvalidSunset,
    /// `past-sunset`: the tool's sunset date has passed and it is still listed (warning).
    PastSunset,
    /// `unknown-link`: `undo`, `replace_with`, `fallback` or a `next` suggestion names a path
    /// no listed tool serves (warning).
    UnknownLink,
    /// `duplicate-name`: two tools share a name (error).
    DuplicateName,
    /// `invalid-name`: the name is not `[A-Za-z0-9_-]{1,64}`, so bridges rename it (error).
    InvalidName,
    /// `schema-budget`: the tool's schema costs a model more tokens than the schema budget
    /// ([`Linter::schema_budget`]) (warning).
    SchemaBudget,
    /// `manifest-budget`: the manifest's tool list costs a model more tokens than the
    /// manifest budget ([`Linter::manifest_budget`]) (warning).
    ManifestBudget,
}

impl Rule {
    /// Every rule, in the order findings of one tool are reported.
    pub const ALL: [Self; 18] = [
        Self::DuplicateName,
        Self::InvalidName,
        Self::MissingDescription,
        Self::MissingWhy,
        Self::MissingDomainTag,
        Self::ReadWriteTag,
        Self::TagContradictsMethod,
        Self::MissingInputDescription,
        Self::MissingExample,
        Self::ExampleMismatch,
        Self::MissingReversible,
        Self::MissingUndo,
        Self::MissingSunset,
        Self::InvalidSunset,
        Self::PastSunset,
        Self::UnknownLink,
        Self::SchemaBudget,
        Self::ManifestBudget,
    ];

    /// The stable id, as written on the command line and in reports (`missing-why`).
    #[must_use]
    pub fn id(self) -> &'static str {
        self.info().0
    }

    /// The level the rule has unless configured otherwise.
    #[must_use]
    pub fn default_level(self) -> Level {
        self.info().1
    }

    /// What the rule checks, in one line.
    #[must_use]
    pub fn summary(self) -> &'static str {
        self.info().2
    }

    /// How to fix what the rule finds, in one line.
    #[must_use]
    pub fn hint(self) -> &'static str {
        self.info().3
    }

    /// Id, default level, summary, hint.
    fn info(self) -> (&'static str, Level, &'static str, &'static str) {
        use Level::{Deny, Warn};
        match self {
            Self::MissingWhy => (
                "missing-why",
                Warn,
                "every tool has a `why`: when a model should choose it, and when not",
                "give the tool a `why` (halo-axum: #[halo(why = \"Use when ...\")] or Describe::why; \
                 OpenAPI: x-halo-why)",
            ),
            Self::MissingDescription => (
                "missing-description",
                Warn,
                "every tool has a description (the operation's summary)",
                "give the operation a `summary` (utoipa: the handler's doc comment)",
            ),
            Self::MissingDomainTag => (
                "missing-domain-tag",
                Deny,
                "every tool has a tag naming its domain (`books`), besides `read`/`write` and \
                 the other generic tags",
                "add a domain tag to the operation's `tags`, e.g. tags = [\"books\", \"read\"]",
            ),
            Self::ReadWriteTag => (
                "read-write-tag",
                Warn,
                "every tool is tagged exactly one of `read` and `write`",
                "tag it `read` if it changes nothing, `write` if it changes anything",
            ),
            Self::TagContradictsMethod => (
                "tag-contradicts-method",
                Deny,
                "`write` is not on a safe method (GET, HEAD, OPTIONS, TRACE, QUERY), `read` \
                 not on PUT, PATCH or DELETE",
                "fix the tag, or the method: safe methods must not change state",
            ),
            Self::MissingInputDescription => (
                "missing-input-description",
                Warn,
                "every argument, and every property inside one, has a description",
                "give it a `description` (utoipa: a doc comment on the field, or description = \"...\" \
                 on the parameter)",
            ),
            Self::MissingExample => (
                "missing-example",
                Warn,
                "every write has at least one example",
                "add an example of its input (halo-axum: #[halo(example(input = { ... }))] or \
                 Describe::example; OpenAPI: x-halo-examples)",
            ),
            Self::ExampleMismatch => (
                "example-mismatch",
                Deny,
                "examples pass only arguments the tool takes, and every required one",
                "key the example's input like the tool's input: one entry per argument",
            ),
            Self::MissingReversible => (
                "missing-reversible",
                Warn,
                "every write says whether it can be undone (`effects.reversible`)",
                "say `effects.reversible` (halo-axum: #[halo(reversible = false)], or reversible = true \
                 with undo = \"...\"; Describe::reversible)",
            ),
            Self::MissingUndo => (
                "missing-undo",
                Deny,
                "a reversible write names the operation that undoes it (`effects.undo`)",
                "name the operation that undoes it in `effects.undo` (halo-axum: #[halo(undo = \
                 \"POST /path/{id}/undo\")] or Describe::undo), or say it is not reversible",
            ),
            Self::MissingSunset => (
                "missing-sunset",
                Warn,
                "a deprecated or retired tool has a `sunset` date (YYYY-MM-DD)",
                "add `sunset` and `replace_with` (halo-axum: #[halo(sunset = \"YYYY-MM-DD\", \
                 replace_with = \"...\")] or Describe::sunset and Describe::replace_with)",
            ),
            Self::InvalidSunset => (
                "invalid-sunset",
                Deny,
                "a `sunset` is a date (YYYY-MM-DD)",
                "write the date as YYYY-MM-DD (halo-axum: #[halo(sunset = \"2027-01-31\")] or \
                 Describe::sunset)",
            ),
            Self::PastSunset => (
                "past-sunset",
                Warn,
                "a tool whose sunset date has passed is no longer listed",
                "remove the operation, or move its sunset date",
            ),
            Self::UnknownLink => (
                "unknown-link",
                Warn,
                "`undo`, `replace_with`, `fallback` and `next` name paths of listed tools",
                "point the link at a path (and method) the API describes, or lint with \
                 credentials that see it",
            ),
            Self::DuplicateName => (
                "duplicate-name",
                Deny,
                "tool names are unique",
                "give the operation a unique operationId",
            ),
            Self::InvalidName => (
                "invalid-name",
                Deny,
                "tool names are [A-Za-z0-9_-]{1,64}, as LLM APIs require",
                "give the operation an operationId made of letters, digits, `_` and `-`",
            ),
            Self::SchemaBudget => (
                "schema-budget",
                Warn,
                "a tool's schema costs at most the schema budget, in estimated tokens (4,000 by \
                 default)",
                "shrink its largest parts: describe only the output fields an agent needs (or \
                 none), keep descriptions and examples short, split a catch-all operation; or \
                 raise the budget (halo lint --schema-budget)",
            ),
            Self::ManifestBudget => (
                "manifest-budget",
                Warn,
                "the manifest's tool list costs at most the manifest budget, in estimated tokens \
                 (8,000 by default)",
                "let agents take a part of it: tag tools by domain (they filter with ?tags=) and \
                 search it (OPTIONS /?q=, halo search); keep summaries to a sentence; or raise \
                 the budget (halo lint --manifest-budget)",
            ),
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for Rule {
    type Err = UnknownRule;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|rule| rule.id() == id)
            .ok_or_else(|| UnknownRule { id: id.to_owned() })
    }
}

impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

/// A rule id that no [`Rule`] has; the message lists the ids there are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown lint rule `{id}`; the rules are {}", rule_ids())]
pub struct UnknownRule {
    id: String,
}

fn rule_ids() -> String {
    Rule::ALL.map(Rule::id).join(", ")
}

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
            let first = listed.iter().find(|other| other.name == entry.name);
            if let Some(first) = first.filter(|first| !same_tool(first, entry)) {
                tool.push(
                    Rule::DuplicateName,
                    format!(
                        "`{}` ({} {}) has the name of {} {}",
                        entry.name, entry.method, entry.url, first.method, first.url
                    ),
                );
            }
            tool.check();
            found.extend(tool.found);
        }
        if self.level_of(Rule::ManifestBudget) != Level::Allow {
            let budget = self.manifest_budget.unwrap_or(DEFAULT_MANIFEST_BUDGET);
            if let Some(finding) = manifest_budget(listed, budget) {
                found.push((Rule::ManifestBudget, finding));
            }
        }
        let mut report = Report {
            tools_checked: tools.len(),
            ..Report::default()
        };
        for (rule, mut finding) in found {
            finding.severity = match self.level_of(rule) {
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
/// tool's domain is its first other tag (`missing-domain-tag`; the exports group tools by
/// it).
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

/// How deep the description check walks into a schema.
const MAX_DEPTH: usize = 64;

/// One tool being checked, and what was found so far.
struct Tool<'a> {
    entry: &'a ToolEntry,
    schema: &'a ToolSchema,
    listed: &'a [&'a ToolEntry],
    today: Option<i64>,
    /// The schema budget, unless `schema-budget` is allowed.
    schema_budget: Option<usize>,
    found: Vec<(Rule, Finding)>,
}

impl Tool<'_> {
    fn check(&mut self) {
        self.name();
        self.texts();
        self.tags();
        self.inputs();
        self.examples();
        self.effects();
        self.lifecycle();
        self.links();
        self.budget();
        self.found.sort_by_key(|(rule, _)| {
            Rule::ALL
                .iter()
                .position(|r| r == rule)
                .unwrap_or(usize::MAX)
        });
    }

    fn push(&mut self, rule: Rule, message: String) -> &mut Finding {
        self.found.push((
            rule,
            Finding {
                rule,
                severity: Severity::Error,
                tool: self.entry.name.clone(),
                method: self.entry.method.clone(),
                url: self.entry.url.clone(),
                param: None,
                pointer: None,
                message,
                hint: rule.hint().to_owned(),
            },
        ));
        &mut self.found.last_mut().expect("just pushed").1
    }

    /// Records a finding at `pointer` in the schema.
    fn push_at(&mut self, rule: Rule, pointer: &str, message: String) -> &mut Finding {
        let finding = self.push(rule, message);
        finding.pointer = Some(pointer.to_owned());
        finding
    }

    fn name(&mut self) {
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

    fn texts(&mut self) {
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

    fn tags(&mut self) {
        let name = self.entry.name.clone();
        let tags = &self.entry.tags;
        let has = |tag: &str| tags.iter().any(|t| t == tag);
        let (read, write) = (has("read"), has("write"));
        if tags.iter().all(|tag| GENERIC_TAGS.contains(&tag.as_str())) {
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

    fn inputs(&mut self) {
        let mut missing = Vec::new();
        for (param, field) in &self.schema.input {
            let defs = match field.schema.get("$defs") {
                Some(Value::Object(defs)) => defs,
                _ => &Map::new(),
            };
            let mut at = Vec::new();
            undescribed(&field.schema, "", true, defs, 0, &mut at);
            missing.extend(at.into_iter().map(|inner| (param.clone(), inner)));
        }
        let name = self.entry.name.clone();
        for (param, inner) in missing {
            let message = if inner.is_empty() {
                format!("`{name}`: input `{param}` has no description")
            } else {
                format!("`{name}`: input `{param}` has no description at `{inner}`")
            };
            let pointer = format!("/input/{}{inner}", escape_token(&param));
            self.push_at(Rule::MissingInputDescription, &pointer, message)
                .param = Some(param);
        }
    }

    fn examples(&mut self) {
        let name = self.entry.name.clone();
        if self.is_write() && self.schema.examples.is_empty() {
            let message = format!("`{name}` changes state but has no example");
            self.push_at(Rule::MissingExample, "/examples", message);
        }
        let mut mismatches = Vec::new();
        for (index, example) in self.schema.examples.iter().enumerate() {
            for param in example.input.keys() {
                if !self.schema.input.contains_key(param) {
                    mismatches.push((
                        format!("/examples/{index}/input/{}", escape_token(param)),
                        param.clone(),
                        format!(
                            "`{name}`: example {index} passes `{param}`, which it does not take"
                        ),
                    ));
                }
            }
            for (param, field) in &self.schema.input {
                if field.required && !example.input.contains_key(param) {
                    mismatches.push((
                        format!("/examples/{index}/input"),
                        param.clone(),
                        format!(
                            "`{name}`: example {index} leaves out `{param}`, which is required"
                        ),
                    ));
                }
            }
        }
        for (pointer, param, message) in mismatches {
            self.push_at(Rule::ExampleMismatch, &pointer, message).param = Some(param);
        }
    }

    fn effects(&mut self) {
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

    fn lifecycle(&mut self) {
        let name = self.entry.name.clone();
        let lifecycle = &self.schema.lifecycle;
        let status = match lifecycle.status {
            Some(Status::Deprecated) => Some("deprecated"),
            Some(Status::Sunset) => Some("retired"),
            _ => None,
        };
        let days = lifecycle.sunset.as_deref().map(epoch_days);
        match (status, &lifecycle.sunset, days) {
            (Some(status), None, _) => {
                let message = format!("`{name}` is {status} but has no sunset date");
                self.push_at(Rule::MissingSunset, "/sunset", message);
            }
            (_, Some(sunset), Some(None)) => {
                let message = format!("`{name}`: sunset `{sunset}` is not a date (YYYY-MM-DD)");
                self.push_at(Rule::InvalidSunset, "/sunset", message);
            }
            (_, Some(sunset), Some(Some(day))) if self.today.is_some_and(|today| day < today) => {
                let message =
                    format!("`{name}`: its sunset date, {sunset}, has passed, yet it is listed");
                self.push_at(Rule::PastSunset, "/sunset", message);
            }
            _ => {}
        }
    }

    fn links(&mut self) {
        let schema = self.schema;
        let mut links: Vec<(String, &str, &str)> = Vec::new();
        if let Some(undo) = schema.effects.as_ref().and_then(|e| e.undo.as_deref()) {
            links.push(("/effects/undo".into(), "undo", undo));
        }
        if let Some(replacement) = schema.lifecycle.replace_with.as_deref() {
            links.push(("/replace_with".into(), "replace_with", replacement));
        }
        if let Some(fallback) = schema
            .resilience
            .as_ref()
            .and_then(|r| r.fallback.as_deref())
        {
            links.push(("/resilience/fallback".into(), "fallback", fallback));
        }
        for (index, next) in schema.next.iter().enumerate() {
            links.push((format!("/next/{index}/suggest"), "next", &next.suggest));
        }
        let name = self.entry.name.clone();
        for (pointer, field, link) in links {
            if self.resolves(link) {
                continue;
            }
            let message = format!(
                "`{name}`: {field} `{link}` names no tool listed here (it may be hidden from \
                 these credentials)"
            );
            self.push_at(Rule::UnknownLink, &pointer, message);
        }
    }

    /// Whether a link names a listed tool; absolute URLs and other hosts are not checked.
    fn resolves(&self, link: &str) -> bool {
        let Some((method, path)) = crate::link_target(link) else {
            return true;
        };
        self.listed.iter().any(|entry| {
            same_path(&entry.url, path)
                && method.is_none_or(|method| entry.method.eq_ignore_ascii_case(method))
        })
    }

    /// A write: tagged `write`, or on an unsafe method and not tagged `read`.
    fn is_write(&self) -> bool {
        let tags = &self.entry.tags;
        tags.iter().any(|t| t == "write")
            || (!tags.iter().any(|t| t == "read") && !crate::is_safe_method(&self.entry.method))
    }
}

// Token budgets (`schema-budget`, `manifest-budget`): what an API's descriptions cost a
// model, estimated with `estimate_tokens`, and their largest parts.

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
    fn budget(&mut self) {
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
fn manifest_budget(listed: &[&ToolEntry], budget: usize) -> Option<Finding> {
    let total = crate::estimate_tokens(&serde_json::to_string(listed).ok()?) + 2;
    if total <= budget {
        return None;
    }
    let mut domains: Vec<(String, usize, usize)> = Vec::new();
    for entry in listed {
        let tokens = serde_json::to_string(entry).map_or(0, |text| crate::estimate_tokens(&text));
        let domain = entry
            .tags
            .iter()
            .find(|tag| !GENERIC_TAGS.contains(&tag.as_str()))
            .map_or_else(|| "(no domain tag)".to_owned(), |tag| format!("tag {tag}"));
        match domains.iter_mut().find(|(name, ..)| *name == domain) {
            Some((_, sum, count)) => {
                *sum += tokens;
                *count += 1;
            }
            None => domains.push((domain, tokens, 1)),
        }
    }
    domains.sort_by_key(|domain| std::cmp::Reverse(domain.1));
    let parts = domains.into_iter().map(|(domain, tokens, count)| {
        let tools = if count == 1 { "tool" } else { "tools" };
        (format!("{domain} ({count} {tools})"), tokens)
    });
    let rule = Rule::ManifestBudget;
    Some(Finding {
        rule,
        severity: Severity::Warning,
        tool: "manifest".to_owned(),
        method: "OPTIONS".to_owned(),
        url: "/".to_owned(),
        param: None,
        pointer: Some("/tools".to_owned()),
        message: format!(
            "the manifest lists {} tools costing ~{} tokens (budget {}): {}",
            listed.len(),
            thousands(total),
            thousands(budget),
            largest(parts, total)
        ),
        hint: rule.hint().to_owned(),
    })
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

/// Whether two entries are one tool (one method on one path).
fn same_tool(a: &ToolEntry, b: &ToolEntry) -> bool {
    a.url == b.url && a.method.eq_ignore_ascii_case(&b.method)
}

fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

fn quoted(tags: &[String]) -> String {
    tags.iter()
        .map(|tag| format!("`{tag}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether two paths name the same template: segment by segment, a `{variable}` on either
/// side matches anything.
fn same_path(template: &str, path: &str) -> bool {
    let is_var = |s: &str| s.starts_with('{') && s.ends_with('}');
    let mut a = template.trim_end_matches('/').split('/');
    let mut b = path.trim_end_matches('/').split('/');
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == b || is_var(a) || is_var(b) => {}
            _ => return false,
        }
    }
}

/// Collects the pointers (relative to `schema`) of the places that should have a description
/// and do not: `schema` itself when `needs` is set, and every property at any depth. Items,
/// branches of `allOf`/`anyOf`/`oneOf` and `$defs` need none themselves, but their
/// properties do. `$ref`s are not followed (the definitions are walked where they are).
fn undescribed(
    schema: &Map<String, Value>,
    pointer: &str,
    needs: bool,
    defs: &Map<String, Value>,
    depth: usize,
    out: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    if needs && !is_described(schema, defs, depth) {
        out.push(pointer.to_owned());
    }
    let mut walk = |value: &Value, pointer: String, needs: bool| {
        if let Value::Object(child) = value {
            undescribed(child, &pointer, needs, defs, depth + 1, out);
        }
    };
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, property) in properties {
            walk(
                property,
                format!("{pointer}/properties/{}", escape_token(name)),
                true,
            );
        }
    }
    for keyword in ["items", "additionalProperties"] {
        if let Some(value) = schema.get(keyword) {
            walk(value, format!("{pointer}/{keyword}"), false);
        }
    }
    for keyword in ["allOf", "anyOf", "oneOf", "prefixItems"] {
        if let Some(Value::Array(branches)) = schema.get(keyword) {
            for (index, branch) in branches.iter().enumerate() {
                walk(branch, format!("{pointer}/{keyword}/{index}"), false);
            }
        }
    }
    if let Some(Value::Object(local)) = schema.get("$defs") {
        for (name, definition) in local {
            walk(
                definition,
                format!("{pointer}/$defs/{}", escape_token(name)),
                false,
            );
        }
    }
}

/// Whether a schema says what it is: its own description, a described branch of a
/// composition (`Option<T>` is `oneOf: [null, T]`), or a `$ref` to a described definition.
fn is_described(schema: &Map<String, Value>, defs: &Map<String, Value>, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    if schema
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|text| !is_blank(text))
    {
        return true;
    }
    let referenced = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(unescape_token(name).as_ref()));
    if let Some(Value::Object(definition)) = referenced
        && is_described(definition, defs, depth + 1)
    {
        return true;
    }
    ["allOf", "anyOf", "oneOf"].iter().any(|keyword| {
        matches!(schema.get(*keyword), Some(Value::Array(branches))
            if branches.iter().any(|branch| matches!(branch,
                Value::Object(branch) if is_described(branch, defs, depth + 1))))
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::{Call, Effects, Example, InputField, Lifecycle, Location, Next, Resilience};

    /// A write that passes every rule: a domain tag, `write`, `why`, described inputs, an
    /// example, reversible with undo.
    fn good_write() -> (ToolEntry, ToolSchema) {
        let entry = ToolEntry::new("/pets", "POST", "create_pet", "Add a pet.")
            .with_tags(["pets", "write"]);
        let mut schema = ToolSchema::new(Call::new("POST", "/pets"));
        schema.description = "Add a pet.".into();
        schema.why = Some("Use to add a pet that list_pets does not find".into());
        schema.tags.clone_from(&entry.tags);
        schema.input.insert(
            "name".into(),
            InputField::new(json!({"type": "string", "description": "The pet's name"}))
                .located(Location::Body)
                .required(true),
        );
        schema.examples = vec![Example::new(
            json!({"name": "Rex"}).as_object().unwrap().clone(),
            None,
        )];
        schema.effects = Some(Effects {
            reversible: Some(true),
            undo: Some("DELETE /pets/{id}".into()),
        });
        (entry, schema)
    }

    /// A read that passes every rule.
    fn good_read() -> (ToolEntry, ToolSchema) {
        let entry = ToolEntry::new("/pets/{id}", "GET", "get_pet", "Get a pet.")
            .with_tags(["pets", "read"]);
        let mut schema = ToolSchema::new(Call::new("GET", "/pets/{id}"));
        schema.why = Some("Use when you know the pet's id".into());
        schema.input.insert(
            "id".into(),
            InputField::new(json!({"type": "integer", "description": "The pet's id"}))
                .located(Location::Path)
                .required(true),
        );
        (entry, schema)
    }

    /// A delete that passes every rule (the target of `good_write`'s undo).
    fn good_delete() -> (ToolEntry, ToolSchema) {
        let (_, mut schema) = good_read();
        let entry = ToolEntry::new("/pets/{id}", "DELETE", "delete_pet", "Delete a pet.")
            .with_tags(["pets", "write"]);
        schema.call = Call::new("DELETE", "/pets/{id}");
        schema.why = Some("Use only when asked to remove a pet for good".into());
        schema.examples = vec![Example::new(
            json!({"id": 1}).as_object().unwrap().clone(),
            None,
        )];
        schema.effects = Some(Effects {
            reversible: Some(false),
            undo: None,
        });
        (entry, schema)
    }

    fn good() -> Vec<(ToolEntry, ToolSchema)> {
        vec![good_write(), good_read(), good_delete()]
    }

    /// The rules that fire on the tools, in order.
    fn rules(tools: &[(ToolEntry, ToolSchema)]) -> Vec<Rule> {
        Linter::new()
            .at(SystemTime::UNIX_EPOCH + Duration::from_secs(20_000 * 86_400))
            .check(tools)
            .findings
            .iter()
            .map(|finding| finding.rule)
            .collect()
    }

    /// Changes the first tool of the good set and returns the findings.
    fn with_first(change: impl FnOnce(&mut ToolEntry, &mut ToolSchema)) -> Vec<Finding> {
        let mut tools = good();
        let (entry, schema) = &mut tools[0];
        change(entry, schema);
        Linter::new()
            .at(SystemTime::UNIX_EPOCH + Duration::from_secs(20_000 * 86_400))
            .check(&tools)
            .findings
    }

    fn ids(findings: &[Finding]) -> Vec<Rule> {
        findings.iter().map(|finding| finding.rule).collect()
    }

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

    #[test]
    fn ids_are_unique_and_parse_back() {
        let mut seen = HashSet::new();
        for rule in Rule::ALL {
            assert!(seen.insert(rule.id()), "{rule}");
            assert_eq!(rule.id().parse::<Rule>(), Ok(rule));
            assert!(!rule.summary().is_empty() && !rule.hint().is_empty());
        }
        let err = "missing-whys".parse::<Rule>().unwrap_err().to_string();
        assert!(
            err.contains("`missing-whys`") && err.contains("missing-undo"),
            "{err}"
        );
    }

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

    #[test]
    fn input_descriptions_at_any_depth() {
        let found = with_first(|_, schema| {
            schema.input.insert(
                "owner".into(),
                InputField::new(json!({
                    "type": "object",
                    "properties": {
                        "email": {"type": "string", "description": "Where to write"},
                        "a/b": {"type": "string"},
                        "tags": {"type": "array", "description": "Labels",
                                 "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                        "home": {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/Home"}]},
                        "away": {"$ref": "#/$defs/Bare"}
                    },
                    "$defs": {
                        "Home": {"type": "object", "description": "A home",
                                 "properties": {"street": {"type": "string"}}},
                        "Bare": {"type": "object"}
                    }
                }))
                .located(Location::Body),
            );
            schema.examples[0].input.insert("owner".into(), json!({}));
        });
        let mut pointers: Vec<&str> = found.iter().filter_map(|f| f.pointer.as_deref()).collect();
        pointers.sort_unstable();
        assert_eq!(
            pointers,
            [
                "/input/owner",
                "/input/owner/$defs/Home/properties/street",
                "/input/owner/properties/away",
                "/input/owner/properties/a~1b",
                "/input/owner/properties/tags/items/properties/k",
            ]
        );
        assert!(found.iter().all(|f| f.rule == Rule::MissingInputDescription
            && f.param.as_deref() == Some("owner")
            && f.severity == Severity::Warning));
        assert_eq!(
            found[0].message,
            "`create_pet`: input `owner` has no description"
        );
        assert!(
            found[1].message.ends_with("at `/properties/a~1b`"),
            "{}",
            found[1].message
        );
        // A path parameter without one.
        let mut tools = good();
        tools[1].1.input["id"].schema.remove("description");
        let report = Linter::new().check(&tools);
        assert_eq!(report.findings[0].pointer.as_deref(), Some("/input/id"));
        // The walk stops at a depth no real schema reaches (a parsed document is at most
        // 128 levels deep anyway).
        let mut deep = json!({"type": "string"});
        for _ in 0..100 {
            deep = json!({"description": "d", "properties": {"x": deep}});
        }
        let found = with_first(|_, schema| {
            schema.input.insert("deep".into(), InputField::new(deep));
        });
        assert_eq!(ids(&found), []);
    }

    #[test]
    fn writes_need_examples() {
        let found = with_first(|_, schema| schema.examples.clear());
        assert_eq!(ids(&found), [Rule::MissingExample]);
        assert_eq!(found[0].severity, Severity::Warning);
        // A read needs none.
        let mut tools = good();
        tools[1].1.examples.clear();
        assert_eq!(rules(&tools), []);
        // An untagged POST counts as a write.
        let found = with_first(|entry, schema| {
            entry.tags = vec!["pets".into()];
            schema.examples.clear();
        });
        assert_eq!(ids(&found), [Rule::ReadWriteTag, Rule::MissingExample]);
    }

    #[test]
    fn examples_match_the_inputs() {
        let found = with_first(|_, schema| {
            schema.examples.push(Example::new(
                json!({"nam": "Rex"}).as_object().unwrap().clone(),
                None,
            ));
        });
        assert_eq!(ids(&found), [Rule::ExampleMismatch, Rule::ExampleMismatch]);
        assert_eq!(found[0].pointer.as_deref(), Some("/examples/1/input/nam"));
        assert_eq!(found[0].param.as_deref(), Some("nam"));
        assert!(found[0].message.contains("does not take"), "{found:?}");
        assert_eq!(found[1].param.as_deref(), Some("name"));
        assert!(found[1].message.contains("leaves out `name`"), "{found:?}");
        // Optional arguments may be left out.
        let found = with_first(|_, schema| {
            schema.input.insert(
                "color".into(),
                InputField::new(json!({"type": "string", "description": "Fur"})),
            );
        });
        assert_eq!(ids(&found), []);
    }

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
            });
        });
        assert_eq!(ids(&found), []);
    }

    fn deprecated(sunset: Option<&str>) -> Vec<Finding> {
        let mut tools = good();
        tools[1].1.lifecycle = Lifecycle {
            status: Some(Status::Deprecated),
            sunset: sunset.map(str::to_owned),
            replace_with: Some("/pets/{id}".into()),
        };
        // Day 20000 is 2024-10-04.
        Linter::new()
            .at(SystemTime::UNIX_EPOCH + Duration::from_secs(20_000 * 86_400 + 3_600))
            .check(&tools)
            .findings
    }

    #[test]
    fn deprecated_tools_have_a_sunset() {
        let found = deprecated(None);
        assert_eq!(ids(&found), [Rule::MissingSunset]);
        assert_eq!(
            found[0].severity,
            Severity::Warning,
            "a plain app has no date yet"
        );
        assert!(found[0].message.contains("deprecated"), "{found:?}");
        let found = deprecated(Some("next year"));
        assert_eq!(ids(&found), [Rule::InvalidSunset]);
        assert_eq!(found[0].severity, Severity::Error);
        assert!(found[0].message.contains("not a date"), "{found:?}");
        assert_eq!(ids(&deprecated(Some("2024-10-04"))), []);
        assert_eq!(ids(&deprecated(Some("2030-01-01"))), []);
        // Active tools need none.
        let mut tools = good();
        tools[1].1.lifecycle.status = Some(Status::Active);
        assert_eq!(rules(&tools), []);
    }

    #[test]
    fn past_sunsets() {
        let found = deprecated(Some("2024-10-03"));
        assert_eq!(ids(&found), [Rule::PastSunset]);
        assert_eq!(found[0].severity, Severity::Warning);
        assert!(found[0].message.contains("2024-10-03"), "{found:?}");
        // Without a date to compare with, the rule finds nothing.
        let mut tools = good();
        tools[1].1.lifecycle.sunset = Some("1999-01-01".into());
        assert_eq!(ids(&Linter::new().check(&tools).findings), []);
    }

    #[test]
    fn links_name_listed_tools() {
        let linked = |change: fn(&mut ToolSchema)| {
            let mut tools = good();
            change(&mut tools[0].1);
            Linter::new().check(&tools).findings
        };
        // Templates match whatever their variables are called, and concrete paths.
        assert_eq!(
            ids(&linked(|s| {
                s.effects.as_mut().unwrap().undo = Some("/pets/{pet_id}?soft=1".into());
                s.next = vec![Next::new("201", "GET /pets/7")];
                s.resilience = Some(Resilience {
                    fallback: Some("https://other.example/pets".into()),
                    ..Resilience::default()
                });
            })),
            []
        );
        let found = linked(|s| {
            s.effects.as_mut().unwrap().undo = Some("PATCH /pets/{id}".into());
            s.next = vec![Next::new("201", "/owners/{id}")];
            s.lifecycle.replace_with = Some("/pets/{id}/v2".into());
            s.resilience = Some(Resilience {
                fallback: Some("/pets/".into()),
                ..Resilience::default()
            });
        });
        let pointers: Vec<&str> = found.iter().filter_map(|f| f.pointer.as_deref()).collect();
        assert_eq!(
            pointers,
            ["/effects/undo", "/replace_with", "/next/0/suggest"]
        );
        assert!(found.iter().all(|f| f.rule == Rule::UnknownLink));
        assert!(
            found[0].message.contains("undo `PATCH /pets/{id}`"),
            "{found:?}"
        );
    }

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

    #[test]
    fn levels_are_configurable_like_clippy() {
        let mut tools = good();
        // An error: reversible, with no undo.
        tools[0].1.effects = Some(Effects {
            reversible: Some(true),
            undo: None,
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
