//! Per-host credentials, applied by the host of each request's own URL.

mod file;

use std::collections::HashMap;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use halo_protocol::{Auth, AuthType};
use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

use crate::{ClientCredentials, Error, Result, Secret};

/// Credentials by host: `host` or `host:port` → [`Credential`].
///
/// A request gets the credential of its own URL's host (`host:port` first, then `host`), and
/// nothing when the host is not in the map: not the base URL's credential, not on a redirect
/// to another origin, not for an absolute `undo` or `next` link that points elsewhere.
///
/// ```
/// use halo_client::{Credential, Credentials, HeaderName};
///
/// let credentials = Credentials::new()
///     .with("api.example.com", Credential::bearer("t0k3n"))
///     .with("127.0.0.1:8443", Credential::api_key(HeaderName::from_static("x-api-key"), "k3y"))
///     // In the header the API's security scheme names:
///     .with("inventory.example.com", Credential::api_key_in_scheme_header("k3y"));
/// # let _ = credentials;
/// ```
#[derive(Clone, Default)]
pub struct Credentials {
    by_host: HashMap<String, Credential>,
    /// Every header some credential travels in, kept as entries are added (`X-API-Key` for a
    /// key in the scheme's header, which falls back to it).
    headers: Vec<HeaderName>,
    /// Whether some API key travels in the header its scheme names.
    scheme_keys: bool,
}

/// The header an API key travels in when neither the credential nor the tool's security
/// scheme names one.
const DEFAULT_KEY_HEADER: HeaderName = HeaderName::from_static("x-api-key");

/// One host's credential. Its `Debug` output hides the secret.
#[derive(Clone)]
#[non_exhaustive]
pub enum Credential {
    /// `Authorization: Bearer <token>`.
    Bearer(Secret),
    /// A key in a header of its own ([`Credential::api_key`],
    /// [`Credential::api_key_in_scheme_header`]).
    #[non_exhaustive]
    ApiKey {
        /// The header; `None` for the header the called tool's security scheme names (its
        /// schema's `auth.header`), or `X-API-Key` when it names none.
        header: Option<HeaderName>,
        /// The key.
        key: Secret,
    },
    /// `Authorization: Basic base64(user:password)`, encoded by the client.
    Basic {
        /// The user name.
        user: String,
        /// The password.
        password: Secret,
    },
    /// `Authorization: Bearer` with access tokens an OAuth 2.0 client gets for itself
    /// ([`ClientCredentials`]).
    ClientCredentials(ClientCredentials),
}

impl From<ClientCredentials> for Credential {
    fn from(oauth: ClientCredentials) -> Self {
        Self::ClientCredentials(oauth)
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bearer(_) => f.write_str("Bearer(***)"),
            Self::ApiKey {
                header: Some(header),
                ..
            } => write!(f, "ApiKey({header}: ***)"),
            Self::ApiKey { header: None, .. } => f.write_str("ApiKey(scheme's header: ***)"),
            Self::Basic { user, .. } => write!(f, "Basic({user}:***)"),
            Self::ClientCredentials(oauth) => fmt::Debug::fmt(oauth, f),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.by_host.iter()).finish()
    }
}

impl Credential {
    /// A bearer token.
    pub fn bearer(token: impl Into<String>) -> Self {
        Self::Bearer(Secret::new(token))
    }

    /// An API key in `header`, whichever header the API's security schemes name. The name is
    /// typed, so nothing here can fail: parse one read at run time with
    /// `HeaderName::try_from`.
    ///
    /// ```
    /// use halo_client::{Credential, HeaderName};
    ///
    /// let key = Credential::api_key(HeaderName::from_static("x-api-key"), "k3y");
    /// let named: HeaderName = "X-Token".parse().expect("a header name");
    /// let token = Credential::api_key(named, "t0ken");
    /// # let _ = (key, token);
    /// ```
    pub fn api_key(header: HeaderName, key: impl Into<String>) -> Self {
        Self::ApiKey {
            header: Some(header),
            key: Secret::new(key),
        }
    }

    /// An API key in the header the API's security scheme names: a call carries it in the
    /// header its tool's schema names (`"auth": {"type": "apikey", "header": "X-Token"}`),
    /// and a request no schema describes (discovery, or a tool whose scheme names no
    /// header) in `X-API-Key`.
    ///
    /// The description picks only the header: the key still goes to the hosts the
    /// [`Credentials`] map gives it, never in a header a proxy or the connection itself
    /// reads (`Proxy-Authorization`, `Host`, `Connection`, ...; a scheme naming one gets
    /// `X-API-Key` instead), and a tool's scheme names the header of its own origin only (a
    /// redirect to another origin with a key of its own carries that key in `X-API-Key`).
    /// The key is marked sensitive, so it is never logged. An API whose discovery depends on
    /// the caller, and whose scheme names another header, needs the header named:
    /// [`api_key`](Self::api_key).
    ///
    /// ```
    /// use halo_client::{Client, Credential};
    ///
    /// let client = Client::builder("https://api.example.com")
    ///     .credential(Credential::api_key_in_scheme_header("k3y"))
    ///     .build()?;
    /// # let _ = client;
    /// # Ok::<(), halo_client::Error>(())
    /// ```
    pub fn api_key_in_scheme_header(key: impl Into<String>) -> Self {
        Self::ApiKey {
            header: None,
            key: Secret::new(key),
        }
    }

    /// A user and password, sent as HTTP Basic.
    pub fn basic(user: impl Into<String>, password: impl Into<String>) -> Self {
        Self::Basic {
            user: user.into(),
            password: Secret::new(password),
        }
    }

    /// Adds the credential's header to `headers`, marked sensitive so it is never logged; an
    /// OAuth client's token for `url` is fetched with `http` when it has none to use.
    /// `scheme_header`
    /// is the API-key header the request's tool names ([`scheme_header`]), for a key that
    /// goes where the scheme says. Gives the value sent when the credential can be renewed
    /// after a refusal ([`refused`](Self::refused)).
    pub(crate) async fn apply(
        &self,
        http: &reqwest::Client,
        url: &Url,
        headers: &mut HeaderMap,
        scheme_header: Option<&HeaderName>,
    ) -> Result<Option<HeaderValue>> {
        let (name, value) = match self {
            Self::Bearer(token) => (AUTHORIZATION, format!("Bearer {}", token.expose())),
            Self::ApiKey { header, key } => {
                let name = header
                    .as_ref()
                    .or(scheme_header)
                    .cloned()
                    .unwrap_or(DEFAULT_KEY_HEADER);
                (name, key.expose().to_owned())
            }
            Self::Basic { user, password } => {
                let pair = format!("{user}:{}", password.expose());
                (AUTHORIZATION, format!("Basic {}", STANDARD.encode(pair)))
            }
            Self::ClientCredentials(oauth) => {
                let token = oauth.authorization(http, url).await?;
                headers.insert(AUTHORIZATION, token.clone());
                return Ok(Some(token));
            }
        };
        let mut value = HeaderValue::try_from(value).map_err(|_| {
            Error::credentials("a credential contains characters a header cannot carry")
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
        Ok(None)
    }

    /// The server refused `sent` (`401`), which [`apply`](Self::apply) gave as renewable:
    /// the next `apply` gets a new one.
    pub(crate) async fn refused(&self, sent: &HeaderValue) {
        if let Self::ClientCredentials(oauth) = self {
            oauth.refused(sent).await;
        }
    }

    /// The header the credential travels in (`X-API-Key` for a key in the scheme's header,
    /// when no scheme names one).
    pub(crate) fn header(&self) -> HeaderName {
        match self {
            Self::ApiKey { header, .. } => header.clone().unwrap_or(DEFAULT_KEY_HEADER),
            Self::Bearer(_) | Self::Basic { .. } | Self::ClientCredentials(_) => AUTHORIZATION,
        }
    }

    /// Whether the credential is a key in the header the tool's scheme names.
    fn follows_scheme(&self) -> bool {
        matches!(self, Self::ApiKey { header: None, .. })
    }
}

/// The header an API key goes in by a tool's description: `auth.header` of an `apikey`
/// scheme, when it is a header name and not one that a proxy or the connection reads
/// (hop-by-hop, framing, `Host`, `Proxy-*`), so that a description can move a key only
/// between the headers of a request to its own host.
pub(crate) fn scheme_header(auth: Option<&Auth>) -> Option<HeaderName> {
    let auth = auth.filter(|auth| auth.kind == AuthType::ApiKey)?;
    let name = HeaderName::try_from(auth.header.as_deref()?.trim()).ok()?;
    let reserved = matches!(
        name.as_str(),
        "host"
            | "connection"
            | "keep-alive"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "content-length"
            | "expect"
    ) || name.as_str().starts_with("proxy-");
    (!reserved).then_some(name)
}

impl Credentials {
    /// An empty map.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a credential for `host` (`api.example.com`) or `host:port` (`127.0.0.1:8443`).
    #[must_use]
    pub fn with(mut self, host: impl AsRef<str>, credential: Credential) -> Self {
        self.insert(host, credential);
        self
    }

    /// Adds a credential for `host` or `host:port`.
    pub fn insert(&mut self, host: impl AsRef<str>, credential: Credential) {
        let header = credential.header();
        if !self.headers.contains(&header) {
            self.headers.push(header);
        }
        self.scheme_keys |= credential.follows_scheme();
        self.by_host
            .insert(host.as_ref().to_ascii_lowercase(), credential);
    }

    /// Whether the map is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_host.is_empty()
    }

    /// The credential for a URL's host: `host:port` (the port explicit or the scheme's
    /// default), then `host`.
    ///
    /// IPv6 hosts are keyed as URLs write them (`[::1]:8080`, `[::1]`); a bare `::1` entry is
    /// accepted too.
    pub(crate) fn for_url(&self, url: &Url) -> Option<&Credential> {
        if self.by_host.is_empty() {
            return None;
        }
        // `Url` lower-cases domain names already.
        let host = url.host_str()?;
        url.port_or_known_default()
            .and_then(|port| self.by_host.get(&format!("{host}:{port}")))
            .or_else(|| self.by_host.get(host))
            .or_else(|| {
                let bare = host.strip_prefix('[')?.strip_suffix(']')?;
                self.by_host.get(bare)
            })
    }

    /// Every header name some credential travels in, so they can be stripped wherever a
    /// request leaves the host they belong to.
    pub(crate) fn headers(&self) -> &[HeaderName] {
        &self.headers
    }

    /// Whether some key travels in the header its tool's scheme names, which is then a
    /// credential header of that tool's requests too.
    pub(crate) fn has_scheme_keys(&self) -> bool {
        self.scheme_keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn basic_is_encoded_by_the_client() {
        let mut headers = HeaderMap::new();
        let http = reqwest::Client::new();
        Credential::basic("ada", "pw")
            .apply(&http, &Url::parse("http://h/").unwrap(), &mut headers, None)
            .await
            .unwrap();
        assert_eq!(headers[AUTHORIZATION], "Basic YWRhOnB3");
        assert!(headers[AUTHORIZATION].is_sensitive());
    }

    #[test]
    fn lookup_prefers_host_and_port() {
        let credentials = Credentials::new()
            .with("example.com", Credential::bearer("plain"))
            .with("example.com:8443", Credential::bearer("port"))
            .with("LOCALHOST:3000", Credential::bearer("local"));
        let token = |url: &str| match credentials.for_url(&Url::parse(url).unwrap()) {
            Some(Credential::Bearer(token)) => Some(token.expose().to_owned()),
            _ => None,
        };
        assert_eq!(token("https://example.com/x").as_deref(), Some("plain"));
        assert_eq!(token("https://example.com:443/x").as_deref(), Some("plain"));
        assert_eq!(token("https://example.com:8443/x").as_deref(), Some("port"));
        assert_eq!(token("http://localhost:3000/").as_deref(), Some("local"));
        assert_eq!(token("http://localhost:3001/"), None);
        assert_eq!(token("https://evil.example/x"), None);
        assert_eq!(token("https://sub.example.com/x"), None);
    }

    #[test]
    fn files_expand_environment_variables() {
        // The variable is only read by this test.
        let path = std::env::var("PATH").unwrap();
        let credentials = Credentials::from_json(
            r#"{"h": {"type": "apikey", "header": "X-Key", "value": "${PATH}"}}"#,
        )
        .unwrap();
        match credentials.for_url(&Url::parse("http://h/").unwrap()) {
            Some(Credential::ApiKey {
                header: Some(header),
                key,
                ..
            }) => {
                assert_eq!(header.as_str(), "x-key");
                assert_eq!(key.expose(), path);
            }
            other => panic!("{other:?}"),
        }
        let missing = Credentials::from_json(
            r#"{"h": {"type": "bearer", "value": "${HALO_SURELY_UNSET_VAR}"}}"#,
        )
        .unwrap_err();
        assert!(missing.is_credentials());
        assert!(missing.to_string().contains("HALO_SURELY_UNSET_VAR"));
        let bad =
            Credentials::from_json(r#"{"h": {"type": "bearer", "value": "s3cret", "extra": 1}}"#)
                .unwrap_err();
        assert!(!bad.to_string().contains("s3cret"));
    }

    #[test]
    fn debug_hides_secrets() {
        let credentials = Credentials::new()
            .with("a", Credential::bearer("s3cret"))
            .with("b", Credential::basic("ada", "pa55"))
            .with(
                "c",
                Credential::api_key(HeaderName::from_static("x-api-key"), "k3y"),
            )
            .with("d", Credential::api_key_in_scheme_header("k3y2"));
        let debug = format!("{credentials:?}");
        for secret in ["s3cret", "pa55", "k3y"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        assert!(debug.contains("ApiKey(scheme's header: ***)"), "{debug}");
    }

    /// The header a key goes in: the credential's own, else the scheme's, else `X-API-Key`.
    #[tokio::test]
    async fn a_named_header_wins_over_the_schemes() {
        let http = reqwest::Client::new();
        let token = HeaderName::from_static("x-token");
        let sent = |credential: Credential, scheme: Option<HeaderName>| {
            let http = http.clone();
            async move {
                let mut headers = HeaderMap::new();
                credential
                    .apply(
                        &http,
                        &Url::parse("http://h/").unwrap(),
                        &mut headers,
                        scheme.as_ref(),
                    )
                    .await
                    .unwrap();
                assert_eq!(headers.len(), 1, "{headers:?}");
                let (name, value) = headers.iter().next().unwrap();
                assert!(value.is_sensitive());
                (name.as_str().to_owned(), value.to_str().unwrap().to_owned())
            }
        };
        let scheme = Credential::api_key_in_scheme_header("k");
        assert_eq!(
            sent(scheme.clone(), Some(token.clone())).await,
            ("x-token".into(), "k".into())
        );
        assert_eq!(sent(scheme, None).await, ("x-api-key".into(), "k".into()));
        let named = Credential::api_key(HeaderName::from_static("x-other"), "k");
        assert_eq!(
            sent(named, Some(token)).await,
            ("x-other".into(), "k".into())
        );
    }

    #[test]
    fn oauth_entries_name_a_token_url_or_an_issuer() {
        let credentials = Credentials::from_json(
            r#"{"h": {"type": "oauth", "issuer": "https://id.example", "client_id": "agent",
                      "client_secret": "s3cret", "resource": "https://h"}}"#,
        )
        .unwrap();
        let debug = format!("{credentials:?}");
        assert!(debug.contains(r#"issuer: "https://id.example""#), "{debug}");
        assert!(debug.contains(r#"resource: Some("https://h")"#), "{debug}");
        assert!(!debug.contains("s3cret"), "{debug}");
        for (entry, why) in [
            (
                r#""token_url": "https://id.example/token", "issuer": "https://id.example""#,
                "either a token_url or an issuer",
            ),
            ("", "either a token_url or an issuer"),
            (
                r#""issuer": "http://id.example""#,
                "the issuer must be an https URL",
            ),
            (r#""issuer": "https://id.example/?x=1""#, "without query"),
        ] {
            let json = format!(
                r#"{{"h": {{"type": "oauth", {entry}{} "client_id": "a", "client_secret": "s3cret"}}}}"#,
                if entry.is_empty() { "" } else { "," }
            );
            let error = Credentials::from_json(&json).unwrap_err();
            assert!(error.is_credentials());
            assert!(error.to_string().contains(why), "{error}");
            assert!(!error.to_string().contains("s3cret"), "{error}");
        }
    }

    #[test]
    fn files_without_a_header_follow_the_scheme() {
        let credentials =
            Credentials::from_json(r#"{"h": {"type": "apikey", "value": "k"}}"#).unwrap();
        assert!(credentials.has_scheme_keys());
        assert_eq!(credentials.headers(), [DEFAULT_KEY_HEADER]);
        assert!(matches!(
            credentials.for_url(&Url::parse("http://h/").unwrap()),
            Some(Credential::ApiKey { header: None, .. })
        ));
        let named = Credentials::new().with(
            "h",
            Credential::api_key(HeaderName::from_static("x-key"), "k"),
        );
        assert!(!named.has_scheme_keys());
        let bad = Credentials::from_json(
            r#"{"h": {"type": "apikey", "header": "a b", "value": "s3cret"}}"#,
        )
        .unwrap_err();
        assert!(
            bad.to_string().contains("`a b` is not a valid header name"),
            "{bad}"
        );
        assert!(!bad.to_string().contains("s3cret"));
    }

    #[test]
    fn schemes_name_only_headers_of_the_request_itself() {
        let auth = |kind: AuthType, header: Option<&str>| {
            let mut auth = Auth::new(kind);
            auth.header = header.map(str::to_owned);
            scheme_header(Some(&auth)).map(|name| name.as_str().to_owned())
        };
        assert_eq!(
            auth(AuthType::ApiKey, Some("X-Token")).as_deref(),
            Some("x-token")
        );
        assert_eq!(
            auth(AuthType::ApiKey, Some("Authorization")).as_deref(),
            Some("authorization")
        );
        // No header (a key in a query or cookie), another scheme, or no name.
        assert_eq!(auth(AuthType::ApiKey, None), None);
        assert_eq!(auth(AuthType::Bearer, Some("X-Token")), None);
        assert_eq!(auth(AuthType::ApiKey, Some("bad header")), None);
        assert_eq!(scheme_header(None), None);
        // Headers a proxy or the connection reads never carry a key.
        for header in [
            "Proxy-Authorization",
            "proxy-anything",
            "Host",
            "Connection",
            "Transfer-Encoding",
            "Content-Length",
            "Upgrade",
        ] {
            assert_eq!(auth(AuthType::ApiKey, Some(header)), None, "{header}");
        }
    }
}
