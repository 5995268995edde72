//! `Idempotency-Key`: the first request with a key runs, and its response is kept; a repeat
//! gets that response again and never runs the handler a second time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use sha2::{Digest, Sha256};

use super::store::Ticket;

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

/// The longest key kept: a key is a token the client makes up (a UUID is 36 characters),
/// and every one kept takes memory for a day.
pub(crate) const MAX_KEY: usize = 255;

/// A key as the header gave it, if it is one: 1 to [`MAX_KEY`] visible ASCII characters.
/// Anything else is refused before it is kept or looked up.
pub(crate) fn check_key(
    header: &str,
    value: &http::HeaderValue,
) -> Result<(), Box<halo_protocol::Problem>> {
    let bytes = value.as_bytes();
    if (1..=MAX_KEY).contains(&bytes.len()) && bytes.iter().all(|b| b.is_ascii_graphic()) {
        return Ok(());
    }
    Err(Box::new(halo_protocol::Problem::new(400).with_detail(
        format!("`{header}` must be 1 to {MAX_KEY} visible ASCII characters (a UUID will do)"),
    )))
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
    /// Claimed by the request holding the ticket with this token.
    Running(Fingerprint, u64),
    Done(Fingerprint, Stored),
}

/// What the store says about a request with a key.
#[derive(Debug)]
pub(crate) enum Claim {
    /// The first with this key: run it, then finish (or abandon) the ticket.
    First(Ticket),
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
    /// The token of the last ticket handed out.
    tokens: AtomicU64,
}

/// Claims between two sweeps of expired records.
const SWEEP_EVERY: usize = 256;

impl Idempotency {
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            records: Mutex::new(HashMap::new()),
            ttl,
            claims: AtomicUsize::new(0),
            tokens: AtomicU64::new(0),
        }
    }

    fn records(&self) -> MutexGuard<'_, HashMap<String, (Instant, Entry)>> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims `key` for a request with `fingerprint`. Expired records are forgotten first.
    pub(crate) fn claim(&self, key: String, fingerprint: Fingerprint) -> Claim {
        let now = Instant::now();
        let mut records = self.records();
        if self.claims.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            records.retain(|_, (since, _)| now.duration_since(*since) < self.ttl);
        }
        match records.get(&key) {
            Some((since, _)) if now.duration_since(*since) >= self.ttl => {}
            Some((_, Entry::Running(known, _))) => {
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
        let token = self.tokens.fetch_add(1, Ordering::Relaxed) + 1;
        records.insert(key.clone(), (now, Entry::Running(fingerprint, token)));
        Claim::First(Ticket {
            key,
            token,
            local: true,
            fingerprint,
        })
    }

    /// Keeps the response of the request that holds `ticket`.
    pub(crate) fn finish(&self, ticket: &Ticket, stored: Stored) {
        if let Some((_, entry)) = self.records().get_mut(&ticket.key)
            && let Entry::Running(fingerprint, token) = entry
            && *token == ticket.token
        {
            *entry = Entry::Done(*fingerprint, stored);
        }
    }

    /// Forgets the claim of `ticket`, so the key can be used again.
    pub(crate) fn abandon(&self, ticket: &Ticket) {
        let mut records = self.records();
        if matches!(records.get(&ticket.key), Some((_, Entry::Running(_, token))) if *token == ticket.token)
        {
            records.remove(&ticket.key);
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
    fn keys_are_short_visible_tokens() {
        let check = |text: &str| {
            check_key(
                "Idempotency-Key",
                &http::HeaderValue::from_str(text).unwrap(),
            )
        };
        assert!(check("8e0f0c1c-4d1a-4c8e-9b1e-2f1d1c0a9b7e").is_ok());
        assert!(check(&"k".repeat(MAX_KEY)).is_ok());
        for bad in ["", " ", "two words", "tab\there"] {
            assert_eq!(check(bad).unwrap_err().status, 400, "{bad:?}");
        }
        assert!(check(&"k".repeat(MAX_KEY + 1)).is_err());
        let refused = check("").unwrap_err();
        assert!(refused.detail.unwrap().contains("`Idempotency-Key`"));
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
        let Claim::First(ticket) = store.claim("k".into(), a) else {
            panic!("the first claim");
        };
        assert!(matches!(store.claim("k".into(), a), Claim::InFlight));
        assert!(matches!(store.claim("k".into(), b), Claim::Mismatch));
        store.finish(&ticket, stored("done"));
        assert!(matches!(store.claim("k".into(), a), Claim::Replay(s) if s.body == "done"));
        assert!(matches!(store.claim("k".into(), b), Claim::Mismatch));
        let Claim::First(other) = store.claim("other".into(), b) else {
            panic!("another key");
        };
        store.abandon(&other);
        assert!(matches!(store.claim("other".into(), a), Claim::First(_)));
        // A stale ticket changes nothing.
        store.abandon(&other);
        assert!(matches!(store.claim("other".into(), a), Claim::InFlight));
    }

    #[test]
    fn records_expire() {
        let store = Idempotency::new(Duration::ZERO);
        let a = fingerprint("POST", "/orders", "u", b"{}");
        let Claim::First(ticket) = store.claim("k".into(), a) else {
            panic!("the first claim");
        };
        store.finish(&ticket, stored("done"));
        assert!(matches!(store.claim("k".into(), a), Claim::First(_)));
    }
}
