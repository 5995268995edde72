//! The `?q=` search of the manifest (extension): `OPTIONS /?q=words&limit=N`.

use std::fmt;

use crate::tags::decode;
use crate::{DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT};

/// The search a manifest request asks for: `OPTIONS /?q=words[&limit=N]` (with `tags`
/// still filtering, [`TagFilter`](crate::TagFilter)).
///
/// `q` is percent-decoded (`+` as a space); an absent or blank `q` asks for no search (the
/// whole manifest). `limit` is how many tools to answer, 1 to [`MAX_SEARCH_LIMIT`],
/// [`DEFAULT_SEARCH_LIMIT`] when absent. When a parameter repeats, the last one counts.
///
/// ```
/// use halo_protocol::SearchQuery;
///
/// let search = SearchQuery::from_query(Some("q=open+an%20issue&limit=5")).unwrap().unwrap();
/// assert_eq!((search.q.as_str(), search.limit), ("open an issue", 5));
/// assert_eq!(SearchQuery::from_query(Some("tags=read")).unwrap(), None);
/// assert!(SearchQuery::from_query(Some("q=x&limit=0")).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchQuery {
    /// The words to search for, decoded and trimmed.
    pub q: String,
    /// How many tools to answer at most.
    pub limit: usize,
}

/// A `limit` that is not an integer from 1 to [`MAX_SEARCH_LIMIT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidLimit(String);

impl fmt::Display for InvalidLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: String = self.0.chars().take(32).collect();
        write!(
            f,
            "`limit` must be an integer from 1 to {MAX_SEARCH_LIMIT}, not `{shown}`"
        )
    }
}

impl std::error::Error for InvalidLimit {}

impl SearchQuery {
    /// Reads the search from a raw query string (without the leading `?`); `None` when it
    /// asks for none.
    ///
    /// # Errors
    /// [`InvalidLimit`] when a search names a `limit` that is not an integer from 1 to
    /// [`MAX_SEARCH_LIMIT`].
    pub fn from_query(query: Option<&str>) -> Result<Option<Self>, InvalidLimit> {
        let mut q = None;
        let mut limit = None;
        for pair in query.unwrap_or_default().split('&') {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            match &*decode(name) {
                "q" => q = Some(decode(value)),
                "limit" => limit = Some(decode(value)),
                _ => {}
            }
        }
        let Some(q) = q.map(|q| q.trim().to_owned()).filter(|q| !q.is_empty()) else {
            return Ok(None);
        };
        let limit = match limit {
            None => DEFAULT_SEARCH_LIMIT,
            Some(text) => text
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|limit| (1..=MAX_SEARCH_LIMIT).contains(limit))
                .ok_or_else(|| InvalidLimit(text.into_owned()))?,
        };
        Ok(Some(Self { q, limit }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_q_and_limit() {
        let read = |query: &str| SearchQuery::from_query(Some(query));
        assert_eq!(read("").unwrap(), None);
        assert_eq!(read("q=").unwrap(), None);
        assert_eq!(read("q=+%20").unwrap(), None);
        assert_eq!(SearchQuery::from_query(None).unwrap(), None);
        let search = read("q=books&tags=read").unwrap().unwrap();
        assert_eq!(
            (search.q.as_str(), search.limit),
            ("books", DEFAULT_SEARCH_LIMIT)
        );
        assert_eq!(read("q=a&q=b&limit=3&limit=4").unwrap().unwrap().limit, 4);
        assert_eq!(read("q=a&limit=100").unwrap().unwrap().limit, 100);
        assert_eq!(read("%71=a").unwrap().unwrap().q, "a");
        // A limit without a search is not read.
        assert_eq!(read("limit=abc").unwrap(), None);
    }

    #[test]
    fn bad_limits_are_errors() {
        for query in [
            "q=a&limit=",
            "q=a&limit=0",
            "q=a&limit=101",
            "q=a&limit=-1",
            "q=a&limit=1.5",
            "q=a&limit=%ff",
        ] {
            let error = SearchQuery::from_query(Some(query)).unwrap_err();
            assert!(error.to_string().contains("1 to 100"), "{query}: {error}");
        }
        let long = format!("q=a&limit={}", "9".repeat(10_000));
        assert!(
            SearchQuery::from_query(Some(&long))
                .unwrap_err()
                .to_string()
                .len()
                < 100
        );
    }
}
