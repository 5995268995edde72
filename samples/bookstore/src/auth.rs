//! Who may call what: the demo credentials, and the OpenAPI security schemes they answer to.
//!
//! | credential | principal | scopes |
//! |---|---|---|
//! | `Authorization: Bearer demo-admin` | `admin` | every scope the operations require, and the read scopes |
//! | `Authorization: Bearer demo-reader` | `reader` | the read scopes: `books:read`, `orders:read`, `payments:read` |
//! | `X-API-Key: demo-key` | `inventory` | none: the inventory operations accept the key itself, or a bearer token with the scope `inventory` |
//!
//! The bookstore does not check credentials itself: [`authenticator`] hands them to
//! [`halo_axum::HaloLayer`], which enforces each operation's OpenAPI `security`
//! requirement before the handler runs (`401` with `WWW-Authenticate` for missing or
//! unknown credentials, `403` for missing scopes) and shows each caller, in discovery, only
//! the operations it may call. Handlers that need to know the caller take
//! [`halo_axum::Principal`].

use std::collections::{BTreeMap, BTreeSet};

use axum::http::HeaderName;
use halo_axum::{Principal, StaticAuthenticator};
use serde_json::Value;
use utoipa::Modify;
use utoipa::openapi::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};

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
/// - [`ADMIN_TOKEN`] holds every scope any requirement names, and [`READ_SCOPES`];
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
