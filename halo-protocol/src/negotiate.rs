//! `Accept` header negotiation.
//!
//! The header is a comma-separated list of media ranges, each with optional parameters
//! (`; charset=utf-8`, `; q=0.5`). Types compare case-insensitively. Only an explicit range for
//! the media type counts: `*/*` and `application/*` never activate HALO, so a browser or curl
//! default keeps getting the application's ordinary `OPTIONS` answer.

use crate::MEDIA_TYPE;

/// Whether an `Accept` header value asks for HALO (`application/llm+json`).
///
/// ```
/// use halo_protocol::accepts_halo;
///
/// assert!(accepts_halo("application/llm+json"));
/// assert!(accepts_halo("Application/LLM+JSON; charset=utf-8"));
/// assert!(accepts_halo("text/html, application/llm+json;q=0.9"));
/// assert!(!accepts_halo("application/llm+json;q=0"));
/// assert!(!accepts_halo("*/*"));
/// assert!(!accepts_halo("application/*"));
/// ```
#[must_use]
pub fn accepts_halo(accept: &str) -> bool {
    accepts(accept, MEDIA_TYPE)
}

/// Whether an `Accept` header value explicitly accepts `media_type` (`type/subtype`, no
/// parameters).
///
/// True when some media range names exactly that type (case-insensitively) with a `q` above
/// zero, and no range for it refuses it with `q=0`. Wildcards do not count. Malformed ranges
/// are skipped; a malformed `q` value refuses its range.
///
/// ```
/// use halo_protocol::accepts;
///
/// assert!(accepts("text/event-stream", "text/event-stream"));
/// assert!(!accepts("text/*", "text/event-stream"));
/// ```
#[must_use]
pub fn accepts(accept: &str, media_type: &str) -> bool {
    // What HALO clients send: exactly the media type.
    if accept.eq_ignore_ascii_case(media_type) {
        return true;
    }
    let mut accepted = false;
    for range in split_outside_quotes(accept, b',') {
        let mut parts = split_outside_quotes(range, b';');
        let Some(essence) = parts.next() else {
            continue;
        };
        if !essence.trim().eq_ignore_ascii_case(media_type) {
            continue;
        }
        if quality(parts) > 0 {
            accepted = true;
        } else {
            return false;
        }
    }
    accepted
}

/// The essence of a media type: a `Content-Type` value without its parameters
/// (`application/json; charset=utf-8` → `application/json`). Compare it case-insensitively.
///
/// ```
/// assert_eq!(halo_protocol::essence(" Text/Event-Stream ; charset=utf-8"), "Text/Event-Stream");
/// ```
#[must_use]
pub fn essence(media_type: &str) -> &str {
    media_type.split(';').next().unwrap_or_default().trim()
}

/// Whether a media type (`Content-Type` value, parameters allowed) is JSON:
/// `application/json` or any `+json` type, case-insensitively.
///
/// ```
/// use halo_protocol::is_json;
///
/// assert!(is_json("application/json; charset=utf-8"));
/// assert!(is_json("application/problem+json"));
/// assert!(!is_json("text/plain"));
/// ```
#[must_use]
pub fn is_json(media_type: &str) -> bool {
    let essence = essence(media_type);
    essence.eq_ignore_ascii_case("application/json")
        || essence
            .len()
            .checked_sub(5)
            .and_then(|at| essence.get(at..))
            .is_some_and(|suffix| suffix.eq_ignore_ascii_case("+json"))
}

/// The two form media types, whose bodies are fields written one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Form {
    /// `application/x-www-form-urlencoded`: `key=value` pairs.
    UrlEncoded,
    /// `multipart/form-data`: one part per field.
    Multipart,
}

impl Form {
    /// The form a media type (`Content-Type` value, parameters allowed) is, if any.
    ///
    /// ```
    /// use halo_protocol::Form;
    ///
    /// assert_eq!(Form::of("multipart/form-data; boundary=x"), Some(Form::Multipart));
    /// assert_eq!(Form::of("Application/X-WWW-Form-Urlencoded"), Some(Form::UrlEncoded));
    /// assert_eq!(Form::of("application/json"), None);
    /// ```
    #[must_use]
    pub fn of(media_type: &str) -> Option<Self> {
        let essence = essence(media_type);
        if essence.eq_ignore_ascii_case(Self::UrlEncoded.media_type()) {
            Some(Self::UrlEncoded)
        } else if essence.eq_ignore_ascii_case(Self::Multipart.media_type()) {
            Some(Self::Multipart)
        } else {
            None
        }
    }

    /// Its media type, without parameters.
    #[must_use]
    pub fn media_type(self) -> &'static str {
        match self {
            Self::UrlEncoded => "application/x-www-form-urlencoded",
            Self::Multipart => "multipart/form-data",
        }
    }
}

/// The best of the `available` language tags for an `Accept-Language` header value, by RFC
/// 4647 lookup; `None` when the base text should be served.
///
/// Ranges are tried from the highest `q` down (ties in the order given). Each range matches
/// an available tag case-insensitively, then with its last subtag removed (`en-GB` falls back
/// to `en`), and so on. A `*` range, or no range that matches, means the base text.
///
/// ```
/// use halo_protocol::negotiate_language;
///
/// let available = ["zh", "en", "fr-CA"];
/// assert_eq!(negotiate_language("zh-CN, en;q=0.5", available), Some("zh"));
/// assert_eq!(negotiate_language("en-GB", available), Some("en"));
/// assert_eq!(negotiate_language("fr", available), None);
/// assert_eq!(negotiate_language("de, en;q=0.1", available), Some("en"));
/// assert_eq!(negotiate_language("de, *;q=0.5, en;q=0.1", available), None);
/// ```
#[must_use]
pub fn negotiate_language<'a, I>(accept_language: &str, available: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
    I::IntoIter: Clone,
{
    let available = available.into_iter();
    let mut ranges: Vec<(u16, &str)> = accept_language
        .split(',')
        .filter_map(|range| {
            let mut parts = range.split(';');
            let tag = parts.next()?.trim();
            let q = quality(parts);
            (!tag.is_empty() && q > 0).then_some((q, tag))
        })
        .collect();
    ranges.sort_by_key(|range| std::cmp::Reverse(range.0));
    for (_, range) in ranges {
        if range == "*" {
            return None;
        }
        let mut candidate = range;
        loop {
            if let Some(found) = available
                .clone()
                .find(|tag| tag.eq_ignore_ascii_case(candidate))
            {
                return Some(found);
            }
            match candidate.rfind('-') {
                Some(at) => candidate = &candidate[..at],
                None => break,
            }
        }
    }
    None
}

/// The `q` parameter of a media range in thousandths (1000 when absent, 0 when malformed).
fn quality<'a>(params: impl Iterator<Item = &'a str>) -> u16 {
    for param in params {
        let Some((name, value)) = param.split_once('=') else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("q") {
            return parse_qvalue(value.trim()).unwrap_or(0);
        }
    }
    1000
}

/// Parses an RFC 9110 `qvalue` (`0`, `0.5`, `1.000`) into thousandths.
fn parse_qvalue(value: &str) -> Option<u16> {
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(3)
        .fold(0u16, |acc, b| acc * 10 + u16::from(b - b'0'));
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// Splits on `separator`, ignoring separators inside double-quoted strings (with `\` escapes).
fn split_outside_quotes(input: &str, separator: u8) -> impl Iterator<Item = &str> {
    let bytes = input.as_bytes();
    let mut start = 0;
    let mut in_quotes = false;
    let mut escaped = false;
    let mut index = 0;
    std::iter::from_fn(move || {
        if start > bytes.len() {
            return None;
        }
        while index < bytes.len() {
            let b = bytes[index];
            index += 1;
            if escaped {
                escaped = false;
            } else if in_quotes && b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_quotes = !in_quotes;
            } else if b == separator && !in_quotes {
                let piece = &input[start..index - 1];
                start = index;
                return Some(piece);
            }
        }
        let piece = &input[start..];
        start = bytes.len() + 1;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_type_activates() {
        assert!(accepts_halo("application/llm+json"));
        assert!(accepts_halo("  application/llm+json  "));
    }

    #[test]
    fn lists_parameters_and_case() {
        assert!(accepts_halo("application/llm+json, application/json;q=0.5"));
        assert!(accepts_halo("application/json;q=0.5, application/llm+json"));
        assert!(accepts_halo("application/llm+json; charset=utf-8"));
        assert!(accepts_halo("APPLICATION/LLM+JSON"));
        assert!(accepts_halo("application/llm+json;Q=0.1"));
        assert!(accepts_halo(
            "text/plain; foo=\"a,b\", application/llm+json"
        ));
    }

    #[test]
    fn q_zero_and_wildcards_refuse() {
        assert!(!accepts_halo("application/llm+json;q=0"));
        assert!(!accepts_halo("application/llm+json; q=0.000"));
        assert!(!accepts_halo(
            "application/llm+json, application/llm+json;q=0"
        ));
        assert!(!accepts_halo("*/*"));
        assert!(!accepts_halo("application/*"));
        assert!(!accepts_halo("application/json"));
        assert!(!accepts_halo(""));
    }

    #[test]
    fn malformed_input_does_not_activate_or_panic() {
        assert!(!accepts_halo("application/llm+json;q=2"));
        assert!(!accepts_halo("application/llm+json;q=abc"));
        assert!(!accepts_halo("application/llm+json;q=0.1234"));
        assert!(!accepts_halo("\"application/llm+json\""));
        assert!(!accepts_halo("application/llm+json2"));
        assert!(!accepts_halo(";;;,,,\"\\"));
        assert!(!accepts_halo("application/llm+json;q=\u{e9}"));
        assert!(accepts_halo(",,application/llm+json,,"));
    }

    #[test]
    fn qvalues() {
        assert_eq!(parse_qvalue("1"), Some(1000));
        assert_eq!(parse_qvalue("1.000"), Some(1000));
        assert_eq!(parse_qvalue("0.5"), Some(500));
        assert_eq!(parse_qvalue("0.05"), Some(50));
        assert_eq!(parse_qvalue("0."), Some(0));
        assert_eq!(parse_qvalue("1.5"), None);
        assert_eq!(parse_qvalue(""), None);
        assert_eq!(parse_qvalue("-1"), None);
    }

    #[test]
    fn quoted_separators_stay_inside_their_range() {
        let pieces: Vec<_> = split_outside_quotes(r#"a;x="1,2\",3",b"#, b',').collect();
        assert_eq!(pieces, [r#"a;x="1,2\",3""#, "b"]);
        assert_eq!(split_outside_quotes("", b',').collect::<Vec<_>>(), [""]);
    }
}
