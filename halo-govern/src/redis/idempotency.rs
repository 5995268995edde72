//! Idempotency records in Redis: a request claims its key atomically, beside its caller's
//! count of records; its end is written by [`write`](super::write).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use redis::Script;

use super::codec::decode_stored;
use super::connection::{Operation, script};
use super::keys;
use super::write::Held;
use super::{Fallback, Inner};
use crate::store::{
    Claim, Fingerprint, Full, IdempotencyStore, StoreFuture, Stored, Ticket, Unavailable,
};

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

static CLAIM_SCRIPT: OnceLock<Script> = OnceLock::new();

impl Inner {
    /// The Redis keys of a record and of its caller's records (a sorted set of record keys
    /// by expiry), in one slot per caller: digests, so that keys and callers are not stored
    /// as such.
    pub(crate) fn idempotency_keys(&self, key: &str, caller: &str) -> (String, String) {
        let tag = format!("idem:{}", &keys::digest(caller)[..16]);
        (
            self.tagged(&tag, &keys::digest(key)),
            self.tagged(&tag, "records"),
        )
    }
}

/// The idempotency half of a [`RedisStore`](super::RedisStore).
#[derive(Debug)]
pub(crate) struct RedisRecords(pub(crate) Arc<Inner>);

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
            let (record, records) = inner.idempotency_keys(&key, caller);
            let answer: Option<Vec<Vec<u8>>> = inner
                .run(
                    Operation::new("idempotency", "claim"),
                    script(&CLAIM_SCRIPT, CLAIM),
                    &[&record, &records],
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
                caller: ticket.caller,
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

/// A token no other claim holds.
fn rand_token() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0
}
