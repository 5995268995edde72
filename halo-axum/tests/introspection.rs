//! `IntrospectionAuthenticator` against an issuer over HTTP on loopback: the RFC 7662
//! introspection endpoint it discovers and asks, what it accepts and refuses, what it keeps,
//! and how many requests it sends at once; then against a real authorization server (node's
//! `oidc-provider`, `halo_tests::oidc`) issuing opaque tokens.
#![allow(missing_docs)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use common::client::App;
use halo_axum::{Authenticator, HaloLayer, IntrospectionAuthenticator, Principal};
use halo_tests::TestServer;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

const API: &str = "https://api.halo.test";
const CLIENT_ID: &str = "books api";
const CLIENT_SECRET: &str = "s3cret:with/odd=chars";

/// A fake issuer: discovery, and an introspection endpoint answering from a table.
struct Issuer {
    server: TestServer,
    state: Arc<Seen>,
}

/// What the issuer has seen, and the gate that holds its answers when asked to.
struct Seen {
    requests: AtomicUsize,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    /// Held answers wait for a permit; `None`: answers are not held.
    gate: Option<Semaphore>,
    arrivals: mpsc::UnboundedSender<()>,
    /// The issuer identifier, once known.
    issuer: std::sync::OnceLock<String>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The answer about `token`.
fn answer(token: &str, issuer: &str) -> Value {
    let active = |extra: Value| {
        let mut base = json!({
            "active": true, "client_id": "agent", "scope": "books:read", "aud": API,
            "iss": issuer, "exp": now() + 300, "org": "acme",
        });
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        base
    };
    match token {
        "good" => active(json!({})),
        "listed-audience" => active(json!({"aud": ["https://other.test", API]})),
        "foreign" => active(json!({"aud": "https://other.test"})),
        "no-audience" => active(json!({"aud": null})),
        "elsewhere" => active(json!({"iss": "https://evil.test"})),
        "expired" => active(json!({"exp": now() - 10})),
        "subjectless" => active(json!({"client_id": null})),
        held if held.starts_with("held-") => active(json!({"client_id": held})),
        _ => json!({"active": false}),
    }
}

async fn introspect(
    State(seen): State<Arc<Seen>>,
    headers: HeaderMap,
    body: String,
) -> Result<Json<Value>, StatusCode> {
    seen.requests.fetch_add(1, Ordering::SeqCst);
    // RFC 6749 §2.3.1: id and secret form-encoded, then Basic.
    let expected = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            "books%20api:s3cret%3Awith%2Fodd%3Dchars"
        )
    );
    if headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
        return Err(StatusCode::UNAUTHORIZED);
    }
    let token = body
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
        .map(|token| {
            percent_encoding::percent_decode_str(token)
                .decode_utf8_lossy()
                .into_owned()
        })
        .ok_or(StatusCode::BAD_REQUEST)?;
    let now_in_flight = seen.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    seen.most_in_flight
        .fetch_max(now_in_flight, Ordering::SeqCst);
    let _ = seen.arrivals.send(());
    if let Some(gate) = &seen.gate {
        let _permit = gate.acquire().await.unwrap();
    }
    seen.in_flight.fetch_sub(1, Ordering::SeqCst);
    Ok(Json(answer(&token, seen.issuer.get().unwrap())))
}

impl Issuer {
    async fn start(hold: bool) -> (Self, mpsc::UnboundedReceiver<()>) {
        let (arrivals, arrived) = mpsc::unbounded_channel();
        let state = Arc::new(Seen {
            requests: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            most_in_flight: AtomicUsize::new(0),
            gate: hold.then(|| Semaphore::new(0)),
            arrivals,
            issuer: std::sync::OnceLock::new(),
        });
        let router = Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(|State(seen): State<Arc<Seen>>| async move {
                    let issuer = seen.issuer.get().unwrap();
                    Json(json!({
                        "issuer": issuer,
                        "introspection_endpoint": format!("{issuer}/introspect"),
                    }))
                }),
            )
            .route("/introspect", post(introspect))
            .with_state(Arc::clone(&state));
        let server = halo_tests::spawn(router).await;
        state.issuer.set(server.base_url()).unwrap();
        (Self { server, state }, arrived)
    }

    fn url(&self) -> String {
        self.server.base_url()
    }

    fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }
}

async fn authenticator(issuer: &Issuer) -> IntrospectionAuthenticator {
    IntrospectionAuthenticator::builder(issuer.url(), CLIENT_ID, CLIENT_SECRET)
        .audience(API)
        .tenant_claim("org")
        .build()
        .await
        .expect("discovery of the introspection endpoint")
}

/// What `authenticator` makes of `Authorization: Bearer <token>`.
async fn identify(
    authenticator: &impl Authenticator,
    token: &str,
) -> Result<Option<Principal>, String> {
    let parts = axum::http::Request::builder()
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .body(())
        .unwrap()
        .into_parts()
        .0;
    authenticator
        .authenticate(&parts)
        .await
        .map_err(|refused| refused.to_string())
}

#[tokio::test]
async fn active_tokens_for_the_api_are_accepted_and_the_rest_refused() {
    let (issuer, _) = Issuer::start(false).await;
    let tokens = authenticator(&issuer).await;
    assert_eq!(tokens.endpoint(), format!("{}/introspect", issuer.url()));

    let caller = identify(&tokens, "good").await.unwrap().unwrap();
    assert_eq!(caller.id(), "agent");
    assert_eq!(caller.scopes().collect::<Vec<_>>(), ["books:read"]);
    assert_eq!(caller.tenant(), Some("acme"));
    assert!(
        identify(&tokens, "listed-audience")
            .await
            .unwrap()
            .is_some()
    );

    for (token, why) in [
        (
            "unknown",
            "the token is not active (expired, revoked or unknown to the issuer)",
        ),
        ("foreign", "the token is not for this API (aud)"),
        ("no-audience", "the token is not for this API (aud)"),
        ("elsewhere", "the token is not from this API's issuer (iss)"),
        ("expired", "the token has expired"),
        (
            "subjectless",
            "the token names no subject (sub or client_id)",
        ),
    ] {
        assert_eq!(identify(&tokens, token).await.unwrap_err(), why, "{token}");
    }
    // No Authorization: anonymous; another scheme: refused.
    let anonymous = axum::http::Request::new(()).into_parts().0;
    assert!(tokens.authenticate(&anonymous).await.unwrap().is_none());
}

#[tokio::test]
async fn answers_are_kept_so_a_replayed_token_costs_one_request() {
    let (issuer, _) = Issuer::start(false).await;
    let tokens = authenticator(&issuer).await;
    for _ in 0..5 {
        assert!(identify(&tokens, "good").await.unwrap().is_some());
    }
    assert_eq!(issuer.requests(), 1);
    for _ in 0..5 {
        assert!(identify(&tokens, "made-up").await.is_err());
    }
    assert_eq!(issuer.requests(), 2, "refusals are kept too");
    // Clones share what is kept.
    let clone = tokens.clone();
    assert!(identify(&clone, "good").await.unwrap().is_some());
    assert_eq!(issuer.requests(), 2);
}

#[tokio::test]
async fn at_most_max_concurrent_requests_reach_the_issuer() {
    let (issuer, mut arrived) = Issuer::start(true).await;
    let tokens = IntrospectionAuthenticator::builder(issuer.url(), CLIENT_ID, CLIENT_SECRET)
        .audience(API)
        .max_concurrent(2)
        .build()
        .await
        .unwrap();
    let calls: Vec<_> = (0..12)
        .map(|n| {
            let tokens = tokens.clone();
            tokio::spawn(async move { identify(&tokens, &format!("held-{n}")).await })
        })
        .collect();
    // Two requests reach the issuer and are held there; the others wait in the
    // authenticator rather than reaching it.
    arrived.recv().await.unwrap();
    arrived.recv().await.unwrap();
    issuer.state.gate.as_ref().unwrap().add_permits(1_000);
    for call in calls {
        assert!(call.await.unwrap().unwrap().is_some());
    }
    assert_eq!(issuer.requests(), 12);
    assert_eq!(issuer.state.most_in_flight.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_issuer_that_cannot_answer() {
    // At build: discovery fails, naming the URL.
    let error = IntrospectionAuthenticator::builder("http://127.0.0.1:1", CLIENT_ID, CLIENT_SECRET)
        .audience(API)
        .build()
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("IntrospectionAuthenticator: discovery failed: GET http://127.0.0.1:1/"),
        "{error}"
    );
    // Later: a token not yet known is refused, saying why, and the secret is nowhere.
    let tokens =
        IntrospectionAuthenticator::builder("http://127.0.0.1:1", CLIENT_ID, CLIENT_SECRET)
            .audience(API)
            .endpoint("http://127.0.0.1:1/introspect")
            .build()
            .await
            .unwrap();
    let refused = identify(&tokens, "good").await.unwrap_err();
    assert_eq!(refused, "the token could not be checked at the issuer");
    assert!(!format!("{tokens:?}").contains("s3cret"));

    // Wrong credentials of the API at the issuer: the same refusal.
    let (issuer, _) = Issuer::start(false).await;
    let wrong = IntrospectionAuthenticator::builder(issuer.url(), CLIENT_ID, "not-the-secret")
        .audience(API)
        .build()
        .await
        .unwrap();
    assert_eq!(
        identify(&wrong, "good").await.unwrap_err(),
        "the token could not be checked at the issuer"
    );
}

#[tokio::test]
async fn settings_that_cannot_work_are_refused() {
    let build = |builder: halo_axum::IntrospectionAuthenticatorBuilder| async move {
        builder.build().await.unwrap_err().to_string()
    };
    let base = || IntrospectionAuthenticator::builder("https://id.example", "a", "b");
    assert!(build(base()).await.contains("audience"));
    assert!(
        build(base().audience(API).max_concurrent(0))
            .await
            .contains("max_concurrent")
    );
    assert!(
        build(IntrospectionAuthenticator::builder("http://id.example", "a", "b").audience(API))
            .await
            .contains("neither an https URL nor http on loopback")
    );
    assert!(
        build(
            base()
                .audience(API)
                .endpoint("http://id.example/introspect")
        )
        .await
        .contains("neither https nor http on loopback")
    );
}

#[tokio::test]
async fn the_layer_answers_401_invalid_token_for_a_refused_token() {
    let (issuer, _) = Issuer::start(false).await;
    let (router, api) = common::petshop();
    let layer = HaloLayer::builder(api)
        .authenticator(authenticator(&issuer).await)
        .build()
        .unwrap();
    let app = App::new(router.layer(layer));
    let refused = app.get("/pets/1").bearer_auth("foreign").send().await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert!(
        refused
            .header(WWW_AUTHENTICATE)
            .contains(r#"error="invalid_token""#)
    );
    assert_eq!(refused.detail(), "the token is not for this API (aud)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_of_a_real_authorization_server() {
    use halo_tests::oidc::{API_CLIENT_ID, API_CLIENT_SECRET, AuthorizationServer};

    let server =
        AuthorizationServer::start_opaque(API, &["books:read", "books:write"], &["books:read"]);
    let tokens =
        IntrospectionAuthenticator::builder(server.issuer(), API_CLIENT_ID, API_CLIENT_SECRET)
            .audience(API)
            .build()
            .await
            .expect("oidc-provider's metadata names its introspection endpoint");
    let token = server
        .client_credentials(API, "books:read")
        .await
        .expect("an opaque token for the API");
    assert_eq!(token.matches('.').count(), 0, "not a JWT: {token}");
    let caller = identify(&tokens, &token).await.unwrap().unwrap();
    assert_eq!(caller.id(), halo_tests::oidc::CLIENT_ID);
    assert_eq!(caller.scopes().collect::<Vec<_>>(), ["books:read"]);
    assert_eq!(
        identify(&tokens, "made-up-token").await.unwrap_err(),
        "the token is not active (expired, revoked or unknown to the issuer)"
    );
    // An API that is not the token's audience refuses it.
    let elsewhere =
        IntrospectionAuthenticator::builder(server.issuer(), API_CLIENT_ID, API_CLIENT_SECRET)
            .audience("https://other.halo.test")
            .build()
            .await
            .unwrap();
    assert_eq!(
        identify(&elsewhere, &token).await.unwrap_err(),
        "the token is not for this API (aud)"
    );
}
