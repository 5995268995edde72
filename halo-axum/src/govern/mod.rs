//! What a schema declares, enforced: `limits.rate` and `limits.rates`, `Idempotency-Key` (from
//! `limits.idempotency_key`), `resilience.timeout_ms` and `resilience.circuit`, each per
//! tool. Rate budgets, idempotency records and the state of circuit breakers live in stores:
//! this process's memory, or Redis.

mod breaker;
mod carry;
mod idempotency;
mod rate;
pub(crate) mod refusal;
mod timeout;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use http::request::Parts;
use http::{HeaderName, Method, Uri};

pub(crate) use self::rate::{RateCall, RateHeaders};
pub(crate) use self::timeout::{outcome, within};
use crate::Principal;
use crate::registry::{Registry, Route};
pub use halo_govern::IdempotencyLimits;
pub(crate) use halo_govern::{
    Breaker, CircuitStore, Idempotency, IdempotencyStore, KeptCall, LocalRates, Mirror,
    MirroredFrame, Permit, RateStore, ReplayStore, Ticket, ToolLimits, ToolRate, fingerprint,
};
#[cfg(feature = "redis")]
pub use halo_govern::{Fallback, RedisStore, RedisStoreError};
#[cfg(feature = "redis")]
pub(crate) use halo_govern::{RedisLink, decode_headers, encode_headers};

/// The rules of one tool.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    /// `limits.rate`, when the tool declares no `limits.rates`.
    pub(crate) rate: Option<Arc<ToolRate>>,
    /// `limits.rates` and `limits.rate`, enforced together.
    pub(crate) limits: Option<Arc<ToolLimits>>,
    /// The header whose value makes a repeat of a call safe.
    pub(crate) key_header: Option<HeaderName>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) breaker: Option<Arc<Breaker>>,
    /// Every call waits for approval (`effects.approval`).
    pub(crate) approval: bool,
}

impl Rules {
    fn any(&self) -> bool {
        self.rate.is_some()
            || self.limits.is_some()
            || self.key_header.is_some()
            || self.timeout.is_some()
            || self.breaker.is_some()
            || self.approval
    }
}

/// Where rate budgets and idempotency records are kept, and where the events of streamed
/// calls are copied for the other instances (none in memory: an instance's own calls are
/// served from its memory).
#[derive(Debug)]
pub(crate) struct Stores {
    pub(crate) rates: Box<dyn RateStore>,
    pub(crate) records: Arc<dyn IdempotencyStore>,
    /// Whether every store is this process's memory.
    pub(crate) local: bool,
    pub(crate) replay: Option<Arc<dyn ReplayStore>>,
    /// Where circuit breakers share their state (none: each instance's own).
    pub(crate) circuits: Option<Arc<dyn CircuitStore>>,
    /// The shared store's connection, which readiness asks (none: this process's memory).
    #[cfg(feature = "redis")]
    pub(crate) link: Option<RedisLink>,
}

impl Stores {
    /// This process's memory, with records kept for `ttl`, within `limits`.
    pub(crate) fn local(ttl: Duration, limits: IdempotencyLimits) -> Self {
        Self {
            rates: Box::new(LocalRates),
            records: Arc::new(Idempotency::new(ttl, limits)),
            replay: None,
            circuits: None,
            local: true,
            #[cfg(feature = "redis")]
            link: None,
        }
    }

    /// Redis, with records kept for `ttl` (`limits` as [`IdempotencyLimits`] says), and the
    /// events of streamed calls (at most `max_events` per call) for `retention` after their
    /// end; and the connection, for the approvals kept there.
    #[cfg(feature = "redis")]
    pub(crate) fn redis(
        store: RedisStore,
        ttl: Duration,
        limits: IdempotencyLimits,
        retention: Duration,
        max_events: usize,
    ) -> (Self, RedisLink) {
        let (rates, records, replay, circuits, link) =
            store.into_stores(ttl, limits, retention, max_events);
        let stores = Self {
            rates,
            records: Arc::from(records),
            replay: Some(replay),
            circuits: Some(circuits),
            local: false,
            link: Some(link.clone()),
        };
        (stores, link)
    }
}

/// The rules of every tool, and the state they keep.
#[derive(Debug)]
pub(crate) struct Governance {
    rules: Vec<Rules>,
    /// Which paths may be those of governed tools (none when no tool is governed): most
    /// requests pass through after a few comparisons, without walking the registry's router.
    governed: Prefilter,
    pub(crate) stores: Stores,
}

impl Governance {
    /// The rules the registry's schemas declare; `default_timeout` applies to tools that
    /// declare none. (A default circuit is written into the schemas by the registry: what a
    /// tool shows is what it gets.) `metered`: circuits report their state to the metrics. A
    /// tool `previous` (the registry and governance of the layer this one replaces) had, with
    /// the same declarations, keeps its rate budgets and circuit.
    pub(crate) fn new(
        registry: &Registry,
        default_timeout: Option<Duration>,
        stores: Stores,
        metered: bool,
        previous: Option<(&Registry, &Self)>,
    ) -> Self {
        let carried =
            previous.map(|(registry, governance)| carry::Carried::new(registry, governance));
        let rules: Vec<Rules> = registry
            .tools()
            .map(|tool| {
                let limits = tool.schema().limits.as_ref();
                let resilience = tool.schema().resilience.as_ref();
                let timeout = resilience
                    .and_then(|r| r.timeout_ms)
                    .map(Duration::from_millis)
                    .or(default_timeout);
                if let Some(kept) = carried.as_ref().and_then(|c| c.same(tool, timeout)) {
                    return Rules {
                        rate: kept.rate.clone(),
                        limits: kept.limits.clone(),
                        key_header: kept.key_header.clone(),
                        timeout,
                        breaker: kept.breaker.clone(),
                        approval: kept.approval,
                    };
                }
                let dimensioned = limits.and_then(|l| {
                    ToolLimits::new(tool.name(), l.rate, &l.rates, &tool.schema().input)
                });
                Rules {
                    rate: limits
                        .and_then(|l| l.rate)
                        .filter(|_| dimensioned.is_none())
                        .map(|rate| Arc::new(ToolRate::new(tool.name(), rate))),
                    limits: dimensioned.map(Arc::new),
                    key_header: limits
                        .and_then(|l| l.idempotency_key.as_deref())
                        .and_then(|name| HeaderName::try_from(name).ok()),
                    timeout,
                    breaker: resilience.and_then(|r| r.circuit).map(|circuit| {
                        Breaker::build(circuit, tool.name(), timeout, metered, &stores.circuits)
                    }),
                    approval: tool
                        .schema()
                        .effects
                        .as_ref()
                        .is_some_and(|effects| effects.approval.is_some()),
                }
            })
            .collect();
        Self {
            governed: Prefilter::new(&registry.templates_where(|tool| rules[tool].any())),
            rules,
            stores,
        }
    }

    /// The call of a governed tool a request on `uri` with `method` is, if it is one.
    #[inline] // On the pass-through path of `Halo::call` (see there).
    pub(crate) fn route(&self, registry: &Registry, uri: &Uri, method: &Method) -> Option<Route> {
        if !self.governed.may_match(uri.path()) {
            return None;
        }
        registry
            .route(uri, method)
            .filter(|route| self.governs(route.tool()))
    }

    /// The rules of the tool at `index`.
    pub(crate) fn rules(&self, index: usize) -> &Rules {
        &self.rules[index]
    }

    /// Whether the tool at `index` has a rule.
    pub(crate) fn governs(&self, index: usize) -> bool {
        self.rules[index].any()
    }
}

/// A test that a request path cannot be one of some templates: it may match a template
/// only if it equals it (a template without parameters) or starts with the text before its
/// first parameter. Whether it does is the registry's router to say, which prefers static
/// segments over parameters.
#[derive(Debug, Default)]
struct Prefilter {
    /// Templates without parameters.
    exact: Vec<Box<str>>,
    /// The text before the first parameter of the others.
    prefixes: Vec<Box<str>>,
}

impl Prefilter {
    fn new(templates: &[&str]) -> Self {
        let mut filter = Self::default();
        for template in templates {
            match template.find('{') {
                None => filter.exact.push((*template).into()),
                Some(at) => filter.prefixes.push(template[..at].into()),
            }
        }
        filter
    }

    /// Whether `path` may be the path of one of the templates.
    #[inline] // On the pass-through path of `Halo::call` (see there).
    fn may_match(&self, path: &str) -> bool {
        self.exact.iter().any(|exact| **exact == *path)
            || self
                .prefixes
                .iter()
                .any(|prefix| path.starts_with(&**prefix))
    }
}

/// Whose budget a call spends: the principal's, or the client address's when anonymous (the
/// address needs `into_make_service_with_connect_info`; without it, anonymous callers share
/// one budget).
pub(crate) fn caller_key(caller: Option<&Principal>, parts: &Parts) -> String {
    caller_bucket(caller.map(Principal::id), parts)
}

/// [`caller_key`] by the principal's id: whose quota of rate and of kept idempotency
/// records a call counts against.
pub(crate) fn caller_bucket(principal: Option<&str>, parts: &Parts) -> String {
    match principal {
        Some(id) => format!("p:{id}"),
        None => match parts.extensions.get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(address)) => format!("ip:{}", address.ip()),
            None => "anonymous".to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::Prefilter;

    #[test]
    fn the_prefilter_never_rules_out_a_path_a_template_matches() {
        let filter = Prefilter::new(&["/pets", "/pets/{id}/vaccines", "/files/{*rest}"]);
        // Candidates only: the registry's router decides ("/pets/1" has no vaccines).
        for path in ["/pets", "/pets/1/vaccines", "/pets/1", "/files/a/b"] {
            assert!(filter.may_match(path), "{path}");
        }
        for path in ["/petsx", "/pet", "/owners", "/files", "/", ""] {
            assert!(!filter.may_match(path), "{path}");
        }
        assert!(!Prefilter::new(&[]).may_match("/pets"));
        // Without parameters, only the template itself.
        let exact = Prefilter::new(&["/pets"]);
        assert!(exact.may_match("/pets") && !exact.may_match("/pets/1"));
    }
}
