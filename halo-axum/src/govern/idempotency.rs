//! `Idempotency-Key`: the first request with a key runs, and its response is kept; a repeat
//! gets that response again and never runs the handler a second time. What is kept is
//! bounded ([`IdempotencyLimits`]): per caller and in all, in records and in bytes; a new key
//! that does not fit is refused, and a live record is never dropped to make room.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::CONTENT_LENGTH;
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

/// Bounds on the idempotency records kept in memory: how many each caller may have, how
/// many in all, and how many bytes of keys and responses in all. Give them to
/// [`HaloBuilder::idempotency_limits`](crate::HaloBuilder::idempotency_limits).
///
/// A record is kept from the request that claims its key until the
/// [TTL](crate::HaloBuilder::idempotency_ttl) after that claim, while the request runs and
/// after. It is never dropped early to make room: the handler must never run twice for one
/// key. So when a new key does not fit, the request carrying it is refused before its
/// handler runs, as `application/problem+json` with `Retry-After` (whole seconds, at least
/// 1) and a detail that names no other caller:
///
/// - `429 Too Many Requests` when the caller keeps [`per_caller`](Self::per_caller) records
///   already; `Retry-After` is when its oldest record expires.
/// - `503 Service Unavailable` when the store keeps [`records`](Self::records) records, or
///   the new key would pass [`bytes`](Self::bytes); `Retry-After` is when the oldest record
///   of all expires.
///
/// Repeats of keys already kept are answered as ever (the kept response, `409`, `422`),
/// however full the store. Expired records are forgotten before the store counts as full.
///
/// The caller is the one rate limits count: the principal, else the client's IP address
/// (with `into_make_service_with_connect_info`; without it every anonymous caller shares one
/// quota).
///
/// A record counts its key (with the tool's name and the caller's id it is kept under), and
/// once its request has finished, the response's header names and values and its body. A response that does not fit in the bytes left is still sent to
/// its caller, and its key still never runs again: the record keeps the status and headers
/// without the body (or the status alone when the headers do not fit either), so a repeat
/// gets that status with an empty body, as for a body over 4 MiB. The bookkeeping of a
/// record (fingerprint, times, caller) takes a few hundred bytes more, bounded by
/// [`records`](Self::records).
///
/// The defaults bound the store to 256 MiB of keys and responses plus the bookkeeping of
/// 100,000 records (a few hundred bytes each: some 50 MiB), whatever callers send:
///
/// | limit | default | why |
/// |---|---|---|
/// | [`per_caller`](Self::per_caller) | 1,000 | a client makes one key per call it may retry: with the default 24-hour TTL, a new keyed call every 90 s around the clock; no caller holds more than 1% of the records |
/// | [`records`](Self::records) | 100,000 | 100 callers at their quota, with bookkeeping of a few hundred bytes each |
/// | [`bytes`](Self::bytes) | 256 MiB | 2.6 KiB per record at the record limit, more than most JSON answers take, and room for 64 bodies of the 4 MiB kept at most |
///
/// Raise them for busy callers (or lower the TTL): a caller that makes more keyed calls a
/// TTL than its quota gets `429` until its oldest keys expire. The byte limit is not shared
/// out per caller: a caller whose calls answer large bodies can take much of it, after which
/// responses are kept without their bodies and new keys wait for room.
///
/// With [`RedisStore`](crate::RedisStore) (feature `redis`), the per-caller limit is kept in
/// Redis (one sorted set per caller, checked and updated in the claim's Lua script, so every
/// instance counts against one quota); the total limits are not, since Redis bounds its own
/// memory: set its `maxmemory` with `maxmemory-policy noeviction` (a policy that evicts could
/// evict a live record, and its key would run again). A Redis that refuses writes at its
/// `maxmemory` is treated as unreachable: keyed requests get `503` (see
/// [`Fallback`](crate::Fallback)). The records this instance keeps in memory while Redis
/// cannot be reached ([`Fallback::Local`](crate::Fallback::Local)) have all three limits.
///
/// ```
/// use std::time::Duration;
/// use halo_axum::{HaloLayer, IdempotencyLimits};
/// # use utoipa_axum::{router::OpenApiRouter, routes};
/// # /// Ping.
/// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
/// # async fn ping() {}
/// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
///
/// let layer = HaloLayer::builder(api)
///     .idempotency_ttl(Duration::from_secs(6 * 60 * 60))
///     .idempotency_limits(
///         IdempotencyLimits::new()
///             .per_caller(5_000)
///             .records(200_000)
///             .bytes(512 * 1024 * 1024),
///     )
///     .build()
///     .expect("valid HALO metadata");
/// # let _: axum::Router = router.layer(layer);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct IdempotencyLimits {
    per_caller: usize,
    records: usize,
    bytes: usize,
}

impl Default for IdempotencyLimits {
    fn default() -> Self {
        Self {
            per_caller: 1_000,
            records: 100_000,
            bytes: 256 * 1024 * 1024,
        }
    }
}

impl IdempotencyLimits {
    /// The defaults: 1,000 records per caller, 100,000 in all, 256 MiB in all.
    pub fn new() -> Self {
        Self::default()
    }

    /// The most records one caller may have kept at once (1,000 by default; at least 1).
    /// Past it, the caller's new keys get `429` with `Retry-After`.
    pub fn per_caller(mut self, records: usize) -> Self {
        self.per_caller = records.max(1);
        self
    }

    /// The most records kept at once, for every caller together (100,000 by default; at
    /// least 1). Past it, new keys get `503` with `Retry-After`.
    pub fn records(mut self, records: usize) -> Self {
        self.records = records.max(1);
        self
    }

    /// The most bytes of keys and responses kept at once, for every caller together
    /// (256 MiB by default). A new key that would pass it gets `503` with `Retry-After`; a
    /// response that would is kept without its body (see above).
    pub fn bytes(mut self, bytes: usize) -> Self {
        self.bytes = bytes;
        self
    }

    /// The most records one caller may have kept at once.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn per_caller_limit(&self) -> usize {
        self.per_caller
    }
}

/// A response kept for replay.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Stored {
    /// What it counts against [`IdempotencyLimits::bytes`]: header names and values, and body.
    fn size(&self) -> usize {
        let headers: usize = self
            .headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len())
            .sum();
        headers + self.body.len()
    }

    /// The response, or as much of it as fits in `room` bytes: without its body, else
    /// without its headers either. The status is always kept.
    fn fitted(mut self, room: usize) -> Self {
        let size = self.size();
        if size <= room {
            return self;
        }
        self.body = Bytes::new();
        self.headers.remove(CONTENT_LENGTH);
        if self.size() > room {
            self.headers.clear();
        }
        tracing::warn!(
            target: "halo_axum::idempotency",
            "a keyed response of {size} bytes does not fit in the idempotency records' byte limit; its status{} kept without the body",
            if self.headers.is_empty() { " is" } else { " and headers are" }
        );
        self
    }
}

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
    /// A new key, with no room to keep it: the request must not run.
    Full(Full),
}

/// Why a new key cannot be kept, and how long until the oldest record in the way expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// The caller keeps as many records as it may (`429`).
    Caller(Duration),
    /// The store keeps as many records, or bytes, as it may (`503`).
    Store(Duration),
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
pub(crate) struct Idempotency {
    records: Mutex<Records>,
    ttl: Duration,
    limits: IdempotencyLimits,
    /// The token of the last ticket handed out.
    tokens: AtomicU64,
}

impl Idempotency {
    pub(crate) fn new(ttl: Duration, limits: IdempotencyLimits) -> Self {
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
    pub(crate) fn claim(&self, key: String, caller: &str, fingerprint: Fingerprint) -> Claim {
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
    pub(crate) fn finish(&self, ticket: &Ticket, stored: Stored) {
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
    pub(crate) fn abandon(&self, ticket: &Ticket) {
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
