//! Tool names: unique and safe as LLM function names (`[A-Za-z0-9_-]{1,64}`).

use std::collections::HashSet;

/// The longest name LLM providers accept for a function.
const MAX_LEN: usize = 64;

/// Hands out unique, LLM-safe names.
#[derive(Debug, Default)]
pub(crate) struct Names {
    taken: HashSet<String>,
}

impl Names {
    /// A name from the `operationId` (or, without one, from method and path), made safe and
    /// made unique with a numeric suffix.
    pub(crate) fn assign(
        &mut self,
        operation_id: Option<&str>,
        method: &str,
        path: &str,
    ) -> String {
        let wanted = match operation_id.map(sanitize).filter(|s| !s.is_empty()) {
            Some(name) => name,
            None => sanitize(&format!("{}_{path}", method.to_ascii_lowercase())),
        };
        let wanted = if wanted.is_empty() {
            "tool".to_owned()
        } else {
            wanted
        };
        let mut name = wanted.clone();
        let mut n = 2;
        while !self.taken.insert(name.clone()) {
            let suffix = format!("_{n}");
            let stem: String = wanted.chars().take(MAX_LEN - suffix.len()).collect();
            name = format!("{stem}{suffix}");
            n += 1;
        }
        name
    }
}

/// Replaces runs of characters outside `[A-Za-z0-9_-]` with `_`, trims `_`, caps the length.
fn sanitize(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len().min(MAX_LEN));
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out.trim_matches('_').chars().take(MAX_LEN).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitises_and_deduplicates() {
        let mut names = Names::default();
        assert_eq!(
            names.assign(Some("search_books"), "GET", "/api/books"),
            "search_books"
        );
        assert_eq!(
            names.assign(Some("search_books"), "GET", "/v2/books"),
            "search_books_2"
        );
        assert_eq!(
            names.assign(Some("books.get by id"), "GET", "/x"),
            "books_get_by_id"
        );
        assert_eq!(
            names.assign(None, "DELETE", "/api/books/{id}"),
            "delete_api_books_id"
        );
        assert_eq!(names.assign(Some("???"), "GET", "/"), "get");
        let long = "x".repeat(100);
        assert_eq!(names.assign(Some(&long), "GET", "/").len(), 64);
        assert_eq!(names.assign(Some(&long), "GET", "/").len(), 64);
    }
}
