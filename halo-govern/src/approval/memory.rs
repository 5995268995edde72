//! The book of approvals in this process's memory: each approval by id, and by idempotency
//! key when its call carried one; what each caller keeps; the bytes kept in all. Every
//! approval moves under its own lock, so a call is taken to run at most once.
//!
//! Lock order: the ledger, then an entry's slot; never the other way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tokio::time::Instant;

use super::book::{Asked, Booked, Decided, Found, Pending, Withdrawn};
use super::entry::{Answer, Entry, Made, Phase, State, head_size};
use super::{ApprovalLimits, Verdict};

/// The approvals of one layer, in memory; shared with the layer built to replace it.
#[derive(Debug)]
pub(crate) struct Memory<R> {
    ledger: Arc<Mutex<Ledger<R>>>,
}

impl<R> Default for Memory<R> {
    fn default() -> Self {
        Self {
            ledger: Arc::new(Mutex::new(Ledger {
                by_id: HashMap::new(),
                by_key: HashMap::new(),
                per_caller: HashMap::new(),
                bytes: 0,
            })),
        }
    }
}

#[derive(Debug)]
struct Ledger<R> {
    by_id: HashMap<Arc<str>, Arc<Entry<R>>>,
    /// Tool, caller and key → the approval asked for with that key.
    by_key: HashMap<String, Arc<Entry<R>>>,
    /// Approvals kept per caller (principal, else address).
    per_caller: HashMap<String, usize>,
    /// Bytes of requests and answers kept.
    bytes: usize,
}

impl<R> Memory<R> {
    /// The same approvals, for a book that replaces this one's.
    pub(crate) fn share(&self) -> Self {
        Self {
            ledger: Arc::clone(&self.ledger),
        }
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger<R>> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Books a held call: a new approval, the one its key was used for, or no room.
    pub(crate) fn book(&self, limits: &ApprovalLimits, asked: Asked<R>) -> Booked<R> {
        let mut ledger = self.ledger();
        if let Some((key, digest)) = &asked.key
            && let Some(entry) = ledger.by_key.get(key)
        {
            let entry = Arc::clone(entry);
            drop(ledger);
            return match entry.key.as_ref().is_some_and(|(_, kept)| kept == digest) {
                true => {
                    let expired = self.expire_due(&entry);
                    Booked::Again(entry, expired)
                }
                false => Booked::Mismatch,
            };
        }
        let size = asked.kept.body.len() + head_size(&asked.kept.parts);
        let mine = ledger.per_caller.get(&asked.quota).copied().unwrap_or(0);
        let caller_full = mine >= limits.per_caller;
        if caller_full
            || ledger.by_id.len() >= limits.approvals
            || ledger.bytes + size > limits.bytes
        {
            let quota = caller_full.then_some(asked.quota.as_str());
            return Booked::Full(caller_full, ledger.room_in(quota, limits.keep_decided));
        }
        let id: Arc<str> = uuid::Uuid::new_v4().simple().to_string().into();
        let now = SystemTime::now();
        let made = Made {
            id: Arc::clone(&id),
            tool: asked.tool,
            request: asked.request,
            quota: asked.quota,
            key: asked.key,
            requested_at: now,
            expires_at: now + limits.expire_after,
            trail: asked.trail,
        };
        let entry = Arc::new(Entry::new(
            made,
            State::Pending(Some(Box::new(asked.kept))),
            size,
        ));
        ledger.bytes += size;
        *ledger.per_caller.entry(entry.quota.clone()).or_default() += 1;
        if let Some((key, _)) = &entry.key {
            ledger.by_key.insert(key.clone(), Arc::clone(&entry));
        }
        ledger.by_id.insert(id, Arc::clone(&entry));
        Booked::New(entry)
    }

    /// The approval with this id (expired when its time is up).
    pub(crate) fn find(&self, id: &str) -> Option<Found<R>> {
        let entry = self.ledger().by_id.get(id).cloned()?;
        let expired = self.expire_due(&entry);
        Some((entry, expired))
    }

    /// The approvals still pending; and those found due and expired.
    pub(crate) fn pending(&self) -> Pending<R> {
        let waiting: Vec<Arc<Entry<R>>> = self
            .ledger()
            .by_id
            .values()
            .filter(|entry| entry.phase() == Phase::Pending)
            .cloned()
            .collect();
        waiting
            .into_iter()
            .partition(|entry| !self.expire_due(entry))
    }

    /// Decides a pending approval: the request to run when approved.
    pub(crate) fn decide(&self, entry: &Entry<R>, verdict: &Verdict) -> Decided<R> {
        let mut ledger = self.ledger();
        let mut slot = entry.slot();
        if !matches!(slot.state, State::Pending(_)) {
            return Decided::Already(slot.state.phase(), false);
        }
        if Instant::now() >= entry.deadline {
            drop((slot, ledger));
            return Decided::Already(Phase::Expired, self.expire_due(entry));
        }
        if !verdict.is_approved() {
            ledger.bytes -= std::mem::take(&mut slot.counted);
        }
        drop(slot);
        let kept = entry.advance(State::decided(verdict));
        drop(ledger);
        match (verdict.is_approved(), kept) {
            (true, Some(kept)) => Decided::Run(kept),
            (true, None) => Decided::Already(Phase::Running, false),
            (false, _) => Decided::Denied,
        }
    }

    /// Withdraws a pending approval: moves it to `cancelled` (a [`State::Cancelled`]) and
    /// drops the request it kept, under the same locks as a decision, so that of a withdrawal
    /// and a decision at once exactly one takes it.
    pub(crate) fn withdraw(&self, entry: &Entry<R>, cancelled: State<R>) -> Withdrawn {
        let mut ledger = self.ledger();
        let mut slot = entry.slot();
        if !matches!(slot.state, State::Pending(_)) {
            return Err((slot.state.phase(), false));
        }
        if Instant::now() >= entry.deadline {
            drop((slot, ledger));
            return Err((Phase::Expired, self.expire_due(entry)));
        }
        ledger.bytes -= std::mem::take(&mut slot.counted);
        drop(slot);
        let kept = entry.advance(cancelled);
        drop(ledger);
        drop(kept);
        Ok(())
    }

    /// Expires a pending approval whose time is up: whether this call expired it.
    pub(crate) fn expire_due(&self, entry: &Entry<R>) -> bool {
        if Instant::now() < entry.deadline {
            return false;
        }
        let mut ledger = self.ledger();
        let mut slot = entry.slot();
        if !matches!(slot.state, State::Pending(_)) {
            return false;
        }
        ledger.bytes -= std::mem::take(&mut slot.counted);
        drop(slot);
        entry.advance(State::Expired);
        true
    }

    /// Keeps the answer of an approved call's run: without its body when that is over the
    /// bounds.
    pub(crate) fn finish(&self, limits: &ApprovalLimits, entry: &Entry<R>, mut answer: Answer) {
        let mut ledger = self.ledger();
        let mut slot = entry.slot();
        ledger.bytes -= std::mem::take(&mut slot.counted);
        let size = answer.body.as_ref().map_or(0, Bytes::len);
        if size > limits.answer_bytes || ledger.bytes + size > limits.bytes {
            answer.body = None;
        } else {
            ledger.bytes += size;
            slot.counted = size;
        }
        drop(slot);
        entry.ran(answer);
    }

    /// Forgets an approval.
    pub(crate) fn remove(&self, entry: &Entry<R>) {
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

impl<R> Ledger<R> {
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
