//! One upstream's settings, checked: where its description is, where calls go, what it is
//! sent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use halo_client::ClientCredentials;
use halo_protocol::parse_duration;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::Url;

use crate::file;

/// The longest upstream name: it is a path segment, a tag and a prefix of tool names.
const MAX_NAME: usize = 32;
/// Names the gateway's own paths take (`/mcp`, `/playground`, `/ready`): no upstream's.
const RESERVED: [&str; 3] = ["mcp", "playground", "ready"];

/// One upstream, checked.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamSpec {
    pub(crate) name: String,
    pub(crate) source: Source,
    pub(crate) base_url: Option<Url>,
    /// Sent with every call: the upstream's own credentials.
    pub(crate) headers: HeaderMap,
    /// Where the upstream's access tokens come from, when it takes OAuth.
    pub(crate) oauth: Option<ClientCredentials>,
    pub(crate) prefix: bool,
    /// Its tools are served only as pinned.
    pub(crate) pinned: bool,
    pub(crate) connect_timeout: Duration,
    pub(crate) read_timeout: Duration,
}

/// What describes an upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// An OpenAPI document.
    OpenApi(Location),
    /// A HALO API's base URL.
    Halo(Url),
    /// An MCP server run as a child process: its program, arguments and environment.
    Stdio(Command),
    /// An MCP server's streamable HTTP endpoint.
    Mcp(Url),
}

/// A child process to run: the program, its arguments, and the variables of its environment
/// besides the few of the gateway's it keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
}

/// Where a document is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Location {
    File(PathBuf),
    Url(Url),
}

impl UpstreamSpec {
    pub(crate) fn check(name: &str, upstream: &file::Upstream, dir: &Path) -> Result<Self, String> {
        let at = |key: &str, why: String| format!("upstreams.{name}{key}: {why}");
        if name.is_empty()
            || name.len() > MAX_NAME
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(at(
                "",
                format!(
                    "an upstream's name is 1 to {MAX_NAME} letters, digits, `_` or `-` (it \
                     starts its paths and tool names)"
                ),
            ));
        }
        if RESERVED.contains(&name) {
            return Err(at(
                "",
                format!("`/{name}` is the gateway's own path: give this upstream another name"),
            ));
        }
        let source = match (
            &upstream.openapi,
            &upstream.halo,
            &upstream.stdio,
            &upstream.mcp,
        ) {
            (Some(document), None, None, None) => Source::OpenApi(location(document, dir)),
            (None, Some(base), None, None) => {
                Source::Halo(url(base).map_err(|why| at(".halo", why))?)
            }
            (None, None, Some(command), None) => {
                Source::Stdio(stdio(command, &upstream.env).map_err(|(key, why)| at(&key, why))?)
            }
            (None, None, None, Some(endpoint)) => {
                Source::Mcp(url(endpoint).map_err(|why| at(".mcp", why))?)
            }
            _ => {
                return Err(at(
                    "",
                    "give exactly one of `openapi` (a document), `halo` (a HALO API's URL), \
                     `stdio` (an MCP server's command) and `mcp` (an MCP server's URL)"
                        .to_owned(),
                ));
            }
        };
        if !upstream.env.is_empty() && !matches!(source, Source::Stdio(_)) {
            return Err(at(
                ".env",
                "`env` is the environment of a `stdio` server's process".to_owned(),
            ));
        }
        let mcp = matches!(source, Source::Stdio(_) | Source::Mcp(_));
        if mcp && upstream.base_url.is_some() {
            return Err(at(
                ".base_url",
                "an MCP server is called where it is given (`stdio` or `mcp`)".to_owned(),
            ));
        }
        if matches!(source, Source::Stdio(_)) && !upstream.headers.is_empty() {
            return Err(at(
                ".headers",
                "a `stdio` server takes no headers: give it credentials in `env`".to_owned(),
            ));
        }
        if upstream.pinned && !mcp {
            return Err(at(
                ".pinned",
                "pins are for MCP servers (`stdio` and `mcp` upstreams), whose tools can change \
                 under the gateway"
                    .to_owned(),
            ));
        }
        if mcp && upstream.oauth.is_some() {
            return Err(at(
                ".oauth",
                "`oauth` is for `openapi` and `halo` upstreams; give an `mcp` server its \
                 credential as a header"
                    .to_owned(),
            ));
        }
        let base_url = upstream
            .base_url
            .as_deref()
            .map(|text| url(text).map_err(|why| at(".base_url", why)))
            .transpose()?;
        let mut headers = HeaderMap::new();
        for (key, value) in &upstream.headers {
            let key_at = format!(".headers.{key}");
            let header = HeaderName::from_bytes(key.as_bytes())
                .map_err(|_| at(&key_at, "not a header name".to_owned()))?;
            if is_managed(&header) {
                return Err(at(
                    &key_at,
                    "the gateway sets this header itself for each call".to_owned(),
                ));
            }
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                at(
                    &key_at,
                    "not a header value (control characters?)".to_owned(),
                )
            })?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        let oauth = upstream
            .oauth
            .as_ref()
            .map(|oauth| {
                if headers.contains_key(header::AUTHORIZATION) {
                    return Err(at(
                        ".oauth",
                        "give `oauth` or an `Authorization` header, not both".to_owned(),
                    ));
                }
                client_credentials(oauth).map_err(|why| at(".oauth", why))
            })
            .transpose()?;
        let duration = |key: &str, text: Option<&str>, default: u64| match text {
            None => Ok(Duration::from_secs(default)),
            Some(text) => parse_duration(text)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    at(
                        key,
                        format!("`{text}` is not a duration above zero such as 5s"),
                    )
                }),
        };
        Ok(Self {
            name: name.to_owned(),
            source,
            base_url,
            headers,
            oauth,
            prefix: upstream.prefix.unwrap_or(true),
            pinned: upstream.pinned,
            connect_timeout: duration(".connect_timeout", upstream.connect_timeout.as_deref(), 5)?,
            read_timeout: duration(".read_timeout", upstream.read_timeout.as_deref(), 300)?,
        })
    }
}

/// The command of a `stdio` server: a program, then its arguments; with `env`, checked.
/// An error names the key (`.stdio`, `.env.NAME`) and why.
fn stdio(command: &[String], env: &BTreeMap<String, String>) -> Result<Command, (String, String)> {
    let Some((program, args)) = command
        .split_first()
        .filter(|(program, _)| !program.is_empty())
    else {
        return Err((
            ".stdio".to_owned(),
            "the command is a list whose first item is the program to run".to_owned(),
        ));
    };
    if command.iter().any(|part| part.contains('\0')) {
        return Err((
            ".stdio".to_owned(),
            "a NUL character in the command".to_owned(),
        ));
    }
    let mut vars = Vec::with_capacity(env.len());
    for (name, value) in env {
        if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
            return Err((
                format!(".env.{name}"),
                "an environment variable's name is not empty and has no `=`; neither has a NUL"
                    .to_owned(),
            ));
        }
        vars.push((name.clone(), value.clone()));
    }
    Ok(Command {
        program: program.clone(),
        args: args.to_vec(),
        env: vars,
    })
}

/// The OAuth client `oauth` describes.
fn client_credentials(oauth: &file::OAuth) -> Result<ClientCredentials, String> {
    let client = match (&oauth.issuer, &oauth.token_url) {
        (Some(issuer), None) => {
            ClientCredentials::from_issuer(issuer, &oauth.client_id, &oauth.client_secret)
        }
        (None, Some(token_url)) => {
            ClientCredentials::new(url(token_url)?, &oauth.client_id, &oauth.client_secret)
        }
        _ => return Err("give exactly one of `issuer` and `token_url`".to_owned()),
    }
    .map_err(|e| e.to_string())?;
    let client = client.scopes(oauth.scopes.iter().cloned());
    Ok(match &oauth.resource {
        Some(resource) => client.resource(resource),
        None => client,
    })
}

/// A document's place: a URL when it has an `http(s)` scheme, a file otherwise.
fn location(text: &str, dir: &Path) -> Location {
    match url(text) {
        Ok(url) => Location::Url(url),
        Err(_) => Location::File(dir.join(text)),
    }
}

/// An `http` or `https` URL.
fn url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
    match url.scheme() {
        "http" | "https" if url.has_host() => Ok(url),
        _ => Err("an http or https URL with a host is expected".to_owned()),
    }
}

/// Headers each forwarded call gets from the gateway, never from the configuration.
fn is_managed(name: &HeaderName) -> bool {
    [
        header::HOST,
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
        header::CONNECTION,
        header::UPGRADE,
        header::TE,
    ]
    .contains(name)
}
