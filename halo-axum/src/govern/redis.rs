//! Rate budgets and idempotency records in Redis, shared by every instance that uses the same
//! server and key prefix.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, FromRedisValue, Script};
use sha2::{Digest, Sha256};

use super::idempotency::{Claim, Fingerprint, Full, Idempotency, IdempotencyLimits, Stored};
use super::rate::{Decision, ToolRate};
use super::store::{
    IdempotencyStore, KeptCall, Mirror, MirroredFrame, RateStore, ReplayStore, StoreFuture, Ticket,
    Unavailable,
};

/// Keeps rate budgets and idempotency records in Redis, so that several instances of an API
/// behind a load balancer enforce one budget per caller and replay each other's responses.
///
/// Give it to [`HaloBuilder::redis`](crate::HaloBuilder::redis). It connects on first use (one
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
///   [`idempotency_ttl`](crate::HaloBuilder::idempotency_ttl) after their claim. Each caller's
///   records are counted in a sorted set beside them, in the same script, so the per-caller
///   limit of [`IdempotencyLimits`](crate::IdempotencyLimits) holds across instances; the
///   total limits are left to Redis's own `maxmemory` (with `noeviction`: see there).
/// - **Streamed calls**: the events of each call are also copied, in order, to a Redis stream,
///   so a client that lost its connection can resume the call (`Halo-Call-Id`,
///   `Last-Event-ID`) through any instance: it gets what it missed, then the new events as
///   they come. The instance running the call still streams from memory.
///
/// **When Redis cannot be reached** (refused, reset, or no answer within
/// [`timeout`](Self::timeout)), each kind of state does what its [`Fallback`] says:
/// by default rate limits go on with each instance's own budget in memory, and a request
/// with an idempotency key is refused with `503` and `Retry-After` before its handler runs.
/// After a failure Redis is not tried again for a second. A response whose request ran while
/// its record could not be written is held in memory and written as soon as Redis answers;
/// meanwhile this instance replays it, and other instances see its key as still running
/// (`409`). If the instance stops before the record is written, the key stays claimed until
/// it expires, so the handler never runs twice for one key.
///
/// ```
/// use std::time::Duration;
/// use halo_axum::{Fallback, HaloLayer, RedisStore};
/// # use utoipa_axum::{router::OpenApiRouter, routes};
/// # /// Ping.
/// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
/// # async fn ping() {}
/// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
///
/// let store = RedisStore::open("redis://127.0.0.1:6379/")
///     .expect("a Redis URL")
///     .prefix("bookstore:")
///     .rate_fallback(Fallback::Refuse);
/// let layer = HaloLayer::builder(api)
///     .redis(store)
///     .idempotency_ttl(Duration::from_secs(3600))
///     .build()
///     .expect("valid HALO metadata");
/// # let _: axum::Router = router.layer(layer);
/// ```
#[derive(Clone)]
#[must_use]
pub struct RedisStore {
    client: Client,
    prefix: String,
    rate_fallback: Fallback,
    idempotency_fallback: Fallback,
    timeout: Duration,
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

impl fmt::Debug for RedisStore {
    // The client's connection info holds the password: never show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .field("rate_fallback", &self.rate_fallback)
            .field("idempotency_fallback", &self.idempotency_fallback)
            .field("timeout", &self.timeout)
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
        let client = Client::open(url).map_err(|error| RedisStoreError {
            message: error.to_string(),
        })?;
        Ok(Self {
            client,
            prefix: "halo:".to_owned(),
            rate_fallback: Fallback::Local,
            idempotency_fallback: Fallback::Refuse,
            timeout: Duration::from_secs(1),
        })
    }

    /// The prefix of every key the store writes (`halo:` by default): instances that share
    /// budgets and records use the same prefix, and APIs that must not share them use
    /// different ones.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
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

    /// The stores a layer uses, with records kept for `ttl` (each caller's at most as
    /// `limits` says; all of `limits` for the records kept in memory during an outage), and
    /// the events of streamed calls (at most `max_events` per call) kept for `retention`
    /// after their end.
    pub(crate) fn into_stores(
        self,
        ttl: Duration,
        limits: IdempotencyLimits,
        retention: Duration,
        max_events: usize,
    ) -> (
        Box<dyn RateStore>,
        Box<dyn IdempotencyStore>,
        Arc<dyn ReplayStore>,
    ) {
        let inner = Arc::new(Inner {
            config: self,
            ttl,
            per_caller: limits.per_caller_limit(),
            retention,
            max_events,
            connection: OnceLock::new(),
            down_until: Mutex::new(None),
            local: Idempotency::new(ttl, limits),
            held: Mutex::new(HashMap::new()),
            writing: AtomicBool::new(false),
        });
        (
            Box::new(RedisRates(Arc::clone(&inner))),
            Box::new(RedisRecords(Arc::clone(&inner))),
            Arc::new(RedisCalls(inner)),
        )
    }
}

/// After a failure, Redis is not tried again for this long.
const PAUSE: Duration = Duration::from_secs(1);
/// How often held records are written again.
const RETRY_EVERY: Duration = Duration::from_millis(250);
/// The most records held while Redis cannot take them.
const MAX_HELD: usize = 10_000;

/// GCRA: `KEYS[1]` holds the theoretical arrival time (µs, Redis clock); `ARGV[1]` is the
/// interval between calls (µs), `ARGV[2]` the burst. Answers `{1, remaining}` or `{0, wait µs}`.
const RATE: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local interval = tonumber(ARGV[1])
local tolerance = interval * (tonumber(ARGV[2]) - 1)
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
if tat - tolerance > now then
  return {0, tat - tolerance - now}
end
tat = tat + interval
redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.max(1, math.ceil((tat - now) / 1000)))
return {1, math.floor((now + tolerance - tat) / interval) + 1}
";

/// Claims `KEYS[1]` for fingerprint `ARGV[1]` and token `ARGV[2]`, for `ARGV[3]` ms, unless
/// the caller's records (the sorted set `KEYS[2]`: record keys by expiry, ms, Redis clock)
/// number `ARGV[4]` already: then `{'full', ms until the oldest expires}`.
const CLAIM: &str = r"
local found = redis.call('HMGET', KEYS[1], 'fingerprint', 'status', 'headers', 'body')
if not found[1] then
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return {'full', string.format('%d', math.max(0, tonumber(oldest[2]) - now))}
  end
  redis.call('HSET', KEYS[1], 'fingerprint', ARGV[1], 'token', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), KEYS[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return {'first'}
end
if found[1] ~= ARGV[1] then return {'mismatch'} end
if not found[2] then return {'running'} end
return {'done', found[2], found[3], found[4]}
";

/// Keeps a response (`ARGV[2..4]`) in `KEYS[1]` if token `ARGV[1]` still holds it.
const FINISH: &str = r"
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'status', ARGV[2], 'headers', ARGV[3], 'body', ARGV[4])
  return 1
end
return 0
";

/// Forgets the claim of token `ARGV[1]` on `KEYS[1]` unless a response is kept, and takes it
/// out of its caller's records (`KEYS[2]`).
const ABANDON: &str = r"
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] and redis.call('HEXISTS', KEYS[1], 'status') == 0 then
  redis.call('ZREM', KEYS[2], KEYS[1])
  return redis.call('DEL', KEYS[1])
end
return 0
";

fn script(cell: &'static OnceLock<Script>, code: &str) -> &'static Script {
    cell.get_or_init(|| Script::new(code))
}

static RATE_SCRIPT: OnceLock<Script> = OnceLock::new();
static CLAIM_SCRIPT: OnceLock<Script> = OnceLock::new();
static FINISH_SCRIPT: OnceLock<Script> = OnceLock::new();
static ABANDON_SCRIPT: OnceLock<Script> = OnceLock::new();

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
    connection: OnceLock<Option<ConnectionManager>>,
    /// Redis failed; it is not tried again before this instant.
    down_until: Mutex<Option<Instant>>,
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

/// A write Redis has not taken yet.
#[derive(Debug, Clone)]
enum Held {
    Finish {
        token: u64,
        fingerprint: Fingerprint,
        stored: Stored,
        until: Instant,
    },
    Abandon {
        token: u64,
        /// Whose records the claim counts against.
        caller: String,
        until: Instant,
    },
}

impl Held {
    fn until(&self) -> Instant {
        match self {
            Self::Finish { until, .. } | Self::Abandon { until, .. } => *until,
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    /// Runs `script` with `keys` and `args`, or `None` when Redis fails or is paused after a
    /// failure.
    async fn run<T: FromRedisValue>(
        &self,
        script: &Script,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Option<T> {
        if lock(&self.down_until).is_some_and(|until| Instant::now() < until) {
            return None;
        }
        let connection = self.connection.get_or_init(|| {
            let config = ConnectionManagerConfig::new()
                .set_number_of_retries(1)
                .set_min_delay(Duration::from_millis(50))
                .set_max_delay(Duration::from_millis(500))
                .set_connection_timeout(Some(self.config.timeout))
                .set_response_timeout(Some(self.config.timeout));
            ConnectionManager::new_lazy_with_config(self.config.client.clone(), config)
                .inspect_err(|error| {
                    tracing::error!(target: "halo_axum::store", %error, "cannot set up the Redis connection");
                })
                .ok()
        });
        let mut connection = connection.clone()?;
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(*key);
        }
        for arg in args {
            invocation.arg(*arg);
        }
        let answer = tokio::time::timeout(
            self.config.timeout,
            invocation.invoke_async(&mut connection),
        )
        .await;
        let error = match answer {
            Ok(Ok(value)) => {
                if lock(&self.down_until).take().is_some() {
                    tracing::info!(target: "halo_axum::store", "Redis answers again");
                }
                return Some(value);
            }
            Ok(Err(error)) => error.to_string(),
            Err(_) => format!("no answer within {} ms", self.config.timeout.as_millis()),
        };
        let mut down = lock(&self.down_until);
        if down.is_none() {
            tracing::warn!(
                target: "halo_axum::store",
                %error,
                "Redis is unreachable; shared rate budgets and idempotency records use their fallback"
            );
        }
        *down = Some(Instant::now() + PAUSE);
        None
    }

    fn rate_key(&self, rate: &ToolRate, caller: &str) -> String {
        format!("{}rate:{}:{caller}", self.config.prefix, rate.name())
    }

    /// The Redis key of a record: a digest, so that keys and callers are not stored as such.
    fn record_key(&self, key: &str) -> String {
        self.digest_key("idem:", key)
    }

    /// The Redis key of a caller's records (a sorted set of record keys by expiry).
    fn caller_key(&self, caller: &str) -> String {
        self.digest_key("idem-caller:", caller)
    }

    /// `<prefix><kind><SHA-256 of text, in hex>`.
    fn digest_key(&self, kind: &str, text: &str) -> String {
        let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        let mut name = String::with_capacity(self.config.prefix.len() + kind.len() + 64);
        name.push_str(&self.config.prefix);
        name.push_str(kind);
        for byte in digest {
            name.push_str(&format!("{byte:02x}"));
        }
        name
    }

    async fn write(&self, key: &str, held: &Held) -> bool {
        let record = self.record_key(key);
        match held {
            Held::Finish { token, stored, .. } => {
                let token = token.to_string();
                let status = stored.status.as_u16().to_string();
                let headers = encode_headers(&stored.headers);
                self.run::<i64>(
                    script(&FINISH_SCRIPT, FINISH),
                    &[&record],
                    &[token.as_bytes(), status.as_bytes(), &headers, &stored.body],
                )
                .await
                .is_some()
            }
            Held::Abandon { token, caller, .. } => {
                let token = token.to_string();
                self.run::<i64>(
                    script(&ABANDON_SCRIPT, ABANDON),
                    &[&record, &self.caller_key(caller)],
                    &[token.as_bytes()],
                )
                .await
                .is_some()
            }
        }
    }

    /// Writes `held` now, or holds it and writes it when Redis is back.
    async fn write_or_hold(self: &Arc<Self>, key: String, held: Held) {
        if self.write(&key, &held).await {
            return;
        }
        {
            let mut pending = lock(&self.held);
            if pending.len() >= MAX_HELD && !pending.contains_key(&key) {
                tracing::error!(
                    target: "halo_axum::store",
                    "{MAX_HELD} idempotency records wait for Redis already; one more is not kept, and its key stays claimed until it expires"
                );
                return;
            }
            pending.insert(key, held);
        }
        if !self.writing.swap(true, Ordering::AcqRel) {
            tokio::spawn(Arc::clone(self).write_held());
        }
    }

    /// Writes the held records until none is left.
    async fn write_held(self: Arc<Self>) {
        loop {
            tokio::time::sleep(RETRY_EVERY).await;
            let now = Instant::now();
            let batch: Vec<(String, Held)> = {
                let mut pending = lock(&self.held);
                pending.retain(|_, held| held.until() > now);
                pending
                    .iter()
                    .map(|(key, held)| (key.clone(), held.clone()))
                    .collect()
            };
            for (key, held) in batch {
                if !self.write(&key, &held).await {
                    break;
                }
                let mut pending = lock(&self.held);
                if pending.get(&key).is_some_and(|now| same_write(now, &held)) {
                    pending.remove(&key);
                }
            }
            if lock(&self.held).is_empty() {
                self.writing.store(false, Ordering::Release);
                // A record held after the check and before the store would wait forever.
                if lock(&self.held).is_empty() || self.writing.swap(true, Ordering::AcqRel) {
                    return;
                }
            }
        }
    }

    /// A response held for `key`, for a repeat of its request on this instance.
    fn held_claim(&self, key: &str, fingerprint: &Fingerprint) -> Option<Claim> {
        match lock(&self.held).get(key)? {
            Held::Finish {
                fingerprint: known,
                stored,
                ..
            } => Some(if known == fingerprint {
                Claim::Replay(stored.clone())
            } else {
                Claim::Mismatch
            }),
            Held::Abandon { .. } => None,
        }
    }
}

fn same_write(a: &Held, b: &Held) -> bool {
    match (a, b) {
        (Held::Finish { token: a, .. }, Held::Finish { token: b, .. })
        | (Held::Abandon { token: a, .. }, Held::Abandon { token: b, .. }) => a == b,
        _ => false,
    }
}

/// Headers as `name:value` lines (a header value never holds a line break).
fn encode_headers(headers: &HeaderMap) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.push(b':');
        out.extend_from_slice(value.as_bytes());
        out.push(b'\n');
    }
    out
}

fn decode_headers(bytes: &[u8]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for line in bytes.split(|b| *b == b'\n') {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(&line[colon + 1..]),
        ) {
            headers.append(name, value);
        }
    }
    headers
}

/// A kept response read back, or `None` when the record is damaged.
fn decode_stored(status: &[u8], headers: &[u8], body: Vec<u8>) -> Option<Stored> {
    let status = std::str::from_utf8(status).ok()?.parse::<u16>().ok()?;
    Some(Stored {
        status: StatusCode::from_u16(status).ok()?,
        headers: decode_headers(headers),
        body: Bytes::from(body),
    })
}

/// The rate half of a [`RedisStore`].
#[derive(Debug)]
struct RedisRates(Arc<Inner>);

impl RateStore for RedisRates {
    fn check<'a>(
        &'a self,
        rate: &'a ToolRate,
        caller: &'a String,
    ) -> StoreFuture<'a, Result<Decision, Unavailable>> {
        Box::pin(async move {
            let inner = &self.0;
            let interval = u64::try_from(rate.interval().as_micros())
                .unwrap_or(u64::MAX)
                .max(1)
                .to_string();
            let burst = rate.burst().to_string();
            let answer: Option<(i64, i64)> = inner
                .run(
                    script(&RATE_SCRIPT, RATE),
                    &[&inner.rate_key(rate, caller)],
                    &[interval.as_bytes(), burst.as_bytes()],
                )
                .await;
            match answer {
                Some((1, remaining)) => Ok(Decision::Allowed {
                    remaining: u32::try_from(remaining.max(0)).unwrap_or(u32::MAX),
                }),
                Some((_, wait)) => Ok(Decision::Limited {
                    retry_after: Duration::from_micros(u64::try_from(wait).unwrap_or(0)),
                }),
                None => match inner.config.rate_fallback {
                    Fallback::Local => Ok(rate.check(caller)),
                    Fallback::Refuse => Err(Unavailable),
                },
            }
        })
    }
}

/// The idempotency half of a [`RedisStore`].
#[derive(Debug)]
struct RedisRecords(Arc<Inner>);

impl IdempotencyStore for RedisRecords {
    fn claim<'a>(
        &'a self,
        key: String,
        caller: &'a str,
        fingerprint: Fingerprint,
    ) -> StoreFuture<'a, Result<Claim, Unavailable>> {
        Box::pin(async move {
            let inner = &self.0;
            if let Some(claim) = inner.held_claim(&key, &fingerprint) {
                return Ok(claim);
            }
            let token = rand_token();
            let ttl = u64::try_from(inner.ttl.as_millis())
                .unwrap_or(u64::MAX)
                .max(1)
                .to_string();
            let per_caller = inner.per_caller.to_string();
            let answer: Option<Vec<Vec<u8>>> = inner
                .run(
                    script(&CLAIM_SCRIPT, CLAIM),
                    &[&inner.record_key(&key), &inner.caller_key(caller)],
                    &[
                        &fingerprint,
                        token.to_string().as_bytes(),
                        ttl.as_bytes(),
                        per_caller.as_bytes(),
                    ],
                )
                .await;
            let Some(mut answer) = answer else {
                return match inner.config.idempotency_fallback {
                    Fallback::Local => Ok(inner.local.claim(key, caller, fingerprint)),
                    Fallback::Refuse => Err(Unavailable),
                };
            };
            Ok(match answer.first().map(Vec::as_slice) {
                Some(b"first") => Claim::First(Ticket {
                    key,
                    token,
                    local: false,
                    fingerprint,
                    caller: caller.to_owned(),
                }),
                Some(b"mismatch") => Claim::Mismatch,
                Some(b"full") => {
                    let wait = answer
                        .get(1)
                        .and_then(|ms| std::str::from_utf8(ms).ok()?.parse::<u64>().ok())
                        .unwrap_or(0);
                    Claim::Full(Full::Caller(Duration::from_millis(wait)))
                }
                Some(b"done") if answer.len() == 4 => {
                    let body = answer.pop().unwrap_or_default();
                    match decode_stored(&answer[1], &answer[2], body) {
                        Some(stored) => Claim::Replay(stored),
                        // A record this version cannot read: never run the request again.
                        None => Claim::InFlight,
                    }
                }
                _ => Claim::InFlight,
            })
        })
    }

    fn finish<'a>(&'a self, ticket: Ticket, stored: Stored) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let inner = &self.0;
            if ticket.local {
                inner.local.finish(&ticket, stored);
                return;
            }
            let held = Held::Finish {
                token: ticket.token,
                fingerprint: ticket.fingerprint,
                stored,
                until: Instant::now() + inner.ttl,
            };
            inner.write_or_hold(ticket.key, held).await;
        })
    }

    fn abandon<'a>(&'a self, ticket: Ticket) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let inner = &self.0;
            if ticket.local {
                inner.local.abandon(&ticket);
                return;
            }
            let held = Held::Abandon {
                token: ticket.token,
                caller: ticket.caller,
                until: Instant::now() + inner.ttl,
            };
            inner.write_or_hold(ticket.key, held).await;
        })
    }
}

/// Appends event `ARGV[1]` (framed: `ARGV[2]`; terminal: `ARGV[3]`) to the stream `KEYS[1]`
/// unless it is there already, keeping at most `ARGV[6]` events, and describes the call in
/// `KEYS[2]` (tool `ARGV[4]`, caller `ARGV[5]`); both live `ARGV[7]` ms.
const APPEND: &str = r"
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if newest and tonumber(string.match(newest[1], '^%d+')) >= tonumber(ARGV[1]) then return 0 end
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[6], ARGV[1] .. '-0', 'd', ARGV[2])
redis.call('HSET', KEYS[2], 'tool', ARGV[4], 'caller', ARGV[5], 'finished', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
redis.call('PEXPIRE', KEYS[2], ARGV[7])
return 1
";

/// Keeps the call of `KEYS` alive for `ARGV[1]` ms more, unless it has ended.
const TOUCH: &str = r"
if redis.call('HGET', KEYS[2], 'finished') == '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
return 1
";

/// The call of `KEYS`: tool, caller, finished, oldest and newest ids, then id and frame of up
/// to 256 events after `ARGV[1]`; nothing when it is not kept.
const READ: &str = r"
local about = redis.call('HMGET', KEYS[2], 'tool', 'caller', 'finished')
if not about[1] then return {} end
local oldest = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
local out = {about[1], about[2], about[3], oldest and oldest[1] or '0-0', newest and newest[1] or '0-0'}
for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '(' .. ARGV[1] .. '-0', '+', 'COUNT', 256)) do
  table.insert(out, entry[1])
  table.insert(out, entry[2][2])
end
return out
";

static APPEND_SCRIPT: OnceLock<Script> = OnceLock::new();
static TOUCH_SCRIPT: OnceLock<Script> = OnceLock::new();
static READ_SCRIPT: OnceLock<Script> = OnceLock::new();

/// How long the events of a running call live without news from its instance: the instance
/// renews it every third of this, so the call vanishes soon after its instance stops.
const RUNNING_LIFETIME: Duration = Duration::from_secs(60);

/// The event id of a stream entry id (`<event>-0`).
fn event_id(entry: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(entry).ok()?;
    text.split('-').next()?.parse().ok()
}

fn millis(duration: Duration) -> String {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
        .to_string()
}

/// The streamed-call half of a [`RedisStore`].
#[derive(Debug)]
struct RedisCalls(Arc<Inner>);

impl RedisCalls {
    fn keys(&self, id: &str) -> (String, String) {
        let prefix = &self.0.config.prefix;
        (
            format!("{prefix}call:{id}"),
            format!("{prefix}call:{id}:about"),
        )
    }
}

/// Copies the events queued for a call to Redis, in order, until its terminal one; keeps the
/// call alive while it runs. Past the most events kept, the oldest queued ones are dropped
/// (ids keep counting, so a client sees the gap), as in memory.
async fn copy_events(
    inner: Arc<Inner>,
    keys: (String, String),
    about: (String, String),
    mut queue: tokio::sync::mpsc::UnboundedReceiver<MirroredFrame>,
) {
    let keys = [keys.0.as_str(), keys.1.as_str()];
    let (max, running) = (inner.max_events.to_string(), millis(RUNNING_LIFETIME));
    let mut renew = tokio::time::interval(RUNNING_LIFETIME / 3);
    loop {
        let frame = tokio::select! {
            frame = queue.recv() => frame,
            _ = renew.tick() => {
                let _ = inner
                    .run::<i64>(script(&TOUCH_SCRIPT, TOUCH), &keys, &[running.as_bytes()])
                    .await;
                continue;
            }
        };
        let Some(mut frame) = frame else { return };
        let ended = millis(inner.retention);
        loop {
            let (id, terminal) = (frame.id.to_string(), if frame.terminal { "1" } else { "0" });
            let lifetime = if frame.terminal { &ended } else { &running };
            let args: [&[u8]; 7] = [
                id.as_bytes(),
                &frame.bytes,
                terminal.as_bytes(),
                about.0.as_bytes(),
                about.1.as_bytes(),
                max.as_bytes(),
                lifetime.as_bytes(),
            ];
            if inner
                .run::<i64>(script(&APPEND_SCRIPT, APPEND), &keys, &args)
                .await
                .is_some()
            {
                break;
            }
            tokio::time::sleep(RETRY_EVERY).await;
            while queue.len() >= inner.max_events {
                match queue.recv().await {
                    Some(newer) => frame = newer,
                    None => return,
                }
            }
        }
        if frame.terminal {
            return;
        }
    }
}

impl ReplayStore for RedisCalls {
    fn mirror(&self, id: &str, tool: &str, caller: Option<&str>) -> Mirror {
        let (sender, queue) = tokio::sync::mpsc::unbounded_channel();
        let caller = caller.map_or_else(|| "a".to_owned(), |id| format!("p{id}"));
        tokio::spawn(copy_events(
            Arc::clone(&self.0),
            self.keys(id),
            (tool.to_owned(), caller),
            queue,
        ));
        Mirror(sender)
    }

    fn read<'a>(
        &'a self,
        id: &'a str,
        after: u64,
    ) -> StoreFuture<'a, Result<Option<KeptCall>, Unavailable>> {
        Box::pin(async move {
            let (events, about) = self.keys(id);
            let after = after.to_string();
            let Some(answer) = self
                .0
                .run::<Vec<Vec<u8>>>(
                    script(&READ_SCRIPT, READ),
                    &[&events, &about],
                    &[after.as_bytes()],
                )
                .await
            else {
                return Err(Unavailable);
            };
            if answer.len() < 5 {
                return Ok(None);
            }
            let mut frames = Vec::with_capacity((answer.len() - 5) / 2);
            let mut rest = answer[5..].chunks_exact(2);
            for pair in rest.by_ref() {
                if let Some(id) = event_id(&pair[0]) {
                    frames.push((id, Bytes::copy_from_slice(&pair[1])));
                }
            }
            let caller = match answer[1].split_first() {
                Some((b'p', id)) => Some(String::from_utf8_lossy(id).into_owned()),
                _ => None,
            };
            Ok(Some(KeptCall {
                tool: String::from_utf8_lossy(&answer[0]).into_owned(),
                caller,
                finished: answer[2] == b"1",
                oldest: event_id(&answer[3]).unwrap_or(0),
                newest: event_id(&answer[4]).unwrap_or(0),
                frames,
            }))
        })
    }
}

/// A token no other claim holds.
fn rand_token() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_survive_the_round_trip() {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.append("set-cookie", HeaderValue::from_static("a=1; Path=/"));
        headers.append("set-cookie", HeaderValue::from_static("b=2"));
        headers.insert(
            "x-odd",
            HeaderValue::from_bytes(b"caf\xc3\xa9: yes").unwrap(),
        );
        assert_eq!(decode_headers(&encode_headers(&headers)), headers);
        let stored = decode_stored(b"201", &encode_headers(&headers), b"{}".to_vec()).unwrap();
        assert_eq!(stored.status, StatusCode::CREATED);
        assert!(decode_stored(b"abc", b"", Vec::new()).is_none());
    }

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
