//! What the rules set on one tool, field by field, with the rule that set each.

use std::fmt::{self, Write as _};
use std::time::Duration;

use halo_protocol::{Circuit, Limit, Rate};

use super::risk::Risk;

/// Where a field's value came from: the rule (its index in `policies`), and the risk level
/// when the rule set the field through `risk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Origin {
    pub(crate) rule: usize,
    pub(crate) risk: Option<Risk>,
}

/// A field's value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Setting<T> {
    pub(crate) value: T,
    pub(crate) origin: Origin,
}

/// Whether calls send an idempotency key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Idempotency {
    /// Every call must send one.
    Required,
    /// A call that sends one is answered once for it.
    Optional,
    /// Keys are not read.
    Off,
}

impl Idempotency {
    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "required" => Some(Self::Required),
            "optional" => Some(Self::Optional),
            "off" => Some(Self::Off),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Required => "required",
            Self::Optional => "optional",
            Self::Off => "off",
        }
    }
}

/// Every field a policy can set on a tool, each with the rule that set it (none: the
/// upstream's own declaration, or nothing, stands).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Effective {
    pub(crate) exclude: Option<Setting<bool>>,
    pub(crate) rate: Option<Setting<Rate>>,
    pub(crate) rates: Option<Setting<Vec<Limit>>>,
    pub(crate) timeout: Option<Setting<Duration>>,
    pub(crate) circuit: Option<Setting<Circuit>>,
    pub(crate) approval: Option<Setting<bool>>,
    pub(crate) idempotency: Option<Setting<Idempotency>>,
    pub(crate) reversible: Option<Setting<bool>>,
    pub(crate) scopes: Option<Setting<Vec<String>>>,
    /// The callers it is open to, by id (`x-halo-callers`).
    pub(crate) callers: Option<Setting<CallerList>>,
    /// Limits that count the calls of every tool their policy applies to together, each
    /// named by its key: the merge refuses one that applies to more than one tool.
    pub(crate) pooled: Vec<String>,
}

/// The callers a tool is open to, by id, as globs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallerList {
    /// `None`: every identified caller not denied.
    pub(crate) allow: Option<Vec<String>>,
    /// Kept out whatever `allow` says.
    pub(crate) deny: Vec<String>,
}

impl fmt::Display for CallerList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.allow {
            Some(allow) => write!(f, "only {}", allow.join(", "))?,
            None => f.write_str("any caller")?,
        }
        if !self.deny.is_empty() {
            write!(f, " but {}", self.deny.join(", "))?;
        }
        Ok(())
    }
}

impl Effective {
    /// Whether the tool is left out.
    pub(crate) fn excluded(&self) -> bool {
        self.exclude.as_ref().is_some_and(|s| s.value)
    }

    /// The fields, one line each (`field: value  <- where`), for `halo gateway explain`;
    /// `describe` names a rule by its index.
    pub(crate) fn explain(&self, describe: &dyn Fn(usize) -> String) -> String {
        let mut out = String::new();
        let mut line = |field: &str, value: Option<(String, Origin)>| {
            let _ = match value {
                Some((value, origin)) => {
                    let via = origin
                        .risk
                        .map(|risk| format!(", through risk {}", risk.as_str()))
                        .unwrap_or_default();
                    writeln!(
                        out,
                        "  {field:<12} {value:<24} set by {}{via}",
                        describe(origin.rule)
                    )
                }
                None => writeln!(out, "  {field:<12} {:<24} no rule sets it", "-"),
            };
        };
        fn shown<T>(
            setting: &Option<Setting<T>>,
            show: impl Fn(&T) -> String,
        ) -> Option<(String, Origin)> {
            setting.as_ref().map(|s| (show(&s.value), s.origin))
        }
        line("exclude", shown(&self.exclude, ToString::to_string));
        line("rate", shown(&self.rate, ToString::to_string));
        line(
            "rates",
            shown(&self.rates, |rates| {
                let rates: Vec<String> = rates.iter().map(ToString::to_string).collect();
                rates.join(", ")
            }),
        );
        line(
            "timeout",
            shown(&self.timeout, |t| format!("{}ms", t.as_millis())),
        );
        line("circuit", shown(&self.circuit, ToString::to_string));
        line(
            "approval",
            shown(&self.approval, |required| {
                if *required { "required" } else { "none" }.to_owned()
            }),
        );
        line(
            "idempotency",
            shown(&self.idempotency, |i| i.as_str().to_owned()),
        );
        line("reversible", shown(&self.reversible, ToString::to_string));
        line(
            "visible_to",
            shown(&self.scopes, |scopes| match scopes.is_empty() {
                true => "any caller".to_owned(),
                false => format!("scopes {}", scopes.join(", ")),
            }),
        );
        line("callers", shown(&self.callers, ToString::to_string));
        out
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "policies[{}]", self.rule)
    }
}
