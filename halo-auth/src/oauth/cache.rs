//! Recent verdicts on bearer tokens (a JWT verified, an introspection answer), by token
//! digest: bounded in count and in age, so that a client reusing its token costs a lookup.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::{Principal, Unauthenticated};

/// A token's SHA-256: the cache never holds a token.
pub(crate) type Key = [u8; 32];

/// What the issuer said about a token.
type Verdict = Result<Principal, Unauthenticated>;

/// Answers kept for at most `ttl` (an active token's never past its `exp`), at most
/// `capacity` of them.
pub(crate) struct Cache {
    ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<Key, (Verdict, Instant)>>,
}

/// Seconds since the Unix epoch, as `exp` counts them.
pub(crate) fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

impl Cache {
    pub(crate) fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// Whether verdicts are kept at all (a TTL and a capacity above zero): when not, a caller
    /// may skip hashing the token.
    pub(crate) fn is_on(&self) -> bool {
        self.capacity > 0 && !self.ttl.is_zero()
    }

    /// The key of `token`.
    pub(crate) fn key(token: &str) -> Key {
        Sha256::digest(token.as_bytes()).into()
    }

    /// The verdict kept for `key`, if it is still fresh.
    pub(crate) fn get(&self, key: &Key) -> Option<Verdict> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(key)
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(verdict, _)| verdict.clone())
    }

    /// Keeps `verdict` for `key` for the TTL, or until `expires` (Unix seconds) if sooner.
    /// When the cache is full, expired answers make room; if none has expired, the verdict
    /// is not kept.
    pub(crate) fn put(&self, key: Key, verdict: Verdict, expires: Option<u64>) {
        if self.capacity == 0 || self.ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut keep = self.ttl;
        if let (Ok(_), Some(exp)) = (&verdict, expires) {
            keep = keep.min(Duration::from_secs(exp.saturating_sub(now_unix())));
        }
        if keep.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            entries.retain(|_, (_, until)| now < *until);
            if entries.len() >= self.capacity {
                return;
            }
        }
        entries.insert(key, (verdict, now + keep));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn answers_expire_and_the_count_is_bounded() {
        let cache = Cache::new(Duration::from_secs(60), 2);
        let (a, b, c) = (Cache::key("a"), Cache::key("b"), Cache::key("c"));
        cache.put(a, Ok(Principal::new("a")), None);
        cache.put(b, Err(Unauthenticated::new("inactive")), None);
        // Full, and nothing has expired: the third is not kept.
        cache.put(c, Ok(Principal::new("c")), None);
        assert!(cache.get(&c).is_none());
        assert_eq!(cache.get(&a).unwrap().unwrap().id(), "a");
        assert!(cache.get(&b).unwrap().is_err());
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(cache.get(&a).is_none());
        // The expired ones make room.
        cache.put(c, Ok(Principal::new("c")), None);
        assert_eq!(cache.get(&c).unwrap().unwrap().id(), "c");
    }

    #[tokio::test(start_paused = true)]
    async fn an_active_token_is_kept_no_longer_than_it_lives() {
        let cache = Cache::new(Duration::from_secs(60), 10);
        let key = Cache::key("short-lived");
        cache.put(key, Ok(Principal::new("p")), Some(now_unix() + 5));
        assert!(cache.get(&key).is_some());
        tokio::time::advance(Duration::from_secs(6)).await;
        assert!(cache.get(&key).is_none());
        assert_ne!(Cache::key("a"), Cache::key("b"));
        assert!(cache.is_on());
        assert!(!Cache::new(Duration::ZERO, 10).is_on());
        assert!(!Cache::new(Duration::from_secs(60), 0).is_on());
    }
}
