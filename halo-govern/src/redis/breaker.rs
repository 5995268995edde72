//! Circuit breakers shared through Redis: one hash per tool (`<prefix>{circuits}<tool>`) that
//! every instance's breaker mirrors, changed only by Lua scripts timed by Redis's clock.
//!
//! The hash holds the state (`s`: 0 closed, 1 half-open, 2 open), its generation (`g`, one
//! more at every change), the failures in a row (`f`), the successful probes in a row (`k`),
//! the end of the cool-down (`u`, ms) and the end of the probe's lease (`p`, ms). It never
//! expires: one small hash per tool with a circuit, and a generation that never goes back.
//!
//! Three scripts, each answering the state after it (so the mirror is as fresh as the last
//! exchange):
//!
//! - [`ENTER`], for a call the mirror cannot let through alone (half-open, cool-down over, or
//!   nothing read yet): moves an open circuit whose cool-down is over to half-open, and lets
//!   the call through if the circuit is closed or if it can lease the one probe slot (free,
//!   or its lease over: a probe's instance that stopped never answers);
//! - [`REPORT`], for a [`Batch`] of answers of one generation (ignored when the state has
//!   moved on): counts failures in a row, with the batch's successes resetting them in order,
//!   opens at the declared number; while half-open a failure opens again, successes count
//!   towards closing, and a success or a dropped probe frees the slot;
//! - [`READ`], the periodic refresh of every breaker of the layer in one exchange.
//!
//! Why a refresh: an instance whose calls succeed sends nothing, so it learns that another
//! opened the circuit from the refresh (every [`RedisStore::circuit_refresh`], one second by
//! default), or sooner from an exchange of its own. That is the staleness bound: from the
//! moment one instance opens a circuit, another lets calls through for at most the refresh
//! interval and one exchange with Redis (the timeout). Every other change is seen at once:
//! an instance whose mirror is not closed asks Redis at the end of its cool-down, and on every
//! call while half-open. Likewise a success resets the shared count of failures only when its
//! instance knows of failures (its own, or the count it last read).
//!
//! [`RedisStore::circuit_refresh`]: super::RedisStore::circuit_refresh

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use halo_protocol::Circuit;
use redis::Script;

use super::Inner;
use super::codec::millis;
use super::connection::{Operation, lock, script};
use crate::breaker::{Batch, Breaker, CircuitState, CircuitStore, SharedAnswer, View};
use crate::store::StoreFuture;

/// Reads the time (ms, Redis clock) and defines how a circuit is loaded, saved and answered
/// (`{s, g, f, k, wait ms, probing, granted, moved}`).
macro_rules! prelude {
    () => {
        r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function load(key)
  local v = redis.call('HMGET', key, 's', 'g', 'f', 'k', 'u', 'p')
  return {s = tonumber(v[1]) or 0, g = tonumber(v[2]) or 0, f = tonumber(v[3]) or 0,
    k = tonumber(v[4]) or 0, u = tonumber(v[5]) or 0, p = tonumber(v[6]) or 0}
end
local function save(key, c)
  redis.call('HSET', key, 's', c.s, 'g', string.format('%d', c.g), 'f', c.f, 'k', c.k,
    'u', string.format('%d', c.u), 'p', string.format('%d', c.p))
end
local function view(c, granted, moved)
  local wait, probing = 0, 0
  if c.s == 2 and c.u > now then wait = c.u - now end
  if c.s == 1 and c.p > now then probing = 1 end
  return {c.s, c.g, c.f, c.k, wait, probing, granted, moved}
end
"
    };
}

/// Lets a call of the circuit `KEYS[1]` through, a probe leasing the half-open slot for
/// `ARGV[1]` ms.
const ENTER: &str = concat!(
    prelude!(),
    r"
local c = load(KEYS[1])
local moved, granted = 0, 0
if c.s == 2 and now >= c.u then
  c.s = 1; c.g = c.g + 1; c.k = 0; c.p = 0; moved = 1
end
if c.s == 0 then
  granted = 1
elseif c.s == 1 and c.p <= now then
  c.p = now + tonumber(ARGV[1]); granted = 1
end
if moved == 1 or (granted == 1 and c.s == 1) then save(KEYS[1], c) end
return view(c, granted, moved)
"
);

/// The answers of calls of generation `ARGV[1]` of the circuit `KEYS[1]`: `ARGV[2]` failures
/// before the first success, `ARGV[3]` successes, `ARGV[4]` failures after the last, `ARGV[5]`
/// calls dropped; it opens at `ARGV[6]` failures in a row for `ARGV[8]` ms, and closes at
/// `ARGV[7]` successful probes.
const REPORT: &str = concat!(
    prelude!(),
    r"
local c = load(KEYS[1])
if c.g ~= tonumber(ARGV[1]) then return view(c, 0, 0) end
local lead, successes, tail = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local released = tonumber(ARGV[5])
local to_open, to_close, cool = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local moved = 0
local function open()
  c.s = 2; c.g = c.g + 1; c.f = 0; c.k = 0; c.p = 0; c.u = now + cool; moved = 1
end
if c.s == 0 then
  c.f = c.f + lead
  if c.f < to_open and successes > 0 then c.f = tail end
  if c.f >= to_open then open() end
elseif c.s == 1 then
  if lead + tail > 0 then
    open()
  else
    if successes + released > 0 then c.p = 0 end
    c.k = c.k + successes
    if c.k >= to_close then
      c.s = 0; c.g = c.g + 1; c.f = 0; c.k = 0; moved = 1
    end
  end
end
save(KEYS[1], c)
return view(c, 0, moved)
"
);

/// The state of every circuit of `KEYS`, one after the other.
const READ: &str = concat!(
    prelude!(),
    r"
local out = {}
for _, key in ipairs(KEYS) do
  for _, value in ipairs(view(load(key), 0, 0)) do table.insert(out, value) end
end
return out
"
);

static ENTER_SCRIPT: OnceLock<Script> = OnceLock::new();
static REPORT_SCRIPT: OnceLock<Script> = OnceLock::new();
static READ_SCRIPT: OnceLock<Script> = OnceLock::new();

/// The numbers a script answers per circuit.
const ANSWER_LEN: usize = 8;

/// The answer of a script: `{s, g, f, k, wait ms, probing, granted, moved}`.
fn answer(values: &[i64]) -> Option<SharedAnswer> {
    let &[
        state,
        generation,
        failures,
        successes,
        wait,
        probing,
        granted,
        moved,
    ] = values
    else {
        return None;
    };
    let count = |n: i64| u32::try_from(n.max(0)).unwrap_or(u32::MAX);
    Some(SharedAnswer {
        view: View {
            state: match state {
                0 => CircuitState::Closed,
                1 => CircuitState::HalfOpen,
                _ => CircuitState::Open,
            },
            generation: u64::try_from(generation).ok()?,
            failures: count(failures),
            successes: count(successes),
            wait: Duration::from_millis(u64::try_from(wait).unwrap_or(0)),
            probing: probing == 1,
        },
        granted: granted == 1,
        moved: moved == 1,
    })
}

/// The circuit half of a [`RedisStore`](super::RedisStore).
#[derive(Debug)]
pub(crate) struct RedisCircuits {
    inner: Arc<Inner>,
    /// Every breaker of the layer and its circuit's key, for the refresh.
    breakers: Mutex<Vec<(Weak<Breaker>, String)>>,
    /// Whether the refresh task was started.
    refreshing: AtomicBool,
}

impl RedisCircuits {
    pub(crate) fn new(inner: Arc<Inner>) -> Self {
        Self {
            inner,
            breakers: Mutex::new(Vec::new()),
            refreshing: AtomicBool::new(false),
        }
    }

    /// Starts the refresh, once, from within the runtime that serves the calls.
    fn start_refreshing(&self) {
        if self.refreshing.load(Ordering::Relaxed) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (breakers, keys) = lock(&self.breakers).iter().cloned().unzip();
        runtime.spawn(refresh(Arc::clone(&self.inner), breakers, keys));
    }
}

/// Reads the state of every circuit of `breakers` (at `keys`) every refresh interval, until
/// the layer is gone. A failed read changes nothing: each breaker goes on as it is.
async fn refresh(inner: Arc<Inner>, breakers: Vec<Weak<Breaker>>, keys: Vec<String>) {
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let mut every = tokio::time::interval(inner.config.circuit_refresh);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if breakers.iter().all(|breaker| breaker.strong_count() == 0) {
            return;
        }
        let Some(values) = inner
            .run::<Vec<i64>>(
                Operation::new("circuits", "read"),
                script(&READ_SCRIPT, READ),
                &keys,
                &[],
            )
            .await
        else {
            continue;
        };
        for (breaker, values) in breakers.iter().zip(values.chunks_exact(ANSWER_LEN)) {
            if let (Some(breaker), Some(answer)) = (breaker.upgrade(), answer(values)) {
                breaker.adopt(&answer);
            }
        }
    }
}

impl CircuitStore for RedisCircuits {
    /// `<prefix>{circuits}<tool>`: every circuit in one slot, as they are read together.
    fn key(&self, tool: &str) -> String {
        self.inner.tagged("circuits", tool)
    }

    fn watch(&self, breaker: &Arc<Breaker>, key: &str) {
        lock(&self.breakers).push((Arc::downgrade(breaker), key.to_owned()));
    }

    fn enter<'a>(&'a self, key: &'a str, lease: Duration) -> StoreFuture<'a, Option<SharedAnswer>> {
        self.start_refreshing();
        Box::pin(async move {
            let lease = millis(lease);
            let values: Vec<i64> = self
                .inner
                .run(
                    Operation::new("circuits", "enter"),
                    script(&ENTER_SCRIPT, ENTER),
                    &[key],
                    &[lease.as_bytes()],
                )
                .await?;
            answer(&values)
        })
    }

    fn report<'a>(
        &'a self,
        key: &'a str,
        circuit: &'a Circuit,
        batch: Batch,
    ) -> StoreFuture<'a, Option<SharedAnswer>> {
        Box::pin(async move {
            let args = [
                batch.generation.to_string(),
                batch.lead.to_string(),
                batch.successes.to_string(),
                batch.tail.to_string(),
                batch.released.to_string(),
                circuit.failures().to_string(),
                circuit.successes().to_string(),
                millis(circuit.cool_down()),
            ];
            let args: Vec<&[u8]> = args.iter().map(String::as_bytes).collect();
            let values: Vec<i64> = self
                .inner
                .run(
                    Operation::new("circuits", "report"),
                    script(&REPORT_SCRIPT, REPORT),
                    &[key],
                    &args,
                )
                .await?;
            answer(&values)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_whole_or_not_at_all() {
        let read = answer(&[2, 9, 0, 0, 1500, 0, 0, 1]).unwrap();
        assert_eq!(read.view.state, CircuitState::Open);
        assert_eq!(read.view.generation, 9);
        assert_eq!(read.view.wait, Duration::from_millis(1500));
        assert!(read.moved && !read.granted);
        assert!(answer(&[0, 1, 2]).is_none());
        assert!(answer(&[0, -1, 0, 0, 0, 0, 1, 0]).is_none());
    }
}
