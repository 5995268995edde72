//! One approval ([`Entry`]): its fixed facts ([`Made`]), where it is ([`State`], and
//! [`Phase`] to wait on), the request it keeps while pending ([`Kept`]) and the answer of its
//! run ([`Answer`]). It moves one way only, pending → approved (running, then ran), denied,
//! expired or cancelled, so that a call is taken to run at most once.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tokio::sync::watch;
use tokio::time::Instant;

use super::{ApprovalRequest, Verdict};

/// A reason is cut to this many characters.
const MAX_REASON: usize = 1_000;

/// One approval: this process's own (held here, to wait on), or what the shared store holds,
/// read for one request. Its fixed facts ([`Made`]) are read through it. `R` runs its
/// request once approved (see [`Kept`]).
#[derive(Debug)]
pub struct Entry<R> {
    made: Made,
    /// When it expires, on Tokio's clock.
    pub deadline: Instant,
    slot: Mutex<Slot<R>>,
    phase: watch::Sender<Phase>,
}

impl<R> std::ops::Deref for Entry<R> {
    type Target = Made;

    fn deref(&self) -> &Made {
        &self.made
    }
}

/// An approval's state, and the bytes it counts.
#[derive(Debug)]
pub(crate) struct Slot<R> {
    pub(crate) state: State<R>,
    /// Bytes this approval counts in the memory book now.
    pub(crate) counted: usize,
}

/// Where an approval is.
#[derive(Debug)]
pub enum State<R> {
    /// Waiting for a decision, with the request to run when this process holds it.
    Pending(Option<Box<Kept<R>>>),
    /// Approved: `answer` is `None` while the call runs.
    Approved {
        /// Who approved it.
        by: String,
        /// Why, when given.
        reason: Option<String>,
        /// The handler's answer, once the call ran.
        answer: Option<Answer>,
    },
    /// Denied.
    Denied {
        /// Who denied it.
        by: String,
        /// Why, when given.
        reason: Option<String>,
    },
    /// Nobody decided in time.
    Expired,
    /// Withdrawn before anyone decided: `by` withdrew it (`None`: an anonymous caller).
    Cancelled {
        /// Who withdrew it: its caller, `None` when anonymous.
        by: Option<String>,
        /// Why.
        reason: String,
    },
}

impl<R> State<R> {
    /// Its phase.
    #[must_use]
    pub fn phase(&self) -> Phase {
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

/// A held request: its head (the caller's principal in its extensions), its body, and what
/// runs it through the application once approved (`R`: the layer's, which the book only
/// keeps).
pub struct Kept<R> {
    /// The request's head.
    pub parts: Parts,
    /// The request's body.
    pub body: Bytes,
    /// What runs the request.
    pub runner: R,
}

impl<R> std::fmt::Debug for Kept<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field("parts", &self.parts)
            .finish_non_exhaustive()
    }
}

/// The handler's answer to an approved call, as kept for its caller.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Its status.
    pub status: StatusCode,
    /// The headers that say what the body is and where things are.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// `None` when it was over the bounds and not kept.
    pub body: Option<Bytes>,
}

/// An approval's state without its contents, to wait on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for a decision.
    Pending,
    /// Approved, and its call runs.
    Running,
    /// Approved, and its call ran.
    Ran,
    /// Denied.
    Denied,
    /// Nobody decided in time.
    Expired,
    /// Withdrawn by its caller.
    Cancelled,
}

impl Phase {
    /// Whether nothing more happens to it.
    #[must_use]
    pub fn is_over(self) -> bool {
        matches!(
            self,
            Self::Ran | Self::Denied | Self::Expired | Self::Cancelled
        )
    }
}

/// What an [`Entry`] is made of, besides its state.
#[derive(Debug)]
pub struct Made {
    /// Its id (the last segment of its `Location`).
    pub id: Arc<str>,
    /// The tool's index in the registry.
    pub tool: usize,
    /// What the approver is shown.
    pub request: ApprovalRequest,
    /// Whose quota it counts against.
    pub(crate) quota: String,
    /// The idempotency key it was asked for with (as the book indexes it), and the digest of
    /// the request it was asked for.
    pub(crate) key: Option<(String, [u8; 32])>,
    /// When it was asked for.
    pub requested_at: SystemTime,
    /// When it expires if nobody decides it.
    pub expires_at: SystemTime,
    /// The request's `x-request-id` and `traceparent`, for the audit records of its decision
    /// and run.
    pub trail: HeaderMap,
}

impl<R> Entry<R> {
    /// An approval in `state`, counting `counted` bytes.
    pub(crate) fn new(mut made: Made, state: State<R>, counted: usize) -> Self {
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

    pub(crate) fn slot(&self) -> MutexGuard<'_, Slot<R>> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves it to `state`, unless it is there already or further on: the request it kept
    /// while pending, if any. Tells those waiting on it.
    pub(crate) fn advance(&self, state: State<R>) -> Option<Box<Kept<R>>> {
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
    #[must_use]
    pub fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// Its phase, to wait on.
    #[must_use]
    pub fn watch(&self) -> watch::Receiver<Phase> {
        self.phase.subscribe()
    }

    /// Reads its state.
    pub fn with_state<T>(&self, read: impl FnOnce(&State<R>) -> T) -> T {
        read(&self.slot().state)
    }

    /// The kept answer of an approved call that ran.
    #[must_use]
    pub fn answer(&self) -> Option<Answer> {
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
