//! The MCP Tool Harness's policy document, read as it is and mapped onto the layer's own
//! declarations: `policies: { tool_harness: { ... } }` in the configuration, or
//! `policies: harness.yaml`.
//!
//! For each tool the single most specific enabled policy applies, as in the Harness: one
//! naming its upstream (`server_id`) and the tool (`tool_name`, as the upstream names it) >
//! one naming the tool > one naming the upstream (its tool a glob or `*`) > the global one
//! (the later among equals). It is not merged field by field with the others. A tool no
//! policy applies to is not served (the Harness refuses calls no policy covers).
//!
//! What a policy says becomes: `require_approval` or a risk level from `l2` → approval;
//! `allowed_agents` / `denied_agents` (and `*_principals`) → `x-halo-callers`, matched
//! against the caller's verified id; `timeout_ms` → the timeout; the `circuit_*` fields (the
//! Harness's defaults when absent: 5 failures, 30 s, 2 successes) → the circuit;
//! `rate_limits` → `limits.rates` ([`limits`]). What has no equivalent is an error naming
//! its key.

mod limits;

use std::num::NonZeroU32;
use std::time::Duration;

use glob::{MatchOptions, Pattern};
use halo_protocol::{Circuit, Limit};

use super::effective::{CallerList, Effective, Origin, Setting};
use super::rule::Candidate;
use crate::file::OneOrMany;
use crate::file::harness::{Document, Policy, RateLimit, Root};

/// Case-insensitive, `*` matching anything: Python's `fnmatch` on lowered text.
const OPTIONS: MatchOptions = MatchOptions {
    case_sensitive: false,
    require_literal_separator: false,
    require_literal_leading_dot: false,
};

/// A checked Harness document.
#[derive(Debug)]
pub(crate) struct Harness {
    /// The global policy first (when there is one), then `policies` in order.
    policies: Vec<Compiled>,
}

#[derive(Debug)]
struct Compiled {
    /// Its key in the document (`tool_harness.policies[1]`).
    key: String,
    server: Option<String>,
    tool: ToolMatch,
    enabled: bool,
    approval: bool,
    /// `None`: every caller (`allowed_agents: ["*"]`, nobody denied).
    callers: Option<CallerList>,
    /// Nobody may call (an empty `allowed_agents`).
    closed: bool,
    limits: Vec<limits::Mapped>,
    timeout: Option<Duration>,
    circuit: Circuit,
}

#[derive(Debug)]
enum ToolMatch {
    Every,
    Exact(String),
    Glob(Pattern),
}

impl Harness {
    /// Checks `root`; `key` is where it is (`policies`, or the file's name), for errors.
    pub(crate) fn compile(root: &Root, key: &str) -> Result<Self, String> {
        let document: &Document = &root.tool_harness;
        let at = format!("{key}.tool_harness");
        if document.mcp_servers.is_some() {
            return Err(format!(
                "{at}.mcp_servers: the gateway's servers are its `upstreams` (`stdio: [...]` or \
                 `mcp: URL`); move them there"
            ));
        }
        let mut policies = Vec::new();
        if let Some(global) = &document.global_tool_policy {
            let key = format!("{at}.global_tool_policy");
            if global
                .server_id
                .as_deref()
                .is_some_and(|s| !s.is_empty() && s != "*")
            {
                return Err(format!(
                    "{key}.server_id: the global policy names no server"
                ));
            }
            if global.tool_name.as_deref().is_some_and(|t| t.trim() != "*") {
                return Err(format!("{key}.tool_name: the global policy's tool is `*`"));
            }
            policies.push(Compiled::compile(global, key)?);
        }
        for (index, policy) in document.policies.iter().enumerate() {
            policies.push(Compiled::compile(
                policy,
                format!("{at}.policies[{index}]"),
            )?);
        }
        Ok(Self { policies })
    }

    /// The upstreams the policies name, with the policy's key.
    pub(crate) fn servers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.policies
            .iter()
            .filter_map(|p| Some((p.server.as_deref()?, p.key.as_str())))
    }

    /// Whether some policy holds calls for approval.
    pub(crate) fn any_approval(&self) -> bool {
        self.policies.iter().any(|p| p.enabled && p.approval)
    }

    /// Whether some policy lets only some callers call.
    pub(crate) fn any_callers(&self) -> bool {
        self.policies
            .iter()
            .any(|p| p.enabled && (p.callers.is_some() || p.closed))
    }

    /// A policy's key, for `explain`; one past the last: the tools no policy applies to.
    pub(crate) fn describe(&self, index: usize) -> String {
        match self.policies.get(index) {
            Some(policy) => policy.key.clone(),
            None => "no Harness policy (it refuses calls no policy covers)".to_owned(),
        }
    }

    /// What the policy that applies to `tool` sets on it.
    pub(crate) fn effective(&self, tool: Candidate<'_>) -> Effective {
        let chosen = self
            .policies
            .iter()
            .enumerate()
            .filter(|(_, policy)| policy.enabled)
            .filter_map(|(index, policy)| Some((policy.specificity(tool)?, index)))
            .max();
        let mut effective = Effective::default();
        let Some((_, index)) = chosen else {
            effective.exclude = Some(setting(true, self.policies.len()));
            return effective;
        };
        let policy = &self.policies[index];
        if policy.closed {
            effective.exclude = Some(setting(true, index));
            return effective;
        }
        effective.approval = Some(setting(policy.approval, index));
        effective.circuit = Some(setting(policy.circuit, index));
        effective.timeout = policy.timeout.map(|t| setting(t, index));
        effective.callers = policy.callers.clone().map(|c| setting(c, index));
        if !policy.limits.is_empty() {
            let rates: Vec<Limit> = policy.limits.iter().map(|m| m.limit.clone()).collect();
            effective.rates = Some(setting(rates, index));
        }
        effective.pooled = policy
            .limits
            .iter()
            .enumerate()
            .filter(|(_, mapped)| mapped.pooled)
            .map(|(k, mapped)| format!("{}.rate_limits[{k}] ({})", policy.key, mapped.limit))
            .collect();
        effective
    }
}

fn setting<T>(value: T, rule: usize) -> Setting<T> {
    Setting {
        value,
        origin: Origin { rule, risk: None },
    }
}

impl Compiled {
    fn compile(policy: &Policy, key: String) -> Result<Self, String> {
        let at = |field: &str, why: String| format!("{key}.{field}: {why}");
        let server = policy
            .server_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty() && *s != "*")
            .map(str::to_owned);
        let tool = match policy.tool_name.as_deref().map(str::trim) {
            None | Some("*") => ToolMatch::Every,
            Some("") => return Err(at("tool_name", "is empty".into())),
            Some(name) if name.contains(['*', '?', '[']) => ToolMatch::Glob(
                Pattern::new(name).map_err(|e| at("tool_name", format!("`{name}`: {e}")))?,
            ),
            Some(name) => ToolMatch::Exact(name.to_owned()),
        };
        let rank = match &policy.risk_level {
            None => 0,
            Some(level) => level.rank().ok_or_else(|| {
                at(
                    "risk_level",
                    "is one of l0, l1, l2, l3 (or low, medium, high, critical)".into(),
                )
            })?,
        };
        if policy.audit_enabled == Some(false) {
            return Err(at(
                "audit_enabled",
                "cannot be mapped: the gateway audits every call it forwards".into(),
            ));
        }
        if policy.circuit_half_open_max_calls.is_some_and(|n| n != 1) {
            return Err(at(
                "circuit_half_open_max_calls",
                "cannot be mapped: a half-open circuit lets one probe through at a time".into(),
            ));
        }
        let count = |field: &str, value: Option<u32>, default: u32| {
            NonZeroU32::new(value.unwrap_or(default))
                .ok_or_else(|| at(field, "must be above zero".into()))
        };
        let reset = policy.circuit_reset_timeout_seconds.unwrap_or(30.0);
        if !(reset.is_finite() && reset > 0.0 && reset < 1e9) {
            return Err(at(
                "circuit_reset_timeout_seconds",
                "must be a number of seconds above zero".into(),
            ));
        }
        let circuit = Circuit::new(
            count(
                "circuit_failure_threshold",
                policy.circuit_failure_threshold,
                5,
            )?,
            Duration::from_millis((reset * 1000.0).round().max(1.0) as u64),
            count(
                "circuit_success_threshold",
                policy.circuit_success_threshold,
                2,
            )?,
        )
        .map_err(|e| at("circuit_reset_timeout_seconds", e.to_string()))?;
        let timeout = match policy.timeout_ms {
            Some(0) => return Err(at("timeout_ms", "must be above zero".into())),
            ms => ms.map(Duration::from_millis),
        };
        let (limits, field): (Vec<Result<limits::Mapped, String>>, _) =
            match (&policy.rate_limits, &policy.metadata) {
                (Some(limits), _) => (limits.iter().map(limits::map).collect(), "rate_limits"),
                (None, Some(metadata)) if metadata.contains_key("rate_limits") => {
                    let limits: Vec<RateLimit> =
                        serde_json::from_value(metadata["rate_limits"].clone())
                            .map_err(|e| at("metadata.rate_limits", e.to_string()))?;
                    (
                        limits.iter().map(limits::map).collect(),
                        "metadata.rate_limits",
                    )
                }
                (None, _) => (
                    policy
                        .rate_limit_per_minute
                        .map(|n| limits::map(&RateLimit::per_minute(n)))
                        .into_iter()
                        .collect(),
                    "rate_limit_per_minute",
                ),
            };
        let limits = limits
            .into_iter()
            .enumerate()
            .map(|(k, mapped)| mapped.map_err(|why| format!("{key}.{field}[{k}]: {why}")))
            .collect::<Result<Vec<_>, _>>()?;
        let list = |one: &Option<OneOrMany>, two: &Option<OneOrMany>, field: &str| {
            one.iter()
                .chain(two)
                .flat_map(OneOrMany::as_slice)
                .map(|text| {
                    Pattern::new(text.trim())
                        .map(|_| text.trim().to_owned())
                        .map_err(|e| at(field, format!("`{text}` is not a glob: {e}")))
                })
                .collect::<Result<Vec<String>, String>>()
        };
        let mut allow = list(
            &policy.allowed_agents,
            &policy.allowed_principals,
            "allowed_agents",
        )?;
        if policy.allowed_agents.is_none() {
            allow.push("*".to_owned());
        }
        let deny = list(
            &policy.denied_agents,
            &policy.denied_principals,
            "denied_agents",
        )?;
        let everyone = allow.iter().any(|a| a == "*");
        let callers = (!everyone || !deny.is_empty()).then(|| CallerList {
            allow: (!everyone).then_some(allow.clone()),
            deny,
        });
        Ok(Self {
            key,
            server,
            tool,
            enabled: policy.enabled.unwrap_or(true),
            approval: policy.require_approval == Some(true) || rank >= 2,
            callers,
            closed: allow.is_empty(),
            limits,
            timeout,
            circuit,
        })
    }

    /// How specifically the policy names `tool` (the Harness's ranks), or `None` when it
    /// does not apply to it.
    fn specificity(&self, tool: Candidate<'_>) -> Option<u16> {
        let name = tool.id.unwrap_or(tool.given);
        let tool_exact = match &self.tool {
            ToolMatch::Every => false,
            ToolMatch::Exact(exact) => {
                if !exact.eq_ignore_ascii_case(name) {
                    return None;
                }
                true
            }
            ToolMatch::Glob(glob) => {
                if !glob.matches_with(name, OPTIONS) {
                    return None;
                }
                false
            }
        };
        match (&self.server, tool_exact) {
            (Some(server), _) if !server.eq_ignore_ascii_case(tool.upstream) => None,
            (Some(_), true) => Some(300),
            (None, true) => Some(200),
            (Some(_), false) => Some(100),
            (None, false) => Some(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use http::Method;

    use super::*;

    fn harness(yaml: &str) -> Harness {
        let value = crate::read::parse(yaml).unwrap();
        Harness::compile(&serde_json::from_value(value).unwrap(), "policies").unwrap()
    }

    fn effective(harness: &Harness, upstream: &str, name: &str) -> Effective {
        harness.effective(Candidate {
            upstream,
            id: Some(name),
            given: name,
            served: name,
            tags: &[],
            method: &Method::POST,
        })
    }

    /// The key of the policy that applied, or what excluded the tool.
    fn chosen(harness: &Harness, upstream: &str, name: &str) -> String {
        let effective = effective(harness, upstream, name);
        let origin = effective
            .exclude
            .as_ref()
            .map(|s| s.origin)
            .or(effective.circuit.as_ref().map(|s| s.origin))
            .unwrap();
        harness.describe(origin.rule)
    }

    #[test]
    fn the_single_most_specific_policy_applies() {
        let policies = harness(
            r#"
tool_harness:
  global_tool_policy: { timeout_ms: 100 }
  policies:
    - { server_id: trade, tool_name: "coupon.*", timeout_ms: 200 }
    - { tool_name: coupon.reserve, timeout_ms: 300 }
    - { server_id: trade, tool_name: coupon.reserve, timeout_ms: 400 }
    - { server_id: trade, tool_name: coupon.reserve, timeout_ms: 500, enabled: false }
    - { server_id: pay, tool_name: "*", timeout_ms: 600, circuit_failure_threshold: 3 }
    - { server_id: pay, timeout_ms: 700 }
"#,
        );
        let at = |upstream, name| chosen(&policies, upstream, name);
        assert_eq!(
            at("trade", "coupon.reserve"),
            "policies.tool_harness.policies[2]"
        );
        assert_eq!(
            at("other", "COUPON.RESERVE"),
            "policies.tool_harness.policies[1]"
        );
        assert_eq!(
            at("trade", "coupon.release"),
            "policies.tool_harness.policies[0]"
        );
        // Among equals, the later; a disabled policy is not considered.
        assert_eq!(at("pay", "refund"), "policies.tool_harness.policies[5]");
        assert_eq!(
            at("other", "anything"),
            "policies.tool_harness.global_tool_policy"
        );
        // Not merged field by field: the chosen policy's own values, or the Harness's
        // defaults.
        let pay = effective(&policies, "pay", "refund");
        assert_eq!(pay.timeout.unwrap().value, Duration::from_millis(700));
        assert_eq!(pay.circuit.unwrap().value.to_string(), "5/30s/2");
        assert!(!pay.approval.unwrap().value);
    }

    #[test]
    fn a_tool_no_policy_applies_to_is_not_served() {
        let policies = harness("tool_harness: { policies: [{ server_id: trade, tool_name: a }] }");
        assert!(!effective(&policies, "trade", "a").excluded());
        let other = effective(&policies, "trade", "b");
        assert!(other.excluded());
        assert!(chosen(&policies, "trade", "b").starts_with("no Harness policy"));
        let closed = harness("tool_harness: { policies: [{ allowed_agents: [] }] }");
        assert!(effective(&closed, "trade", "a").excluded());
    }

    #[test]
    fn agents_approval_and_risk_map_onto_the_layers_declarations() {
        let policies = harness(
            r#"
tool_harness:
  policies:
    - { tool_name: a, allowed_agents: [finance-*], denied_agents: intern, risk_level: HIGH }
    - { tool_name: b, allowed_principals: [x], require_approval: true }
    - { tool_name: c, allowed_agents: [x], allowed_principals: [y], risk_level: 1 }
"#,
        );
        let a = effective(&policies, "u", "a");
        assert!(a.approval.unwrap().value, "high is l2");
        let callers = a.callers.unwrap().value;
        assert_eq!(callers.allow, Some(vec!["finance-*".to_owned()]));
        assert_eq!(callers.deny, ["intern"]);
        // As in the Harness, `allowed_agents` left out is `["*"]`, whatever
        // `allowed_principals` adds.
        let b = effective(&policies, "u", "b");
        assert!(b.callers.is_none());
        assert!(b.approval.unwrap().value);
        let c = effective(&policies, "u", "c");
        assert_eq!(
            c.callers.unwrap().value.allow,
            Some(vec!["x".to_owned(), "y".to_owned()])
        );
        assert!(!c.approval.unwrap().value);
    }
}
