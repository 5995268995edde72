//! OAuth 2.0 client credentials (RFC 6749 §4.4): access tokens fetched with a client id and
//! secret, kept until shortly before they expire, fetched again after a `401`.

use std::fmt;
use std::net::IpAddr;
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

use crate::credentials::Secret;
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
/// The token endpoint is yours to name, never taken from an API's description, so the
/// secret goes nowhere else; it must be `https`, or `http` on a loopback address.
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
    token_url: Url,
    client_id: String,
    secret: Secret,
    scopes: Vec<String>,
    /// The token in use, shared by the clones (one per request).
    token: Arc<Mutex<Option<Token>>>,
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
        let host = token_url.host_str().unwrap_or_default();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let loopback = bare.eq_ignore_ascii_case("localhost")
            || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
        let secure = match token_url.scheme() {
            "https" => !host.is_empty(),
            "http" => loopback,
            _ => false,
        };
        if !secure {
            return Err(Error::credentials(
                "the OAuth token URL must be https (or http on a loopback address)",
            ));
        }
        Ok(Self {
            token_url,
            client_id: client_id.into(),
            secret: Secret::new(client_secret),
            scopes: Vec::new(),
            token: Arc::new(Mutex::new(None)),
        })
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

    /// The `Authorization` value to send: the kept token, or a new one from the endpoint.
    pub(crate) async fn authorization(&self, http: &reqwest::Client) -> Result<HeaderValue> {
        let mut kept = self.token.lock().await;
        if let Some(token) = kept.as_ref()
            && token.renew_at.is_none_or(|at| Instant::now() < at)
        {
            return Ok(token.authorization.clone());
        }
        let token = self.fetch(http).await?;
        let authorization = token.authorization.clone();
        *kept = Some(token);
        Ok(authorization)
    }

    /// Forgets the token sent as `sent`, after the API refused it; a newer token is kept.
    pub(crate) async fn refused(&self, sent: &HeaderValue) {
        let mut kept = self.token.lock().await;
        if kept
            .as_ref()
            .is_some_and(|token| token.authorization == sent)
        {
            *kept = None;
        }
    }

    /// Asks the token endpoint for a token. Errors name the endpoint's host and its `error`
    /// code, never the secret or the token.
    async fn fetch(&self, http: &reqwest::Client) -> Result<Token> {
        let host = self.token_url.host_str().unwrap_or_default().to_owned();
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
        // RFC 6749 §2.3.1: id and secret form-encoded, then HTTP Basic.
        let pair = format!("{}:{}", form(&self.client_id), form(self.secret.expose()));
        let mut basic = HeaderValue::try_from(format!("Basic {}", STANDARD.encode(pair)))
            .map_err(|_| failed("the client id cannot travel in a header".to_owned()))?;
        basic.set_sensitive(true);
        let started = Instant::now();
        let response = http
            .post(self.token_url.clone())
            .header(AUTHORIZATION, basic)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| unavailable(e.without_url().to_string()))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| unavailable(e.without_url().to_string()))?;
        if bytes.len() > MAX_TOKEN_ANSWER {
            return Err(failed("the answer is too large".to_owned()));
        }
        if !status.is_success() {
            let code = serde_json::from_slice::<Refused>(&bytes)
                .map(|refused| format!(": {}", printable(&refused.error)))
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
                printable(&granted.token_type)
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

/// A server's text for an error message: printable ASCII only, at most 64 characters.
fn printable(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(64)
        .collect()
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("token_host", &self.token_url.host_str().unwrap_or_default())
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}
