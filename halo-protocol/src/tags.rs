//! The `?tags=` filter of the manifest.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

/// The tag filter of a manifest request: `?tags=a,b`.
///
/// Tags are comma-separated, percent-decoded and trimmed; empty items are ignored. A tool
/// matches when it carries at least one of the tags (OR), compared case-sensitively. An absent
/// or empty `tags` parameter means no filter. Several `tags` parameters add up. Malformed
/// input never fails: undecodable bytes become tags that match nothing.
///
/// ```
/// use halo_protocol::TagFilter;
///
/// let any = TagFilter::from_query(Some("tags="));
/// assert!(any.is_empty());
/// assert!(any.matches(["weather"]));
///
/// let some = TagFilter::from_query(Some("tags=books%2Cadmin&page=2"));
/// assert!(some.matches(["admin"]));
/// assert!(!some.matches(["Books"]));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagFilter {
    tags: Vec<String>,
}

impl TagFilter {
    /// Reads the filter from a raw query string (without the leading `?`).
    #[must_use]
    pub fn from_query(query: Option<&str>) -> Self {
        let Some(query) = query.filter(|q| !q.is_empty()) else {
            return Self::default();
        };
        let mut tags = Vec::new();
        for pair in query.split('&') {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if decode(name) == "tags" {
                tags.extend(Self::parse(&decode(value)).tags);
            }
        }
        dedup(&mut tags);
        Self { tags }
    }

    /// Reads the filter from the (already decoded) value of one `tags` parameter.
    ///
    /// ```
    /// use halo_protocol::TagFilter;
    /// assert_eq!(TagFilter::parse(" read , ,write").tags(), ["read", "write"]);
    /// ```
    #[must_use]
    pub fn parse(value: &str) -> Self {
        let mut tags: Vec<String> = value
            .split(',')
            .map(str::trim)
            .filter(|tag| !tag.is_empty())
            .map(str::to_owned)
            .collect();
        dedup(&mut tags);
        Self { tags }
    }

    /// The requested tags, in the order first given.
    #[must_use]
    pub fn tags(&self) -> &[String] {
        &self.tags
    }

    /// Whether no tag was requested (every tool matches).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    /// Whether a tool with these tags passes the filter.
    pub fn matches<'a, I>(&self, tool_tags: I) -> bool
    where
        I: IntoIterator<Item = &'a str>,
    {
        if self.is_empty() {
            return true;
        }
        tool_tags
            .into_iter()
            .any(|tag| self.tags.iter().any(|wanted| wanted == tag))
    }
}

/// Percent-decodes a query component, with `+` as a space (form encoding).
pub(crate) fn decode(component: &str) -> Cow<'_, str> {
    if !component.contains(['+', '%']) {
        return Cow::Borrowed(component);
    }
    let spaced = component.replace('+', " ");
    Cow::Owned(percent_decode_str(&spaced).decode_utf8_lossy().into_owned())
}

fn dedup(tags: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    tags.retain(|tag| seen.insert(tag.clone()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_and_empty_mean_no_filter() {
        assert!(TagFilter::from_query(None).is_empty());
        assert!(TagFilter::from_query(Some("")).is_empty());
        assert!(TagFilter::from_query(Some("tags")).is_empty());
        assert!(TagFilter::from_query(Some("tags=")).is_empty());
        assert!(TagFilter::from_query(Some("tags=,,")).is_empty());
        assert!(TagFilter::from_query(Some("other=x")).is_empty());
    }

    #[test]
    fn or_semantics_and_case_sensitivity() {
        let filter = TagFilter::from_query(Some("tags=books,payments"));
        assert!(filter.matches(["books"]));
        assert!(filter.matches(["x", "payments"]));
        assert!(!filter.matches(["Books"]));
        assert!(!filter.matches([]));
    }

    #[test]
    fn decoding_and_repeats() {
        let filter = TagFilter::from_query(Some("tags=a%2Cb&tags=c&t%61gs=d&tags=a"));
        assert_eq!(filter.tags(), ["a", "b", "c", "d"]);
        assert_eq!(
            TagFilter::from_query(Some("tags=%20read%20")).tags(),
            ["read"]
        );
        assert_eq!(TagFilter::from_query(Some("tags=x+y")).tags(), ["x y"]);
        assert_eq!(TagFilter::from_query(Some("t%61gs=z")).tags(), ["z"]);
    }

    #[test]
    fn malformed_encoding_matches_nothing_known() {
        for query in ["tags=%", "tags=%zz", "tags=%ff%fe", "tags=%E2%82"] {
            let filter = TagFilter::from_query(Some(query));
            assert!(!filter.is_empty(), "{query}");
            assert!(!filter.matches(["read", "write", "books"]), "{query}");
        }
    }

    #[test]
    fn huge_values_are_fine() {
        let query = format!("tags={}", "a,".repeat(100_000));
        assert_eq!(TagFilter::from_query(Some(&query)).tags(), ["a"]);
    }
}
