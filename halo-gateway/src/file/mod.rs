//! The gateway configuration file's shape: every key the gateway reads, and nothing else (an
//! unknown key is an error). Values that have a text form of their own (rates, durations,
//! circuits, globs) are read as text here and checked in `config::check`, which names the
//! key of a bad one.

pub(crate) mod harness;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

pub(crate) use self::harness::Root as HarnessRoot;

/// The whole file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct File {
    /// The address to serve on. Default `127.0.0.1:8080`. Without `auth`, only a loopback
    /// address is accepted.
    pub(crate) listen: Option<String>,
    /// The gateway's name, the title of its manifest. Default `halo gateway`.
    pub(crate) name: Option<String>,
    /// Who may call the gateway. Without it, every caller is anonymous and sees every tool
    /// (loopback only).
    pub(crate) auth: Option<Auth>,
    /// Where rate budgets, idempotency records, circuit states, approvals and streamed
    /// calls are shared by every replica: a Redis URL (`redis://host:port/db`), or a Redis
    /// Cluster (`{cluster: [URL, ...]}`, some of its nodes).
    pub(crate) redis: Option<Redis>,
    /// A file to append one JSON line per call to.
    pub(crate) audit: Option<String>,
    /// Who decides calls that need approval. Required when a policy sets
    /// `approval: required` or `risk: L2`/`L3`.
    pub(crate) approvals: Option<Approvals>,
    /// The MCP endpoint (`/mcp`).
    pub(crate) mcp: Option<Mcp>,
    /// A file of the tool definitions accepted (`halo gateway pin` writes it), relative to
    /// this one: a tool of an upstream marked `pinned` is served only while its definition
    /// is the one pinned.
    pub(crate) pins: Option<String>,
    /// The APIs behind the gateway, by name: the name prefixes their paths (`/<name>/...`)
    /// and their tool names, and tags their tools.
    pub(crate) upstreams: BTreeMap<String, Upstream>,
    /// Rules that set the declarations of matching tools (for each field, the most specific
    /// matching rule that sets it wins; among equally specific ones, the later); or an MCP
    /// Tool Harness policy document, inline (`{tool_harness: {...}}`) or as a file relative
    /// to this one (`harness.yaml`).
    #[schemars(with = "Option<PoliciesShape>")]
    pub(crate) policies: Option<serde_json::Value>,
}

/// What `policies` holds (read in `config`, which names the key of a bad value).
#[derive(JsonSchema)]
#[serde(untagged)]
#[expect(dead_code, reason = "describes the configuration's JSON Schema only")]
enum PoliciesShape {
    /// The gateway's rules.
    Rules(Vec<Rule>),
    /// A Harness document.
    Harness(Box<HarnessRoot>),
    /// A Harness document's file.
    File(String),
}

/// The shared store.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Redis {
    /// One Redis server's URL (`redis://[:password@]host:port/db`).
    Server(String),
    /// A Redis Cluster (or Valkey, ElastiCache or MemoryDB in cluster mode).
    Cluster(RedisCluster),
}

/// A Redis Cluster, known by some of its nodes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RedisCluster {
    /// The URLs of some of its nodes (`redis://[:password@]host:port`), one that answers
    /// being enough.
    pub(crate) cluster: Vec<String>,
}

/// Who may call the gateway.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Auth {
    /// Static bearer tokens (`Authorization: Bearer <token>`), each with the caller it
    /// identifies. Write the tokens as `${ENV}` references, not in the file.
    #[serde(default)]
    pub(crate) tokens: BTreeMap<String, Caller>,
    /// JSON Web Tokens of an OAuth/OIDC issuer, checked against its published keys.
    pub(crate) jwt: Option<Jwt>,
    /// Opaque tokens, asked about at the issuer's introspection endpoint (RFC 7662).
    pub(crate) introspection: Option<Introspection>,
}

/// The caller a static token identifies.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Caller {
    /// The caller's id, as audit records and rate budgets name it.
    pub(crate) caller: String,
    /// The caller's tenant (rates `per tenant` count per tenant).
    pub(crate) tenant: Option<String>,
    /// The caller's scopes (`visible_to: { scopes: [...] }` requires them).
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
}

/// JWT settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Jwt {
    /// The issuer, exactly as the tokens' `iss` writes it; its keys are discovered from its
    /// metadata.
    pub(crate) issuer: String,
    /// The audience the tokens must name (the gateway's resource identifier).
    pub(crate) audience: String,
    /// The claim that names the caller's tenant.
    pub(crate) tenant_claim: Option<String>,
}

/// Token introspection settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Introspection {
    /// The issuer.
    pub(crate) issuer: String,
    /// The gateway's client id at the issuer.
    pub(crate) client_id: String,
    /// The gateway's client secret (write it as an `${ENV}` reference).
    pub(crate) client_secret: String,
    /// The audience the tokens must name.
    pub(crate) audience: Option<String>,
    /// The claim that names the caller's tenant.
    pub(crate) tenant_claim: Option<String>,
}

/// Who decides held calls: callers holding a scope, over HTTP
/// (`/.well-known/halo/approvals`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Approvals {
    /// The scope an approver holds.
    pub(crate) scope: String,
    /// Whether an approver may approve its own calls. Default `false`.
    #[serde(default)]
    pub(crate) self_approval: bool,
}

/// The MCP endpoint's settings.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Mcp {
    /// Host names `/mcp` answers besides loopback ones (DNS rebinding protection).
    #[serde(default)]
    pub(crate) allowed_hosts: Vec<String>,
    /// Origins `/mcp` accepts requests from besides loopback ones.
    #[serde(default)]
    pub(crate) allowed_origins: Vec<String>,
}

/// One API behind the gateway: exactly one of `openapi`, `halo`, `stdio` and `mcp`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Upstream {
    /// An OpenAPI 3.0 or 3.1 document describing it, JSON or YAML: a file (relative to
    /// the configuration file) or an `http(s)` URL.
    pub(crate) openapi: Option<String>,
    /// The base URL of an API that describes itself with HALO: discovered as halo-client
    /// discovers it, its calls sent there.
    pub(crate) halo: Option<String>,
    /// An MCP server the gateway runs as a child process and speaks to over its standard
    /// input and output: the program and its arguments (`[npx, -y, "@scope/server"]`).
    pub(crate) stdio: Option<Vec<String>>,
    /// The environment of a `stdio` server: these variables, and of the gateway's own only
    /// `PATH`, `HOME`, `LANG` and `TMPDIR` (its other variables, credentials among them,
    /// never reach the child).
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    /// The URL of an MCP server spoken to over streamable HTTP.
    pub(crate) mcp: Option<String>,
    /// Whether an MCP server's tools are served only as they were pinned (`pins`): a new
    /// tool, or one whose name, description, schemas or annotations changed, is left out
    /// until `halo gateway pin` accepts it. Default `false`.
    #[serde(default)]
    pub(crate) pinned: bool,
    /// Where calls go: the document's first server when left out.
    pub(crate) base_url: Option<String>,
    /// Headers sent with every call to this upstream: its own credentials. The caller's
    /// `Authorization`, cookies and API keys never are. A `halo` upstream takes at most one
    /// (its credential, sent with discovery too).
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// OAuth 2.0 client credentials the gateway gets the upstream's access tokens with
    /// (sent as `Authorization: Bearer`, renewed before they expire).
    pub(crate) oauth: Option<OAuth>,
    /// Whether tool names start with `<upstream>_`. Default `true`; without the prefix,
    /// two upstreams' tools of one name are a configuration error.
    pub(crate) prefix: Option<bool>,
    /// How long connecting may take (`5s` by default).
    pub(crate) connect_timeout: Option<String>,
    /// How long the upstream may stay silent while answering (`300s` by default).
    pub(crate) read_timeout: Option<String>,
}

/// An OAuth 2.0 client of the upstream's authorization server (client credentials grant):
/// exactly one of `issuer` and `token_url`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OAuth {
    /// The authorization server's issuer identifier: its token endpoint is read from its
    /// metadata (RFC 8414, or OpenID Connect discovery).
    pub(crate) issuer: Option<String>,
    /// The token endpoint itself.
    pub(crate) token_url: Option<String>,
    /// The gateway's client id there.
    pub(crate) client_id: String,
    /// The gateway's client secret there (write it as an `${ENV}` reference).
    pub(crate) client_secret: String,
    /// The scopes to ask for.
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
    /// The resource the tokens are for (RFC 8707): the upstream's resource identifier.
    pub(crate) resource: Option<String>,
}

/// A policy rule: the tools it matches, and what it sets on them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rule {
    /// Which tools: all when left out.
    #[serde(default, rename = "match")]
    pub(crate) matches: Match,
    /// What it sets.
    pub(crate) set: Set,
}

/// Which tools a rule matches: every criterion given must hold.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Match {
    /// The upstream's name, or a glob (`*` for every upstream).
    pub(crate) upstream: Option<String>,
    /// A glob (or several) over tool names: a tool matches when the glob matches its name
    /// as its upstream gives it or as the gateway serves it.
    pub(crate) tools: Option<OneOrMany>,
    /// Tags: a tool matches when it has any of them.
    #[serde(default)]
    pub(crate) tags: Vec<String>,
    /// HTTP methods: a tool matches when it is called with one of them.
    #[serde(default)]
    pub(crate) methods: Vec<String>,
}

/// One value or a list of them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum OneOrMany {
    /// One.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl OneOrMany {
    pub(crate) fn as_slice(&self) -> &[String] {
        match self {
            Self::One(one) => std::slice::from_ref(one),
            Self::Many(many) => many,
        }
    }
}

/// What a rule sets: the HALO declarations the layer enforces, shown in the schema the
/// model reads.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Set {
    /// A risk level, `L0` to `L3`, that stands for the fields it implies (fields this rule
    /// also sets win): `L0` read-only; `L1` a reversible change; `L2` an irreversible
    /// change, approval required; `L3` as `L2`, and an idempotency key required.
    pub(crate) risk: Option<String>,
    /// Calls per caller and period: `10/minute`.
    pub(crate) rate: Option<String>,
    /// Rates with whose budget they count: `1000/hour per tenant`, `20/minute per tool`,
    /// `3/minute per order_id` (an argument).
    pub(crate) rates: Option<Vec<String>>,
    /// The longest a call may take before it is answered `504`: `5s`.
    pub(crate) timeout: Option<String>,
    /// A circuit breaker, `failures/cool-down/successes`: `5/30s/2`.
    pub(crate) circuit: Option<String>,
    /// `required`: every call waits for an approver; `none`: no approval.
    pub(crate) approval: Option<String>,
    /// `required`: calls must send an `Idempotency-Key`; `optional`: a call that sends
    /// one is answered once for the key; `off`: keys are not read.
    pub(crate) idempotency: Option<String>,
    /// Side effects.
    pub(crate) effects: Option<Effects>,
    /// Who sees and may call the tools; everyone authenticated when left out.
    pub(crate) visible_to: Option<VisibleTo>,
    /// `true` leaves the tools out of the gateway altogether.
    pub(crate) exclude: Option<bool>,
}

/// Side effects a rule declares.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Effects {
    /// Whether a call's effect can be undone.
    pub(crate) reversible: Option<bool>,
}

/// Who sees and may call a tool.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct VisibleTo {
    /// Callers holding all of these scopes.
    #[serde(default)]
    pub(crate) scopes: Vec<String>,
}
