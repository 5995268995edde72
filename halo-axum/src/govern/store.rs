//! Where the state of rate limits and idempotency records lives: two small traits, with this
//! process's memory as the default and Redis (feature `redis`) for several instances.

use std::fmt;
use std::future::{Future, ready};
use std::pin::Pin;

use axum::response::Response;
use http::header::RETRY_AFTER;
use http::{HeaderValue, StatusCode};

use super::idempotency::{Claim, Fingerprint, Idempotency, Stored};
use super::rate::{Decision, ToolRate};

/// The future a store answers with.
pub(crate) type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The shared store could not be reached, and its fallback is to refuse the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unavailable;

impl Unavailable {
    /// `503` with `Retry-After` for a call refused because the store of `what` could not be
    /// reached. It names no host, URL or credential.
    pub(crate) fn response(self, what: &str) -> Response {
        let mut response = crate::problem::response(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the shared store of {what} cannot be reached, so the request was not run; \
                 send it again shortly"
            ),
        );
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
        response
    }
}

/// Keeps the rate budgets of callers.
pub(crate) trait RateStore: Send + Sync + fmt::Debug {
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
}

/// Keeps the records of requests sent with an idempotency key.
pub(crate) trait IdempotencyStore: Send + Sync + fmt::Debug {
    /// Claims `key` for a request with `fingerprint`.
    fn claim<'a>(
        &'a self,
        key: String,
        fingerprint: Fingerprint,
    ) -> StoreFuture<'a, Result<Claim, Unavailable>>;

    /// Keeps the response of the request that holds `ticket`. A store that cannot write it
    /// now keeps it until it can: the record is never dropped while its key is claimed.
    fn finish<'a>(&'a self, ticket: Ticket, stored: Stored) -> StoreFuture<'a, ()>;

    /// Forgets the claim of a request that produced nothing to keep, so the key can be used
    /// again.
    fn abandon<'a>(&'a self, ticket: Ticket) -> StoreFuture<'a, ()>;
}

/// The claim of a key, held by the request that runs: only its holder can finish or abandon
/// it, so a claim that expired and was taken again is never overwritten.
#[derive(Debug)]
pub(crate) struct Ticket {
    pub(crate) key: String,
    pub(crate) token: u64,
    /// Claimed in this process's memory (the default store, or a shared store's fallback).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) local: bool,
    /// The request's fingerprint, for a repeat while the response waits to be written.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fingerprint: Fingerprint,
}

/// Rate budgets in this process's memory: each tool's own GCRA limiter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LocalRates;

impl RateStore for LocalRates {
    fn check<'a>(
        &'a self,
        rate: &'a ToolRate,
        caller: &'a String,
    ) -> StoreFuture<'a, Result<Decision, Unavailable>> {
        Box::pin(ready(Ok(rate.check(caller))))
    }
}

impl IdempotencyStore for Idempotency {
    fn claim<'a>(
        &'a self,
        key: String,
        fingerprint: Fingerprint,
    ) -> StoreFuture<'a, Result<Claim, Unavailable>> {
        Box::pin(ready(Ok(Self::claim(self, key, fingerprint))))
    }

    fn finish<'a>(&'a self, ticket: Ticket, stored: Stored) -> StoreFuture<'a, ()> {
        Self::finish(self, &ticket, stored);
        Box::pin(ready(()))
    }

    fn abandon<'a>(&'a self, ticket: Ticket) -> StoreFuture<'a, ()> {
        Self::abandon(self, &ticket);
        Box::pin(ready(()))
    }
}
