//! The times of an approval: RFC 3339 (`2026-12-02T10:00:00.000Z`), read without a date
//! library since only these two stamps need it. The client uses them for how long it waits
//! at most; both are read on the server's clock, so their difference is what counts.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An RFC 3339 date-time (`Z` or a numeric offset, any fraction of a second) as a time;
/// `None` for anything else, or a time before 1970.
pub(super) fn parse(text: &str) -> Option<SystemTime> {
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

/// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`: years start in March, so the
/// leap day is last).
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

    fn secs(text: &str) -> Option<f64> {
        parse(text).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64())
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
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
