//! Why a registry could not be built from an OpenAPI document.

use std::fmt;

use halo_protocol::MetadataError;

/// An error found while building the HALO registry from an OpenAPI document.
///
/// Every error names the operation it concerns, so a misspelt extension, a dangling
/// reference or an `operationId` that does not exist fails at start-up with a message that
/// says where to look.
#[derive(Debug)]
pub struct BuildError {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Metadata {
        operation: String,
        source: MetadataError,
    },
    UnknownOperation {
        operation_id: String,
    },
    UnknownExclusion {
        target: String,
    },
    UnresolvedReference {
        operation: String,
        reference: String,
    },
    InvalidPath {
        path: String,
        message: String,
    },
    DanglingLink {
        operation: String,
        field: &'static str,
        target: String,
    },
    Document {
        message: String,
    },
    InvalidSchema {
        operation: String,
        message: String,
    },
    Parameter {
        operation: String,
        message: String,
    },
    Limit {
        operation: String,
        at: String,
        limit: &'static str,
        value: usize,
    },
    Settings {
        message: &'static str,
    },
}

impl BuildError {
    /// The HALO metadata of `operation` does not parse.
    #[must_use]
    pub fn metadata(operation: &str, source: MetadataError) -> Self {
        Self::new(Kind::Metadata {
            operation: operation.to_owned(),
            source,
        })
    }

    pub(crate) fn unknown_operation(operation_id: &str) -> Self {
        Self::new(Kind::UnknownOperation {
            operation_id: operation_id.to_owned(),
        })
    }

    pub(crate) fn unknown_exclusion(target: &str) -> Self {
        Self::new(Kind::UnknownExclusion {
            target: target.to_owned(),
        })
    }

    pub(crate) fn unresolved(operation: &str, reference: String) -> Self {
        Self::new(Kind::UnresolvedReference {
            operation: operation.to_owned(),
            reference,
        })
    }

    /// An operation's parameters disagree with its path template.
    pub(crate) fn parameter(operation: &str, message: String) -> Self {
        Self::new(Kind::Parameter {
            operation: operation.to_owned(),
            message,
        })
    }

    /// A limit of [`DocumentLimits`](crate::DocumentLimits) passed while building `operation`.
    pub(crate) fn limit(operation: &str, at: String, limit: &'static str, value: usize) -> Self {
        Self::new(Kind::Limit {
            operation: operation.to_owned(),
            at,
            limit,
            value,
        })
    }

    pub(crate) fn invalid_schema(operation: &str, message: String) -> Self {
        Self::new(Kind::InvalidSchema {
            operation: operation.to_owned(),
            message,
        })
    }

    pub(crate) fn invalid_path(path: &str, message: impl fmt::Display) -> Self {
        Self::new(Kind::InvalidPath {
            path: path.to_owned(),
            message: message.to_string(),
        })
    }

    pub(crate) fn dangling_link(operation: &str, field: &'static str, target: &str) -> Self {
        Self::new(Kind::DanglingLink {
            operation: operation.to_owned(),
            field,
            target: target.to_owned(),
        })
    }

    /// A document that cannot be read as OpenAPI at all, saying why.
    #[must_use]
    pub fn document(message: impl fmt::Display) -> Self {
        Self::new(Kind::Document {
            message: message.to_string(),
        })
    }

    /// Settings of the builder that contradict each other (one that needs another left out).
    #[must_use]
    pub fn settings(message: &'static str) -> Self {
        Self::new(Kind::Settings { message })
    }

    fn new(kind: Kind) -> Self {
        Self { kind }
    }

    /// Whether an `x-halo-*` extension (or metadata attached by `operationId`) is invalid.
    #[must_use]
    pub fn is_metadata(&self) -> bool {
        matches!(self.kind, Kind::Metadata { .. })
    }

    /// Whether metadata was attached to an `operationId` the document does not have, or an
    /// operation or path to leave out names none of the document's.
    #[must_use]
    pub fn is_unknown_operation(&self) -> bool {
        matches!(
            self.kind,
            Kind::UnknownOperation { .. } | Kind::UnknownExclusion { .. }
        )
    }

    /// Whether a `$ref` points nowhere in the document.
    #[must_use]
    pub fn is_unresolved_reference(&self) -> bool {
        matches!(self.kind, Kind::UnresolvedReference { .. })
    }

    /// Whether a link (`undo`, `next`, `replace_with`, `fallback`) names a path the API does
    /// not describe.
    #[must_use]
    pub fn is_dangling_link(&self) -> bool {
        matches!(self.kind, Kind::DanglingLink { .. })
    }

    /// Whether an operation's input cannot be compiled into a validator (validation is on
    /// and a schema is not valid JSON Schema, such as a `pattern` that is not a regex).
    #[must_use]
    pub fn is_invalid_schema(&self) -> bool {
        matches!(self.kind, Kind::InvalidSchema { .. })
    }

    /// Whether an operation's path parameters disagree with its path template: a parameter
    /// `in: path` that the template does not have (utoipa's `IntoParams` without
    /// `parameter_in = Query` and without the `axum_extras` feature writes these), or a
    /// template variable no parameter declares.
    #[must_use]
    pub fn is_invalid_parameter(&self) -> bool {
        matches!(self.kind, Kind::Parameter { .. })
    }

    /// Whether the document passed a limit of [`DocumentLimits`](crate::DocumentLimits):
    /// schemas nested too deeply, a served schema too large, too many definitions served.
    ///
    /// ```
    /// use halo_openapi::{DocumentLimits, Registry};
    /// use serde_json::json;
    ///
    /// let mut schema = json!({"type": "string"});
    /// for _ in 0..20 {
    ///     schema = json!({"type": "array", "items": schema});
    /// }
    /// let document = json!({
    ///     "openapi": "3.1.0", "info": {"title": "Deep", "version": "1"},
    ///     "paths": {"/deep": {"get": {"responses": {"200": {"description": "",
    ///         "content": {"application/json": {"schema": schema}}}}}}}
    /// });
    /// let error = Registry::builder(&document)
    ///     .limits(DocumentLimits::new().max_depth(16))
    ///     .build()
    ///     .unwrap_err();
    /// assert!(error.is_limit());
    /// assert!(error.to_string().contains("max_depth"));
    /// ```
    #[must_use]
    pub fn is_limit(&self) -> bool {
        matches!(self.kind, Kind::Limit { .. })
    }

    /// The builder's settings contradict each other: one needs another that was not given
    /// (halo-axum's layer refuses, for one, to require credentials with nothing to check
    /// them).
    ///
    /// ```
    /// let error = halo_openapi::BuildError::settings("require_credentials(true) needs an authenticator");
    /// assert!(error.is_settings());
    /// ```
    #[must_use]
    pub fn is_settings(&self) -> bool {
        matches!(self.kind, Kind::Settings { .. })
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Metadata { operation, source } => write!(f, "{operation}: {source}"),
            Kind::UnknownOperation { operation_id } => write!(
                f,
                "metadata was attached to operationId `{operation_id}`, which the OpenAPI document does not have"
            ),
            Kind::UnknownExclusion { target } => write!(
                f,
                "`{target}` was to be left out, but the OpenAPI document has no operation or path by that name"
            ),
            Kind::UnresolvedReference {
                operation,
                reference,
            } => write!(
                f,
                "{operation}: `$ref` {reference:?} points nowhere in the document (only local references are supported)"
            ),
            Kind::InvalidPath { path, message } => write!(f, "path {path:?}: {message}"),
            Kind::DanglingLink {
                operation,
                field,
                target,
            } => write!(
                f,
                "{operation}: `{field}` points at {target:?}, which no described operation serves"
            ),
            Kind::Document { message } => write!(f, "invalid OpenAPI document: {message}"),
            Kind::Settings { message } => f.write_str(message),
            Kind::InvalidSchema { operation, message } => write!(
                f,
                "{operation}: its input schema cannot be compiled for validation: {message}"
            ),
            Kind::Parameter { operation, message } => write!(f, "{operation}: {message}"),
            Kind::Limit {
                operation,
                at,
                limit,
                value,
            } => {
                let what = match *limit {
                    "max_depth" => "a schema nests deeper than",
                    "max_schema_bytes" => "its schema serialises to more bytes than",
                    _ => "the document's schemas serve more `$defs` entries in all than",
                };
                let at = if at.is_empty() {
                    String::new()
                } else {
                    format!(" at `{at}`")
                };
                write!(
                    f,
                    "{operation}{at}: {what} the limit of {value} (`DocumentLimits::{limit}`)"
                )
            }
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            Kind::Metadata { source, .. } => Some(source),
            _ => None,
        }
    }
}
