//! The rules: each one's stable id, default level, summary and hint, as the command line
//! and reports name them. What each rule checks is in the file named after it.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

use super::Level;

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
    /// `missing-domain-tag`: no tag names the part of the API the tool belongs to, and none
    /// could: the tool has no tags, or only `read` and `write` (error).
    MissingDomainTag,
    /// `generic-domain-tag`: the tags that could name the tool's domain are all generic
    /// ones, such as `admin` (warning: utoipa tags an operation with its handler's module
    /// name, so a plain app can have it).
    GenericDomainTag,
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
    /// `unknown-rate-argument`: a rate limit per argument value (`limits.rates`, alone or
    /// among the parts of a combination) names an argument the tool does not take (error).
    UnknownRateArgument,
    /// `duplicate-name`: two tools share a name (error).
    DuplicateName,
    /// `invalid-name`: the name is not `[A-Za-z0-9_-]{1,64}`, so bridges rename it (error).
    InvalidName,
    /// `schema-budget`: the tool's schema costs a model more tokens than the schema budget
    /// ([`Linter::schema_budget`](super::Linter::schema_budget)) (warning).
    SchemaBudget,
    /// `manifest-budget`: the manifest's tool list costs a model more tokens than the
    /// manifest budget ([`Linter::manifest_budget`](super::Linter::manifest_budget)) (warning).
    ManifestBudget,
}

impl Rule {
    /// Every rule, in the order findings of one tool are reported.
    pub const ALL: [Self; 20] = [
        Self::DuplicateName,
        Self::InvalidName,
        Self::MissingDescription,
        Self::MissingWhy,
        Self::MissingDomainTag,
        Self::GenericDomainTag,
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
        Self::UnknownRateArgument,
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
            Self::GenericDomainTag => (
                "generic-domain-tag",
                Warn,
                "a tool's domain tag is not a generic word (`admin`, `delete`, `async`, \
                 `expensive`, `realtime`), as a module's name can be",
                "tag the operation with the part of the API it belongs to, e.g. tags = \
                 [\"users\", \"read\"] (utoipa tags an untagged handler with its module's name: \
                 rename the module, or give the handler `tags`)",
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
            Self::UnknownRateArgument => (
                "unknown-rate-argument",
                Deny,
                "a rate limit per argument value names an argument the tool takes",
                "count the limit per an argument of the tool's `input` (halo-axum: \
                 #[halo(rates(\"3/minute per sku\"))] or Describe::limit(Limit::per_argument(..))), \
                 or remove it",
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

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::Rule;

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
}
