//! What `HaloLayer` costs, each figure as a ratio to a baseline measured in the same run (the
//! machines these run on are noisy, so absolute times mean little):
//!
//! - `get/*`: a `GET` through the pet shop router with the layer (`router.layer(halo)`, as the
//!   docs recommend) against the same router without it. Two controls: `identity_layer` is the
//!   router with a no-op layer applied the same way (what axum's per-route layering costs by
//!   itself), `halo_outer` wraps the whole router once (`halo.layer(router)`).
//! - `manifest/*`: `OPTIONS /` + `Accept: application/llm+json` answered by the layer, against
//!   an axum `GET` handler that returns the same manifest bytes with a content type.
//! - `build/*`: building the layer for a generated document of 1,000 operations.
//! - `tags_1000/*`: `OPTIONS /?tags=x` (rendered per request) against `OPTIONS /`
//!   (pre-rendered) on a 1,000-tool registry.
//!
//! Run `cargo bench -p halo-axum --bench discovery`, then `python3 halo-axum/benches/ratios.py`.

mod support;

use std::convert::Infallible;
use std::hint::black_box;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use axum::routing::get;
use bytes::Bytes;
use criterion::{BatchSize, Criterion, criterion_main};
use halo_axum::{HaloBuilder, HaloLayer};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, StatusCode};
use http_body_util::BodyExt;
use tokio::runtime::Runtime;
use tower::ServiceExt;
use tower::layer::Layer;
use tower::layer::util::Identity;
use tower_service::Service;

const HALO: HeaderValue = HeaderValue::from_static("application/llm+json");

/// Operations of the generated document.
const OPERATIONS: usize = 1_000;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

/// Calls a clone of the service once and collects the body, as a server would write it.
async fn call<S>(service: &S, request: Request<Body>) -> (StatusCode, Bytes)
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
{
    let response = service
        .clone()
        .oneshot(request)
        .await
        .unwrap_or_else(|never| match never {});
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("an in-memory body")
        .to_bytes();
    (status, body)
}

fn request(method: Method, uri: &str, accept: Option<HeaderValue>) -> Request<Body> {
    let mut request = Request::new(Body::empty());
    *request.method_mut() = method;
    *request.uri_mut() = uri.parse().expect("a valid URI");
    if let Some(accept) = accept {
        request.headers_mut().insert(ACCEPT, accept);
    }
    request
}

fn get_pet() -> Request<Body> {
    request(Method::GET, "/pets/42", None)
}

fn discover(uri: &str) -> Request<Body> {
    request(Method::OPTIONS, uri, Some(HALO))
}

/// Checks once, outside the timing, that a service answers as the benchmark assumes.
fn expect<S>(rt: &Runtime, service: &S, request: Request<Body>, status: StatusCode) -> Bytes
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
{
    let (got, body) = rt.block_on(call(service, request));
    assert_eq!(got, status, "{}", String::from_utf8_lossy(&body));
    body
}

/// (a) A `GET` that the layer passes through.
fn get_passthrough(c: &mut Criterion) {
    let rt = runtime();
    let (router, api) = support::petshop();
    let halo = HaloLayer::from_openapi(api);
    let plain = router.clone();
    let layered = router.clone().layer(halo.clone());
    let identity = router.clone().layer(Identity::new());
    let outer = halo.layer(router);

    let body = expect(&rt, &plain, get_pet(), StatusCode::OK);
    assert_eq!(expect(&rt, &layered, get_pet(), StatusCode::OK), body);
    assert_eq!(expect(&rt, &identity, get_pet(), StatusCode::OK), body);
    assert_eq!(expect(&rt, &outer, get_pet(), StatusCode::OK), body);

    let mut group = c.benchmark_group("get");
    group.bench_function("plain", |b| {
        b.iter(|| black_box(rt.block_on(call(&plain, get_pet()))));
    });
    group.bench_function("halo_layer", |b| {
        b.iter(|| black_box(rt.block_on(call(&layered, get_pet()))));
    });
    group.bench_function("identity_layer", |b| {
        b.iter(|| black_box(rt.block_on(call(&identity, get_pet()))));
    });
    group.bench_function("halo_outer", |b| {
        b.iter(|| black_box(rt.block_on(call(&outer, get_pet()))));
    });
    group.finish();
}

/// (b) The manifest, answered by the layer or by an ordinary handler returning the same bytes.
fn manifest(c: &mut Criterion) {
    let rt = runtime();
    let (router, api) = support::petshop();
    let halo = HaloLayer::from_openapi(api);
    let layered = router.clone().layer(halo.clone());
    let outer = halo.layer(router.clone());

    let manifest = expect(&rt, &layered, discover("/"), StatusCode::OK);
    let served = manifest.clone();
    let static_get: Router = router.route(
        "/static-manifest",
        get(move || {
            let body = served.clone();
            async move { ([(CONTENT_TYPE, HALO)], body) }
        }),
    );
    let static_request = || request(Method::GET, "/static-manifest", Some(HALO));
    assert_eq!(
        expect(&rt, &static_get, static_request(), StatusCode::OK),
        manifest
    );
    assert_eq!(expect(&rt, &outer, discover("/"), StatusCode::OK), manifest);

    let mut group = c.benchmark_group("manifest");
    group.bench_function("static_get", |b| {
        b.iter(|| black_box(rt.block_on(call(&static_get, static_request()))));
    });
    group.bench_function("halo_layer", |b| {
        b.iter(|| black_box(rt.block_on(call(&layered, discover("/")))));
    });
    group.bench_function("halo_outer", |b| {
        b.iter(|| black_box(rt.block_on(call(&outer, discover("/")))));
    });
    group.finish();
}

/// (c) Building the layer for 1,000 operations, from JSON and from a utoipa document.
fn build(c: &mut Criterion) {
    let document = support::generated_document(OPERATIONS);
    let api: utoipa::openapi::OpenApi =
        serde_json::from_value(document.clone()).expect("the generated document is OpenAPI");
    let from_json = HaloBuilder::from_openapi_json(document.clone())
        .build()
        .expect("the generated document is valid HALO");
    let from_utoipa = HaloLayer::builder(api.clone())
        .build()
        .expect("the generated document is valid HALO");

    // Both ways in describe every operation, with the same manifest.
    let rt = runtime();
    let manifest = |layer: HaloLayer| {
        let service = layer.layer(Router::new());
        let body = expect(&rt, &service, discover("/"), StatusCode::OK);
        let manifest: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        manifest
    };
    let expected = manifest(from_json);
    assert_eq!(
        expected["tools"].as_array().map(Vec::len),
        Some(OPERATIONS),
        "every generated operation is a tool"
    );
    assert_eq!(manifest(from_utoipa), expected);

    let mut group = c.benchmark_group("build");
    group.sample_size(20);
    group.bench_function("from_openapi_json_1000", |b| {
        b.iter_batched(
            || document.clone(),
            |document| {
                HaloBuilder::from_openapi_json(document)
                    .build()
                    .expect("valid")
            },
            BatchSize::LargeInput,
        );
    });
    group.bench_function("builder_utoipa_1000", |b| {
        b.iter_batched(
            || api.clone(),
            |api| HaloLayer::builder(api).build().expect("valid"),
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

/// A tag-filtered manifest, rendered per request, against the pre-rendered full one.
fn tags(c: &mut Criterion) {
    let rt = runtime();
    let layer = HaloBuilder::from_openapi_json(support::generated_document(OPERATIONS))
        .build()
        .expect("valid");
    let service = layer.layer(Router::new());
    let full = expect(&rt, &service, discover("/"), StatusCode::OK);
    let filtered = expect(&rt, &service, discover("/?tags=x"), StatusCode::OK);
    assert!(filtered.len() < full.len() / 5, "the filter keeps a tenth");

    let mut group = c.benchmark_group("tags_1000");
    group.bench_function("unfiltered", |b| {
        b.iter(|| black_box(rt.block_on(call(&service, discover("/")))));
    });
    group.bench_function("filtered_x", |b| {
        b.iter(|| black_box(rt.block_on(call(&service, discover("/?tags=x")))));
    });
    group.finish();
}

// `criterion_group!` writes an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    use super::{build, get_passthrough, manifest, tags};

    criterion::criterion_group!(benches, get_passthrough, manifest, build, tags);
}

criterion_main!(group::benches);
