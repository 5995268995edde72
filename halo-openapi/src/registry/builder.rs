//! [`RegistryBuilder`]: what compiling a document takes besides the document.

use std::collections::HashMap;

use halo_protocol::{Circuit, Metadata};
use serde_json::Value;

use super::exclude::Exclusions;
use super::{Formats, Registry};
use crate::{ApprovalRule, BuildError, DocumentLimits, Validation};

/// Compiles an OpenAPI document into a [`Registry`], made by [`Registry::builder`].
///
/// ```
/// use halo_openapi::{ApprovalRule, DocumentLimits, Registry, Validation};
/// use serde_json::json;
///
/// let document = json!({
///     "openapi": "3.1.0",
///     "info": {"title": "Books", "version": "1"},
///     "paths": {"/books/{id}": {"delete": {
///         "operationId": "delete_book",
///         "parameters": [{"name": "id", "in": "path", "required": true,
///                         "schema": {"type": "integer"}}],
///         "x-halo-effects": {"reversible": false},
///         "responses": {"204": {"description": "Deleted"}}
///     }}}
/// });
/// let registry = Registry::builder(&document)
///     .validation(Validation::On)
///     .limits(DocumentLimits::new().max_depth(32))
///     .require_approval(ApprovalRule::Irreversible)
///     .build()
///     .expect("a valid document");
/// let tool = registry.tools().next().unwrap();
/// assert_eq!(tool.name(), "delete_book");
/// ```
#[derive(Debug)]
#[must_use]
pub struct RegistryBuilder<'d> {
    document: &'d Value,
    described: HashMap<String, Metadata>,
    validation: Validation,
    limits: DocumentLimits,
    circuit: Option<Circuit>,
    approval_rules: Vec<ApprovalRule>,
    exclusions: Exclusions,
}

impl Registry {
    /// A builder of the registry of `document` (OpenAPI 3.0 or 3.1, as JSON).
    pub fn builder(document: &Value) -> RegistryBuilder<'_> {
        RegistryBuilder {
            document,
            described: HashMap::new(),
            validation: Validation::Off,
            limits: DocumentLimits::default(),
            circuit: None,
            approval_rules: Vec::new(),
            exclusions: Exclusions::default(),
        }
    }
}

impl RegistryBuilder<'_> {
    /// Adds `metadata` to the operation whose `operationId` is `operation_id`, over what its
    /// own `x-halo-*` extensions say; building fails when no operation has that id.
    pub fn describe(mut self, operation_id: impl Into<String>, metadata: Metadata) -> Self {
        self.described
            .entry(operation_id.into())
            .or_default()
            .merge(metadata);
        self
    }

    /// Whether each tool gets compiled checks of its input ([`Tool::validator`](super::Tool)).
    pub fn validation(mut self, validation: Validation) -> Self {
        self.validation = validation;
        self
    }

    /// The bounds on what the document may take to compile.
    pub fn limits(mut self, limits: DocumentLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The circuit breaker written into the schemas of operations that declare none.
    pub fn default_circuit(mut self, circuit: Circuit) -> Self {
        self.circuit = Some(circuit);
        self
    }

    /// Operations `rule` matches need approval: `"approval": "required"` is written into
    /// their effects.
    pub fn require_approval(mut self, rule: ApprovalRule) -> Self {
        self.approval_rules.push(rule);
        self
    }

    /// Leaves out the operation whose `operationId` is `operation_id`: it becomes no tool, as
    /// if it were marked `x-halo-exclude: true`. Building fails when no operation has the id.
    pub fn exclude_operation(mut self, operation_id: impl Into<String>) -> Self {
        self.exclusions.operation(operation_id.into());
        self
    }

    /// Leaves out every operation of the path `path`, as the document writes its key or
    /// template (`/{path}`). Building fails when the document has no such path.
    pub fn exclude_path(mut self, path: impl Into<String>) -> Self {
        self.exclusions.path(path.into());
        self
    }

    /// Walks the document and pre-serialises every response.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the operation and what is wrong with it: metadata that does
    /// not parse, a reference that does not resolve, a limit passed, a link to no described
    /// path, an `operationId` given to [`describe`](Self::describe) that no operation has.
    pub fn build(self) -> Result<Registry, BuildError> {
        let formats = match self.validation {
            Validation::Off => None,
            Validation::On => Some(Formats(true)),
            Validation::WithoutFormats => Some(Formats(false)),
        };
        Registry::build(
            self.document,
            self.described,
            formats,
            self.limits,
            (self.circuit, &self.approval_rules),
            &self.exclusions,
        )
    }
}
