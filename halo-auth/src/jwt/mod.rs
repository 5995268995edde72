//! Bearer JWTs (RFC 7519, RFC 9068 access tokens) checked against the keys an issuer
//! publishes: [`JwtAuthenticator`].
//!
//! The keys come from the issuer's `jwks_uri`, found in its OpenID Connect discovery
//! document or its RFC 8414 metadata when the authenticator is built. They are kept in
//! memory; a token signed with a key the set does not have (a `kid` not seen yet, as after a
//! rotation) makes the authenticator fetch the set again, at most once per
//! [`refresh_interval`](JwtAuthenticatorBuilder::refresh_interval), whatever the number of
//! such tokens. Requests whose key is known never wait for a fetch.
//!
//! A token is checked in three steps, each by its own file, so that a token whose signature
//! is checked every time (the verified-token cache off, or a new token) costs little more
//! than the signature itself:
//!
//! - the header (`header.rs`): its algorithm, one of [`ALGORITHMS`], and its `kid`; the
//!   common `{"alg", "typ", "kid"}` read in one pass, any other by jsonwebtoken
//!   ([`jsonwebtoken::decode_header`]) with the checks its `decode` adds (`crit` may only
//!   name `b64`, and `b64` may not be `false`);
//! - the signature (`keys.rs`): verified with the key of the header's `kid` (each key of the
//!   algorithm's type, without one), parsed once when the set was fetched and bound to the
//!   one algorithm its type and `alg` allow. jsonwebtoken would rebuild the key from its
//!   components on every token, and offers no way to hand it a parsed one (`keys.rs` says
//!   why);
//! - the claims (`claims.rs`): read in one pass, borrowing from the decoded payload, and
//!   checked as jsonwebtoken's `Validation` checks them (`exp`, `iss`, `aud` required, `nbf`
//!   when present, the leeway on both), then made the [`Principal`].
//!
//! jsonwebtoken still parses the key set's JWKs and any header of an unusual shape;
//! aws-lc-rs, the crypto jsonwebtoken uses, checks the signatures. `tests/jwt_verdicts.rs`
//! holds the whole check to jsonwebtoken's verdicts, token by crafted token. The cold RS256
//! check went from 1.42× its signature check alone (through `jsonwebtoken::decode`) to
//! about 1.1× (`benches/jwt.rs`, `jwt_auth_paired/rs256_cold_vs_signature`).

mod claims;
mod header;
mod keys;

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use base64::DecodeSliceError;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::request::Parts;
use jsonwebtoken::Algorithm;
use reqwest::redirect::Policy;
use tokio::sync::Mutex;
use tokio::time::Instant;

use self::claims::Rules;
use self::keys::Keys;
use super::oauth::cache::Cache;
use super::oauth::settings::{Settings, settings_setters};
use super::oauth::{self, MAX_DOCUMENT_BYTES, fetch};
use super::{Authenticator, Principal, Unauthenticated};

/// The algorithms a token may be signed with: asymmetric only (never `none`, never an
/// HMAC, whose secret a verifier would have to hold).
const ALGORITHMS: [Algorithm; 3] = [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];

/// The longest signature of an accepted algorithm: RSA with an 8192-bit key (the largest
/// aws-lc-rs's `RSA_PKCS1_2048_8192_SHA256` verifies).
const MAX_SIGNATURE_BYTES: usize = 8192 / 8;

/// Checks `Authorization: Bearer <JWT>` against the keys of one issuer, and makes the
/// token's subject the [`Principal`]. Needs the feature `jwt`.
///
/// A token is accepted when it is signed with RS256, ES256 or EdDSA by a key of the issuer's
/// key set (the `kid` of its header, or any key of the algorithm's type when it names
/// none), its `iss` is the issuer, its `aud` names one of the
/// [`audience`](JwtAuthenticatorBuilder::audience)s, and `exp` (required) and `nbf` (when
/// present) hold, give or take the [`leeway`](JwtAuthenticatorBuilder::leeway). `alg: none`,
/// the HMAC algorithms (a token "signed" with the public key as an HMAC secret) and every
/// other algorithm are refused. The principal's id is `sub`, else `client_id`; its scopes
/// are `scope` (space-separated, RFC 9068 and RFC 8693) and `scp` (an array, or a
/// space-separated string); its scheme is [`Scheme::Bearer`](crate::Scheme::Bearer).
///
/// [`build`](JwtAuthenticatorBuilder::build) finds the key set
/// (`{issuer}/.well-known/openid-configuration`, else RFC 8414's
/// `/.well-known/oauth-authorization-server`, unless
/// [`jwks_uri`](JwtAuthenticatorBuilder::jwks_uri) names it) and fetches it, so a
/// misconfigured or unreachable issuer is an error at start-up. Afterwards:
///
/// - a token whose key is in the set is checked in memory, without I/O;
/// - a token naming a key the set lacks makes the set be fetched again, at most once per
///   [`refresh_interval`](JwtAuthenticatorBuilder::refresh_interval) (30 s by default; the
///   fetch at build counts): a flood of made-up `kid`s costs the issuer one request per
///   interval. Requests that arrive during that fetch wait for it (bounded by the
///   [`timeout`](JwtAuthenticatorBuilder::timeout)); other requests never do;
/// - when the issuer cannot be reached, the keys already fetched keep working, and a token
///   naming another key is refused (`401`, `invalid_token`) until a later fetch succeeds;
/// - a token once verified is remembered (by its SHA-256; the token itself is not kept) for
///   the [`cache_ttl`](JwtAuthenticatorBuilder::cache_ttl) (60 s by default, never past its
///   `exp`), at most [`max_cached`](JwtAuthenticatorBuilder::max_cached) of them: a client
///   that reuses its token pays for the signature check (about 20 µs for RS256 with a
///   2048-bit key, the public key parsed when the set was fetched) once, and then a lookup.
///   With the cache off, every request pays it. A key removed from the set still covers the tokens it verified until
///   their entries expire.
///
/// Refusals are `401` with `WWW-Authenticate: Bearer ..., error="invalid_token"` and a
/// problem document that says what is wrong (expired, wrong audience, unknown key, ...),
/// never the token; the token is not logged.
///
/// Only `https` URLs are fetched, or `http` on a loopback host (development, tests). The
/// crypto is `jsonwebtoken` with aws-lc-rs: an application that also turns on
/// jsonwebtoken's `rust_crypto` feature must install a `CryptoProvider` itself.
///
/// ```no_run
/// use std::time::Duration;
/// use halo_auth::{JwtAuthenticator, ProtectedResource};
///
/// async fn identity() -> Result<(JwtAuthenticator, ProtectedResource), Box<dyn std::error::Error>> {
///     let jwt = JwtAuthenticator::builder("https://id.example.com") // the issuer
///         .audience("https://api.example.com") // the API's resource identifier
///         .leeway(Duration::from_secs(30)) // 60 s by default
///         .build() // discovers the key set and fetches it: an error if the issuer is down
///         .await?;
///     let resource = ProtectedResource::new("https://api.example.com", ["https://id.example.com"]);
///     // Both go to the layer (halo-axum):
///     // `HaloLayer::builder(api).authenticator(jwt).protected_resource(resource)`.
///     Ok((jwt, resource))
/// }
/// ```
#[derive(Clone)]
pub struct JwtAuthenticator {
    inner: Arc<Inner>,
}

/// What the authenticators cloned from one build share.
struct Inner {
    jwks_uri: String,
    refresh_interval: Duration,
    /// The issuer, the audiences, the leeway and the tenant claim.
    rules: Rules,
    /// The tokens verified recently.
    verified: Cache,
    client: reqwest::Client,
    keys: RwLock<Arc<Keys>>,
    /// When the key set was last fetched (or tried), held during a fetch.
    fetched: Mutex<Instant>,
}

/// Builds a [`JwtAuthenticator`]: [`JwtAuthenticator::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct JwtAuthenticatorBuilder {
    /// The issuer, the audiences, the tenant claim, the cache, the deadline and the key
    /// set's URL.
    settings: Settings,
    leeway: Duration,
    refresh_interval: Duration,
}

/// Why a [`JwtAuthenticator`] could not be built: settings that cannot work, or the
/// issuer's metadata or keys that could not be fetched. The message names the URLs and the
/// cause.
#[derive(Debug, Clone)]
pub struct JwtError {
    message: String,
}

impl fmt::Display for JwtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JwtError {}

impl JwtError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl JwtAuthenticator {
    /// A builder for tokens issued by `issuer` (its issuer identifier, exactly as the
    /// tokens' `iss` and its metadata's `issuer` write it).
    pub fn builder(issuer: impl Into<String>) -> JwtAuthenticatorBuilder {
        JwtAuthenticatorBuilder {
            settings: Settings::new(issuer.into()),
            leeway: Duration::from_secs(60),
            refresh_interval: Duration::from_secs(30),
        }
    }

    /// The issuer whose tokens are accepted.
    #[must_use]
    pub fn issuer(&self) -> &str {
        &self.inner.rules.issuer
    }

    /// Where the issuer's key set is fetched from.
    #[must_use]
    pub fn jwks_uri(&self) -> &str {
        &self.inner.jwks_uri
    }
}

impl fmt::Debug for JwtAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtAuthenticator")
            .field("issuer", &self.inner.rules.issuer)
            .field("jwks_uri", &self.inner.jwks_uri)
            .field("keys", &self.inner.snapshot().len())
            .finish_non_exhaustive()
    }
}

impl JwtAuthenticatorBuilder {
    settings_setters! {
        /// An audience the tokens may be for (their `aud` must name one): the API's resource
        /// identifier, as given to
        /// [`ProtectedResource::new`](crate::ProtectedResource::new). Call it once per
        /// audience; at least one is required.
        audience(audience: impl Into<String>) => audience;
    }

    /// How far `exp` and `nbf` may be off, for clocks that disagree (60 s by default).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The least time between two fetches of the key set (30 s by default): a token naming
    /// an unknown key triggers a fetch only when the last one is at least this old.
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    settings_setters! {
        /// The deadline of each request to the issuer (10 s by default).
        timeout(timeout: Duration) => timeout;

        /// Fetches the key set from `url` instead of the one the issuer's metadata names (no
        /// discovery).
        jwks_uri(url: impl Into<String>) => url;

        /// The claim that names the caller's tenant (such as `tenant_id` or `org`): a token
        /// whose claim is a non-empty string gives a principal
        /// [`in_tenant`](crate::Principal::in_tenant) that value, which per-tenant rate limits
        /// count by. Without it, principals have no tenant.
        tenant_claim(claim: impl Into<String>) => tenant_claim;

        /// How long a verified token is remembered (60 s by default, never past its `exp`;
        /// `Duration::ZERO` checks every token's signature every time).
        cache_ttl(ttl: Duration) => cache_ttl;

        /// How many verified tokens are remembered at most (10,000 by default); past it, new
        /// ones are not until older ones expire.
        max_cached(tokens: usize) => max_cached;
    }

    /// Finds the issuer's key set and fetches it.
    ///
    /// # Errors
    /// No audience; an issuer or key-set URL that is neither `https` nor `http` on a
    /// loopback host; discovery that fails or names another issuer; a key set that cannot
    /// be fetched (the issuer down), is over 256 KiB or is not a JWK set.
    pub async fn build(mut self) -> Result<JwtAuthenticator, JwtError> {
        let refused = |message: String| JwtError::new(format!("JwtAuthenticator: {message}"));
        let client = self.settings.client(Policy::limited(3)).map_err(refused)?;
        let jwks_uri = self
            .settings
            .locate(&client, "jwks_uri", "key set URL")
            .await
            .map_err(refused)?;
        let keys = fetch::jwks(&client, &jwks_uri, MAX_DOCUMENT_BYTES)
            .await
            .map(|set| Keys::new(&set))
            .map_err(|e| refused(format!("the key set could not be fetched: {}", e.0)))?;
        Ok(JwtAuthenticator {
            inner: Arc::new(Inner {
                jwks_uri,
                refresh_interval: self.refresh_interval,
                verified: self.settings.cache(),
                rules: Rules {
                    issuer: self.settings.issuer,
                    audiences: self.settings.audiences,
                    leeway: self.leeway.as_secs(),
                    tenant_claim: self.settings.tenant_claim,
                },
                client,
                keys: RwLock::new(Arc::new(keys)),
                fetched: Mutex::new(Instant::now()),
            }),
        })
    }
}

impl Authenticator for JwtAuthenticator {
    async fn authenticate(&self, parts: &Parts) -> Result<Option<Principal>, Unauthenticated> {
        match oauth::bearer_token(parts, "expected Authorization: Bearer <JWT>")? {
            Some(token) => self.inner.verify(token).await.map(Some),
            None => Ok(None),
        }
    }
}

impl Inner {
    /// The key set now.
    fn snapshot(&self) -> Arc<Keys> {
        Arc::clone(&self.keys.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The principal `token` names, if it is valid.
    async fn verify(&self, token: &str) -> Result<Principal, Unauthenticated> {
        if !self.verified.is_on() {
            return self.check(token).await.map(|(principal, _)| principal);
        }
        let key = Cache::key(token);
        if let Some(known) = self.verified.get(&key) {
            return known;
        }
        let (principal, expires) = self.check(token).await?;
        self.verified.put(key, Ok(principal.clone()), Some(expires));
        Ok(principal)
    }

    /// The principal `token` names and when it expires (`exp`), if it is valid: its header,
    /// then its signature, then its claims.
    async fn check(&self, token: &str) -> Result<(Principal, u64), Unauthenticated> {
        let header = header::parse(token)?;
        // `header.payload.signature`, split as jsonwebtoken splits it (the header has both
        // dots).
        let (message, signature) = token.rsplit_once('.').ok_or_else(malformed)?;
        let payload = message.rsplit_once('.').ok_or_else(malformed)?.1;
        let kid = header.kid.as_deref();
        let keys = self.keys_for(kid, header.alg).await?;
        let mut bytes = [0; MAX_SIGNATURE_BYTES];
        let signature = match URL_SAFE_NO_PAD.decode_slice(signature, &mut bytes) {
            Ok(length) => &bytes[..length],
            // Too long for any key of an accepted algorithm.
            Err(DecodeSliceError::OutputSliceTooSmall) => return Err(mismatch()),
            Err(DecodeSliceError::DecodeError(_)) => return Err(malformed()),
        };
        // Without a `kid`, any key of the algorithm's type may have signed it.
        if !keys
            .matching(kid, header.alg)
            .any(|key| key.verify(message.as_bytes(), signature))
        {
            return Err(mismatch());
        }
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|payload| String::from_utf8(payload).ok())
            .ok_or_else(malformed)?;
        self.rules.check(&payload)
    }

    /// The key set, once it has a key for `kid` and `algorithm`: fetched again if it has
    /// none and the last fetch is at least `refresh_interval` old.
    async fn keys_for(
        &self,
        kid: Option<&str>,
        algorithm: Algorithm,
    ) -> Result<Arc<Keys>, Unauthenticated> {
        let keys = self.snapshot();
        if keys.matching(kid, algorithm).next().is_some() {
            return Ok(keys);
        }
        let unknown =
            || Unauthenticated::new("the token's signing key is not one of its issuer's keys");
        // One fetch at a time; those who waited look again first.
        let mut fetched = self.fetched.lock().await;
        let keys = self.snapshot();
        if keys.matching(kid, algorithm).next().is_some() {
            return Ok(keys);
        }
        if fetched.elapsed() < self.refresh_interval {
            return Err(unknown());
        }
        *fetched = Instant::now();
        match fetch::jwks(&self.client, &self.jwks_uri, MAX_DOCUMENT_BYTES).await {
            Ok(set) => {
                let keys = Arc::new(Keys::new(&set));
                *self.keys.write().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&keys);
                tracing::debug!(issuer = %self.rules.issuer, keys = keys.len(), "JWT key set fetched again");
                if keys.matching(kid, algorithm).next().is_some() {
                    Ok(keys)
                } else {
                    Err(unknown())
                }
            }
            Err(failed) => {
                tracing::warn!(issuer = %self.rules.issuer, error = %failed.0, "the JWT key set could not be fetched again");
                Err(Unauthenticated::new(
                    "the token's signing key is not known and the issuer's keys could not be fetched",
                ))
            }
        }
    }
}

fn malformed() -> Unauthenticated {
    Unauthenticated::new("the bearer token is not a valid JWT")
}

fn mismatch() -> Unauthenticated {
    Unauthenticated::new("the token's signature does not match")
}
