//! The issuer over HTTP: its metadata (OpenID Connect discovery, else RFC 8414), its key
//! set, and its introspection endpoint, each asked with a deadline and a bound on the body.

use http::Uri;
use http::header::ACCEPT;
#[cfg(feature = "jwt")]
use jsonwebtoken::jwk::Jwk;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a document could not be had. Names the URL and the cause, never a token.
#[derive(Debug)]
pub(crate) struct Failed(pub(crate) String);

/// Whether `url` may be asked for keys or tokens: `https`, or `http` to a loopback host
/// (for development and tests).
pub(crate) fn is_trusted(url: &str) -> bool {
    let Ok(uri) = url.parse::<Uri>() else {
        return false;
    };
    match (uri.scheme_str(), uri.host()) {
        (Some("https"), Some(_)) => true,
        (Some("http"), Some(host)) => {
            matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1")
        }
        _ => false,
    }
}

/// `GET url` as JSON, refused when the status is not a success or the body passes `limit`
/// bytes.
async fn get_json<T: DeserializeOwned>(
    client: &reqwest::Client,
    url: &str,
    limit: usize,
) -> Result<T, Failed> {
    json(client.get(url), &format!("GET {url}"), limit).await
}

/// The JSON answer to `request` (named `what` in errors), refused when the status is not a
/// success or the body passes `limit` bytes.
pub(crate) async fn json<T: DeserializeOwned>(
    request: reqwest::RequestBuilder,
    what: &str,
    limit: usize,
) -> Result<T, Failed> {
    let mut response = request
        .header(ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| Failed(format!("{what}: {}", cause(&e))))?;
    let status = response.status();
    if !status.is_success() {
        return Err(Failed(format!("{what}: status {status}")));
    }
    let too_large = || Failed(format!("{what}: the body is over {limit} bytes"));
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| Failed(format!("{what}: {}", cause(&e))))?
    {
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| Failed(format!("{what}: not the JSON expected: {e}")))
}

/// A reqwest error with its causes, on one line.
fn cause(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// The endpoint `field` names (`jwks_uri`, `introspection_endpoint`) in the metadata of
/// `issuer`: its OpenID Connect discovery document
/// (`{issuer}/.well-known/openid-configuration`), else its RFC 8414 metadata
/// (`/.well-known/oauth-authorization-server` put before the issuer's path). The document
/// must name the same issuer (OpenID Connect Discovery §4.3, RFC 8414 §3.3), and the
/// endpoint must be `https` or loopback `http`.
pub(crate) async fn discover(
    client: &reqwest::Client,
    issuer: &str,
    field: &str,
    limit: usize,
) -> Result<String, Failed> {
    let openid = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let oauth = oauth_metadata_url(issuer);
    let mut failures = Vec::new();
    for url in [openid, oauth] {
        let metadata: Value = match get_json(client, &url, limit).await {
            Ok(metadata) => metadata,
            Err(Failed(why)) => {
                failures.push(why);
                continue;
            }
        };
        if metadata.get("issuer").and_then(Value::as_str) != Some(issuer) {
            return Err(Failed(format!("{url} names another issuer than {issuer}")));
        }
        return match metadata.get(field).and_then(Value::as_str) {
            Some(endpoint) if is_trusted(endpoint) => Ok(endpoint.to_owned()),
            Some(endpoint) => Err(Failed(format!(
                "{url}: {field} {endpoint} is neither https nor loopback http"
            ))),
            None => Err(Failed(format!("{url} has no {field}"))),
        };
    }
    Err(Failed(failures.join("; ")))
}

/// The RFC 8414 metadata URL of `issuer`: the well-known path between its host and its path.
fn oauth_metadata_url(issuer: &str) -> String {
    const WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";
    match issuer.parse::<Uri>() {
        Ok(uri) => match (uri.scheme_str(), uri.authority()) {
            (Some(scheme), Some(authority)) => format!(
                "{scheme}://{authority}{WELL_KNOWN}{}",
                uri.path().trim_end_matches('/')
            ),
            _ => format!("{issuer}{WELL_KNOWN}"),
        },
        Err(_) => format!("{issuer}{WELL_KNOWN}"),
    }
}

/// The keys of the set at `jwks_uri` that jsonwebtoken can read (a key of a type or
/// algorithm it does not know is left out rather than failing the set).
#[cfg(feature = "jwt")]
pub(crate) async fn jwks(
    client: &reqwest::Client,
    jwks_uri: &str,
    limit: usize,
) -> Result<Vec<Jwk>, Failed> {
    let set: Value = get_json(client, jwks_uri, limit).await?;
    let keys = set
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(|| Failed(format!("GET {jwks_uri}: not a JWK set (no keys)")))?;
    Ok(keys
        .iter()
        .filter_map(|key| serde_json::from_value(key.clone()).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_and_trusted_origins() {
        assert_eq!(
            oauth_metadata_url("https://id.example"),
            "https://id.example/.well-known/oauth-authorization-server"
        );
        assert_eq!(
            oauth_metadata_url("https://id.example/tenant/1/"),
            "https://id.example/.well-known/oauth-authorization-server/tenant/1"
        );
        assert!(is_trusted("https://id.example/jwks"));
        assert!(is_trusted("http://127.0.0.1:8080/jwks"));
        assert!(is_trusted("http://localhost/jwks"));
        assert!(!is_trusted("http://id.example/jwks"));
        assert!(!is_trusted("file:///etc/keys"));
        assert!(!is_trusted("/jwks"));
    }
}
