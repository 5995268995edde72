//! Tool search: the tools that best match a few words, ranked with BM25 over what a model
//! would look for (name, title, summary, `why`, tags, path, parameter names, description).
//!
//! One index serves every channel: HALO discovery's `OPTIONS /?q=`, the MCP bridges'
//! `search_tools`, the exports' `--q` and the agent loop. Servers build it from their
//! registry; clients from a manifest (and the schemas they have), so search works against a
//! server that does not search itself.

use std::collections::HashSet;
use std::sync::LazyLock;

use bm25::{Embedder, EmbedderBuilder, Scorer, Tokenizer};
use rust_stemmers::{Algorithm, Stemmer};

use serde_json::Value;

use crate::truncate::truncate;
use crate::{ToolDefinition, ToolEntry, ToolSchema};

/// How many tools a search answers when not told (the `limit` of `OPTIONS /?q=`).
pub const DEFAULT_SEARCH_LIMIT: usize = 20;

/// The most tools one search answers.
pub const MAX_SEARCH_LIMIT: usize = 100;

/// The most bytes of a query that are read; the rest is ignored.
const MAX_QUERY_BYTES: usize = 1024;

/// The most bytes of an operation's long description that are indexed: its first
/// paragraph or so says what it is about; the rest (notes, caveats, examples) dilutes it.
const DESCRIPTION_BYTES: usize = 300;

/// The tools of an API, indexed for search.
///
/// Each tool is one document of weighted fields: its name (three times), its summary and
/// title (twice), its tags (twice), then once each its `why`, the literal words of its path,
/// its parameter names and the start of its description. Words are split at case changes,
/// underscores, slashes and punctuation (`listReposForUser`, `list_repos_for_user` and
/// `/users/{username}/repos` all give `list repo user`), lower-cased, stripped of English
/// stop words and stemmed (Snowball), so a query in a person's words meets an
/// operation's identifiers.
///
/// ```
/// use halo_protocol::{ToolEntry, ToolIndex};
///
/// let entries = [
///     ToolEntry::new("/repos/{owner}/{repo}/issues", "GET", "issues_list_for_repo",
///                    "List repository issues"),
///     ToolEntry::new("/repos/{owner}/{repo}/pulls", "POST", "pulls_create",
///                    "Create a pull request"),
/// ];
/// let index = ToolIndex::new(entries.iter().map(|entry| (entry, None)));
/// let hits = index.search("open a new pull request", 5, |_| true);
/// assert_eq!(hits[0].index, 1);
/// // Only what the caller may see: hidden tools are never found.
/// assert!(index.search("open a new pull request", 5, |i| i != 1).is_empty());
/// ```
pub struct ToolIndex {
    /// Reads texts already split into words ([`Words`]), joined by spaces.
    embedder: Embedder<u32, Spaces>,
    scorer: Scorer<u32, u32>,
    len: usize,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.len)
            .finish_non_exhaustive()
    }
}

/// A tool a search found: its index in the order the index was built from, and its score
/// (higher is better; only the order is meaningful).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct SearchHit {
    /// The tool's position among the tools the index was built from.
    pub index: usize,
    /// Its BM25 score for the query.
    pub score: f32,
}

impl ToolIndex {
    /// Indexes tools: each one's manifest entry and, when known, its schema (which adds
    /// `why`, the parameter names and the long description).
    #[must_use]
    pub fn new<'a, I>(tools: I) -> Self
    where
        I: IntoIterator<Item = (&'a ToolEntry, Option<&'a ToolSchema>)>,
    {
        Self::from_texts(
            tools
                .into_iter()
                .map(|(entry, schema)| document_text(entry, schema)),
        )
    }

    /// Indexes tool definitions as an LLM API sees them (a client that was handed
    /// definitions rather than HALO schemas): each one's name, title, description and
    /// argument names.
    ///
    /// ```
    /// use halo_protocol::{Call, ToolEntry, ToolIndex, ToolSchema, tool_definitions};
    ///
    /// let definitions = tool_definitions(&[
    ///     (ToolEntry::new("/books", "GET", "list_books", "List the books"),
    ///      ToolSchema::new(Call::new("GET", "/books"))),
    ///     (ToolEntry::new("/weather", "GET", "weather", "Today's weather"),
    ///      ToolSchema::new(Call::new("GET", "/weather"))),
    /// ]);
    /// let index = ToolIndex::from_definitions(&definitions);
    /// assert_eq!(index.search("what is the weather like", 1, |_| true)[0].index, 1);
    /// ```
    #[must_use]
    pub fn from_definitions<'a, I>(definitions: I) -> Self
    where
        I: IntoIterator<Item = &'a ToolDefinition>,
    {
        Self::from_texts(definitions.into_iter().map(|definition| {
            let mut text = String::new();
            let mut add = weighted(&mut text);
            add(&definition.name, 3);
            if let Some(title) = &definition.title {
                add(title, 2);
            }
            // The description leads with `why` and the summary: weigh its start.
            add(truncate(&definition.description, 200), 1);
            add(truncate(&definition.description, DESCRIPTION_BYTES), 1);
            if let Some(Value::Object(properties)) = definition.input_schema.get("properties") {
                for name in properties.keys() {
                    add(name, 1);
                }
            }
            drop(add);
            text
        }))
    }

    fn from_texts(texts: impl Iterator<Item = String>) -> Self {
        // Each text is split into words once; the embedder then only splits at spaces.
        let documents: Vec<String> = texts.map(|text| Words.tokenize(&text).join(" ")).collect();
        let words: usize = documents
            .iter()
            .map(|document| Spaces.tokenize(document).len())
            .sum();
        let average = (words as f32 / documents.len().max(1) as f32).max(1.0);
        // Less length normalisation than BM25's usual 0.75: long descriptions are a tool's
        // notes, not a sign that it is about something else.
        let embedder = EmbedderBuilder::<u32, Spaces>::with_avgdl(average)
            .b(0.5)
            .build();
        let mut scorer = Scorer::new();
        for (index, document) in documents.iter().enumerate() {
            scorer.upsert(
                &u32::try_from(index).unwrap_or(u32::MAX),
                embedder.embed(document),
            );
        }
        Self {
            embedder,
            scorer,
            len: documents.len(),
        }
    }

    /// How many tools are indexed.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no tool is indexed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The best matches for `query` among the tools `visible` keeps (given each tool's
    /// index), best first, at most `limit` of them. Tools that share no word with the query
    /// are not answered; equal scores keep the index's order. A query is read up to its
    /// first kilobyte.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        visible: impl Fn(usize) -> bool,
    ) -> Vec<SearchHit> {
        let query = Words.tokenize(truncate(query, MAX_QUERY_BYTES)).join(" ");
        if query.is_empty() {
            return Vec::new();
        }
        let mut hits: Vec<SearchHit> = self
            .scorer
            .matches(&self.embedder.embed(&query))
            .into_iter()
            .map(|scored| SearchHit {
                index: scored.id as usize,
                score: scored.score,
            })
            .filter(|hit| hit.score > 0.0 && visible(hit.index))
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        hits.truncate(limit);
        hits
    }
}

/// The text a tool is indexed by, its fields repeated by weight.
fn document_text(entry: &ToolEntry, schema: Option<&ToolSchema>) -> String {
    let mut text = String::new();
    let mut add = weighted(&mut text);
    add(&entry.name, 2);
    add(&entry.description, 3);
    if let Some(title) = entry
        .title
        .as_deref()
        .or(schema.and_then(|s| s.title.as_deref()))
    {
        add(title, 2);
    }
    for tag in &entry.tags {
        add(tag, 1);
    }
    add(method_words(&entry.method), 1);
    for segment in entry.url.split('/').filter(|s| !s.starts_with('{')) {
        add(segment, 1);
    }
    if let Some(schema) = schema {
        if let Some(why) = &schema.why {
            add(why, 1);
        }
        for (name, field) in &schema.input {
            add(name, 1);
            // The values a query parameter chooses among say what the tool can do:
            // `state: open | closed` lists open issues.
            if field.location == Some(crate::Location::Query)
                && let Some(Value::Array(values)) = field.schema.get("enum")
            {
                for value in values.iter().filter_map(Value::as_str).take(12) {
                    add(value, 1);
                }
            }
        }
        if schema.description != entry.description {
            add(truncate(&schema.description, DESCRIPTION_BYTES), 1);
        }
    }
    drop(add);
    text
}

/// The verbs people use for what a method does, so that "remove a label" meets a `DELETE`
/// and "close an issue" a `PATCH`.
fn method_words(method: &str) -> &'static str {
    match method.to_ascii_uppercase().as_str() {
        "GET" | "HEAD" => "get list show read fetch retrieve view find",
        "POST" => "create add new make submit send start",
        "PUT" => "set replace update add put",
        "PATCH" => "update edit change modify rename close",
        "DELETE" => "delete remove erase revoke cancel",
        _ => "",
    }
}

/// Appends a field to a document's text as many times as it weighs.
fn weighted(text: &mut String) -> impl FnMut(&str, usize) + '_ {
    |field, times| {
        for _ in 0..times {
            text.push_str(field);
            text.push('\n');
        }
    }
}

/// English stop words (NLTK's list), which carry no meaning for ranking.
static STOP_WORDS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    stop_words::get(stop_words::LANGUAGE::English)
        .iter()
        .copied()
        .collect()
});

/// Abbreviations common in API identifiers, read as the words they stand for
/// (`repos_list` meets "list repositories").
const ABBREVIATIONS: [(&str, &str); 12] = [
    ("repo", "repository"),
    ("repos", "repository"),
    ("org", "organization"),
    ("orgs", "organization"),
    ("app", "application"),
    ("apps", "application"),
    ("config", "configuration"),
    ("env", "environment"),
    ("info", "information"),
    ("auth", "authentication"),
    ("pr", "pull request"),
    ("prs", "pull request"),
];

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// Splits text that [`Words`] already made at its spaces.
#[derive(Debug, Clone, Copy, Default)]
struct Spaces;

impl Tokenizer for Spaces {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        input_text.split_whitespace().map(str::to_owned).collect()
    }
}

/// Splits text into stemmed, lower-case words, identifiers included.
#[derive(Debug, Clone, Copy, Default)]
struct Words;

impl Tokenizer for Words {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        let mut tokens = Vec::new();
        for word in split_words(input_text) {
            let lower = word.to_lowercase();
            if lower.len() < 2 && !lower.chars().all(char::is_numeric) {
                continue;
            }
            if STOP_WORDS.contains(lower.as_str()) {
                continue;
            }
            match ABBREVIATIONS.iter().find(|(short, _)| *short == lower) {
                Some((_, long)) => {
                    tokens.extend(long.split(' ').map(|w| STEMMER.stem(w).into_owned()));
                }
                None => tokens.push(STEMMER.stem(&lower).into_owned()),
            }
        }
        tokens
    }
}

/// The words of a text: runs of letters and digits, split where the case goes from lower to
/// upper (`listRepos`) and before the last capital of a run of capitals that a lower-case
/// letter follows (`HTTPServer` → `HTTP`, `Server`).
fn split_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|run| !run.is_empty())
        .flat_map(split_case)
}

fn split_case(run: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = run.char_indices().collect();
    let mut words = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let previous = chars[i - 1].1;
        // `HTTPServer` splits before `S`; a plural acronym (`PRs`, `URLs`) stays whole.
        let plural = chars.get(i + 1).is_some_and(|(_, n)| *n == 's') && i + 2 == chars.len();
        let next_lower = !plural && chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        let boundary = (c.is_uppercase() && previous.is_lowercase())
            || (c.is_uppercase() && previous.is_uppercase() && next_lower)
            || (c.is_alphabetic() != previous.is_alphabetic());
        if boundary {
            words.push(&run[start..at]);
            start = at;
        }
    }
    words.push(&run[start..]);
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Call, InputField};
    use serde_json::json;

    fn words(text: &str) -> Vec<String> {
        Words.tokenize(text)
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(words("listReposForUser"), ["list", "repositori", "user"]);
        assert_eq!(words("list_repos_for_user"), ["list", "repositori", "user"]);
        assert_eq!(
            words("/users/{username}/repos"),
            ["user", "usernam", "repositori"]
        );
        assert_eq!(words("list PRs"), ["list", "pull", "request"]);
        assert_eq!(words("getURLs"), ["get", "url"]);
        assert_eq!(words("HTTPServer v2"), ["http", "server", "2"]);
        assert_eq!(words("repos/list-for-user"), ["repositori", "list", "user"]);
        assert!(words("the of a").is_empty());
        assert!(words("").is_empty());
    }

    #[test]
    fn text_beyond_ascii_is_fine() {
        assert_eq!(words("Café crème"), ["café", "crème"]);
        assert_eq!(words("日本語のテキスト"), ["日本語のテキスト"]);
        // Mixed scripts and combining marks never split inside a character.
        let _ = words("e\u{301}Ab\u{301}C𝔘𝔫𝔦");
    }

    fn tools() -> Vec<(ToolEntry, ToolSchema)> {
        let tool = |url: &str, method: &str, name: &str, summary: &str, tags: &[&str]| {
            let entry = ToolEntry::new(url, method, name, summary).with_tags(tags.to_vec());
            let schema = ToolSchema::new(Call::new(method, url));
            (entry, schema)
        };
        let mut tools = vec![
            tool(
                "/api/books",
                "GET",
                "search_books",
                "Search the catalogue",
                &["books"],
            ),
            tool(
                "/api/books/{id}",
                "GET",
                "get_book",
                "Get one book",
                &["books"],
            ),
            tool(
                "/api/orders",
                "POST",
                "place_order",
                "Order books",
                &["orders"],
            ),
            tool("/api/weather", "GET", "weather", "Today's weather", &[]),
        ];
        tools[2].1.why = Some("Use to buy books for a customer".into());
        tools[2].1.input.insert(
            "customer_email".into(),
            InputField::new(json!({"type": "string"})),
        );
        tools
    }

    fn index(tools: &[(ToolEntry, ToolSchema)]) -> ToolIndex {
        ToolIndex::new(tools.iter().map(|(entry, schema)| (entry, Some(schema))))
    }

    #[test]
    fn ranks_by_every_field() {
        let tools = tools();
        let index = index(&tools);
        assert_eq!(index.len(), 4);
        let names = |query: &str| -> Vec<&str> {
            index
                .search(query, 10, |_| true)
                .iter()
                .map(|hit| tools[hit.index].0.name.as_str())
                .collect()
        };
        assert_eq!(names("weather today")[0], "weather");
        // `why` and parameter names are searched.
        assert_eq!(names("buy")[0], "place_order");
        assert_eq!(names("customer email"), ["place_order"]);
        // Stems meet: "searching" finds "Search".
        assert_eq!(names("searching the catalogue")[0], "search_books");
        // No shared word, no answer.
        assert!(names("kubernetes").is_empty());
        assert!(names("").is_empty());
        assert!(names("the of and").is_empty());
    }

    #[test]
    fn limit_visibility_and_order() {
        let tools = tools();
        let index = index(&tools);
        let all = index.search("book", 10, |_| true);
        assert!(all.len() >= 3, "{all:?}");
        assert!(all.windows(2).all(|w| w[0].score >= w[1].score));
        assert_eq!(index.search("book", 1, |_| true).len(), 1);
        assert!(index.search("book", 0, |_| true).is_empty());
        let hidden = index.search("book", 10, |i| i != all[0].index);
        assert!(hidden.iter().all(|hit| hit.index != all[0].index));
        assert_eq!(hidden.len(), all.len() - 1);
        // The same query always answers in the same order.
        for _ in 0..5 {
            assert_eq!(index.search("book", 10, |_| true), all);
        }
    }

    #[test]
    fn hostile_queries_are_fine() {
        let tools = tools();
        let index = index(&tools);
        let long = "book ".repeat(100_000);
        assert!(!index.search(&long, 5, |_| true).is_empty());
        let _ = index.search("\u{0}\u{ffff}%%%{}{}", 5, |_| true);
        let empty = ToolIndex::new(std::iter::empty());
        assert!(empty.is_empty());
        assert!(empty.search("book", 5, |_| true).is_empty());
    }
}
