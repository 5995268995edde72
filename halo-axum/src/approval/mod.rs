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
//! The parts here are the book of approvals and what it is made of: [`ApprovalLimits`]
//! (what is kept, for how long), the book (`book`), kept in memory (`memory`) or, with the
//! `redis` feature and `HaloBuilder::redis`, in Redis for every replica (`redis`), who
//! decides ([`Approver`], `webhook`), the JSON documents (`document`), how a held request
//! runs (`runner`) and where the app that runs another replica's calls is kept (`slot`).
//! `ApprovalRule` (which operations need approval besides those that declare it) is
//! halo-openapi's, applied when the schemas are compiled. The steps of a call's path that
//! hold, run, decide, withdraw and take over a call are the layer's (`layer::held`): they
//! use the book, which knows nothing of the layer.

mod approver;
mod book;
mod document;
mod limits;
mod memory;
#[cfg(feature = "redis")]
mod redis;
mod runner;
mod settings;
#[cfg(feature = "redis")]
mod slot;
#[cfg(feature = "webhook")]
mod webhook;

pub(crate) use self::approver::DynApprover;
pub use self::approver::{ApprovalQueue, ApprovalRequest, Approver, Verdict};
pub(crate) use self::book::{
    Answer, Asked, Book, Booked, Decided, Entry, Kept, Phase, Reached, State, Unreachable,
};
#[cfg(feature = "mcp")]
pub(crate) use self::document::response;
pub(crate) use self::document::{accepted, document, href, respond, state_name};
pub use self::limits::ApprovalLimits;
#[cfg(feature = "redis")]
pub(crate) use self::redis::{Follower, POLL, RedisBook};
pub(crate) use self::runner::{Failed, runner};
pub(crate) use self::settings::Settings;
#[cfg(feature = "webhook")]
pub use self::webhook::{
    SignatureError, WebhookApprover, WebhookApproverBuilder, WebhookError, WebhookSecret,
};

pub(crate) use halo_protocol::APPROVALS_PATH;
