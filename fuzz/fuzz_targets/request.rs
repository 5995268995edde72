//! Any request through a validating `HaloLayer` gets an answer, never a panic: the path and
//! query, headers and body are the fuzzer's. Input reaches the handler only when it is
//! valid, and every refusal is a problem+json with a status the layer documents.
#![no_main]

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::Path;
use halo_axum::{HaloLayer, Principal, StaticAuthenticator, ValidJson, Validation};
use http::{Method, Request};
use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use tower::ServiceExt;
use utoipa::{IntoParams, OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

/// Set by a handler: the layer let a request through.
static REACHED: AtomicBool = AtomicBool::new(false);

#[derive(Deserialize, ToSchema)]
struct Order {
    #[schema(min_length = 1, max_length = 40)]
    sku: String,
    #[schema(minimum = 1, maximum = 99)]
    quantity: u32,
    #[expect(dead_code, reason = "part of the schema the fuzzer's bodies must meet")]
    gift: Option<bool>,
    #[expect(dead_code, reason = "part of the schema the fuzzer's bodies must meet")]
    notes: Vec<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
struct Paging {
    #[param(maximum = 50)]
    limit: Option<u32>,
    tags: Option<Vec<String>>,
}

/// Place an order.
#[utoipa::path(post, path = "/shops/{shop}/orders", params(("shop" = u32, Path),
    ("X-Trace" = Option<String>, Header), Paging), request_body = Order,
    responses((status = 201)))]
async fn place(Path(_shop): Path<u32>, ValidJson(order): ValidJson<Order>) -> &'static str {
    // Validation ran before the handler: what arrives keeps the schema's bounds.
    let sku = order.sku.chars().count();
    assert!(
        (1..=40).contains(&sku),
        "an sku of {sku} characters got through"
    );
    assert!(
        (1..=99).contains(&order.quantity),
        "quantity {} got through",
        order.quantity
    );
    REACHED.store(true, Ordering::SeqCst);
    "placed"
}

/// Read one order.
#[utoipa::path(get, path = "/shops/{shop}/orders/{id}",
    params(("shop" = u32, Path), ("id" = String, Path)), responses((status = 200)),
    security(("bearer" = [])))]
async fn read(Path((_shop, _id)): Path<(u32, String)>) -> &'static str {
    REACHED.store(true, Ordering::SeqCst);
    "order"
}

#[derive(OpenApi)]
#[openapi(info(title = "Fuzz", version = "1"))]
struct Doc;

fn app() -> &'static (tokio::runtime::Runtime, Router) {
    static APP: OnceLock<(tokio::runtime::Runtime, Router)> = OnceLock::new();
    APP.get_or_init(|| {
        let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
            .routes(routes!(place))
            .routes(routes!(read))
            .split_for_parts();
        let layer = HaloLayer::builder(api)
            .authenticator(StaticAuthenticator::new().bearer("t", Principal::new("p")))
            .body_limit(4096)
            .validate(Validation::On)
            .build()
            .expect("a layer");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        (runtime, router.layer(layer))
    })
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|b| *b == 0xFF);
    let method = match parts.next().and_then(|m| m.first()).map(|b| b % 4) {
        Some(0) => Method::GET,
        Some(1) => Method::POST,
        Some(2) => Method::OPTIONS,
        _ => Method::DELETE,
    };
    let target = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let Ok(uri) = format!("/shops/{target}").parse::<http::Uri>() else {
        return;
    };
    let mut request = Request::builder().method(method).uri(uri);
    let headers = parts.next().unwrap_or_default();
    for line in headers.split(|b| *b == b'\n') {
        if let Some(at) = line.iter().position(|b| *b == b':') {
            request = request.header(&line[..at], &line[at + 1..]);
        }
    }
    let body = parts.next().unwrap_or_default().to_vec();
    let Ok(request) = request.body(Body::from(body)) else {
        return;
    };
    let (runtime, router) = app();
    REACHED.store(false, Ordering::SeqCst);
    let response = runtime
        .block_on(router.clone().oneshot(request))
        .unwrap_or_else(|never| match never {});
    let status = response.status().as_u16();
    if REACHED.load(Ordering::SeqCst) {
        assert!(status < 300, "a handler ran and the answer is {status}");
    } else if status >= 400
        && response
            .headers()
            .get("content-type")
            .is_some_and(|v| v == "application/problem+json")
    {
        assert!(
            matches!(status, 400 | 401 | 403 | 404 | 405 | 413 | 415 | 422),
            "unexpected refusal {status}"
        );
    }
});
