//! [`Skipped`]: what a lenient build left out of a document, or kept but changed.

/// An operation a [lenient](crate::RegistryBuilder::lenient) build could not serve as the
/// document describes it: left out (it is no tool), or kept with an obvious, safe repair
/// ([`is_repaired`](Self::is_repaired)). [`Registry::skipped`](crate::Registry::skipped)
/// lists them in document order.
///
/// ```
/// use halo_openapi::Registry;
/// use serde_json::json;
///
/// let document = json!({
///     "openapi": "3.1.0",
///     "info": {"title": "Vendor", "version": "1"},
///     "paths": {
///         "/items": {"get": {"operationId": "list_items", "responses": {}}},
///         "/items/{id}": {"get": {"operationId": "get_item", "responses": {}}},
///         "/orders": {"post": {"operationId": "create_order", "requestBody": {
///             "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Nope"}}}
///         }, "responses": {}}}
///     }
/// });
/// let registry = Registry::builder(&document).lenient().build()?;
/// let names: Vec<&str> = registry.tools().map(|tool| tool.name()).collect();
/// assert_eq!(names, ["list_items", "get_item"]);
///
/// let [repaired, skipped] = registry.skipped() else { panic!() };
/// // `{id}` was declared by no parameter: it is now a required string path parameter.
/// assert!(repaired.is_repaired());
/// assert_eq!((repaired.method(), repaired.path()), ("GET", "/items/{id}"));
/// // The body's `$ref` resolves nowhere: the operation is no tool.
/// assert!(!skipped.is_repaired());
/// assert_eq!(skipped.operation_id(), Some("create_order"));
/// assert!(skipped.reason().contains("#/components/schemas/Nope"));
/// # Ok::<(), halo_openapi::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skipped {
    method: &'static str,
    path: String,
    operation_id: Option<String>,
    reason: String,
    repaired: bool,
}

impl Skipped {
    pub(crate) fn new(
        method: &'static str,
        path: &str,
        operation_id: Option<&str>,
        reason: String,
        repaired: bool,
    ) -> Self {
        Self {
            method,
            path: path.to_owned(),
            operation_id: operation_id.map(str::to_owned),
            reason,
            repaired,
        }
    }

    /// The operation's method, upper-case (`GET`); `*` when a whole path item could not be
    /// read (a path item `$ref` that resolves nowhere).
    #[must_use]
    pub fn method(&self) -> &str {
        self.method
    }

    pub(crate) fn method_key(&self) -> &'static str {
        self.method
    }

    /// The operation's path, as the document's `paths` writes its key.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The operation's `operationId`, when it has one.
    #[must_use]
    pub fn operation_id(&self) -> Option<&str> {
        self.operation_id.as_deref()
    }

    /// Why, in the words a strict build's [`BuildError`](crate::BuildError) would have
    /// failed with (which name the operation); for a repair, followed by what was changed.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Whether the operation was kept, changed (a template variable no parameter declared
    /// declared as a required string path parameter; a link to no served operation dropped),
    /// rather than left out.
    #[must_use]
    pub fn is_repaired(&self) -> bool {
        self.repaired
    }
}
