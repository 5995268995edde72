//! Approvals for risky tools: the book of the calls held until someone decides them, and
//! who decides.
//!
//! A call of an operation whose schema says `"effects": {"approval": "required"}` is not run
//! when it arrives: halo-axum's layer keeps the request, answers `202 Accepted` with
//! `Location` naming the approval, and runs it exactly once when someone approves it; a
//! denied call, one nobody decides in time, or one its caller withdraws, never runs. This
//! module is what that rests on, with no web framework:
//!
//! - who decides: the [`Approver`] trait, the [`ApprovalRequest`] it is shown and the
//!   [`Verdict`] it may give, the built-in [`ApprovalQueue`] (callers holding a scope decide
//!   over HTTP) and, with the feature `webhook`, [`WebhookApprover`] (a webhook of the
//!   application's decides, its bodies signed with a [`WebhookSecret`]);
//! - what is kept, for how long: [`ApprovalLimits`];
//! - the [`Book`]: each approval ([`Entry`]) by id and by idempotency key, the one way it
//!   moves ([`State`], [`Phase`]), kept in this process's memory or, with the feature
//!   `redis`, in Redis for every replica ([`RedisBook`], which a [`Follower`] follows).
//!
//! The book keeps a held request whole ([`Kept`]: head and body), with what runs it once
//! approved: a type of the layer's (`R`), which the book only keeps. What the approvals look
//! like over HTTP, and the steps that hold, run, decide and withdraw calls, are halo-axum's.
//!
//! (Its [`Verdict`] is an approver's decision; the crate root's `Verdict` is a rate's.)

mod approver;
mod book;
mod entry;
mod limits;
mod memory;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "webhook")]
mod webhook;

pub use self::approver::{
    ApprovalQueue, ApprovalRequest, Approver, DynApprover, Verdict, Verdicts,
};
pub use self::book::{
    Asked, Book, Booked, Decided, Found, Pending, Reached, Unreachable, Withdrawn,
};
pub use self::entry::{Answer, Entry, Kept, Made, Phase, State};
pub use self::limits::ApprovalLimits;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use self::redis::{Follower, POLL, RedisBook};
#[cfg(feature = "webhook")]
#[cfg_attr(docsrs, doc(cfg(feature = "webhook")))]
pub use self::webhook::{
    SignatureError, WebhookApprover, WebhookApproverBuilder, WebhookError, WebhookSecret,
};
