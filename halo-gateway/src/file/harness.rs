//! The shape of an MCP Tool Harness policy document, as that project writes it: a
//! `tool_harness` root (or `mcp_tool_harness`) with a `global_tool_policy` and `policies`,
//! each policy naming a server and a tool and what applies to it. The Harness's own aliases
//! are read too (`mcp_service` for `server_id`, `tool` for `tool_name`, ...). A key the
//! gateway does not know is an error, so that nothing in the document is silently ignored.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::OneOrMany;

/// The document: its root key and what is under it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Root {
    /// The Harness's policies.
    #[serde(alias = "mcp_tool_harness")]
    pub(crate) tool_harness: Document,
}

/// What is under `tool_harness`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Document {
    /// A label of this set of policies (kept for the reader; not enforced).
    #[serde(rename = "version")]
    _version: Option<Value>,
    /// The policy of every tool no more specific policy names.
    #[serde(alias = "default_tool_policy", alias = "tool_policy_defaults")]
    pub(crate) global_tool_policy: Option<Policy>,
    /// Policies of servers and tools. For each tool the single most specific one applies:
    /// server and tool named > tool named > server named > `global_tool_policy`; among equals,
    /// the later. A tool no policy applies to is not served.
    #[serde(default, alias = "tool_policies")]
    pub(crate) policies: Vec<Policy>,
    /// The Harness's own list of servers: the gateway's are its `upstreams`.
    pub(crate) mcp_servers: Option<Value>,
}

/// One policy.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Policy {
    /// The upstream it applies to (the Harness's server); every upstream when left out.
    #[serde(alias = "mcp_service", alias = "mcp_server_id", alias = "mcp_server")]
    pub(crate) server_id: Option<String>,
    /// The tool, as its upstream names it, or a glob; `*` (every tool) when left out.
    #[serde(alias = "tool")]
    pub(crate) tool_name: Option<String>,
    /// `l0`–`l3` (or `low`, `medium`, `high`, `critical`, `0`–`3`): from `l2` on, calls
    /// wait for an approver.
    pub(crate) risk_level: Option<Level>,
    /// Calls wait for an approver whatever the risk level.
    pub(crate) require_approval: Option<bool>,
    /// Whether the policy is considered at all. Default `true`.
    pub(crate) enabled: Option<bool>,
    /// The callers (ids, globs) who may call; `["*"]` when left out.
    #[serde(alias = "agents")]
    pub(crate) allowed_agents: Option<OneOrMany>,
    /// More callers who may call.
    pub(crate) allowed_principals: Option<OneOrMany>,
    /// Callers (ids, globs) who may not, whatever the lists above say.
    pub(crate) denied_agents: Option<OneOrMany>,
    /// More callers who may not.
    pub(crate) denied_principals: Option<OneOrMany>,
    /// Rate limits, all of which a call must fit.
    pub(crate) rate_limits: Option<Vec<RateLimit>>,
    /// Calls per minute for each caller, when `rate_limits` is not given.
    pub(crate) rate_limit_per_minute: Option<u32>,
    /// How long a call may take, in milliseconds.
    pub(crate) timeout_ms: Option<u64>,
    /// Failures in a row that open the tool's circuit. Default 5.
    pub(crate) circuit_failure_threshold: Option<u32>,
    /// Seconds an open circuit waits before a probe. Default 30.
    pub(crate) circuit_reset_timeout_seconds: Option<f64>,
    /// Successful probes in a row that close it again. Default 2.
    pub(crate) circuit_success_threshold: Option<u32>,
    /// Probes at a time while half-open: the gateway lets one through, so only 1.
    pub(crate) circuit_half_open_max_calls: Option<u32>,
    /// Whether calls are audited: the gateway audits every call, so only `true`.
    pub(crate) audit_enabled: Option<bool>,
    /// Free-form data; its `rate_limits` stand in for the policy's when those are not given.
    pub(crate) metadata: Option<Map<String, Value>>,
    /// The policy's id (kept for the reader).
    #[serde(rename = "policy_id")]
    _policy_id: Option<String>,
    /// When it was made (kept for the reader).
    #[serde(rename = "created_at")]
    _created_at: Option<Value>,
    /// When it was changed (kept for the reader).
    #[serde(rename = "updated_at")]
    _updated_at: Option<Value>,
}

/// A risk level as the Harness writes it: a name or a number.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Level {
    /// `l2`, `high`, ...
    Name(String),
    /// `2`.
    Number(u8),
}

impl Level {
    /// The level from 0 to 3, or `None` for a name the Harness does not know.
    pub(crate) fn rank(&self) -> Option<u8> {
        match self {
            Self::Number(n) if *n <= 3 => Some(*n),
            Self::Number(_) => None,
            Self::Name(name) => {
                let name = name.trim().to_ascii_lowercase();
                let name = name.strip_prefix("risklevel.").unwrap_or(&name);
                match name {
                    "0" | "l0" | "low" => Some(0),
                    "1" | "l1" | "medium" => Some(1),
                    "2" | "l2" | "high" => Some(2),
                    "3" | "l3" | "critical" => Some(3),
                    _ => None,
                }
            }
        }
    }
}

/// A token bucket: `capacity` calls at once, refilled at `refill_rate` a second, one per
/// key the `dimension` makes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RateLimit {
    /// `tool`, `server_tool`, `agent_tool`, `tenant_tool`, `agent`, `tenant` or `custom`.
    #[serde(alias = "scope", alias = "name")]
    pub(crate) dimension: String,
    /// The most calls at once.
    #[serde(alias = "burst")]
    pub(crate) capacity: Option<f64>,
    /// Calls added back a second.
    #[serde(alias = "tokens_per_second", alias = "rate")]
    pub(crate) refill_rate: Option<f64>,
    /// `capacity` calls a minute, refilled evenly, when those two are not given.
    pub(crate) limit_per_minute: Option<f64>,
    /// For `custom`: the key, with `{tenant_id}`, `{agent_id}`, `{tool_name}`,
    /// `{server_id}` and `{args.<argument>}` in it.
    #[serde(alias = "template")]
    pub(crate) key_template: Option<String>,
    /// The rule's id (kept for the reader).
    #[serde(rename = "rule_id", alias = "id")]
    _rule_id: Option<String>,
    /// Conditions on the call that the Harness checks before counting it.
    #[serde(alias = "matches", rename = "match")]
    pub(crate) conditions: Option<Map<String, Value>>,
}

impl RateLimit {
    /// What `rate_limit_per_minute: n` stands for: `n` calls a minute for each caller of
    /// the tool.
    pub(crate) fn per_minute(n: u32) -> Self {
        Self {
            dimension: "agent_tool".to_owned(),
            capacity: None,
            refill_rate: None,
            limit_per_minute: Some(f64::from(n)),
            key_template: None,
            _rule_id: None,
            conditions: None,
        }
    }
}
