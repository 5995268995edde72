//! Where the state of rate limits and idempotency records lives: two small traits, with this
//! process's memory as the default and Redis (feature `redis`) for several instances.

use std::fmt;
use std::future::{Future, ready};
use std::pin::Pin;

use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
use http::{HeaderMap, StatusCode};

use crate::rate::{Decision, Key, ToolLimits, ToolRate, Verdict};

/// The future a store answers with.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The shared store could not be reached, and its fallback is to refuse the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unavailable;

/// Keeps the rate budgets of callers.
pub trait RateStore: Send + Sync + fmt::Debug {
    /// Spends one call of `caller`'s budget for the tool that `rate` limits.
    #[allow(
        clippy::ptr_arg,
        reason = "the in-memory limiter is keyed by String: no copy per call"
    )]
    fn check<'a>(
        &'a self,
        rate: &'a ToolRate,
        caller: &'a String,
    ) -> StoreFuture<'a, Result<Decision, Unavailable>>;

    /// Spends one call from each of `limits` for which `keys` has a key (`None`: the limit
    /// does not apply to the call), all or none.
    fn check_all<'a>(
        &'a self,
        limits: &'a ToolLimits,
        keys: &'a [Option<Key>],
    ) -> StoreFuture<'a, Result<Verdict, Unavailable>>;
}

/// Keeps the records of requests sent with an idempotency key.
pub trait IdempotencyStore: Send + Sync + fmt::Debug {
    /// Claims `key` for a request with `fingerprint`, counted against the quota of `caller`
    /// (see `caller_bucket`): `Claim::Full` when a new key does not fit.
    fn claim<'a>(
        &'a self,
        key: String,
        caller: &'a str,
        fingerprint: Fingerprint,
    ) -> StoreFuture<'a, Result<Claim, Unavailable>>;

    /// Keeps the response of the request that holds `ticket`. A store that cannot write it
    /// now keeps it until it can: the record is never dropped while its key is claimed.
    fn finish<'a>(&'a self, ticket: Ticket, stored: Stored) -> StoreFuture<'a, ()>;

    /// Forgets the claim of a request that produced nothing to keep, so the key can be used
    /// again.
    fn abandon<'a>(&'a self, ticket: Ticket) -> StoreFuture<'a, ()>;
}

/// Keeps the events of streamed calls where the other instances can read them, so that a
/// client can resume a call through any instance. An instance's own calls stay in its memory
/// (`stream::Calls`), which serves resumes it can; only a shared store implements this.
pub trait ReplayStore: Send + Sync + fmt::Debug {
    /// Starts copying the events of call `id` (of the tool named `tool`, by `caller`), in the
    /// order they are sent to the returned mirror.
    fn mirror(&self, id: &str, tool: &str, caller: Option<&str>) -> Mirror;

    /// What the store keeps of call `id`, with (some of) its events after `after`; `None`
    /// when it keeps nothing of it.
    fn read<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> StoreFuture<'a, Result<Option<KeptCall>, Unavailable>>;
}

/// One event of a call, framed, on its way to a shared store.
#[derive(Debug)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub struct MirroredFrame {
    /// The event's id in its call's stream.
    pub id: u64,
    /// The event as sent, framed.
    pub bytes: Bytes,
    /// Whether it ends the stream.
    pub terminal: bool,
}

/// Where the events of a call go to be copied to a shared store, in order.
#[derive(Debug, Clone)]
pub struct Mirror(pub(crate) tokio::sync::mpsc::UnboundedSender<MirroredFrame>);

impl Mirror {
    /// Queues an event; it never waits.
    pub fn send(&self, frame: MirroredFrame) {
        let _ = self.0.send(frame);
    }
}

/// What a shared store keeps of a call: who made it, which events it still has, and some of
/// them.
#[derive(Debug)]
pub struct KeptCall {
    /// The manifest name of the tool called.
    pub tool: String,
    /// Who called it (`None`: anonymous).
    pub caller: Option<String>,
    /// The id of the oldest event kept (0 for none).
    pub oldest: u64,
    /// The id of the newest event kept (0 for none).
    pub newest: u64,
    /// Whether the terminal event is kept.
    pub finished: bool,
    /// Events after the id asked for, in order: id and framed bytes.
    pub frames: Vec<(u64, Bytes)>,
}

/// The claim of a key, held by the request that runs: only its holder can finish or abandon
/// it, so a claim that expired and was taken again is never overwritten.
#[derive(Debug)]
pub struct Ticket {
    pub(crate) key: String,
    pub(crate) token: u64,
    /// Claimed in this process's memory (the default store, or a shared store's fallback).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) local: bool,
    /// The request's fingerprint, for a repeat while the response waits to be written.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fingerprint: Fingerprint,
    /// Whose quota of records the claim counts against.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) caller: String,
}

/// Rate budgets in this process's memory: each tool's own GCRA limiter.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalRates;

impl RateStore for LocalRates {
    fn check<'a>(
        &'a self,
        rate: &'a ToolRate,
        caller: &'a String,
    ) -> StoreFuture<'a, Result<Decision, Unavailable>> {
        Box::pin(ready(Ok(rate.check(caller))))
    }

    fn check_all<'a>(
        &'a self,
        limits: &'a ToolLimits,
        keys: &'a [Option<Key>],
    ) -> StoreFuture<'a, Result<Verdict, Unavailable>> {
        Box::pin(ready(Ok(limits.check(keys))))
    }
}

/// What a request is: a digest of its method, path and query, caller and body. A key reused
/// for a different request is refused.
pub type Fingerprint = [u8; 32];

/// A response kept for replay.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The status it answered with.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body (empty when it did not fit in the records' byte limit).
    pub body: Bytes,
}

impl Stored {
    /// What it counts against [`IdempotencyLimits::bytes`](super::IdempotencyLimits::bytes): header names and values, and body.
    pub fn size(&self) -> usize {
        let headers: usize = self
            .headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len())
            .sum();
        headers + self.body.len()
    }

    /// The response, or as much of it as fits in `room` bytes: without its body, else
    /// without its headers either. The status is always kept.
    #[must_use]
    pub fn fitted(mut self, room: usize) -> Self {
        let size = self.size();
        if size <= room {
            return self;
        }
        self.body = Bytes::new();
        self.headers.remove(CONTENT_LENGTH);
        if self.size() > room {
            self.headers.clear();
        }
        tracing::warn!(
            target: "halo_axum::idempotency",
            "a keyed response of {size} bytes does not fit in the idempotency records' byte limit; its status{} kept without the body",
            if self.headers.is_empty() { " is" } else { " and headers are" }
        );
        self
    }
}

/// What the store says about a request with a key.
#[derive(Debug)]
pub enum Claim {
    /// The first with this key: run it, then finish (or abandon) the ticket.
    First(Ticket),
    /// The same request ran already: here is its response.
    Replay(Stored),
    /// The same request is still running.
    InFlight,
    /// The key was used for a different request.
    Mismatch,
    /// A new key, with no room to keep it: the request must not run.
    Full(Full),
}

/// Why a new key cannot be kept, and how long until the oldest record in the way expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// The caller keeps as many records as it may (`429`).
    Caller(Duration),
    /// The store keeps as many records, or bytes, as it may (`503`).
    Store(Duration),
}
