//! Text cut to a size, never inside a character.

/// `text` cut to at most `max` bytes, at a character boundary.
///
/// ```
/// use halo_protocol::truncate;
///
/// assert_eq!(truncate("héllo", 2), "h");
/// assert_eq!(truncate("hello", 10), "hello");
/// ```
#[must_use]
pub fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
