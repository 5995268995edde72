//! An API key given without a header goes in the header the called tool's security scheme
//! names (`"auth": {"type": "apikey", "header": "X-Token"}`), over real HTTP: a header the
//! credential names wins, `X-API-Key` is the fallback when no scheme names one, a credentials
//! file entry without `header` follows the scheme, and the description moves the key only
//! between headers of requests to the credential's own host.

use crate::support;

use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::{Json, Router};
use halo_axum::HaloLayer;
use halo_client::{Client, Credential, Credentials, HeaderName, Method};
use serde_json::{Value, json};
use support::authority;
use support::fault::{self, Action};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::{router::OpenApiRouter, routes};

const KEY: &str = "key-7a8b9c";

/// The API-key headers a handler was sent (`null` when absent).
fn keys(headers: &HeaderMap) -> Json<Value> {
    let get = |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_owned());
    Json(json!({
        "x-token": get("x-token"),
        "x-api-key": get("x-api-key"),
        "x-other": get("x-other"),
    }))
}

/// Show which key headers came (needs the `X-Token` key).
#[utoipa::path(get, path = "/secret", tags = ["keys", "read"],
    responses((status = 200, body = Object)), security(("token" = [])))]
async fn secret(headers: HeaderMap) -> Json<Value> {
    keys(&headers)
}

/// Show which key headers came (open to anyone).
#[utoipa::path(get, path = "/open", tags = ["keys", "read"],
    responses((status = 200, body = Object)))]
async fn open(headers: HeaderMap) -> Json<Value> {
    keys(&headers)
}

/// An `apiKey` scheme in the `X-Token` header.
struct TokenScheme;

impl Modify for TokenScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "token",
                SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Token"))),
            );
    }
}

#[derive(OpenApi)]
#[openapi(info(title = "Keys", version = "1.0.0"), modifiers(&TokenScheme))]
struct Doc;

/// The key headers of every discovery request the server saw.
type Discoveries = Arc<Mutex<Vec<HeaderMap>>>;

/// The API on a loopback port (described to every caller: no authenticator), its base URL
/// and the discovery requests it sees.
async fn keys_api() -> (String, Discoveries) {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(secret))
        .routes(routes!(open))
        .split_for_parts();
    let seen = Discoveries::default();
    let record = Arc::clone(&seen);
    let app: Router = router
        .layer(HaloLayer::from_openapi(api))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let record = Arc::clone(&record);
            async move {
                if request.method() == Method::OPTIONS {
                    record
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(request.headers().clone());
                }
                let response: Response = next.run(request).await;
                response
            }
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, seen)
}

/// What `path` saw, called with `credential` for the API's host.
async fn sent(base: &str, credential: Credential, path: &str) -> Value {
    let client = Client::builder(base)
        .credentials(Credentials::new().with(authority(base), credential))
        .build()
        .unwrap();
    client
        .invoke(path, Method::GET, json!({}))
        .await
        .unwrap()
        .to_value()
}

#[tokio::test]
async fn a_key_without_a_header_goes_where_the_scheme_says() {
    let (base, discoveries) = keys_api().await;

    // The schema of /secret says `{"type": "apikey", "header": "X-Token"}`.
    let schema = Client::new(&base)
        .unwrap()
        .describe("/secret", Method::GET)
        .await
        .unwrap();
    let auth = schema.auth.expect("an auth scheme");
    assert_eq!(auth.header.as_deref(), Some("X-Token"));

    let scheme = sent(&base, Credential::api_key_in_scheme_header(KEY), "/secret").await;
    assert_eq!(
        scheme,
        json!({"x-token": KEY, "x-api-key": null, "x-other": null})
    );

    // A header the credential names wins over the scheme's.
    let named = sent(
        &base,
        Credential::api_key(HeaderName::from_static("x-other"), KEY),
        "/secret",
    )
    .await;
    assert_eq!(
        named,
        json!({"x-token": null, "x-api-key": null, "x-other": KEY})
    );

    // A credentials file entry without `header` follows the scheme.
    let file = Credentials::from_json(&format!(
        r#"{{"{}": {{"type": "apikey", "value": "{KEY}"}}}}"#,
        authority(&base)
    ))
    .unwrap();
    let client = Client::builder(&base).credentials(file).build().unwrap();
    let from_file = client
        .invoke("/secret", Method::GET, json!({}))
        .await
        .unwrap()
        .to_value();
    assert_eq!(from_file["x-token"], KEY);
    assert_eq!(from_file["x-api-key"], Value::Null);

    // A tool whose scheme names no header, and discovery, which no schema describes, get
    // the key in X-API-Key, as before.
    let fallback = sent(&base, Credential::api_key_in_scheme_header(KEY), "/open").await;
    assert_eq!(
        fallback,
        json!({"x-token": null, "x-api-key": KEY, "x-other": null})
    );
    let discoveries = discoveries.lock().unwrap().clone();
    assert!(!discoveries.is_empty());
    let last = discoveries.last().unwrap();
    assert_eq!(last.get("x-api-key").unwrap(), KEY);
    assert!(last.get("x-token").is_none());
}

/// A fault server describing `GET /go` with `auth`, and a client holding `credential` for
/// it, schema already read.
async fn described(auth: Value, credential: Credential) -> (fault::Server, Client) {
    support::go_with(&json!({"auth": auth}), credential).await
}

#[tokio::test]
async fn the_scheme_picks_the_header_never_the_host() {
    let token = json!({"type": "apikey", "header": "X-Token"});

    // A redirect to another origin carries no key, in any header.
    let other = fault::Server::start().await;
    let (home, client) = described(token.clone(), Credential::api_key_in_scheme_header(KEY)).await;
    home.script([Action::redirect(307, &other.url("/landing"))]);
    client.invoke("/go", Method::GET, json!({})).await.unwrap();
    let first = home.requests();
    assert_eq!(first.last().unwrap().header("x-token"), Some(KEY));
    let landed = other.requests();
    assert_eq!(landed.len(), 1);
    for header in ["x-token", "x-api-key", "authorization"] {
        assert_eq!(landed[0].header(header), None, "{header}");
    }

    // One to an origin with a key of its own carries that key, in X-API-Key: the first
    // origin's description names the header of its own requests only.
    let keyed = fault::Server::start().await;
    let home = fault::Server::start().await;
    home.describe(
        "/go",
        &json!([fault::schema("GET", "/go", &json!({"auth": token}))]),
    );
    let client = Client::builder(&home.base)
        .credentials(
            Credentials::new()
                .with(
                    authority(&home.base),
                    Credential::api_key_in_scheme_header(KEY),
                )
                .with(
                    authority(&keyed.base),
                    Credential::api_key_in_scheme_header("keyed-key"),
                ),
        )
        .build()
        .unwrap();
    client.describe("/go", Method::GET).await.unwrap();
    home.script([Action::redirect(307, &keyed.url("/landing"))]);
    client.invoke("/go", Method::GET, json!({})).await.unwrap();
    assert_eq!(home.requests()[0].header("x-token"), Some(KEY));
    let landed = keyed.requests();
    assert_eq!(landed[0].header("x-token"), None);
    assert_eq!(landed[0].header("x-api-key"), Some("keyed-key"));

    // A model cannot put its own value in the scheme's header: the credential replaces it,
    // and no hop to another origin carries it.
    let (home, client) = described(token.clone(), Credential::api_key_in_scheme_header(KEY)).await;
    home.script([Action::redirect(307, &other.url("/landing"))]);
    let schema: halo_client::protocol::ToolSchema = serde_json::from_value(fault::schema(
        "GET",
        "/go",
        &json!({
            "auth": token,
            "input": {"X-Token": {"type": "string", "in": "header"}},
        }),
    ))
    .unwrap();
    client
        .call(&schema, json!({"X-Token": "from-the-model"}))
        .await
        .unwrap();
    assert_eq!(other.requests().len(), 2);
    assert_eq!(other.requests()[1].header("x-token"), None);
    let request = home.requests().pop().unwrap();
    let values: Vec<&str> = request
        .headers
        .iter()
        .filter(|(name, _)| name == "x-token")
        .map(|(_, value)| value.as_str())
        .collect();
    assert_eq!(values, [KEY]);

    // A scheme naming a header a proxy reads gets X-API-Key instead.
    let (home, client) = described(
        json!({"type": "apikey", "header": "Proxy-Authorization"}),
        Credential::api_key_in_scheme_header(KEY),
    )
    .await;
    client.invoke("/go", Method::GET, json!({})).await.unwrap();
    let request = home.requests().pop().unwrap();
    assert_eq!(request.header("proxy-authorization"), None);
    assert_eq!(request.header("x-api-key"), Some(KEY));
}
