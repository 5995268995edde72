//! The builder's approval settings: who decides ([`HaloBuilder::approver`]), what is kept
//! ([`HaloBuilder::approval_limits`]) and which operations need approval besides those that
//! declare it ([`HaloBuilder::require_approval`]). Kept here, beside the idea, rather than in
//! the builder's own file.

use halo_openapi::ApprovalRule;

use super::{ApprovalLimits, Approver, Book, DynApprover};
use crate::HaloBuilder;
use crate::registry::Registry;

/// What the builder collects for approvals.
#[derive(Debug, Default)]
pub(crate) struct Settings {
    approver: Option<Box<dyn DynApprover>>,
    limits: ApprovalLimits,
    rules: Vec<ApprovalRule>,
}

impl Settings {
    /// The rules, for the registry to write into the schemas they match.
    pub(crate) fn rules(&self) -> &[ApprovalRule] {
        &self.rules
    }

    /// The book of approvals of a layer over `registry`. Operations that need approval
    /// while no approver is set are refused at every call (`403`); the build goes on (an
    /// approver may be a deployment's choice), with a warning naming them.
    pub(crate) fn into_book(self, registry: &Registry) -> Book {
        if self.approver.is_none() {
            let held: Vec<&str> = registry
                .tools()
                .filter(|tool| {
                    let effects = tool.schema().effects.as_ref();
                    effects.is_some_and(|effects| effects.approval.is_some())
                })
                .map(|tool| tool.name())
                .collect();
            if !held.is_empty() {
                tracing::warn!(
                    target: "halo_axum::approval",
                    tools = %held.join(", "),
                    "these operations need approval and the layer has no approver: every call \
                     of them is refused with 403 (set one with HaloBuilder::approver)"
                );
            }
        }
        Book::new(self.approver, self.limits)
    }
}

impl HaloBuilder {
    /// Who decides the calls held for approval: operations whose schema says
    /// `"effects": {"approval": "required"}` (`#[halo(approval = "required")]`,
    /// [`Describe::approval`](crate::Describe::approval), or a rule of
    /// [`require_approval`](Self::require_approval)). Such a call is answered `202 Accepted`
    /// with `Location: /.well-known/halo/approvals/{id}` and runs once approved. Without an
    /// approver it is refused with `403` and never runs. See [`ApprovalQueue`](crate::ApprovalQueue)
    /// for the built-in one, decided over HTTP.
    ///
    /// ```
    /// use halo_axum::{ApprovalQueue, HaloLayer, Principal, StaticAuthenticator};
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api)
    ///     .authenticator(
    ///         StaticAuthenticator::new()
    ///             .bearer("demo-admin", Principal::new("admin").with_scopes(["approvals"])),
    ///     )
    ///     .approver(ApprovalQueue::new("approvals"))
    ///     .build()
    ///     .expect("valid HALO metadata");
    /// # let _: axum::Router = router.layer(layer);
    /// ```
    pub fn approver(mut self, approver: impl Approver) -> Self {
        self.approvals.approver = Some(Box::new(approver));
        self
    }

    /// Bounds the approvals kept, and sets how long they wait for a decision (15 minutes by
    /// default) and stay readable after it: see [`ApprovalLimits`].
    pub fn approval_limits(mut self, limits: ApprovalLimits) -> Self {
        self.approvals.limits = limits;
        self
    }

    /// Every operation `rule` matches needs approval, whatever its own metadata says. The
    /// rule is applied when the layer is built and written into the schemas it matches
    /// (`effects.approval`), so agents see it before they call. Rules add up.
    /// See [`ApprovalRule`].
    pub fn require_approval(mut self, rule: ApprovalRule) -> Self {
        self.approvals.rules.push(rule);
        self
    }
}
