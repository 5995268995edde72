//! Why a document could not be read.

use std::fmt;

/// Why [`Document::read`](crate::Document::read) could not read a document: it is not
/// well-formed JSON or YAML (the message says at which line and column), it passes a bound
/// on what reading may take, or it is no OpenAPI 3 or Swagger 2.0 document.
///
/// ```
/// use halo_openapi::Document;
///
/// let error = Document::read(b"{\"openapi\": \"3.1.0\",\n \"paths\": {]}").unwrap_err();
/// assert!(error.is_syntax());
/// assert!(error.to_string().contains("line 2, column 12"), "{error}");
/// ```
#[derive(Debug)]
pub struct ReadError {
    kind: Kind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Syntax,
    Limit,
    Unsupported,
}

impl ReadError {
    /// Not well-formed, saying where: `line` and `column` count from 1.
    pub(crate) fn syntax(format: &str, line: usize, column: usize, message: &str) -> Self {
        Self::new(
            Kind::Syntax,
            format!(
                "the document is not well-formed {format}: line {line}, column {column}: {message}"
            ),
        )
    }

    /// Not well-formed, where no place can be given (bytes that are not UTF-8).
    #[cfg(feature = "yaml")]
    pub(crate) fn malformed(message: String) -> Self {
        Self::new(Kind::Syntax, message)
    }

    pub(crate) fn limit(message: String) -> Self {
        Self::new(Kind::Limit, message)
    }

    pub(crate) fn unsupported(message: String) -> Self {
        Self::new(Kind::Unsupported, message)
    }

    fn new(kind: Kind, message: String) -> Self {
        Self { kind, message }
    }

    /// Whether the bytes are not well-formed JSON or YAML (or not UTF-8).
    #[must_use]
    pub fn is_syntax(&self) -> bool {
        self.kind == Kind::Syntax
    }

    /// Whether the document passes a bound on what reading may take: its size, how deeply
    /// it nests, how far its YAML aliases expand.
    ///
    /// ```
    /// use halo_openapi::Document;
    ///
    /// let deep = format!("{}{}", "[".repeat(500), "]".repeat(500));
    /// assert!(Document::read(deep.as_bytes()).unwrap_err().is_limit());
    /// ```
    #[must_use]
    pub fn is_limit(&self) -> bool {
        self.kind == Kind::Limit
    }

    /// Whether the document is not one this reader reads: not an object, neither OpenAPI 3
    /// (`openapi: 3.x`) nor Swagger 2.0 (`swagger: "2.0"`), or YAML without the crate's
    /// `yaml` feature.
    ///
    /// ```
    /// use halo_openapi::Document;
    ///
    /// let error = Document::read(br#"{"swagger": "1.2"}"#).unwrap_err();
    /// assert!(error.is_unsupported());
    /// ```
    #[must_use]
    pub fn is_unsupported(&self) -> bool {
        self.kind == Kind::Unsupported
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReadError {}
