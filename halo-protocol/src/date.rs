//! Calendar dates (`sunset`) and RFC 3339 timestamps (an approval's `requested_at`).

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
