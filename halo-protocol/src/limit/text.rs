//! The text form of a [`Limit`], as `#[halo(rates(...))]` takes it: `"3/minute per sku"`,
//! `"100/50 seconds per tenant and campaign_id"`.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use super::dimension::check_parts;
use super::{Dimension, Limit};
use crate::Rate;

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

#[cfg(test)]
mod tests {

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
}
