//! One governed call's own time, to compare two builds of the layer (a ratio measured by
//! running this bench on each; `scripts/compare-builds` builds an earlier commit with this
//! same file and alternates the runs):
//!
//! - `governed/oneshot_get`: a GET tool declaring a rate and a deadline (both far from
//!   reached) and a circuit breaker (closed), no approval required, in process
//!   (`tower::oneshot`) through the layer.
//! - `governed/http_get`: the same call over loopback HTTP from a reqwest client.
//!
//! The file, and the timing it shares with the other benches (`support/mod.rs`, which the
//! script copies too), is written so that it builds against layers older than circuit
//! breakers: the script removes the `circuit = …` key there, and nothing else differs.
//!
//! Run `cargo bench -p halo-axum --bench governed`. With `HALO_BENCH_CALLS=N` set, the
//! binary makes `N` in-process calls and exits instead, so that valgrind's cachegrind counts
//! the instructions a call takes: the script compares builds by that count as well as by
//! time.

mod support;

use std::hint::black_box;

use axum::extract::Path;
use axum::{Json, Router};
use criterion::Criterion;
use halo_axum::{HaloLayer, halo};
use http::StatusCode;
use serde_json::{Value, json};
use support::{call, get_once, get_request, runtime, serve, time};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Read a book (a rate, a deadline and a circuit breaker, none of them ever reached).
#[halo(rate = "1000000/second", timeout_ms = 5000, circuit = "5/30s/2")]
#[utoipa::path(get, path = "/governed/{id}", params(("id" = u64, Path)), responses((status = 200)))]
async fn governed_book(Path(id): Path<u64>) -> Json<Value> {
    Json(json!({"id": id, "title": "Dune"}))
}

#[derive(OpenApi)]
#[openapi(info(title = "Bench", version = "1"))]
struct Doc;

fn app() -> Router {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(governed_book))
        .split_for_parts();
    router.layer(HaloLayer::builder(api).build().expect("a layer"))
}

fn governed(c: &mut Criterion) {
    let rt = runtime();
    let app = app();
    assert_eq!(
        rt.block_on(call(&app, get_request("/governed/7"))),
        StatusCode::OK
    );
    let base = format!("{}/governed/7", rt.block_on(serve(app.clone())));
    let client = reqwest::Client::new();
    assert_eq!(rt.block_on(get_once(&client, &base)), StatusCode::OK);
    let mut group = c.benchmark_group("governed");
    group.bench_function("oneshot_get", |b| {
        b.iter_custom(|iters| time(&rt, iters, || call(&app, get_request("/governed/7"))));
    });
    group.bench_function("http_get", |b| {
        b.iter_custom(|iters| time(&rt, iters, || get_once(&client, &base)));
    });
    group.finish();
}

// `criterion_group!` writes an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::governed);
}

/// With `HALO_BENCH_CALLS=N` in the environment: makes `N` in-process calls and exits, for
/// cachegrind to count the instructions they take (a measure that barely moves with the
/// machine's noise, unlike time); else criterion's benches.
fn main() {
    if let Some(calls) = std::env::var("HALO_BENCH_CALLS")
        .ok()
        .and_then(|calls| calls.parse::<u64>().ok())
    {
        let rt = runtime();
        let app = app();
        black_box(time(&rt, calls, || call(&app, get_request("/governed/7"))));
        return;
    }
    group::benches();
    Criterion::default().configure_from_args().final_summary();
}
