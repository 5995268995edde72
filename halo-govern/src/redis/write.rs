//! The end of a call written to its idempotency record: its response kept, or its claim
//! given up; while Redis cannot take it, held in memory and written again until it can.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use redis::Script;

use super::Inner;
use super::codec::encode_headers;
use super::connection::{Operation, RETRY_EVERY, lock, script};
use crate::store::{Claim, Fingerprint, Stored};

/// The most records held while Redis cannot take them.
const MAX_HELD: usize = 10_000;

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

static FINISH_SCRIPT: OnceLock<Script> = OnceLock::new();
static ABANDON_SCRIPT: OnceLock<Script> = OnceLock::new();

/// A write Redis has not taken yet.
#[derive(Debug, Clone)]
pub(crate) enum Held {
    Finish {
        token: u64,
        /// Whose records the claim counts against.
        caller: String,
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

    fn caller(&self) -> &str {
        match self {
            Self::Finish { caller, .. } | Self::Abandon { caller, .. } => caller,
        }
    }
}

impl Inner {
    async fn write(&self, key: &str, held: &Held) -> bool {
        let (record, records) = self.idempotency_keys(key, held.caller());
        match held {
            Held::Finish { token, stored, .. } => {
                let token = token.to_string();
                let status = stored.status.as_u16().to_string();
                let headers = encode_headers(&stored.headers);
                self.run::<i64>(
                    Operation::new("idempotency", "finish"),
                    script(&FINISH_SCRIPT, FINISH),
                    &[&record],
                    &[token.as_bytes(), status.as_bytes(), &headers, &stored.body],
                )
                .await
                .is_some()
            }
            Held::Abandon { token, .. } => {
                let token = token.to_string();
                self.run::<i64>(
                    Operation::new("idempotency", "abandon"),
                    script(&ABANDON_SCRIPT, ABANDON),
                    &[&record, &records],
                    &[token.as_bytes()],
                )
                .await
                .is_some()
            }
        }
    }

    /// Writes `held` now, or holds it and writes it when Redis is back.
    pub(crate) async fn write_or_hold(self: &Arc<Self>, key: String, held: Held) {
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
    pub(crate) fn held_claim(&self, key: &str, fingerprint: &Fingerprint) -> Option<Claim> {
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
