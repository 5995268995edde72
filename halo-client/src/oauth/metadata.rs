//! Metadata documents an OAuth client reads: an authorization server's (RFC 8414, or OpenID
//! Connect discovery), for its token endpoint, and a protected resource's (RFC 9728), for its
//! resource identifier and the authorization servers it trusts. Each is fetched without
//! credentials, over `https` (or `http` on loopback), read up to a bounded size, and checked
//! before anything in it is used.

use std::net::IpAddr;

use reqwest::header::{ACCEPT, HeaderValue};
use reqwest::{StatusCode, Url};
use serde::Deserialize;

use super::printable;
use crate::{Error, Result};

/// The longest metadata document read.
const MAX_METADATA: usize = 64 * 1024;

/// RFC 8414 §3: the authorization server metadata's well-known path.
const AUTHORIZATION_SERVER: &str = "/.well-known/oauth-authorization-server";

/// OpenID Connect Discovery 1.0 §4: its well-known path, appended to the issuer.
const OPENID_CONFIGURATION: &str = "/.well-known/openid-configuration";

/// Whether a secret or a document may travel to `url`: `https`, or `http` on a loopback
/// address.
pub(super) fn secure(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match url.scheme() {
        "https" => !host.is_empty(),
        "http" => loopback,
        _ => false,
    }
}

/// Why a body could not be read whole.
pub(super) enum Unread {
    /// The connection failed (the message has no URL).
    Transport(String),
    /// It is longer than allowed.
    TooLarge,
}

/// Reads a body of at most `limit` bytes, stopping as soon as it is longer.
pub(super) async fn read_bounded(
    mut response: reqwest::Response,
    limit: usize,
) -> std::result::Result<Vec<u8>, Unread> {
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(Unread::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| Unread::Transport(e.without_url().to_string()))?
    {
        if body.len() + chunk.len() > limit {
            return Err(Unread::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Whether an answer's status means "not now" rather than "no".
fn busy(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 429) || status.is_server_error()
}

/// The fields of authorization server metadata the client reads (RFC 8414 §2).
#[derive(Deserialize)]
struct ServerMetadata {
    issuer: String,
    token_endpoint: Option<String>,
}

/// The token endpoint of the authorization server `issuer` (its identifier as the user
/// wrote it; `issuer_url` is it parsed), from its RFC 8414 metadata, else its OpenID
/// Connect configuration. The document must name `issuer` exactly (RFC 8414 §3.3), and its
/// token endpoint must be `https` or loopback `http`.
pub(super) async fn token_endpoint(
    http: &reqwest::Client,
    issuer: &str,
    issuer_url: &Url,
) -> Result<Url> {
    let failed = |why: String| {
        Error::credentials(format!(
            "OAuth authorization server metadata of {}: {why}",
            printable(issuer, 200)
        ))
    };
    let unavailable = |why: String| {
        Error::credentials_unavailable(format!(
            "OAuth authorization server metadata of {}: {why}",
            printable(issuer, 200)
        ))
    };
    // RFC 8414 §3.1: the well-known path goes between the host and the issuer's path.
    let path = issuer_url.path().trim_end_matches('/');
    let mut rfc8414 = issuer_url.clone();
    rfc8414.set_path(&format!("{AUTHORIZATION_SERVER}{path}"));
    let mut openid = issuer_url.clone();
    openid.set_path(&format!("{path}{OPENID_CONFIGURATION}"));
    let mut refusals = Vec::new();
    for url in [rfc8414, openid] {
        let body = match fetch(http, &url, url.path(), &failed, &unavailable).await? {
            Fetched::Body(body) => body,
            Fetched::Refused(status) => {
                refusals.push(format!("{} answered {status}", url.path()));
                continue;
            }
        };
        let metadata: ServerMetadata = serde_json::from_slice(&body).map_err(|_| {
            failed(format!(
                "{} is not authorization server metadata",
                url.path()
            ))
        })?;
        if metadata.issuer != issuer {
            return Err(failed(format!(
                "{} names the issuer `{}`, not the configured one (RFC 8414 §3.3)",
                url.path(),
                printable(&metadata.issuer, 200)
            )));
        }
        let endpoint = metadata
            .token_endpoint
            .ok_or_else(|| failed(format!("{} names no token_endpoint", url.path())))?;
        let endpoint = Url::parse(&endpoint)
            .map_err(|_| failed("its token_endpoint is not a URL".to_owned()))?;
        if !secure(&endpoint) {
            return Err(failed(
                "its token_endpoint must be https (or http on a loopback address)".to_owned(),
            ));
        }
        return Ok(endpoint);
    }
    Err(failed(format!("no metadata ({})", refusals.join("; "))))
}

/// What a `GET` of a metadata document gave.
enum Fetched {
    /// Its body, at most [`MAX_METADATA`] bytes.
    Body(Vec<u8>),
    /// The status of an answer that is no document (not a success, nor a busy server's).
    Refused(reqwest::StatusCode),
}

/// `GET url` for JSON metadata (named `what` in errors): an error made by `unavailable` when
/// it cannot be had for now (no connection, a busy server), by `failed` when it is too large.
async fn fetch(
    http: &reqwest::Client,
    url: &Url,
    what: &str,
    failed: &impl Fn(String) -> Error,
    unavailable: &impl Fn(String) -> Error,
) -> Result<Fetched> {
    let response = http
        .get(url.clone())
        .header(ACCEPT, HeaderValue::from_static("application/json"))
        .send()
        .await
        .map_err(|e| unavailable(e.without_url().to_string()))?;
    let status = response.status();
    if busy(status) {
        return Err(unavailable(format!("{what} answered {status}")));
    }
    if !status.is_success() {
        return Ok(Fetched::Refused(status));
    }
    read_bounded(response, MAX_METADATA)
        .await
        .map(Fetched::Body)
        .map_err(|unread| match unread {
            Unread::Transport(why) => unavailable(why),
            Unread::TooLarge => failed(format!("{what} is too large")),
        })
}

/// The fields of protected resource metadata the client reads (RFC 9728 §2).
#[derive(Deserialize)]
pub(super) struct ResourceMetadata {
    /// The resource identifier.
    pub(super) resource: String,
    /// The issuer identifiers of the authorization servers that issue its tokens.
    #[serde(default)]
    pub(super) authorization_servers: Vec<String>,
}

/// The protected resource metadata at `metadata_url`, which an API named in its challenge to
/// a request to `request_url`. Its `resource` must be the API that request went to (RFC 9728
/// §3.3): the same origin, and a path prefix of the request's path.
pub(super) async fn protected_resource(
    http: &reqwest::Client,
    metadata_url: &str,
    request_url: &Url,
) -> Result<ResourceMetadata> {
    let url = Url::parse(metadata_url).map_err(|_| {
        Error::credentials("the API's OAuth resource_metadata is not a URL".to_owned())
    })?;
    let at = format!("{}{}", url.host_str().unwrap_or_default(), url.path());
    let failed = |why: String| {
        Error::credentials(format!(
            "OAuth protected resource metadata at {}: {why}",
            printable(&at, 200)
        ))
    };
    let unavailable = |why: String| {
        Error::credentials_unavailable(format!(
            "OAuth protected resource metadata at {}: {why}",
            printable(&at, 200)
        ))
    };
    if !secure(&url) {
        return Err(failed(
            "it must be https (or http on a loopback address)".to_owned(),
        ));
    }
    let body = match fetch(http, &url, "it", &failed, &unavailable).await? {
        Fetched::Body(body) => body,
        Fetched::Refused(status) => return Err(failed(format!("answered {status}"))),
    };
    let metadata: ResourceMetadata = serde_json::from_slice(&body)
        .map_err(|_| failed("it is not protected resource metadata".to_owned()))?;
    if !covers(&metadata.resource, request_url) {
        return Err(failed(format!(
            "it describes `{}`, not the API at {}{} (RFC 9728 §3.3)",
            printable(&metadata.resource, 200),
            request_url.origin().ascii_serialization(),
            printable(request_url.path(), 200)
        )));
    }
    Ok(metadata)
}

/// Whether `resource` identifies the API `url` belongs to: an absolute URL without query or
/// fragment, of the same origin, whose path is `url`'s path or a prefix of it ending at a
/// `/`.
pub(super) fn covers(resource: &str, url: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != url.origin()
        || resource.query().is_some()
        || resource.fragment().is_some()
    {
        return false;
    }
    let prefix = resource.path().trim_end_matches('/');
    let path = url.path();
    prefix.is_empty()
        || path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_covers_its_own_paths_only() {
        let url = |text: &str| Url::parse(text).unwrap();
        let books = url("https://api.example/api/books?x=1");
        for resource in [
            "https://api.example",
            "https://api.example/",
            "https://api.example:443/api",
            "https://api.example/api/",
            "https://API.example/api/books",
        ] {
            assert!(covers(resource, &books), "{resource}");
        }
        for resource in [
            "http://api.example",
            "https://api.example:8443",
            "https://other.example",
            "https://api.example/ap",
            "https://api.example/api/books/1",
            "https://api.example/api?x=1",
            "https://api.example/api#f",
            "/api",
            "not a url",
        ] {
            assert!(!covers(resource, &books), "{resource}");
        }
    }

    #[test]
    fn secrets_travel_over_tls_or_loopback_only() {
        for good in [
            "https://id.example/token",
            "http://127.0.0.1:8080/token",
            "http://[::1]/token",
            "http://localhost/token",
        ] {
            assert!(secure(&Url::parse(good).unwrap()), "{good}");
        }
        for bad in [
            "http://id.example/token",
            "http://10.0.0.1/token",
            "ftp://id.example/token",
        ] {
            assert!(!secure(&Url::parse(bad).unwrap()), "{bad}");
        }
    }
}
