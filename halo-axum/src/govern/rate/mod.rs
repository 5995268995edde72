//! `limits.rate`, enforced per caller and tool with GCRA (governor); and, for a tool that
//! also declares `limits.rates`, all its limits together ([`dimensions`]).

mod dimensions;

use std::borrow::Cow;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use halo_protocol::{Limit, Location, Rate};
use http::header::RETRY_AFTER;
use http::request::Parts;
use http::{HeaderName, HeaderValue};
use serde_json::Value;

pub(crate) use self::dimensions::{Key, ToolLimits, Verdict};
use self::dimensions::{Source, decoded};
use super::{Governance, caller_key};
use crate::Principal;
use crate::audit::Outcome;
use crate::registry::{Registry, Route};
use crate::step::{Step, Stop};
use crate::valid_json::ParsedBody;
use crate::{body, problem};

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
        match decision {
            Decision::Allowed { remaining } => state_header(&self.name, *remaining, Duration::ZERO),
            Decision::Limited { retry_after } => state_header(&self.name, 0, *retry_after),
        }
    }
}

/// `RateLimit-Policy` of the limit `name`: `count` calls per `window`.
fn policy_header(name: &str, count: u32, window: Duration) -> HeaderValue {
    HeaderValue::try_from(format!("\"{name}\";q={count};w={}", window.as_secs()))
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

const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// `RateLimit-Policy` and `RateLimit` (IETF draft) for a call its tool's rate let through:
/// every answer to the call carries them.
pub(crate) type RateHeaders = [(HeaderName, HeaderValue); 2];

/// What the rate step reads of a call.
pub(crate) struct RateCall<'a> {
    pub(crate) registry: &'a Registry,
    pub(crate) route: &'a Route,
    /// Who calls (`None`: anonymous).
    pub(crate) caller: Option<&'a Principal>,
    pub(crate) parts: &'a Parts,
    /// The most bytes of body read to find an argument in it.
    pub(crate) body_limit: usize,
}

impl Governance {
    /// The rate step: one call of the tool spends its budget. With `limits.rate` alone, the
    /// budget of its caller (or, when anonymous, of the client's address); with
    /// `limits.rates`, one call from each limit that applies, all or none. Gives back the
    /// body (read when a limit counts a value of it and no step before read it) and the
    /// headers to add to the answer; `429` with `Retry-After`, naming the limit, when a
    /// budget is used up; `503` when the shared store of budgets cannot be reached.
    pub(crate) async fn limit(
        &self,
        call: RateCall<'_>,
        body: Body,
        read: Option<Bytes>,
    ) -> Step<(Body, Option<Bytes>, Option<RateHeaders>)> {
        let rules = self.rules(call.route.tool());
        if let Some(limits) = &rules.limits {
            // Boxed: the future of a call of any other tool stays as small as it was.
            return Box::pin(self.limit_all(limits, &call, body, read)).await;
        }
        let Some(rate) = &rules.rate else {
            return Ok((body, read, None));
        };
        let decision = self
            .stores
            .rates
            .check(rate, &caller_key(call.caller, call.parts))
            .await
            .map_err(unavailable)?;
        let headers = [
            (RATELIMIT_POLICY, rate.policy()),
            (RATELIMIT, rate.state(&decision)),
        ];
        match decision {
            Decision::Allowed { .. } => Ok((body, read, Some(headers))),
            Decision::Limited { retry_after } => Err(refused(&rate.limit, retry_after, headers)),
        }
    }

    /// The rate step of a tool with `limits.rates`.
    async fn limit_all(
        &self,
        limits: &ToolLimits,
        call: &RateCall<'_>,
        body: Body,
        read: Option<Bytes>,
    ) -> Step<(Body, Option<Bytes>, Option<RateHeaders>)> {
        let parts = call.parts;
        // A value of the body: parsed by validation, or read here.
        let (body, read, parsed) = if limits.reads_body
            && parts.extensions.get::<ParsedBody>().is_none()
        {
            let (body, bytes) = body::buffered(parts, body, read, call.body_limit)
                .await
                .map_err(|problem| Stop::new(Outcome::Invalid, problem::from_problem(&problem)))?;
            let parsed = serde_json::from_slice::<Value>(&bytes).ok();
            (body, Some(bytes), parsed)
        } else {
            (body, read, None)
        };
        let parsed = parts
            .extensions
            .get::<ParsedBody>()
            .map(|parsed| &parsed.0)
            .or(parsed.as_ref());
        let path = call.registry.path_params(call.route, parts.uri.path());
        let caller = caller_key(call.caller, parts);
        let keys: Vec<Option<Key>> = limits
            .limits
            .iter()
            .map(|limit| {
                let material: Option<Cow<'_, [u8]>> = match &limit.source {
                    Source::Caller => Some(caller.as_bytes().into()),
                    Source::Tenant => Some(match call.caller.and_then(Principal::tenant) {
                        Some(tenant) => format!("t:{tenant}").into_bytes().into(),
                        None => caller.as_bytes().into(),
                    }),
                    Source::Tool => Some((&[][..]).into()),
                    Source::Argument { name, location } => {
                        argument(name, *location, parts, &path, parsed)
                    }
                };
                material.map(|material| limit.key(&material))
            })
            .collect();
        let verdict = self
            .stores
            .rates
            .check_all(limits, &keys)
            .await
            .map_err(unavailable)?;
        match verdict {
            Verdict::Allowed(None) => Ok((body, read, None)),
            Verdict::Allowed(Some((index, remaining))) => {
                let limit = &limits.limits[index];
                let headers = [
                    (RATELIMIT_POLICY, limit.policy()),
                    (RATELIMIT, limit.state(remaining, Duration::ZERO)),
                ];
                Ok((body, read, Some(headers)))
            }
            Verdict::Limited(index, retry_after) => {
                let limit = &limits.limits[index];
                let headers = [
                    (RATELIMIT_POLICY, limit.policy()),
                    (RATELIMIT, limit.state(0, retry_after)),
                ];
                Err(refused(&limit.limit, retry_after, headers))
            }
        }
    }
}

/// The value of the top-level argument `name` of a call, where its tool's input says it is;
/// `None` when the call does not give it (or gives `null`).
fn argument<'a>(
    name: &str,
    location: Location,
    parts: &'a Parts,
    path: &[(&str, &'a str)],
    body: Option<&'a Value>,
) -> Option<Cow<'a, [u8]>> {
    match location {
        Location::Path => path
            .iter()
            .find(|(param, _)| *param == name)
            .map(|(_, raw)| decoded(raw, false)),
        Location::Query => parts.uri.query()?.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (*decoded(key, true) == *name.as_bytes()).then(|| decoded(value, true))
        }),
        Location::Header => parts
            .headers
            .get(name)
            .map(|value| Cow::Borrowed(value.as_bytes())),
        _ => match body?.get(name)? {
            Value::Null => None,
            Value::String(text) => Some(Cow::Borrowed(text.as_bytes())),
            other => serde_json::to_vec(other).ok().map(Cow::Owned),
        },
    }
}

fn unavailable(unavailable: super::store::Unavailable) -> Stop {
    Stop::new(Outcome::Unavailable, unavailable.response("rate budgets"))
}

/// `429` for a call `limit` refused, with `Retry-After` and `headers`; its problem document
/// names the limit (`"limit": {"rate": "3/minute", "per": "argument", "argument": "sku"}`).
fn refused(limit: &Limit, retry_after: Duration, headers: RateHeaders) -> Stop {
    let seconds = seconds_up(retry_after);
    let detail =
        format!("this operation's rate limit of {limit} is used up; try again in {seconds} s");
    let problem = halo_protocol::Problem::new(429).with_detail(detail);
    let json = match serde_json::to_value(&problem) {
        Ok(Value::Object(mut document)) => {
            let limit = serde_json::to_value(limit).unwrap_or_default();
            document.insert("limit".to_owned(), limit);
            serde_json::to_vec(&document).unwrap_or_else(|_| problem.to_json())
        }
        _ => problem.to_json(),
    };
    let mut response = problem::with_body(problem.status, json);
    response.headers_mut().extend(headers);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    Stop::new(Outcome::RateLimited, response)
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
