//! Opaque bearer tokens checked by asking the issuer (RFC 7662 token introspection):
//! [`IntrospectionAuthenticator`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::HeaderValue;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::request::Parts;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::redirect::Policy;
use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use super::oauth::cache::{self, Cache};
use super::oauth::settings::{Settings, settings_setters};
use super::oauth::{self, MAX_DOCUMENT_BYTES, fetch};
use super::{Authenticator, Principal, Unauthenticated};

/// Checks `Authorization: Bearer <token>` by asking the issuer's introspection endpoint
/// (RFC 7662) whether the token is active, and makes its subject the [`Principal`]: for
/// opaque access tokens, which only their issuer can read. Needs the feature
/// `introspection`.
///
/// The API authenticates to the endpoint as an OAuth client of its own (HTTP Basic with its
/// client id and secret). A token is accepted when the answer says `active: true`, its
/// `aud` names one of the [`audience`](IntrospectionAuthenticatorBuilder::audience)s, its
/// `iss` (when the answer has one) is the issuer, and its `exp` (when present) has not
/// passed; anything else is `401` with `error="invalid_token"`. The caller is `sub`, else
/// `client_id`; its scopes are `scope` (and `scp`); its tenant is the
/// [`tenant_claim`](IntrospectionAuthenticatorBuilder::tenant_claim), if set.
///
/// **Cost and bounds.** Each answer is kept for the
/// [`cache_ttl`](IntrospectionAuthenticatorBuilder::cache_ttl) (60 s by default; never past
/// the token's `exp`), keyed by the token's SHA-256 (the token itself is not kept), for at
/// most [`max_cached`](IntrospectionAuthenticatorBuilder::max_cached) tokens; refusals are
/// kept too, so a token replayed in a loop costs the issuer one request per interval. At
/// most [`max_concurrent`](IntrospectionAuthenticatorBuilder::max_concurrent) requests to
/// the endpoint are in flight (8 by default): a flood of made-up tokens waits for them
/// rather than flooding the issuer. A token revoked at the issuer is still accepted until
/// its cached answer expires: shorten the TTL where that matters. While the endpoint cannot
/// be reached (or refuses the API's credentials), tokens not in the cache are `401` (`the
/// token could not be checked at the issuer`), and the cause is logged as a warning.
///
/// ```no_run
/// use halo_auth::IntrospectionAuthenticator;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let tokens = IntrospectionAuthenticator::builder(
///     "https://id.example.com", // the issuer: its metadata names the endpoint
///     "books-api",              // the API's own client id at the issuer...
///     std::env::var("INTROSPECTION_SECRET")?, // ...and secret
/// )
/// .audience("https://api.example.com")
/// .build()
/// .await?;
/// // Give `tokens` to the layer: `HaloLayer::builder(api).authenticator(tokens)` (halo-axum).
/// # let _ = tokens;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct IntrospectionAuthenticator {
    inner: Arc<Inner>,
}

/// What the authenticators cloned from one build share.
struct Inner {
    issuer: String,
    endpoint: String,
    /// `Basic <id:secret>`, marked sensitive.
    credentials: HeaderValue,
    audiences: Vec<String>,
    tenant_claim: Option<String>,
    client: reqwest::Client,
    cache: Cache,
    in_flight: Semaphore,
}

/// Builds an [`IntrospectionAuthenticator`]: [`IntrospectionAuthenticator::builder`].
#[must_use]
pub struct IntrospectionAuthenticatorBuilder {
    /// The issuer, the audiences, the tenant claim, the cache, the deadline and the
    /// endpoint.
    settings: Settings,
    client_id: String,
    client_secret: String,
    max_concurrent: usize,
}

/// Why an [`IntrospectionAuthenticator`] could not be built: settings that cannot work, or
/// an issuer whose metadata could not be read. The message names the URLs and the cause,
/// never the secret.
#[derive(Debug, Clone)]
pub struct IntrospectionError {
    message: String,
}

impl fmt::Display for IntrospectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for IntrospectionError {}

impl IntrospectionError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: format!("IntrospectionAuthenticator: {}", message.into()),
        }
    }
}

impl IntrospectionAuthenticator {
    /// A builder for tokens issued by `issuer` (its issuer identifier), asked about with the
    /// API's own client credentials at the issuer.
    pub fn builder(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> IntrospectionAuthenticatorBuilder {
        IntrospectionAuthenticatorBuilder {
            settings: Settings::new(issuer.into()),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            max_concurrent: 8,
        }
    }

    /// The introspection endpoint asked.
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }
}

impl fmt::Debug for IntrospectionAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionAuthenticator")
            .field("issuer", &self.inner.issuer)
            .field("endpoint", &self.inner.endpoint)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for IntrospectionAuthenticatorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionAuthenticatorBuilder")
            .field("issuer", &self.settings.issuer)
            .field("client_id", &self.client_id)
            .field("endpoint", &self.settings.url)
            .field("audiences", &self.settings.audiences)
            .finish_non_exhaustive()
    }
}

impl IntrospectionAuthenticatorBuilder {
    settings_setters! {
        /// An audience the tokens may be for (the answer's `aud` must name one): the API's
        /// resource identifier. Call it once per audience; at least one is required.
        audience(audience: impl Into<String>) => audience;

        /// Asks the introspection endpoint at `url` instead of the one the issuer's metadata
        /// names (no discovery).
        endpoint(url: impl Into<String>) => url;

        /// The claim of the answer that names the caller's tenant (see
        /// [`Principal::in_tenant`]).
        tenant_claim(claim: impl Into<String>) => tenant_claim;

        /// How long an answer is kept (60 s by default; an active token's never past its `exp`).
        cache_ttl(ttl: Duration) => cache_ttl;

        /// How many tokens' answers are kept at most (10,000 by default); past it, answers are
        /// not kept until older ones expire.
        max_cached(tokens: usize) => max_cached;
    }

    /// How many introspection requests may be in flight at once (8 by default, at least 1).
    pub fn max_concurrent(mut self, requests: usize) -> Self {
        self.max_concurrent = requests;
        self
    }

    settings_setters! {
        /// The deadline of each request to the issuer (10 s by default).
        timeout(timeout: Duration) => timeout;
    }

    /// Finds the introspection endpoint (unless given).
    ///
    /// # Errors
    /// No audience, no concurrency; an issuer or endpoint URL that is neither `https` nor
    /// `http` on a loopback host; discovery that fails, names another issuer or names no
    /// `introspection_endpoint`; client credentials that cannot be sent in a header.
    pub async fn build(mut self) -> Result<IntrospectionAuthenticator, IntrospectionError> {
        if self.max_concurrent == 0 {
            return Err(IntrospectionError::new(
                "max_concurrent must allow at least one request",
            ));
        }
        let client = self
            .settings
            .client(Policy::none())
            .map_err(IntrospectionError::new)?;
        let credentials = basic(&self.client_id, &self.client_secret)?;
        let endpoint = self
            .settings
            .locate(&client, "introspection_endpoint", "endpoint")
            .await
            .map_err(IntrospectionError::new)?;
        Ok(IntrospectionAuthenticator {
            inner: Arc::new(Inner {
                cache: self.settings.cache(),
                issuer: self.settings.issuer,
                endpoint,
                credentials,
                audiences: self.settings.audiences,
                tenant_claim: self.settings.tenant_claim,
                client,
                in_flight: Semaphore::new(self.max_concurrent),
            }),
        })
    }
}

/// What `application/x-www-form-urlencoded` escapes here: all but the unreserved characters
/// (a space becomes `%20`, which every form parser reads).
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `text` form-encoded.
fn form(text: &str) -> String {
    utf8_percent_encode(text, FORM).to_string()
}

/// `Basic base64(id:secret)` (RFC 6749 §2.3.1: both form-encoded first), marked sensitive.
fn basic(client_id: &str, secret: &str) -> Result<HeaderValue, IntrospectionError> {
    let pair = format!("{}:{}", form(client_id), form(secret));
    let mut value = HeaderValue::try_from(format!("Basic {}", STANDARD.encode(pair)))
        .map_err(|_| IntrospectionError::new("the client credentials cannot be sent"))?;
    value.set_sensitive(true);
    Ok(value)
}

impl Authenticator for IntrospectionAuthenticator {
    async fn authenticate(&self, parts: &Parts) -> Result<Option<Principal>, Unauthenticated> {
        match oauth::bearer_token(parts, "expected Authorization: Bearer <token>")? {
            Some(token) => self.inner.verify(token).await.map(Some),
            None => Ok(None),
        }
    }
}

impl Inner {
    /// The principal `token` names, if the issuer says it is active and for this API.
    async fn verify(&self, token: &str) -> Result<Principal, Unauthenticated> {
        let key = Cache::key(token);
        if let Some(known) = self.cache.get(&key) {
            return known;
        }
        let permit = self.in_flight.acquire().await;
        // Another request may have asked about the same token while this one waited.
        if let Some(known) = self.cache.get(&key) {
            return known;
        }
        let answer = self.introspect(token).await;
        drop(permit);
        let answer = answer.map_err(|unreachable| {
            tracing::warn!(endpoint = %self.endpoint, cause = %unreachable.0, "token introspection failed");
            Unauthenticated::new("the token could not be checked at the issuer")
        })?;
        let (verdict, expires) = self.judge(&answer);
        self.cache.put(key, verdict.clone(), expires);
        verdict
    }

    /// The issuer's answer about `token`.
    async fn introspect(&self, token: &str) -> Result<Map<String, Value>, fetch::Failed> {
        let body = format!("token={}&token_type_hint=access_token", form(token));
        let request = self
            .client
            .post(&self.endpoint)
            .header(AUTHORIZATION, self.credentials.clone())
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body);
        fetch::json(
            request,
            &format!("POST {}", self.endpoint),
            MAX_DOCUMENT_BYTES,
        )
        .await
    }

    /// The verdict on an answer, and when the token expires (its `exp`), if it says.
    fn judge(
        &self,
        answer: &Map<String, Value>,
    ) -> (Result<Principal, Unauthenticated>, Option<u64>) {
        let expires = answer.get("exp").and_then(Value::as_u64);
        let refuse = |why: &str| (Err(Unauthenticated::new(why)), expires);
        if answer.get("active") != Some(&Value::Bool(true)) {
            return refuse("the token is not active (expired, revoked or unknown to the issuer)");
        }
        if expires.is_some_and(|exp| exp <= cache::now_unix()) {
            return refuse("the token has expired");
        }
        if answer
            .get("iss")
            .and_then(Value::as_str)
            .is_some_and(|iss| iss != self.issuer)
        {
            return refuse("the token is not from this API's issuer (iss)");
        }
        let for_us = match answer.get("aud") {
            Some(Value::String(aud)) => self.audiences.contains(aud),
            Some(Value::Array(auds)) => auds
                .iter()
                .filter_map(Value::as_str)
                .any(|aud| self.audiences.iter().any(|ours| ours == aud)),
            _ => false,
        };
        if !for_us {
            return refuse("the token is not for this API (aud)");
        }
        (
            oauth::principal(answer, self.tenant_claim.as_deref()),
            expires,
        )
    }
}
