//! Who is calling an HTTP API: the [`Authenticator`] an application plugs in, the
//! [`Principal`] it returns, and a built-in [`StaticAuthenticator`] for tokens and keys known
//! in advance; with the feature `jwt`, `JwtAuthenticator` checks bearer JWTs against an
//! issuer's published keys, with the feature `introspection`, `IntrospectionAuthenticator`
//! asks the issuer about opaque tokens (RFC 7662); [`ProtectedResource`] describes the API to
//! OAuth clients (RFC 9728) and [`Challenges`] are the `WWW-Authenticate` answers its
//! security schemes call for.
//!
//! This crate knows nothing of a web framework: an authenticator reads a request's head
//! ([`http::request::Parts`]). halo-axum's layer uses it to scope discovery to what the
//! caller may call and to check every call against the operation's OpenAPI `security`
//! before the handler runs (`401` without valid credentials, `403` without the scopes); the
//! feature `axum` makes [`Principal`] an extractor (`Principal` answers `401` when the
//! request was anonymous; `Option<Principal>` never fails) and [`Unauthenticated`] a
//! response.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod challenge;
mod either;
#[cfg(feature = "axum")]
mod extract;
#[cfg(feature = "introspection")]
mod introspection;
#[cfg(feature = "jwt")]
mod jwt;
#[cfg(any(feature = "jwt", feature = "introspection"))]
mod oauth;
mod resource;
mod static_keys;

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;

use http::request::Parts;

pub use self::challenge::Challenges;
pub use self::either::EitherAuthenticator;
#[cfg(feature = "introspection")]
#[cfg_attr(docsrs, doc(cfg(feature = "introspection")))]
pub use self::introspection::{
    IntrospectionAuthenticator, IntrospectionAuthenticatorBuilder, IntrospectionError,
};
#[cfg(feature = "jwt")]
#[cfg_attr(docsrs, doc(cfg(feature = "jwt")))]
pub use self::jwt::{JwtAuthenticator, JwtAuthenticatorBuilder, JwtError};
pub use self::resource::ProtectedResource;
pub use self::static_keys::StaticAuthenticator;

/// An authenticated caller: an id and the scopes granted to it.
///
/// It is also an extractor: a handler behind the layer takes `Principal` (answering `401`
/// when the request was anonymous) or `Option<Principal>`.
///
/// ```
/// use halo_auth::Principal;
///
/// let admin = Principal::new("admin").with_scopes(["books:write", "admin"]);
/// assert!(admin.has_scope("admin"));
/// assert!(!admin.has_scope("payments:write"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    id: String,
    scopes: BTreeSet<String>,
    scheme: Option<Scheme>,
    tenant: Option<String>,
}

/// How a caller proved who it is. An operation whose OpenAPI `security` names particular
/// schemes admits a principal only through one of them (a principal without a scheme passes
/// any).
///
/// ```
/// use halo_auth::{Principal, Scheme};
/// use http::HeaderName;
///
/// let service = Principal::new("billing")
///     .authenticated_by(Scheme::ApiKey(HeaderName::from_static("x-api-key")));
/// assert_eq!(service.scheme(), Some(&Scheme::ApiKey(HeaderName::from_static("x-api-key"))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scheme {
    /// `Authorization: Bearer` (OpenAPI `http`/`bearer`, and OAuth 2 or OpenID Connect
    /// access tokens).
    Bearer,
    /// `Authorization: Basic` (OpenAPI `http`/`basic`).
    Basic,
    /// A key in this request header (OpenAPI `apiKey` in `header`).
    ApiKey(http::HeaderName),
}

impl Principal {
    /// A caller with no scopes.
    #[must_use]
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            scopes: BTreeSet::new(),
            scheme: None,
            tenant: None,
        }
    }

    /// The same caller, as a member of `tenant` (the organisation or account it acts for),
    /// which per-tenant rate limits count by.
    ///
    /// ```
    /// use halo_auth::Principal;
    ///
    /// let agent = Principal::new("reporting-agent").in_tenant("acme");
    /// assert_eq!(agent.tenant(), Some("acme"));
    /// assert_eq!(Principal::new("solo").tenant(), None);
    /// ```
    #[must_use]
    pub fn in_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }

    /// The tenant the caller acts for, when the authenticator named one.
    #[inline]
    #[must_use]
    pub fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    /// The same caller, marked as authenticated by `scheme`.
    #[must_use]
    pub fn authenticated_by(mut self, scheme: Scheme) -> Self {
        self.scheme = Some(scheme);
        self
    }

    /// How the caller authenticated, when the authenticator said.
    #[inline]
    #[must_use]
    pub fn scheme(&self) -> Option<&Scheme> {
        self.scheme.as_ref()
    }

    /// The same caller, granted `scopes` as well.
    #[must_use]
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The caller's id, as the authenticator named it.
    #[inline]
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The scopes granted to the caller.
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scopes.iter().map(String::as_str)
    }

    /// Whether the caller was granted `scope`.
    #[inline]
    #[must_use]
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// The principal as JSON, for a store shared by replicas (it holds no secret):
    /// `{"id", "scopes", "scheme", "tenant"}`, the scheme `"bearer"`, `"basic"` or the
    /// header of an API key.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let scheme = self.scheme.as_ref().map(|scheme| match scheme {
            Scheme::Bearer => serde_json::json!("bearer"),
            Scheme::Basic => serde_json::json!("basic"),
            Scheme::ApiKey(header) => serde_json::json!({"api_key": header.as_str()}),
        });
        serde_json::json!({"id": self.id, "scopes": self.scopes, "scheme": scheme,
            "tenant": self.tenant})
    }

    /// A principal read back from [`to_json`](Self::to_json); `None` when damaged.
    #[must_use]
    pub fn from_json(json: &serde_json::Value) -> Option<Self> {
        let mut principal = Self::new(json.get("id")?.as_str()?);
        let scopes = json.get("scopes")?.as_array()?;
        for scope in scopes {
            principal.scopes.insert(scope.as_str()?.to_owned());
        }
        principal.scheme = match json.get("scheme") {
            None | Some(serde_json::Value::Null) => None,
            Some(scheme) => Some(match scheme.as_str() {
                Some("bearer") => Scheme::Bearer,
                Some("basic") => Scheme::Basic,
                _ => {
                    let header = scheme.get("api_key")?.as_str()?;
                    Scheme::ApiKey(http::HeaderName::from_bytes(header.as_bytes()).ok()?)
                }
            }),
        };
        principal.tenant = json
            .get("tenant")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        Some(principal)
    }
}

/// Credentials were presented but are not valid (unknown, expired, malformed).
///
/// The message is sent to the caller in the `401` problem body, so it must not contain the
/// credential itself.
///
/// ```
/// use halo_auth::Unauthenticated;
///
/// let error = Unauthenticated::new("the token has expired");
/// assert_eq!(error.to_string(), "the token has expired");
/// ```
#[derive(Debug, Clone)]
pub struct Unauthenticated {
    message: String,
}

impl Unauthenticated {
    /// A rejection explained by `message`.
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for Unauthenticated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Unauthenticated {}

/// Identifies the caller of a request.
///
/// Return `Ok(Some(principal))` for valid credentials, `Ok(None)` when the request carries
/// none (an anonymous caller, who may still call operations without `security`), and
/// `Err(Unauthenticated)` when it carries credentials that are not valid.
///
/// ```
/// use halo_auth::{Authenticator, Principal, Unauthenticated};
/// use http::request::Parts;
///
/// /// Accepts `Authorization: Bearer <user>.<signature>` after checking the signature.
/// struct Signed;
///
/// impl Authenticator for Signed {
///     async fn authenticate(&self, parts: &Parts) -> Result<Option<Principal>, Unauthenticated> {
///         let Some(value) = parts.headers.get(http::header::AUTHORIZATION) else {
///             return Ok(None);
///         };
///         let token = value
///             .to_str()
///             .ok()
///             .and_then(|v| v.strip_prefix("Bearer "))
///             .ok_or_else(|| Unauthenticated::new("expected a bearer token"))?;
///         match token.split_once('.') {
///             Some((user, "valid-signature")) => Ok(Some(Principal::new(user))),
///             _ => Err(Unauthenticated::new("the token's signature does not match")),
///         }
///     }
/// }
/// ```
pub trait Authenticator: Send + Sync + 'static {
    /// Who sent the request whose head is `parts`.
    fn authenticate(
        &self,
        parts: &Parts,
    ) -> impl Future<Output = Result<Option<Principal>, Unauthenticated>> + Send;

    /// This authenticator, then `other` for what this one does not accept: see
    /// [`EitherAuthenticator`].
    ///
    /// ```
    /// use halo_auth::{Authenticator, Principal, StaticAuthenticator};
    ///
    /// let demo = StaticAuthenticator::new().bearer("demo-reader", Principal::new("reader"));
    /// let services = StaticAuthenticator::new().bearer("svc-token", Principal::new("billing"));
    /// let layer_authenticator = demo.or(services);
    /// # let _ = layer_authenticator;
    /// ```
    fn or<B: Authenticator>(self, other: B) -> EitherAuthenticator<Self, B>
    where
        Self: Sized,
    {
        EitherAuthenticator::new(self, other)
    }
}
