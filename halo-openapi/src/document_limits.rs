//! Bounds on what building the registry may take from a document.

/// Limits on the OpenAPI document a layer is built from, so that a hostile or broken
/// document fails [`build`](crate::RegistryBuilder::build) with a
/// [`BuildError`](crate::BuildError) naming the limit ([`is_limit`](crate::BuildError::is_limit))
/// instead of exhausting the process.
///
/// Bundling is linear in the document whatever its references, so the defaults are far
/// above what real documents need: GitHub's (771 operations) and Stripe's (468 operations,
/// a reference cycle through 71 schemas) build within them.
///
/// ```
/// use halo_openapi::{DocumentLimits, Registry};
/// use serde_json::json;
///
/// let document = json!({"openapi": "3.1.0", "info": {"title": "Ping", "version": "1"},
///     "paths": {"/ping": {"get": {"responses": {"204": {"description": "Pong"}}}}}});
/// let registry = Registry::builder(&document)
///     .limits(DocumentLimits::new().max_depth(64).max_schema_bytes(1 << 20))
///     .build()
///     .expect("a small document");
/// # let _ = registry;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct DocumentLimits {
    pub(crate) max_depth: usize,
    pub(crate) max_schema_bytes: usize,
    pub(crate) max_defs: usize,
}

impl Default for DocumentLimits {
    fn default() -> Self {
        Self {
            max_depth: 128,
            max_schema_bytes: 16 * 1024 * 1024,
            max_defs: 4 * 1024 * 1024,
        }
    }
}

impl DocumentLimits {
    /// The defaults: depth 128, 16 MiB per served schema, 4 Mi `$defs` entries in all.
    pub fn new() -> Self {
        Self::default()
    }

    /// How deeply a schema may nest (objects and arrays inside each other), counted within
    /// each schema and each referenced definition. Default 128, as deep as `serde_json`
    /// parses.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// How large one operation's served schema may be, in bytes of JSON. Default 16 MiB
    /// (Stripe's largest is under 1 MiB).
    pub fn max_schema_bytes(mut self, bytes: usize) -> Self {
        self.max_schema_bytes = bytes;
        self
    }

    /// How many `$defs` entries the served schemas may hold in all (each schema carries the
    /// definitions it reaches; their bytes are shared, their entries are not). Default
    /// 4 Mi, about 200 MiB of bookkeeping at most.
    pub fn max_defs(mut self, entries: usize) -> Self {
        self.max_defs = entries;
        self
    }
}
