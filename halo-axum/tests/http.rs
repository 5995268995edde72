//! Every discovery rule over real HTTP: a server on a loopback port, a real client.

use crate::common;

use std::net::SocketAddr;

use axum::Router;
use axum::routing::options;
use halo_axum::HaloLayer;
use halo_tests::json::each_str;
use reqwest::{Method, StatusCode, header};
use serde_json::Value;
use tower_http::cors::CorsLayer;

/// The pet shop behind CORS, behind HALO, on a free port.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn petshop() -> String {
    let (router, api) = common::petshop();
    serve(
        router
            .layer(CorsLayer::permissive())
            .layer(HaloLayer::from_openapi(api)),
    )
    .await
}

async fn options_with(base: &str, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = reqwest::Client::new().request(Method::OPTIONS, format!("{base}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

async fn halo(base: &str, path: &str) -> reqwest::Response {
    options_with(base, path, &[("accept", "application/llm+json")]).await
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .map_or("", |v| v.to_str().unwrap())
}

#[tokio::test]
async fn accept_variants_that_activate() {
    let base = petshop().await;
    for accept in [
        "application/llm+json",
        "application/llm+json, application/json;q=0.5",
        "application/json;q=0.5, application/llm+json",
        "application/llm+json; charset=utf-8",
        "APPLICATION/LLM+JSON",
        "text/html,application/llm+json;q=0.1",
    ] {
        let response = options_with(&base, "/", &[("accept", accept)]).await;
        assert_eq!(response.status(), StatusCode::OK, "{accept}");
        assert_eq!(
            header(&response, "content-type"),
            "application/llm+json",
            "{accept}"
        );
        assert_eq!(header(&response, "vary"), "accept");
        let manifest: Value = response.json().await.unwrap();
        assert_eq!(manifest["api"], "Pet Shop");
    }
}

#[tokio::test]
async fn accept_variants_that_do_not_activate() {
    let base = petshop().await;
    for accept in [
        "*/*",
        "application/*",
        "application/json",
        "application/llm+json;q=0",
        "garbage;;;,\"",
        "",
    ] {
        let response = options_with(&base, "/pets", &[("accept", accept)]).await;
        // CorsLayer answers every plain OPTIONS itself: the application's own answer.
        assert_eq!(response.status(), StatusCode::OK, "{accept}");
        assert_ne!(
            header(&response, "content-type"),
            "application/llm+json",
            "{accept}"
        );
        assert!(response.bytes().await.unwrap().is_empty(), "{accept}");
    }
}

#[tokio::test]
async fn per_path_arrays_match_templates() {
    let base = petshop().await;
    for path in ["/pets/42", "/pets/{id}", "/pets/anything"] {
        let response = halo(&base, path).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let schemas: Value = response.json().await.unwrap();
        let methods = each_str(&schemas, "/call/method");
        assert_eq!(methods, ["GET", "PUT", "DELETE"], "{path}");
        assert_eq!(schemas[0]["call"]["url"], "/pets/{id}");
    }
    let single: Value = halo(&base, "/categories").await.json().await.unwrap();
    assert_eq!(
        single.as_array().unwrap().len(),
        1,
        "one method is still an array"
    );
}

#[tokio::test]
async fn tag_filters() {
    let base = petshop().await;
    let names = |manifest: Value| -> Vec<String> {
        let listed = each_str(&manifest["tools"], "/name");
        listed.into_iter().map(str::to_owned).collect()
    };
    let admin = names(halo(&base, "/?tags=admin").await.json().await.unwrap());
    assert_eq!(admin, ["delete_pet"]);
    let mut either = names(
        halo(&base, "/?tags=admin,categories")
            .await
            .json()
            .await
            .unwrap(),
    );
    either.sort();
    assert_eq!(either, ["categories", "delete_pet"]);
    let mut encoded = names(
        halo(&base, "/?tags=admin%2Ccategories")
            .await
            .json()
            .await
            .unwrap(),
    );
    encoded.sort();
    assert_eq!(encoded, either);
    let all = names(halo(&base, "/").await.json().await.unwrap());
    assert_eq!(
        names(halo(&base, "/?tags=").await.json().await.unwrap()),
        all
    );
    for query in [
        "tags=nope",
        "tags=Admin",
        "tags=%zz",
        "tags=%ff",
        &format!("tags={}", "x".repeat(60_000)),
    ] {
        let response = halo(&base, &format!("/?{query}")).await;
        assert_eq!(response.status(), StatusCode::OK, "{query:.40}");
        assert!(
            names(response.json().await.unwrap()).is_empty(),
            "{query:.40}"
        );
    }
}

#[tokio::test]
async fn unknown_paths_are_404_problems() {
    let base = petshop().await;
    for path in [
        "/nope",
        "/pets/1/2",
        "/pets/",
        &format!("/{}", "a/".repeat(4000)),
        "/%ff%fe",
        "/pets/%zz",
    ] {
        let response = halo(&base, path).await;
        let status = response.status();
        if path == "/pets/%zz" {
            assert_eq!(
                status,
                StatusCode::OK,
                "a raw segment still matches the template"
            );
            continue;
        }
        assert_eq!(status, StatusCode::NOT_FOUND, "{path:.40}");
        assert_eq!(
            header(&response, "content-type"),
            "application/problem+json"
        );
        let problem: Value = response.json().await.unwrap();
        assert_eq!(problem["status"], 404);
        assert_eq!(problem["title"], "Not Found");
    }
}

#[tokio::test]
async fn etags_and_304() {
    let base = petshop().await;
    for path in ["/", "/pets/1", "/?tags=read"] {
        let first = halo(&base, path).await;
        let etag = header(&first, "etag").to_owned();
        assert!(etag.starts_with('"') && etag.len() > 2, "{path}: {etag}");
        assert_eq!(header(&first, "cache-control"), "public, max-age=60");
        let accept = ("accept", "application/llm+json");
        let again = options_with(&base, path, &[accept, ("if-none-match", &etag)]).await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
        assert_eq!(header(&again, "etag"), etag);
        assert_eq!(header(&again, "vary"), "accept");
        assert!(again.bytes().await.unwrap().is_empty());
        let stale = options_with(&base, path, &[accept, ("if-none-match", "\"other\"")]).await;
        assert_eq!(stale.status(), StatusCode::OK);
    }
    let all = header(&halo(&base, "/").await, "etag").to_owned();
    let filtered = header(&halo(&base, "/?tags=admin").await, "etag").to_owned();
    assert_ne!(
        all, filtered,
        "a filtered manifest is another representation"
    );
}

#[tokio::test]
async fn cors_preflight_is_answered_by_the_app() {
    let base = petshop().await;
    let response = options_with(
        &base,
        "/pets",
        &[
            ("origin", "https://ui.example"),
            ("access-control-request-method", "POST"),
            ("accept", "*/*"),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header(&response, "access-control-allow-origin"), "*");
    assert!(header(&response, "vary").contains("accept"));
}

#[tokio::test]
async fn plain_options_without_an_app_answer_is_204_with_allow() {
    let (router, api) = common::petshop();
    let base = serve(router.layer(HaloLayer::from_openapi(api))).await;
    let response = options_with(&base, "/pets/3", &[]).await;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let allow = header(&response, "allow");
    for method in ["GET", "PUT", "DELETE", "OPTIONS"] {
        assert!(allow.contains(method), "{allow}");
    }
    assert_eq!(header(&response, "vary"), "accept");
    // Paths the app does not route keep the app's answer.
    assert_eq!(
        options_with(&base, "/nope", &[]).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn an_app_options_handler_keeps_working() {
    let (router, api) = common::petshop();
    let router = router.route("/custom", options(|| async { "mine" }));
    let base = serve(router.layer(HaloLayer::from_openapi(api))).await;
    let response = options_with(&base, "/custom", &[]).await;
    assert_eq!(response.text().await.unwrap(), "mine");
}

#[tokio::test]
async fn other_methods_pass_through_untouched() {
    let base = petshop().await;
    let response = reqwest::Client::new()
        .get(format!("{base}/pets"))
        .header(header::ACCEPT, "application/llm+json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get("etag").is_none());
    let page: Value = response.json().await.unwrap();
    assert_eq!(page["total"], 0);
}

#[tokio::test]
async fn outermost_placement_outside_the_router_works_too() {
    use tower_layer::Layer;
    let (router, api) = common::petshop();
    let app = HaloLayer::from_openapi(api).layer(router.layer(CorsLayer::permissive()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            axum::ServiceExt::<axum::extract::Request>::into_make_service(app),
        )
        .await
        .unwrap();
    });
    let base = format!("http://{addr}");
    assert_eq!(halo(&base, "/nope").await.status(), StatusCode::NOT_FOUND);
    assert_eq!(halo(&base, "/pets/1").await.status(), StatusCode::OK);
    assert_eq!(
        options_with(
            &base,
            "/pets",
            &[
                ("origin", "https://x"),
                ("access-control-request-method", "GET")
            ]
        )
        .await
        .status(),
        StatusCode::OK
    );
}
