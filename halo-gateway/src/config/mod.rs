//! The gateway's configuration: a YAML or JSON file, `${ENV}` references expanded, every key
//! checked (an unknown key is an error), every value read once into its typed form.

mod env;
mod policies;
mod upstream;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::file;
use crate::policy::Policies;

pub(crate) use self::upstream::{Command, Location, Source, UpstreamSpec};

/// A checked gateway configuration.
///
/// ```
/// use halo_gateway::Config;
///
/// let config = Config::from_text(
///     r#"
/// listen: 127.0.0.1:0
/// upstreams:
///   pets: { openapi: pets.json, base_url: "http://127.0.0.1:9000" }
/// policies:
///   - match: { upstream: "*" }
///     set: { timeout: 5s, circuit: 5/30s/2 }
/// "#,
///     ".",
/// )
/// .unwrap();
/// assert_eq!(config.listen().ip().to_string(), "127.0.0.1");
///
/// let error = Config::from_text("upstreams: {}\nlisten_on: 1", ".").unwrap_err();
/// assert!(error.to_string().contains("listen_on"));
/// ```
#[derive(Debug)]
pub struct Config {
    pub(crate) file: file::File,
    /// Where relative paths in it start.
    pub(crate) dir: PathBuf,
    pub(crate) listen: SocketAddr,
    pub(crate) policies: Policies,
    /// The Harness document's file, when `policies` names one.
    pub(crate) policy_file: Option<PathBuf>,
    pub(crate) upstreams: Vec<UpstreamSpec>,
    /// The pins file, when upstreams are pinned.
    pub(crate) pins: Option<PathBuf>,
}

impl Config {
    /// Reads the file at `path`; relative paths in it are relative to its directory.
    ///
    /// # Errors
    /// The file cannot be read, is not YAML or JSON, has an unknown key or a value of the
    /// wrong shape, names an unset environment variable, or settings that cannot work
    /// together. The message names the key.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::io(format!("cannot read {}: {e}", path.display())))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Self::from_text(&text, dir)
    }

    /// Reads a configuration from its text, `${ENV}` references read from the process's
    /// environment; relative paths in it are relative to `dir`.
    ///
    /// # Errors
    /// As [`from_path`](Self::from_path), but for reading a file.
    pub fn from_text(text: &str, dir: impl Into<PathBuf>) -> Result<Self, ConfigError> {
        Self::from_text_with_env(text, dir, |name| std::env::var(name).ok())
    }

    /// Reads a configuration from its text, `${ENV}` references read with `lookup`.
    ///
    /// # Errors
    /// As [`from_text`](Self::from_text).
    pub fn from_text_with_env(
        text: &str,
        dir: impl Into<PathBuf>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let mut value = crate::read::parse(text).map_err(ConfigError::syntax)?;
        let used = env::expand(&mut value, &lookup).map_err(ConfigError::invalid)?;
        let file: file::File = serde_path_to_error::deserialize(value).map_err(|e| {
            let at = e.path().to_string();
            let message = match at.as_str() {
                "." => e.into_inner().to_string(),
                _ => format!("{at}: {}", e.into_inner()),
            };
            ConfigError::invalid(used.scrub(message))
        })?;
        Self::check(file, dir.into())
            .map_err(|error| error.rewritten(|message| used.scrub(message)))
    }

    fn check(file: file::File, dir: PathBuf) -> Result<Self, ConfigError> {
        let listen = match file.listen.as_deref() {
            None => SocketAddr::from(([127, 0, 0, 1], 8080)),
            Some(text) => text.parse().map_err(|_| {
                ConfigError::invalid(format!(
                    "listen: `{text}` is not an address and port such as 127.0.0.1:8080"
                ))
            })?,
        };
        let (policies, policy_file) =
            policies::read(file.policies.as_ref(), &dir).map_err(ConfigError::invalid)?;
        if file.upstreams.is_empty() {
            return Err(ConfigError::invalid(
                "upstreams: name at least one API to put behind the gateway",
            ));
        }
        let upstreams = file
            .upstreams
            .iter()
            .map(|(name, upstream)| UpstreamSpec::check(name, upstream, &dir))
            .collect::<Result<Vec<_>, _>>()
            .map_err(ConfigError::invalid)?;
        let auth = file.auth.as_ref();
        let has_auth = auth
            .is_some_and(|a| !a.tokens.is_empty() || a.jwt.is_some() || a.introspection.is_some());
        if !has_auth && !listen.ip().is_loopback() {
            return Err(ConfigError::invalid(format!(
                "listen: {listen} is not a loopback address, and without `auth` anyone who \
                 reaches it could call every upstream with the gateway's credentials; add \
                 `auth` or listen on 127.0.0.1"
            )));
        }
        if let Some(what) = policies.needs_identity()
            && !has_auth
        {
            return Err(ConfigError::invalid(format!(
                "policies: {what} needs `auth`, which says who each caller is"
            )));
        }
        if policies.any_approval() && file.approvals.is_none() {
            return Err(ConfigError::invalid(
                "policies: a policy requires approval (`approval: required`, risk L2/L3, or \
                 the Harness's `require_approval` or `risk_level: l2`/`l3`), but nobody can \
                 approve: add `approvals: { scope: <the approvers' scope> }`",
            ));
        }
        if let Policies::Harness(harness) = &policies
            && let Some((server, key)) = harness.servers().find(|(server, _)| {
                !file
                    .upstreams
                    .keys()
                    .any(|u| u.eq_ignore_ascii_case(server))
            })
        {
            let names: Vec<&str> = file.upstreams.keys().map(String::as_str).collect();
            return Err(ConfigError::invalid(format!(
                "{key}.server_id: `{server}` is not an upstream (upstreams: {})",
                names.join(", ")
            )));
        }
        let pins = file.pins.as_deref().map(|pins| dir.join(pins));
        if pins.is_none() && upstreams.iter().any(|upstream| upstream.pinned) {
            return Err(ConfigError::invalid(
                "pins: an upstream is `pinned`, so name the file its pinned tools are kept in \
                 (`pins: pins.json`; `halo gateway pin` writes it)",
            ));
        }
        if let Some(auth) = auth
            && auth.tokens.keys().any(|token| token.trim().len() < 16)
        {
            {
                return Err(ConfigError::invalid(
                    "auth.tokens: a token is shorter than 16 characters; use long random \
                     tokens, written as ${ENV} references",
                ));
            }
        }
        Ok(Self {
            file,
            dir,
            listen,
            policies,
            policy_file,
            upstreams,
            pins,
        })
    }

    /// The address the gateway serves on.
    #[must_use]
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }

    /// The JSON Schema of the configuration file (draft 2020-12), for editors and checks.
    ///
    /// ```
    /// let schema = halo_gateway::Config::json_schema();
    /// assert_eq!(schema["properties"]["upstreams"]["type"], "object");
    /// ```
    #[must_use]
    pub fn json_schema() -> serde_json::Value {
        let mut schema = serde_json::to_value(schemars::schema_for!(file::File))
            .unwrap_or(serde_json::Value::Null);
        if let Some(object) = schema.as_object_mut() {
            object.insert("title".into(), "halo gateway configuration".into());
        }
        schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Config, String> {
        Config::from_text_with_env(text, ".", |name| {
            (name == "OPS_TOKEN").then(|| "0123456789abcdef0123".to_owned())
        })
        .map_err(|e| e.to_string())
    }

    #[test]
    fn unknown_keys_and_wrong_shapes_name_their_place() {
        let cases = [
            (
                "upstreams: {a: {openapi: x.json, base_ur: http://x}}",
                "upstreams.a",
            ),
            (
                "upstreams: {a: {openapi: x.json}}\npolicies: [{set: {rat: 1/s}}]",
                "policies[0].set",
            ),
            ("upstreams: {a: {openapi: x.json}}\nlisten: [1]", "listen"),
            ("upstreams: 3", "upstreams"),
            ("{}", "upstreams"),
        ];
        for (text, at) in cases {
            let error = read(text).unwrap_err();
            assert!(error.contains(at), "{text}: {error}");
        }
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        let open = read("listen: 0.0.0.0:8080\nupstreams: {a: {openapi: x.json}}").unwrap_err();
        assert!(open.contains("auth"), "{open}");
        let scopes = read(
            "upstreams: {a: {openapi: x.json}}\npolicies: [{set: {visible_to: {scopes: [admin]}}}]",
        )
        .unwrap_err();
        assert!(scopes.contains("visible_to"), "{scopes}");
        let approval =
            read("upstreams: {a: {openapi: x.json}}\npolicies: [{set: {risk: L2}}]").unwrap_err();
        assert!(approval.contains("approvals"), "{approval}");
        let short = read("auth: {tokens: {abc: {caller: ops}}}\nupstreams: {a: {openapi: x.json}}")
            .unwrap_err();
        assert!(short.contains("16") && !short.contains("abc"), "{short}");
        for own in ["mcp", "playground", "ready"] {
            let taken = read(&format!("upstreams: {{{own}: {{openapi: x.json}}}}")).unwrap_err();
            assert!(taken.contains(&format!("`/{own}`")), "{taken}");
        }
        let cluster = read(
            "redis: {cluster: [redis://127.0.0.1:7000]}
upstreams: {a: {openapi: x.json}}",
        );
        assert!(cluster.is_ok(), "{cluster:?}");
        let bad = read(
            "redis: {nodes: [redis://127.0.0.1:7000]}
upstreams: {a: {openapi: x.json}}",
        )
        .unwrap_err();
        assert!(bad.contains("redis"), "{bad}");
        let fine = read(
            "listen: 0.0.0.0:9\nauth: {tokens: {\"${OPS_TOKEN}\": {caller: ops, scopes: [admin]}}}\n\
             approvals: {scope: admin}\nupstreams: {a: {openapi: x.json}}\n\
             policies: [{set: {risk: L2, visible_to: {scopes: [admin]}}}]",
        );
        assert!(fine.is_ok(), "{fine:?}");
    }

    const HARNESS_AUTH: &str = "auth: {tokens: {\"${OPS_TOKEN}\": {caller: ops, scopes: [admin]}}}\n\
         approvals: {scope: admin}\nupstreams: {trade: {openapi: x.json}, pay: {openapi: y.json}}\n";

    #[test]
    fn a_harness_document_is_read_inline_or_from_a_file() {
        let inline = read(&format!(
            "{HARNESS_AUTH}policies:\n  tool_harness:\n    global_tool_policy: {{risk_level: l1}}\n    \
             policies:\n      - {{mcp_service: trade, tool: coupon.reserve, allowed_agents: [a], \
             rate_limits: [{{dimension: custom, key_template: '{{tenant_id}}:{{args.c}}', capacity: 5, refill_rate: 1}}]}}\n"
        ));
        let inline = inline.unwrap();
        assert!(matches!(inline.policies, Policies::Harness(_)));
        assert!(inline.policy_file.is_none());

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("harness.yaml"),
            "mcp_tool_harness:\n  policies: [{server_id: pay, tool_name: refund, require_approval: true}]\n",
        )
        .unwrap();
        let text = format!("{HARNESS_AUTH}policies: harness.yaml\n");
        let from_file = Config::from_text_with_env(&text, dir.path(), |_| {
            Some("0123456789abcdef0123".to_owned())
        })
        .unwrap();
        assert_eq!(from_file.policy_file, Some(dir.path().join("harness.yaml")));
    }

    #[test]
    fn what_a_harness_document_cannot_say_is_an_error_naming_its_key() {
        let policy = |yaml: &str| {
            read(&format!(
                "{HARNESS_AUTH}policies:\n  tool_harness:\n    policies: [{yaml}]\n"
            ))
        };
        for (yaml, says) in [
            (
                "{server_id: trade, colour: red}",
                "policies.tool_harness.policies[0].colour: unknown field `colour`",
            ),
            (
                "{server_id: nowhere}",
                "policies.tool_harness.policies[0].server_id: `nowhere` is not an upstream",
            ),
            ("{risk_level: extreme}", "policies[0].risk_level"),
            (
                "{audit_enabled: false}",
                "policies[0].audit_enabled: cannot be mapped",
            ),
            (
                "{circuit_half_open_max_calls: 3}",
                "circuit_half_open_max_calls",
            ),
            ("{timeout_ms: 0}", "policies[0].timeout_ms"),
            (
                "{rate_limits: [{dimension: custom, key_template: '{trace_id}', capacity: 1, refill_rate: 1}]}",
                "policies.tool_harness.policies[0].rate_limits[0]: `{trace_id}` cannot be mapped",
            ),
            (
                "{rate_limits: [{dimension: weekly, capacity: 1, refill_rate: 1}]}",
                "rate_limits[0]: dimension `weekly`",
            ),
        ] {
            let error = policy(yaml).unwrap_err();
            assert!(error.contains(says), "{yaml}: {error}");
        }
        let servers = read(&format!(
            "{HARNESS_AUTH}policies: {{tool_harness: {{mcp_servers: [{{server_id: x}}]}}}}\n"
        ))
        .unwrap_err();
        assert!(
            servers.contains("mcp_servers") && servers.contains("upstreams"),
            "{servers}"
        );
        let no_auth = read(
            "upstreams: {trade: {openapi: x.json}}\npolicies: {tool_harness: {policies: [{allowed_agents: [a]}]}}",
        )
        .unwrap_err();
        assert!(
            no_auth.contains("allowed_agents") && no_auth.contains("auth"),
            "{no_auth}"
        );
        let no_approver = read(
            "upstreams: {trade: {openapi: x.json}}\npolicies: {tool_harness: {policies: [{risk_level: high}]}}",
        )
        .unwrap_err();
        assert!(no_approver.contains("approvals"), "{no_approver}");
        let missing = read(&format!("{HARNESS_AUTH}policies: nowhere.yaml\n")).unwrap_err();
        assert!(missing.contains("cannot read"), "{missing}");
        let scalar = read(&format!("{HARNESS_AUTH}policies: 7\n")).unwrap_err();
        assert!(scalar.contains("a list of rules"), "{scalar}");
    }

    /// Every truncation and many byte flips of a full configuration: read without a panic,
    /// and no message shows what an `${ENV}` reference stood for.
    #[test]
    fn mangled_files_never_panic_nor_show_secrets() {
        const SECRET: &str = "env-secret-0123456789abcdef";
        let full = r#"
listen: "${LISTEN}"
auth:
  tokens: { "${OPS_TOKEN}": { caller: ops, tenant: acme, scopes: [admin] } }
  jwt: { issuer: "https://id.example.com", audience: "${AUDIENCE}" }
approvals: { scope: admin }
audit: audit.jsonl
upstreams:
  gh: { openapi: gh.json, base_url: "${BASE}", headers: { X-Key: "${KEY}" }, connect_timeout: "${T}" }
  books: { halo: "http://127.0.0.1:3000", oauth: { token_url: "${BASE}/t", client_id: c, client_secret: "${KEY}" } }
policies:
  - match: { upstream: "${UP}", tools: ["${GLOB}"], methods: [POST] }
    set: { rate: "${RATE}", timeout: "${T}", circuit: "${T}", risk: L3, visible_to: { scopes: [admin] } }
"#;
        let lookup = |_: &str| Some(SECRET.to_owned());
        let check = |text: &str| {
            if let Err(error) = Config::from_text_with_env(text, ".", lookup) {
                let message = error.to_string();
                assert!(!message.contains(SECRET), "{text:?}: {message}");
            }
        };
        // The same with a Harness document as its policies.
        let (head, _) = full.split_once("policies:").unwrap();
        let harness = format!(
            "{head}policies:\n  tool_harness:\n    global_tool_policy: {{ risk_level: l1, timeout_ms: 500 }}\n    \
             policies:\n      - {{ server_id: gh, tool_name: \"${{GLOB}}\", allowed_agents: [\"${{UP}}\"], \
             risk_level: l2, circuit_reset_timeout_seconds: 1.5, rate_limits: [{{ dimension: custom, \
             key_template: \"tenant:{{tenant_id}}:o:{{args.${{UP}}}}\", capacity: 3, refill_rate: 0.5 }}] }}\n"
        );
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for full in [full, harness.as_str()] {
            check(full);
            let bytes = full.as_bytes();
            for end in 0..bytes.len() {
                if let Ok(text) = std::str::from_utf8(&bytes[..end]) {
                    check(text);
                }
            }
            let specials = b"{}[]:,\"'&*!|>-#%@` \n\t$";
            for _ in 0..3000 {
                let mut mangled = bytes.to_vec();
                for _ in 0..3 {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let at = (seed % mangled.len() as u64) as usize;
                    mangled[at] = specials[(seed >> 32) as usize % specials.len()];
                }
                if let Ok(text) = std::str::from_utf8(&mangled) {
                    check(text);
                }
            }
        }
    }

    #[test]
    fn the_schema_refuses_unknown_keys() {
        let schema = Config::json_schema();
        assert_eq!(schema["additionalProperties"], false);
        assert!(
            schema["required"]
                .as_array()
                .unwrap()
                .contains(&"upstreams".into())
        );
    }
}
