//! `limits.rate`, enforced per caller and tool with GCRA (governor); and, for a tool that
//! also declares `limits.rates`, all its limits together ([`dimensions`]).

mod dimensions;

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use halo_protocol::{Limit, Rate};
use http::HeaderValue;

pub use self::dimensions::{Bounded, Key, Source, ToolLimits, Verdict, decoded};

type Limiter =
    RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock, StateInformationMiddleware>;

/// Checks between two sweeps of idle keys.
const SWEEP_EVERY: u64 = 4096;

/// The rate limit of one tool.
pub struct ToolRate {
    limiter: Limiter,
    count: NonZeroU32,
    window: Duration,
    /// `"<tool>";q=<count>;w=<seconds>` (IETF RateLimit-Policy).
    policy: HeaderValue,
    /// The tool's name, as the policy names it.
    name: String,
    /// The limit, as a `429` names it.
    limit: Limit,
    checks: AtomicU64,
}

impl std::fmt::Debug for ToolRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRate")
            .field("count", &self.count)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

/// What a check decided.
#[derive(Debug)]
pub enum Decision {
    /// Let through, with this many calls left in the burst.
    Allowed {
        /// Calls left in the burst.
        remaining: u32,
    },
    /// Refused until this much time has passed.
    Limited {
        /// How long until a call would be let through.
        retry_after: Duration,
    },
}

impl ToolRate {
    /// The limit `rate` (`N` per window: a burst of `N`, one more every window / `N`).
    #[must_use]
    pub fn new(tool: &str, rate: Rate) -> Self {
        let count = rate.count();
        let window = rate.window();
        // A window shorter than `count` nanoseconds still lets one call through per
        // nanosecond, rather than none.
        let quota = Quota::with_period(interval(window, count))
            .unwrap_or_else(|| Quota::per_second(count))
            .allow_burst(count);
        let name = tool.replace(['"', '\\'], "_");
        let policy = policy_header(&name, count.get(), window);
        Self {
            limiter: RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>(),
            count,
            window,
            policy,
            name,
            limit: Limit::per_caller(rate),
            checks: AtomicU64::new(0),
        }
    }

    /// One call by `caller` (a principal or client key).
    pub fn check(&self, caller: &String) -> Decision {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.limiter.retain_recent();
        }
        match self.limiter.check_key(caller) {
            Ok(snapshot) => Decision::Allowed {
                remaining: snapshot.remaining_burst_capacity(),
            },
            Err(not_until) => Decision::Limited {
                retry_after: not_until.wait_time_from(self.limiter.clock().now()),
            },
        }
    }

    /// The limit, as a refusal names it.
    #[inline]
    #[must_use]
    pub fn limit(&self) -> &Limit {
        &self.limit
    }

    /// The tool's name, as the policy names it.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The time one call takes from the budget: the window divided by the count (one
    /// nanosecond at least).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub fn interval(&self) -> Duration {
        interval(self.window, self.count)
    }

    /// The most calls let through at once: the count.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub fn burst(&self) -> u32 {
        self.count.get()
    }

    /// `RateLimit-Policy`.
    #[inline]
    pub fn policy(&self) -> HeaderValue {
        self.policy.clone()
    }

    /// `RateLimit` for a decision: what is left and when the window resets (whole seconds,
    /// rounded up).
    #[inline]
    pub fn state(&self, decision: &Decision) -> HeaderValue {
        match decision {
            Decision::Allowed { remaining } => state_header(&self.name, *remaining, Duration::ZERO),
            Decision::Limited { retry_after } => state_header(&self.name, 0, *retry_after),
        }
    }
}

/// The time one of `count` calls per `window` takes from the budget: one nanosecond at least.
fn interval(window: Duration, count: NonZeroU32) -> Duration {
    (window / count.get()).max(Duration::from_nanos(1))
}

/// `RateLimit-Policy` of the limit `name`: `count` calls per `window`, in whole seconds
/// rounded up (the header has no finer unit).
fn policy_header(name: &str, count: u32, window: Duration) -> HeaderValue {
    HeaderValue::try_from(format!("\"{name}\";q={count};w={}", seconds_up(window)))
        .unwrap_or_else(|_| HeaderValue::from_static("\"tool\""))
}

/// `RateLimit` of the limit `name`: `remaining` calls left, the next one allowed after
/// `reset` (whole seconds, rounded up). Written on every call with a rate, so without
/// `format!`, whose machinery costs several times what the rest of the rate step does.
fn state_header(name: &str, remaining: u32, reset: Duration) -> HeaderValue {
    let mut numbers = (itoa::Buffer::new(), itoa::Buffer::new());
    let remaining = numbers.0.format(remaining);
    let reset = numbers.1.format(seconds_up(reset));
    let mut text = Vec::with_capacity(name.len() + remaining.len() + reset.len() + 8);
    for part in ["\"", name, "\";r=", remaining, ";t=", reset] {
        text.extend_from_slice(part.as_bytes());
    }
    HeaderValue::from_maybe_shared(Bytes::from(text))
        .unwrap_or_else(|_| HeaderValue::from_static("\"tool\""))
}

/// Whole seconds, rounded up (a `Retry-After` of 0 would invite an immediate retry).
#[inline]
#[must_use]
pub fn seconds_up(duration: Duration) -> u64 {
    duration.as_secs() + u64::from(duration.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_the_count_then_refusals_per_caller() {
        let rate = ToolRate::new("charge", "3/minute".parse().unwrap());
        let (a, b) = ("a".to_owned(), "b".to_owned());
        for left in [2, 1, 0] {
            assert!(matches!(rate.check(&a), Decision::Allowed { remaining } if remaining == left));
        }
        let Decision::Limited { retry_after } = rate.check(&a) else {
            panic!("the fourth call in a minute is refused");
        };
        assert!(retry_after > Duration::from_secs(15) && retry_after <= Duration::from_secs(20));
        assert!(
            matches!(rate.check(&b), Decision::Allowed { .. }),
            "another caller has its own budget"
        );
        assert_eq!(rate.policy(), "\"charge\";q=3;w=60");
        assert_eq!(
            rate.state(&Decision::Limited {
                retry_after: Duration::from_millis(19_500)
            }),
            "\"charge\";r=0;t=20"
        );
    }

    #[test]
    fn windows_of_any_span_and_unit() {
        // 2 per 50 seconds: a call every 25 s.
        let rate = ToolRate::new("poll", "2/50s".parse().unwrap());
        assert_eq!(rate.interval(), Duration::from_secs(25));
        assert_eq!(rate.policy(), "\"poll\";q=2;w=50");
        let a = "a".to_owned();
        assert!(matches!(rate.check(&a), Decision::Allowed { remaining: 1 }));
        assert!(matches!(rate.check(&a), Decision::Allowed { remaining: 0 }));
        let Decision::Limited { retry_after } = rate.check(&a) else {
            panic!("the third call in 50 s is refused");
        };
        assert!(retry_after > Duration::from_secs(24) && retry_after <= Duration::from_secs(25));
        // A window under a second, or not whole seconds, is written rounded up.
        let short = ToolRate::new("quick", "3/750ms".parse().unwrap());
        assert_eq!(short.interval(), Duration::from_millis(250));
        assert_eq!(short.policy(), "\"quick\";q=3;w=1");
        let odd = ToolRate::new("odd", "10/3333ms".parse().unwrap());
        assert_eq!(odd.policy(), "\"odd\";q=10;w=4");
        // More calls than nanoseconds in the window: one a nanosecond, and no panic.
        let dense = ToolRate::new("dense", "4294967295/ms".parse().unwrap());
        assert_eq!(dense.interval(), Duration::from_nanos(1));
        assert!(matches!(dense.check(&a), Decision::Allowed { .. }));
    }
}
