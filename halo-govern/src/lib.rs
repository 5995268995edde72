//! The governance engine of halo-rs: what a tool's schema declares, enforced with state that
//! lives in this process or, with the feature `redis`, in Redis for every replica.
//!
//! - rates ([`ToolRate`], and [`ToolLimits`] for limits by caller, tenant, tool or argument,
//!   all spent together or none), GCRA in memory (governor) or a script in Redis;
//! - circuit breakers ([`Breaker`]): a call holds a [`Permit`] and records its answer;
//!   open after failures in a row, one probe at a time when half-open, shared through a
//!   [`CircuitStore`];
//! - idempotency records ([`Idempotency`], bounded by [`IdempotencyLimits`]): the first
//!   request with a key runs, a repeat is answered with what it answered;
//! - the stores behind them ([`RateStore`], [`IdempotencyStore`], [`ReplayStore`]), and
//!   [`RedisStore`] for all of them at once;
//! - the book of approvals ([`approval`]): calls held until an [`Approver`](approval::Approver)
//!   decides them, each run at most once, kept in memory or in Redis; approvers decide over
//!   HTTP ([`ApprovalQueue`](approval::ApprovalQueue)), at once, or through a signed webhook
//!   (`WebhookApprover`, feature `webhook`).
//!
//! The crate knows nothing of a web framework: it decides (let through, refuse until, replay
//! this) and keeps state; halo-axum's layer turns its decisions into answers and puts them on
//! a call's path.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod approval;
mod breaker;
mod idempotency;
mod rate;
#[cfg(feature = "redis")]
mod redis;
mod store;

pub use self::breaker::{Breaker, CircuitState, CircuitStore, Permit, Refused, metrics};
pub use self::idempotency::{Idempotency, IdempotencyLimits, MAX_KEY, check_key, fingerprint};
pub use self::rate::{
    Bounded, Decision, Key, Source, ToolLimits, ToolRate, Verdict, decoded, seconds_up,
};
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use self::redis::{
    Fallback, Operation, RedisLink, RedisStore, RedisStoreError, decode_headers, encode_headers,
};
pub use self::store::{
    Claim, Fingerprint, Full, IdempotencyStore, KeptCall, LocalRates, Mirror, MirroredFrame,
    RateStore, ReplayStore, StoreFuture, Stored, Ticket, Unavailable,
};
