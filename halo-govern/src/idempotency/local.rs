//! The idempotency records in this process's memory: the default store, and a shared
//! store's fallback while it cannot be reached.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::ready;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

// Tokio's clock, which tests can pause and advance (it is the system's otherwise).
use tokio::time::Instant;

use super::IdempotencyLimits;
use crate::store::{
    Claim, Fingerprint, Full, IdempotencyStore, StoreFuture, Stored, Ticket, Unavailable,
};

/// One kept record.
#[derive(Debug)]
struct Record {
    /// When it was claimed; it expires the store's TTL later.
    since: Instant,
    /// The token of the ticket that claimed it.
    token: u64,
    /// Whose quota it counts against.
    caller: Arc<str>,
    /// What it counts against the byte limit.
    size: usize,
    fingerprint: Fingerprint,
    /// The response, once its request has finished.
    response: Option<Stored>,
}

/// The records, indexed three ways; every record is in each index exactly once.
#[derive(Debug, Default)]
struct Records {
    by_key: HashMap<Arc<str>, Record>,
    /// Every record's key by claim time and token: the oldest first, to forget expired
    /// records without looking at the others.
    by_age: BTreeMap<(Instant, u64), Arc<str>>,
    /// Each caller's records by claim time and token (callers without records are left out).
    callers: HashMap<Arc<str>, BTreeSet<(Instant, u64)>>,
    /// What the records count against the byte limit.
    bytes: usize,
}

impl Records {
    /// Forgets the record of `key`.
    fn remove(&mut self, key: &str) {
        let Some(record) = self.by_key.remove(key) else {
            return;
        };
        let at = (record.since, record.token);
        self.by_age.remove(&at);
        if let Some(set) = self.callers.get_mut(&*record.caller) {
            set.remove(&at);
            if set.is_empty() {
                self.callers.remove(&*record.caller);
            }
        }
        debug_assert!(self.bytes >= record.size, "byte count below zero");
        self.bytes = self.bytes.saturating_sub(record.size);
    }

    /// Forgets the records claimed `ttl` or more before `now`: only the expired ones are
    /// looked at, each once. (`by_age` holds exactly the records of `by_key`: its oldest
    /// entry's key is that record's.)
    fn purge(&mut self, now: Instant, ttl: Duration) {
        while let Some(entry) = self.by_age.first_entry() {
            if now.duration_since(entry.key().0) < ttl {
                return;
            }
            let (_, key) = entry.remove_entry();
            self.remove(&key);
        }
    }
}

/// The kept records, in memory, each for `ttl` after it was claimed, within `limits`.
#[derive(Debug)]
pub struct Idempotency {
    records: Mutex<Records>,
    ttl: Duration,
    limits: IdempotencyLimits,
    /// The token of the last ticket handed out.
    tokens: AtomicU64,
}

impl Idempotency {
    /// Records kept for `ttl` after their claim, within `limits`.
    #[must_use]
    pub fn new(ttl: Duration, limits: IdempotencyLimits) -> Self {
        Self {
            records: Mutex::new(Records::default()),
            ttl,
            limits,
            tokens: AtomicU64::new(0),
        }
    }

    fn records(&self) -> MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims `key` for a request of `caller` (whose quota it counts against) with
    /// `fingerprint`. Expired records are forgotten first.
    pub fn claim(&self, key: String, caller: &str, fingerprint: Fingerprint) -> Claim {
        self.claim_at(key, caller, fingerprint, Instant::now())
    }

    fn claim_at(&self, key: String, caller: &str, fingerprint: Fingerprint, now: Instant) -> Claim {
        let mut records = self.records();
        records.purge(now, self.ttl);
        if let Some(record) = records.by_key.get(key.as_str()) {
            return match &record.response {
                _ if record.fingerprint != fingerprint => Claim::Mismatch,
                None => Claim::InFlight,
                Some(stored) => Claim::Replay(stored.clone()),
            };
        }
        let left = |since: Instant| self.ttl.saturating_sub(now.duration_since(since));
        if let Some(own) = records.callers.get(caller)
            && own.len() >= self.limits.per_caller
        {
            let oldest = own.first().map_or(now, |(since, _)| *since);
            return Claim::Full(Full::Caller(left(oldest)));
        }
        if records.by_key.len() >= self.limits.records
            || records.bytes.saturating_add(key.len()) > self.limits.bytes
        {
            let oldest = records
                .by_age
                .first_key_value()
                .map_or(now, |((s, _), _)| *s);
            return Claim::Full(Full::Store(left(oldest)));
        }
        let token = self.tokens.fetch_add(1, Ordering::Relaxed) + 1;
        let key: Arc<str> = key.into();
        let caller: Arc<str> = match records.callers.get_key_value(caller) {
            Some((known, _)) => Arc::clone(known),
            None => caller.into(),
        };
        let at = (now, token);
        records
            .callers
            .entry(Arc::clone(&caller))
            .or_default()
            .insert(at);
        records.by_age.insert(at, Arc::clone(&key));
        records.bytes += key.len();
        records.by_key.insert(
            Arc::clone(&key),
            Record {
                since: now,
                token,
                caller: Arc::clone(&caller),
                size: key.len(),
                fingerprint,
                response: None,
            },
        );
        Claim::First(Ticket {
            key: key.to_string(),
            token,
            local: true,
            fingerprint,
            caller: caller.to_string(),
        })
    }

    /// Keeps the response of the request that holds `ticket`: all of it when it fits in the
    /// byte limit, else its status and headers, else its status.
    pub fn finish(&self, ticket: &Ticket, stored: Stored) {
        let mut records = self.records();
        let Records { by_key, bytes, .. } = &mut *records;
        let Some(record) = by_key.get_mut(ticket.key.as_str()) else {
            return;
        };
        if record.token != ticket.token || record.response.is_some() {
            return;
        }
        // While it runs, a record counts its key only.
        let others = bytes.saturating_sub(record.size);
        let room = self
            .limits
            .bytes
            .saturating_sub(others)
            .saturating_sub(record.size);
        let stored = stored.fitted(room);
        let size = record.size + stored.size();
        record.size = size;
        record.response = Some(stored);
        *bytes = others + size;
    }

    /// Forgets the claim of `ticket`, so the key can be used again.
    pub fn abandon(&self, ticket: &Ticket) {
        let mut records = self.records();
        if records
            .by_key
            .get(ticket.key.as_str())
            .is_some_and(|r| r.token == ticket.token && r.response.is_none())
        {
            records.remove(&ticket.key);
        }
    }

    /// How many records are kept, for how many callers, and how many bytes they count.
    #[cfg(test)]
    fn usage(&self) -> (usize, usize, usize) {
        let records = self.records();
        assert_eq!(records.by_key.len(), records.by_age.len());
        let per_caller: usize = records.callers.values().map(BTreeSet::len).sum();
        assert_eq!(per_caller, records.by_key.len());
        let sizes: usize = records.by_key.values().map(|r| r.size).sum();
        assert_eq!(sizes, records.bytes);
        (records.by_key.len(), records.callers.len(), records.bytes)
    }
}

impl IdempotencyStore for Idempotency {
    fn claim<'a>(
        &'a self,
        key: String,
        caller: &'a str,
        fingerprint: Fingerprint,
    ) -> StoreFuture<'a, Result<Claim, Unavailable>> {
        Box::pin(ready(Ok(Self::claim(self, key, caller, fingerprint))))
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

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http::header::CONTENT_LENGTH;
    use http::{HeaderMap, StatusCode};

    use super::super::fingerprint;
    use super::*;

    fn stored(body: &'static str) -> Stored {
        Stored {
            status: StatusCode::CREATED,
            headers: HeaderMap::new(),
            body: Bytes::from_static(body.as_bytes()),
        }
    }

    #[test]
    fn first_then_in_flight_then_replay_or_mismatch() {
        let store = Idempotency::new(Duration::from_secs(60), IdempotencyLimits::new());
        let a = fingerprint("POST", "/orders", "u", b"{}");
        let b = fingerprint("POST", "/orders", "u", b"{\"x\":1}");
        assert_ne!(a, b);
        assert_ne!(
            fingerprint("POST", "/o", "u", b"x"),
            fingerprint("POST", "/ou", "", b"x")
        );
        let Claim::First(ticket) = store.claim("k".into(), "u", a) else {
            panic!("the first claim");
        };
        assert!(matches!(store.claim("k".into(), "u", a), Claim::InFlight));
        assert!(matches!(store.claim("k".into(), "u", b), Claim::Mismatch));
        store.finish(&ticket, stored("done"));
        assert!(matches!(store.claim("k".into(), "u", a), Claim::Replay(s) if s.body == "done"));
        assert!(matches!(store.claim("k".into(), "u", b), Claim::Mismatch));
        let Claim::First(other) = store.claim("other".into(), "u", b) else {
            panic!("another key");
        };
        store.abandon(&other);
        assert!(matches!(
            store.claim("other".into(), "u", a),
            Claim::First(_)
        ));
        // A stale ticket changes nothing.
        store.abandon(&other);
        assert!(matches!(
            store.claim("other".into(), "u", a),
            Claim::InFlight
        ));
    }

    #[test]
    fn records_expire() {
        let store = Idempotency::new(Duration::ZERO, IdempotencyLimits::new());
        let a = fingerprint("POST", "/orders", "u", b"{}");
        let Claim::First(ticket) = store.claim("k".into(), "u", a) else {
            panic!("the first claim");
        };
        store.finish(&ticket, stored("done"));
        assert!(matches!(store.claim("k".into(), "u", a), Claim::First(_)));
    }

    /// A store with tiny limits, and the instant its clock starts at.
    fn tiny(per_caller: usize, records: usize, bytes: usize) -> (Idempotency, Instant) {
        let limits = IdempotencyLimits::new()
            .per_caller(per_caller)
            .records(records)
            .bytes(bytes);
        (
            Idempotency::new(Duration::from_secs(60), limits),
            Instant::now(),
        )
    }

    fn first(claim: Claim) -> Ticket {
        match claim {
            Claim::First(ticket) => ticket,
            other => panic!("not the first claim: {other:?}"),
        }
    }

    #[test]
    fn a_caller_past_its_quota_waits_for_its_oldest_record_and_others_for_room() {
        let (store, t0) = tiny(2, 3, usize::MAX);
        let print = fingerprint("POST", "/orders", "a", b"{}");
        let at = |seconds: u64| t0 + Duration::from_secs(seconds);
        let k1 = first(store.claim_at("a1".into(), "a", print, at(0)));
        store.finish(&k1, stored("one"));
        first(store.claim_at("a2".into(), "a", print, at(10)));
        // The caller's oldest record expires 60 s after t0.
        assert!(matches!(
            store.claim_at("a3".into(), "a", print, at(15)),
            Claim::Full(Full::Caller(wait)) if wait == Duration::from_secs(45)
        ));
        // Another caller still fits, until the store is full.
        first(store.claim_at("b1".into(), "b", print, at(20)));
        assert!(matches!(
            store.claim_at("c1".into(), "c", print, at(30)),
            Claim::Full(Full::Store(wait)) if wait == Duration::from_secs(30)
        ));
        // Keys already kept are answered as usual, however full.
        assert!(
            matches!(store.claim_at("a1".into(), "a", print, at(31)), Claim::Replay(s) if s.body == "one")
        );
        assert!(matches!(
            store.claim_at("a2".into(), "a", print, at(31)),
            Claim::InFlight
        ));
        let other = fingerprint("POST", "/orders", "a", b"{\"x\":1}");
        assert!(matches!(
            store.claim_at("a1".into(), "a", other, at(31)),
            Claim::Mismatch
        ));
        assert_eq!(store.usage().0, 3);
        // Once the oldest expires, its room is free again (and its key runs anew).
        first(store.claim_at("c1".into(), "c", print, at(60)));
        assert!(matches!(
            store.claim_at("a1".into(), "a", print, at(61)),
            Claim::Full(Full::Store(wait)) if wait == Duration::from_secs(9)
        ));
        first(store.claim_at("a1".into(), "a", print, at(70)));
        assert!(matches!(
            store.claim_at("a3".into(), "a", print, at(75)),
            Claim::Full(Full::Store(wait)) if wait == Duration::from_secs(5)
        ));
        assert_eq!(store.usage(), (3, 3, "b1c1a1".len()));
        // Long after, everything has expired and nothing is counted.
        first(store.claim_at("z".into(), "z", print, at(1_000)));
        assert_eq!(store.usage(), (1, 1, 1));
    }

    #[test]
    fn bytes_are_counted_and_freed_exactly() {
        let (store, t0) = tiny(100, 100, 1_000);
        let print = fingerprint("POST", "/orders", "a", b"{}");
        // A running record counts its key.
        let a = first(store.claim_at("key-a".into(), "a", print, t0));
        assert_eq!(store.usage(), (1, 1, 5));
        // A finished one, its response too: header names and values, and body.
        let mut response = stored("0123456789");
        response.headers.insert("x-order", "kept".parse().unwrap());
        store.finish(&a, response.clone());
        assert_eq!(store.usage(), (1, 1, 5 + 7 + 4 + 10));
        // Finishing twice, or with a stale ticket, changes nothing.
        store.finish(&a, stored("more and more bytes"));
        assert_eq!(store.usage().2, 26);
        // An abandoned claim gives its key's bytes back; a finished record is not abandoned.
        let b = first(store.claim_at("key-b".into(), "b", print, t0));
        assert_eq!(store.usage(), (2, 2, 31));
        store.abandon(&b);
        store.abandon(&b);
        store.abandon(&a);
        assert_eq!(store.usage(), (1, 1, 26));
        // A key claimed again after it expired: the old ticket no longer holds it.
        let later = t0 + Duration::from_secs(60);
        let again = first(store.claim_at("key-a".into(), "a", print, later));
        assert_eq!(store.usage(), (1, 1, 5));
        store.finish(&a, response);
        store.abandon(&a);
        assert_eq!(store.usage(), (1, 1, 5));
        store.abandon(&again);
        assert_eq!(store.usage(), (0, 0, 0));
    }

    #[test]
    fn the_byte_limit_refuses_new_keys_and_trims_responses_that_do_not_fit() {
        let (store, t0) = tiny(100, 100, 40);
        let print = fingerprint("POST", "/orders", "a", b"{}");
        let a = first(store.claim_at("key-a".into(), "a", print, t0));
        let b = first(store.claim_at("key-b".into(), "a", print, t0));
        // 30 bytes left for a's response, which is 7 + 4 + 2 + 14 + 20: kept without the body.
        let mut big = stored("twenty bytes of body");
        big.headers.insert("x-order", "kept".parse().unwrap());
        big.headers.insert(CONTENT_LENGTH, "20".parse().unwrap());
        store.finish(&a, big.clone());
        let Claim::Replay(kept) = store.claim_at("key-a".into(), "a", print, t0) else {
            panic!("a replay");
        };
        assert_eq!(kept.status, StatusCode::CREATED);
        assert!(kept.body.is_empty() && kept.headers.get(CONTENT_LENGTH).is_none());
        assert_eq!(kept.headers["x-order"], "kept");
        assert_eq!(store.usage().2, 5 + 5 + 11);
        // 19 bytes left: a new key of 20 does not fit, one of 19 does.
        assert!(matches!(
            store.claim_at("k".repeat(20), "b", print, t0 + Duration::from_secs(1)),
            Claim::Full(Full::Store(wait)) if wait == Duration::from_secs(59)
        ));
        let c = first(store.claim_at("k".repeat(19), "b", print, t0));
        assert_eq!(store.usage().2, 40);
        // No room at all: b keeps its status alone.
        store.finish(&b, big);
        let Claim::Replay(kept) = store.claim_at("key-b".into(), "a", print, t0) else {
            panic!("a replay");
        };
        assert_eq!(kept.status, StatusCode::CREATED);
        assert!(kept.body.is_empty() && kept.headers.is_empty());
        store.abandon(&c);
        assert_eq!(store.usage(), (2, 1, 21));
        // Expiry frees it all.
        first(store.claim_at("key-c".into(), "a", print, t0 + Duration::from_secs(60)));
        assert_eq!(store.usage(), (1, 1, 5));
    }

    #[test]
    fn limits_are_at_least_one_record() {
        let limits = IdempotencyLimits::new().per_caller(0).records(0).bytes(0);
        assert_eq!(limits.per_caller, 1);
        assert_eq!(limits.records, 1);
        assert_eq!(IdempotencyLimits::default(), IdempotencyLimits::new());
        let (store, t0) = tiny(1, 1, 0);
        let print = fingerprint("POST", "/orders", "a", b"{}");
        // Nothing fits in no bytes; with no record to wait for, a second.
        assert!(matches!(
            store.claim_at("k".into(), "a", print, t0),
            Claim::Full(Full::Store(_))
        ));
        assert_eq!(store.usage(), (0, 0, 0));
    }
}
