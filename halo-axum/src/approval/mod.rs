//! Approvals for risky tools: a call of an operation whose schema says
//! `"effects": {"approval": "required"}` is not run when it arrives. The layer keeps the
//! request, answers `202 Accepted` with `Location` naming the approval, and runs the request
//! exactly once when someone approves it; a denied call, one nobody decides in time, or one
//! its caller withdraws, never runs.
//!
//! Why the layer holds the call rather than the handler: the handler of a refund should not
//! have to know that refunds wait for a person, and an agent should learn from the schema,
//! before it calls, that the call will wait. The request is kept whole (head and body, within
//! the layer's body limit), so what runs is exactly what was asked and what the approver saw.
//!
//! Who decides is an [`Approver`]: the built-in [`ApprovalQueue`] lets callers holding a
//! scope list and decide pending approvals over HTTP (`/.well-known/halo/approvals`).
//! Without an approver, a call that needs approval is refused with `403` and never runs.
//!
//! The parts: `ApprovalRule` (halo-openapi: which operations need approval besides those that declare
//! it), [`ApprovalLimits`] (what is kept, for how long), the book of approvals (`book`), kept
//! in memory (`memory`) or, with the `redis` feature and `HaloBuilder::redis`, in Redis for
//! every replica (`redis`), the step of a call's path that holds it (`hold`), the run of an
//! approved call (`run`), reading and deciding as a caller (`decision`), withdrawing by the
//! caller (`withdraw`), running elsewhere an approved call whose replica stopped
//! (`takeover`), the JSON documents (`document`) and the HTTP endpoints (`endpoint`).

mod approver;
mod book;
pub(crate) mod decision;
mod document;
mod endpoint;
mod hold;
mod limits;
mod memory;
#[cfg(feature = "redis")]
mod redis;
mod run;
mod settings;
#[cfg(feature = "redis")]
mod takeover;
#[cfg(feature = "webhook")]
mod webhook;
mod withdraw;

pub(crate) use self::approver::DynApprover;
pub use self::approver::{ApprovalQueue, ApprovalRequest, Approver, Verdict};
pub(crate) use self::book::Book;
pub(crate) use self::endpoint::{is_endpoint, serve};
pub(crate) use self::hold::{Held, hold};
pub use self::limits::ApprovalLimits;
pub(crate) use self::settings::Settings;
#[cfg(feature = "redis")]
pub(crate) use self::takeover::is_takeover;
#[cfg(feature = "webhook")]
pub use self::webhook::{
    SignatureError, WebhookApprover, WebhookApproverBuilder, WebhookError, WebhookSecret,
};
pub(crate) use self::withdraw::withdraw_stream;

pub(crate) use halo_protocol::APPROVALS_PATH;
