//! The document compiler of halo-rs: an OpenAPI 3.0 or 3.1 document (as JSON) in, a
//! [`Registry`] of HALO tools out.
//!
//! Compiling walks the document once: every operation becomes a tool with its manifest
//! entry and its full schema (inputs and where each goes, output, credentials, effects,
//! limits, next steps), every `$ref` is bundled within [`DocumentLimits`], and every answer
//! discovery gives (the manifest, each path's schemas, searches) is serialised ahead, as
//! shared pieces ([`Rope`]). A tool may carry a [`Validator`] that checks a call's
//! parameters and body against its schema before anything runs it.
//!
//! The crate reads JSON (and, with its `yaml` feature, YAML: [`Document`], which also
//! converts Swagger 2.0) and does no I/O: no web framework, no runtime. halo-axum's layer
//! serves and enforces what it compiles; the halo-rs gateway compiles the documents of APIs
//! it does not own with it.
//!
//! ```
//! use halo_openapi::Registry;
//! use serde_json::json;
//!
//! let document = json!({
//!     "openapi": "3.0.3",
//!     "info": {"title": "Pets", "version": "1"},
//!     "paths": {"/pets": {"get": {
//!         "operationId": "list_pets",
//!         "summary": "List the pets",
//!         "responses": {"200": {"description": "The pets"}}
//!     }}}
//! });
//! let registry = Registry::builder(&document).build()?;
//! let names: Vec<&str> = registry.tools().map(|tool| tool.name()).collect();
//! assert_eq!(names, ["list_pets"]);
//! # Ok::<(), halo_openapi::BuildError>(())
//! ```

mod approval_rule;
mod document;
mod document_limits;
mod error;
pub(crate) mod registry;
mod skipped;
mod upgrade;
mod validate;

pub use self::approval_rule::ApprovalRule;
pub use self::document::{Document, ReadError};
pub use self::document_limits::DocumentLimits;
pub use self::error::BuildError;
pub use self::registry::{
    Audience, Cached, Names, Registry, RegistryBuilder, Rope, RopeBody, Route, Tool, View,
    operation_tags, operations,
};
pub use self::skipped::Skipped;
pub use self::upgrade::upgrade_to_3_1;
pub use self::validate::{Validation, Validator};

/// Internals for the fuzz targets (`fuzz/`); not a stable API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing {
    /// The fast body check's verdict on `body` against `schema`: `Some(true)` when it vouches
    /// for the body, `Some(false)` when it leaves it to the full check, `None` when the
    /// schema does not take the fast check at all.
    #[must_use]
    pub fn fast_body_check(schema: &serde_json::Value, formats: bool, body: &[u8]) -> Option<bool> {
        crate::validate::Fast::compile(schema, formats).map(|fast| fast.accepts(body))
    }

    /// An `application/x-www-form-urlencoded` body as the value the layer checks against
    /// `schema` (whose `$defs` resolve its references); `None` when it is not UTF-8.
    #[must_use]
    pub fn read_form(body: &str, schema: &serde_json::Value) -> Option<serde_json::Value> {
        crate::validate::read_form(body, schema)
    }

    /// A `multipart/form-data` body sent with `content_type` as the value the layer checks
    /// against `schema`; `None` when there is no boundary, `Some(Err(why))` when it is
    /// malformed.
    #[must_use]
    pub fn read_multipart(
        body: &[u8],
        content_type: &str,
        schema: &serde_json::Value,
    ) -> Option<Result<serde_json::Value, &'static str>> {
        crate::validate::read_multipart(body, content_type, schema)
    }
}
