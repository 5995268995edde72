//! What a schema declares, enforced: `limits.rate`, `Idempotency-Key` (from
//! `limits.idempotency_key`) and `resilience.timeout_ms`, each per tool.

mod idempotency;
mod rate;

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use http::HeaderName;
use http::request::Parts;

pub(crate) use self::idempotency::{Claim, Idempotency, Stored, fingerprint};
pub(crate) use self::rate::{Decision, ToolRate, seconds_up};
use crate::Principal;
use crate::registry::Registry;

/// The rules of one tool.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    pub(crate) rate: Option<ToolRate>,
    /// The header whose value makes a repeat of a call safe.
    pub(crate) key_header: Option<HeaderName>,
    pub(crate) timeout: Option<Duration>,
}

impl Rules {
    fn any(&self) -> bool {
        self.rate.is_some() || self.key_header.is_some() || self.timeout.is_some()
    }
}

/// The rules of every tool, and the state they keep.
#[derive(Debug)]
pub(crate) struct Governance {
    rules: Vec<Rules>,
    any: bool,
    pub(crate) idempotency: Idempotency,
}

impl Governance {
    /// The rules the registry's schemas declare; `default_timeout` applies to tools that
    /// declare none.
    pub(crate) fn new(
        registry: &Registry,
        default_timeout: Option<Duration>,
        idempotency_ttl: Duration,
    ) -> Self {
        let rules: Vec<Rules> = registry
            .tools()
            .map(|tool| {
                let limits = tool.schema.limits.as_ref();
                let declared = tool
                    .schema
                    .resilience
                    .as_ref()
                    .and_then(|r| r.timeout_ms)
                    .map(Duration::from_millis);
                Rules {
                    rate: limits
                        .and_then(|l| l.rate)
                        .map(|rate| ToolRate::new(tool.name(), rate)),
                    key_header: limits
                        .and_then(|l| l.idempotency_key.as_deref())
                        .and_then(|name| HeaderName::try_from(name).ok()),
                    timeout: declared.or(default_timeout),
                }
            })
            .collect();
        Self {
            any: rules.iter().any(Rules::any),
            rules,
            idempotency: Idempotency::new(idempotency_ttl),
        }
    }

    /// Whether some tool has a rule.
    pub(crate) fn any(&self) -> bool {
        self.any
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

/// Whose budget a call spends: the principal's, or the client address's when anonymous (the
/// address needs `into_make_service_with_connect_info`; without it, anonymous callers share
/// one budget).
pub(crate) fn caller_key(caller: Option<&Principal>, parts: &Parts) -> String {
    match caller {
        Some(principal) => format!("p:{}", principal.id()),
        None => match parts.extensions.get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(address)) => format!("ip:{}", address.ip()),
            None => "anonymous".to_owned(),
        },
    }
}
