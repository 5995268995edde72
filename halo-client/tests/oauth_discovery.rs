//! OAuth discovery through real HTTP: a client that knows only an issuer, its id and its
//! secret finds the token endpoint (RFC 8414 / OpenID Connect discovery) and the API's
//! resource (RFC 9728 `resource_metadata`, RFC 8707 `resource`) against a real authorization
//! server (node's `oidc-provider`, `halo_tests::oidc`) and a halo-axum API with
//! `JwtAuthenticator`; and refuses metadata that would send its secret elsewhere or its
//! tokens to another API.
#![allow(missing_docs)]

use crate::books_api;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Json;
use axum::extract::State;
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, Method as HttpMethod, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use books_api::books_api;
use halo_client::{Client, ClientCredentials, Credential, Method};
use halo_tests::TestServer;
use halo_tests::oidc::{CLIENT_ID, CLIENT_SECRET};
use serde_json::{Value, json};

fn client(base: &str, oauth: ClientCredentials) -> Client {
    Client::builder(base)
        .credential(Credential::from(oauth))
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_issuer_an_id_and_a_secret_are_enough() {
    let (issuer, base) = books_api().await;
    let oauth = ClientCredentials::from_issuer(issuer.issuer(), CLIENT_ID, CLIENT_SECRET).unwrap();
    let books = client(&base, oauth);
    // The first token (for no resource) is opaque and refused; the challenge's metadata
    // names the resource, and a token for it is a JWT the API accepts.
    let listed = books
        .invoke("/books", Method::GET, json!({}))
        .await
        .unwrap();
    assert_eq!(listed.to_value()["caller"], CLIENT_ID);
    let again = books
        .invoke("/books", Method::GET, json!({}))
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    // Without the scope a write needs, the API does not even describe the write.
    let refused = books
        .invoke("/books", Method::POST, json!({}))
        .await
        .unwrap_err();
    assert!(refused.is_not_described(), "{refused}");

    // With the scope, and the resource named by the user: no discovery of it needed.
    let oauth = ClientCredentials::from_issuer(issuer.issuer(), CLIENT_ID, CLIENT_SECRET)
        .unwrap()
        .scopes(["books:write"])
        .resource(&base);
    let writer = client(&base, oauth);
    let added = writer
        .invoke("/books", Method::POST, json!({}))
        .await
        .unwrap();
    assert_eq!(added.status(), StatusCode::CREATED);

    // A resource the authorization server does not know: its refusal (oidc-provider's
    // `server_error`, a `500`, for this one), without the secret.
    let oauth = ClientCredentials::from_issuer(issuer.issuer(), CLIENT_ID, CLIENT_SECRET)
        .unwrap()
        .resource("https://elsewhere.halo.test");
    let error = client(&base, oauth)
        .invoke("/books", Method::GET, json!({}))
        .await
        .unwrap_err();
    assert!(error.is_credentials(), "{error}");
    assert!(error.to_string().contains("OAuth token request"), "{error}");
    assert!(!error.to_string().contains(CLIENT_SECRET), "{error}");
}

/// A stand-in for an authorization server or an API: it records every request, serves the
/// documents it is given, issues a token at `POST /token`, and answers anything else with a
/// `401` naming its `resource_metadata`, when it has one.
#[derive(Default)]
struct Fake {
    /// `METHOD path Authorization body` of each request.
    seen: Mutex<Vec<String>>,
    /// `GET` path → document.
    documents: Mutex<HashMap<String, Value>>,
    /// The challenge's `resource_metadata`.
    metadata: Mutex<Option<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn fake(
    State(fake): State<Arc<Fake>>,
    method: HttpMethod,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> Response {
    let authorization = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    lock(&fake.seen).push(format!("{method} {} {authorization} {body}", uri.path()));
    if method == HttpMethod::POST && uri.path() == "/token" {
        let granted = json!({"access_token": "t0k3n", "token_type": "Bearer", "expires_in": 300});
        return Json(granted).into_response();
    }
    if method == HttpMethod::GET
        && let Some(document) = lock(&fake.documents).get(uri.path())
    {
        return Json(document.clone()).into_response();
    }
    match lock(&fake.metadata).as_ref() {
        Some(url) => (
            StatusCode::UNAUTHORIZED,
            [(
                WWW_AUTHENTICATE,
                format!(r#"Bearer realm="fake", error="invalid_token", resource_metadata="{url}""#),
            )],
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn spawn_fake() -> (TestServer, Arc<Fake>) {
    let state = Arc::new(Fake::default());
    let router = axum::Router::new()
        .fallback(fake)
        .with_state(Arc::clone(&state));
    (halo_tests::spawn(router).await, state)
}

/// An issuer with OpenID Connect discovery only (RFC 8414's path is a `404`) whose
/// configuration names `named` as its issuer (`None`: itself).
async fn fake_issuer(named: Option<&str>) -> (TestServer, Arc<Fake>) {
    let (server, state) = spawn_fake().await;
    let configuration = json!({
        "issuer": named.map_or_else(|| server.base_url(), str::to_owned),
        "token_endpoint": server.url("/token"),
    });
    lock(&state.documents).insert("/.well-known/openid-configuration".into(), configuration);
    (server, state)
}

/// An API whose every answer is a `401` pointing at its metadata, which is `document`.
async fn fake_api(document: impl FnOnce(&str) -> Value) -> (TestServer, Arc<Fake>) {
    let (server, state) = spawn_fake().await;
    let path = "/.well-known/oauth-protected-resource";
    lock(&state.documents).insert(path.into(), document(&server.base_url()));
    *lock(&state.metadata) = Some(server.url(path));
    (server, state)
}

#[tokio::test]
async fn an_api_naming_another_issuer_never_gets_the_secret_sent_there() {
    let (ours, our_log) = fake_issuer(None).await;
    let (theirs, their_log) = fake_issuer(None).await;
    let their_issuer = theirs.base_url();
    let (api, _) =
        fake_api(|base| json!({"resource": base, "authorization_servers": [their_issuer]})).await;
    let oauth = ClientCredentials::from_issuer(ours.base_url(), "agent", "s3cret").unwrap();
    let error = client(&api.base_url(), oauth)
        .discover(&[])
        .await
        .unwrap_err();
    assert!(error.is_credentials(), "{error}");
    let message = error.to_string();
    assert!(
        message.contains(&format!(
            "names the authorization servers `{}`, not the configured issuer `{}`",
            theirs.base_url(),
            ours.base_url()
        )),
        "{message}"
    );
    assert!(
        !message.contains("s3cret") && !message.contains("t0k3n"),
        "{message}"
    );
    assert!(
        lock(&their_log.seen).is_empty(),
        "{:?}",
        lock(&their_log.seen)
    );
    // Ours: RFC 8414's path (404), then OpenID Connect's, then one token request, with no
    // resource (none was known yet).
    let seen = lock(&our_log.seen).clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen[0].starts_with("GET /.well-known/oauth-authorization-server - "));
    assert!(seen[1].starts_with("GET /.well-known/openid-configuration - "));
    assert!(seen[2].starts_with("POST /token Basic "), "{seen:?}");
    assert!(
        seen[2].ends_with(" grant_type=client_credentials"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn metadata_for_another_resource_is_not_used() {
    let (ours, our_log) = fake_issuer(None).await;
    let issuer = ours.base_url();
    for resource in [
        |_: &str| "https://elsewhere.example".to_owned(),
        |base: &str| format!("{base}/other"),
        |base: &str| base.replace("127.0.0.1", "localhost"),
    ] {
        let (api, _) = fake_api(
            |base| json!({"resource": resource(base), "authorization_servers": [&issuer]}),
        )
        .await;
        let oauth = ClientCredentials::from_issuer(&issuer, "agent", "s3cret").unwrap();
        let error = client(&api.base_url(), oauth)
            .invoke("/books", Method::GET, json!({}))
            .await
            .unwrap_err();
        assert!(error.is_credentials(), "{error}");
        assert!(error.to_string().contains("RFC 9728"), "{error}");
    }
    // No token was ever asked for a resource.
    assert!(
        lock(&our_log.seen)
            .iter()
            .all(|seen| !seen.contains("resource="))
    );
}

#[tokio::test]
async fn the_resource_is_learned_and_asked_for() {
    let (ours, our_log) = fake_issuer(None).await;
    let issuer = ours.base_url();
    let (api, api_log) = fake_api(|base| {
        json!({"resource": format!("{base}/"), "authorization_servers": ["https://other.example", &issuer]})
    })
    .await;
    let oauth = ClientCredentials::from_issuer(&issuer, "agent", "s3cret").unwrap();
    let error = client(&api.base_url(), oauth)
        .discover(&[])
        .await
        .unwrap_err();
    // The fake refuses every token: after one repeat, its 401 is the answer.
    assert_eq!(error.status(), Some(StatusCode::UNAUTHORIZED), "{error}");
    let tokens: Vec<String> = lock(&our_log.seen)
        .iter()
        .filter(|seen| seen.starts_with("POST /token"))
        .cloned()
        .collect();
    let resource = format!(
        "&resource={}%2F",
        api.base_url().replace(':', "%3A").replace('/', "%2F")
    );
    assert_eq!(tokens.len(), 2, "{tokens:?}");
    assert!(!tokens[0].contains("resource="), "{tokens:?}");
    assert!(tokens[1].ends_with(&resource), "{tokens:?} {resource}");
    // The API got the token twice, the metadata was read once.
    let seen = lock(&api_log.seen).clone();
    assert_eq!(
        seen.iter().filter(|s| s.contains("Bearer t0k3n")).count(),
        2,
        "{seen:?}"
    );
}

#[tokio::test]
async fn issuer_metadata_must_name_the_issuer() {
    let (impostor, log) = fake_issuer(Some("https://id.example")).await;
    let (api, _) = fake_api(|base| json!({"resource": base, "authorization_servers": []})).await;
    let oauth = ClientCredentials::from_issuer(impostor.base_url(), "agent", "s3cret").unwrap();
    let error = client(&api.base_url(), oauth)
        .discover(&[])
        .await
        .unwrap_err();
    assert!(error.is_credentials(), "{error}");
    assert!(
        error
            .to_string()
            .contains("names the issuer `https://id.example`, not the configured one"),
        "{error}"
    );
    // The secret never went to the token endpoint it named.
    assert!(
        lock(&log.seen).iter().all(|seen| !seen.starts_with("POST")),
        "{:?}",
        lock(&log.seen)
    );

    // Nor to a token endpoint in clear text (named in RFC 8414 metadata), nor anywhere
    // when the issuer has no metadata.
    let (plain, plain_log) = spawn_fake().await;
    lock(&plain_log.documents).insert(
        "/.well-known/oauth-authorization-server".into(),
        json!({"issuer": plain.base_url(), "token_endpoint": "http://id.example/token"}),
    );
    let (bare, _) = spawn_fake().await;
    for (issuer, why) in [
        (plain.base_url(), "its token_endpoint must be https"),
        (
            bare.base_url(),
            "no metadata (/.well-known/oauth-authorization-server answered 404",
        ),
    ] {
        let oauth = ClientCredentials::from_issuer(issuer, "agent", "s3cret").unwrap();
        let error = client(&api.base_url(), oauth)
            .discover(&[])
            .await
            .unwrap_err();
        assert!(error.is_credentials(), "{error}");
        assert!(error.to_string().contains(why), "{error}");
    }
    // An issuer in clear text is refused at once.
    let error = ClientCredentials::from_issuer("http://id.example", "agent", "s3cret").unwrap_err();
    assert!(error.is_credentials(), "{error}");
}
