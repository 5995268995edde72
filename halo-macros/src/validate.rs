//! Pure checks of attribute values: rates, dates, language tags, header names, fixed choices.
//!
//! Each check takes the text of a string literal and returns either the value to emit (in its
//! canonical form) or a human-readable reason; `parse.rs` turns the reason into a spanned error.

/// `"N/unit"` with a positive integer `N`; returns the canonical form, e.g. `"5/minute"`.
/// The same parser the server uses, so what compiles is what the server accepts.
pub(crate) fn rate(text: &str) -> Result<String, String> {
    text.parse::<halo_protocol::Rate>()
        .map(|rate| rate.to_string())
        .map_err(|e| e.reason().to_owned())
}

/// `"failures/cool-down/successes"` (`"5/30s/2"`); returns the canonical form. The same
/// parser the server uses.
pub(crate) fn circuit(text: &str) -> Result<String, String> {
    text.parse::<halo_protocol::Circuit>()
        .map(|circuit| circuit.to_string())
        .map_err(|e| e.reason().to_owned())
}

/// An ISO calendar date `YYYY-MM-DD` that exists.
pub(crate) fn date(text: &str) -> Result<String, String> {
    halo_protocol::check_date(text).map(|()| text.to_owned())
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
        assert_eq!(rate("100/50s").unwrap(), "100/50 seconds");
        assert_eq!(rate("250 / ms").unwrap(), "250/millisecond");
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
            "5/0s",
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
