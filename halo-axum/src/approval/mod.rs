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
//! The book of approvals is halo-govern's ([`halo_govern::approval`]), with no web framework:
//! who decides ([`Approver`], and `WebhookApprover` with the `webhook` feature),
//! [`ApprovalLimits`] (what is kept, for how long), and the book, kept in memory or, with the
//! `redis` feature and `HaloBuilder::redis`, in Redis for every replica. It keeps each held
//! request with what runs it, a type of this crate's that it only keeps. The parts here are
//! the axum side of it: how a held request runs through the app (`runner`: the book's `R`,
//! named by the aliases below), the JSON documents and the answers that carry them
//! (`document`), the
//! builder's settings and the book they make (`settings`), and the answer when the shared
//! store cannot be reached ([`unreachable`]). `ApprovalRule` (which operations need approval
//! besides those that declare it) is halo-openapi's, applied when the schemas are compiled.
//! The steps of a call's path that hold, run, decide, withdraw and take over a call are the
//! layer's (`layer::held`): they use the book, which knows nothing of the layer.

mod document;
mod runner;
mod settings;

use axum::response::Response;
use halo_govern::approval;
use http::header::RETRY_AFTER;
use http::{HeaderValue, StatusCode};

#[cfg(feature = "mcp")]
pub(crate) use self::document::response;
pub(crate) use self::document::{accepted, document, href, respond, state_name};
pub(crate) use self::runner::{Failed, Runner, runner};
pub(crate) use self::settings::Settings;
pub(crate) use halo_govern::approval::{Answer, DynApprover, Phase, Reached, Unreachable};
pub use halo_govern::approval::{
    ApprovalLimits, ApprovalQueue, ApprovalRequest, Approver, Verdict,
};
#[cfg(feature = "redis")]
pub(crate) use halo_govern::approval::{Follower, POLL};
#[cfg(feature = "webhook")]
pub use halo_govern::approval::{
    SignatureError, WebhookApprover, WebhookApproverBuilder, WebhookError, WebhookSecret,
};

pub(crate) use halo_protocol::APPROVALS_PATH;

/// The layer's book of approvals: its held requests run through the app ([`Runner`]).
pub(crate) type Book = approval::Book<Runner>;
/// An approval of the layer's book.
pub(crate) type Entry = approval::Entry<Runner>;
/// Where an approval of the layer's book is.
pub(crate) type State = approval::State<Runner>;
/// A request the layer holds, and what runs it.
pub(crate) type Kept = approval::Kept<Runner>;
/// What a new approval of the layer's book is made of.
pub(crate) type Asked = approval::Asked<Runner>;
/// What booking a held call came to.
pub(crate) type Booked = approval::Booked<Runner>;
/// What deciding an approval came to.
pub(crate) type Decided = approval::Decided<Runner>;
/// The layer's book, in Redis.
#[cfg(feature = "redis")]
pub(crate) type RedisBook = approval::RedisBook<Runner>;

/// `503` with `Retry-After` when the store of approvals cannot be reached ([`Unreachable`]):
/// nothing was held, run or decided. It names no host or credential.
pub(crate) fn unreachable() -> Response {
    let mut response = crate::problem::response(
        StatusCode::SERVICE_UNAVAILABLE,
        "the shared store of approvals cannot be reached; nothing was held, run or \
         decided: send the request again shortly",
    );
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}
