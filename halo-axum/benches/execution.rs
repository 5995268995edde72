//! What executing through `HaloLayer` costs, each figure a ratio to a baseline measured in
//! the same run (the machines these run on are noisy, so absolute times mean little):
//!
//! - `validate_paired/post_1k_on_vs_off`: a valid `POST` with a 1 KiB JSON body through a
//!   layer that validates it (body read, parsed and checked against the schema before the
//!   handler) against the same layer with validation off, in process (`tower::oneshot`).
//!   The handler takes `ValidJson<T>`: with validation on it deserialises the layer's parsed
//!   value, with validation off it parses the bytes. Baseline and candidate alternate in
//!   rounds within every sample; criterion prints the ratio as a time (`1.0300 µs` = 1.030).
//! - `validate_paired/http_post_1k_on_vs_off`: the same through a loopback server and a
//!   reqwest client, as callers see it. Target: ≤ 1.10. `http_post_1k_formats_as_annotations_vs_off`:
//!   the same with `Validation::WithoutFormats`.
//! - `validate_paired/off_vs_off`: the method's control (reads 1.000 when sound).
//! - `sse_10k/*`: one call of a tool that emits 10,000 progress events, read by a reqwest
//!   client over loopback in the same process: the HALO stream (`halo_tool`, 10,002 events
//!   with start and end) against a plain axum `Sse` handler sending 10,002 events of the same
//!   size (`axum_sse`). Events per second = 10,002 / time.
//!
//! - `govern_paired/http_get_on_vs_off`: a GET tool whose schema declares a rate and a
//!   deadline (both enforced in memory, never reached) against the same tool declaring
//!   neither, over loopback HTTP. Target: ≤ 1.10.
//! - `govern_paired/http_get_on_metrics_vs_off`: the same, the governed tool's layer also
//!   counting and timing it (`metrics(true)`, no recorder installed). Target: ≤ 1.10.
//!   `http_get_metrics_vs_none`: the governed tool with metrics on / off, so the metrics
//!   alone. `http_get_plain_metrics_vs_off`: the undeclared tool with metrics on / off, which
//!   costs the layer's execution path that metrics force on every described call.
//!
//! - `breaker_paired/get_circuit_vs_governed`: the governed GET tool with a circuit breaker
//!   as well (closed: a lock, a check and a permit per call) against the same tool without
//!   one, in process (`tower::oneshot`). Target: ≤ 1.02. `http_get_circuit_vs_governed`: the
//!   same over loopback HTTP. `get_governed_vs_governed`: the method's control (1.000 when
//!   sound). `breaker/oneshot_get_{governed,circuit}`: the two calls' own
//!   times, whose difference is what the breaker costs a call (target: ≤ 100 ns).
//!
//! Run `cargo bench -p halo-axum --bench execution`, then `python3 halo-axum/benches/ratios.py`.

mod support;

use std::convert::Infallible;

use axum::body::Body;
use axum::response::IntoResponse;
use axum::response::sse::{Event, Sse};
use axum::routing::get;
use axum::{Json, Router};
use bytes::Bytes;
use criterion::{Criterion, SamplingMode, criterion_main};
use futures_util::stream;
use halo_axum::{HaloLayer, Progress, ValidJson, Validation, halo};
use http::{Method, Request, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::json;
use support::{answered, call, get_once, get_request, paired, runtime, serve, time};
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

/// Progress events the streaming tool emits.
const EVENTS: u64 = 10_000;

#[derive(Debug, Serialize, Deserialize, ToSchema)]
struct Review {
    #[schema(min_length = 1, max_length = 200)]
    title: String,
    #[schema(minimum = 1, maximum = 5)]
    stars: u8,
    #[schema(max_length = 2000)]
    text: String,
    tags: Vec<String>,
    #[schema(format = Email)]
    reviewer: String,
}

/// Post a review.
#[utoipa::path(post, path = "/books/{id}/reviews", params(("id" = u64, Path)),
    request_body = Review, responses((status = 201)))]
async fn post_review(ValidJson(review): ValidJson<Review>) -> impl IntoResponse {
    (StatusCode::CREATED, Json(json!({"stars": review.stars})))
}

/// Report 10,000 steps.
#[utoipa::path(post, path = "/work", responses((status = 200)))]
async fn work(progress: Progress) -> Json<serde_json::Value> {
    for step in 1..=EVENTS {
        progress.step(step, Some(EVENTS), "working");
    }
    Json(json!({"done": true}))
}

/// Read a book (no declared limits).
#[utoipa::path(get, path = "/plain/{id}", params(("id" = u64, Path)), responses((status = 200)))]
async fn plain_book(axum::extract::Path(id): axum::extract::Path<u64>) -> Json<serde_json::Value> {
    Json(json!({"id": id, "title": "Dune"}))
}

/// Read a book (a rate and a deadline, both far from reached).
#[halo(rate = "1000000/second", timeout_ms = 5000)]
#[utoipa::path(get, path = "/governed/{id}", params(("id" = u64, Path)), responses((status = 200)))]
async fn governed_book(
    axum::extract::Path(id): axum::extract::Path<u64>,
) -> Json<serde_json::Value> {
    Json(json!({"id": id, "title": "Dune"}))
}

/// Read a book (the same rate and deadline, and a circuit breaker that stays closed).
#[halo(rate = "1000000/second", timeout_ms = 5000, circuit = "5/30s/2")]
#[utoipa::path(get, path = "/breaker/{id}", params(("id" = u64, Path)), responses((status = 200)))]
async fn breaker_book(
    axum::extract::Path(id): axum::extract::Path<u64>,
) -> Json<serde_json::Value> {
    Json(json!({"id": id, "title": "Dune"}))
}

#[derive(OpenApi)]
#[openapi(info(title = "Bench", version = "1"))]
struct Doc;

/// A review of about 1 KiB as JSON.
fn review_body() -> Bytes {
    let review = Review {
        title: "A desert planet, and what it asks of those who live there".into(),
        stars: 5,
        text: "Spice, sand and politics. ".repeat(34),
        tags: vec!["classic".into(), "science-fiction".into(), "ecology".into()],
        reviewer: "reader@example.com".into(),
    };
    let body = serde_json::to_vec(&review).expect("a review serialises");
    assert!((1000..1100).contains(&body.len()), "{} bytes", body.len());
    Bytes::from(body)
}

fn post(body: &Bytes) -> Request<Body> {
    Request::builder()
        .method(Method::POST)
        .uri("/books/7/reviews")
        .header("content-type", "application/json")
        .body(Body::from(body.clone()))
        .expect("a request")
}

fn app(validate: bool) -> Router {
    app_with(validate, true, false)
}

/// The bench API, validating (`validate`), asserting formats (`formats`) and counting calls
/// (`metrics`) or not.
fn app_with(validate: bool, formats: bool, metrics: bool) -> Router {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(post_review))
        .routes(routes!(work))
        .routes(routes!(plain_book))
        .routes(routes!(governed_book))
        .routes(routes!(breaker_book))
        .split_for_parts();
    let validation = match (validate, formats) {
        (false, _) => Validation::Off,
        (true, true) => Validation::On,
        (true, false) => Validation::WithoutFormats,
    };
    let layer = HaloLayer::builder(api)
        .validate(validation)
        .metrics(metrics)
        .build()
        .expect("a layer");
    router.layer(layer)
}

fn validation(c: &mut Criterion) {
    let rt = runtime();
    let body = review_body();
    let (on, off) = (app(true), app(false));
    assert_eq!(rt.block_on(call(&on, post(&body))), StatusCode::CREATED);
    assert_eq!(rt.block_on(call(&off, post(&body))), StatusCode::CREATED);
    let invalid =
        Bytes::from_static(br#"{"title":"","stars":9,"text":"","tags":[],"reviewer":"x"}"#);
    assert_eq!(
        rt.block_on(call(&on, post(&invalid))),
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation is on"
    );

    let mut group = c.benchmark_group("validate_paired");
    group.bench_function("post_1k_on_vs_off", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || call(&off, post(&body))),
                |n| time(&rt, n, || call(&on, post(&body))),
            )
        });
    });
    group.bench_function("off_vs_off", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || call(&off, post(&body))),
                |n| time(&rt, n, || call(&off, post(&body))),
            )
        });
    });

    // The same over loopback HTTP: what a client of the server sees.
    let client = reqwest::Client::new();
    let (on_url, off_url, annotations_url) = rt.block_on(async {
        let on = serve(app(true)).await;
        let off = serve(app(false)).await;
        let annotations = serve(app_with(true, false, false)).await;
        (
            format!("{on}/books/7/reviews"),
            format!("{off}/books/7/reviews"),
            format!("{annotations}/books/7/reviews"),
        )
    });
    assert_eq!(
        rt.block_on(send(&client, &on_url, &body)),
        StatusCode::CREATED
    );
    assert_eq!(
        rt.block_on(send(&client, &off_url, &body)),
        StatusCode::CREATED
    );
    group.bench_function("http_post_1k_on_vs_off", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || send(&client, &off_url, &body)),
                |n| time(&rt, n, || send(&client, &on_url, &body)),
            )
        });
    });
    group.bench_function("http_post_1k_formats_as_annotations_vs_off", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || send(&client, &off_url, &body)),
                |n| time(&rt, n, || send(&client, &annotations_url, &body)),
            )
        });
    });
    group.bench_function("http_off_vs_off", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || send(&client, &off_url, &body)),
                |n| time(&rt, n, || send(&client, &off_url, &body)),
            )
        });
    });
    group.finish();
}

async fn send(client: &reqwest::Client, url: &str, body: &Bytes) -> StatusCode {
    let request = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.clone());
    answered(request).await
}

/// A plain axum SSE handler sending as many events, of the same size, as the HALO tool.
async fn axum_sse() -> impl IntoResponse {
    let frame = |id: u64, name: &'static str, data: String| {
        Ok::<_, Infallible>(Event::default().event(name).id(id.to_string()).data(data))
    };
    let start = std::iter::once(frame(
        1,
        "tool_start",
        r#"{"type":"tool_start","data":{"call_id":"c-00000000000000000000000000000000","tool":"work"}}"#.into(),
    ));
    let steps = (1..=EVENTS).map(move |step| {
        frame(
            step + 1,
            "tool_progress",
            format!(
                r#"{{"type":"tool_progress","data":{{"step":{step},"message":"working","total":{EVENTS}}}}}"#
            ),
        )
    });
    let end = std::iter::once(frame(
        EVENTS + 2,
        "tool_end",
        r#"{"type":"tool_end","data":{"status":200,"content":{"done":true}}}"#.into(),
    ));
    Sse::new(stream::iter(start.chain(steps).chain(end)))
}

/// Reads a whole event stream, counting events.
async fn read_events(client: &reqwest::Client, method: Method, url: &str) -> usize {
    let mut response = client
        .request(method, url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("a stream");
    assert_eq!(response.status(), StatusCode::OK);
    let (mut events, mut tail) = (0, Vec::new());
    while let Some(chunk) = response.chunk().await.expect("a chunk") {
        tail.extend_from_slice(&chunk);
        let complete = tail
            .windows(2)
            .rposition(|w| w == b"\n\n")
            .map_or(0, |at| at + 2);
        // Every event here has an `event:` line, so its `data:` line follows a newline.
        events += tail[..complete]
            .windows(6)
            .filter(|w| *w == b"\ndata:")
            .count();
        tail.drain(..complete);
    }
    events
}

fn streaming(c: &mut Criterion) {
    let rt = runtime();
    let client = reqwest::Client::new();
    let (halo, plain) = rt.block_on(async {
        let halo = serve(app(false)).await;
        let plain = serve(Router::new().route("/sse", get(axum_sse))).await;
        (format!("{halo}/work"), format!("{plain}/sse"))
    });
    let expected = usize::try_from(EVENTS).expect("small") + 2;
    assert_eq!(
        rt.block_on(read_events(&client, Method::POST, &halo)),
        expected
    );
    assert_eq!(
        rt.block_on(read_events(&client, Method::GET, &plain)),
        expected
    );

    let mut group = c.benchmark_group("sse_10k");
    group.sample_size(20).sampling_mode(SamplingMode::Flat);
    group.bench_function("halo_tool", |b| {
        b.iter(|| rt.block_on(read_events(&client, Method::POST, &halo)));
    });
    group.bench_function("axum_sse", |b| {
        b.iter(|| rt.block_on(read_events(&client, Method::GET, &plain)));
    });
    group.finish();
}

/// A GET tool whose schema declares a rate and a deadline (enforced: a GCRA check and a
/// timer per call) against the same tool declaring neither, over loopback HTTP.
fn governance(c: &mut Criterion) {
    let rt = runtime();
    let client = reqwest::Client::new();
    let base = rt.block_on(serve(app(false)));
    let (plain, governed) = (format!("{base}/plain/7"), format!("{base}/governed/7"));
    let metered = rt.block_on(serve(app_with(false, true, true)));
    let (metered_plain, metered_governed) = (
        format!("{metered}/plain/7"),
        format!("{metered}/governed/7"),
    );
    assert_eq!(
        rt.block_on(get_once(&client, &metered_plain)),
        StatusCode::OK
    );
    assert_eq!(rt.block_on(get_once(&client, &plain)), StatusCode::OK);
    let response = rt
        .block_on(client.get(&governed).send())
        .expect("an answer");
    assert!(
        response.headers().contains_key("ratelimit"),
        "the rate is enforced"
    );

    let mut group = c.benchmark_group("govern_paired");
    group.bench_function("http_get_on_vs_off", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || get_once(&client, &plain)),
                |n| time(&rt, n, || get_once(&client, &governed)),
            )
        });
    });
    group.bench_function("http_get_on_metrics_vs_off", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || get_once(&client, &plain)),
                |n| time(&rt, n, || get_once(&client, &metered_governed)),
            )
        });
    });
    group.bench_function("http_get_metrics_vs_none", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || get_once(&client, &governed)),
                |n| time(&rt, n, || get_once(&client, &metered_governed)),
            )
        });
    });
    group.bench_function("http_get_plain_metrics_vs_off", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || get_once(&client, &plain)),
                |n| time(&rt, n, || get_once(&client, &metered_plain)),
            )
        });
    });
    group.finish();
}

/// The governed GET tool with a (closed) circuit breaker against the same without one.
fn breaker(c: &mut Criterion) {
    let rt = runtime();
    let app = app(false);
    let (governed, circuit) = ("/governed/7", "/breaker/7");
    assert_eq!(
        rt.block_on(call(&app, get_request(governed))),
        StatusCode::OK
    );
    assert_eq!(
        rt.block_on(call(&app, get_request(circuit))),
        StatusCode::OK
    );
    let mut group = c.benchmark_group("breaker_paired");
    group.bench_function("get_circuit_vs_governed", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || call(&app, get_request(governed))),
                |n| time(&rt, n, || call(&app, get_request(circuit))),
            )
        });
    });
    group.bench_function("get_governed_vs_governed", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || call(&app, get_request(governed))),
                |n| time(&rt, n, || call(&app, get_request(governed))),
            )
        });
    });
    let client = reqwest::Client::new();
    let base = rt.block_on(serve(app.clone()));
    let (governed_url, circuit_url) = (format!("{base}{governed}"), format!("{base}{circuit}"));
    group.bench_function("http_get_circuit_vs_governed", |b| {
        b.iter_custom(|iters| {
            paired(
                iters,
                |n| time(&rt, n, || get_once(&client, &governed_url)),
                |n| time(&rt, n, || get_once(&client, &circuit_url)),
            )
        });
    });
    group.finish();
    let mut group = c.benchmark_group("breaker");
    group.bench_function("oneshot_get_governed", |b| {
        b.iter_custom(|iters| time(&rt, iters, || call(&app, get_request(governed))));
    });
    group.bench_function("oneshot_get_circuit", |b| {
        b.iter_custom(|iters| time(&rt, iters, || call(&app, get_request(circuit))));
    });
    group.finish();
}

// `criterion_group!` writes an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    use super::{breaker, governance, streaming, validation};

    criterion::criterion_group!(benches, validation, streaming, governance, breaker);
}

criterion_main!(group::benches);
