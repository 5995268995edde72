//! [`Dimension`]: whose budget a call spends, and what the text form makes of its
//! parts.

use std::borrow::Cow;
use std::fmt;

/// Whose budget a call of a tool spends under a [`Limit`](super::Limit).
///
/// On the wire it is the limit's `per` (`"caller"`, `"tenant"`, `"tool"`, `"argument"`,
/// `"combined"`), with the argument's name beside it for [`Argument`](Self::Argument) and the
/// parts beside it for [`Combined`](Self::Combined).
///
/// ```
/// use halo_protocol::Dimension;
///
/// assert_eq!(Dimension::Tenant.as_str(), "tenant");
/// let sku = Dimension::Argument("sku".into());
/// assert_eq!((sku.as_str(), sku.argument()), ("argument", Some("sku")));
/// let both = Dimension::combined(vec![Dimension::Tenant, sku]).unwrap();
/// assert_eq!(both.as_str(), "combined");
/// assert_eq!(both.parts().len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dimension {
    /// Each caller its own budget: the principal, or the client's address when anonymous
    /// (what `limits.rate` is).
    Caller,
    /// Each tenant its own budget, shared by the tenant's callers. A caller without a tenant
    /// counts as a tenant of its own.
    Tenant,
    /// One budget for the tool, all its callers together.
    Tool,
    /// One budget per value of the named top-level argument of the call (a path, query or
    /// header parameter, or a field of a JSON object body). A call without that argument is
    /// not counted against it.
    Argument(String),
    /// One budget per combination of the values of its parts, in order: per tenant and value
    /// of `campaign_id`, say. Its parts are [`Caller`](Self::Caller),
    /// [`Tenant`](Self::Tenant) and [`Argument`](Self::Argument), two or more, none twice;
    /// [`Dimension::combined`] checks that. A call that lacks one of its arguments is not
    /// counted against it.
    Combined(Vec<Self>),
    /// A `per` this version does not know, as written: read from newer servers, so that the
    /// rest of their schema still parses. halo-axum refuses to start with one.
    Unknown(String),
}

impl Dimension {
    /// The `per` of the wire form: `caller`, `tenant`, `tool`, `argument`, `combined`, or the
    /// unknown one as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Caller => "caller",
            Self::Tenant => "tenant",
            Self::Tool => "tool",
            Self::Argument(_) => "argument",
            Self::Combined(_) => "combined",
            Self::Unknown(per) => per,
        }
    }

    /// The argument's name, for [`Argument`](Self::Argument).
    #[must_use]
    pub fn argument(&self) -> Option<&str> {
        match self {
            Self::Argument(name) => Some(name),
            _ => None,
        }
    }

    /// A [`Combined`](Self::Combined) dimension of `parts`, in their order; `None` unless
    /// there are two parts or more, each [`Caller`](Self::Caller), [`Tenant`](Self::Tenant)
    /// or an [`Argument`](Self::Argument), none of them twice.
    ///
    /// ```
    /// use halo_protocol::Dimension;
    ///
    /// let campaign = Dimension::Argument("campaign_id".into());
    /// assert!(Dimension::combined(vec![Dimension::Tenant, campaign.clone()]).is_some());
    /// assert!(Dimension::combined(vec![Dimension::Tenant]).is_none(), "one part");
    /// assert!(Dimension::combined(vec![Dimension::Tool, campaign.clone()]).is_none());
    /// assert!(Dimension::combined(vec![campaign.clone(), campaign]).is_none());
    /// ```
    #[must_use]
    pub fn combined(parts: Vec<Self>) -> Option<Self> {
        check_parts(&parts).ok()?;
        Some(Self::Combined(parts))
    }

    /// The parts whose values a call's budget is counted by: those of a
    /// [`Combined`](Self::Combined) dimension, or the dimension itself otherwise.
    ///
    /// ```
    /// use halo_protocol::Dimension;
    ///
    /// assert_eq!(Dimension::Tenant.parts(), [Dimension::Tenant]);
    /// let sku = Dimension::Argument("sku".into());
    /// let both = Dimension::combined(vec![Dimension::Caller, sku.clone()]).unwrap();
    /// assert_eq!(both.parts(), [Dimension::Caller, sku]);
    /// ```
    #[must_use]
    pub fn parts(&self) -> &[Self] {
        match self {
            Self::Combined(parts) => parts,
            other => std::slice::from_ref(other),
        }
    }

    /// The dimension a keyword of the text form names.
    pub(super) fn keyword(word: &str) -> Option<Self> {
        match word {
            "caller" => Some(Self::Caller),
            "tenant" => Some(Self::Tenant),
            "tool" => Some(Self::Tool),
            _ => None,
        }
    }

    /// Whether the text form writes an argument named `name` as `argument NAME`, the word
    /// alone meaning something else.
    fn reserved(name: &str) -> bool {
        Self::keyword(name).is_some() || name == "argument" || name == "and"
    }

    /// The part as the text form writes it after `per` (or after `and`).
    pub(super) fn write_part(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Argument(name) if Self::reserved(name) => write!(f, "argument {name}"),
            Self::Argument(name) => f.write_str(name),
            other => f.write_str(other.as_str()),
        }
    }

    /// The part as an error message names it.
    fn describe(&self) -> String {
        match self {
            Self::Argument(name) => format!("argument `{name}`"),
            other => format!("`{}`", other.as_str()),
        }
    }
}

/// Why `parts` cannot make a [`Dimension::Combined`], if they cannot.
pub(super) fn check_parts(parts: &[Dimension]) -> Result<(), Cow<'static, str>> {
    if parts.len() < 2 {
        return Err(
            "a combined dimension has two parts or more, as in \"per tenant and sku\"".into(),
        );
    }
    for (at, part) in parts.iter().enumerate() {
        match part {
            Dimension::Caller | Dimension::Tenant | Dimension::Argument(_) => {}
            Dimension::Tool => {
                return Err(
                    "`tool` cannot be combined: a limit per tool is already one budget \
                     for all its calls; combine caller, tenant and arguments"
                        .into(),
                );
            }
            Dimension::Combined(_) => {
                return Err("a combined dimension cannot hold another: list all its parts".into());
            }
            Dimension::Unknown(per) => {
                return Err(format!(
                    "{per:?} cannot be combined: the parts are caller, tenant and arguments"
                )
                .into());
            }
        }
        if parts[..at].contains(part) {
            return Err(format!("{} is named twice", part.describe()).into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn combined_checks_its_parts() {
        let sku = || Dimension::Argument("sku".into());
        let combined = Dimension::combined(vec![Dimension::Caller, Dimension::Tenant, sku()]);
        let combined = combined.unwrap();
        assert_eq!(combined.as_str(), "combined");
        assert_eq!(combined.argument(), None);
        assert_eq!(
            combined.parts(),
            [Dimension::Caller, Dimension::Tenant, sku()]
        );
        assert_eq!(Dimension::Tool.parts(), [Dimension::Tool]);
        for bad in [
            vec![],
            vec![Dimension::Tenant],
            vec![Dimension::Tenant, Dimension::Tool],
            vec![Dimension::Tenant, Dimension::Unknown("region".into())],
            vec![Dimension::Tenant, combined],
            vec![sku(), Dimension::Caller, sku()],
            vec![Dimension::Caller, Dimension::Caller],
        ] {
            assert_eq!(Dimension::combined(bad.clone()), None, "{bad:?}");
        }
    }
}
