//! [`Client::search`]: the API's tools that best match a few words, whether the server
//! searches or not.

use halo_protocol::{
    DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, Manifest, TagFilter, ToolEntry, ToolIndex,
};
use reqwest::Url;
use serde_json::Value;

use crate::{Client, Error, Result};

/// The tools a search found, best first.
///
/// The same whichever side ranked them: a server that searches answers `OPTIONS /?q=` with
/// its best matches and how many matched; against one that does not (a plain HALO 0.3.1
/// server ignores `q` and answers its whole manifest), the client ranks the manifest's
/// entries itself with [`ToolIndex`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchResults {
    /// The matches, best first, at most the search's limit.
    pub tools: Vec<ToolEntry>,
    /// How many of the tools the caller may see matched, before the limit.
    pub total: usize,
    /// Whether the server ranked them (`true`), or the client ranked the whole manifest
    /// (`false`).
    pub server_ranked: bool,
}

/// A tool search, built by [`Client::search`]: add a tag filter or a limit, then
/// [`send`](Self::send) it.
#[derive(Debug)]
#[must_use = "a search does nothing until it is sent"]
pub struct ToolSearch<'a> {
    client: &'a Client,
    query: String,
    tags: Vec<String>,
    limit: Option<usize>,
}

impl Client {
    /// Finds the API's tools that best match `query` (a few words: what the caller wants
    /// to do), best first.
    ///
    /// Sends `OPTIONS /?q=<query>[&tags=..][&limit=..]` with `Accept: application/llm+json`
    /// and the base URL's credentials. A server that searches answers its best matches and a
    /// `search` member (`{"q", "total"}`); one that does not answers its whole manifest, and
    /// the client ranks it ([`ToolIndex`], the same BM25 ranking servers use over what a
    /// manifest says: names, descriptions, tags and paths). Either way the answer is a
    /// [`SearchResults`].
    ///
    /// ```no_run
    /// # async fn run() -> halo_client::Result<()> {
    /// let client = halo_client::Client::new("http://127.0.0.1:3000")?;
    /// let found = client.search("is it raining").tags(&["weather"]).limit(3).send().await?;
    /// for tool in &found.tools {
    ///     println!("{} {} {}", tool.method, tool.url, tool.name);
    /// }
    /// println!("{} matched", found.total);
    /// # Ok(()) }
    /// ```
    pub fn search(&self, query: impl Into<String>) -> ToolSearch<'_> {
        ToolSearch {
            client: self,
            query: query.into(),
            tags: Vec::new(),
            limit: None,
        }
    }
}

impl ToolSearch<'_> {
    /// Only tools with any of these tags.
    pub fn tags<T: AsRef<str>>(mut self, tags: &[T]) -> Self {
        self.tags = tags.iter().map(|tag| tag.as_ref().to_owned()).collect();
        self
    }

    /// At most this many tools, 1 to [`MAX_SEARCH_LIMIT`] (100);
    /// [`DEFAULT_SEARCH_LIMIT`] (20) when not set.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Sends the search.
    ///
    /// # Errors
    /// [`Error::is_argument`] (before any request) for a query without words or a limit
    /// outside 1 to 100; otherwise as [`Client::discover`].
    pub async fn send(self) -> Result<SearchResults> {
        let query = self.query.trim();
        if query.is_empty() {
            return Err(Error::argument("a search needs a query: a few words"));
        }
        if let Some(limit) = self.limit
            && !(1..=MAX_SEARCH_LIMIT).contains(&limit)
        {
            return Err(Error::argument(format!(
                "a search's limit is 1 to {MAX_SEARCH_LIMIT}, not {limit}"
            )));
        }
        let limit = self.limit.unwrap_or(DEFAULT_SEARCH_LIMIT);
        let mut url = Url::parse(&format!("{}/", self.client.base_url()))
            .map_err(|e| Error::argument(format!("invalid URL: {e}")))?;
        {
            let mut pairs = url.query_pairs_mut();
            pairs.append_pair("q", query);
            if !self.tags.is_empty() {
                pairs.append_pair("tags", &self.tags.join(","));
            }
            if let Some(limit) = self.limit {
                pairs.append_pair("limit", &limit.to_string());
            }
        }
        let response = self.client.discovery_request(url, None).await?;
        let json = response.json().ok_or_else(|| {
            Error::not_described(format!(
                "the server answered OPTIONS /?q= without a HALO manifest ({})",
                response.status()
            ))
        })?;
        let manifest: Manifest = serde_json::from_value(json.clone())
            .map_err(|e| Error::decode(e).with_context("OPTIONS /?q="))?;
        let filter = TagFilter::parse(&self.tags.join(","));
        Ok(match json.get("search") {
            Some(search @ Value::Object(_)) => {
                let mut tools = manifest.tools;
                tools.truncate(limit);
                let total = search
                    .get("total")
                    .and_then(Value::as_u64)
                    .and_then(|total| usize::try_from(total).ok())
                    .unwrap_or(tools.len())
                    .max(tools.len());
                SearchResults {
                    tools,
                    total,
                    server_ranked: true,
                }
            }
            _ => rank(manifest.tools, query, &filter, limit),
        })
    }
}

/// The best matches among a whole manifest's entries, ranked here.
fn rank(entries: Vec<ToolEntry>, query: &str, filter: &TagFilter, limit: usize) -> SearchResults {
    let index = ToolIndex::new(entries.iter().map(|entry| (entry, None)));
    let hits = index.search(query, usize::MAX, |i| {
        filter.matches(entries[i].tags.iter().map(String::as_str))
    });
    let total = hits.len();
    let mut slots: Vec<Option<ToolEntry>> = entries.into_iter().map(Some).collect();
    let tools = hits
        .iter()
        .take(limit)
        .filter_map(|hit| slots.get_mut(hit.index).and_then(Option::take))
        .collect();
    SearchResults {
        tools,
        total,
        server_ranked: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<ToolEntry> {
        vec![
            ToolEntry::new("/books", "GET", "search_books", "Search the catalogue")
                .with_tags(["books", "read"]),
            ToolEntry::new("/weather", "GET", "get_weather", "Today's weather")
                .with_tags(["weather", "read"]),
            ToolEntry::new("/books", "POST", "create_book", "Add a book")
                .with_tags(["books", "write"]),
        ]
    }

    #[test]
    fn ranks_filters_and_counts() {
        let found = rank(entries(), "weather today", &TagFilter::default(), 20);
        assert_eq!(found.tools[0].name, "get_weather");
        assert_eq!(found.total, 1);
        assert!(!found.server_ranked);

        let books = rank(entries(), "book", &TagFilter::default(), 1);
        assert_eq!((books.tools.len(), books.total), (1, 2));

        let writes = rank(entries(), "book", &TagFilter::parse("write"), 20);
        assert_eq!(writes.tools.len(), 1);
        assert_eq!(writes.tools[0].name, "create_book");

        assert_eq!(
            rank(entries(), "kubernetes", &TagFilter::default(), 20).total,
            0
        );
    }
}
