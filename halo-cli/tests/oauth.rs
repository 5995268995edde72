//! `--oauth-issuer`: the `halo` binary, given only an issuer, a client id and a secret, finds
//! the token endpoint and the API's resource and calls an API that accepts JWTs from a real
//! authorization server (node's `oidc-provider`, `halo_tests::oidc`).
#![allow(missing_docs)]

mod common;

use axum::Json;
use axum::http::StatusCode;
use halo_axum::{HaloLayer, JwtAuthenticator, Principal, ProtectedResource};
use halo_tests::oidc::{AuthorizationServer, CLIENT_ID, CLIENT_SECRET};
use serde_json::{Value, json};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::{router::OpenApiRouter, routes};

use self::common::{Run, halo_with_env};

/// List the books.
#[utoipa::path(get, path = "/books", security(("oauth" = ["books:read"])),
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

/// `halo ARGS` with the client's secret in the environment, off the runtime's threads.
async fn halo(args: Vec<String>) -> Run {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        halo_with_env(&args, &[("HALO_OAUTH_CLIENT_SECRET", CLIENT_SECRET)])
    })
    .await
    .expect("halo runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_is_enough_to_call_a_protected_operation() {
    // The API's resource identifier is its base URL; the authorization server gives no JWT
    // for it unless asked for that resource.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = AuthorizationServer::start_without_default_resource(
        &base,
        &["books:read", "books:write"],
        &["books:read", "books:write"],
    );
    let authenticator = JwtAuthenticator::builder(server.issuer())
        .audience(&base)
        .build()
        .await
        .expect("oidc-provider's discovery and keys");
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(list_books, add_book))
        .split_for_parts();
    let layer = HaloLayer::builder(api)
        .authenticator(authenticator)
        .protected_resource(ProtectedResource::new(&base, [server.issuer()]))
        .build()
        .unwrap();
    tokio::spawn(async move { axum::serve(listener, router.layer(layer)).await });
    let issuer = server.issuer().to_owned();
    let flags = |more: &[&str]| -> Vec<String> {
        ["--oauth-issuer", &issuer, "--oauth-client-id", CLIENT_ID]
            .iter()
            .chain(more)
            .map(|arg| (*arg).to_owned())
            .collect()
    };

    let run = halo(flags(&[
        "--oauth-scope",
        "books:read",
        "call",
        &base,
        "/books",
        "-X",
        "GET",
        "--json",
    ]))
    .await
    .expect(0);
    assert_eq!(
        run.json(),
        json!({"caller": CLIENT_ID, "scopes": ["books:read"]}),
        "{run:#?}"
    );
    assert!(!run.stderr.contains(CLIENT_SECRET), "{run:#?}");

    // The resource named on the command line: the same, without the API's metadata.
    let run = halo(flags(&[
        "--oauth-resource",
        &base,
        "--oauth-scope",
        "books:write",
        "call",
        &base,
        "/books",
        "-X",
        "POST",
    ]))
    .await;
    assert_eq!(run.code, 0, "{run:#?}");

    // `--oauth-issuer` instead of `--oauth-token-url`, never both.
    let token_url = format!("{issuer}/token");
    let mut both = flags(&["--oauth-token-url", &token_url]);
    both.extend(["discover".to_owned(), base.clone()]);
    let run = halo(both).await.expect(2);
    assert!(run.stderr.contains("cannot be used with"), "{run:#?}");
    // An issuer in clear text is refused before anything is sent.
    let run = halo(vec![
        "--oauth-issuer".into(),
        "http://id.example".into(),
        "--oauth-client-id".into(),
        CLIENT_ID.into(),
        "discover".into(),
        base.clone(),
    ])
    .await
    .expect(2);
    assert!(run.stderr.contains("https"), "{run:#?}");
}
