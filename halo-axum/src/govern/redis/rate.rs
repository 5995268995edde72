//! Rate budgets in Redis: the same GCRA as in memory, in one Lua script per call, timed by the
//! Redis server's clock.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use redis::Script;

use super::connection::script;
use super::{Fallback, Inner};
use crate::govern::rate::{Decision, ToolRate};
use crate::govern::store::{RateStore, StoreFuture, Unavailable};

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

static RATE_SCRIPT: OnceLock<Script> = OnceLock::new();

impl Inner {
    fn rate_key(&self, rate: &ToolRate, caller: &str) -> String {
        format!("{}rate:{}:{caller}", self.config.prefix, rate.name())
    }
}

/// The rate half of a [`RedisStore`](super::RedisStore).
#[derive(Debug)]
pub(super) struct RedisRates(pub(super) Arc<Inner>);

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
