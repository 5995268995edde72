//! The builder's approval settings: who decides (`HaloBuilder::approver`), what is kept
//! (`HaloBuilder::approval_limits`) and which operations need approval besides those that
//! declare it (`HaloBuilder::require_approval`), and the book they make.

use halo_openapi::ApprovalRule;

use super::{ApprovalLimits, Book, DynApprover};
use crate::registry::Registry;

/// What the builder collects for approvals.
#[derive(Debug, Default)]
pub(crate) struct Settings {
    approver: Option<Box<dyn DynApprover>>,
    limits: ApprovalLimits,
    rules: Vec<ApprovalRule>,
}

impl Settings {
    /// Who decides.
    pub(crate) fn set_approver(&mut self, approver: Box<dyn DynApprover>) {
        self.approver = Some(approver);
    }

    /// What is kept, for how long.
    pub(crate) fn set_limits(&mut self, limits: ApprovalLimits) {
        self.limits = limits;
    }

    /// One more rule.
    pub(crate) fn add_rule(&mut self, rule: ApprovalRule) {
        self.rules.push(rule);
    }

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
