//! Pure checks of attribute values: rates, dates, language tags, header names, fixed choices.
//!
//! Each check takes the text of a string literal and returns either the value to emit (in its
//! canonical form) or a human-readable reason; `parse.rs` turns the reason into a spanned error.

/// Accepted spellings of each rate unit, canonical (singular, long) form first.
const RATE_UNITS: &[(&str, &[&str])] = &[
    ("second", &["s", "sec", "secs", "seconds"]),
    ("minute", &["m", "min", "mins", "minutes"]),
    ("hour", &["h", "hr", "hrs", "hours"]),
    ("day", &["d", "days"]),
];

/// `"N/unit"` with a positive integer `N`; returns the canonical form, e.g. `"5/minute"`.
pub(crate) fn rate(text: &str) -> Result<String, String> {
    let Some((count, unit)) = text.split_once('/') else {
        return Err("a rate looks like \"N/unit\", e.g. \"5/minute\" or \"100/hour\"".to_owned());
    };
    let count = positive_integer(count.trim()).ok_or_else(|| {
        format!("the count `{count}` must be a positive integer, as in \"5/minute\"")
    })?;
    let unit = canonical_rate_unit(unit.trim()).ok_or_else(|| {
        format!(
            "unknown unit `{unit}`; expected second, minute, hour or day \
             (or s, sec, m, min, h, hr, d, and plurals)"
        )
    })?;
    Ok(format!("{count}/{unit}"))
}

fn positive_integer(digits: &str) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|n| *n > 0)
}

fn canonical_rate_unit(unit: &str) -> Option<&'static str> {
    let unit = unit.to_ascii_lowercase();
    RATE_UNITS
        .iter()
        .find(|(canonical, aliases)| *canonical == unit || aliases.contains(&unit.as_str()))
        .map(|(canonical, _)| *canonical)
}

/// An ISO calendar date `YYYY-MM-DD` that exists (month 1..=12, day within the month).
pub(crate) fn date(text: &str) -> Result<String, String> {
    let shape_ok = text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    if !shape_ok {
        return Err("a date looks like YYYY-MM-DD, e.g. \"2026-12-31\"".to_owned());
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
    Ok(text.to_owned())
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

/// The shape of a BCP 47 language tag: a 2–8 letter language subtag, then subtags of 1–8
/// letters or digits, separated by hyphens (`"zh"`, `"pt-BR"`, `"zh-Hant-TW"`).
pub(crate) fn language_tag(tag: &str) -> Result<String, String> {
    let mut subtags = tag.split('-');
    let language = subtags.next().unwrap_or_default();
    if !(2..=8).contains(&language.len()) || !language.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(
            "a language tag starts with 2-8 letters, e.g. \"zh\", \"pt-BR\" or \"zh-Hant\""
                .to_owned(),
        );
    }
    if let Some(bad) = subtags
        .find(|s| s.is_empty() || s.len() > 8 || !s.bytes().all(|b| b.is_ascii_alphanumeric()))
    {
        return Err(format!(
            "subtag `{bad}` must be 1-8 letters or digits (tags look like \"pt-BR\" or \"zh-Hant-TW\")"
        ));
    }
    Ok(tag.to_owned())
}

/// An HTTP header name: a non-empty RFC 9110 token.
pub(crate) fn header_name(name: &str) -> Result<String, String> {
    const EXTRA: &[u8] = b"!#$%&'*+-.^_`|~";
    if name.is_empty() {
        return Err("a header name cannot be empty".to_owned());
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || (c.is_ascii() && EXTRA.contains(&(*c as u8)))))
    {
        Some(bad) => Err(format!(
            "{bad:?} is not allowed in a header name (use letters, digits and !#$%&'*+-.^_`|~), \
             e.g. \"Idempotency-Key\""
        )),
        None => Ok(name.to_owned()),
    }
}

/// One of a fixed set of words.
pub(crate) fn one_of(text: &str, choices: &[&str]) -> Result<String, String> {
    if choices.contains(&text) {
        Ok(text.to_owned())
    } else {
        Err(format!("expected one of {}", quoted_list(choices)))
    }
}

/// Free text that says something: not empty or only whitespace.
pub(crate) fn non_empty(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        Err("the text cannot be empty".to_owned())
    } else {
        Ok(text.to_owned())
    }
}

/// `"a", "b", "c"`
pub(crate) fn quoted_list(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The candidate closest to a misspelt `word`, if it is close enough to be a likely typo.
pub(crate) fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let budget = (word.len() / 3).max(2);
    candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .filter(|(distance, _)| *distance <= budget)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

/// Levenshtein distance over bytes (keys are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_canonicalised() {
        assert_eq!(rate("5/minute").unwrap(), "5/minute");
        assert_eq!(rate("5/min").unwrap(), "5/minute");
        assert_eq!(rate(" 100 / hrs ").unwrap(), "100/hour");
        assert_eq!(rate("1/s").unwrap(), "1/second");
        assert_eq!(rate("7/Days").unwrap(), "7/day");
        assert_eq!(rate("05/d").unwrap(), "5/day");
    }

    #[test]
    fn bad_rates_are_refused() {
        for bad in [
            "5/fortnight",
            "0/minute",
            "-1/minute",
            "+5/minute",
            "five/minute",
            "5",
            "/minute",
            "5/",
        ] {
            assert!(rate(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn dates_must_exist() {
        assert!(date("2026-12-31").is_ok());
        assert!(date("2024-02-29").is_ok());
        for bad in [
            "2025-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-04-31",
            "2026-1-01",
            "26-01-01",
            "2026/01/01",
            "2026-01-001",
        ] {
            assert!(date(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn language_tags_have_the_bcp47_shape() {
        for good in ["zh", "en", "pt-BR", "zh-Hant-TW", "es-419"] {
            assert!(language_tag(good).is_ok(), "{good} should be accepted");
        }
        for bad in [
            "",
            "z",
            "zh-",
            "zh_CN",
            "1a",
            "en--US",
            "en-abcdefghi",
            "中文",
        ] {
            assert!(language_tag(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn header_names_are_tokens() {
        assert!(header_name("Idempotency-Key").is_ok());
        assert!(header_name("x_trace.id~1").is_ok());
        for bad in ["", "Idempotency Key", "Key:", "ключ"] {
            assert!(header_name(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn typos_find_their_key() {
        let keys = [
            "why",
            "reversible",
            "timeout_ms",
            "idempotent",
            "idempotency_key",
        ];
        assert_eq!(closest("rversible", &keys), Some("reversible"));
        assert_eq!(closest("timout_ms", &keys), Some("timeout_ms"));
        assert_eq!(closest("idempotency", &keys), Some("idempotent"));
        assert_eq!(closest("colour", &keys), None);
    }
}
