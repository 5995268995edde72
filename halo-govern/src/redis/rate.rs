//! Rate budgets in Redis: the same GCRA as in memory, in one Lua script per call, timed by the
//! Redis server's clock; all the limits of a tool with `limits.rates` in one script, so that
//! they are checked and spent together.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use redis::Script;

use super::connection::{Operation, script};
use super::{Fallback, Inner};
use crate::rate::{Decision, Key, ToolLimits, ToolRate, Verdict};
use crate::store::{RateStore, StoreFuture, Unavailable};

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

/// GCRA over several limits, all or nothing: `KEYS[i]` holds the theoretical arrival time
/// of limit `i` (µs, Redis clock), `ARGV[2i-1]` its interval (µs) and `ARGV[2i]` its burst.
/// Every key is checked first; only when all have room is each spent. Answers
/// `{1, i, remaining}` with the limit that has the fewest calls left, or `{0, i, wait µs}`
/// with the limit that refuses the longest.
const RATES: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local tats = {}
local refused, longest = 0, -1
local tightest, least = 0, -1
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local tolerance = interval * (tonumber(ARGV[2 * i]) - 1)
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  if tat - tolerance > now then
    if tat - tolerance - now > longest then
      refused = i
      longest = tat - tolerance - now
    end
  else
    tat = tat + interval
    tats[i] = tat
    local remaining = math.floor((now + tolerance - tat) / interval) + 1
    if least < 0 or remaining < least then
      tightest = i
      least = remaining
    end
  end
end
if refused > 0 then
  return {0, refused, longest}
end
for i, key in ipairs(KEYS) do
  redis.call('SET', key, string.format('%d', tats[i]), 'PX', math.max(1, math.ceil((tats[i] - now) / 1000)))
end
return {1, tightest, least}
";

static RATES_SCRIPT: OnceLock<Script> = OnceLock::new();

/// A key's 128 bits in hexadecimal.
fn hex(key: &Key) -> String {
    use std::fmt::Write;
    key.iter()
        .fold(String::with_capacity(32), |mut text, byte| {
            let _ = write!(text, "{byte:02x}");
            text
        })
}

impl Inner {
    fn rate_key(&self, rate: &ToolRate, caller: &str) -> String {
        format!("{}rate:{}:{caller}", self.config.prefix, rate.name())
    }

    /// `<prefix>{rate:<tool>}:<per>:<key in hex>` (a tool's limits are checked together, in
    /// one slot), `<per>` one of `caller`, `tenant`, `tool`,
    /// `argument`, `combined`: what is counted is in the key's digest, never verbatim, beside
    /// the limit's dimension (a combination's parts among it) and rate, so no two limits share
    /// a key.
    fn limit_key(&self, limits: &ToolLimits, per: &str, key: &Key) -> String {
        let tag = format!("rate:{}", limits.tool);
        self.tagged(&tag, &format!(":{per}:{}", hex(key)))
    }
}

/// The rate half of a [`RedisStore`](super::RedisStore).
#[derive(Debug)]
pub(crate) struct RedisRates(pub(crate) Arc<Inner>);

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
                    Operation::new("rates", "check"),
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

    fn check_all<'a>(
        &'a self,
        limits: &'a ToolLimits,
        keys: &'a [Option<Key>],
    ) -> StoreFuture<'a, Result<Verdict, Unavailable>> {
        Box::pin(async move {
            let inner = &self.0;
            // The limits that apply, by their index.
            let applied: Vec<usize> = (0..keys.len()).filter(|&i| keys[i].is_some()).collect();
            if applied.is_empty() {
                return Ok(Verdict::Allowed(None));
            }
            let mut names = Vec::with_capacity(applied.len());
            let mut args = Vec::with_capacity(applied.len() * 2);
            for &index in &applied {
                let (limit, key) = (&limits.limits[index], keys[index].as_ref());
                let key = key.expect("applied limits have a key");
                names.push(inner.limit_key(limits, limit.per(), key));
                let interval = u64::try_from(limit.interval.as_micros())
                    .unwrap_or(u64::MAX)
                    .max(1);
                args.push(interval.to_string());
                args.push(limit.burst.to_string());
            }
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let args: Vec<&[u8]> = args.iter().map(String::as_bytes).collect();
            let answer: Option<(i64, i64, i64)> = inner
                .run(
                    Operation::new("rates", "check_all"),
                    script(&RATES_SCRIPT, RATES),
                    &names,
                    &args,
                )
                .await;
            let index = |at: i64| {
                usize::try_from(at - 1)
                    .ok()
                    .and_then(|at| applied.get(at).copied())
            };
            match answer {
                Some((1, at, remaining)) => {
                    Ok(Verdict::Allowed(index(at).map(|index| {
                        (index, u32::try_from(remaining.max(0)).unwrap_or(u32::MAX))
                    })))
                }
                Some((_, at, wait)) => Ok(Verdict::Limited(
                    index(at).unwrap_or(applied[0]),
                    Duration::from_micros(u64::try_from(wait).unwrap_or(0)),
                )),
                None => match inner.config.rate_fallback {
                    Fallback::Local => Ok(limits.check(keys)),
                    Fallback::Refuse => Err(Unavailable),
                },
            }
        })
    }
}
