//! Who may call what: the demo credentials, and the OpenAPI security schemes they answer to.
//!
//! | credential | principal | scopes |
//! |---|---|---|
//! | `Authorization: Bearer demo-admin` | `admin` | every scope the operations require, the read scopes, and `admin` |
//! | `Authorization: Bearer demo-reader` | `reader` | the read scopes: `books:read`, `orders:read`, `payments:read` |
//! | `X-API-Key: demo-key` | `inventory` | none: the inventory operations accept the key itself, or a bearer token with the scope `inventory` |
//!
//! The bookstore does not check credentials itself: [`authenticator`] hands them to
//! [`halo_axum::HaloLayer`], which enforces each operation's OpenAPI `security`
//! requirement before the handler runs (`401` with `WWW-Authenticate` for missing or
//! unknown credentials, `403` for missing scopes) and shows each caller, in discovery, only
//! the operations it may call. Handlers that need to know the caller take
//! [`halo_axum::Principal`].
//!
//! The layer checks only what HALO describes. `GET /openapi.json` (the whole API, every admin
//! operation included) and `GET /metrics` (tool names and use) are not tools, so
//! [`AdminOnly`] guards them with the same authenticator: they answer only callers with
//! [`ADMIN_SCOPE`], which only `demo-admin` holds.
//!
//! With an OAuth 2.0 authorization server (`bookstore --oauth-issuer URL`, or
//! [`Options::oauth`](crate::Options::oauth)), [`callers`] also accepts the JWT access tokens
//! it issues for the bookstore, with the scopes they carry, beside the demo credentials.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::WWW_AUTHENTICATE;
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use halo_axum::{
    Authenticator, EitherAuthenticator, JwtAuthenticator, Principal, StaticAuthenticator,
};
use serde_json::Value;
use utoipa::Modify;
use utoipa::openapi::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::error::ApiError;

/// The bearer token that holds every scope.
pub const ADMIN_TOKEN: &str = "demo-admin";
/// The bearer token that holds only the read scopes.
pub const READER_TOKEN: &str = "demo-reader";
/// The API key accepted by the inventory operations.
pub const API_KEY: &str = "demo-key";
/// The header that carries the API key.
pub const API_KEY_HEADER: &str = "X-API-Key";

/// The name of the bearer security scheme in the OpenAPI document.
pub const BEARER_SCHEME: &str = "bearer";
/// The name of the API key security scheme in the OpenAPI document.
pub const API_KEY_SCHEME: &str = "api_key";

/// The scopes of [`READER_TOKEN`].
pub const READ_SCOPES: &[&str] = &["books:read", "orders:read", "payments:read"];

/// The scope of the routes only administrators may read, `GET /openapi.json` and
/// `GET /metrics` (see [`AdminOnly`]); only [`ADMIN_TOKEN`] holds it.
pub const ADMIN_SCOPE: &str = "admin";

/// Registers the `bearer` (HTTP bearer) and `api_key` (`X-API-Key` header) security schemes.
#[derive(Debug, Clone, Copy)]
pub struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            BEARER_SCHEME,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("opaque")
                    .build(),
            ),
        );
        components.add_security_scheme(
            API_KEY_SCHEME,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                API_KEY_HEADER,
                "The demo key is `demo-key`.",
            ))),
        );
    }
}

/// The demo credentials for the API described by `api`, with scopes read from `api`'s
/// `security` requirements, so that an operation added with a new scope needs no change here:
///
/// - [`ADMIN_TOKEN`] holds every scope any requirement names, [`READ_SCOPES`] and
///   [`ADMIN_SCOPE`];
/// - [`READER_TOKEN`] holds [`READ_SCOPES`];
/// - [`API_KEY`], sent in [`API_KEY_HEADER`], holds the scopes required under the
///   [`API_KEY_SCHEME`] (none today). The layer tells the key from a bearer token, so the
///   reader's token cannot touch stock, while the admin's can through the inventory
///   operations' second alternative, a bearer token with the scope `inventory`.
///
/// ```
/// let auth = bookstore::auth::authenticator(&bookstore::openapi());
/// // Debug output never shows a secret.
/// assert!(!format!("{auth:?}").contains(bookstore::auth::ADMIN_TOKEN));
/// ```
pub fn authenticator(api: &OpenApi) -> StaticAuthenticator {
    let required = required_scopes(api);
    let every_scope: BTreeSet<&str> = required
        .values()
        .flatten()
        .map(String::as_str)
        .chain(READ_SCOPES.iter().copied())
        .chain([ADMIN_SCOPE])
        .collect();
    let key_scopes = required.get(API_KEY_SCHEME).into_iter().flatten();
    let key_header =
        HeaderName::try_from(API_KEY_HEADER).expect("API_KEY_HEADER is a valid header name");
    StaticAuthenticator::new()
        .bearer(
            ADMIN_TOKEN,
            Principal::new("admin").with_scopes(every_scope),
        )
        .bearer(
            READER_TOKEN,
            Principal::new("reader").with_scopes(READ_SCOPES.iter().copied()),
        )
        .api_key(
            key_header,
            API_KEY,
            Principal::new("inventory").with_scopes(key_scopes.map(String::as_str)),
        )
}

/// Who the bookstore accepts: the demo credentials, then an issuer's JWTs when one is
/// configured.
pub type Callers = EitherAuthenticator<StaticAuthenticator, Option<JwtAuthenticator>>;

/// The demo credentials of [`authenticator`] for `api`, then the tokens `issuer` accepts,
/// if any (an expired or foreign JWT is refused with the JWT authenticator's reason).
///
/// ```
/// let callers = bookstore::auth::callers(&bookstore::openapi(), None);
/// # let _ = callers;
/// ```
pub fn callers(api: &OpenApi, issuer: Option<JwtAuthenticator>) -> Callers {
    authenticator(api).or(issuer)
}

/// Lets through only callers with [`ADMIN_SCOPE`], as the HALO layer's authenticator
/// identifies them: the guard of routes HALO does not describe, which the layer does not
/// check. Used as a middleware with [`admin_only`].
///
/// Refusals are problem details (`application/problem+json`): `401` with a `Bearer` challenge
/// (RFC 6750) without credentials or with credentials that are not valid, `403` with an
/// `insufficient_scope` challenge for any other caller.
///
/// ```
/// use axum::{Router, middleware, routing::get};
/// use bookstore::auth::{self, AdminOnly};
///
/// let guard = AdminOnly::new(auth::callers(&bookstore::openapi(), None), "Bookstore");
/// let internal: Router = Router::new()
///     .route("/internal", get(|| async { "for administrators" }))
///     .route_layer(middleware::from_fn_with_state(guard, auth::admin_only));
/// # let _ = internal;
/// ```
#[derive(Debug, Clone)]
pub struct AdminOnly {
    authenticator: Arc<Callers>,
    /// `WWW-Authenticate` without credentials, with credentials that are not valid, and
    /// with too few scopes.
    challenges: Arc<[HeaderValue; 3]>,
}

impl AdminOnly {
    /// A guard that identifies callers with `authenticator` (the HALO layer's, from
    /// [`callers`]) and names `realm` (the API's title, as the layer does) in its
    /// challenges.
    #[must_use]
    pub fn new(authenticator: Callers, realm: &str) -> Self {
        Self {
            authenticator: Arc::new(authenticator),
            challenges: Arc::new(challenges(realm, "")),
        }
    }

    /// The same guard, its challenges pointing at the protected-resource metadata at `url`
    /// (RFC 9728), as the layer's do when the bookstore accepts an issuer's tokens.
    #[must_use]
    pub fn resource_metadata(self, url: &str, realm: &str) -> Self {
        let url: String = url
            .chars()
            .filter(|c| c.is_ascii_graphic() && *c != '"')
            .collect();
        Self {
            challenges: Arc::new(challenges(realm, &format!(", resource_metadata=\"{url}\""))),
            ..self
        }
    }

    /// The administrator who sent the request whose head is `parts`, or the response that
    /// refuses it.
    ///
    /// # Errors
    /// The `401` or `403` problem to answer instead of the route.
    pub async fn check(&self, parts: &Parts) -> Result<Principal, Response> {
        let [missing, invalid, insufficient] = &*self.challenges;
        let (status, detail, challenge) = match self.authenticator.authenticate(parts).await {
            Ok(Some(caller)) if caller.has_scope(ADMIN_SCOPE) => return Ok(caller),
            Ok(Some(_)) => (
                StatusCode::FORBIDDEN,
                format!("only administrators (scope `{ADMIN_SCOPE}`) may read this"),
                insufficient,
            ),
            Ok(None) => (
                StatusCode::UNAUTHORIZED,
                "this route needs an administrator's bearer token".to_owned(),
                missing,
            ),
            Err(rejected) => (StatusCode::UNAUTHORIZED, rejected.to_string(), invalid),
        };
        let mut response = ApiError::new(status, detail).into_response();
        response
            .headers_mut()
            .insert(WWW_AUTHENTICATE, challenge.clone());
        Err(response)
    }
}

/// The `WWW-Authenticate` values of [`AdminOnly`] in `realm`, each ending with `suffix`:
/// without credentials, with credentials that are not valid, with too few scopes.
fn challenges(realm: &str, suffix: &str) -> [HeaderValue; 3] {
    let realm: String = realm
        .chars()
        .filter(|c| *c == ' ' || (c.is_ascii_graphic() && !matches!(c, '"' | '\\')))
        .collect();
    let challenge = |params: &str| {
        HeaderValue::try_from(format!("Bearer realm=\"{realm}\"{params}{suffix}"))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    };
    [
        challenge(""),
        challenge(", error=\"invalid_token\""),
        challenge(&format!(
            ", error=\"insufficient_scope\", scope=\"{ADMIN_SCOPE}\""
        )),
    ]
}

/// The middleware of [`AdminOnly`]: `axum::middleware::from_fn_with_state(guard, admin_only)`.
pub async fn admin_only(State(guard): State<AdminOnly>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    match guard.check(&parts).await {
        Ok(_) => next.run(Request::from_parts(parts, body)).await,
        Err(refused) => refused,
    }
}

/// The scopes named by `api`'s `security` requirements (the document's and every
/// operation's), by security scheme.
fn required_scopes(api: &OpenApi) -> BTreeMap<String, BTreeSet<String>> {
    let document = serde_json::to_value(api).unwrap_or_default();
    let operations = document["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(Value::as_object)
        .flat_map(|item| item.values());
    let mut required: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let requirements = std::iter::once(&document)
        .chain(operations)
        .filter_map(|node| node["security"].as_array())
        .flatten()
        .filter_map(Value::as_object)
        .flatten();
    for (scheme, scopes) in requirements {
        let scopes = scopes.as_array().into_iter().flatten();
        required
            .entry(scheme.clone())
            .or_default()
            .extend(scopes.filter_map(Value::as_str).map(str::to_owned));
    }
    required
}
