//! One upstream's settings, checked: where its description is, where calls go, what it is
//! sent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use halo_client::ClientCredentials;
use halo_protocol::parse_duration;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::Url;

use crate::file;

/// The longest upstream name: it is a path segment, a tag and a prefix of tool names.
const MAX_NAME: usize = 32;

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
        let source = match (&upstream.openapi, &upstream.halo) {
            (Some(document), None) => Source::OpenApi(location(document, dir)),
            (None, Some(base)) => Source::Halo(url(base).map_err(|why| at(".halo", why))?),
            _ => {
                return Err(at(
                    "",
                    "give exactly one of `openapi` (a document) and `halo` (a HALO API's URL)"
                        .to_owned(),
                ));
            }
        };
        if matches!(source, Source::Halo(_))
            && upstream.headers.len() + usize::from(upstream.oauth.is_some()) > 1
        {
            return Err(at(
                ".headers",
                "a `halo` upstream takes at most one credential, a header or `oauth` (sent \
                 with discovery as halo-client sends one)"
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
            connect_timeout: duration(".connect_timeout", upstream.connect_timeout.as_deref(), 5)?,
            read_timeout: duration(".read_timeout", upstream.read_timeout.as_deref(), 300)?,
        })
    }
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
