//! What `HaloLayer` costs, each figure as a ratio to a baseline measured in the same run (the
//! machines these run on are noisy, so absolute times mean little):
//!
//! - `get/*`: a `GET` through the pet shop router with the layer (`router.layer(halo)`, as the
//!   docs recommend) against the same router without it. Two controls: `identity_layer` is the
//!   router with a no-op layer applied the same way (what axum's per-route layering costs by
//!   itself), `halo_outer` wraps the whole router once (`halo.layer(router)`). The paired
//!   `get_arc_outer_vs_plain` wraps it once in a pass-through service holding an `Arc`, as
//!   the layer's service does: what cloning the service per request costs by itself.
//! - `manifest/*`: `OPTIONS /` + `Accept: application/llm+json` answered by the layer, against
//!   an axum `GET` handler that returns the same manifest bytes with a content type.
//! - `build/*`: building the layer for a generated document of 1,000 operations.
//! - `tags_1000/*`: `OPTIONS /?tags=x` (rendered per request) against `OPTIONS /`
//!   (pre-rendered) on a 1,000-tool registry.
//! - `paired/*`: the ratios of `get/*` and `manifest/*` measured directly, baseline and
//!   candidate alternating every few calls, so that load from other processes hits both
//!   alike. Criterion prints them as times: `1.0300 µs` means a ratio of 1.030.
//!   `*_metrics_vs_off`: the outer layer built with `metrics(true)` (no recorder installed)
//!   against the same without, for the manifest and for a GET that metrics send through the
//!   layer's execution path.
//!
//! Run `cargo bench -p halo-axum --bench discovery`, then `python3 halo-axum/benches/ratios.py`.

mod support;

use std::convert::Infallible;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use axum::routing::get;
use bytes::Bytes;
use criterion::{BatchSize, Criterion, criterion_main};
use halo_axum::{Halo, HaloBuilder, HaloLayer};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, StatusCode};
use support::runtime;
use tokio::runtime::Runtime;
use tower::layer::Layer;
use tower::layer::util::Identity;
use tower_service::Service;

const HALO: HeaderValue = HeaderValue::from_static("application/llm+json");

/// Operations of the generated document.
const OPERATIONS: usize = 1_000;

/// Calls a clone of the service once and collects the body, as a server would write it.
async fn call<S>(service: &S, request: Request<Body>) -> (StatusCode, Bytes)
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
{
    halo_tests::oneshot(service, request).await
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

/// The pet shop four ways, checked to answer alike.
struct Apps {
    rt: Runtime,
    /// The router as the application built it.
    plain: Router,
    /// `router.layer(halo)`, as the docs recommend.
    layered: Router,
    /// `router.layer(Identity)`: what axum's per-route layering costs with a no-op layer.
    identity: Router,
    /// `halo.layer(router)`: the whole router wrapped once.
    outer: Halo<Router>,
    /// `router.layer(ArcPassThroughLayer)`: each route wrapped in a pass-through service that
    /// only holds an `Arc`, as `router.layer(halo)` wraps each in the layer's service.
    arc_layered: Router,
    /// The router wrapped once by a service that only holds an `Arc`, as the layer's does:
    /// what the per-request clone of a wrapping service costs by itself.
    arc_outer: ArcPassThrough<Router>,
    /// The same with `metrics(true)`, and no recorder installed.
    metered: Halo<Router>,
    /// The router plus `GET /static-manifest`, a handler returning the manifest's bytes.
    static_get: Router,
}

impl Apps {
    fn new() -> Self {
        let rt = runtime();
        let (router, api) = support::petshop();
        let metered = HaloLayer::builder(api.clone())
            .metrics(true)
            .build()
            .expect("a layer")
            .layer(router.clone());
        let halo = HaloLayer::from_openapi(api);
        let plain = router.clone();
        let layered = router.clone().layer(halo.clone());
        let identity = router.clone().layer(Identity::new());
        let outer = halo.layer(router.clone());
        let shared = Arc::new([0; 64]);
        let arc_outer = ArcPassThrough {
            inner: router.clone(),
            shared: Arc::clone(&shared),
        };
        let arc_layered = router.clone().layer(ArcPassThroughLayer(shared));

        let body = expect(&rt, &plain, get_pet(), StatusCode::OK);
        assert_eq!(expect(&rt, &layered, get_pet(), StatusCode::OK), body);
        assert_eq!(expect(&rt, &identity, get_pet(), StatusCode::OK), body);
        assert_eq!(expect(&rt, &outer, get_pet(), StatusCode::OK), body);
        assert_eq!(expect(&rt, &arc_outer, get_pet(), StatusCode::OK), body);
        assert_eq!(expect(&rt, &arc_layered, get_pet(), StatusCode::OK), body);
        assert_eq!(expect(&rt, &metered, get_pet(), StatusCode::OK), body);

        let manifest = expect(&rt, &layered, discover("/"), StatusCode::OK);
        assert_eq!(expect(&rt, &outer, discover("/"), StatusCode::OK), manifest);
        let served = manifest.clone();
        let static_get = router.route(
            "/static-manifest",
            get(move || {
                let body = served.clone();
                async move { ([(CONTENT_TYPE, HALO)], body) }
            }),
        );
        assert_eq!(
            expect(&rt, &static_get, static_manifest(), StatusCode::OK),
            manifest
        );
        Self {
            rt,
            plain,
            layered,
            identity,
            outer,
            arc_outer,
            arc_layered,
            metered,
            static_get,
        }
    }

    /// One request through a service, body collected.
    fn once<S>(&self, service: &S, request: Request<Body>) -> (StatusCode, Bytes)
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
    {
        self.rt.block_on(call(service, request))
    }

    /// How long `n` requests take.
    fn time<S>(&self, n: u64, (service, request): (&S, fn() -> Request<Body>)) -> Duration
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
    {
        let start = Instant::now();
        for _ in 0..n {
            black_box(self.once(service, request()));
        }
        start.elapsed()
    }
}

fn static_manifest() -> Request<Body> {
    request(Method::GET, "/static-manifest", Some(HALO))
}

/// A service that passes every request to `inner` and holds shared state it never reads:
/// cloned per request (as axum clones its service), it costs what cloning an `Arc` costs.
#[derive(Clone)]
struct ArcPassThrough<S> {
    inner: S,
    shared: Arc<[u8; 64]>,
}

impl<S: Service<Request<Body>>> Service<Request<Body>> for ArcPassThrough<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        black_box(&self.shared);
        self.inner.call(request)
    }
}

/// Wraps each route of a router in an [`ArcPassThrough`].
#[derive(Clone)]
struct ArcPassThroughLayer(Arc<[u8; 64]>);

impl<S> Layer<S> for ArcPassThroughLayer {
    type Service = ArcPassThrough<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ArcPassThrough {
            inner,
            shared: Arc::clone(&self.0),
        }
    }
}

/// (a) A `GET` that the layer passes through.
fn get_passthrough(c: &mut Criterion) {
    let apps = Apps::new();
    let mut group = c.benchmark_group("get");
    group.bench_function("plain", |b| {
        b.iter(|| black_box(apps.once(&apps.plain, get_pet())));
    });
    group.bench_function("halo_layer", |b| {
        b.iter(|| black_box(apps.once(&apps.layered, get_pet())));
    });
    group.bench_function("identity_layer", |b| {
        b.iter(|| black_box(apps.once(&apps.identity, get_pet())));
    });
    group.bench_function("halo_outer", |b| {
        b.iter(|| black_box(apps.once(&apps.outer, get_pet())));
    });
    group.finish();
}

/// (b) The manifest, answered by the layer or by an ordinary handler returning the same bytes.
fn manifest(c: &mut Criterion) {
    let apps = Apps::new();
    let mut group = c.benchmark_group("manifest");
    group.bench_function("static_get", |b| {
        b.iter(|| black_box(apps.once(&apps.static_get, static_manifest())));
    });
    group.bench_function("halo_layer", |b| {
        b.iter(|| black_box(apps.once(&apps.layered, discover("/"))));
    });
    group.bench_function("halo_outer", |b| {
        b.iter(|| black_box(apps.once(&apps.outer, discover("/"))));
    });
    group.finish();
}

/// [`support::paired`] of two services, each side's `n` requests timed by [`Apps::time`].
fn paired<A, B>(
    apps: &Apps,
    baseline: (&A, fn() -> Request<Body>),
    candidate: (&B, fn() -> Request<Body>),
) -> impl FnMut(u64) -> Duration
where
    A: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
    B: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
{
    move |iters| {
        support::paired(
            iters,
            |n| apps.time(n, baseline),
            |n| apps.time(n, candidate),
        )
    }
}

/// (a) and (b) again, as paired ratios.
fn paired_ratios(c: &mut Criterion) {
    let apps = Apps::new();
    let get: fn() -> Request<Body> = get_pet;
    let root: fn() -> Request<Body> = || discover("/");
    let mut group = c.benchmark_group("paired");
    // The control: a service against itself reads 1.000 when the method is sound.
    group.bench_function("get_plain_vs_plain", |b| {
        b.iter_custom(paired(&apps, (&apps.plain, get), (&apps.plain, get)));
    });
    group.bench_function("get_halo_layer_vs_plain", |b| {
        b.iter_custom(paired(&apps, (&apps.plain, get), (&apps.layered, get)));
    });
    group.bench_function("get_halo_outer_vs_plain", |b| {
        b.iter_custom(paired(&apps, (&apps.plain, get), (&apps.outer, get)));
    });
    group.bench_function("get_arc_outer_vs_plain", |b| {
        b.iter_custom(paired(&apps, (&apps.plain, get), (&apps.arc_outer, get)));
    });
    group.bench_function("get_halo_outer_vs_arc_outer", |b| {
        b.iter_custom(paired(&apps, (&apps.arc_outer, get), (&apps.outer, get)));
    });
    group.bench_function("get_arc_layered_vs_identity", |b| {
        b.iter_custom(paired(
            &apps,
            (&apps.identity, get),
            (&apps.arc_layered, get),
        ));
    });
    group.bench_function("get_halo_layer_vs_arc_layered", |b| {
        b.iter_custom(paired(
            &apps,
            (&apps.arc_layered, get),
            (&apps.layered, get),
        ));
    });
    group.bench_function("get_halo_layer_vs_identity", |b| {
        b.iter_custom(paired(&apps, (&apps.identity, get), (&apps.layered, get)));
    });
    group.bench_function("manifest_halo_layer_vs_static_get", |b| {
        b.iter_custom(paired(
            &apps,
            (&apps.static_get, static_manifest),
            (&apps.layered, root),
        ));
    });
    group.bench_function("manifest_halo_outer_vs_static_get", |b| {
        b.iter_custom(paired(
            &apps,
            (&apps.static_get, static_manifest),
            (&apps.outer, root),
        ));
    });
    group.bench_function("manifest_metrics_vs_off", |b| {
        b.iter_custom(paired(&apps, (&apps.outer, root), (&apps.metered, root)));
    });
    group.bench_function("get_metrics_vs_off", |b| {
        b.iter_custom(paired(&apps, (&apps.outer, get), (&apps.metered, get)));
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

    // Both ways in describe every operation alike (utoipa may list paths in another order).
    let rt = runtime();
    let tools = |layer: HaloLayer| {
        let service = layer.layer(Router::new());
        let body = expect(&rt, &service, discover("/"), StatusCode::OK);
        let manifest: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        let mut tools: Vec<String> = manifest["tools"]
            .as_array()
            .expect("a tool list")
            .iter()
            .map(ToString::to_string)
            .collect();
        tools.sort_unstable();
        tools
    };
    let expected = tools(from_json);
    assert_eq!(expected.len(), OPERATIONS, "every operation is a tool");
    assert!(
        tools(from_utoipa) == expected,
        "utoipa describes the same tools"
    );

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
    use super::{build, get_passthrough, manifest, paired_ratios, tags};

    criterion::criterion_group!(
        benches,
        get_passthrough,
        manifest,
        paired_ratios,
        build,
        tags
    );
}

criterion_main!(group::benches);
