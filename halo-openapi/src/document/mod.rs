//! Reading a document as it comes from a file or a URL: JSON or YAML, OpenAPI 3.0 and 3.1 as
//! they are, Swagger 2.0 converted to OpenAPI 3.0.
//!
//! Input is bounded before anything else ([`MAX_BYTES`], [`MAX_DEPTH`], and for YAML the
//! aliases' expansion), so a hostile document fails with a [`ReadError`] rather than
//! exhausting the process.

mod bounds;
mod error;
mod json;
mod notes;
mod recursive;
mod swagger;
#[cfg(test)]
mod tests;
#[cfg(feature = "yaml")]
mod yaml;

use serde_json::Value;

pub use self::error::ReadError;
use self::notes::Notes;

/// The most bytes a document may have: Stripe's, among the largest described APIs, has
/// 5 MB of JSON.
const MAX_BYTES: usize = 64 * 1024 * 1024;

/// How deeply a document may nest (objects and arrays inside each other): as deep as
/// `serde_json` parses, and what [`DocumentLimits`](crate::DocumentLimits) allows a schema.
const MAX_DEPTH: usize = 128;

/// An OpenAPI document read from bytes, as JSON the [`Registry`](crate::Registry) builder
/// takes: JSON or YAML, OpenAPI 3.0 or 3.1 as it is, Swagger 2.0 converted to OpenAPI 3.0.
///
/// JSON is told by its first character that is not blank (`{` or `[`); anything else is
/// read as YAML, with the crate's `yaml` feature. YAML is read by the 1.2 core schema:
/// `2024-01-01` and `yes` stay strings, as a JSON reader would have them. A key given twice
/// keeps its last value, in both.
///
/// [`Registry::builder`](crate::Registry::builder) itself refuses Swagger 2.0: converting
/// is this reader's, for documents that come as files, and what it changed or dropped is
/// told by [`notes`](Self::notes).
///
/// # YAML
///
/// YAML is read with `serde-saphyr` 2: it is written without `unsafe`, aims to be panic-free
/// on any input (and is fuzzed to be), is maintained, and bounds what a document may take
/// (events, nodes, depth, aliases and what they expand to) with budgets this reader sets.
/// The older choices are not: `serde_yaml` is archived, `serde_yml` has an unsoundness
/// advisory (RUSTSEC-2025-0068), and their forks parse with `unsafe-libyaml`, C translated
/// to Rust; `yaml-rust2` has no bound on what aliases expand to.
///
/// ```
/// use halo_openapi::{Document, Registry};
///
/// let swagger = br##"{
///     "swagger": "2.0",
///     "info": {"title": "Pets", "version": "1"},
///     "host": "pets.example.com",
///     "basePath": "/v1",
///     "paths": {"/pets": {"get": {
///         "operationId": "list_pets",
///         "produces": ["application/json"],
///         "parameters": [{"name": "limit", "in": "query", "type": "integer"}],
///         "responses": {"200": {"description": "The pets",
///             "schema": {"type": "array", "items": {"$ref": "#/definitions/Pet"}}}}
///     }}},
///     "definitions": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}}
/// }"##;
/// let document = Document::read(swagger)?;
/// assert_eq!(document.json()["openapi"], "3.0.3");
/// assert_eq!(document.json()["servers"][0]["url"], "https://pets.example.com/v1");
///
/// let registry = Registry::builder(document.json()).build().expect("a valid document");
/// let tool = registry.tools().next().unwrap();
/// assert_eq!(tool.name(), "list_pets");
/// assert!(tool.schema().input.contains_key("limit"));
/// # Ok::<(), halo_openapi::ReadError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Document {
    json: Value,
    notes: Vec<String>,
}

impl Document {
    /// Reads a document from its bytes.
    ///
    /// # Errors
    ///
    /// A [`ReadError`]: the bytes are not well-formed JSON or YAML, or pass a bound (more
    /// than 64 MiB, nested deeper than 128, YAML aliases that expand too far), or the
    /// document is no OpenAPI 3 or Swagger 2.0 document (or YAML, without the `yaml`
    /// feature).
    pub fn read(bytes: &[u8]) -> Result<Self, ReadError> {
        if bytes.len() > MAX_BYTES {
            return Err(ReadError::limit(format!(
                "the document has {} bytes, more than the {MAX_BYTES} a document may have",
                bytes.len()
            )));
        }
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        let json = match first {
            Some(b'{' | b'[') => json::parse(bytes)?,
            _ => yaml(bytes)?,
        };
        Self::from_json(json)
    }

    fn from_json(mut json: Value) -> Result<Self, ReadError> {
        let Value::Object(map) = &json else {
            return Err(ReadError::unsupported(
                "the document is not an object of `openapi` (or `swagger`), `info` and `paths`"
                    .to_owned(),
            ));
        };
        let mut notes = Notes::default();
        match (version(map.get("openapi")), version(map.get("swagger"))) {
            (Some(version), _) if version.starts_with("3.") => {
                if !map.get("openapi").is_some_and(Value::is_string) {
                    // YAML's `openapi: 3.0` is a number; the compiler reads a string.
                    json["openapi"] = Value::String(version.clone());
                    notes.note(notes::Note::VersionNumber, || "/openapi".to_owned());
                }
                if !version.starts_with("3.0") {
                    bounds::rewrite(&mut json, &mut notes);
                }
            }
            (_, Some(version)) if version == "2.0" => {
                json = swagger::convert(&json, &mut notes);
            }
            (Some(version), _) | (None, Some(version)) => {
                return Err(ReadError::unsupported(format!(
                    "the document is OpenAPI or Swagger {version}; this reader reads OpenAPI \
                     3.0 and 3.1, and Swagger 2.0"
                )));
            }
            (None, None) => {
                return Err(ReadError::unsupported(
                    "the document has neither `openapi` nor `swagger`: it is no OpenAPI \
                     document"
                        .to_owned(),
                ));
            }
        }
        recursive::resolve(&mut json, &mut notes);
        Ok(Self {
            json,
            notes: notes.into_sentences(),
        })
    }

    /// The document, as JSON: what [`Registry::builder`](crate::Registry::builder) takes.
    #[must_use]
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// The document, as JSON.
    #[must_use]
    pub fn into_json(self) -> Value {
        self.json
    }

    /// What converting the document changed or dropped, one sentence each (with how often
    /// and where first): a Swagger 2.0 document converted, and in an OpenAPI 3 document the
    /// few constructs of older JSON Schema drafts read as OpenAPI 3.1 says the same (a
    /// 2019-09 `$recursiveRef`, a boolean `exclusiveMinimum` in a 3.1 document); empty for a
    /// document read as it is.
    ///
    /// ```
    /// use halo_openapi::Document;
    ///
    /// let document = Document::read(br#"{"swagger": "2.0", "info": {"title": "T", "version": "1"},
    ///     "paths": {"/a": {"get": {"schemes": ["http"], "responses": {"default": {"description": ""}}}}}}"#)?;
    /// for note in document.notes() {
    ///     println!("{note}");
    /// }
    /// assert!(document.notes().iter().any(|note| note.contains("`schemes`")));
    /// # Ok::<(), halo_openapi::ReadError>(())
    /// ```
    #[must_use]
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// A version as the document gives it: a string, or a number (YAML's unquoted `2.0`).
fn version(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(version) => Some(version.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

#[cfg(feature = "yaml")]
fn yaml(bytes: &[u8]) -> Result<Value, ReadError> {
    yaml::parse(bytes)
}

#[cfg(not(feature = "yaml"))]
fn yaml(_: &[u8]) -> Result<Value, ReadError> {
    Err(ReadError::unsupported(
        "the document is not JSON (it does not start with `{` or `[`), and YAML is read only \
         with halo-openapi's `yaml` feature"
            .to_owned(),
    ))
}
