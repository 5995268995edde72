//! `limits.rate`, enforced per caller and tool with GCRA (governor).

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use halo_protocol::Rate;
use http::header::RETRY_AFTER;
use http::request::Parts;
use http::{HeaderName, HeaderValue, StatusCode};

use super::{Governance, caller_key};
use crate::Principal;
use crate::audit::Outcome;
use crate::problem;
use crate::step::{Step, Stop};

type Limiter =
    RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock, StateInformationMiddleware>;

/// Checks between two sweeps of idle keys.
const SWEEP_EVERY: u64 = 4096;

/// The rate limit of one tool.
pub(crate) struct ToolRate {
    limiter: Limiter,
    count: NonZeroU32,
    window: Duration,
    /// `"<tool>";q=<count>;w=<seconds>` (IETF RateLimit-Policy).
    policy: HeaderValue,
    /// The tool's name, as the policy names it.
    name: String,
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
pub(crate) enum Decision {
    /// Let through, with this many calls left in the burst.
    Allowed { remaining: u32 },
    /// Refused until this much time has passed.
    Limited { retry_after: Duration },
}

impl ToolRate {
    /// The limit `rate` (`N` per period: a burst of `N`, one more every period / `N`).
    pub(crate) fn new(tool: &str, rate: Rate) -> Self {
        let count = rate.count();
        let window = rate.period().duration();
        let quota = Quota::with_period(window / count.get())
            .expect("a period divided by a count of at most u32::MAX is not zero")
            .allow_burst(count);
        let name = tool.replace(['"', '\\'], "_");
        let policy = HeaderValue::try_from(format!("\"{name}\";q={count};w={}", window.as_secs()))
            .unwrap_or_else(|_| HeaderValue::from_static("\"tool\""));
        Self {
            limiter: RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>(),
            count,
            window,
            policy,
            name,
            checks: AtomicU64::new(0),
        }
    }

    /// One call by `caller` (a principal or client key).
    pub(crate) fn check(&self, caller: &String) -> Decision {
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

    /// The tool's name, as the policy names it.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The time one call takes from the budget: the window divided by the count.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn interval(&self) -> Duration {
        self.window / self.count.get()
    }

    /// The most calls let through at once: the count.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn burst(&self) -> u32 {
        self.count.get()
    }

    /// `RateLimit-Policy`.
    pub(crate) fn policy(&self) -> HeaderValue {
        self.policy.clone()
    }

    /// `RateLimit` for a decision: what is left and when the window resets (whole seconds,
    /// rounded up).
    pub(crate) fn state(&self, decision: &Decision) -> HeaderValue {
        let (remaining, reset) = match decision {
            Decision::Allowed { remaining } => (*remaining, 0),
            Decision::Limited { retry_after } => (0, seconds_up(*retry_after)),
        };
        HeaderValue::try_from(format!("\"{}\";r={remaining};t={reset}", self.name))
            .unwrap_or_else(|_| HeaderValue::from_static("\"tool\""))
    }
}

const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// `RateLimit-Policy` and `RateLimit` (IETF draft) for a call its tool's rate let through:
/// every answer to the call carries them.
pub(crate) type RateHeaders = [(HeaderName, HeaderValue); 2];

impl Governance {
    /// The rate step: one call of the tool at `tool` by `caller` (or, when anonymous, by the
    /// client's address) spends its budget. The headers to add to the answer when the tool
    /// has a rate; `429` with `Retry-After` when the budget is used up, `503` when the
    /// shared store of budgets cannot be reached.
    pub(crate) async fn limit(
        &self,
        tool: usize,
        caller: Option<&Principal>,
        parts: &Parts,
    ) -> Step<Option<RateHeaders>> {
        let Some(rate) = &self.rules(tool).rate else {
            return Ok(None);
        };
        let decision = self
            .stores
            .rates
            .check(rate, &caller_key(caller, parts))
            .await
            .map_err(|unavailable| {
                Stop::new(Outcome::Unavailable, unavailable.response("rate budgets"))
            })?;
        let headers = [
            (RATELIMIT_POLICY, rate.policy()),
            (RATELIMIT, rate.state(&decision)),
        ];
        let Decision::Limited { retry_after } = decision else {
            return Ok(Some(headers));
        };
        let seconds = seconds_up(retry_after);
        let mut response = problem::response(
            StatusCode::TOO_MANY_REQUESTS,
            format!("this operation's rate is used up; try again in {seconds} s"),
        );
        response.headers_mut().extend(headers);
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(seconds));
        Err(Stop::new(Outcome::RateLimited, response))
    }
}

/// Whole seconds, rounded up (a `Retry-After` of 0 would invite an immediate retry).
pub(crate) fn seconds_up(duration: Duration) -> u64 {
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
}
