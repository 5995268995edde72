//! `limits.rates`: rate limits with a dimension, each saying whose budget a call spends (its
//! caller's, its tenant's, the tool's as a whole, or that of a value of one of its arguments).

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Rate;

/// Whose budget a call of a tool spends under a [`Limit`].
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
    fn keyword(word: &str) -> Option<Self> {
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
    fn write_part(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
fn check_parts(parts: &[Dimension]) -> Result<(), Cow<'static, str>> {
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

/// A rate limit with its [`Dimension`]: at most `rate` calls per window for each caller,
/// tenant, argument value, combination of those, or for the tool as a whole. An entry of
/// `limits.rates`.
///
/// Its JSON form is `{"rate": "3/minute", "per": "argument", "argument": "sku"}` (`argument`
/// only with `per: argument`), and for a combination `{"rate": "100/50 seconds", "per":
/// "combined", "of": [{"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}]}`
/// (`of` only with `per: combined`). Its text form, as `#[halo(rates(...))]` takes it, is
/// `"3/minute per sku"`: `per caller`, `per tenant`, `per tool`, or `per` an argument's name
/// (`per argument NAME` for an argument named like one of those words, `argument` or `and`);
/// parts joined by `and` make a combination (`"100/50 seconds per tenant and campaign_id"`).
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
///
/// let campaign: Limit = "100/50s per tenant and campaign_id".parse().unwrap();
/// assert_eq!(campaign.to_string(), "100/50 seconds per tenant and campaign_id");
/// assert_eq!(
///     serde_json::to_value(&campaign).unwrap(),
///     serde_json::json!({"rate": "100/50 seconds", "per": "combined", "of": [
///         {"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}
///     ]})
/// );
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

/// The dimension the words after `per` name: one part, or parts joined by `and`.
fn parse_dimension(words: &[&str]) -> Result<Dimension, Cow<'static, str>> {
    if words.is_empty() {
        return Err("`per` needs caller, tenant, tool or an argument's name".into());
    }
    let mut parts = Vec::new();
    let mut rest = words;
    loop {
        let (part, after) = match rest {
            ["argument", name, after @ ..] if after.first().is_none_or(|w| *w == "and") => {
                (Dimension::Argument((*name).into()), after)
            }
            [word, after @ ..] => (
                Dimension::keyword(word).unwrap_or_else(|| Dimension::Argument((*word).into())),
                after,
            ),
            [] => {
                return Err(
                    "`and` must be followed by another part: caller, tenant or an \
                     argument's name, as in \"per tenant and sku\""
                        .into(),
                );
            }
        };
        parts.push(part);
        match after {
            [] => break,
            ["and", next @ ..] => rest = next,
            _ => {
                return Err(
                    "after `per` comes one word: caller, tenant, tool or an argument's \
                     name (`per argument NAME` for an argument named like one of those), \
                     or several joined by `and`"
                        .into(),
                );
            }
        }
    }
    if parts.len() == 1 {
        return Ok(parts.remove(0));
    }
    check_parts(&parts)?;
    Ok(Dimension::Combined(parts))
}

impl FromStr for Limit {
    type Err = LimitParseError;

    /// `"<rate> per <part>"`, where a part is `caller`, `tenant`, `tool`, an argument's name
    /// or `argument <name>`; or parts joined by `and`.
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
        let per = parse_dimension(&words[at + 1..]).map_err(error)?;
        Ok(Self { rate, per })
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} per ", self.rate)?;
        for (at, part) in self.per.parts().iter().enumerate() {
            if at > 0 {
                f.write_str(" and ")?;
            }
            part.write_part(f)?;
        }
        Ok(())
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
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    of: Option<Vec<Part<'a>>>,
}

/// A part of a combined dimension in the JSON form.
#[derive(Serialize, Deserialize)]
struct Part<'a> {
    #[serde(borrow)]
    per: Cow<'a, str>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    argument: Option<Cow<'a, str>>,
}

impl<'a> Part<'a> {
    fn of(dimension: &'a Dimension) -> Self {
        Self {
            per: Cow::Borrowed(dimension.as_str()),
            argument: dimension.argument().map(Cow::Borrowed),
        }
    }
}

/// The dimension of a `per` and its `argument`, but for `combined`.
fn single(per: &str, argument: Option<Cow<'_, str>>) -> Result<Dimension, &'static str> {
    match (per, argument) {
        ("argument", Some(name)) if !name.trim().is_empty() => {
            Ok(Dimension::Argument(name.into_owned()))
        }
        ("argument", _) => {
            Err("a limit per argument names it: {\"per\": \"argument\", \"argument\": \"sku\"}")
        }
        (_, Some(_)) => Err("`argument` goes only with \"per\": \"argument\""),
        (word, None) => {
            Ok(Dimension::keyword(word).unwrap_or_else(|| Dimension::Unknown(word.to_owned())))
        }
    }
}

impl Serialize for Limit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let of = match &self.per {
            Dimension::Combined(parts) => Some(parts.iter().map(Part::of).collect()),
            _ => None,
        };
        Wire {
            rate: self.rate,
            per: Cow::Borrowed(self.per.as_str()),
            argument: self.per.argument().map(Cow::Borrowed),
            of,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let wire = Wire::deserialize(deserializer)?;
        let per = match (&*wire.per, wire.of) {
            ("combined", _) if wire.argument.is_some() => {
                return Err(D::Error::custom(
                    "`argument` goes only with \"per\": \"argument\"; a combined limit's \
                     arguments are among its parts in `of`",
                ));
            }
            ("combined", None) => {
                return Err(D::Error::custom(
                    "a combined limit lists its parts in `of`: {\"per\": \"combined\", \"of\": \
                     [{\"per\": \"tenant\"}, {\"per\": \"argument\", \"argument\": \"sku\"}]}",
                ));
            }
            ("combined", Some(of)) => {
                let parts = of
                    .into_iter()
                    .map(|part| {
                        if part.per == "combined" {
                            return Err("a combined dimension cannot hold another: list all \
                                        its parts in one `of`");
                        }
                        single(&part.per, part.argument)
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(D::Error::custom)?;
                check_parts(&parts).map_err(D::Error::custom)?;
                Dimension::Combined(parts)
            }
            (_, Some(_)) => {
                return Err(D::Error::custom(
                    "`of` goes only with \"per\": \"combined\"",
                ));
            }
            (per, None) => single(per, wire.argument).map_err(D::Error::custom)?,
        };
        Ok(Self {
            rate: wire.rate,
            per,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

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
            ("3/minute per argument and", "3/minute per argument and"),
            ("3/minute per and", "3/minute per argument and"),
            ("100/50s per tenant", "100/50 seconds per tenant"),
            ("1/100 s per tool", "1/100 seconds per tool"),
            ("10/3333ms per caller", "10/3333 milliseconds per caller"),
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
            ("5/minute per tenant sku", "several joined by `and`"),
            ("5/0s per tool", "span"),
            ("0/minute per tool", "above zero"),
            ("5/eon per tool", "unit"),
        ] {
            let error = input.parse::<Limit>().unwrap_err();
            assert!(error.reason().contains(reason), "{input}: {error}");
        }
    }

    #[test]
    fn combinations_read_and_write_back() {
        let campaign = Dimension::Argument("campaign_id".into());
        for (input, canonical, parts) in [
            (
                "100/50 seconds per tenant and campaign_id",
                "100/50 seconds per tenant and campaign_id",
                vec![Dimension::Tenant, campaign.clone()],
            ),
            (
                "100/50s  per  tenant and argument campaign_id",
                "100/50 seconds per tenant and campaign_id",
                vec![Dimension::Tenant, campaign.clone()],
            ),
            (
                "2/min per caller and sku and region",
                "2/minute per caller and sku and region",
                vec![
                    Dimension::Caller,
                    Dimension::Argument("sku".into()),
                    Dimension::Argument("region".into()),
                ],
            ),
            (
                "1/s per tenant and argument tool",
                "1/second per tenant and argument tool",
                vec![Dimension::Tenant, Dimension::Argument("tool".into())],
            ),
            (
                "1/s per campaign_id and argument and and caller",
                "1/second per campaign_id and argument and and caller",
                vec![
                    campaign,
                    Dimension::Argument("and".into()),
                    Dimension::Caller,
                ],
            ),
            (
                "1/s per argument and sku",
                "1/second per argument argument and sku",
                vec![
                    Dimension::Argument("argument".into()),
                    Dimension::Argument("sku".into()),
                ],
            ),
        ] {
            let limit: Limit = input.parse().unwrap();
            assert_eq!(limit.per(), &Dimension::Combined(parts), "{input}");
            assert_eq!(limit.to_string(), canonical, "{input}");
            assert_eq!(canonical.parse::<Limit>().unwrap(), limit, "{canonical}");
        }
    }

    #[test]
    fn bad_combinations_say_why() {
        for (input, reason) in [
            ("5/minute per tenant and", "`and` must be followed"),
            ("5/minute per tenant and sku and", "`and` must be followed"),
            ("5/minute per tool and sku", "`tool` cannot be combined"),
            ("5/minute per sku and tool", "`tool` cannot be combined"),
            ("5/minute per tenant and tenant", "`tenant` is named twice"),
            (
                "5/minute per sku and caller and argument sku",
                "argument `sku` is named twice",
            ),
            (
                "5/minute per tenant and sku region",
                "several joined by `and`",
            ),
        ] {
            let error = input.parse::<Limit>().unwrap_err();
            assert!(error.reason().contains(reason), "{input}: {error}");
        }
    }

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

    #[test]
    fn serde_round_trip() {
        let cases = [
            json!({"rate": "1000/hour", "per": "tenant"}),
            json!({"rate": "20/minute", "per": "tool"}),
            json!({"rate": "100/day", "per": "caller"}),
            json!({"rate": "3/minute", "per": "argument", "argument": "sku"}),
            json!({"rate": "100/50 seconds", "per": "tenant"}),
            json!({"rate": "100/50 seconds", "per": "combined", "of": [
                {"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}
            ]}),
            json!({"rate": "2/minute", "per": "combined", "of": [
                {"per": "argument", "argument": "sku"}, {"per": "caller"},
                {"per": "argument", "argument": "region"}
            ]}),
        ];
        for case in cases {
            let limit: Limit = serde_json::from_value(case.clone()).unwrap();
            assert_eq!(serde_json::to_value(&limit).unwrap(), case);
        }
        let canonical: Limit =
            serde_json::from_value(json!({"rate": "3/min", "per": "tool"})).unwrap();
        assert_eq!(canonical, Limit::per_tool("3/minute".parse().unwrap()));
        let text: Limit = "100/50s per tenant and campaign_id".parse().unwrap();
        let json: Limit = serde_json::from_value(json!({"rate": "100/50s", "per": "combined",
            "of": [{"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}]}))
        .unwrap();
        assert_eq!(text, json);
        let borrowed = r#"{"rate":"1/s","per":"combined",
            "of":[{"per":"caller"},{"per":"argument","argument":"sku"}]}"#;
        let limit: Limit = serde_json::from_str(borrowed).unwrap();
        assert_eq!(limit.to_string(), "1/second per caller and sku");
    }

    #[test]
    fn the_json_form_of_a_combination_is_checked() {
        let of = |parts: Value| json!({"rate": "1/s", "per": "combined", "of": parts});
        let (tenant, caller) = (json!({"per": "tenant"}), json!({"per": "caller"}));
        for (bad, says) in [
            (
                json!({"rate": "1/s", "per": "combined"}),
                "lists its parts in `of`",
            ),
            (of(json!([tenant])), "two parts or more"),
            (of(json!([])), "two parts or more"),
            (
                of(json!([tenant, {"per": "tool"}])),
                "`tool` cannot be combined",
            ),
            (of(json!([tenant, tenant])), "named twice"),
            (
                of(json!([tenant, {"per": "region"}])),
                "\"region\" cannot be combined",
            ),
            (of(json!([tenant, {"per": "argument"}])), "names it"),
            (
                of(json!([tenant, of(json!([caller, tenant]))])),
                "cannot hold another",
            ),
            (
                json!({"rate": "1/s", "per": "combined", "argument": "sku",
                    "of": [tenant, caller]}),
                "`argument` goes only with",
            ),
            (
                json!({"rate": "1/s", "per": "tenant", "of": [tenant, caller]}),
                "`of` goes only with",
            ),
            (of(tenant), "invalid type"),
        ] {
            let error = serde_json::from_value::<Limit>(bad.clone()).unwrap_err();
            assert!(error.to_string().contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn an_older_reader_sees_a_combination_as_an_unknown_dimension() {
        /// The JSON form as this crate read it before `combined`.
        #[derive(Deserialize)]
        struct Older {
            per: String,
            argument: Option<String>,
        }
        let older: Older = serde_json::from_value(json!({"rate": "1/s", "per": "combined",
            "of": [{"per": "tenant"}, {"per": "caller"}]}))
        .unwrap();
        assert_eq!((older.per.as_str(), older.argument), ("combined", None));
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
