//! What halo-client costs, against a local axum + `HaloLayer` server (the test suite's
//! `halo` server, `tests/support`), each figure read as a ratio to a baseline measured in the
//! same run (the machines these run on are noisy, so absolute times mean little):
//!
//! - `invoke_get/*`: `Client::invoke` of a GET tool with a path parameter (schema cached,
//!   connection warm) against the same request made with a bare `reqwest::Client`
//!   (`reqwest`), and with a `reqwest::Client` configured like the one halo-client builds
//!   (`reqwest_configured`: no redirects, 10 s connect timeout; halo-client's own 30 s
//!   timeout per attempt is part of the candidate). Every variant reads the whole body and
//!   parses it as JSON. Target: `halo_client / reqwest` ≤ 1.05.
//! - `invoke_paired/*`: the same ratios measured directly, candidate and baseline alternating call
//!   by call, so that load from other processes hits both alike. Criterion prints them as
//!   times: `1.0300 µs` means a ratio of 1.030. `untimed_over_reqwest` is the target ratio
//!   (a client built with `.timeout(None)`, like bare reqwest), `invoke_over_reqwest` the
//!   default client with its 30 s timer per attempt,
//!   `call_over_reqwest` the same without the cached `describe` (`Client::call` with the
//!   schema in hand), `configured_over_reqwest` what reqwest's own settings cost, and
//!   `reqwest_over_reqwest` the method's control (should read 1.00).
//! - `invoke_parts/describe_cached`: a `describe` answered from the cache, alone.
//! - `describe_all_50/*`: the schemas of 50 tools on 50 paths, the server adding 2 ms of
//!   latency to every `OPTIONS`: `describe_all` with concurrency 8 against one `describe`
//!   after another, each iteration on a fresh client (cold cache, new connections).
//!
//! See `benches/README.md` for the command and how to read the ratios.

#[path = "../tests/support/mod.rs"]
mod support;

use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, SamplingMode, criterion_main};
use halo_client::protocol::{ToolEntry, ToolSchema};
use halo_client::{Body, Client, Method};
use serde_json::json;
use support::halo;
use tokio::runtime::Runtime;

/// Client and server on one thread: no cross-thread wake-ups in the figures.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}

async fn halo_get(client: &Client) -> Body {
    client
        .invoke("/items/{id}", Method::GET, json!({"id": "7"}))
        .await
        .expect("the GET tool answers")
        .into_body()
}

async fn halo_call(client: &Client, schema: &ToolSchema) -> Body {
    client
        .call(schema, json!({"id": "7"}))
        .await
        .expect("the GET tool answers")
        .into_body()
}

async fn raw_get(client: &reqwest::Client, base: &str) -> serde_json::Value {
    let response = client
        .get(format!("{base}/items/7"))
        .send()
        .await
        .expect("the GET route answers");
    assert!(response.status().is_success());
    let bytes = response.bytes().await.expect("a body");
    serde_json::from_slice(&bytes).expect("a JSON body")
}

fn invoke(c: &mut Criterion) {
    let rt = runtime();
    let server = rt.block_on(halo::Server::builder().record(false).start());
    let base = server.base.clone();
    let client = Client::new(&base).expect("a client");
    let untimed = Client::builder(&base)
        .timeout(None)
        .build()
        .expect("a client");
    let raw = reqwest::Client::new();
    let configured = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .build()
        .expect("a reqwest client");
    // Warm everything: the schema cache and one pooled connection per client.
    let schema = rt.block_on(async {
        let schema = client
            .describe("/items/{id}", Method::GET)
            .await
            .expect("the schema");
        assert_eq!(
            halo_get(&client).await,
            Body::Json(raw_get(&raw, &base).await)
        );
        raw_get(&configured, &base).await;
        halo_get(&untimed).await;
        schema
    });
    let (client, untimed, raw, configured, base, schema) =
        (&client, &untimed, &raw, &configured, &base, &schema);

    let mut group = c.benchmark_group("invoke_get");
    group.bench_function("halo_client", |b| {
        b.to_async(&rt).iter(|| halo_get(client));
    });
    group.bench_function("reqwest", |b| {
        b.to_async(&rt).iter(|| raw_get(raw, base));
    });
    group.bench_function("reqwest_configured", |b| {
        b.to_async(&rt).iter(|| raw_get(configured, base));
    });
    group.finish();

    let mut group = c.benchmark_group("invoke_paired");
    group.bench_function("invoke_over_reqwest", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| paired(iters, || halo_get(client), || raw_get(raw, base)));
    });
    group.bench_function("untimed_over_reqwest", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| paired(iters, || halo_get(untimed), || raw_get(raw, base)));
    });
    group.bench_function("call_over_reqwest", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            paired(iters, || halo_call(client, schema), || raw_get(raw, base))
        });
    });
    group.bench_function("configured_over_reqwest", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            paired(iters, || raw_get(configured, base), || raw_get(raw, base))
        });
    });
    group.bench_function("reqwest_over_reqwest", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| paired(iters, || raw_get(raw, base), || raw_get(raw, base)));
    });
    group.finish();

    let mut group = c.benchmark_group("invoke_parts");
    group.bench_function("describe_cached", |b| {
        b.to_async(&rt)
            .iter(|| client.describe("/items/{id}", Method::GET));
    });
    group.finish();
}

/// Runs `candidate` and `baseline` `iters` times each, alternating which goes first, and
/// returns `candidate time / baseline time` as a per-iteration time of that many
/// microseconds.
async fn paired<C, CF, CO, B, BF, BO>(iters: u64, mut candidate: C, mut baseline: B) -> Duration
where
    C: FnMut() -> CF,
    CF: Future<Output = CO>,
    B: FnMut() -> BF,
    BF: Future<Output = BO>,
{
    let (mut spent, mut reference) = (Duration::ZERO, Duration::ZERO);
    for i in 0..iters {
        for turn in [i % 2, (i + 1) % 2] {
            let started = Instant::now();
            if turn == 0 {
                black_box(candidate().await);
                spent += started.elapsed();
            } else {
                black_box(baseline().await);
                reference += started.elapsed();
            }
        }
    }
    let ratio = spent.as_secs_f64() / reference.as_secs_f64().max(f64::MIN_POSITIVE);
    #[allow(clippy::cast_precision_loss)] // iteration counts stay far below 2^52
    Duration::from_secs_f64(ratio * 1e-6 * iters as f64)
}

/// Tools (one per path) of the `describe_all` benchmark.
const TOOLS: usize = 50;

fn describe_all(c: &mut Criterion) {
    let rt = runtime();
    let server = rt.block_on(
        halo::Server::builder()
            .many(TOOLS, 1)
            .options_latency(Duration::from_millis(2))
            .record(false)
            .start(),
    );
    let base = server.base.clone();
    let tools: Vec<ToolEntry> = rt
        .block_on(Client::new(&base).expect("a client").discover(&[]))
        .expect("the manifest")
        .tools;
    assert_eq!(tools.len(), TOOLS);
    let tools = &tools;
    let fresh = |concurrency: usize| {
        Client::builder(&base)
            .concurrency(concurrency)
            .build()
            .expect("a client")
    };

    let mut group = c.benchmark_group("describe_all_50");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.bench_function("concurrent_8", |b| {
        b.to_async(&rt).iter_batched(
            || fresh(8),
            |client| async move { client.describe_all(tools).await.expect("schemas") },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("sequential", |b| {
        b.to_async(&rt).iter_batched(
            || fresh(1),
            |client| async move {
                for tool in tools {
                    let method = Method::from_bytes(tool.method.as_bytes()).expect("a method");
                    black_box(client.describe(&tool.url, method).await.expect("a schema"));
                }
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

// `criterion_group!` writes an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    use super::{describe_all, invoke};

    criterion::criterion_group!(benches, invoke, describe_all);
}

criterion_main!(group::benches);
