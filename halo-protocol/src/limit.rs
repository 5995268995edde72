//! `limits.rates`: rate limits with a dimension, each saying whose budget a call spends (its
//! caller's, its tenant's, the tool's as a whole, or that of a value of one of its arguments).

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Rate;

/// Whose budget a call of a tool spends under a [`Limit`].
///
/// On the wire it is the limit's `per` (`"caller"`, `"tenant"`, `"tool"`, `"argument"`), with
/// the argument's name beside it for [`Argument`](Self::Argument).
///
/// ```
/// use halo_protocol::Dimension;
///
/// assert_eq!(Dimension::Tenant.as_str(), "tenant");
/// let sku = Dimension::Argument("sku".into());
/// assert_eq!((sku.as_str(), sku.argument()), ("argument", Some("sku")));
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
    /// A `per` this version does not know, as written: read from newer servers, so that the
    /// rest of their schema still parses. halo-axum refuses to start with one.
    Unknown(String),
}

impl Dimension {
    /// The `per` of the wire form: `caller`, `tenant`, `tool`, `argument`, or the unknown
    /// one as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Caller => "caller",
            Self::Tenant => "tenant",
            Self::Tool => "tool",
            Self::Argument(_) => "argument",
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

    /// The dimension a keyword of the text form names.
    fn keyword(word: &str) -> Option<Self> {
        match word {
            "caller" => Some(Self::Caller),
            "tenant" => Some(Self::Tenant),
            "tool" => Some(Self::Tool),
            _ => None,
        }
    }
}

/// A rate limit with its [`Dimension`]: at most `rate` calls per period for each caller,
/// tenant, argument value, or for the tool as a whole. An entry of `limits.rates`.
///
/// Its JSON form is `{"rate": "3/minute", "per": "argument", "argument": "sku"}` (`argument`
/// only with `per: argument`); its text form, as `#[halo(rates(...))]` takes it, is
/// `"3/minute per sku"`: `per caller`, `per tenant`, `per tool`, or `per` an argument's name
/// (`per argument NAME` for an argument named like one of those words).
///
/// ```
/// use halo_protocol::{Dimension, Limit, Rate};
///
/// let limit: Limit = "3/min per sku".parse().unwrap();
/// assert_eq!(limit, Limit::per_argument("3/minute".parse::<Rate>().unwrap(), "sku"));
/// assert_eq!(limit.to_string(), "3/minute per sku");
/// assert_eq!(
///     serde_json::to_value(&limit).unwrap(),
///     serde_json::json!({"rate": "3/minute", "per": "argument", "argument": "sku"})
/// );
/// let tenant: Limit = "1000/hour per tenant".parse().unwrap();
/// assert_eq!(tenant.per(), &Dimension::Tenant);
/// assert!("5/minute".parse::<Limit>().is_err(), "whose budget must be said");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Limit {
    rate: Rate,
    per: Dimension,
}

impl Limit {
    /// `rate` for each value of `per`; the other constructors name the dimension.
    ///
    /// ```
    /// use halo_protocol::{Dimension, Limit, Rate};
    ///
    /// let rate: Rate = "20/minute".parse().unwrap();
    /// assert_eq!(Limit::new(rate, Dimension::Tool), Limit::per_tool(rate));
    /// assert_eq!(Limit::per_tenant(rate).per(), &Dimension::Tenant);
    /// assert_eq!(Limit::per_caller(rate).rate(), rate);
    /// assert_eq!(Limit::per_argument(rate, "sku").per().argument(), Some("sku"));
    /// ```
    #[must_use]
    pub const fn new(rate: Rate, per: Dimension) -> Self {
        Self { rate, per }
    }

    /// `rate` for each caller (the principal, or the client's address when anonymous).
    #[must_use]
    pub const fn per_caller(rate: Rate) -> Self {
        Self::new(rate, Dimension::Caller)
    }

    /// `rate` for each tenant (a caller without a tenant counts as a tenant of its own).
    #[must_use]
    pub const fn per_tenant(rate: Rate) -> Self {
        Self::new(rate, Dimension::Tenant)
    }

    /// `rate` for the tool as a whole: all its callers together.
    #[must_use]
    pub const fn per_tool(rate: Rate) -> Self {
        Self::new(rate, Dimension::Tool)
    }

    /// `rate` for each value of the top-level argument `name`.
    #[must_use]
    pub fn per_argument(rate: Rate, name: impl Into<String>) -> Self {
        Self::new(rate, Dimension::Argument(name.into()))
    }

    /// The rate.
    #[must_use]
    pub const fn rate(&self) -> Rate {
        self.rate
    }

    /// Whose budget a call spends.
    #[must_use]
    pub const fn per(&self) -> &Dimension {
        &self.per
    }
}

/// Why a limit could not be read.
///
/// ```
/// use halo_protocol::Limit;
///
/// let error = "5/minute".parse::<Limit>().unwrap_err();
/// assert!(error.reason().starts_with("say whose budget it is"));
/// assert!(error.to_string().starts_with("invalid limit \"5/minute\""));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid limit {input:?}: {reason}")]
pub struct LimitParseError {
    input: String,
    reason: Cow<'static, str>,
}

impl LimitParseError {
    /// What is wrong, without the input.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl FromStr for Limit {
    type Err = LimitParseError;

    /// `"<rate> per <caller|tenant|tool|argument name>"`, or `per argument <name>`.
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let error = |reason: Cow<'static, str>| LimitParseError {
            input: input.chars().take(64).collect(),
            reason,
        };
        let words: Vec<&str> = input.split_whitespace().collect();
        let Some(at) = words.iter().position(|word| *word == "per") else {
            return Err(error(
                "say whose budget it is: \"N/unit per caller|tenant|tool|<argument>\", as in \
                 \"1000/hour per tenant\" or \"3/minute per sku\""
                    .into(),
            ));
        };
        let rate: Rate = words[..at]
            .concat()
            .parse()
            .map_err(|e: crate::RateParseError| error(e.reason().into()))?;
        let per = match words[at + 1..] {
            [word] => Dimension::keyword(word).unwrap_or_else(|| Dimension::Argument(word.into())),
            ["argument", name] => Dimension::Argument(name.into()),
            [] => {
                return Err(error(
                    "`per` needs caller, tenant, tool or an argument's name".into(),
                ));
            }
            _ => {
                return Err(error(
                    "after `per` comes one word: caller, tenant, tool or an argument's name \
                     (`per argument NAME` for an argument named like one of those)"
                        .into(),
                ));
            }
        };
        Ok(Self { rate, per })
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.per {
            Dimension::Argument(name)
                if Dimension::keyword(name).is_some() || name == "argument" =>
            {
                write!(f, "{} per argument {name}", self.rate)
            }
            Dimension::Argument(name) => write!(f, "{} per {name}", self.rate),
            other => write!(f, "{} per {}", self.rate, other.as_str()),
        }
    }
}

/// The JSON form.
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    rate: Rate,
    #[serde(borrow)]
    per: Cow<'a, str>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    argument: Option<Cow<'a, str>>,
}

impl Serialize for Limit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            rate: self.rate,
            per: Cow::Borrowed(self.per.as_str()),
            argument: self.per.argument().map(Cow::Borrowed),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let wire = Wire::deserialize(deserializer)?;
        let per = match (&*wire.per, wire.argument) {
            ("argument", Some(name)) if !name.trim().is_empty() => {
                Dimension::Argument(name.into_owned())
            }
            ("argument", _) => {
                return Err(D::Error::custom(
                    "a limit per argument names it: {\"per\": \"argument\", \"argument\": \"sku\"}",
                ));
            }
            (_, Some(_)) => {
                return Err(D::Error::custom(
                    "`argument` goes only with \"per\": \"argument\"",
                ));
            }
            (word, None) => {
                Dimension::keyword(word).unwrap_or_else(|| Dimension::Unknown(word.to_owned()))
            }
        };
        Ok(Self {
            rate: wire.rate,
            per,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_text_form_reads_and_writes_back() {
        for (input, canonical) in [
            ("1000/hour per tenant", "1000/hour per tenant"),
            ("20/min per tool", "20/minute per tool"),
            (" 5 / s  per caller", "5/second per caller"),
            ("3/minute per sku", "3/minute per sku"),
            ("3/minute per argument sku", "3/minute per sku"),
            ("3/minute per argument tool", "3/minute per argument tool"),
            (
                "3/minute per argument argument",
                "3/minute per argument argument",
            ),
        ] {
            let limit: Limit = input.parse().unwrap();
            assert_eq!(limit.to_string(), canonical, "{input}");
            assert_eq!(canonical.parse::<Limit>().unwrap(), limit);
        }
        assert_eq!(
            "3/minute per argument tool".parse::<Limit>().unwrap().per(),
            &Dimension::Argument("tool".into())
        );
    }

    #[test]
    fn bad_limits_say_why() {
        for (input, reason) in [
            ("5/minute", "whose budget"),
            ("5/minute per", "needs caller"),
            ("5/minute per a b", "one word"),
            ("0/minute per tool", "above zero"),
            ("5/eon per tool", "unit"),
        ] {
            let error = input.parse::<Limit>().unwrap_err();
            assert!(error.reason().contains(reason), "{input}: {error}");
        }
    }

    #[test]
    fn serde_round_trip() {
        let cases = [
            json!({"rate": "1000/hour", "per": "tenant"}),
            json!({"rate": "20/minute", "per": "tool"}),
            json!({"rate": "100/day", "per": "caller"}),
            json!({"rate": "3/minute", "per": "argument", "argument": "sku"}),
        ];
        for case in cases {
            let limit: Limit = serde_json::from_value(case.clone()).unwrap();
            assert_eq!(serde_json::to_value(&limit).unwrap(), case);
        }
        let canonical: Limit =
            serde_json::from_value(json!({"rate": "3/min", "per": "tool"})).unwrap();
        assert_eq!(canonical, Limit::per_tool("3/minute".parse().unwrap()));
    }

    #[test]
    fn the_json_form_is_checked_and_tolerates_new_dimensions() {
        for bad in [
            json!({"rate": "3/minute", "per": "argument"}),
            json!({"rate": "3/minute", "per": "argument", "argument": " "}),
            json!({"rate": "3/minute", "per": "tenant", "argument": "sku"}),
            json!({"rate": "3/eon", "per": "tool"}),
            json!({"per": "tool"}),
        ] {
            assert!(
                serde_json::from_value::<Limit>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        let newer: Limit =
            serde_json::from_value(json!({"rate": "3/minute", "per": "region"})).unwrap();
        assert_eq!(newer.per(), &Dimension::Unknown("region".into()));
        assert_eq!(
            serde_json::to_value(&newer).unwrap(),
            json!({"rate": "3/minute", "per": "region"})
        );
    }
}
