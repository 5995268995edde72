//! Policies: rules that match tools and set the HALO declarations the layer enforces on them.
//!
//! A rule matches by upstream, tool name, tags and methods; it sets a rate, rates with
//! dimensions, a timeout, a circuit, approval, idempotency, effects, a risk level and who may
//! see the tool. For each field, the most specific matching rule that sets it wins (the one
//! with the most criteria given: an upstream other than `*`, tool globs other than `*`,
//! tags, methods); among equally specific rules, the later. The gateway writes the result
//! into the tool's `x-halo-*` extensions and security, so the layer enforces it and the
//! model reads it in the schema; `halo gateway explain` shows which rule set each field.

//!
//! `policies` may instead be an MCP Tool Harness policy document ([`harness`]), whose
//! single most specific policy applies to each tool, mapped onto the same declarations.

mod effective;
mod harness;
mod risk;
mod rule;

pub(crate) use self::effective::{Effective, Idempotency};
#[cfg(test)]
pub(crate) use self::effective::{Origin, Setting};
pub(crate) use self::harness::Harness;
pub(crate) use self::rule::{Candidate, Rules};

/// The configuration's policies: the gateway's own rules, or a Harness document.
#[derive(Debug)]
pub(crate) enum Policies {
    Rules(Rules),
    Harness(Harness),
}

impl Default for Policies {
    fn default() -> Self {
        Self::Rules(Rules::default())
    }
}

impl Policies {
    /// What the policies set on `tool`.
    pub(crate) fn effective(&self, tool: Candidate<'_>) -> Effective {
        match self {
            Self::Rules(rules) => rules.effective(tool),
            Self::Harness(harness) => harness.effective(tool),
        }
    }

    /// The rule or policy at `index`, in a line, for `explain`.
    pub(crate) fn describe(&self, index: usize) -> String {
        match self {
            Self::Rules(rules) => rules.describe(index),
            Self::Harness(harness) => harness.describe(index),
        }
    }

    /// Whether some policy holds calls for approval.
    pub(crate) fn any_approval(&self) -> bool {
        match self {
            Self::Rules(rules) => rules.any_approval(),
            Self::Harness(harness) => harness.any_approval(),
        }
    }

    /// What needs callers told apart (`visible_to`, `allowed_agents`), if anything does.
    pub(crate) fn needs_identity(&self) -> Option<&'static str> {
        match self {
            Self::Rules(rules) if rules.any_scopes() => Some("`visible_to`"),
            Self::Harness(harness) if harness.any_callers() => {
                Some("`allowed_agents` (or `denied_agents`)")
            }
            _ => None,
        }
    }
}
