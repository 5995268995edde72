//! Who decides: the [`Approver`] trait, the [`ApprovalRequest`] it is shown, the [`Verdict`]
//! it may give at once, and the built-in [`ApprovalQueue`], decided over HTTP by callers
//! holding a scope.

use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use serde_json::Value;

use halo_auth::Principal;

/// Decides the calls held for approval.
///
/// Two ways to decide, which an approver may combine: over HTTP, by the callers
/// [`may_decide`](Approver::may_decide) admits (they list pending approvals at
/// `GET /.well-known/halo/approvals` and approve or deny them), and at once, by answering
/// [`requested`](Approver::requested) with a [`Verdict`] (a policy engine, a webhook).
/// A call nobody decides within [`ApprovalLimits::expire_after`](super::ApprovalLimits::expire_after)
/// is denied. Give it to halo-axum's `HaloBuilder::approver`.
///
/// ```
/// use halo_auth::Principal;
/// use halo_govern::approval::{ApprovalRequest, Approver, Verdict};
///
/// /// Lets refunds up to 50 through at once; leaves the others to the finance team.
/// struct SmallRefunds;
///
/// impl Approver for SmallRefunds {
///     fn may_decide(&self, caller: &Principal) -> bool {
///         caller.has_scope("finance")
///     }
///
///     async fn requested(&self, request: &ApprovalRequest) -> Option<Verdict> {
///         let amount = request.arguments()?.get("amount")?.as_u64()?;
///         (amount <= 50).then(|| Verdict::approve("small-refunds policy"))
///     }
/// }
/// ```
pub trait Approver: Send + Sync + 'static {
    /// Whether `caller` may list the pending approvals and approve or deny them over HTTP.
    fn may_decide(&self, caller: &Principal) -> bool;

    /// Whether a caller [`may_decide`](Approver::may_decide) admits may also decide the
    /// calls it made itself (`false` by default: a second person approves).
    fn self_approval(&self) -> bool {
        false
    }

    /// Told of each call held for approval, once, after its `202` is sent: a verdict to
    /// decide it now, or `None` (the default) to leave it to the callers
    /// [`may_decide`](Approver::may_decide) admits. A verdict that comes after someone
    /// decided (or after the approval expired) is ignored.
    fn requested(&self, request: &ApprovalRequest) -> impl Future<Output = Option<Verdict>> + Send {
        let _ = request;
        std::future::ready(None)
    }
}

/// The future of a type-erased approver's verdict.
pub type Verdicts<'a> = Pin<Box<dyn Future<Output = Option<Verdict>> + Send + 'a>>;

/// An [`Approver`] behind a pointer: every approver is one, as the [`Book`](super::Book)
/// keeps it.
pub trait DynApprover: Send + Sync + 'static {
    /// [`Approver::may_decide`].
    fn may_decide(&self, caller: &Principal) -> bool;
    /// [`Approver::self_approval`].
    fn self_approval(&self) -> bool;
    /// [`Approver::requested`], boxed.
    fn requested<'a>(&'a self, request: &'a ApprovalRequest) -> Verdicts<'a>;
}

impl<A: Approver> DynApprover for A {
    fn may_decide(&self, caller: &Principal) -> bool {
        Approver::may_decide(self, caller)
    }

    fn self_approval(&self) -> bool {
        Approver::self_approval(self)
    }

    fn requested<'a>(&'a self, request: &'a ApprovalRequest) -> Verdicts<'a> {
        Box::pin(Approver::requested(self, request))
    }
}

impl std::fmt::Debug for dyn DynApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Approver")
    }
}

/// A call held for approval, as an [`Approver`] is shown it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ApprovalRequest {
    pub(crate) id: String,
    pub(crate) tool: String,
    pub(crate) caller: Option<String>,
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) arguments: Option<Value>,
    /// Set with the id, when the approval is booked.
    pub(crate) expires_at: SystemTime,
}

impl ApprovalRequest {
    /// A call of `tool` by `caller` (`None`: anonymous), `method` on `target` (its path and
    /// query), with its redacted JSON `arguments`; its id and expiry are set when it is
    /// booked. For the layer that holds calls (halo-axum's); not a stable API.
    #[doc(hidden)]
    #[must_use]
    pub fn new(
        tool: String,
        caller: Option<String>,
        method: String,
        target: String,
        arguments: Option<Value>,
    ) -> Self {
        Self {
            id: String::new(),
            tool,
            caller,
            method,
            target,
            arguments,
            expires_at: SystemTime::UNIX_EPOCH,
        }
    }

    /// The approval's id (the last segment of its `Location`).
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool's name in the manifest.
    #[must_use]
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The id of the principal that made the call; `None` when anonymous.
    #[must_use]
    pub fn caller(&self) -> Option<&str> {
        self.caller.as_deref()
    }

    /// The call's method, upper case.
    #[must_use]
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The call's path and query.
    #[must_use]
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The call's JSON body, with the values of `writeOnly` and `format: password` inputs
    /// replaced by `"[redacted]"`; `None` when the body is empty or not JSON.
    #[must_use]
    pub fn arguments(&self) -> Option<&Value> {
        self.arguments.as_ref()
    }

    /// When the approval expires if nobody decides it: its `expires_at`. A verdict given
    /// after that is ignored.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use halo_auth::Principal;
    /// use halo_govern::approval::{ApprovalRequest, Approver, Verdict};
    ///
    /// /// Pages the person on call, unless too little time is left for them to decide.
    /// struct Pager;
    ///
    /// impl Approver for Pager {
    ///     fn may_decide(&self, caller: &Principal) -> bool {
    ///         caller.has_scope("on-call")
    ///     }
    ///
    ///     async fn requested(&self, request: &ApprovalRequest) -> Option<Verdict> {
    ///         let left = request
    ///             .expires_at()
    ///             .duration_since(SystemTime::now())
    ///             .unwrap_or_default();
    ///         if left < Duration::from_secs(60) {
    ///             return Some(Verdict::deny("pager", "no time left to page anyone"));
    ///         }
    ///         // Page someone here; they decide over HTTP.
    ///         None
    ///     }
    /// }
    /// ```
    #[must_use]
    pub fn expires_at(&self) -> SystemTime {
        self.expires_at
    }
}

/// An approver's decision of a held call: approved or denied, by whom, and why.
///
/// ```
/// use halo_govern::approval::Verdict;
///
/// let no = Verdict::deny("risk-engine", "the amount is over the daily limit");
/// assert!(!no.is_approved());
/// assert_eq!(no.by(), "risk-engine");
/// assert_eq!(no.reason(), Some("the amount is over the daily limit"));
/// assert!(Verdict::approve("risk-engine").is_approved());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    approved: bool,
    by: String,
    reason: Option<String>,
}

impl Verdict {
    /// A decision made over HTTP (halo-axum's approval endpoints) or by a webhook:
    /// `approved` or denied by `by`, for `reason`. Not a stable API.
    #[doc(hidden)]
    #[must_use]
    pub fn new(approved: bool, by: &str, reason: Option<String>) -> Self {
        Self {
            approved,
            by: by.to_owned(),
            reason,
        }
    }

    /// Approved by `by` (a name for the audit trail).
    #[must_use]
    pub fn approve(by: impl Into<String>) -> Self {
        Self {
            approved: true,
            by: by.into(),
            reason: None,
        }
    }

    /// Denied by `by`, for `reason` (shown to the caller).
    #[must_use]
    pub fn deny(by: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            approved: false,
            by: by.into(),
            reason: Some(reason.into()),
        }
    }

    /// The same verdict, with `reason` (cut to 1,000 characters when recorded).
    #[must_use]
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Whether the call may run.
    #[must_use]
    pub fn is_approved(&self) -> bool {
        self.approved
    }

    /// Who decided.
    #[must_use]
    pub fn by(&self) -> &str {
        &self.by
    }

    /// Why, when given.
    #[must_use]
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
}

/// The built-in [`Approver`]: pending approvals wait in the layer, and callers holding
/// `scope` list them (`GET /.well-known/halo/approvals`) and approve or deny them
/// (`POST /.well-known/halo/approvals/{id}/approve`, `…/deny`). Nobody decides a call of
/// their own unless [`self_approval`](ApprovalQueue::self_approval) says so.
///
/// ```
/// use halo_auth::Principal;
/// use halo_govern::approval::{ApprovalQueue, Approver};
///
/// // halo-axum: `HaloLayer::builder(api).approver(queue)`, behind an authenticator that
/// // gives the approvers the scope.
/// let queue = ApprovalQueue::new("approvals");
/// assert!(queue.may_decide(&Principal::new("admin").with_scopes(["approvals"])));
/// assert!(!queue.may_decide(&Principal::new("reader")));
/// ```
#[derive(Debug, Clone)]
pub struct ApprovalQueue {
    scope: String,
    self_approval: bool,
}

impl ApprovalQueue {
    /// A queue decided by the callers granted `scope`.
    #[must_use]
    pub fn new(scope: impl Into<String>) -> Self {
        Self {
            scope: scope.into(),
            self_approval: false,
        }
    }

    /// Whether an approver may decide its own calls (`false` by default). A demo with one
    /// administrator needs it; a team should not.
    #[must_use]
    pub fn self_approval(mut self, allowed: bool) -> Self {
        self.self_approval = allowed;
        self
    }
}

impl Approver for ApprovalQueue {
    fn may_decide(&self, caller: &Principal) -> bool {
        caller.has_scope(&self.scope)
    }

    fn self_approval(&self) -> bool {
        self.self_approval
    }
}
