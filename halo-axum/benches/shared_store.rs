//! A governed call whose state lives in Redis, on one server and on a three-node Redis
//! Cluster, in the same run:
//!
//! - `shared_store/keyed_post_cluster_vs_single`: `POST /orders` over loopback HTTP with a
//!   new `Idempotency-Key` each time (claimed, then its answer kept: two scripts) and a rate
//!   (one more), through a layer whose store is a cluster, against the same call through a
//!   layer on one server, in alternating rounds (criterion's `1.0300 µs` reads "ratio
//!   1.030"). The servers are processes of their own on loopback (`redis-server`, as the
//!   tests start them).
//!
//! Run `cargo bench -p halo-axum --features redis --bench shared_store`.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use criterion::Criterion;
use halo_axum::{HaloLayer, IdempotencyLimits, RedisStore, halo};
use halo_tests::redis::RedisServer;
use halo_tests::redis_cluster::RedisCluster;
use http::StatusCode;
use serde_json::{Value, json};
use support::{answered, paired, runtime, serve, time};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Place an order, once per key (a rate far from reached).
#[halo(idempotency_key = "Idempotency-Key", rate = "1000000/second")]
#[utoipa::path(post, path = "/orders", responses((status = 201)))]
async fn order() -> (StatusCode, Json<Value>) {
    (StatusCode::CREATED, Json(json!({"order": 1})))
}

#[derive(OpenApi)]
#[openapi(info(title = "Orders", version = "1"))]
struct Doc;

/// The app with its layer on `store`, served on loopback: its URL of `/orders`.
async fn orders_on(store: RedisStore) -> String {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(order))
        .split_for_parts();
    let layer = HaloLayer::builder(api)
        .redis(store.prefix("bench:"))
        .idempotency_ttl(Duration::from_secs(60))
        .idempotency_limits(IdempotencyLimits::new().per_caller(10_000_000))
        .build()
        .expect("a layer");
    serve(router.layer(layer)).await + "/orders"
}

fn bench(c: &mut Criterion) {
    let rt = runtime();
    let server = RedisServer::start();
    let cluster = RedisCluster::start();
    let single = rt.block_on(orders_on(RedisStore::open(&server.url()).expect("a URL")));
    let clustered = rt.block_on(orders_on(
        RedisStore::open_cluster(cluster.urls()).expect("URLs"),
    ));
    let client = reqwest::Client::new();
    let keys = AtomicU64::new(0);
    let post = |url: &str| {
        let key = keys.fetch_add(1, Ordering::Relaxed).to_string();
        answered(client.post(url).header("idempotency-key", key))
    };
    // Warm both: connections made, scripts loaded on every node.
    for url in [&single, &clustered] {
        for _ in 0..200 {
            assert_eq!(rt.block_on(post(url)), StatusCode::CREATED);
        }
    }
    // What one call takes on each, for the record beside the ratio.
    for (name, url) in [("single", &single), ("cluster", &clustered)] {
        let took = time(&rt, 500, || post(url));
        eprintln!(
            "shared_store: {name}: {:.0} µs a call",
            took.as_secs_f64() * 1e6 / 500.0
        );
    }
    let mut group = c.benchmark_group("shared_store");
    group.bench_function("keyed_post_cluster_vs_single", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || post(&single)),
                |n| time(&rt, n, || post(&clustered)),
            )
        });
    });
    group.finish();
}

// `criterion_group!` writes an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group! {
        name = benches;
        config = criterion::Criterion::default().measurement_time(std::time::Duration::from_secs(10));
        targets = super::bench
    }
}
criterion::criterion_main!(group::benches);
