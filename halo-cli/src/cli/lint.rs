//! `halo lint`'s command line: the API to lint (its URL, or an OpenAPI document with
//! `--openapi`), the level given to each rule (`--allow`, `--warn`, `--deny`, with `warnings`
//! for every rule at warn level), and the list of rules its `--help` ends with.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{ArgGroup, Args};
use halo_client::protocol::lint::{Level, Rule};

/// The API to lint and the level of each rule (`lint`).
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("api").required(true).args(["url", "openapi"])))]
pub(crate) struct LintArgs {
    /// The API's base URL (or `--openapi FILE`).
    pub(crate) url: Option<String>,
    /// Lint an OpenAPI 3.0 or 3.1 document (JSON) instead of a running API: the tools a
    /// halo-rs server built from it would serve to a caller that sees every tool.
    #[arg(long, value_name = "FILE", conflicts_with = "url")]
    pub(crate) openapi: Option<PathBuf>,
    /// Only tools with any of these tags.
    #[arg(long, value_delimiter = ',', value_name = "TAG,...")]
    pub(crate) tags: Vec<String>,
    /// Do not check these rules (`warnings`: report no warnings).
    #[arg(long, short = 'A', value_name = "RULE", value_delimiter = ',', value_parser = lint_rule)]
    pub(crate) allow: Vec<LintRule>,
    /// Report these rules' findings as warnings.
    #[arg(long, short = 'W', value_name = "RULE", value_delimiter = ',', value_parser = lint_rule)]
    pub(crate) warn: Vec<LintRule>,
    /// Report these rules' findings as errors (`warnings`: every warning fails).
    #[arg(long, short = 'D', value_name = "RULE", value_delimiter = ',', value_parser = lint_rule)]
    pub(crate) deny: Vec<LintRule>,
    /// The most one tool's schema may cost a model, in estimated tokens (`schema-budget`).
    #[arg(long, value_name = "TOKENS", default_value = "4000")]
    pub(crate) schema_budget: usize,
    /// The most the manifest's tool list may cost a model, in estimated tokens
    /// (`manifest-budget`).
    #[arg(long, value_name = "TOKENS", default_value = "8000")]
    pub(crate) manifest_budget: usize,
}

/// A rule named on the command line of `lint`, or `warnings` (every rule at warn level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LintRule {
    /// Every rule whose level is warn.
    Warnings,
    /// One rule.
    Rule(Rule),
}

impl std::fmt::Display for LintRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Warnings => f.write_str("warnings"),
            Self::Rule(rule) => rule.fmt(f),
        }
    }
}

/// `--allow`, `--warn` and `--deny` values: a rule id, or `warnings` for every rule at warn
/// level.
fn lint_rule(text: &str) -> Result<LintRule, String> {
    if text == "warnings" {
        return Ok(LintRule::Warnings);
    }
    text.parse::<Rule>()
        .map(LintRule::Rule)
        .map_err(|e| e.to_string())
}

/// The rules, for `halo lint --help`.
pub(super) fn rules_help() -> String {
    let mut out = "Rules (default level, id: what it checks):\n".to_owned();
    for rule in Rule::ALL {
        let level = match rule.default_level() {
            Level::Deny => "error",
            Level::Warn => "warn",
            _ => "allow",
        };
        let _ = writeln!(out, "  {level:<5}  {}: {}", rule.id(), rule.summary());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_values() {
        assert_eq!(lint_rule("warnings"), Ok(LintRule::Warnings));
        assert_eq!(
            lint_rule("missing-why"),
            Ok(LintRule::Rule(Rule::MissingWhy))
        );
        let err = lint_rule("missing-wyh").unwrap_err();
        assert!(err.contains("missing-why,"), "{err}");
    }

    #[test]
    fn every_rule_is_in_the_help() {
        let help = rules_help();
        for rule in Rule::ALL {
            assert!(help.contains(rule.id()), "{help}");
        }
    }
}
