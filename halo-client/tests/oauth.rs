//! OAuth 2.0 client credentials against a token endpoint and an API on loopback: one token
//! for many calls, renewal on expiry and after a `401`, refusals that say why without a
//! secret, and token URLs that keep the secret off the network in clear text.

use crate::support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use halo_client::protocol::{Call, ToolSchema};
use halo_client::{Client, ClientCredentials, Credential, Credentials};
use serde_json::{Value, json};

/// The token endpoint and the API, sharing what they know.
#[derive(Default)]
struct Auth {
    /// Token requests answered.
    issued: AtomicUsize,
    /// Requests that reached the API.
    calls: AtomicUsize,
    /// Tokens the API accepts.
    valid: Mutex<HashSet<String>>,
    /// The API refuses every token.
    refuse_all: AtomicBool,
    /// `expires_in` of new tokens.
    lifetime: Option<u64>,
    /// The form bodies of token requests.
    forms: Mutex<Vec<String>>,
    /// How many token requests to answer `503` before issuing.
    busy: AtomicUsize,
}

const CLIENT: &str = "reporting-agent";
const SECRET: &str = "s3cret: with & symbols";

async fn token(State(auth): State<Arc<Auth>>, headers: HeaderMap, form: String) -> Response {
    use base64::Engine as _;
    // RFC 6749 §2.3.1: id and secret form-encoded, then Basic.
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD
            .encode(format!("{CLIENT}:s3cret%3A%20with%20%26%20symbols"))
    );
    support::lock(&auth.forms).push(form.clone());
    let busy = auth
        .busy
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    if busy.is_ok() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"error": "temporarily_unavailable"})),
        )
            .into_response();
    }
    if headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(&expected)
    {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    if headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        != Some("application/x-www-form-urlencoded")
        || !form.starts_with("grant_type=client_credentials")
    {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "unsupported_grant_type"})),
        )
            .into_response();
    }
    let n = auth.issued.fetch_add(1, Ordering::SeqCst) + 1;
    let access = format!("tok-{n}");
    support::lock(&auth.valid).insert(access.clone());
    let mut granted = json!({"access_token": access, "token_type": "bearer"});
    if let Some(lifetime) = auth.lifetime {
        granted["expires_in"] = json!(lifetime);
    }
    Json(granted).into_response()
}

async fn whoami(State(auth): State<Arc<Auth>>, headers: HeaderMap) -> Response {
    auth.calls.fetch_add(1, Ordering::SeqCst);
    let sent = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_owned();
    let valid = support::lock(&auth.valid).contains(&sent);
    if !valid || auth.refuse_all.load(Ordering::SeqCst) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer error=\"invalid_token\"")],
        )
            .into_response();
    }
    Json(json!({ "token": sent })).into_response()
}

struct Setup {
    auth: Arc<Auth>,
    client: Client,
    whoami: ToolSchema,
    _server: tokio::task::JoinHandle<()>,
}

async fn setup(lifetime: Option<u64>, secret: &str) -> Setup {
    let auth = Arc::new(Auth {
        lifetime,
        ..Auth::default()
    });
    let app = Router::new()
        .route("/oauth/token", post(token))
        .route("/whoami", get(whoami).post(whoami))
        .with_state(Arc::clone(&auth));
    let (addr, server) = support::sse::serve(app).await;
    let base = format!("http://{addr}");
    let token_url = format!("{base}/oauth/token").parse().unwrap();
    let oauth = ClientCredentials::new(token_url, CLIENT, secret)
        .unwrap()
        .scopes(["orders:read", "orders:export"]);
    let client = Client::builder(base)
        .credential(Credential::from(oauth))
        .retry(support::fast_retry().max_attempts(3))
        .build()
        .unwrap();
    Setup {
        auth,
        client,
        whoami: ToolSchema::new(Call::new("GET", "/whoami")),
        _server: server,
    }
}

async fn token_of(setup: &Setup) -> Value {
    let response = setup
        .client
        .call(&setup.whoami, json!({}))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    response.json().unwrap()["token"].clone()
}

#[tokio::test]
async fn one_token_serves_many_calls_even_at_once() {
    let setup = setup(Some(3600), SECRET).await;
    assert_eq!(token_of(&setup).await, "tok-1");
    assert_eq!(token_of(&setup).await, "tok-1");
    let together = futures_util::future::join_all((0..8).map(|_| token_of(&setup))).await;
    assert!(
        together.iter().all(|token| token == "tok-1"),
        "{together:?}"
    );
    assert_eq!(setup.auth.issued.load(Ordering::SeqCst), 1);
    let forms = setup.auth.forms.lock().unwrap().clone();
    assert_eq!(
        forms,
        ["grant_type=client_credentials&scope=orders%3Aread%20orders%3Aexport"]
    );
}

#[tokio::test]
async fn any_lifetime_the_endpoint_states_is_taken() {
    // Longer than any clock counts: kept, without overflowing.
    let forever = setup(Some(u64::MAX), SECRET).await;
    assert_eq!(token_of(&forever).await, "tok-1");
    assert_eq!(token_of(&forever).await, "tok-1");
    // No life at all: a new token for every call.
    let instant = setup(Some(0), SECRET).await;
    assert_eq!(token_of(&instant).await, "tok-1");
    assert_eq!(token_of(&instant).await, "tok-2");
}

#[tokio::test]
async fn a_token_is_renewed_before_it_expires() {
    // One second of life, renewed a tenth early.
    let setup = setup(Some(1), SECRET).await;
    assert_eq!(token_of(&setup).await, "tok-1");
    support::fast_forward(Duration::from_millis(950)).await;
    assert_eq!(token_of(&setup).await, "tok-2");
    assert_eq!(setup.auth.issued.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_refused_token_is_renewed_and_the_call_sent_once_more() {
    let setup = setup(None, SECRET).await;
    assert_eq!(token_of(&setup).await, "tok-1");
    // The server revokes every token it gave: the next call gets 401, renews, and succeeds.
    setup.auth.valid.lock().unwrap().clear();
    assert_eq!(token_of(&setup).await, "tok-2");
    assert_eq!(setup.auth.issued.load(Ordering::SeqCst), 2);
    assert_eq!(setup.auth.calls.load(Ordering::SeqCst), 3);

    // A server that refuses any token: one renewal, then the 401 is the answer.
    setup.auth.refuse_all.store(true, Ordering::SeqCst);
    let error = setup
        .client
        .call(&setup.whoami, json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::UNAUTHORIZED));
    assert_eq!(setup.auth.issued.load(Ordering::SeqCst), 3);
    assert_eq!(setup.auth.calls.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn a_busy_token_endpoint_is_asked_again_even_for_a_write() {
    let setup = setup(Some(3600), SECRET).await;
    let write = ToolSchema::new(Call::new("POST", "/whoami"));
    // The write was never sent while its token could not be had, so trying again is safe.
    setup.auth.busy.store(1, Ordering::SeqCst);
    let answer = setup.client.call(&write, json!({})).await.unwrap();
    assert_eq!(answer.json().unwrap()["token"], "tok-1");
    assert_eq!(setup.auth.forms.lock().unwrap().len(), 2);
    assert_eq!(setup.auth.calls.load(Ordering::SeqCst), 1);

    // Busy for longer than the policy waits: the call fails, never sent.
    let setup = self::setup(Some(3600), SECRET).await;
    setup.auth.busy.store(10, Ordering::SeqCst);
    let error = setup.client.call(&write, json!({})).await.unwrap_err();
    assert!(error.is_credentials(), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with("credentials unavailable: POST /whoami: OAuth token"),
        "{error}"
    );
    assert_eq!(setup.auth.forms.lock().unwrap().len(), 3, "max_attempts");
    assert_eq!(setup.auth.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_refused_client_is_a_credentials_error_without_its_secret() {
    let setup = setup(Some(3600), "not-the-secret").await;
    let error = setup
        .client
        .call(&setup.whoami, json!({}))
        .await
        .unwrap_err();
    assert!(error.is_credentials(), "{error:?}");
    let text = error.to_string();
    assert!(
        text.contains("OAuth token request to 127.0.0.1")
            && text.contains("401")
            && text.contains("invalid_client"),
        "{text}"
    );
    for shown in [text, format!("{error:?}"), format!("{:?}", setup.client)] {
        assert!(!shown.contains("not-the-secret"), "{shown}");
    }
    assert_eq!(
        setup.auth.calls.load(Ordering::SeqCst),
        0,
        "no call without a token"
    );
}

#[test]
fn token_urls_keep_the_secret_off_clear_text_networks() {
    let new = |url: &str| ClientCredentials::new(url.parse().unwrap(), CLIENT, SECRET);
    for safe in [
        "https://auth.example.com/token",
        "http://127.0.0.1:9000/token",
        "http://[::1]:9000/token",
        "http://localhost/token",
    ] {
        assert!(new(safe).is_ok(), "{safe}");
    }
    for unsafe_url in ["http://auth.example.com/token", "ftp://127.0.0.1/token"] {
        let error = new(unsafe_url).unwrap_err();
        assert!(error.is_credentials(), "{unsafe_url}");
    }
    let debug = format!(
        "{:?}",
        Credential::from(new("https://auth.example.com/t").unwrap())
    );
    assert!(!debug.contains("s3cret"), "{debug}");
    assert!(debug.contains(CLIENT), "{debug}");
}

#[test]
fn credential_files_take_oauth_clients() {
    let file = r#"{
        "api.example.com": {"type": "oauth", "token_url": "https://auth.example.com/token",
                            "client_id": "agent", "client_secret": "${PATH}",
                            "scopes": ["orders:read"]}
    }"#;
    let credentials = Credentials::from_json(file).unwrap();
    assert!(!format!("{credentials:?}").contains(&std::env::var("PATH").unwrap()));
    let clear_text = Credentials::from_json(
        r#"{"h": {"type": "oauth", "token_url": "http://auth.example.com/token",
                  "client_id": "agent", "client_secret": "s3cret"}}"#,
    )
    .unwrap_err();
    assert!(clear_text.is_credentials());
    assert!(clear_text.to_string().contains("https"), "{clear_text}");
    assert!(!clear_text.to_string().contains("s3cret"));
}
