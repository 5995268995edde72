//! Durations as HALO's text forms write them: a whole number and a unit.

use std::time::Duration;

/// Reads a duration written as a whole number of milliseconds, seconds, minutes or hours:
/// `500ms`, `30s`, `2m`, `1h`. `None` for anything else (a fraction, no unit, a unit this
/// does not know, or a duration too long to count in milliseconds).
///
/// ```
/// use std::time::Duration;
/// use halo_protocol::parse_duration;
///
/// assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
/// assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
/// assert_eq!(parse_duration("1.5s"), None);
/// assert_eq!(parse_duration("30"), None);
/// ```
#[must_use]
pub fn parse_duration(text: &str) -> Option<Duration> {
    let at = text
        .find(|c: char| !c.is_ascii_digit())
        .filter(|&at| at > 0)?;
    let (digits, unit) = text.split_at(at);
    let value: u64 = digits.parse().ok()?;
    let unit_ms: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    value.checked_mul(unit_ms).map(Duration::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_refusals() {
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0s"), Some(Duration::ZERO));
        for bad in [
            "",
            "s",
            "-1s",
            "1 s",
            "1d",
            "99999999999999999999s",
            "18446744073709551615h",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }
}
