//! [`ApprovalRule`]: which operations need approval besides those that declare it. A rule is
//! applied at start-up and written into the schemas it matches (`effects.approval`), so an
//! agent sees every approval the layer will ask for.

use halo_protocol::{Approval, Effects, Metadata};
use serde_json::Value;

/// Operations that need approval, whatever their own metadata says, given to
/// [`RegistryBuilder::require_approval`](crate::RegistryBuilder::require_approval) (and
/// halo-axum's `HaloBuilder::require_approval`).
///
/// ```
/// use halo_openapi::{ApprovalRule, Registry};
/// use serde_json::json;
///
/// let document = json!({"openapi": "3.1.0", "info": {"title": "Shop", "version": "1"},
///     "paths": {"/refunds": {"post": {"tags": ["payments"],
///         "responses": {"201": {"description": "Refunded"}}}}}});
/// // Irreversible effects need approval, and so does everything tagged `payments`.
/// let registry = Registry::builder(&document)
///     .require_approval(ApprovalRule::Irreversible)
///     .require_approval(ApprovalRule::tagged("payments"))
///     .build()
///     .expect("valid HALO metadata");
/// let effects = registry.tools().next().unwrap().schema().effects.as_ref().unwrap();
/// assert!(effects.approval.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApprovalRule {
    /// Operations that declare irreversible effects (`effects.reversible: false`).
    Irreversible,
    /// Operations with this OpenAPI tag.
    Tagged(String),
}

impl ApprovalRule {
    /// Operations with the OpenAPI tag `tag`.
    #[must_use]
    pub fn tagged(tag: impl Into<String>) -> Self {
        Self::Tagged(tag.into())
    }

    /// Whether the operation `operation` (OpenAPI JSON), with metadata `meta`, matches.
    fn matches(&self, meta: &Metadata, operation: &Value) -> bool {
        match self {
            Self::Irreversible => meta
                .effects
                .as_ref()
                .is_some_and(|effects| effects.reversible == Some(false)),
            Self::Tagged(tag) => operation
                .get("tags")
                .and_then(Value::as_array)
                .is_some_and(|tags| tags.iter().any(|t| t.as_str() == Some(tag))),
        }
    }
}

/// Writes `"approval": "required"` into the effects of an operation that one of `rules`
/// matches (and that does not say so already).
pub(crate) fn apply(rules: &[ApprovalRule], meta: &mut Metadata, operation: &Value) {
    if rules.iter().any(|rule| rule.matches(meta, operation)) {
        let effects = meta.effects.get_or_insert_with(Effects::default);
        effects.approval.get_or_insert(Approval::Required);
    }
}
