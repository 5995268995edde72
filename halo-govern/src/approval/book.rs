//! The book of approvals: each approval by id, what it asks, where it is, and the one way it
//! moves, pending → approved (running, then ran), denied, expired or cancelled (withdrawn by
//! its caller), so that a call is taken to run at most once. Kept in this process's memory
//! ([`memory`](super::memory)) or, with the feature `redis`, in Redis, where every replica
//! reads and decides the same approvals (`approval::redis`). The layer's steps (hold, run,
//! the endpoints) speak to [`Book`] alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use http::HeaderMap;

use super::entry::{Answer, Entry, Kept, Phase, State};
use super::memory::Memory;
use super::{ApprovalLimits, ApprovalRequest, DynApprover, Verdict};

/// The approvals of one layer, and who decides them. `R` runs a held request once it is
/// approved: the layer's own (halo-axum's is a boxed call of the application's service); the
/// book only keeps it with the request.
#[derive(Debug)]
pub struct Book<R> {
    approver: Option<Box<dyn DynApprover>>,
    limits: ApprovalLimits,
    store: Store<R>,
    /// The approvals of this process's streamed calls still waiting, by the stream's call
    /// id: what a cancel request of the call withdraws. One per held streamed call, each
    /// gone when its stream stops waiting. Shared, like the memory store, with a book that
    /// carries this one's approvals over.
    streams: Arc<Mutex<HashMap<String, Arc<Entry<R>>>>>,
}

/// Where the approvals are kept.
#[derive(Debug)]
enum Store<R> {
    Memory(Memory<R>),
    #[cfg(feature = "redis")]
    Redis(super::redis::RedisBook<R>),
}

/// The store of approvals could not be reached: nothing was kept, decided or read. The layer
/// answers `503` with `Retry-After`, naming no host or credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreachable;

/// What the store answered, or that it could not be reached.
pub type Reached<T> = Result<T, Unreachable>;

/// What booking a held call came to.
#[derive(Debug)]
pub enum Booked<R> {
    /// A new approval.
    New(Arc<Entry<R>>),
    /// The approval already asked for with the call's idempotency key; `true` when this
    /// look found it due and expired it.
    Again(Arc<Entry<R>>, bool),
    /// The call's idempotency key was used for another request.
    Mismatch,
    /// No room: the caller keeps as many as it may (`true`), or the book is full; and
    /// when room is likely.
    Full(bool, Duration),
}

/// An approval read, and whether this read found it due and expired it.
pub type Found<R> = (Arc<Entry<R>>, bool);

/// What deciding an approval came to.
#[derive(Debug)]
pub enum Decided<R> {
    /// Approved: the request to run here, now.
    Run(Box<Kept<R>>),
    /// Approved, to run on the replica that holds it (this one cannot run it; only
    /// approvals kept in Redis are held elsewhere).
    Elsewhere,
    /// Denied.
    Denied,
    /// It was not pending: its phase, and whether this decision found it due and expired
    /// it.
    Already(Phase, bool),
}

/// The approvals still pending, and those a look found due and expired.
pub type Pending<R> = (Vec<Arc<Entry<R>>>, Vec<Arc<Entry<R>>>);

/// What withdrawing an approval came to: withdrawn (`Ok`), or not pending, with its phase
/// and whether this look found it due and expired it.
pub type Withdrawn = Result<(), (Phase, bool)>;

/// What a new approval is made of.
#[derive(Debug)]
pub struct Asked<R> {
    /// The tool's index in the registry.
    pub tool: usize,
    /// What the approver is shown.
    pub request: ApprovalRequest,
    /// Whose quota it counts against (the principal, else the client's address).
    pub quota: String,
    /// The key as the book indexes it, and the request's digest.
    pub key: Option<(String, [u8; 32])>,
    /// The request's `x-request-id` and `traceparent`, for the audit records of its
    /// decision and run.
    pub trail: HeaderMap,
    /// The request, and what runs it.
    pub kept: Kept<R>,
    /// The request as another replica may run it (no credentials), kept in the shared
    /// store when the layer may run approved calls whose holder stopped (only approvals
    /// kept in Redis are run elsewhere).
    pub portable: Option<Vec<u8>>,
}

impl<R> Book<R> {
    /// A book in this process's memory: `approver` decides (none: every call that needs
    /// approval is refused), within `limits`.
    #[must_use]
    pub fn new(approver: Option<Box<dyn DynApprover>>, limits: ApprovalLimits) -> Self {
        Self {
            approver,
            limits,
            store: Store::Memory(Memory::default()),
            streams: Arc::default(),
        }
    }

    /// This book, holding the approvals of `previous`, the book of a layer it replaces (a
    /// configuration reloaded): when both keep them in this process's memory, they share
    /// them, so a call held before the reload can be read, decided, withdrawn and run after
    /// it, and its caller still waits on it. This book's limits apply from now on. Approvals
    /// kept in Redis are there for any book and need none of this.
    #[must_use]
    pub fn carrying(mut self, previous: &Self) -> Self {
        #[cfg_attr(
            not(feature = "redis"),
            expect(irrefutable_let_patterns, reason = "Redis is the other store")
        )]
        if let (Store::Memory(memory), Store::Memory(old)) = (&mut self.store, &previous.store) {
            *memory = old.share();
            self.streams = Arc::clone(&previous.streams);
        }
        self
    }

    /// The same book, kept in Redis through `link`, for a layer with the tools `tools` (their
    /// names, by index).
    #[cfg(feature = "redis")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    #[must_use]
    pub fn in_redis(mut self, link: crate::RedisLink, tools: Vec<String>) -> Self {
        let life = self.limits.holder_timeout;
        self.store = Store::Redis(super::redis::RedisBook::new(link, tools, life));
        self
    }

    /// The Redis book, when the approvals are kept there.
    #[cfg(feature = "redis")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    #[must_use]
    pub fn redis(&self) -> Option<&super::redis::RedisBook<R>> {
        match &self.store {
            Store::Redis(book) => Some(book),
            Store::Memory(_) => None,
        }
    }

    /// Who decides, when anyone does.
    #[inline] // On the pass-through path of halo-axum's `Halo::call` (see there).
    #[must_use]
    pub fn approver(&self) -> Option<&dyn DynApprover> {
        self.approver.as_deref()
    }

    /// How long a decided approval stays readable ([`ApprovalLimits::keep_decided`]).
    #[must_use]
    pub fn keep_decided(&self) -> Duration {
        self.limits.keep_decided
    }

    /// The most bytes of one answer's body kept ([`ApprovalLimits::answer_bytes`]).
    #[must_use]
    pub fn answer_bytes(&self) -> usize {
        self.limits.answer_bytes
    }

    /// Books a held call: a new approval, the one its key was used for, or no room.
    ///
    /// # Errors
    /// [`Unreachable`] when the store cannot be reached: nothing is kept.
    pub async fn book(&self, asked: Asked<R>) -> Reached<Booked<R>> {
        match &self.store {
            Store::Memory(memory) => Ok(memory.book(&self.limits, asked)),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.book(&self.limits, asked).await,
        }
    }

    /// The approval with this id.
    ///
    /// # Errors
    /// [`Unreachable`] when the store cannot be reached.
    pub async fn find(&self, id: &str) -> Reached<Option<Found<R>>> {
        match &self.store {
            Store::Memory(memory) => Ok(memory.find(id)),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.find(id).await,
        }
    }

    /// The approvals still pending, oldest first; and those this look found due and expired.
    ///
    /// # Errors
    /// [`Unreachable`] when the store cannot be reached.
    pub async fn pending(&self) -> Reached<Pending<R>> {
        let (mut pending, expired) = match &self.store {
            Store::Memory(memory) => memory.pending(),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.pending().await?,
        };
        pending.sort_by_key(|entry| entry.requested_at);
        Ok((pending, expired))
    }

    /// Decides a pending approval.
    ///
    /// # Errors
    /// [`Unreachable`] when the store cannot be reached: nothing is decided.
    pub async fn decide(&self, entry: &Entry<R>, verdict: &Verdict) -> Reached<Decided<R>> {
        match &self.store {
            Store::Memory(memory) => Ok(memory.decide(entry, verdict)),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.decide(&self.limits, entry, verdict).await,
        }
    }

    /// Withdraws a pending approval for its caller: `by` (who withdrew it), for `reason`.
    ///
    /// # Errors
    /// [`Unreachable`] when the store cannot be reached: nothing is withdrawn.
    pub async fn withdraw(
        &self,
        entry: &Entry<R>,
        by: Option<&str>,
        reason: &str,
    ) -> Reached<Withdrawn> {
        let cancelled = State::cancelled(by, reason);
        match &self.store {
            Store::Memory(memory) => Ok(memory.withdraw(entry, cancelled)),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.withdraw(&self.limits, entry, cancelled).await,
        }
    }

    /// Notes that this process's streamed call `call` waits on approval `entry`.
    pub fn stream_waits(&self, call: &str, entry: Arc<Entry<R>>) {
        self.streams().insert(call.to_owned(), entry);
    }

    /// The approval the streamed call `call` waits on here, if any.
    #[must_use]
    pub fn stream_approval(&self, call: &str) -> Option<Arc<Entry<R>>> {
        self.streams().get(call).cloned()
    }

    /// Forgets that the streamed call `call` waits.
    pub fn stream_done(&self, call: &str) {
        self.streams().remove(call);
    }

    fn streams(&self) -> MutexGuard<'_, HashMap<String, Arc<Entry<R>>>> {
        self.streams.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Expires this process's pending approval whose time is up: whether this call expired
    /// it. (Approvals in Redis are expired by whoever reads them when due.)
    pub fn expire_due(&self, entry: &Entry<R>) -> bool {
        match &self.store {
            Store::Memory(memory) => memory.expire_due(entry),
            #[cfg(feature = "redis")]
            Store::Redis(_) => false,
        }
    }

    /// Keeps the answer of an approved call's run: without its body when that is over the
    /// bounds.
    pub async fn finish(&self, entry: &Entry<R>, answer: Answer) {
        match &self.store {
            Store::Memory(memory) => memory.finish(&self.limits, entry, answer),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.finish(&self.limits, entry, answer).await,
        }
    }

    /// Forgets an approval of this process's memory.
    pub fn remove(&self, entry: &Entry<R>) {
        match &self.store {
            Store::Memory(memory) => memory.remove(entry),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.forget(&entry.id),
        }
    }
}
