//! A small books API behind `JwtAuthenticator` and a real authorization server, for the
//! OAuth tests of halo-axum, halo-client and halo-cli. It needs halo-axum (feature `jwt`),
//! so it cannot live in `halo-tests` (which halo-axum's own tests use): those tests include
//! this one file with `#[path = "../../tests/shared/books_api.rs"] mod books_api;`.
#![allow(dead_code)] // not every test that includes it uses all of it

use axum::Json;
use axum::http::StatusCode;
use halo_axum::{HaloLayer, JwtAuthenticator, Principal, ProtectedResource};
use halo_tests::oidc::AuthorizationServer;
use serde_json::{Value, json};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::{router::OpenApiRouter, routes};

/// List the books (any valid token).
#[utoipa::path(get, path = "/books", security(("oauth" = [])),
    responses((status = 200, body = Value)))]
async fn list_books(caller: Principal) -> Json<Value> {
    Json(json!({"caller": caller.id(), "scopes": caller.scopes().collect::<Vec<_>>()}))
}

/// Add a book.
#[utoipa::path(post, path = "/books", security(("oauth" = ["books:write"])),
    responses((status = 201)))]
async fn add_book() -> StatusCode {
    StatusCode::CREATED
}

struct Schemes;

impl Modify for Schemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "oauth",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}

#[derive(OpenApi)]
#[openapi(info(title = "Books", version = "1.0.0"), modifiers(&Schemes))]
struct Doc;

/// The books API's router and document: `GET /books` for any valid token (answering the
/// caller and its scopes), `POST /books` for `books:write`, both under the bearer scheme
/// `oauth`.
pub(crate) fn books() -> (axum::Router, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(list_books, add_book))
        .split_for_parts()
}

/// The books API on loopback, its resource identifier its own base URL, behind
/// `JwtAuthenticator` for a real authorization server that gives a client no JWT for it
/// unless asked for that resource; that server, and the base URL.
pub(crate) async fn books_api() -> (AuthorizationServer, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let issuer = AuthorizationServer::start_without_default_resource(
        &base,
        &["books:read", "books:write"],
        &["books:read", "books:write"],
    );
    let authenticator = JwtAuthenticator::builder(issuer.issuer())
        .audience(&base)
        .build()
        .await
        .expect("oidc-provider's discovery and keys");
    let (router, api) = books();
    let layer = HaloLayer::builder(api)
        .authenticator(authenticator)
        .protected_resource(ProtectedResource::new(&base, [issuer.issuer()]))
        .build()
        .unwrap();
    tokio::spawn(async move { axum::serve(listener, router.layer(layer)).await });
    (issuer, base)
}
