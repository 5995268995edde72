//! The bounds on the idempotency records a layer keeps.

/// Bounds on the idempotency records kept in memory: how many each caller may have, how
/// many in all, and how many bytes of keys and responses in all. Give them to
/// halo-axum's `HaloBuilder::idempotency_limits`.
///
/// A record is kept from the request that claims its key until the
/// TTL (halo-axum's `HaloBuilder::idempotency_ttl`) after that claim, while the request runs and
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
/// use halo_govern::{Idempotency, IdempotencyLimits};
///
/// let limits = IdempotencyLimits::new()
///     .per_caller(5_000)
///     .records(200_000)
///     .bytes(512 * 1024 * 1024);
/// // The records of one process; halo-axum: `HaloBuilder::idempotency_limits(limits)`.
/// let records = Idempotency::new(Duration::from_secs(6 * 60 * 60), limits);
/// # let _ = records;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct IdempotencyLimits {
    pub(crate) per_caller: usize,
    pub(crate) records: usize,
    pub(crate) bytes: usize,
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
    #[must_use]
    pub fn per_caller_limit(&self) -> usize {
        self.per_caller
    }
}
