//! An upstream that takes OAuth: the gateway gets its own access tokens (client credentials,
//! RFC 8707 `resource`), sends them, and asks for a new one after the upstream refuses one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use halo_gateway::{Config, Gateway};
use serde_json::json;

#[tokio::test]
async fn the_gateway_gets_and_renews_its_own_tokens() {
    // A token endpoint that hands out `t-1`, `t-2`, ... and keeps what it was asked.
    let issued = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(Mutex::new(Vec::<String>::new()));
    let (count, log) = (Arc::clone(&issued), Arc::clone(&asked));
    let issuer_server = halo_tests::spawn(Router::new().route(
        "/token",
        post(move |request: Request| {
            let (count, log) = (Arc::clone(&count), Arc::clone(&log));
            async move {
                let (parts, body) = request.into_parts();
                let body = axum::body::to_bytes(body, 1 << 16).await.unwrap();
                let authorization = parts
                    .headers
                    .get("authorization")
                    .map(|v| v.to_str().unwrap().to_owned())
                    .unwrap_or_default();
                log.lock()
                    .unwrap()
                    .push(format!("{authorization} {}", String::from_utf8_lossy(&body)));
                let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                axum::Json(json!({"access_token": format!("t-{n}"), "token_type": "Bearer", "expires_in": 3600}))
            }
        }),
    )).await;
    let issuer = issuer_server.url("");
    // An upstream that refuses `t-1` on `/revoked` and says which token it got.
    let upstream_server =
        halo_tests::spawn(Router::new().fallback(|request: Request| async move {
            let token = request
                .headers()
                .get("authorization")
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default();
            match request.uri().path() {
                "/revoked" if token == "Bearer t-1" => StatusCode::UNAUTHORIZED.into_response(),
                _ => token.into_response(),
            }
        }))
        .await;
    let upstream = upstream_server.url("");
    let document = json!({
        "openapi": "3.1.0", "info": {"title": "Reports", "version": "1"},
        "paths": {
            "/report": {"get": {"operationId": "report", "responses": {"200": {"description": "ok"}}}},
            "/revoked": {"get": {"operationId": "revoked", "responses": {"200": {"description": "ok"}}}}
        }
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("reports.json"), document.to_string()).unwrap();
    let text = format!(
        "upstreams:\n  reports:\n    openapi: reports.json\n    base_url: \"{upstream}\"\n    oauth: {{ token_url: \"{issuer}/token\", client_id: gw, client_secret: \"${{SECRET}}\", scopes: [reports], resource: \"https://reports.example.com\" }}\n"
    );
    let config = Config::from_text_with_env(&text, dir.path(), |name| {
        (name == "SECRET").then(|| "the-gateways-secret".to_owned())
    })
    .unwrap();
    let gateway = Gateway::build(&config).await.unwrap();
    let url_server = halo_tests::spawn(gateway.router()).await;
    let url = url_server.url("");
    let http = reqwest::Client::new();
    let get = |path: &'static str| {
        http.get(format!("{url}/reports{path}"))
            .bearer_auth("the-callers-own-token")
            .send()
    };

    let first = get("/report").await.unwrap();
    assert_eq!(first.text().await.unwrap(), "Bearer t-1");
    // Kept while fresh.
    assert_eq!(
        get("/report").await.unwrap().text().await.unwrap(),
        "Bearer t-1"
    );
    assert_eq!(issued.load(Ordering::SeqCst), 1);
    // Refused: passed on, and the next call gets a new one.
    assert_eq!(
        get("/revoked").await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(get("/revoked").await.unwrap().status(), StatusCode::OK);
    assert_eq!(issued.load(Ordering::SeqCst), 2);
    let asked = asked.lock().unwrap().join("\n");
    assert!(asked.contains("grant_type=client_credentials"), "{asked}");
    assert!(
        asked.contains("resource=https%3A%2F%2Freports.example.com"),
        "{asked}"
    );
    assert!(asked.contains("scope=reports"), "{asked}");
    assert!(!asked.contains("the-callers-own-token"), "{asked}");

    // A token endpoint that cannot be reached is the gateway's problem, said as one.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = closed.local_addr().unwrap();
    drop(closed);
    let text = text.replace(&issuer, &format!("http://{nowhere}"));
    let config = Config::from_text_with_env(&text, dir.path(), |_| Some("s".to_owned())).unwrap();
    let gateway = Gateway::build(&config).await.unwrap();
    let url_server = halo_tests::spawn(gateway.router()).await;
    let url = url_server.url("");
    let answer = reqwest::get(format!("{url}/reports/report")).await.unwrap();
    assert_eq!(answer.status(), StatusCode::BAD_GATEWAY);
    assert!(
        answer
            .text()
            .await
            .unwrap()
            .contains("access token for the upstream `reports`")
    );
}
