//! [`RegistryBuilder`]: what compiling a document takes besides the document.

use std::collections::HashMap;

use halo_protocol::{Circuit, Metadata};
use serde_json::Value;

use super::compile::Settings;
use super::exclude::Exclusions;
use super::lenient::{self, Record};
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
    lenient: bool,
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
            lenient: false,
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

    /// Builds leniently, for documents you do not own (a vendor's API): an operation that
    /// cannot be served is left out, or repaired where the repair is obvious and safe, and
    /// recorded in [`Registry::skipped`], rather than failing the whole document.
    ///
    /// Left out: an operation whose metadata does not parse, with a `$ref` that resolves
    /// nowhere, a parameter `in: path` its template does not have, an input schema the
    /// validator cannot compile, a [`DocumentLimits`] limit passed, a template that matches
    /// the same paths as an earlier one, a rate limit that cannot be enforced. Repaired: a
    /// template variable no parameter declares becomes a required string path parameter; a
    /// link (`undo`, `next`, `replace_with`, `fallback`) to no served operation is dropped.
    /// What is served is what a strict build of the document without the operations left
    /// out would serve.
    ///
    /// What concerns the document or the builder still fails the build: a document that is
    /// not an object, `paths` that is not one, an `operationId` given to
    /// [`describe`](Self::describe) or an exclusion that names nothing in the document.
    /// Without `lenient`, the first operation that cannot be served fails the build: the
    /// checks an application wants of its own document.
    ///
    /// ```
    /// use halo_openapi::Registry;
    /// use serde_json::json;
    ///
    /// let document = json!({
    ///     "openapi": "3.0.3",
    ///     "info": {"title": "Vendor", "version": "1"},
    ///     "paths": {
    ///         "/users": {"get": {"operationId": "list_users", "responses": {}}},
    ///         "/users/{id}/avatar": {"get": {
    ///             "operationId": "get_avatar",
    ///             "parameters": [{"name": "size", "in": "path", "required": true}],
    ///             "responses": {}
    ///         }}
    ///     }
    /// });
    /// assert!(Registry::builder(&document).build().is_err());
    ///
    /// let registry = Registry::builder(&document).lenient().build()?;
    /// assert_eq!(registry.tools().count(), 1);
    /// let skipped = &registry.skipped()[0];
    /// assert_eq!(skipped.operation_id(), Some("get_avatar"));
    /// assert!(skipped.reason().contains("`size` is declared `in: path`"));
    /// # Ok::<(), halo_openapi::BuildError>(())
    /// ```
    pub fn lenient(mut self) -> Self {
        self.lenient = true;
        self
    }

    /// Walks the document and pre-serialises every response.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the operation and what is wrong with it: metadata that does
    /// not parse, a reference that does not resolve, a limit passed, a link to no described
    /// path, an `operationId` given to [`describe`](Self::describe) that no operation has.
    /// A [`lenient`](Self::lenient) build fails only on what concerns the whole document.
    pub fn build(self) -> Result<Registry, BuildError> {
        let validate = match self.validation {
            Validation::Off => None,
            Validation::On => Some(Formats(true)),
            Validation::WithoutFormats => Some(Formats(false)),
        };
        let settings = Settings {
            document: self.document,
            described: self.described,
            validate,
            limits: self.limits,
            default_circuit: self.circuit,
            approval_rules: self.approval_rules,
            exclusions: self.exclusions,
        };
        if self.lenient {
            lenient::build(&settings)
        } else {
            let described = settings.described.clone();
            settings.compile(described, &mut Record::strict())
        }
    }
}
