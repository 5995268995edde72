//! The builder's settings of what the document compiles into: metadata attached by
//! `operationId`, operations left out, lenient builds for documents you do not own, the
//! document's limits, and the layer a new one replaces.

use std::sync::Arc;

use super::{Describe, HaloBuilder, HaloLayer};
use crate::DocumentLimits;

impl HaloBuilder {
    /// Attaches HALO metadata to the operation with this `operationId`, for operations you
    /// cannot annotate with `#[halo(...)]`. What it sets replaces what the operation's own
    /// extensions say. [`build`](Self::build) fails if no operation has this id.
    pub fn describe(mut self, operation_id: impl Into<String>, describe: Describe) -> Self {
        self.described.push((operation_id.into(), describe));
        self
    }

    /// Leaves out the operation with this `operationId`: it becomes no tool (discovery does
    /// not know it, agents are not offered it) and the layer passes its calls to the app
    /// untouched, as if the document marked it `x-halo-exclude: true`. For an operation
    /// agents should not call, such as a documented fallback (`GET /{path}`).
    /// [`build`](Self::build) fails if no operation has this id.
    ///
    /// ```
    /// use halo_axum::HaloLayer;
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # /// Answers unknown paths.
    /// # #[utoipa::path(get, path = "/{path}", responses((status = 404)))]
    /// # async fn not_found() {}
    /// # let (router, api) = OpenApiRouter::new()
    /// #     .routes(routes!(ping)).routes(routes!(not_found)).split_for_parts();
    /// // `not_found` documents `/{path}` without declaring `{path}`: left out, it is fine.
    /// let layer = HaloLayer::builder(api).exclude_operation("not_found").build()?;
    /// # let _: axum::Router = router.layer(layer);
    /// # Ok::<(), halo_axum::BuildError>(())
    /// ```
    pub fn exclude_operation(mut self, operation_id: impl Into<String>) -> Self {
        self.excluded.0.push(operation_id.into());
        self
    }

    /// Leaves out every operation of `path`, as the document writes it (`/{path}`), as
    /// [`exclude_operation`](Self::exclude_operation) leaves out one. [`build`](Self::build)
    /// fails if the document has no such path.
    pub fn exclude_path(mut self, path: impl Into<String>) -> Self {
        self.excluded.1.push(path.into());
        self
    }

    /// Builds leniently, for a document you do not own (a vendor's API behind a gateway):
    /// an operation that cannot be served is left out, or repaired where that is obvious and
    /// safe, and listed by [`HaloLayer::skipped`], rather than failing the build. See
    /// halo-openapi's [`RegistryBuilder::lenient`](halo_openapi::RegistryBuilder::lenient)
    /// for what is left out and what repaired. An application's own document is better
    /// built strictly (the default), which fails on the first such operation.
    ///
    /// ```
    /// use halo_axum::HaloBuilder;
    /// use serde_json::json;
    ///
    /// let layer = HaloBuilder::from_openapi_json(json!({
    ///     "openapi": "3.1.0", "info": {"title": "Vendor", "version": "1"},
    ///     "paths": {"/pets": {"get": {"operationId": "list_pets", "responses": {},
    ///         "parameters": [{"$ref": "#/components/parameters/Gone"}]}}}
    /// }))
    /// .lenient()
    /// .build()?;
    /// assert_eq!(layer.skipped()[0].operation_id(), Some("list_pets"));
    /// # Ok::<(), halo_axum::BuildError>(())
    /// ```
    pub fn lenient(mut self) -> Self {
        self.lenient = true;
        self
    }

    /// Bounds what building may take from the document: how deeply its schemas nest, how
    /// large a served schema may be. See [`DocumentLimits`] for the defaults.
    pub fn document_limits(mut self, limits: DocumentLimits) -> Self {
        self.document_limits = limits;
        self
    }

    /// Builds a layer that replaces `previous` (a configuration reloaded, a document
    /// changed) and keeps its state: each tool with the same name that declares the same
    /// limits, input and resilience keeps its rate budgets and its circuit breaker's state,
    /// and the idempotency records kept in this process's memory stay (with the limits they
    /// were made with), as do the calls held for approval: read, decided and run through the
    /// new layer (one whose tool the new layer no longer serves does not run: `410`), their
    /// callers still waiting on them. Calls in flight on `previous` finish there. State kept
    /// in Redis ([`redis`](Self::redis)) is keyed by tool name and needs none of this.
    ///
    /// ```
    /// use halo_axum::HaloBuilder;
    /// use serde_json::json;
    ///
    /// let document = json!({
    ///     "openapi": "3.1.0", "info": {"title": "Pets", "version": "1"},
    ///     "paths": {"/pets": {"get": {"operationId": "list_pets", "responses": {},
    ///         "x-halo-limits": {"rate": "10/minute"}}}}
    /// });
    /// let first = HaloBuilder::from_openapi_json(document.clone()).build().unwrap();
    /// // Later, the same document (or a changed one) again: `list_pets` keeps its budget.
    /// let second = HaloBuilder::from_openapi_json(document).carry_over(&first).build().unwrap();
    /// # let _ = second;
    /// ```
    pub fn carry_over(mut self, previous: &HaloLayer) -> Self {
        self.previous = Some(Arc::clone(&previous.shared));
        self
    }
}
