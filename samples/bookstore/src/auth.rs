//! The sample's own credential checks: demo bearer tokens with scopes, and one demo API key.
//!
//! | credential | grants |
//! |---|---|
//! | `Authorization: Bearer demo-admin` | every scope |
//! | `Authorization: Bearer demo-reader` | the read scopes: `books:read`, `orders:read`, `payments:read` |
//! | `X-API-Key: demo-key` | the inventory operations |
//!
//! Missing or unknown credentials answer `401` with a `WWW-Authenticate` challenge; a token
//! without the scope an operation needs answers `403`. Both bodies are problem details.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
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

const READ_SCOPES: &[&str] = &["books:read", "orders:read", "payments:read"];

const BEARER_CHALLENGE: &str = r#"Bearer realm="bookstore""#;
const INVALID_TOKEN_CHALLENGE: &str = r#"Bearer realm="bookstore", error="invalid_token""#;
const API_KEY_CHALLENGE: &str = r#"ApiKey realm="bookstore", header="X-API-Key""#;

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

/// A caller authenticated with a bearer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bearer {
    admin: bool,
}

impl Bearer {
    /// Whether this caller holds `scope`.
    #[must_use]
    pub fn has_scope(&self, scope: &str) -> bool {
        self.admin || READ_SCOPES.contains(&scope)
    }

    /// `Ok` when this caller holds `scope`, a `403` problem otherwise.
    ///
    /// # Errors
    /// [`ApiError`] `403 Forbidden` naming the missing scope.
    pub fn require(&self, scope: &'static str) -> Result<(), ApiError> {
        if self.has_scope(scope) {
            return Ok(());
        }
        Err(ApiError::forbidden(
            r#"Bearer realm="bookstore", error="insufficient_scope""#,
            format!("this operation needs the scope `{scope}`, which the token does not grant"),
        ))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Bearer {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let Some(value) = parts.headers.get(AUTHORIZATION) else {
            return Err(ApiError::unauthorized(
                BEARER_CHALLENGE,
                "send `Authorization: Bearer <token>`",
            ));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|value| value.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        match token {
            Some(ADMIN_TOKEN) => Ok(Self { admin: true }),
            Some(READER_TOKEN) => Ok(Self { admin: false }),
            Some(_) => Err(ApiError::unauthorized(
                INVALID_TOKEN_CHALLENGE,
                "the bearer token is not valid",
            )),
            None => Err(ApiError::unauthorized(
                BEARER_CHALLENGE,
                "the Authorization header must use the Bearer scheme",
            )),
        }
    }
}

/// A caller authenticated with the `X-API-Key` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiKeyCaller;

impl<S: Send + Sync> FromRequestParts<S> for ApiKeyCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        match parts
            .headers
            .get(API_KEY_HEADER)
            .map(|value| value.as_bytes())
        {
            Some(key) if key == API_KEY.as_bytes() => Ok(Self),
            Some(_) => Err(ApiError::unauthorized(
                API_KEY_CHALLENGE,
                "the API key is not valid",
            )),
            None => Err(ApiError::unauthorized(
                API_KEY_CHALLENGE,
                "send the header `X-API-Key: <key>`",
            )),
        }
    }
}
