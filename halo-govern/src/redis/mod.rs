//! Rate budgets and idempotency records in Redis, shared by every instance that uses the same
//! server and key prefix.
//!
//! [`RedisStore`] is what an application configures. Its halves, one per kind of state, share
//! one connection ([`connection`]): the rate budgets ([`rate`]), the idempotency records
//! ([`idempotency`]; a call's end is written, or held until Redis takes it, by [`write`], in
//! the form of [`codec`]), the events of streamed calls ([`mirror`]) and the state of circuit
//! breakers ([`breaker`]). The connection is lent ([`link`]) to the approvals kept here
//! (`approval::redis`).

mod breaker;
mod codec;
mod connection;
mod idempotency;
mod keys;
mod link;
mod mirror;
mod rate;
mod target;
mod write;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use self::breaker::RedisCircuits;
use self::idempotency::RedisRecords;
pub use self::link::{Operation, RedisLink, decode_headers, encode_headers};
use self::mirror::RedisCalls;
use self::rate::RedisRates;
use self::target::{Connection, Target};
use self::write::Held;
use crate::breaker::CircuitStore;
use crate::idempotency::{Idempotency, IdempotencyLimits};
use crate::store::{IdempotencyStore, RateStore, ReplayStore};

/// Keeps rate budgets, idempotency records and circuit breakers' state in Redis, so that
/// several instances of an API behind a load balancer enforce one budget per caller, replay
/// each other's responses and open and close each tool's circuit together.
///
/// Give it to halo-axum's `HaloBuilder::redis`. It connects on first use (one
/// multiplexed connection, re-established when it drops), so building a layer never waits for
/// Redis. Needs the `redis` feature.
///
/// - **Rate limits**: the same GCRA as in memory, in one Lua script per call, timed by the
///   Redis server's clock (`TIME`) so that instances agree; the same `429`, `Retry-After`,
///   `RateLimit-Policy` and `RateLimit` answers.
/// - **Idempotency keys**: a request claims its key atomically (fingerprint and a marker that it
///   runs), and its response (status, headers, body) is written to the same record when it
///   ends. A repeat on any instance gets the kept response, `409` while the first runs, `422`
///   for another request under the same key. Records expire
///   halo-axum's `idempotency_ttl` after their claim. Each caller's
///   records are counted in a sorted set beside them, in the same script, so the per-caller
///   limit of [`IdempotencyLimits`](crate::IdempotencyLimits) holds across instances; the
///   total limits are left to Redis's own `maxmemory` (with `noeviction`: see there).
/// - **Streamed calls**: the events of each call are also copied, in order, to a Redis stream,
///   so a client that lost its connection can resume the call (`Halo-Call-Id`,
///   `Last-Event-ID`) through any instance: it gets what it missed, then the new events as
///   they come. The instance running the call still streams from memory.
/// - **Circuit breakers**: one state per tool, changed by Lua scripts, which every instance
///   mirrors: a circuit opened through one instance refuses calls on all, and its half-open
///   probe is one call across all. A closed circuit's calls never wait for Redis: an instance
///   sends answers that can change the state (failures, and successes after them), asks
///   Redis when its mirror is not closed, and reads every circuit every
///   [`circuit_refresh`](Self::circuit_refresh), so it learns that another instance opened a
///   circuit within that interval (sooner when it sends or asks something itself).
/// - **Approvals** of held calls: each approval's document, state, decision and answer, the
///   bounds of halo-axum's `ApprovalLimits` and the index of idempotency keys, so
///   that any instance lists, reads and decides them. The held request and its credentials
///   stay with the instance that received the call, which runs it once approved (wherever
///   it was approved). Without Redis, approvals are refused with `503`, never kept in memory.
///
/// **When Redis cannot be reached** (refused, reset, or no answer within
/// [`timeout`](Self::timeout)), each kind of state does what its [`Fallback`] says:
/// by default rate limits go on with each instance's own budget in memory, and a request
/// with an idempotency key is refused with `503` and `Retry-After` before its handler runs.
/// Circuit breakers always go on with each instance's own breaker, from the state it last
/// read, until Redis answers again (its state then replaces theirs).
/// After a failure Redis is not tried again for a second. A response whose request ran while
/// its record could not be written is held in memory and written as soon as Redis answers;
/// meanwhile this instance replays it, and other instances see its key as still running
/// (`409`). If the instance stops before the record is written, the key stays claimed until
/// it expires, so the handler never runs twice for one key.
///
/// ```
/// use std::time::Duration;
/// use halo_govern::{Fallback, RedisStore};
///
/// let store = RedisStore::open("redis://127.0.0.1:6379/")
///     .expect("a Redis URL")
///     .prefix("bookstore:")
///     .rate_fallback(Fallback::Refuse)
///     .circuit_refresh(Duration::from_millis(500));
/// // halo-axum: `HaloLayer::builder(api).redis(store).idempotency_ttl(…).build()`.
/// # let _ = store;
/// ```
#[derive(Clone)]
#[must_use]
pub struct RedisStore {
    target: Target,
    prefix: String,
    rate_fallback: Fallback,
    idempotency_fallback: Fallback,
    timeout: Duration,
    circuit_refresh: Duration,
}

/// What a call does when the shared store cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fallback {
    /// Refuse the call with `503 Service Unavailable` (problem+json, `Retry-After`) before its
    /// handler runs. The default for idempotency keys.
    Refuse,
    /// Go on with this instance's own memory. For rate limits (the default), each instance
    /// keeps its own budget until Redis is back, so a caller may get up to one budget per
    /// instance. For idempotency keys, a key is checked only against this instance's records
    /// made during the outage: a request whose response Redis holds, sent again, runs again.
    Local,
}

/// Why a [`RedisStore`] could not be made: the URL is not a usable Redis URL.
#[derive(Debug)]
pub struct RedisStoreError {
    message: String,
}

impl RedisStoreError {
    /// Whether the URL could not be read (the only cause today).
    #[must_use]
    pub fn is_invalid_url(&self) -> bool {
        true
    }
}

impl fmt::Display for RedisStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid Redis URL: {}", self.message)
    }
}

impl std::error::Error for RedisStoreError {}

impl From<redis::RedisError> for RedisStoreError {
    fn from(error: redis::RedisError) -> Self {
        Self {
            message: error.to_string(),
        }
    }
}

/// How long one exchange with Redis may take by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

impl fmt::Debug for RedisStore {
    // The client's connection info holds the password: never show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .field("rate_fallback", &self.rate_fallback)
            .field("idempotency_fallback", &self.idempotency_fallback)
            .field("timeout", &self.timeout)
            .field("circuit_refresh", &self.circuit_refresh)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// A store on the Redis server at `url` (`redis://[user:password@]host[:port][/db]`),
    /// with keys under the prefix `halo:`. Nothing is connected yet.
    ///
    /// # Errors
    /// A URL that is not a Redis URL. The error never repeats the URL or its password.
    pub fn open(url: &str) -> Result<Self, RedisStoreError> {
        Target::single(url)
            .map(Self::on)
            .map_err(RedisStoreError::from)
    }

    /// A store on a Redis Cluster (or Valkey, ElastiCache or MemoryDB in cluster mode), known
    /// by the URLs of some of its nodes (`redis://[user:password@]host:port`; one that answers
    /// is enough, each URL with the same credentials). Nothing is connected yet: the first
    /// call reads the cluster's slot map.
    ///
    /// Each script's keys share one hash slot, so it runs on one node; the client follows
    /// `MOVED` and `ASK` redirections and reads the slot map again after them. A node that
    /// cannot be reached makes the calls whose keys it holds do what their [`Fallback`] says,
    /// as one unreachable server does, and pauses only its slots.
    ///
    /// ```
    /// use halo_govern::RedisStore;
    ///
    /// let store = RedisStore::open_cluster(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379"])
    ///     .expect("Redis URLs");
    /// # let _ = store;
    /// ```
    ///
    /// # Errors
    /// No URL, a URL that is not a Redis URL, or URLs with different credentials. The error
    /// never repeats a URL or its password.
    pub fn open_cluster<I, S>(urls: I) -> Result<Self, RedisStoreError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let urls: Vec<S> = urls.into_iter().collect();
        let urls: Vec<&str> = urls.iter().map(AsRef::as_ref).collect();
        Target::cluster(&urls)
            .map(Self::on)
            .map_err(RedisStoreError::from)
    }

    fn on(target: Target) -> Self {
        Self {
            target,
            prefix: "halo:".to_owned(),
            rate_fallback: Fallback::Local,
            idempotency_fallback: Fallback::Refuse,
            timeout: DEFAULT_TIMEOUT,
            circuit_refresh: Duration::from_secs(1),
        }
    }

    /// The prefix of every key the store writes (`halo:` by default): instances that share
    /// budgets and records use the same prefix, and APIs that must not share them use
    /// different ones. Braces are left out of it: in a Redis Cluster they mark the part of a
    /// key that chooses its node, which the store sets itself.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = keys::without_braces(&prefix.into());
        self
    }

    /// What a rate-limited call does when Redis cannot be reached ([`Fallback::Local`] by
    /// default: this instance's own budget).
    pub fn rate_fallback(mut self, fallback: Fallback) -> Self {
        self.rate_fallback = fallback;
        self
    }

    /// What a call with an idempotency key does when Redis cannot be reached
    /// ([`Fallback::Refuse`] by default: `503` before the handler runs).
    pub fn idempotency_fallback(mut self, fallback: Fallback) -> Self {
        self.idempotency_fallback = fallback;
        self
    }

    /// How long one exchange with Redis (connecting included) may take before Redis counts as
    /// unreachable (1 second by default).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How often each instance reads the state of every circuit breaker (1 second by
    /// default, at least 10 ms): the longest an instance lets calls through after another
    /// opened the circuit (plus one exchange with Redis). One small script per interval and
    /// layer, whatever the number of tools.
    ///
    /// ```
    /// use std::time::Duration;
    /// use halo_govern::RedisStore;
    ///
    /// let store = RedisStore::open("redis://127.0.0.1:6379/")
    ///     .expect("a Redis URL")
    ///     .circuit_refresh(Duration::from_millis(250));
    /// # let _ = store;
    /// ```
    pub fn circuit_refresh(mut self, every: Duration) -> Self {
        self.circuit_refresh = every.max(Duration::from_millis(10));
        self
    }

    /// The stores a layer uses (and the connection, for approvals), with records kept for `ttl` (each caller's at most as
    /// `limits` says; all of `limits` for the records kept in memory during an outage), and
    /// the events of streamed calls (at most `max_events` per call) kept for `retention`
    /// after their end.
    #[must_use]
    pub fn into_stores(
        self,
        ttl: Duration,
        limits: IdempotencyLimits,
        retention: Duration,
        max_events: usize,
    ) -> Halves {
        let inner = Arc::new(Inner {
            config: self,
            ttl,
            per_caller: limits.per_caller_limit(),
            retention,
            max_events,
            connection: tokio::sync::OnceCell::new(),
            down_until: Mutex::new(HashMap::new()),
            warned: Mutex::new(None),
            local: Idempotency::new(ttl, limits),
            held: Mutex::new(HashMap::new()),
            writing: AtomicBool::new(false),
        });
        (
            Box::new(RedisRates(Arc::clone(&inner))),
            Box::new(RedisRecords(Arc::clone(&inner))),
            Arc::new(RedisCalls(Arc::clone(&inner))),
            Arc::new(RedisCircuits::new(Arc::clone(&inner))),
            RedisLink(inner),
        )
    }
}

/// The stores a [`RedisStore`] makes: rate budgets, idempotency records, streamed calls'
/// events and circuits; and the connection, for the approvals.
type Halves = (
    Box<dyn RateStore>,
    Box<dyn IdempotencyStore>,
    Arc<dyn ReplayStore>,
    Arc<dyn CircuitStore>,
    RedisLink,
);

/// What a store shares between its rate and idempotency halves.
struct Inner {
    config: RedisStore,
    ttl: Duration,
    /// The most records one caller may have kept.
    per_caller: usize,
    /// How long a finished call's events are kept.
    retention: Duration,
    /// The most events kept per call.
    max_events: usize,
    /// Made on first use, inside the runtime.
    connection: tokio::sync::OnceCell<Connection>,
    /// Redis failed for these hash slots (one, `0`, for a single server); each is not tried
    /// again before its instant.
    down_until: Mutex<HashMap<u16, Instant>>,
    /// When a failed operation was last logged.
    warned: Mutex<Option<Instant>>,
    /// Claims made while Redis was unreachable, with [`Fallback::Local`].
    local: Idempotency,
    /// What could not be written yet, by record key.
    held: Mutex<HashMap<String, Held>>,
    /// Whether a task is writing the held records.
    writing: AtomicBool,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_errors_never_show_the_url() {
        let store = RedisStore::open("redis://user:s3cret@127.0.0.1:6390/2").unwrap();
        assert!(!format!("{store:?}").contains("s3cret"));
        let error = RedisStore::open("http://user:s3cret@example.com/").unwrap_err();
        assert!(error.is_invalid_url());
        let text = error.to_string();
        assert!(
            text.starts_with("invalid Redis URL") && !text.contains("s3cret"),
            "{text}"
        );
    }
}
