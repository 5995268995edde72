//! The builder's approval settings, beside the steps that use them: who decides, what is
//! kept, and which operations need approval besides those that declare it.

use halo_openapi::ApprovalRule;

use crate::HaloBuilder;
use crate::approval::{ApprovalLimits, Approver};

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
        self.approvals.set_approver(Box::new(approver));
        self
    }

    /// Bounds the approvals kept, and sets how long they wait for a decision (15 minutes by
    /// default) and stay readable after it: see [`ApprovalLimits`].
    pub fn approval_limits(mut self, limits: ApprovalLimits) -> Self {
        self.approvals.set_limits(limits);
        self
    }

    /// Every operation `rule` matches needs approval, whatever its own metadata says. The
    /// rule is applied when the layer is built and written into the schemas it matches
    /// (`effects.approval`), so agents see it before they call. Rules add up.
    /// See [`ApprovalRule`].
    pub fn require_approval(mut self, rule: ApprovalRule) -> Self {
        self.approvals.add_rule(rule);
        self
    }
}
