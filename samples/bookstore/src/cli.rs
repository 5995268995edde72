//! Command-line arguments of the `bookstore` binary.

use std::time::Duration;

use clap::Parser;
use halo_axum::{WebhookApprover, WebhookApproverBuilder, WebhookSecret};

use crate::server::DEFAULT_MAX_CONNECTIONS;

/// The address the server listens on when none is given.
pub const DEFAULT_ADDR: &str = "127.0.0.1:3000";

/// The environment variable the approval webhook's secret is read from.
pub const WEBHOOK_SECRET_ENV: &str = "HALO_APPROVAL_WEBHOOK_SECRET";

/// Runs the sample bookstore API, described to LLM agents over HALO.
#[derive(Debug, Clone, PartialEq, Eq, Parser)]
#[command(name = "bookstore", version, about)]
pub struct Cli {
    /// Address to listen on, as HOST:PORT (port 0 picks a free port).
    #[arg(long, env = "HALO_ADDR", default_value = DEFAULT_ADDR, value_parser = parse_addr)]
    pub addr: String,
    /// Append the audit trail (one JSON line per call of an operation) to FILE.
    #[arg(long, env = "HALO_AUDIT", value_name = "FILE")]
    pub audit: Option<std::path::PathBuf>,
    /// Keep rate budgets and idempotency records in the Redis server at URL
    /// (`redis://[:PASSWORD@]HOST[:PORT][/DB]`), shared by every instance that uses it.
    #[arg(long, env = "HALO_REDIS", value_name = "URL", hide_env_values = true)]
    pub redis: Option<String>,
    /// Keep them in a Redis Cluster (or Valkey, ElastiCache or MemoryDB in cluster mode)
    /// instead, known by the URLs of some of its nodes, comma-separated
    /// (`redis://[:PASSWORD@]HOST:PORT,...`; one that answers is enough).
    #[arg(
        long,
        env = "HALO_REDIS_CLUSTER",
        value_name = "URL,...",
        value_delimiter = ',',
        conflicts_with = "redis",
        hide_env_values = true
    )]
    pub redis_cluster: Vec<String>,
    /// Count and time every call and discovery request, and serve the metrics at
    /// `GET /metrics` in the Prometheus text format.
    #[arg(long, env = "HALO_METRICS")]
    pub metrics: bool,
    /// Host the shopping assistant (`POST /agents/shopping_assistant/run`) on the
    /// OpenAI-compatible endpoint at URL (e.g. `http://127.0.0.1:11434/v1`); needs
    /// `--llm-model`.
    #[arg(
        long,
        env = "HALO_LLM_BASE_URL",
        value_name = "URL",
        requires = "llm_model"
    )]
    pub llm_base_url: Option<String>,
    /// The model the shopping assistant uses, as the endpoint names it.
    #[arg(
        long,
        env = "HALO_LLM_MODEL",
        value_name = "NAME",
        requires = "llm_base_url"
    )]
    pub llm_model: Option<String>,
    /// The endpoint's API key, if it needs one.
    #[arg(
        long,
        env = "HALO_LLM_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub llm_api_key: Option<String>,
    /// Ask the weather service at URL (`GET URL?city=NAME`, answering the weather as JSON)
    /// instead of the built-in table; the weather tool answers `502` when it fails, and `503`
    /// for 10 s after 5 failures in a row (its circuit breaker).
    #[arg(
        long,
        env = "HALO_WEATHER_UPSTREAM",
        value_name = "URL",
        value_parser = parse_upstream
    )]
    pub weather_upstream: Option<reqwest::Url>,
    /// Also accept the JWT access tokens of the OAuth 2.0 authorization server whose issuer
    /// identifier is URL (its keys found through its RFC 8414 or OpenID Connect metadata),
    /// with the scopes they carry, and serve the bookstore's protected-resource metadata
    /// (RFC 9728) at `/.well-known/oauth-protected-resource` (and `.../mcp` for `/mcp`).
    #[arg(
        long,
        env = "HALO_OAUTH_ISSUER",
        value_name = "URL",
        value_parser = parse_identifier
    )]
    pub oauth_issuer: Option<String>,
    /// The bookstore's resource identifier: the audience (`aud`) the issuer's tokens must
    /// name (or the same followed by `/mcp`, for MCP clients). Default: the bookstore's own
    /// base URL, `http://ADDR`.
    #[arg(
        long,
        env = "HALO_OAUTH_AUDIENCE",
        value_name = "URL",
        requires = "oauth_issuer",
        value_parser = parse_identifier
    )]
    pub oauth_audience: Option<String>,
    /// Ask the webhook at URL to approve held calls (refunds) first: each is POSTed to it,
    /// signed with the secret in `HALO_APPROVAL_WEBHOOK_SECRET` (read from the environment
    /// only, never from the command line), and `{"approved": true}` or `false` decides it.
    /// What the hook leaves undecided, the administrators still decide over HTTP.
    #[arg(
        long,
        env = "HALO_APPROVAL_WEBHOOK",
        value_name = "URL",
        value_parser = parse_upstream
    )]
    pub approval_webhook: Option<reqwest::Url>,
    /// Close a connection that takes longer than SECS (decimals allowed, e.g. 0.5) to send a
    /// request's headers, counted from when the server starts waiting for them: on a new
    /// connection, and on a kept-alive one after each answer, so it is also the keep-alive
    /// timeout.
    #[arg(
        long,
        env = "HALO_HEADER_TIMEOUT",
        value_name = "SECS",
        default_value = "10",
        value_parser = parse_seconds
    )]
    pub header_timeout: Duration,
    /// Keep at most N connections open; past it, new connections wait in the kernel's listen
    /// backlog (holding no file descriptor) until others close. Keep it below the process's
    /// open-file limit (`ulimit -n`).
    #[arg(
        long,
        env = "HALO_MAX_CONNECTIONS",
        value_name = "N",
        default_value_t = DEFAULT_MAX_CONNECTIONS,
        value_parser = parse_max_connections
    )]
    pub max_connections: usize,
}

impl Cli {
    /// Parses arguments (the first one is the program name), without exiting on errors.
    ///
    /// # Errors
    /// A [`clap::Error`] for unknown arguments or an address that is not `HOST:PORT`;
    /// `--help` and `--version` also come back as errors, as clap does.
    pub fn parse_from_args<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        Self::try_parse_from(args)
    }

    /// The approval webhook these arguments ask for, with `secret` (what
    /// [`WEBHOOK_SECRET_ENV`] holds) to sign its bodies.
    ///
    /// # Errors
    /// `--approval-webhook` without a secret, or a hook that cannot be used (a plain `http`
    /// URL to another machine, a secret under 16 bytes): a message for the operator.
    pub fn approval_webhook(
        &self,
        secret: Option<&str>,
    ) -> Result<Option<WebhookApproverBuilder>, String> {
        let Some(url) = &self.approval_webhook else {
            return Ok(None);
        };
        let secret = secret.filter(|secret| !secret.is_empty()).ok_or_else(|| {
            format!("--approval-webhook needs the hook's secret in {WEBHOOK_SECRET_ENV}")
        })?;
        let hook = WebhookApprover::builder(url.as_str(), WebhookSecret::new(secret));
        // Built once here so that a hook that cannot work stops the start, with its reason.
        hook.clone()
            .build()
            .map_err(|error| format!("--approval-webhook: {error}"))?;
        Ok(Some(hook))
    }

    /// The serving limits these arguments ask for.
    #[must_use]
    pub fn limits(&self) -> crate::Limits {
        crate::Limits::default()
            .header_timeout(self.header_timeout)
            .max_connections(self.max_connections)
    }
}

/// Accepts a number of seconds above 0 and at most an hour.
fn parse_seconds(value: &str) -> Result<Duration, String> {
    match value.trim().parse::<f64>() {
        Ok(seconds) if seconds > 0.0 && seconds <= 3600.0 => Ok(Duration::from_secs_f64(seconds)),
        _ => Err(format!(
            "{value:?} is not a number of seconds above 0 and at most 3600"
        )),
    }
}

/// Accepts an absolute `http` or `https` URL.
fn parse_upstream(value: &str) -> Result<reqwest::Url, String> {
    match reqwest::Url::parse(value.trim()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => Ok(url),
        _ => Err(format!("{value:?} is not an http or https URL")),
    }
}

/// Accepts an `http` or `https` URL without query or fragment, kept as written: issuer and
/// resource identifiers are compared character for character, so no `/` is added.
fn parse_identifier(value: &str) -> Result<String, String> {
    let value = value.trim();
    match reqwest::Url::parse(value) {
        Ok(url)
            if matches!(url.scheme(), "http" | "https")
                && url.has_host()
                && url.query().is_none()
                && url.fragment().is_none() =>
        {
            Ok(value.to_owned())
        }
        _ => Err(format!(
            "{value:?} is not an http or https URL without query or fragment"
        )),
    }
}

/// Accepts a whole number from 1 to 1,000,000.
fn parse_max_connections(value: &str) -> Result<usize, String> {
    match value.trim().parse::<usize>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err(format!("{value:?} is not a whole number from 1 to 1000000")),
    }
}

/// Accepts `HOST:PORT` and `[IPv6]:PORT` with a numeric port.
fn parse_addr(value: &str) -> Result<String, String> {
    let (host, port) = value
        .rsplit_once(':')
        .ok_or_else(|| format!("{value:?} is not HOST:PORT"))?;
    if host.is_empty() {
        return Err(format!(
            "{value:?} has no host; write e.g. 127.0.0.1:{port}"
        ));
    }
    port.parse::<u16>()
        .map_err(|_| format!("{port:?} is not a port number (0 to 65535)"))?;
    Ok(value.to_owned())
}
