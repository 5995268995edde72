//! [`ApprovalRule`]: which operations need approval besides those that declare it. A rule is
//! applied at start-up and written into the schemas it matches (`effects.approval`), so an
//! agent sees every approval the layer will ask for.

use halo_protocol::{Approval, Effects, Metadata};
use serde_json::Value;

/// Operations that need approval, whatever their own metadata says, given to
/// [`HaloBuilder::require_approval`](crate::HaloBuilder::require_approval).
///
/// ```
/// use halo_axum::{ApprovalQueue, ApprovalRule, HaloLayer};
/// # use utoipa_axum::{router::OpenApiRouter, routes};
/// # /// Ping.
/// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
/// # async fn ping() {}
/// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
///
/// // Irreversible effects need approval, and so does everything tagged `payments`.
/// let layer = HaloLayer::builder(api)
///     .require_approval(ApprovalRule::Irreversible)
///     .require_approval(ApprovalRule::tagged("payments"))
///     .approver(ApprovalQueue::new("approvals"))
///     .build()
///     .expect("valid HALO metadata");
/// # let _: axum::Router = router.layer(layer);
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
