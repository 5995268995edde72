//! The book of approvals in this process's memory: each approval by id, and by idempotency
//! key when its call carried one; what each caller keeps; the bytes kept in all. Every
//! approval moves one way only, pending → approved (running, then ran), denied or expired,
//! under its own lock, so a call is taken to run at most once.
//!
//! Lock order: the ledger, then an entry's slot; never the other way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tokio::sync::watch;
use tokio::time::Instant;

use super::run::Runner;
use super::{ApprovalLimits, ApprovalRequest, DynApprover, Verdict};

/// A reason is cut to this many characters.
const MAX_REASON: usize = 1_000;

/// The approvals of one layer, and who decides them.
#[derive(Debug)]
pub(crate) struct Book {
    approver: Option<Box<dyn DynApprover>>,
    pub(crate) limits: ApprovalLimits,
    ledger: Mutex<Ledger>,
}

#[derive(Debug, Default)]
struct Ledger {
    by_id: HashMap<Arc<str>, Arc<Entry>>,
    /// Tool, caller and key → the approval asked for with that key.
    by_key: HashMap<String, Arc<Entry>>,
    /// Approvals kept per caller (principal, else address).
    per_caller: HashMap<String, usize>,
    /// Bytes of requests and answers kept.
    bytes: usize,
}

/// One approval.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) id: Arc<str>,
    /// The tool's index in the registry.
    pub(crate) tool: usize,
    /// What the approver is shown.
    pub(crate) request: ApprovalRequest,
    /// Whose quota it counts against.
    quota: String,
    /// The idempotency key it was asked for with (as the book indexes it), and the digest of
    /// the request it was asked for.
    key: Option<(String, [u8; 32])>,
    pub(crate) requested_at: SystemTime,
    pub(crate) expires_at: SystemTime,
    /// When it expires, on Tokio's clock.
    pub(crate) deadline: Instant,
    /// The request's `x-request-id` and `traceparent`, for the audit records of its decision
    /// and run.
    pub(crate) trail: HeaderMap,
    slot: Mutex<Slot>,
    phase: watch::Sender<Phase>,
}

#[derive(Debug)]
struct Slot {
    state: State,
    /// Bytes this approval counts in the ledger now.
    counted: usize,
}

/// Where an approval is.
#[derive(Debug)]
pub(crate) enum State {
    /// Waiting for a decision, with the request to run.
    Pending(Box<Kept>),
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
}

/// What booking a held call came to.
pub(crate) enum Booked {
    /// A new approval.
    New(Arc<Entry>),
    /// The approval already asked for with the call's idempotency key.
    Again(Arc<Entry>),
    /// The call's idempotency key was used for another request.
    Mismatch,
    /// No room: the caller keeps as many as it may (`true`), or the book is full; and
    /// when room is likely.
    Full(bool, Duration),
}

/// What a new approval is made of.
pub(crate) struct Asked {
    pub(crate) tool: usize,
    pub(crate) request: ApprovalRequest,
    pub(crate) quota: String,
    /// The key as the book indexes it, and the request's digest.
    pub(crate) key: Option<(String, [u8; 32])>,
    pub(crate) trail: HeaderMap,
    pub(crate) kept: Kept,
}

impl Book {
    pub(crate) fn new(approver: Option<Box<dyn DynApprover>>, limits: ApprovalLimits) -> Self {
        Self {
            approver,
            limits,
            ledger: Mutex::new(Ledger::default()),
        }
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Who decides, when anyone does.
    #[inline] // On the pass-through path of `Halo::call` (see there).
    pub(crate) fn approver(&self) -> Option<&dyn DynApprover> {
        self.approver.as_deref()
    }

    /// Books a held call: a new approval, the one its key was used for, or no room.
    pub(crate) fn book(&self, asked: Asked) -> Booked {
        let mut ledger = self.ledger();
        if let Some((key, digest)) = &asked.key
            && let Some(entry) = ledger.by_key.get(key)
        {
            return match entry.key.as_ref().is_some_and(|(_, kept)| kept == digest) {
                true => Booked::Again(Arc::clone(entry)),
                false => Booked::Mismatch,
            };
        }
        let size = asked.kept.body.len() + head_size(&asked.kept.parts);
        let mine = ledger.per_caller.get(&asked.quota).copied().unwrap_or(0);
        let caller_full = mine >= self.limits.per_caller;
        if caller_full
            || ledger.by_id.len() >= self.limits.approvals
            || ledger.bytes + size > self.limits.bytes
        {
            let quota = caller_full.then_some(asked.quota.as_str());
            return Booked::Full(caller_full, ledger.room_in(quota, self.limits.keep_decided));
        }
        let id: Arc<str> = uuid::Uuid::new_v4().simple().to_string().into();
        let now = SystemTime::now();
        let expiry = self.limits.expire_after;
        let mut request = asked.request;
        request.id = id.to_string();
        let entry = Arc::new(Entry {
            id: Arc::clone(&id),
            tool: asked.tool,
            request,
            quota: asked.quota,
            key: asked.key,
            requested_at: now,
            expires_at: now + expiry,
            deadline: Instant::now() + expiry,
            trail: asked.trail,
            slot: Mutex::new(Slot {
                state: State::Pending(Box::new(asked.kept)),
                counted: size,
            }),
            phase: watch::channel(Phase::Pending).0,
        });
        ledger.bytes += size;
        *ledger.per_caller.entry(entry.quota.clone()).or_default() += 1;
        if let Some((key, _)) = &entry.key {
            ledger.by_key.insert(key.clone(), Arc::clone(&entry));
        }
        ledger.by_id.insert(id, Arc::clone(&entry));
        Booked::New(entry)
    }

    /// The approval with this id.
    pub(crate) fn find(&self, id: &str) -> Option<Arc<Entry>> {
        self.ledger().by_id.get(id).cloned()
    }

    /// The approvals still pending, oldest first.
    pub(crate) fn pending(&self) -> Vec<Arc<Entry>> {
        let mut pending: Vec<Arc<Entry>> = self
            .ledger()
            .by_id
            .values()
            .filter(|entry| entry.phase() == Phase::Pending)
            .cloned()
            .collect();
        pending.sort_by_key(|entry| entry.requested_at);
        pending
    }

    /// Decides a pending approval: the request to run when approved, `None` when denied, or
    /// the phase it is in already (expired when its time is up).
    pub(crate) fn decide(&self, entry: &Entry, verdict: &Verdict) -> Result<Option<Kept>, Phase> {
        let mut ledger = self.ledger();
        let mut slot = entry.slot();
        if !matches!(slot.state, State::Pending(_)) {
            return Err(entry.phase());
        }
        if Instant::now() >= entry.deadline {
            return Err(Phase::Expired);
        }
        let by = verdict.by().to_owned();
        let reason = verdict.reason().map(cut_reason);
        let (next, phase) = match verdict.is_approved() {
            true => (
                State::Approved {
                    by,
                    reason,
                    answer: None,
                },
                Phase::Running,
            ),
            false => (State::Denied { by, reason }, Phase::Denied),
        };
        let State::Pending(kept) = std::mem::replace(&mut slot.state, next) else {
            unreachable!("checked pending above");
        };
        if phase == Phase::Denied {
            ledger.bytes -= std::mem::take(&mut slot.counted);
        }
        drop(slot);
        entry.phase.send_replace(phase);
        Ok((phase == Phase::Running).then_some(*kept))
    }

    /// Expires a pending approval whose time is up: whether this call expired it.
    pub(crate) fn expire_due(&self, entry: &Entry) -> bool {
        if Instant::now() < entry.deadline {
            return false;
        }
        let mut ledger = self.ledger();
        let mut slot = entry.slot();
        if !matches!(slot.state, State::Pending(_)) {
            return false;
        }
        slot.state = State::Expired;
        ledger.bytes -= std::mem::take(&mut slot.counted);
        drop(slot);
        entry.phase.send_replace(Phase::Expired);
        true
    }

    /// Keeps the answer of an approved call's run: without its body when that is over the
    /// bounds.
    pub(crate) fn finish(&self, entry: &Entry, mut answer: Answer) {
        let mut ledger = self.ledger();
        let mut slot = entry.slot();
        ledger.bytes -= std::mem::take(&mut slot.counted);
        let size = answer.body.as_ref().map_or(0, Bytes::len);
        if size > self.limits.answer_bytes || ledger.bytes + size > self.limits.bytes {
            answer.body = None;
        } else {
            ledger.bytes += size;
            slot.counted = size;
        }
        if let State::Approved { answer: kept, .. } = &mut slot.state {
            *kept = Some(answer);
        }
        drop(slot);
        entry.phase.send_replace(Phase::Ran);
    }

    /// Forgets an approval.
    pub(crate) fn remove(&self, entry: &Entry) {
        let mut ledger = self.ledger();
        if ledger.by_id.remove(&entry.id).is_none() {
            return;
        }
        ledger.bytes -= std::mem::take(&mut entry.slot().counted);
        if let Some((key, _)) = &entry.key {
            ledger.by_key.remove(key);
        }
        if let Some(count) = ledger.per_caller.get_mut(&entry.quota) {
            *count -= 1;
            if *count == 0 {
                ledger.per_caller.remove(&entry.quota);
            }
        }
    }
}

impl Ledger {
    /// When an approval (of `quota`, or of anyone) is likely forgotten: the soonest that one
    /// kept now expires and is kept its while after, at least a second away.
    fn room_in(&self, quota: Option<&str>, keep: Duration) -> Duration {
        let now = Instant::now();
        self.by_id
            .values()
            .filter(|entry| quota.is_none_or(|quota| entry.quota == quota))
            .map(|entry| (entry.deadline + keep).saturating_duration_since(now))
            .min()
            .unwrap_or_default()
            .max(Duration::from_secs(1))
    }
}

impl Entry {
    fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
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
fn head_size(parts: &Parts) -> usize {
    let target = parts.uri.path_and_query().map_or(0, |t| t.as_str().len());
    let headers: usize = parts
        .headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    target + headers
}

/// A reason, cut to [`MAX_REASON`] characters.
fn cut_reason(reason: &str) -> String {
    reason.chars().take(MAX_REASON).collect()
}
