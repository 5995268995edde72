//! The book of approvals: each approval by id, what it asks, where it is, and the one way it
//! moves, pending → approved (running, then ran), denied, expired or cancelled (withdrawn by
//! its caller), so that a call is taken to run at most once. Kept in this process's memory ([`memory`](super::memory)) or, with
//! `HaloBuilder::redis`, in Redis, where every replica reads and decides the same approvals
//! (`approval::redis`). Hold, run and the endpoints speak to [`Book`] alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use axum::response::Response;
use bytes::Bytes;
use http::header::RETRY_AFTER;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tokio::sync::watch;
use tokio::time::Instant;

use super::memory::Memory;
use super::runner::Runner;
use super::{ApprovalLimits, ApprovalRequest, DynApprover, Verdict};

/// A reason is cut to this many characters.
const MAX_REASON: usize = 1_000;

/// The approvals of one layer, and who decides them.
#[derive(Debug)]
pub(crate) struct Book {
    approver: Option<Box<dyn DynApprover>>,
    pub(crate) limits: ApprovalLimits,
    store: Store,
    /// The approvals of this process's streamed calls still waiting, by the stream's call
    /// id: what a cancel request of the call withdraws. One per held streamed call, each
    /// gone when its stream stops waiting.
    streams: Mutex<HashMap<String, Arc<Entry>>>,
    /// The app that runs approved calls whose holder stopped, when the layer was given one.
    #[cfg(feature = "redis")]
    pub(crate) takeover: super::slot::Slot,
}

/// Where the approvals are kept.
#[derive(Debug)]
enum Store {
    Memory(Memory),
    #[cfg(feature = "redis")]
    Redis(super::redis::RedisBook),
}

/// The store of approvals could not be reached: nothing was kept, decided or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unreachable;

impl Unreachable {
    /// `503` with `Retry-After`; it names no host or credential.
    pub(crate) fn response(self) -> Response {
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
}

/// What the store answered, or that it could not be reached.
pub(crate) type Reached<T> = Result<T, Unreachable>;

/// One approval: this process's own (held here, to wait on), or what the shared store holds,
/// read for one request. Its fixed facts ([`Made`]) are read through it.
#[derive(Debug)]
pub(crate) struct Entry {
    made: Made,
    /// When it expires, on Tokio's clock.
    pub(crate) deadline: Instant,
    slot: Mutex<Slot>,
    phase: watch::Sender<Phase>,
}

impl std::ops::Deref for Entry {
    type Target = Made;

    fn deref(&self) -> &Made {
        &self.made
    }
}

#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) state: State,
    /// Bytes this approval counts in the memory book now.
    pub(crate) counted: usize,
}

/// Where an approval is.
#[derive(Debug)]
pub(crate) enum State {
    /// Waiting for a decision, with the request to run when this process holds it.
    Pending(Option<Box<Kept>>),
    /// Approved: `answer` is `None` while the call runs.
    Approved {
        by: String,
        reason: Option<String>,
        answer: Option<Answer>,
    },
    Denied {
        by: String,
        reason: Option<String>,
    },
    /// Nobody decided in time.
    Expired,
    /// Withdrawn before anyone decided: `by` withdrew it (`None`: an anonymous caller).
    Cancelled {
        by: Option<String>,
        reason: String,
    },
}

impl State {
    /// Its phase.
    pub(crate) fn phase(&self) -> Phase {
        match self {
            Self::Pending(_) => Phase::Pending,
            Self::Approved { answer: None, .. } => Phase::Running,
            Self::Approved { .. } => Phase::Ran,
            Self::Denied { .. } => Phase::Denied,
            Self::Expired => Phase::Expired,
            Self::Cancelled { .. } => Phase::Cancelled,
        }
    }

    /// Withdrawn by `by`, for `reason`.
    pub(crate) fn cancelled(by: Option<&str>, reason: &str) -> Self {
        Self::Cancelled {
            by: by.map(str::to_owned),
            reason: reason.chars().take(MAX_REASON).collect(),
        }
    }

    /// A decision of `verdict`, its reason cut to [`MAX_REASON`] characters.
    pub(crate) fn decided(verdict: &Verdict) -> Self {
        let by = verdict.by().to_owned();
        let reason = verdict
            .reason()
            .map(|reason| reason.chars().take(MAX_REASON).collect());
        match verdict.is_approved() {
            true => Self::Approved {
                by,
                reason,
                answer: None,
            },
            false => Self::Denied { by, reason },
        }
    }
}

/// A held request: its head (the caller's principal in its extensions), its body, and the
/// service to run it through.
pub(crate) struct Kept {
    pub(crate) parts: Parts,
    pub(crate) body: Bytes,
    pub(crate) runner: Runner,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field("parts", &self.parts)
            .finish_non_exhaustive()
    }
}

/// The handler's answer to an approved call, as kept for its caller.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    /// The headers that say what the body is and where things are.
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    /// `None` when it was over the bounds and not kept.
    pub(crate) body: Option<Bytes>,
}

/// An approval's state without its contents, to wait on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Pending,
    Running,
    Ran,
    Denied,
    Expired,
    Cancelled,
}

impl Phase {
    /// Whether nothing more happens to it.
    pub(crate) fn is_over(self) -> bool {
        matches!(
            self,
            Self::Ran | Self::Denied | Self::Expired | Self::Cancelled
        )
    }
}

/// What booking a held call came to.
pub(crate) enum Booked {
    /// A new approval.
    New(Arc<Entry>),
    /// The approval already asked for with the call's idempotency key; `true` when this
    /// look found it due and expired it.
    Again(Arc<Entry>, bool),
    /// The call's idempotency key was used for another request.
    Mismatch,
    /// No room: the caller keeps as many as it may (`true`), or the book is full; and
    /// when room is likely.
    Full(bool, Duration),
}

/// An approval read, and whether this read found it due and expired it.
pub(crate) type Found = (Arc<Entry>, bool);

/// What deciding an approval came to.
pub(crate) enum Decided {
    /// Approved: the request to run here, now.
    Run(Box<Kept>),
    /// Approved, to run on the replica that holds it (this one cannot run it).
    #[cfg_attr(
        not(feature = "redis"),
        expect(dead_code, reason = "only approvals kept in Redis are held elsewhere")
    )]
    Elsewhere,
    Denied,
    /// It was not pending: its phase, and whether this decision found it due and expired
    /// it.
    Already(Phase, bool),
}

/// What withdrawing an approval came to: withdrawn (`Ok`), or not pending, with its phase
/// and whether this look found it due and expired it.
pub(crate) type Withdrawn = Result<(), (Phase, bool)>;

/// What a new approval is made of.
pub(crate) struct Asked {
    pub(crate) tool: usize,
    pub(crate) request: ApprovalRequest,
    pub(crate) quota: String,
    /// The key as the book indexes it, and the request's digest.
    pub(crate) key: Option<(String, [u8; 32])>,
    pub(crate) trail: HeaderMap,
    pub(crate) kept: Kept,
    /// The request as another replica may run it (no credentials), kept in the shared
    /// store when the layer may run approved calls whose holder stopped.
    #[cfg_attr(
        not(feature = "redis"),
        expect(dead_code, reason = "only approvals kept in Redis are run elsewhere")
    )]
    pub(crate) portable: Option<Vec<u8>>,
}

impl Book {
    /// A book in this process's memory.
    pub(crate) fn new(approver: Option<Box<dyn DynApprover>>, limits: ApprovalLimits) -> Self {
        Self {
            approver,
            limits,
            store: Store::Memory(Memory::default()),
            streams: Mutex::default(),
            #[cfg(feature = "redis")]
            takeover: super::slot::Slot::default(),
        }
    }

    /// The same book, kept in Redis through `link`, for a layer with the tools `tools` (their
    /// names, by index).
    #[cfg(feature = "redis")]
    pub(crate) fn in_redis(mut self, link: crate::govern::RedisLink, tools: Vec<String>) -> Self {
        let life = self.limits.holder_timeout;
        self.store = Store::Redis(super::redis::RedisBook::new(link, tools, life));
        self
    }

    /// The Redis book, when the approvals are kept there.
    #[cfg(feature = "redis")]
    pub(crate) fn redis(&self) -> Option<&super::redis::RedisBook> {
        match &self.store {
            Store::Redis(book) => Some(book),
            Store::Memory(_) => None,
        }
    }

    /// Who decides, when anyone does.
    #[inline] // On the pass-through path of `Halo::call` (see there).
    pub(crate) fn approver(&self) -> Option<&dyn DynApprover> {
        self.approver.as_deref()
    }

    /// Books a held call: a new approval, the one its key was used for, or no room.
    pub(crate) async fn book(&self, asked: Asked) -> Reached<Booked> {
        match &self.store {
            Store::Memory(memory) => Ok(memory.book(&self.limits, asked)),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.book(&self.limits, asked).await,
        }
    }

    /// The approval with this id.
    pub(crate) async fn find(&self, id: &str) -> Reached<Option<Found>> {
        match &self.store {
            Store::Memory(memory) => Ok(memory.find(id)),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.find(id).await,
        }
    }

    /// The approvals still pending, oldest first; and those this look found due and expired.
    pub(crate) async fn pending(&self) -> Reached<(Vec<Arc<Entry>>, Vec<Arc<Entry>>)> {
        let (mut pending, expired) = match &self.store {
            Store::Memory(memory) => memory.pending(),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.pending().await?,
        };
        pending.sort_by_key(|entry| entry.requested_at);
        Ok((pending, expired))
    }

    /// Decides a pending approval.
    pub(crate) async fn decide(&self, entry: &Entry, verdict: &Verdict) -> Reached<Decided> {
        match &self.store {
            Store::Memory(memory) => Ok(memory.decide(entry, verdict)),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.decide(&self.limits, entry, verdict).await,
        }
    }

    /// Withdraws a pending approval for its caller: `by` (who withdrew it), for `reason`.
    pub(crate) async fn withdraw(
        &self,
        entry: &Entry,
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
    pub(crate) fn stream_waits(&self, call: &str, entry: Arc<Entry>) {
        self.streams().insert(call.to_owned(), entry);
    }

    /// The approval the streamed call `call` waits on here, if any.
    pub(crate) fn stream_approval(&self, call: &str) -> Option<Arc<Entry>> {
        self.streams().get(call).cloned()
    }

    /// Forgets that the streamed call `call` waits.
    pub(crate) fn stream_done(&self, call: &str) {
        self.streams().remove(call);
    }

    fn streams(&self) -> MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        self.streams.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Expires this process's pending approval whose time is up: whether this call expired
    /// it. (Approvals in Redis are expired by whoever reads them when due.)
    pub(crate) fn expire_due(&self, entry: &Entry) -> bool {
        match &self.store {
            Store::Memory(memory) => memory.expire_due(entry),
            #[cfg(feature = "redis")]
            Store::Redis(_) => false,
        }
    }

    /// Keeps the answer of an approved call's run: without its body when that is over the
    /// bounds.
    pub(crate) async fn finish(&self, entry: &Entry, answer: Answer) {
        match &self.store {
            Store::Memory(memory) => memory.finish(&self.limits, entry, answer),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.finish(&self.limits, entry, answer).await,
        }
    }

    /// Forgets an approval of this process's memory.
    pub(crate) fn remove(&self, entry: &Entry) {
        match &self.store {
            Store::Memory(memory) => memory.remove(entry),
            #[cfg(feature = "redis")]
            Store::Redis(book) => book.forget(&entry.id),
        }
    }
}

/// What an [`Entry`] is made of, besides its state.
#[derive(Debug)]
pub(crate) struct Made {
    pub(crate) id: Arc<str>,
    /// The tool's index in the registry.
    pub(crate) tool: usize,
    /// What the approver is shown.
    pub(crate) request: ApprovalRequest,
    /// Whose quota it counts against.
    pub(crate) quota: String,
    /// The idempotency key it was asked for with (as the book indexes it), and the digest of
    /// the request it was asked for.
    pub(crate) key: Option<(String, [u8; 32])>,
    pub(crate) requested_at: SystemTime,
    pub(crate) expires_at: SystemTime,
    /// The request's `x-request-id` and `traceparent`, for the audit records of its decision
    /// and run.
    pub(crate) trail: HeaderMap,
}

impl Entry {
    /// An approval in `state`, counting `counted` bytes.
    pub(crate) fn new(mut made: Made, state: State, counted: usize) -> Self {
        let left = made
            .expires_at
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        made.request.id = made.id.to_string();
        made.request.expires_at = made.expires_at;
        let phase = state.phase();
        Self {
            made,
            deadline: Instant::now() + left,
            slot: Mutex::new(Slot { state, counted }),
            phase: watch::channel(phase).0,
        }
    }

    pub(crate) fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves it to `state`, unless it is there already or further on: the request it kept
    /// while pending, if any. Tells those waiting on it.
    pub(crate) fn advance(&self, state: State) -> Option<Box<Kept>> {
        let mut slot = self.slot();
        let (now, next) = (slot.state.phase(), state.phase());
        let forward = match now {
            Phase::Pending => next != Phase::Pending,
            Phase::Running => next == Phase::Ran,
            _ => false,
        };
        if !forward {
            return None;
        }
        let before = std::mem::replace(&mut slot.state, state);
        drop(slot);
        self.phase.send_replace(next);
        match before {
            State::Pending(kept) => kept,
            _ => None,
        }
    }

    /// Keeps the answer of its run (it was running): tells those waiting on it.
    pub(crate) fn ran(&self, kept: Answer) {
        let mut slot = self.slot();
        if let State::Approved { answer, .. } = &mut slot.state
            && answer.is_none()
        {
            *answer = Some(kept);
            drop(slot);
            self.phase.send_replace(Phase::Ran);
        }
    }

    /// Where it is now.
    pub(crate) fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// Its phase, to wait on.
    pub(crate) fn watch(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }

    /// Reads its state.
    pub(crate) fn with_state<T>(&self, read: impl FnOnce(&State) -> T) -> T {
        read(&self.slot().state)
    }

    /// The kept answer of an approved call that ran.
    pub(crate) fn answer(&self) -> Option<Answer> {
        self.with_state(|state| match state {
            State::Approved {
                answer: Some(answer),
                ..
            } => Some(answer.clone()),
            _ => None,
        })
    }
}

/// The bytes a request head counts: its target and header names and values.
pub(crate) fn head_size(parts: &Parts) -> usize {
    let target = parts.uri.path_and_query().map_or(0, |t| t.as_str().len());
    let headers: usize = parts
        .headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    target + headers
}
