//! Tool names that every LLM API accepts as a function name.

use std::collections::HashSet;

/// The longest tool name LLM APIs accept (OpenAI's limit; Anthropic's is larger).
pub const MAX_TOOL_NAME: usize = 64;

/// `raw` made safe as an LLM function name, `[A-Za-z0-9_-]{1,64}`: each run of other
/// characters becomes one `_`, leading and trailing `_` go, and the result is cut to 64
/// characters. Empty when nothing usable is left.
///
/// ```
/// use halo_protocol::tool_name;
///
/// assert_eq!(tool_name("books.get by id"), "books_get_by_id");
/// assert_eq!(tool_name("???"), "");
/// ```
#[must_use]
pub fn tool_name(raw: &str) -> String {
    let mut name = String::with_capacity(raw.len().min(MAX_TOOL_NAME));
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            name.push(c);
        } else if !name.ends_with('_') {
            name.push('_');
        }
    }
    let name = name.trim_matches('_');
    // Only ASCII is left, so bytes are characters.
    name[..name.len().min(MAX_TOOL_NAME)]
        .trim_end_matches('_')
        .to_owned()
}

/// Hands out tool names that are safe ([`tool_name`]) and unique: a name already given gets
/// `_2`, `_3`, ... (shortening the stem to stay within 64 characters).
///
/// ```
/// use halo_protocol::UniqueNames;
///
/// let mut names = UniqueNames::new();
/// assert_eq!(names.assign("get book"), "get_book");
/// assert_eq!(names.assign("get_book"), "get_book_2");
/// assert_eq!(names.assign("!!!"), "tool");
/// ```
#[derive(Debug, Default, Clone)]
pub struct UniqueNames {
    taken: HashSet<String>,
}

impl UniqueNames {
    /// No names given yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A unique, safe name for `raw` (`tool` when `raw` has nothing usable).
    pub fn assign(&mut self, raw: &str) -> String {
        let mut base = tool_name(raw);
        if base.is_empty() {
            "tool".clone_into(&mut base);
        }
        let mut name = base.clone();
        let mut n = 2_u32;
        while self.taken.contains(&name) {
            let suffix = format!("_{n}");
            let stem = &base[..base.len().min(MAX_TOOL_NAME - suffix.len())];
            name = format!("{stem}{suffix}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_unique_and_bounded() {
        let mut names = UniqueNames::new();
        assert_eq!(names.assign("search_books"), "search_books");
        assert_eq!(names.assign("search_books"), "search_books_2");
        assert_eq!(names.assign("search books"), "search_books_3");
        let long = "x".repeat(100);
        assert_eq!(names.assign(&long).len(), MAX_TOOL_NAME);
        let second = names.assign(&long);
        assert_eq!(second.len(), MAX_TOOL_NAME);
        assert!(second.ends_with("_2"));
        assert_eq!(tool_name("ünïcode name"), "n_code_name");
        assert_eq!(tool_name("a__b"), "a__b");
    }
}
