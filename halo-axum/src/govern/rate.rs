//! The rate step of a call: its tool's budgets spent, or `429`.

use std::borrow::Cow;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use halo_govern::{Decision, Key, Source, ToolLimits, Unavailable, Verdict, decoded, seconds_up};
use halo_protocol::{Limit, Location};
use http::header::RETRY_AFTER;
use http::request::Parts;
use http::{HeaderName, HeaderValue};
use serde_json::Value;

use super::{Governance, caller_key, refusal};
use crate::Principal;
use crate::audit::Outcome;
use crate::registry::{Registry, Route};
use crate::step::{Step, Stop};
use crate::valid_json::ParsedBody;
use crate::{body, problem};

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
            Decision::Limited { retry_after } => Err(refused(rate.limit(), retry_after, headers)),
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
        let (body, read, parsed) = if limits.reads_body()
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
        let counted = Counted {
            caller: &caller_key(call.caller, parts),
            tenant: call.caller.and_then(Principal::tenant),
            parts,
            path: &path,
            body: parsed,
        };
        let keys: Vec<Option<Key>> = limits
            .limits()
            .iter()
            .map(|limit| material(limit.source(), &counted).map(|material| limit.key(&material)))
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
                let limit = &limits.limits()[index];
                let headers = [
                    (RATELIMIT_POLICY, limit.policy()),
                    (RATELIMIT, limit.state(remaining, Duration::ZERO)),
                ];
                Ok((body, read, Some(headers)))
            }
            Verdict::Limited(index, retry_after) => {
                let limit = &limits.limits()[index];
                let headers = [
                    (RATELIMIT_POLICY, limit.policy()),
                    (RATELIMIT, limit.state(0, retry_after)),
                ];
                Err(refused(limit.limit(), retry_after, headers))
            }
        }
    }
}

/// What a call gives its limits to count.
struct Counted<'a> {
    /// The caller's key (principal, client address).
    caller: &'a str,
    /// The principal's tenant, if it has one.
    tenant: Option<&'a str>,
    parts: &'a Parts,
    path: &'a [(&'a str, &'a str)],
    /// The body, when a limit counts a value of it and it is JSON.
    body: Option<&'a Value>,
}

/// What a limit whose values are in `source` counts of a call (its key is a digest of it);
/// `None` when the call lacks it (an argument it does not give, or one of a combination's),
/// so the limit does not apply.
fn material<'a>(source: &Source, call: &Counted<'a>) -> Option<Cow<'a, [u8]>> {
    match source {
        Source::Caller => Some(call.caller.as_bytes().into()),
        Source::Tenant => Some(match call.tenant {
            Some(tenant) => format!("t:{tenant}").into_bytes().into(),
            None => call.caller.as_bytes().into(),
        }),
        Source::Tool => Some((&[][..]).into()),
        Source::Argument { name, location } => {
            argument(name, *location, call.parts, call.path, call.body)
        }
        // Each part's material after its length, so that no two combinations of values
        // write the same bytes.
        Source::Combined(sources) => {
            let mut joined = Vec::new();
            for source in sources {
                let part = material(source, call)?;
                joined.extend_from_slice(&(part.len() as u64).to_be_bytes());
                joined.extend_from_slice(&part);
            }
            Some(joined.into())
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

fn unavailable(unavailable: Unavailable) -> Stop {
    Stop::new(
        Outcome::Unavailable,
        refusal::unavailable(unavailable, "rate budgets"),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    fn location(name: &str, location: Location) -> Source {
        Source::Argument {
            name: name.to_owned(),
            location,
        }
    }

    #[test]
    fn a_combination_writes_each_part_after_its_length() {
        let (parts, ()) = http::Request::builder()
            .uri("/x?a=ab&b=c&c=a&d=bc")
            .body(())
            .unwrap()
            .into_parts();
        let call = |tenant| Counted {
            caller: "p:alice",
            tenant,
            parts: &parts,
            path: &[],
            body: None,
        };
        let pair = |first: &str, second: &str| {
            Source::Combined(vec![
                location(first, Location::Query),
                location(second, Location::Query),
            ])
        };
        let acme = call(Some("acme"));
        let ab_c = material(&pair("a", "b"), &acme).unwrap();
        let a_bc = material(&pair("c", "d"), &acme).unwrap();
        assert_eq!(&*ab_c, b"\0\0\0\0\0\0\0\x02ab\0\0\0\0\0\0\0\x01c");
        assert_ne!(ab_c, a_bc, "\"ab\" + \"c\" is not \"a\" + \"bc\"");
        let tenant = Source::Combined(vec![Source::Tenant, location("a", Location::Query)]);
        assert_eq!(
            &*material(&tenant, &acme).unwrap(),
            b"\0\0\0\0\0\0\0\x06t:acme\0\0\0\0\0\0\0\x02ab"
        );
        // Without a tenant, the caller's key stands for it.
        assert_eq!(
            &*material(&tenant, &call(None)).unwrap(),
            b"\0\0\0\0\0\0\0\x07p:alice\0\0\0\0\0\0\0\x02ab"
        );
        // A part the call does not give: the limit does not apply.
        assert_eq!(material(&pair("a", "missing"), &acme), None);
    }
}
