//! What a request body must be: the registry describes it from the OpenAPI document, and
//! validation checks calls against it.

use serde_json::Value;

/// What a request body must be, for validation.
#[derive(Debug, Clone)]
pub(crate) struct BodySpec {
    /// The body's whole schema (self-contained).
    pub(crate) schema: Value,
    pub(crate) media_type: String,
    pub(crate) required: bool,
    /// The input entry standing for the whole body, when its properties were not flattened.
    pub(crate) entry: Option<String>,
}

impl BodySpec {
    pub(crate) fn is_json(&self) -> bool {
        halo_protocol::is_json(&self.media_type)
    }
}
