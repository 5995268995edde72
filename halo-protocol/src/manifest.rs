//! The discovery manifest served at `OPTIONS /`.

use serde::{Deserialize, Serialize};

/// The manifest: what the API is and which tools it offers.
///
/// ```
/// use halo_protocol::{Manifest, ToolEntry};
///
/// let manifest = Manifest::new("Bookstore", "1.2.0")
///     .with_tool(ToolEntry::new("/api/books", "GET", "search_books", "Search the catalogue"));
/// let json = serde_json::to_string(&manifest).unwrap();
/// assert!(json.starts_with(r#"{"api":"Bookstore","version":"1.2.0","tools":[{"url":"/api/books""#));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Manifest {
    /// The API's name.
    pub api: String,
    /// The API's version.
    pub version: String,
    /// What the API is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The tools the caller may use.
    #[serde(default)]
    pub tools: Vec<ToolEntry>,
}

impl Manifest {
    /// An empty manifest for an API.
    #[must_use]
    pub fn new(api: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            api: api.into(),
            version: version.into(),
            description: String::new(),
            tools: Vec::new(),
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Adds a tool.
    #[must_use]
    pub fn with_tool(mut self, tool: ToolEntry) -> Self {
        self.tools.push(tool);
        self
    }
}

/// One tool in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolEntry {
    /// The path template (`/api/books/{id}`) or an absolute URL.
    pub url: String,
    /// The HTTP method, upper case.
    pub method: String,
    /// A unique name, safe as an LLM function name (`[A-Za-z0-9_-]{1,64}`).
    pub name: String,
    /// A name for people, in the language the response was negotiated for (`name` stays
    /// the identifier a model calls) (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, in a sentence.
    #[serde(default)]
    pub description: String,
    /// Tags for filtering (`read`, `write`, a domain ...).
    #[serde(default)]
    pub tags: Vec<String>,
    /// What kind of operation this is; absent means a plain tool (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
}

impl ToolEntry {
    /// A tool entry without tags.
    #[must_use]
    pub fn new(
        url: impl Into<String>,
        method: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            url: url.into(),
            method: method.into(),
            name: name.into(),
            title: None,
            description: description.into(),
            tags: Vec::new(),
            kind: None,
        }
    }

    /// Sets the tags.
    #[must_use]
    pub fn with_tags<I, T>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }
}

/// The kind of a manifest entry (extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ToolKind {
    /// An ordinary operation.
    Tool,
    /// An LLM agent hosted by the API.
    Agent,
}
