//! `limits.rate`: `N/unit` or `N/K units` (`5/minute`, `100/50 seconds`, `10/3333ms`).

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A declared rate limit: at most `count` calls per window of `span` periods.
///
/// Parses `5/minute` and the usual abbreviations (`5/min`, `100/h`, `10/s`, `1/days`,
/// `250/ms`), with an optional span before the unit (`100/50s`: 100 calls per 50 seconds),
/// ignoring whitespace. It writes the canonical form: `5/minute` for a span of one, and
/// `100/50 seconds` (the span, then the plural unit) for a longer one.
///
/// ```
/// use std::time::Duration;
///
/// use halo_protocol::{Period, Rate};
///
/// let rate: Rate = "100/hr".parse().unwrap();
/// assert_eq!(rate.count().get(), 100);
/// assert_eq!(rate.period(), Period::Hour);
/// assert_eq!(rate.to_string(), "100/hour");
/// assert!("0/minute".parse::<Rate>().is_err());
///
/// let spanned: Rate = "100 / 50s".parse().unwrap();
/// assert_eq!((spanned.span().get(), spanned.period()), (50, Period::Second));
/// assert_eq!(spanned.window(), Duration::from_secs(50));
/// assert_eq!(spanned.to_string(), "100/50 seconds");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    count: NonZeroU32,
    span: NonZeroU32,
    period: Period,
}

/// The unit of a [`Rate`]'s window.
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
    /// One millisecond.
    Millisecond,
}

impl Period {
    /// Every period, the longest first: the order [`Rate::over`] tries them in.
    const LONGEST_FIRST: [Self; 5] = [
        Self::Day,
        Self::Hour,
        Self::Minute,
        Self::Second,
        Self::Millisecond,
    ];

    /// The period's length.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use halo_protocol::Period;
    ///
    /// assert_eq!(Period::Minute.duration(), Duration::from_secs(60));
    /// assert_eq!(Period::Millisecond.duration(), Duration::from_millis(1));
    /// ```
    #[must_use]
    pub const fn duration(self) -> Duration {
        match self {
            Self::Millisecond => Duration::from_millis(1),
            Self::Second => Duration::from_secs(1),
            Self::Minute => Duration::from_secs(60),
            Self::Hour => Duration::from_secs(3600),
            Self::Day => Duration::from_secs(86_400),
        }
    }

    /// The canonical name (`millisecond`, `second`, `minute`, `hour`, `day`).
    ///
    /// ```
    /// use halo_protocol::Period;
    ///
    /// assert_eq!(Period::Millisecond.as_str(), "millisecond");
    /// ```
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Millisecond => "millisecond",
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::Day => "day",
        }
    }

    /// The canonical name in the plural, as a span above one writes it.
    const fn plural(self) -> &'static str {
        match self {
            Self::Millisecond => "milliseconds",
            Self::Second => "seconds",
            Self::Minute => "minutes",
            Self::Hour => "hours",
            Self::Day => "days",
        }
    }

    fn parse(unit: &str) -> Option<Self> {
        Some(match unit.to_ascii_lowercase().as_str() {
            "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => Self::Millisecond,
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
    ///
    /// ```
    /// use std::num::NonZeroU32;
    ///
    /// use halo_protocol::{Period, Rate};
    ///
    /// let rate = Rate::new(NonZeroU32::new(5).unwrap(), Period::Minute);
    /// assert_eq!(rate.to_string(), "5/minute");
    /// ```
    #[must_use]
    pub const fn new(count: NonZeroU32, period: Period) -> Self {
        Self::spanning(count, NonZeroU32::MIN, period)
    }

    /// A rate of `count` calls per `span` periods: `Rate::spanning(100, 50, Second)` is 100
    /// calls per 50 seconds.
    ///
    /// ```
    /// use std::num::NonZeroU32;
    /// use std::time::Duration;
    ///
    /// use halo_protocol::{Period, Rate};
    ///
    /// let (count, span) = (NonZeroU32::new(100).unwrap(), NonZeroU32::new(50).unwrap());
    /// let rate = Rate::spanning(count, span, Period::Second);
    /// assert_eq!(rate.window(), Duration::from_secs(50));
    /// assert_eq!(rate.to_string(), "100/50 seconds");
    /// ```
    #[must_use]
    pub const fn spanning(count: NonZeroU32, span: NonZeroU32, period: Period) -> Self {
        Self {
            count,
            span,
            period,
        }
    }

    /// The rate of `count` calls per `window`, in the longest unit that divides the window
    /// exactly (day, hour, minute, second, millisecond); `None` when the window is zero, is
    /// not a whole number of milliseconds, or would need a span above `u32::MAX`.
    ///
    /// ```
    /// use std::num::NonZeroU32;
    /// use std::time::Duration;
    ///
    /// use halo_protocol::Rate;
    ///
    /// let count = NonZeroU32::new(100).unwrap();
    /// let rate = |window| Rate::over(count, window).map(|rate| rate.to_string());
    /// assert_eq!(rate(Duration::from_secs(50)).as_deref(), Some("100/50 seconds"));
    /// assert_eq!(rate(Duration::from_secs(7200)).as_deref(), Some("100/2 hours"));
    /// assert_eq!(rate(Duration::from_secs(60)).as_deref(), Some("100/minute"));
    /// assert_eq!(rate(Duration::from_millis(750)).as_deref(), Some("100/750 milliseconds"));
    /// assert_eq!(rate(Duration::ZERO), None);
    /// assert_eq!(rate(Duration::from_micros(1500)), None);
    /// ```
    #[must_use]
    pub fn over(count: NonZeroU32, window: Duration) -> Option<Self> {
        if !window.subsec_nanos().is_multiple_of(1_000_000) {
            return None;
        }
        let millis = window.as_millis();
        Period::LONGEST_FIRST.into_iter().find_map(|period| {
            let unit = period.duration().as_millis();
            if !millis.is_multiple_of(unit) {
                return None;
            }
            let span = u32::try_from(millis / unit)
                .ok()
                .and_then(NonZeroU32::new)?;
            Some(Self::spanning(count, span, period))
        })
    }

    /// How many calls the window allows.
    #[must_use]
    pub const fn count(&self) -> NonZeroU32 {
        self.count
    }

    /// The unit of the window.
    #[must_use]
    pub const fn period(&self) -> Period {
        self.period
    }

    /// How many periods the window lasts (1 unless written, as in `100/50s`).
    ///
    /// ```
    /// use halo_protocol::Rate;
    ///
    /// assert_eq!("5/minute".parse::<Rate>().unwrap().span().get(), 1);
    /// assert_eq!("5/2h".parse::<Rate>().unwrap().span().get(), 2);
    /// ```
    #[must_use]
    pub const fn span(&self) -> NonZeroU32 {
        self.span
    }

    /// The window the count is allowed in: the span times the period.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use halo_protocol::Rate;
    ///
    /// let window = |text: &str| text.parse::<Rate>().unwrap().window();
    /// assert_eq!(window("5/minute"), Duration::from_secs(60));
    /// assert_eq!(window("10/3333ms"), Duration::from_millis(3333));
    /// ```
    #[must_use]
    pub const fn window(&self) -> Duration {
        // At most u32::MAX days: far below Duration::MAX.
        self.period.duration().saturating_mul(self.span.get())
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
    ///
    /// ```
    /// use halo_protocol::Rate;
    ///
    /// let error = "5/0s".parse::<Rate>().unwrap_err();
    /// assert!(error.reason().contains("span"));
    /// ```
    #[must_use]
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

/// A whole number above zero written in ASCII digits only.
fn positive(digits: &str) -> Option<NonZeroU32> {
    Some(digits)
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|digits| digits.parse::<NonZeroU32>().ok())
}

impl FromStr for Rate {
    type Err = RateParseError;

    /// `N/unit` or `N/Kunit`, whitespace anywhere ignored.
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let error = |reason| RateParseError {
            input: input.chars().take(64).collect(),
            reason,
        };
        let compact: String = input.chars().filter(|c| !c.is_whitespace()).collect();
        let (count, window) = compact.split_once('/').ok_or_else(|| {
            error("a rate looks like N/unit or N/K units, as in 5/minute or 100/50 seconds")
        })?;
        let count = positive(count)
            .ok_or_else(|| error("the count must be a whole number above zero, as in 5/minute"))?;
        let unit_at = window
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(window.len());
        let (span, unit) = window.split_at(unit_at);
        let span = if span.is_empty() {
            NonZeroU32::MIN
        } else {
            positive(span).ok_or_else(|| {
                error(
                    "the span before the unit must be a whole number from 1 to 4294967295, as \
                     in 100/50 seconds",
                )
            })?
        };
        let period = Period::parse(unit).ok_or_else(|| {
            error(
                "the unit must be millisecond, second, minute, hour or day (or ms, msec, s, \
                 sec, m, min, h, hr, d, and plurals)",
            )
        })?;
        Ok(Self::spanning(count, span, period))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.span == NonZeroU32::MIN {
            write!(f, "{}/{}", self.count, self.period.as_str())
        } else {
            write!(f, "{}/{} {}", self.count, self.span, self.period.plural())
        }
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

    fn count(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).unwrap()
    }

    #[test]
    fn parses_and_canonicalises() {
        for (input, canonical) in [
            ("5/minute", "5/minute"),
            ("5/min", "5/minute"),
            ("10/s", "10/second"),
            (" 7 / Hours ", "7/hour"),
            ("1/d", "1/day"),
            ("250/ms", "250/millisecond"),
            ("3/msec", "3/millisecond"),
            ("3/Milliseconds", "3/millisecond"),
            ("5/1minute", "5/minute"),
        ] {
            assert_eq!(input.parse::<Rate>().unwrap().to_string(), canonical);
        }
    }

    #[test]
    fn spans_read_and_write_back() {
        for (input, canonical, window) in [
            ("100/50s", "100/50 seconds", Duration::from_secs(50)),
            (
                "100 / 50 seconds",
                "100/50 seconds",
                Duration::from_secs(50),
            ),
            ("100/50seconds", "100/50 seconds", Duration::from_secs(50)),
            ("1/100s", "1/100 seconds", Duration::from_secs(100)),
            ("5/2h", "5/2 hours", Duration::from_secs(7200)),
            (
                "10/3333ms",
                "10/3333 milliseconds",
                Duration::from_millis(3333),
            ),
            ("7/ 3 D", "7/3 days", Duration::from_secs(3 * 86_400)),
            (
                "1/4294967295d",
                "1/4294967295 days",
                Duration::from_secs(u64::from(u32::MAX) * 86_400),
            ),
        ] {
            let rate: Rate = input.parse().unwrap();
            assert_eq!(rate.to_string(), canonical, "{input}");
            assert_eq!(rate.window(), window, "{input}");
            assert_eq!(canonical.parse::<Rate>().unwrap(), rate, "{canonical}");
        }
        let rate: Rate = "100/50s".parse().unwrap();
        assert_eq!(rate, Rate::spanning(count(100), count(50), Period::Second));
        assert_eq!(rate.span(), count(50));
        assert_eq!(rate.period(), Period::Second);
        assert_eq!(
            "5/minute".parse::<Rate>().unwrap().window(),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn over_writes_the_window_in_the_longest_unit_that_divides_it() {
        let over = |window| Rate::over(count(7), window).map(|rate| rate.to_string());
        for (window, written) in [
            (Duration::from_secs(50), "7/50 seconds"),
            (Duration::from_secs(60), "7/minute"),
            (Duration::from_secs(90), "7/90 seconds"),
            (Duration::from_secs(120), "7/2 minutes"),
            (Duration::from_secs(3600), "7/hour"),
            (Duration::from_secs(86_400 * 2), "7/2 days"),
            (Duration::from_secs(1), "7/second"),
            (Duration::from_millis(1), "7/millisecond"),
            (Duration::from_millis(100), "7/100 milliseconds"),
            (Duration::from_millis(1500), "7/1500 milliseconds"),
        ] {
            assert_eq!(over(window).as_deref(), Some(written), "{window:?}");
            let rate = Rate::over(count(7), window).unwrap();
            assert_eq!(rate.window(), window);
        }
        assert_eq!(over(Duration::ZERO), None);
        assert_eq!(
            over(Duration::from_micros(1500)),
            None,
            "not whole milliseconds"
        );
        assert_eq!(over(Duration::from_nanos(1)), None);
        // More than u32::MAX days.
        assert_eq!(over(Duration::from_secs(u64::MAX)), None);
        // u32::MAX + 1 milliseconds: no longer unit divides it, and the span overflows.
        assert_eq!(over(Duration::from_millis(u64::from(u32::MAX) + 1)), None);
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
            "5/0s",
            "5/00 minutes",
            "5/2",
            "5/",
            "5/-2s",
            "5/+2s",
            "5/2.5s",
            "5/4294967296s",
            "5/s2",
        ] {
            assert!(input.parse::<Rate>().is_err(), "{input}");
        }
        let zero_span = "5/0s".parse::<Rate>().unwrap_err();
        assert!(zero_span.reason().contains("span"), "{zero_span}");
        let unit = "5/2".parse::<Rate>().unwrap_err();
        assert!(unit.reason().contains("unit"), "{unit}");
    }

    #[test]
    fn serde_round_trip() {
        let rate: Rate = serde_json::from_str("\"100/hour\"").unwrap();
        assert_eq!(serde_json::to_string(&rate).unwrap(), "\"100/hour\"");
        assert!(serde_json::from_str::<Rate>("\"100/eon\"").is_err());
        let rate: Rate = serde_json::from_str("\"100/50s\"").unwrap();
        assert_eq!(serde_json::to_string(&rate).unwrap(), "\"100/50 seconds\"");
        assert_eq!(
            serde_json::from_str::<Rate>("\"100/50 seconds\"").unwrap(),
            rate
        );
        assert!(serde_json::from_str::<Rate>("\"5/0s\"").is_err());
    }
}
