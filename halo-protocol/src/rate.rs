//! `limits.rate`: `N/second|minute|hour|day`.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A declared rate limit: at most `count` calls per `period`.
///
/// Parses `5/minute` and the usual abbreviations (`5/min`, `100/h`, `10/s`, `1/days`), and
/// always writes the canonical form (`5/minute`).
///
/// ```
/// use halo_protocol::{Period, Rate};
///
/// let rate: Rate = "100/hr".parse().unwrap();
/// assert_eq!(rate.count().get(), 100);
/// assert_eq!(rate.period(), Period::Hour);
/// assert_eq!(rate.to_string(), "100/hour");
/// assert!("0/minute".parse::<Rate>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    count: NonZeroU32,
    period: Period,
}

/// The period of a [`Rate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Period {
    /// One second.
    Second,
    /// One minute.
    Minute,
    /// One hour.
    Hour,
    /// One day.
    Day,
}

impl Period {
    /// The period's length.
    #[must_use]
    pub const fn duration(self) -> Duration {
        match self {
            Self::Second => Duration::from_secs(1),
            Self::Minute => Duration::from_secs(60),
            Self::Hour => Duration::from_secs(3600),
            Self::Day => Duration::from_secs(86_400),
        }
    }

    /// The canonical name (`second`, `minute`, `hour`, `day`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::Day => "day",
        }
    }

    fn parse(unit: &str) -> Option<Self> {
        Some(match unit.to_ascii_lowercase().as_str() {
            "s" | "sec" | "secs" | "second" | "seconds" => Self::Second,
            "m" | "min" | "mins" | "minute" | "minutes" => Self::Minute,
            "h" | "hr" | "hrs" | "hour" | "hours" => Self::Hour,
            "d" | "day" | "days" => Self::Day,
            _ => return None,
        })
    }
}

impl Rate {
    /// A rate of `count` calls per `period`.
    #[must_use]
    pub const fn new(count: NonZeroU32, period: Period) -> Self {
        Self { count, period }
    }

    /// How many calls the period allows.
    #[must_use]
    pub const fn count(&self) -> NonZeroU32 {
        self.count
    }

    /// The period.
    #[must_use]
    pub const fn period(&self) -> Period {
        self.period
    }
}

/// Why a rate string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid rate {input:?}: {reason}")]
pub struct RateParseError {
    input: String,
    reason: &'static str,
}

impl RateParseError {
    /// What is wrong, without the input.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

impl FromStr for Rate {
    type Err = RateParseError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let error = |reason| RateParseError {
            input: input.chars().take(64).collect(),
            reason,
        };
        let (count, unit) = input
            .split_once('/')
            .ok_or_else(|| error("a rate looks like N/unit, as in 5/minute or 100/hour"))?;
        let count = Some(count.trim())
            .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<NonZeroU32>().ok())
            .ok_or_else(|| error("the count must be a whole number above zero, as in 5/minute"))?;
        let period = Period::parse(unit.trim()).ok_or_else(|| {
            error("the unit must be second, minute, hour or day (or s, sec, m, min, h, hr, d, and plurals)")
        })?;
        Ok(Self { count, period })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.count, self.period.as_str())
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_canonicalises() {
        for (input, canonical) in [
            ("5/minute", "5/minute"),
            ("5/min", "5/minute"),
            ("10/s", "10/second"),
            (" 7 / Hours ", "7/hour"),
            ("1/d", "1/day"),
        ] {
            assert_eq!(input.parse::<Rate>().unwrap().to_string(), canonical);
        }
    }

    #[test]
    fn rejects_bad_rates() {
        for input in [
            "",
            "5",
            "/minute",
            "0/minute",
            "-1/minute",
            "5/fortnight",
            "x/s",
        ] {
            assert!(input.parse::<Rate>().is_err(), "{input}");
        }
    }

    #[test]
    fn serde_round_trip() {
        let rate: Rate = serde_json::from_str("\"100/hour\"").unwrap();
        assert_eq!(serde_json::to_string(&rate).unwrap(), "\"100/hour\"");
        assert!(serde_json::from_str::<Rate>("\"100/eon\"").is_err());
    }
}
