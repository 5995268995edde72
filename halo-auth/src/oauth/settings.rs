//! The settings that both OAuth authenticators' builders take alike, and their checks at
//! build: [`Settings`], held by `JwtAuthenticatorBuilder` and
//! `IntrospectionAuthenticatorBuilder`, whose setters [`settings_setters!`] writes.

use std::time::Duration;

use reqwest::redirect::Policy;

use super::MAX_DOCUMENT_BYTES;
use super::cache::Cache;
use super::fetch;

/// What an authenticator's builder is told about the issuer, the audiences, the tenant
/// claim, the cache of verdicts and the requests to the issuer. The defaults: no audience
/// (one is required), no tenant claim, verdicts kept 60 s, at most 10,000 of them, a 10 s
/// deadline per request, the issuer's URL (`jwks_uri`, `introspection_endpoint`) found by
/// discovery.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) issuer: String,
    pub(crate) audiences: Vec<String>,
    pub(crate) tenant_claim: Option<String>,
    pub(crate) cache_ttl: Duration,
    pub(crate) max_cached: usize,
    pub(crate) timeout: Duration,
    /// The issuer's URL the authenticator uses, when given rather than discovered.
    pub(crate) url: Option<String>,
}

/// Public setters of a builder that holds [`Settings`] in its field `settings`: each
/// `name(arg: Type) => setting;` (after its docs) is `pub fn name(mut self, arg: Type) ->
/// Self`, handing `arg` to [`Settings`]'s method `setting`. The builders keep their own
/// docs, since what a setting means depends on the authenticator.
macro_rules! settings_setters {
    ($($(#[$doc:meta])* $name:ident($arg:ident: $type:ty) => $setting:ident;)+) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $arg: $type) -> Self {
            self.settings.$setting($arg);
            self
        }
    )+};
}
pub(crate) use settings_setters;

impl Settings {
    /// The defaults, for tokens issued by `issuer`.
    pub(crate) fn new(issuer: String) -> Self {
        Self {
            issuer,
            audiences: Vec::new(),
            tenant_claim: None,
            cache_ttl: Duration::from_secs(60),
            max_cached: 10_000,
            timeout: Duration::from_secs(10),
            url: None,
        }
    }

    /// One more audience the tokens may be for.
    pub(crate) fn audience(&mut self, audience: impl Into<String>) {
        self.audiences.push(audience.into());
    }

    /// The claim that names the caller's tenant.
    pub(crate) fn tenant_claim(&mut self, claim: impl Into<String>) {
        self.tenant_claim = Some(claim.into());
    }

    /// How long a verdict is kept.
    pub(crate) fn cache_ttl(&mut self, ttl: Duration) {
        self.cache_ttl = ttl;
    }

    /// How many verdicts are kept at most.
    pub(crate) fn max_cached(&mut self, tokens: usize) {
        self.max_cached = tokens;
    }

    /// The deadline of each request to the issuer.
    pub(crate) fn timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// The issuer's URL to use instead of the one its metadata names.
    pub(crate) fn url(&mut self, url: impl Into<String>) {
        self.url = Some(url.into());
    }

    /// The HTTP client for the issuer, once the settings can work: an audience named, and an
    /// issuer that is `https` or `http` on loopback. The error is the message, without the
    /// authenticator's name.
    pub(crate) fn client(&self, redirect: Policy) -> Result<reqwest::Client, String> {
        if self.audiences.is_empty() {
            return Err("name the audience the tokens must be for (audience(...))".to_owned());
        }
        if !fetch::is_trusted(&self.issuer) {
            return Err(format!(
                "the issuer {} is neither an https URL nor http on loopback",
                self.issuer
            ));
        }
        reqwest::Client::builder()
            .timeout(self.timeout)
            .connect_timeout(self.timeout)
            .redirect(redirect)
            .build()
            .map_err(|e| format!("HTTP client: {e}"))
    }

    /// The issuer's URL the authenticator uses: the one given, when it is `https` or `http`
    /// on loopback (`what` names it in the error), else the `field` of the issuer's
    /// metadata. The error is the message, without the authenticator's name.
    pub(crate) async fn locate(
        &mut self,
        client: &reqwest::Client,
        field: &str,
        what: &str,
    ) -> Result<String, String> {
        match self.url.take() {
            Some(url) if fetch::is_trusted(&url) => Ok(url),
            Some(url) => Err(format!(
                "the {what} {url} is neither https nor http on loopback"
            )),
            None => fetch::discover(client, &self.issuer, field, MAX_DOCUMENT_BYTES)
                .await
                .map_err(|e| format!("discovery failed: {}", e.0)),
        }
    }

    /// The cache of verdicts these settings ask for.
    pub(crate) fn cache(&self) -> Cache {
        Cache::new(self.cache_ttl, self.max_cached)
    }
}
