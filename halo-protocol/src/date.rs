//! Calendar dates (`sunset`) and RFC 3339 timestamps (an approval's `requested_at`).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Checks that `text` is an ISO calendar date, `YYYY-MM-DD`, that exists (the month is
/// 01..=12 and the day is within it, leap years included). The error says what is wrong.
///
/// ```
/// use halo_protocol::check_date;
///
/// assert!(check_date("2024-02-29").is_ok());
/// assert!(check_date("2025-02-29").is_err());
/// assert!(check_date("31/12/2026").is_err());
/// ```
///
/// # Errors
/// A human-readable reason when the text is not such a date.
pub fn check_date(text: &str) -> Result<(), String> {
    let shape_ok = text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    if !shape_ok {
        return Err("a date looks like YYYY-MM-DD, e.g. 2026-12-31".to_owned());
    }
    let number = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap_or(0);
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    if !(1..=12).contains(&month) {
        return Err(format!("month {month:02} is not in 01..=12"));
    }
    let last_day = days_in_month(year, month);
    if !(1..=last_day).contains(&day) {
        return Err(format!(
            "day {day:02} is not in 01..={last_day} for {year:04}-{month:02}"
        ));
    }
    Ok(())
}

/// The day `text` (`YYYY-MM-DD`) falls on, counted from 1970-01-01 (negative before it);
/// `None` when [`check_date`] refuses the text.
pub(crate) fn epoch_days(text: &str) -> Option<i64> {
    check_date(text).ok()?;
    let number = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap_or(0);
    Some(days_from_civil(number(0..4), number(5..7), number(8..10)))
}

/// An RFC 3339 date-time (`Z` or a numeric offset, any fraction of a second) as a time;
/// `None` for anything else, or a time before 1970.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use halo_protocol::parse_timestamp;
///
/// let at = parse_timestamp("1970-01-01T00:01:00.500+00:00").unwrap();
/// assert_eq!(at.duration_since(UNIX_EPOCH).unwrap(), Duration::from_millis(60_500));
/// assert!(parse_timestamp("2026-12-02T10:00:00").is_none());
/// ```
#[must_use]
pub fn parse_timestamp(text: &str) -> Option<SystemTime> {
    let bytes = text.as_bytes();
    let shape = bytes.len() >= 20
        && bytes.iter().take(19).enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            10 => matches!(b, b'T' | b't' | b' '),
            13 | 16 => *b == b':',
            _ => b.is_ascii_digit(),
        });
    if !shape {
        return None;
    }
    let number = |range: std::ops::Range<usize>| text[range].parse::<i64>().ok();
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=days_in_month(year, month)).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut nanos = 0u32;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        // Nanoseconds: the first nine digits, padded.
        let kept = &fraction[..digits.min(9)];
        nanos = kept.parse::<u32>().ok()? * 10u32.pow(9 - u32::try_from(kept.len()).ok()?);
        rest = &fraction[digits..];
    }
    let offset = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|b| b.is_ascii_digit()) =>
        {
            let hours = i64::from((h1 - b'0') * 10 + (h2 - b'0'));
            let minutes = i64::from((m1 - b'0') * 10 + (m2 - b'0'));
            if hours > 23 || minutes > 59 {
                return None;
            }
            let offset = hours * 3600 + minutes * 60;
            if *sign == b'+' { offset } else { -offset }
        }
        _ => return None,
    };
    let seconds =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    let seconds = u64::try_from(seconds).ok()?;
    UNIX_EPOCH.checked_add(Duration::new(seconds, nanos))
}

/// Displays an instant as RFC 3339 in UTC, truncated to the millisecond
/// (`2026-11-30T18:07:01.123Z`): what [`parse_timestamp`] reads back. Instants outside the
/// years 0000 to 9999 are clamped to them.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use halo_protocol::Rfc3339;
///
/// let at = UNIX_EPOCH + Duration::from_millis(1_796_205_600_250);
/// assert_eq!(Rfc3339(at).to_string(), "2026-12-02T10:00:00.250Z");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Rfc3339(pub SystemTime);

/// `0000-01-01T00:00:00.000Z` and `9999-12-31T23:59:59.999Z`, in milliseconds from the epoch.
const MIN_MILLIS: i128 = -62_167_219_200_000;
const MAX_MILLIS: i128 = 253_402_300_799_999;

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos: i128 = match self.0.duration_since(UNIX_EPOCH) {
            Ok(after) => i128::try_from(after.as_nanos()).unwrap_or(i128::MAX),
            Err(before) => i128::try_from(before.duration().as_nanos()).map_or(i128::MIN, |n| -n),
        };
        let millis = nanos.div_euclid(1_000_000).clamp(MIN_MILLIS, MAX_MILLIS);
        // Within the clamp every quantity below fits an i64 comfortably.
        let millis = i64::try_from(millis).map_err(|_| fmt::Error)?;
        let (secs, milli) = (millis.div_euclid(1000), millis.rem_euclid(1000));
        let (days, of_day) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (year, month, day) = civil_from_days(days);
        let (hour, minute, second) = (of_day / 3600, of_day % 3600 / 60, of_day % 60);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z"
        )
    }
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`): year, month 1 to 12, day 1 to 31.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // The month counted from March: 0 is March, 11 is February.
    let march_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * march_month + 2) / 5 + 1;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Days since 1970-01-01 (negative before it) of a valid date (Howard Hinnant's
/// `days_from_civil`: years start in March, so the leap day is last).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn days_in_month(year: i64, month: i64) -> i64 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64, nanos: u32) -> String {
        let offset = Duration::new(secs.unsigned_abs(), 0);
        let time = if secs >= 0 {
            UNIX_EPOCH + offset
        } else {
            UNIX_EPOCH - offset
        };
        Rfc3339(time + Duration::from_nanos(u64::from(nanos))).to_string()
    }

    #[test]
    fn rfc3339_of_the_epoch() {
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn rfc3339_of_a_leap_day() {
        // 2024-02-29T12:34:56Z
        assert_eq!(at(1_709_210_096, 0), "2024-02-29T12:34:56.000Z");
        // The day after is March 1st, not February 30th.
        assert_eq!(at(1_709_210_096 + 86_400, 0), "2024-03-01T12:34:56.000Z");
        // 2000 is a leap year (divisible by 400).
        assert_eq!(at(951_782_400, 0), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn rfc3339_at_the_end_of_a_century() {
        assert_eq!(at(946_684_799, 0), "1999-12-31T23:59:59.000Z");
        assert_eq!(at(946_684_800, 0), "2000-01-01T00:00:00.000Z");
        // 2100 is not a leap year: February 28th is followed by March 1st.
        assert_eq!(at(4_107_456_000, 0), "2100-02-28T00:00:00.000Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
        assert_eq!(at(4_102_444_799, 999_000_000), "2099-12-31T23:59:59.999Z");
    }

    #[test]
    fn rfc3339_of_a_known_instant() {
        assert_eq!(at(1_796_062_021, 123_000_000), "2026-11-30T18:07:01.123Z");
    }

    #[test]
    fn rfc3339_truncates_to_the_millisecond() {
        // Truncated, never rounded up into the next second (or minute, or year).
        assert_eq!(at(0, 999_999_999), "1970-01-01T00:00:00.999Z");
        assert_eq!(at(0, 1_500_000), "1970-01-01T00:00:00.001Z");
        assert_eq!(at(946_684_799, 999_999_999), "1999-12-31T23:59:59.999Z");
        assert_eq!(at(0, 999_999), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn rfc3339_before_the_epoch() {
        assert_eq!(at(-1, 0), "1969-12-31T23:59:59.000Z");
        // Half a millisecond before the epoch is in the millisecond before it.
        let time = UNIX_EPOCH - Duration::from_micros(500);
        assert_eq!(Rfc3339(time).to_string(), "1969-12-31T23:59:59.999Z");
        assert_eq!(at(-2_208_988_800, 0), "1900-01-01T00:00:00.000Z");
    }

    #[test]
    fn rfc3339_clamps_to_four_digit_years() {
        assert_eq!(at(300_000_000_000, 0), "9999-12-31T23:59:59.999Z");
        assert_eq!(at(-70_000_000_000, 0), "0000-01-01T00:00:00.000Z");
    }

    #[test]
    fn days_since_the_epoch() {
        assert_eq!(epoch_days("1970-01-01"), Some(0));
        assert_eq!(epoch_days("1970-01-02"), Some(1));
        assert_eq!(epoch_days("1969-12-31"), Some(-1));
        assert_eq!(epoch_days("2000-03-01"), Some(11_017));
        assert_eq!(epoch_days("2024-02-29"), Some(19_782));
        assert_eq!(epoch_days("2027-06-30"), Some(20_999));
        assert_eq!(epoch_days("2025-02-29"), None);
    }

    #[test]
    fn dates_must_exist() {
        for good in ["2026-12-31", "2024-02-29", "2000-02-29", "1999-01-01"] {
            assert!(check_date(good).is_ok(), "{good}");
        }
        for bad in [
            "2025-02-29",
            "1900-02-29",
            "2026-04-31",
            "2026-13-01",
            "2026-00-10",
            "2026-1-1",
            "soon",
            "",
            "2026-12-31T00:00",
        ] {
            assert!(check_date(bad).is_err(), "{bad}");
        }
    }

    fn secs(text: &str) -> Option<f64> {
        parse_timestamp(text).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64())
    }

    #[test]
    fn rfc3339() {
        assert_eq!(secs("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(secs("1970-01-01T00:00:01.500Z"), Some(1.5));
        // `date -u -d 2026-12-02T10:00:00Z +%s`
        assert_eq!(secs("2026-12-02T10:00:00.000Z"), Some(1_796_205_600.0));
        assert_eq!(secs("2026-12-02T11:00:00+01:00"), Some(1_796_205_600.0));
        assert_eq!(secs("2026-12-02t09:30:00-00:30"), Some(1_796_205_600.0));
        assert_eq!(secs("2024-02-29T00:00:00Z"), Some(1_709_164_800.0));
        assert_eq!(
            secs("1970-01-01T00:00:00.123456789123Z").map(|s| (s * 1e9).round()),
            Some(123_456_789.0)
        );
        for bad in [
            "",
            "2026-12-02",
            "2026-12-02T10:00:00",
            "2026-13-02T10:00:00Z",
            "2025-02-29T10:00:00Z",
            "2026-12-02T24:00:00Z",
            "2026-12-02T10:00:00.Z",
            "2026-12-02T10:00:00+1:00",
            "2026-12-02T10:00:00+24:00",
            "1969-12-31T23:59:59Z",
            "2026-12-02T10:00:00Zjunk",
            "２０２６-12-02T10:00:00Z",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }
}
