//! Who is calling: the [`Authenticator`] an application plugs in, the [`Principal`] it
//! returns, and a built-in [`StaticAuthenticator`] for tokens and keys known in advance;
//! with the feature `jwt`, `JwtAuthenticator` checks bearer JWTs against an issuer's published
//! keys, with the feature `introspection`, `IntrospectionAuthenticator` asks the issuer about
//! opaque tokens (RFC 7662), and [`ProtectedResource`] describes the API to OAuth clients
//! (RFC 9728).
//!
//! With an authenticator set on [`HaloBuilder::authenticator`](crate::HaloBuilder::authenticator),
//! the layer scopes discovery to what the caller may call and checks every call of a
//! described operation against the operation's OpenAPI `security` requirements before the
//! handler runs: `401` without valid credentials, `403` without the scopes. Handlers read the
//! caller with the [`Principal`] extractor.

mod challenge;
mod either;
mod gate;
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
use std::pin::Pin;

use axum::extract::{FromRequestParts, OptionalFromRequestParts};
use axum::response::{IntoResponse, Response};
use http::request::Parts;

pub(crate) use self::challenge::Challenges;
pub use self::either::EitherAuthenticator;
pub(crate) use self::gate::Gate;
#[cfg(feature = "introspection")]
pub use self::introspection::{
    IntrospectionAuthenticator, IntrospectionAuthenticatorBuilder, IntrospectionError,
};
#[cfg(feature = "jwt")]
pub use self::jwt::{JwtAuthenticator, JwtAuthenticatorBuilder, JwtError};
pub use self::resource::ProtectedResource;
pub use self::static_keys::StaticAuthenticator;
use crate::problem;

/// An authenticated caller: an id and the scopes granted to it.
///
/// It is also an extractor: a handler behind the layer takes `Principal` (answering `401`
/// when the request was anonymous) or `Option<Principal>`.
///
/// ```
/// use halo_axum::Principal;
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
/// use halo_axum::{Principal, Scheme};
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
    /// use halo_axum::Principal;
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
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The scopes granted to the caller.
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scopes.iter().map(String::as_str)
    }

    /// Whether the caller was granted `scope`.
    #[must_use]
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// The principal as JSON, for a store shared by replicas (it holds no secret):
    /// `{"id", "scopes", "scheme", "tenant"}`, the scheme `"bearer"`, `"basic"` or the
    /// header of an API key.
    #[cfg(feature = "redis")]
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let scheme = self.scheme.as_ref().map(|scheme| match scheme {
            Scheme::Bearer => serde_json::json!("bearer"),
            Scheme::Basic => serde_json::json!("basic"),
            Scheme::ApiKey(header) => serde_json::json!({"api_key": header.as_str()}),
        });
        serde_json::json!({"id": self.id, "scopes": self.scopes, "scheme": scheme,
            "tenant": self.tenant})
    }

    /// A principal read back from [`to_json`](Self::to_json); `None` when damaged.
    #[cfg(feature = "redis")]
    pub(crate) fn from_json(json: &serde_json::Value) -> Option<Self> {
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

impl<S: Sync> FromRequestParts<S> for Principal {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Self>().cloned().ok_or_else(|| {
            problem::response(
                http::StatusCode::UNAUTHORIZED,
                "this operation needs credentials",
            )
        })
    }
}

impl<S: Sync> OptionalFromRequestParts<S> for Principal {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &S,
    ) -> Result<Option<Self>, Self::Rejection> {
        Ok(parts.extensions.get::<Self>().cloned())
    }
}

/// Credentials were presented but are not valid (unknown, expired, malformed).
///
/// The message is sent to the caller in the `401` problem body, so it must not contain the
/// credential itself.
///
/// ```
/// use halo_axum::Unauthenticated;
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

impl IntoResponse for Unauthenticated {
    fn into_response(self) -> Response {
        problem::response(http::StatusCode::UNAUTHORIZED, self.message)
    }
}

/// Identifies the caller of a request.
///
/// Return `Ok(Some(principal))` for valid credentials, `Ok(None)` when the request carries
/// none (an anonymous caller, who may still call operations without `security`), and
/// `Err(Unauthenticated)` when it carries credentials that are not valid.
///
/// ```
/// use halo_axum::{Authenticator, Principal, Unauthenticated};
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
    /// use halo_axum::{Authenticator, Principal, StaticAuthenticator};
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

/// The future of a type-erased authenticator.
pub(crate) type Identified<'a> =
    Pin<Box<dyn Future<Output = Result<Option<Principal>, Unauthenticated>> + Send + 'a>>;

/// An [`Authenticator`] behind a pointer.
pub(crate) trait DynAuthenticator: Send + Sync + 'static {
    fn identify<'a>(&'a self, parts: &'a Parts) -> Identified<'a>;
}

impl<A: Authenticator> DynAuthenticator for A {
    fn identify<'a>(&'a self, parts: &'a Parts) -> Identified<'a> {
        Box::pin(self.authenticate(parts))
    }
}
