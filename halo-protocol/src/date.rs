//! Calendar dates (`sunset`).

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
    let number = |range: std::ops::Range<usize>| text[range].parse::<u32>().unwrap_or(0);
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
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    // Howard Hinnant's `days_from_civil`: years start in March, so the leap day is last.
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some(era * 146_097 + day_of_era - 719_468)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
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
}
