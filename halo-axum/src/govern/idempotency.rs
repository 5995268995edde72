//! `Idempotency-Key`: the first request with a key runs, and its response is kept; a repeat
//! gets that response again and never runs the handler a second time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use sha2::{Digest, Sha256};

/// What a request is: a digest of its method, path and query, caller and body. A key reused
/// for a different request is refused.
pub(crate) type Fingerprint = [u8; 32];

/// The fingerprint of a request.
pub(crate) fn fingerprint(method: &str, target: &str, caller: &str, body: &[u8]) -> Fingerprint {
    let mut digest = Sha256::new();
    for part in [
        method.as_bytes(),
        target.as_bytes(),
        caller.as_bytes(),
        body,
    ] {
        digest.update((part.len() as u64).to_be_bytes());
        digest.update(part);
    }
    digest.finalize().into()
}

/// A response kept for replay.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

#[derive(Debug)]
enum Entry {
    Running(Fingerprint),
    Done(Fingerprint, Stored),
}

/// What the store says about a request with a key.
#[derive(Debug)]
pub(crate) enum Claim {
    /// The first with this key: run it, then [`Idempotency::finish`] (or
    /// [`Idempotency::abandon`]).
    First,
    /// The same request ran already: here is its response.
    Replay(Stored),
    /// The same request is still running.
    InFlight,
    /// The key was used for a different request.
    Mismatch,
}

/// The kept records, in memory, each for `ttl` after it was claimed.
#[derive(Debug)]
pub(crate) struct Idempotency {
    records: Mutex<HashMap<String, (Instant, Entry)>>,
    ttl: Duration,
    /// Claims made, to sweep expired records every [`SWEEP_EVERY`] claims.
    claims: AtomicUsize,
}

/// Claims between two sweeps of expired records.
const SWEEP_EVERY: usize = 256;

impl Idempotency {
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            records: Mutex::new(HashMap::new()),
            ttl,
            claims: AtomicUsize::new(0),
        }
    }

    fn records(&self) -> MutexGuard<'_, HashMap<String, (Instant, Entry)>> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims `key` for a request with `fingerprint`. Expired records are forgotten first.
    pub(crate) fn claim(&self, key: &str, fingerprint: Fingerprint) -> Claim {
        let now = Instant::now();
        let mut records = self.records();
        if self.claims.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            records.retain(|_, (since, _)| now.duration_since(*since) < self.ttl);
        }
        match records.get(key) {
            Some((since, _)) if now.duration_since(*since) >= self.ttl => {}
            Some((_, Entry::Running(known))) => {
                return if *known == fingerprint {
                    Claim::InFlight
                } else {
                    Claim::Mismatch
                };
            }
            Some((_, Entry::Done(known, stored))) => {
                return if *known == fingerprint {
                    Claim::Replay(stored.clone())
                } else {
                    Claim::Mismatch
                };
            }
            None => {}
        }
        records.insert(key.to_owned(), (now, Entry::Running(fingerprint)));
        Claim::First
    }

    /// Keeps the response of the request that claimed `key`.
    pub(crate) fn finish(&self, key: &str, stored: Stored) {
        if let Some((_, entry)) = self.records().get_mut(key)
            && let Entry::Running(fingerprint) = entry
        {
            *entry = Entry::Done(*fingerprint, stored);
        }
    }

    /// Forgets a claim whose request never reached its handler, so the key can be used again.
    pub(crate) fn abandon(&self, key: &str) {
        let mut records = self.records();
        if matches!(records.get(key), Some((_, Entry::Running(_)))) {
            records.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
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
        let store = Idempotency::new(Duration::from_secs(60));
        let a = fingerprint("POST", "/orders", "u", b"{}");
        let b = fingerprint("POST", "/orders", "u", b"{\"x\":1}");
        assert_ne!(a, b);
        assert_ne!(
            fingerprint("POST", "/o", "u", b"x"),
            fingerprint("POST", "/ou", "", b"x")
        );
        assert!(matches!(store.claim("k", a), Claim::First));
        assert!(matches!(store.claim("k", a), Claim::InFlight));
        assert!(matches!(store.claim("k", b), Claim::Mismatch));
        store.finish("k", stored("done"));
        assert!(matches!(store.claim("k", a), Claim::Replay(s) if s.body == "done"));
        assert!(matches!(store.claim("k", b), Claim::Mismatch));
        assert!(matches!(store.claim("other", b), Claim::First));
        store.abandon("other");
        assert!(matches!(store.claim("other", a), Claim::First));
    }

    #[test]
    fn records_expire() {
        let store = Idempotency::new(Duration::ZERO);
        let a = fingerprint("POST", "/orders", "u", b"{}");
        assert!(matches!(store.claim("k", a), Claim::First));
        store.finish("k", stored("done"));
        assert!(matches!(store.claim("k", a), Claim::First));
    }
}
