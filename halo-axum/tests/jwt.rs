//! `JwtAuthenticator` against an issuer the test plays: a tiny axum app on loopback that
//! serves discovery and a key set (counting the fetches, able to go down), and tokens the
//! test signs with its own keys, valid or broken in one way each.
#![allow(missing_docs)]

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::header::{HOST, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::client::App;
use common::jwt_keys::{EC_PRIVATE, RSA_N, RSA_PRIVATE, RSA_PUBLIC, ec_jwk, rsa_jwk};
use halo_axum::{HaloBuilder, JwtAuthenticator, Principal, ProtectedResource};
use halo_tests::TestServer;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const AUDIENCE: &str = "https://api.halo.test";
const METADATA_URL: &str = "https://api.halo.test/.well-known/oauth-protected-resource";
const KID: &str = "rsa-1";
const EC_KID: &str = "ec-1";
const NEXT_KID: &str = "rsa-2";

/// A second RSA key: the issuer's next key after a rotation.
const NEXT_RSA_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQDfAQFvcPUEb3U6
8EF6K/K8HYt0SisBO28Mc01aOggtvJZTWeuqxa0snpOebAYjMuS1QNtryD7q1Y+H
nYtnyRBDi838vrxWIjRP8VDYAyzmcOkEqu4zfTdY+OG5UZxrfouVgc45tWZcpFF8
zP5lJ+q6tHr4IYhOZG1npvB7Kt/GSc3RhKDMB8nxVLNLzbC+tH30nHWvCzr5JkCg
XnaYhWhFQAXfG6gfx+6xWgOxweiJKHCA9F+1hBw2WTtdOx+m2QNvfyMlPYqcVi6G
WQUJIG9vUfOwUjzaYveaROvzMDH8N/AIyM9/CdpvlCadMJI970fHD6krCna+vPwv
0r1SKQAZAgMBAAECggEAG5LswgJWEYPUm4KMnhYkD/WZQjpPgfn+26vAI0lsrHcW
oVzLgpSpuowrFZom0iBfXjgUSYn7mZ7pfevRinY2kBuPz1IoSIA3NrFQfT07Ro0s
itq11GEFwHcZtgfszu/ZQ5XG0aTn8MmSl9tjE0/xur9JOzguOf859eiS8K/W9pX7
fAP9X+AYRcpQoA+ZyONqWPzckWlO5iYKZ43tmzsuFYcifEEQGAhzcht5u62sfjpv
bSgH8ibbRl2RhRdimsw2+Ed29fSyJ1nTXOfWPyK3a2muvpmrnLeq9CLr6sQLawM1
4wggCBys4t69DaSWITu2EySVdHuPLvlNiG2UOhEd7wKBgQD5chBTrSLT0LsU6rG+
7q818WE680l9wo9wTKomJsiFlsUdzITC9EjyJJcECpmJe+BeQVJNhFQQ5pqF/OlM
8vs0ZyIizon6M+8fjXAFpyGzmWWNkFeRa+oj8B8IXMBzNviI+YatZWfWJRl/LK8x
TNA8XeEzsOfQUGeBBzcwNr1nUwKBgQDk3RPvfQWHAjTcZZ6ca/LrV7c1KiwY4HEL
cnKtojCYKrzON/noNybdAQ0+QxRWRcjpVb+S998cEEx+awxAurIkH74vMOnNiRWc
ARoN1jBgsND0+MbupUIa9OGSN+aaAyGFOLzAtmXqFaOFEmgEnz3eMUqek0QJb+Hf
X+uhVjNpYwKBgA+Z/cFuC8aZwIm/YBykCxthnIY2XztZZuVMNjwqotIQKwYBG7Ch
3MogVb2v+AhsUg0zIrWseCGSesm0ltb0P5f4d18b8e9PPj6H9yCzYl08U+i1xXRX
/o3+38IDIxpRrtvKV40S0ZrIOT8GCXMY7dFIweQcxXL3BHJChEYktlX3AoGAIjEB
LHNSIxRqT08DPj1GYnCNV20Af4rweJRVm6kyd1lTMb/dHxs2PChPETE2VZlBZdLA
tzU+6NNqiix1/SmnOYxgfm5hT6qeRttHSC/qtFdWMHMGTVr1IE/bb1vYoMO8+0k5
sdTOLwWik1vnnGEp/gsBKeW4cWx8o0GSU10sex8CgYBFPrGEiiVSKJbBkxkpYy3u
4zSpPpZS3BkTcQKeiHQpzoh2A7pwHec+oUHTn7UvZzKf/FEUzaWWDFBX7VmRnePt
0mqV4qX6KzpbssoCzxvmIP4HQq8+8LnT0tCK4r3SBCP0JOUC80KCqJXYUGDgRkmZ
6HJwH3gHGmP0LKVGUbmBMQ==
-----END PRIVATE KEY-----";
const NEXT_RSA_N: &str = "3wEBb3D1BG91OvBBeivyvB2LdEorATtvDHNNWjoILbyWU1nrqsWtLJ6TnmwGIzLktUDba8g-6tWPh52LZ8kQQ4vN_L68ViI0T_FQ2AMs5nDpBKruM303WPjhuVGca36LlYHOObVmXKRRfMz-ZSfqurR6-CGITmRtZ6bweyrfxknN0YSgzAfJ8VSzS82wvrR99Jx1rws6-SZAoF52mIVoRUAF3xuoH8fusVoDscHoiShwgPRftYQcNlk7XTsfptkDb38jJT2KnFYuhlkFCSBvb1HzsFI82mL3mkTr8zAx_DfwCMjPfwnab5QmnTCSPe9Hxw-pKwp2vrz8L9K9UikAGQ";

/// How the played issuer answers discovery.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Discovery {
    /// OpenID Connect discovery.
    OpenId,
    /// RFC 8414 metadata only (`/.well-known/openid-configuration` is a 404).
    OAuthOnly,
    /// Discovery that names another issuer.
    Impostor,
}

/// The issuer the test plays.
struct Issuer {
    server: TestServer,
    state: Arc<IssuerState>,
}

struct IssuerState {
    discovery: Discovery,
    keys: Mutex<Value>,
    down: AtomicBool,
    fetches: AtomicUsize,
}

fn key_set(keys: &[Value]) -> Value {
    // A key of a type jsonwebtoken does not know, and an encryption key, are left out.
    let mut all = vec![
        json!({"kty": "ML-DSA", "kid": "future", "pub": "AAAA"}),
        json!({"kty": "RSA", "use": "enc", "kid": KID, "n": NEXT_RSA_N, "e": "AQAB"}),
    ];
    all.extend_from_slice(keys);
    json!({"keys": all})
}

impl Issuer {
    async fn start(discovery: Discovery) -> Self {
        let state = Arc::new(IssuerState {
            discovery,
            keys: Mutex::new(key_set(&[rsa_jwk(KID, RSA_N), ec_jwk(EC_KID)])),
            down: AtomicBool::new(false),
            fetches: AtomicUsize::new(0),
        });
        let router = Router::new()
            .route("/.well-known/openid-configuration", get(openid))
            .route("/.well-known/oauth-authorization-server", get(oauth))
            .route("/jwks", get(jwks))
            .with_state(Arc::clone(&state));
        Self {
            server: halo_tests::spawn(router).await,
            state,
        }
    }

    fn url(&self) -> String {
        self.server.base_url().trim_end_matches('/').to_owned()
    }

    fn fetches(&self) -> usize {
        self.state.fetches.load(Ordering::SeqCst)
    }

    fn down(&self, down: bool) {
        self.state.down.store(down, Ordering::SeqCst);
    }

    fn publish(&self, keys: &[Value]) {
        *self.state.keys.lock().unwrap() = key_set(keys);
    }

    fn authenticator(&self) -> halo_axum::JwtAuthenticatorBuilder {
        JwtAuthenticator::builder(self.url()).audience(AUDIENCE)
    }
}

fn metadata(headers: &HeaderMap, issuer: bool) -> Value {
    let host = headers[HOST].to_str().unwrap();
    let url = format!("http://{host}");
    let named = if issuer {
        url.clone()
    } else {
        "https://impostor.example".to_owned()
    };
    json!({"issuer": named, "jwks_uri": format!("{url}/jwks"), "token_endpoint": format!("{url}/token")})
}

async fn openid(State(state): State<Arc<IssuerState>>, headers: HeaderMap) -> Response {
    match state.discovery {
        Discovery::OpenId => Json(metadata(&headers, true)).into_response(),
        Discovery::OAuthOnly => StatusCode::NOT_FOUND.into_response(),
        Discovery::Impostor => Json(metadata(&headers, false)).into_response(),
    }
}

async fn oauth(headers: HeaderMap) -> Json<Value> {
    Json(metadata(&headers, true))
}

async fn jwks(State(state): State<Arc<IssuerState>>) -> Response {
    state.fetches.fetch_add(1, Ordering::SeqCst);
    if state.down.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    Json(state.keys.lock().unwrap().clone()).into_response()
}

/// The layer of an API with a tool for readers and one for writers, behind
/// `authenticator`.
fn books(authenticator: JwtAuthenticator, issuer: &str) -> HaloBuilder {
    HaloBuilder::from_openapi_json(json!({
        "openapi": "3.1.0",
        "info": {"title": "Books", "version": "1"},
        "components": {"securitySchemes": {"oauth": {"type": "oauth2", "flows": {
            "clientCredentials": {"tokenUrl": format!("{issuer}/token"),
                "scopes": {"books:read": "Read books", "books:write": "Add books"}}}}}},
        "paths": {"/books": {
            "get": {"operationId": "list_books", "security": [{"oauth": ["books:read"]}], "responses": {}},
            "post": {"operationId": "add_book", "security": [{"oauth": ["books:write"]}], "responses": {}}
        }}
    }))
    .authenticator(authenticator)
    .protected_resource(ProtectedResource::new(AUDIENCE, [issuer]))
}

/// The API's handlers.
fn routes() -> Router {
    Router::new()
        .route(
            "/books",
            get(|caller: Principal| async move {
                Json(json!({"caller": caller.id(), "scopes": caller.scopes().collect::<Vec<_>>()}))
            }),
        )
        .route("/books", post(|| async { StatusCode::CREATED }))
}

/// The API behind `authenticator`.
fn api(authenticator: JwtAuthenticator, issuer: &str) -> App {
    App::new(routes().layer(books(authenticator, issuer).build().unwrap()))
}

/// The API behind an authenticator of `issuer` that fetches its key set at most once per
/// `interval`.
async fn refreshing_api(issuer: &Issuer, interval: Duration) -> App {
    let authenticator = issuer.authenticator().refresh_interval(interval).build();
    api(authenticator.await.unwrap(), &issuer.url())
}

fn now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

/// Claims of a valid token for the reader, with `changes` (a `null` removes a claim).
fn claims(issuer: &str, changes: Value) -> Value {
    let mut claims = json!({
        "iss": issuer, "aud": AUDIENCE, "sub": "reader-1", "scope": "books:read",
        "iat": now(), "exp": now() + 300,
    });
    for (name, value) in changes.as_object().unwrap() {
        if value.is_null() {
            claims.as_object_mut().unwrap().remove(name);
        } else {
            claims[name] = value.clone();
        }
    }
    claims
}

fn sign(algorithm: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(algorithm);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn rsa() -> EncodingKey {
    EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap()
}

fn next_rsa() -> EncodingKey {
    EncodingKey::from_rsa_pem(NEXT_RSA_PRIVATE.as_bytes()).unwrap()
}

fn token(issuer: &str, changes: Value) -> String {
    sign(
        Algorithm::RS256,
        Some(KID),
        &rsa(),
        &claims(issuer, changes),
    )
}

/// Asserts a `401` for an invalid token, whose challenge says so and points at the
/// metadata, and whose body names neither the token nor its signature.
async fn assert_invalid(app: &App, token: &str, case: &str) -> String {
    let answer = app.get("/books").bearer_auth(token).send().await;
    assert_eq!(
        answer.status,
        StatusCode::UNAUTHORIZED,
        "{case}: {}",
        answer.body
    );
    let challenge = answer.header(WWW_AUTHENTICATE);
    assert!(
        challenge.contains(r#"error="invalid_token""#),
        "{case}: {challenge}"
    );
    assert!(
        challenge.contains(&format!(r#"resource_metadata="{METADATA_URL}""#)),
        "{case}: {challenge}"
    );
    for part in token.split('.').filter(|part| part.len() > 8) {
        assert!(
            !answer.body.contains(part),
            "{case}: the answer repeats the token"
        );
    }
    answer.detail()
}

#[tokio::test]
async fn valid_tokens_reach_the_operations_their_scopes_allow() {
    let issuer = Issuer::start(Discovery::OpenId).await;
    let app = api(issuer.authenticator().build().await.unwrap(), &issuer.url());

    let reader = token(&issuer.url(), json!({}));
    let answer = app.get("/books").bearer_auth(&reader).send().await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(
        answer.json(),
        json!({"caller": "reader-1", "scopes": ["books:read"]})
    );

    // ES256, `scp` as an array, `client_id` when there is no `sub`.
    let ec = EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap();
    let writer = sign(
        Algorithm::ES256,
        Some(EC_KID),
        &ec,
        &claims(
            &issuer.url(),
            json!({"sub": null, "client_id": "agent-7", "scope": null, "scp": ["books:read", "books:write"]}),
        ),
    );
    let answer = app.get("/books").bearer_auth(&writer).send().await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(
        answer.json(),
        json!({"caller": "agent-7", "scopes": ["books:read", "books:write"]})
    );
    assert_eq!(
        app.post("/books").bearer_auth(&writer).send().await.status,
        StatusCode::CREATED
    );

    // Within the leeway (60 s by default): expired 30 s ago, valid from 30 s on.
    for changes in [json!({"exp": now() - 30}), json!({"nbf": now() + 30})] {
        let answer = app
            .get("/books")
            .bearer_auth(&token(&issuer.url(), changes.clone()))
            .send()
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{changes}: {}", answer.body);
    }
    // Only the build fetched the key set.
    assert_eq!(issuer.fetches(), 1);
}

#[tokio::test]
async fn a_token_without_the_scope_is_403_insufficient_scope() {
    let issuer = Issuer::start(Discovery::OpenId).await;
    let app = api(issuer.authenticator().build().await.unwrap(), &issuer.url());
    let answer = app
        .post("/books")
        .bearer_auth(&token(&issuer.url(), json!({})))
        .send()
        .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert_eq!(
        answer.header(WWW_AUTHENTICATE),
        format!(
            r#"Bearer realm="Books", error="insufficient_scope", scope="books:write", resource_metadata="{METADATA_URL}""#
        )
    );
}

#[tokio::test]
async fn no_token_is_401_pointing_at_the_metadata_document() {
    let issuer = Issuer::start(Discovery::OpenId).await;
    let app = api(issuer.authenticator().build().await.unwrap(), &issuer.url());
    let answer = app.get("/books").send().await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        answer.header(WWW_AUTHENTICATE),
        format!(r#"Bearer realm="Books", resource_metadata="{METADATA_URL}""#)
    );

    // The document: public, generated from the operations' requirements.
    let document = app
        .get("/.well-known/oauth-protected-resource")
        .send()
        .await;
    assert_eq!(document.status, StatusCode::OK);
    assert_eq!(
        document.header(axum::http::header::CONTENT_TYPE),
        "application/json"
    );
    assert!(
        document
            .header(axum::http::header::CACHE_CONTROL)
            .starts_with("public")
    );
    assert_eq!(
        document.json(),
        json!({
            "resource": AUDIENCE,
            "authorization_servers": [issuer.url()],
            "scopes_supported": ["books:read", "books:write"],
            "bearer_methods_supported": ["header"],
            "resource_name": "Books",
        })
    );
    // Other methods at that path go to the application.
    let post = app
        .post("/.well-known/oauth-protected-resource")
        .send()
        .await;
    assert_eq!(post.status, StatusCode::NOT_FOUND);
}

/// A caller whose credentials are refused learns nothing of which paths are routed: the
/// `401` of a routed path and of an absent one carry the same `Allow`.
#[tokio::test]
async fn a_refused_discovery_does_not_tell_routed_paths_from_absent_ones() {
    let issuer = Issuer::start(Discovery::OpenId).await;
    let app = api(issuer.authenticator().build().await.unwrap(), &issuer.url());
    let routed = app
        .discover("/books")
        .bearer_auth("not-a-token")
        .send()
        .await;
    let absent = app
        .discover("/nothing")
        .bearer_auth("not-a-token")
        .send()
        .await;
    assert_eq!(routed.status, StatusCode::UNAUTHORIZED);
    assert_eq!(absent.status, StatusCode::UNAUTHORIZED);
    let allow = |answer: &common::client::Answer| {
        answer
            .headers
            .get_all(axum::http::header::ALLOW)
            .iter()
            .map(|value| value.to_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(allow(&routed), allow(&absent));
    assert_eq!(allow(&routed), ["OPTIONS"]);
}

#[tokio::test]
async fn every_broken_token_is_401_invalid_token() {
    let issuer = Issuer::start(Discovery::OpenId).await;
    let url = issuer.url();
    let app = api(issuer.authenticator().build().await.unwrap(), &url);
    let valid = token(&url, json!({}));
    let [header, payload, signature] = valid.split('.').collect::<Vec<_>>().try_into().unwrap();
    let encode = |value: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).unwrap());

    let mut tampered_signature: Vec<u8> = signature.bytes().collect();
    tampered_signature[10] = if tampered_signature[10] == b'A' {
        b'B'
    } else {
        b'A'
    };
    let cases = [
        (
            "expired",
            token(&url, json!({"exp": now() - 120})),
            "expired",
        ),
        (
            "not yet valid",
            token(&url, json!({"nbf": now() + 120})),
            "not valid yet",
        ),
        ("without exp", token(&url, json!({"exp": null})), "exp"),
        (
            "wrong audience",
            token(&url, json!({"aud": "https://other.example"})),
            "aud",
        ),
        (
            "wrong issuer",
            token(&url, json!({"iss": "https://impostor.example"})),
            "iss",
        ),
        (
            "unknown kid",
            sign(
                Algorithm::RS256,
                Some("nobody"),
                &next_rsa(),
                &claims(&url, json!({})),
            ),
            "not one of its issuer's keys",
        ),
        (
            "signed by another key under the issuer's kid",
            sign(
                Algorithm::RS256,
                Some(KID),
                &next_rsa(),
                &claims(&url, json!({})),
            ),
            "signature",
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                encode(&json!({"alg": "none", "typ": "JWT", "kid": KID})),
                payload
            ),
            "not a JWT",
        ),
        (
            "HS256 signed with the public key",
            sign(
                Algorithm::HS256,
                Some(KID),
                &EncodingKey::from_secret(RSA_PUBLIC.as_bytes()).unwrap(),
                &claims(&url, json!({})),
            ),
            "HS256",
        ),
        (
            "tampered payload",
            format!(
                "{header}.{}.{signature}",
                encode(&claims(&url, json!({"scope": "books:read books:write"})))
            ),
            "signature",
        ),
        (
            "tampered signature",
            format!(
                "{header}.{payload}.{}",
                String::from_utf8(tampered_signature).unwrap()
            ),
            "signature",
        ),
        ("not a JWT", "opaque-token".to_owned(), "not a JWT"),
    ];
    for (case, token, says) in cases {
        let detail = assert_invalid(&app, &token, case).await;
        assert!(detail.contains(says), "{case}: {detail}");
    }
    // A scheme other than Bearer.
    let basic = app
        .get("/books")
        .header(axum::http::header::AUTHORIZATION, "Basic dXNlcjpwYXNz")
        .send()
        .await;
    assert_eq!(basic.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn unknown_kids_fetch_the_key_set_at_most_once_per_interval() {
    let issuer = Issuer::start(Discovery::OpenId).await;
    let url = issuer.url();
    // Signed before the clock starts: signing 2,000 tokens takes a while in a debug build.
    let key = next_rsa();
    let claims = claims(&url, json!({}));
    let made_up: Vec<String> = (0..1_000)
        .map(|i| {
            sign(
                Algorithm::RS256,
                Some(&format!("made-up-{i}")),
                &key,
                &claims,
            )
        })
        .collect();
    let next = sign(Algorithm::RS256, Some(NEXT_KID), &key, &claims);
    let mixed: Vec<String> = (0..1_000)
        .map(|i| {
            if i % 2 == 0 {
                next.clone()
            } else {
                made_up[i].clone()
            }
        })
        .collect();
    let interval = Duration::from_secs(3);
    let app = refreshing_api(&issuer, interval).await;
    assert_eq!(issuer.fetches(), 1);
    let send_all = |tokens: Vec<String>| {
        let app = app.clone();
        async move {
            let calls: Vec<_> = tokens
                .into_iter()
                .map(|token| {
                    let app = app.clone();
                    tokio::spawn(async move {
                        app.get("/books").bearer_auth(&token).send().await.status
                    })
                })
                .collect();
            let mut statuses = Vec::new();
            for call in calls {
                statuses.push(call.await.unwrap());
            }
            statuses
        }
    };

    // 1,000 made-up kids within the interval of the build's fetch: no fetch at all.
    let statuses = send_all(made_up).await;
    assert!(statuses.iter().all(|s| *s == StatusCode::UNAUTHORIZED));
    assert_eq!(issuer.fetches(), 1);

    // The issuer rotates to its next key. Once the interval is over, the first token that
    // names it (or any unknown kid) fetches the set, once, and every token signed with the
    // next key then passes; the made-up kids among them cost nothing more.
    issuer.publish(&[rsa_jwk(KID, RSA_N), rsa_jwk(NEXT_KID, NEXT_RSA_N)]);
    common::fast_forward(interval + Duration::from_millis(100)).await;
    let statuses = send_all(mixed).await;
    assert_eq!(issuer.fetches(), 2);
    for (i, status) in statuses.iter().enumerate() {
        let expected = if i % 2 == 0 {
            StatusCode::OK
        } else {
            StatusCode::UNAUTHORIZED
        };
        assert_eq!(*status, expected, "call {i}");
    }
}

#[tokio::test]
async fn the_issuer_down() {
    let issuer = Issuer::start(Discovery::OpenId).await;
    let url = issuer.url();

    // Down at start: building fails, naming where it looked.
    issuer.down(true);
    let error = issuer
        .authenticator()
        .build()
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("/jwks") && error.contains("503"), "{error}");

    issuer.down(false);
    let interval = Duration::from_millis(300);
    let app = refreshing_api(&issuer, interval).await;
    // Down later: the keys already fetched keep working...
    issuer.down(true);
    common::fast_forward(interval + Duration::from_millis(50)).await;
    let fetches = issuer.fetches();
    let answer = app
        .get("/books")
        .bearer_auth(&token(&url, json!({})))
        .send()
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(issuer.fetches(), fetches, "a known key needs no fetch");
    // ... a token naming a new key is refused, saying why...
    issuer.publish(&[rsa_jwk(KID, RSA_N), rsa_jwk(NEXT_KID, NEXT_RSA_N)]);
    let next = sign(
        Algorithm::RS256,
        Some(NEXT_KID),
        &next_rsa(),
        &claims(&url, json!({})),
    );
    let detail = assert_invalid(&app, &next, "issuer down").await;
    assert!(detail.contains("could not be fetched"), "{detail}");
    assert_eq!(issuer.fetches(), fetches + 1);
    // ... and passes once the issuer is back and the interval is over.
    issuer.down(false);
    common::fast_forward(interval + Duration::from_millis(50)).await;
    let answer = app.get("/books").bearer_auth(&next).send().await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
}

#[tokio::test]
async fn discovery_falls_back_to_rfc_8414_and_checks_the_issuer() {
    let oauth = Issuer::start(Discovery::OAuthOnly).await;
    let authenticator = oauth.authenticator().build().await.unwrap();
    assert_eq!(authenticator.jwks_uri(), format!("{}/jwks", oauth.url()));

    let impostor = Issuer::start(Discovery::Impostor).await;
    let error = impostor
        .authenticator()
        .build()
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("another issuer"), "{error}");

    // The key set named outright: no discovery.
    let direct = JwtAuthenticator::builder("https://id.example")
        .audience(AUDIENCE)
        .jwks_uri(format!("{}/jwks", oauth.url()))
        .build()
        .await
        .unwrap();
    assert_eq!(direct.issuer(), "https://id.example");
}

#[tokio::test]
async fn settings_that_cannot_work_are_refused() {
    let no_audience = JwtAuthenticator::builder("https://id.example")
        .build()
        .await;
    assert!(no_audience.unwrap_err().to_string().contains("audience"));
    let plain_http = JwtAuthenticator::builder("http://id.example")
        .audience(AUDIENCE)
        .build()
        .await;
    assert!(plain_http.unwrap_err().to_string().contains("https"));
    let relative = HaloBuilder::from_openapi_json(
        json!({"openapi": "3.1.0", "info": {"title": "T", "version": "1"}, "paths": {}}),
    )
    .protected_resource(ProtectedResource::new("/api", ["https://id.example"]))
    .build();
    assert!(relative.unwrap_err().is_settings());
}

/// `/mcp` answers with the same challenges: an MCP client finds the metadata from its `401`.
#[cfg(feature = "mcp")]
#[tokio::test]
async fn mcp_challenges_point_at_the_metadata_document() {
    let issuer = Issuer::start(Discovery::OpenId).await;
    let url = issuer.url();
    let layer = books(issuer.authenticator().build().await.unwrap(), &url)
        .require_credentials(true)
        .build()
        .unwrap();
    let mcp = halo_axum::mcp::McpService::builder(&layer, routes()).build();
    let app = App::new(routes().layer(layer).nest_service("/mcp", mcp));
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});

    let anonymous = app.post("/mcp").json(&initialize).send().await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        anonymous.header(WWW_AUTHENTICATE),
        format!(r#"Bearer realm="Books", resource_metadata="{METADATA_URL}""#)
    );
    let expired = token(&url, json!({"exp": now() - 120}));
    let answer = app
        .post("/mcp")
        .bearer_auth(&expired)
        .json(&initialize)
        .send()
        .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        answer.header(WWW_AUTHENTICATE),
        format!(
            r#"Bearer realm="Books", error="invalid_token", resource_metadata="{METADATA_URL}""#
        )
    );
    let detail = answer.detail();
    assert!(detail.contains("expired"), "{detail}");
}
