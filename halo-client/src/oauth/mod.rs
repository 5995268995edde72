//! OAuth 2.0 client credentials (RFC 6749 §4.4): access tokens fetched with a client id and
//! secret, kept until shortly before they expire, fetched again after a `401`; the token
//! endpoint named, or discovered from the issuer (RFC 8414), and the resource a token is for
//! (RFC 8707) named, or learned from the API's protected resource metadata (RFC 9728).
//!
//! - this file: [`ClientCredentials`], its tokens and the token request;
//! - [`metadata`]: the authorization server's and the protected resource's documents;
//! - [`challenge`]: the `resource_metadata` of a `WWW-Authenticate` challenge.

mod challenge;
mod metadata;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::Deserialize;
use tokio::sync::Mutex;
use tokio::time::Instant;

pub(crate) use self::challenge::resource_metadata;
use self::metadata::{Unread, read_bounded, secure};
use crate::secret::Secret;
use crate::{Error, Result};

/// Characters escaped in `application/x-www-form-urlencoded`: all but the unreserved ones
/// (a space is escaped as `%20`, which every form parser reads).
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The longest a token answer may be.
const MAX_TOKEN_ANSWER: usize = 64 * 1024;

/// How many resource identifiers a client keeps from the APIs' metadata (the oldest is
/// forgotten first).
const MAX_RESOURCES: usize = 16;

/// An OAuth 2.0 client that authenticates with its id and secret (the client credentials
/// grant, RFC 6749 §4.4), for machine-to-machine access.
///
/// The client asks the token endpoint for an access token the first time a request needs one,
/// sends it as `Authorization: Bearer`, reuses it until shortly before it expires
/// (`expires_in`, less a tenth of it, at most a minute), and asks again when the API answers
/// `401` (then repeats that request once). Concurrent requests wait for one token request.
/// A token endpoint that cannot answer for now (no connection, `408`, `429`, `5xx`) leaves
/// the request unsent, so the client's retry policy tries it again whatever its method; a
/// refusal (`invalid_client`, say) is an [`Error::is_credentials`] error at once.
///
/// The token endpoint is yours to name ([`new`](Self::new)), or found from the issuer you
/// name ([`from_issuer`](Self::from_issuer)); never taken from an API's description or
/// challenge, so the secret goes nowhere else. It must be `https`, or `http` on a loopback
/// address.
///
/// ```
/// use halo_client::{ClientCredentials, Credential, Credentials};
///
/// let token_url = "https://auth.example.com/oauth/token".parse().unwrap();
/// let oauth = ClientCredentials::new(token_url, "reporting-agent", "s3cret")
///     .unwrap()
///     .scopes(["orders:read"]);
/// let credentials = Credentials::new().with("api.example.com", Credential::from(oauth));
/// # let _ = credentials;
/// ```
#[derive(Clone)]
pub struct ClientCredentials {
    source: Source,
    client_id: String,
    secret: Secret,
    scopes: Vec<String>,
    /// The resource every token is asked for (RFC 8707), when the user named one.
    resource: Option<String>,
    /// Tokens, the discovered endpoint and the learned resources, shared by the clones.
    state: Arc<Mutex<State>>,
}

/// Where the token endpoint comes from.
#[derive(Clone)]
enum Source {
    /// Named by the user.
    TokenUrl(Url),
    /// Discovered from the issuer's metadata.
    Issuer {
        /// The issuer identifier as the user wrote it, compared character for character.
        id: String,
        /// It, parsed.
        url: Url,
    },
}

/// What the clones of one client share.
#[derive(Default)]
struct State {
    /// The token endpoint found in the issuer's metadata.
    token_url: Option<Url>,
    /// The tokens in use, by the resource they were asked for.
    tokens: Vec<(Option<String>, Token)>,
    /// Resource identifiers from the metadata of APIs that refused a token, oldest first.
    resources: Vec<String>,
}

/// An access token, as the `Authorization` value it is sent in, and when to stop using it.
#[derive(Clone)]
struct Token {
    /// `Bearer <token>`, marked sensitive.
    authorization: HeaderValue,
    renew_at: Option<Instant>,
}

/// The token endpoint's answer (RFC 6749 §5.1); other fields are ignored.
#[derive(Deserialize)]
struct Granted {
    access_token: String,
    token_type: String,
    expires_in: Option<u64>,
}

/// The token endpoint's error (RFC 6749 §5.2).
#[derive(Deserialize)]
struct Refused {
    error: String,
}

impl ClientCredentials {
    /// The client `client_id` with `client_secret`, asking `token_url` for tokens.
    ///
    /// # Errors
    /// When `token_url` is neither `https` nor `http` on a loopback address
    /// ([`Error::is_credentials`]): the secret would travel in clear text.
    pub fn new(
        token_url: Url,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Result<Self> {
        if !secure(&token_url) {
            return Err(Error::credentials(
                "the OAuth token URL must be https (or http on a loopback address)",
            ));
        }
        Ok(Self::with_source(
            Source::TokenUrl(token_url),
            client_id.into(),
            client_secret.into(),
        ))
    }

    /// The client `client_id` with `client_secret`, of the authorization server whose issuer
    /// identifier is `issuer` (`https://id.example.com`, written as the server writes it).
    ///
    /// At the first token request the client reads the issuer's metadata,
    /// `/.well-known/oauth-authorization-server` (RFC 8414, the well-known path before the
    /// issuer's own path), else `/.well-known/openid-configuration` (OpenID Connect
    /// Discovery), and keeps its `token_endpoint`. The document must name `issuer` exactly
    /// (RFC 8414 §3.3), its token endpoint must be `https` or `http` on loopback, and it may
    /// be at most 64 KiB; otherwise the request fails with an [`Error::is_credentials`]
    /// error.
    ///
    /// Such a client also follows an API's protected resource metadata (RFC 9728): when the
    /// API refuses a token (`401`) with a `Bearer` challenge that names
    /// `resource_metadata="URL"`, the client reads that document (`https` or loopback
    /// `http`, at most 64 KiB), checks that its `resource` is the API the request went to
    /// (the same origin, and a path prefix of the request's) and that `issuer` is among its
    /// `authorization_servers`, asks for a token for that `resource` (RFC 8707; unless
    /// [`resource`](Self::resource) names one) and repeats the request once. The secret only
    /// ever goes to the issuer named here: an API that names other authorization servers
    /// gets an [`Error::is_credentials`] error saying which.
    ///
    /// ```
    /// use halo_client::{Client, ClientCredentials, Credential};
    ///
    /// let issuer = "https://id.example.com";
    /// let oauth = ClientCredentials::from_issuer(issuer, "reporting-agent", "s3cret")?
    ///     .scopes(["orders:read"]);
    /// let client = Client::builder("https://api.example.com")
    ///     .credential(Credential::from(oauth))
    ///     .build()?;
    /// # let _ = client;
    /// # Ok::<(), halo_client::Error>(())
    /// ```
    ///
    /// # Errors
    /// When `issuer` is not an `https` URL (or `http` on a loopback address) without query
    /// or fragment ([`Error::is_credentials`]).
    pub fn from_issuer(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Result<Self> {
        let id = issuer.into();
        let url = Url::parse(&id)
            .ok()
            .filter(|url| secure(url) && url.query().is_none() && url.fragment().is_none())
            .ok_or_else(|| {
                Error::credentials(
                    "the OAuth issuer must be an https URL (or http on a loopback address) \
                     without query or fragment",
                )
            })?;
        Ok(Self::with_source(
            Source::Issuer { id, url },
            client_id.into(),
            client_secret.into(),
        ))
    }

    fn with_source(source: Source, client_id: String, client_secret: String) -> Self {
        Self {
            source,
            client_id,
            secret: Secret::new(client_secret),
            scopes: Vec::new(),
            resource: None,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// The scopes to ask for (none by default: the authorization server's default).
    #[must_use]
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The resource to ask every token for (RFC 8707 `resource`, the identifier of the API
    /// the tokens are for: `https://api.example.com`, sent as written). Without it a token is
    /// asked for no resource, or (for a client [`from_issuer`](Self::from_issuer)) for the
    /// one the API's protected resource metadata names.
    ///
    /// ```
    /// use halo_client::ClientCredentials;
    ///
    /// let token_url = "https://auth.example.com/oauth/token".parse().unwrap();
    /// let oauth = ClientCredentials::new(token_url, "reporting-agent", "s3cret")?
    ///     .resource("https://api.example.com");
    /// # let _ = oauth;
    /// # Ok::<(), halo_client::Error>(())
    /// ```
    #[must_use]
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    /// The `Authorization` value to send to `url` (`Bearer <token>`, marked sensitive): the
    /// kept token for its resource while it is fresh, or a new one from the token endpoint
    /// (found first, for an issuer), sent with `http`. For a proxy or gateway that sends its
    /// own requests with these credentials; a [`Client`](crate::Client) given them does this
    /// itself.
    ///
    /// ```no_run
    /// # async fn run() -> halo_client::Result<()> {
    /// use halo_client::ClientCredentials;
    ///
    /// let token_url = "https://id.example.com/token".parse().expect("a URL");
    /// let oauth = ClientCredentials::new(token_url, "gateway", "s3cret")?
    ///     .resource("https://api.example.com");
    /// let http = reqwest::Client::new();
    /// let url = "https://api.example.com/orders".parse().expect("a URL");
    /// let authorization = oauth.authorization(&http, &url).await?;
    /// let answer = http.get(url).header("authorization", authorization).send().await;
    /// # let _ = answer;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::is_credentials`] when the issuer's metadata or the token endpoint cannot be
    /// read, or the endpoint refuses the client.
    pub async fn authorization(&self, http: &reqwest::Client, url: &Url) -> Result<HeaderValue> {
        let mut state = self.state.lock().await;
        let resource = self.resource.clone().or_else(|| {
            // The most specific resource learned for the URL.
            state
                .resources
                .iter()
                .filter(|resource| metadata::covers(resource, url))
                .max_by_key(|resource| resource.len())
                .cloned()
        });
        if let Some((_, token)) = state.tokens.iter().find(|(r, _)| *r == resource)
            && token.renew_at.is_none_or(|at| Instant::now() < at)
        {
            return Ok(token.authorization.clone());
        }
        let token_url = match (&self.source, &state.token_url) {
            (Source::TokenUrl(token_url), _) | (Source::Issuer { .. }, Some(token_url)) => {
                token_url.clone()
            }
            (Source::Issuer { id, url }, None) => {
                let found = metadata::token_endpoint(http, id, url).await?;
                state.token_url = Some(found.clone());
                found
            }
        };
        let token = self.fetch(http, &token_url, resource.as_deref()).await?;
        let authorization = token.authorization.clone();
        state.tokens.retain(|(r, _)| *r != resource);
        state.tokens.push((resource, token));
        Ok(authorization)
    }

    /// Forgets the token sent as `sent`, after the API refused it (`401`), so that the next
    /// [`authorization`](Self::authorization) asks for a new one; a newer token is kept.
    pub async fn refused(&self, sent: &HeaderValue) {
        let mut state = self.state.lock().await;
        state
            .tokens
            .retain(|(_, token)| token.authorization != sent);
    }

    /// After the API at `request_url` refused a token with a challenge naming its protected
    /// resource metadata, `metadata_url`: for a client of an issuer, reads and checks the
    /// document, and keeps its resource for the next token requests to that API. A client
    /// with a token URL of its own ignores it.
    pub(crate) async fn learn(
        &self,
        http: &reqwest::Client,
        metadata_url: &str,
        request_url: &Url,
    ) -> Result<()> {
        let Source::Issuer { id, .. } = &self.source else {
            return Ok(());
        };
        let document = metadata::protected_resource(http, metadata_url, request_url).await?;
        if !document
            .authorization_servers
            .iter()
            .any(|server| server == id)
        {
            let named: Vec<String> = document
                .authorization_servers
                .iter()
                .take(5)
                .map(|server| format!("`{}`", printable(server, 200)))
                .collect();
            let named = if named.is_empty() {
                "no authorization server".to_owned()
            } else {
                format!("the authorization servers {}", named.join(", "))
            };
            return Err(Error::credentials(format!(
                "the API at {} names {named}, not the configured issuer `{}`; the client \
                 secret goes only to the issuer you name",
                request_url.origin().ascii_serialization(),
                printable(id, 200)
            )));
        }
        if self.resource.is_none() {
            let mut state = self.state.lock().await;
            if !state.resources.contains(&document.resource) {
                if state.resources.len() == MAX_RESOURCES {
                    state.resources.remove(0);
                }
                state.resources.push(document.resource);
            }
        }
        Ok(())
    }

    /// Asks the token endpoint for a token (for `resource`, when there is one). Errors name
    /// the endpoint's host and its `error` code, never the secret or the token.
    async fn fetch(
        &self,
        http: &reqwest::Client,
        token_url: &Url,
        resource: Option<&str>,
    ) -> Result<Token> {
        let host = token_url.host_str().unwrap_or_default().to_owned();
        let failed =
            |why: String| Error::credentials(format!("OAuth token request to {host}: {why}"));
        // The endpoint could not answer for now: the request may be tried again.
        let unavailable = |why: String| {
            Error::credentials_unavailable(format!("OAuth token request to {host}: {why}"))
        };
        let form = |text: &str| utf8_percent_encode(text, FORM).to_string();
        let mut body = "grant_type=client_credentials".to_owned();
        if !self.scopes.is_empty() {
            body.push_str("&scope=");
            body.push_str(&form(&self.scopes.join(" ")));
        }
        if let Some(resource) = resource {
            body.push_str("&resource=");
            body.push_str(&form(resource));
        }
        // RFC 6749 §2.3.1: id and secret form-encoded, then HTTP Basic.
        let pair = format!("{}:{}", form(&self.client_id), form(self.secret.expose()));
        let mut basic = HeaderValue::try_from(format!("Basic {}", STANDARD.encode(pair)))
            .map_err(|_| failed("the client id cannot travel in a header".to_owned()))?;
        basic.set_sensitive(true);
        let started = Instant::now();
        let response = http
            .post(token_url.clone())
            .header(AUTHORIZATION, basic)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| unavailable(e.without_url().to_string()))?;
        let status = response.status();
        let bytes =
            read_bounded(response, MAX_TOKEN_ANSWER)
                .await
                .map_err(|unread| match unread {
                    Unread::Transport(why) => unavailable(why),
                    Unread::TooLarge => failed("the answer is too large".to_owned()),
                })?;
        if !status.is_success() {
            let code = serde_json::from_slice::<Refused>(&bytes)
                .map(|refused| format!(": {}", printable(&refused.error, 64)))
                .unwrap_or_default();
            let why = format!("refused with {status}{code}");
            let busy = matches!(status.as_u16(), 408 | 429) || status.is_server_error();
            return Err(if busy { unavailable(why) } else { failed(why) });
        }
        let granted: Granted = serde_json::from_slice(&bytes)
            .map_err(|_| failed("the answer is not an access token".to_owned()))?;
        if !granted.token_type.eq_ignore_ascii_case("bearer") {
            return Err(failed(format!(
                "the token type is `{}`, not Bearer",
                printable(&granted.token_type, 64)
            )));
        }
        // Renewed a little early: a tenth of its life, at most a minute.
        // A lifetime past what a clock can count is no expiry.
        let renew_at = granted.expires_in.and_then(|seconds| {
            let life = Duration::from_secs(seconds);
            started.checked_add(life - (life / 10).min(Duration::from_secs(60)))
        });
        let mut authorization = HeaderValue::try_from(format!("Bearer {}", granted.access_token))
            .map_err(|_| {
            failed("the access token holds characters a header cannot carry".to_owned())
        })?;
        authorization.set_sensitive(true);
        Ok(Token {
            authorization,
            renew_at,
        })
    }
}

/// A server's text for an error message: printable ASCII only, at most `limit` characters.
fn printable(text: &str, limit: usize) -> String {
    text.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(limit)
        .collect()
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("ClientCredentials");
        match &self.source {
            Source::TokenUrl(url) => debug.field("token_host", &url.host_str().unwrap_or_default()),
            Source::Issuer { id, .. } => debug.field("issuer", id),
        };
        debug
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}
