//! A 10,000-event tool stream over each transport, in the same run on loopback: one call of a
//! tool that reports 10,000 steps (10,002 events with `tool_start` and `tool_end`), served by
//! axum + `HaloLayer` and read to its end by halo-client, which yields each event decoded
//! (`StreamEvent`), over Server-Sent Events (`Transport::Sse`) and over WebSocket
//! (`Transport::WebSocket`).
//!
//! - `stream_10k/{sse,websocket}`: each transport's time for the whole stream; events per
//!   second = 10,002 / time.
//! - `paired`: the two alternating call by call (so that load from other processes hits both
//!   alike), printed at the end as events/s of each and the ratio WebSocket / SSE.
//!
//! Run `cargo bench -p halo-client --features ws --bench transports`.

use std::time::{Duration, Instant};

use axum::Json;
use criterion::{Criterion, SamplingMode};
use futures_util::StreamExt as _;
use halo_axum::{HaloLayer, Progress};
use halo_client::{Client, Method, Transport};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use utoipa_axum::{router::OpenApiRouter, routes};

/// Progress events the tool reports.
const STEPS: u64 = 10_000;
/// Events a call sends: the steps, `tool_start` and `tool_end`.
const EVENTS: usize = 10_002;

/// Report 10,000 steps.
#[utoipa::path(post, path = "/work", responses((status = 200)))]
async fn work(progress: Progress) -> Json<Value> {
    for step in 1..=STEPS {
        progress.step(step, Some(STEPS), "working");
    }
    Json(json!({"done": true}))
}

/// Client and server on one thread: no cross-thread wake-ups in the figures.
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}

/// The tool's server on a loopback port: its base URL.
async fn serve() -> String {
    let (router, api) = OpenApiRouter::new().routes(routes!(work)).split_for_parts();
    // Every event kept, so that a slow reader never misses progress.
    let layer = HaloLayer::builder(api)
        .stream_max_events(EVENTS)
        .build()
        .expect("a layer");
    let app = layer.websocket_app(router.layer(layer.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    format!("http://{addr}")
}

fn client(base: &str, transport: Transport) -> Client {
    Client::builder(base)
        .stream_transport(transport)
        .build()
        .expect("a client")
}

/// One call read to its end: how many events came.
async fn stream(client: &Client) -> usize {
    let mut events = client
        .invoke_stream("/work", Method::POST, json!({}))
        .await
        .expect("the stream opens");
    let mut count = 0;
    while let Some(event) = events.next().await {
        std::hint::black_box(event.expect("an event"));
        count += 1;
    }
    count
}

fn transports(c: &mut Criterion, rt: &Runtime, sse: &Client, ws: &Client) {
    let mut group = c.benchmark_group("stream_10k");
    group.sample_size(20).sampling_mode(SamplingMode::Flat);
    group.bench_function("sse", |b| b.iter(|| rt.block_on(stream(sse))));
    group.bench_function("websocket", |b| b.iter(|| rt.block_on(stream(ws))));
    group.finish();
}

/// The two transports alternating call by call, `rounds` of each: their events/s and the
/// ratio WebSocket / SSE.
fn paired(rt: &Runtime, sse: &Client, ws: &Client, rounds: u32) {
    let (mut sse_time, mut ws_time) = (Duration::ZERO, Duration::ZERO);
    for round in 0..rounds {
        // Which goes first alternates too.
        let order: [(&Client, &mut Duration); 2] = if round % 2 == 0 {
            [(sse, &mut sse_time), (ws, &mut ws_time)]
        } else {
            [(ws, &mut ws_time), (sse, &mut sse_time)]
        };
        for (client, total) in order {
            let started = Instant::now();
            assert_eq!(rt.block_on(stream(client)), EVENTS);
            *total += started.elapsed();
        }
    }
    let rate = |time: Duration| EVENTS as f64 * f64::from(rounds) / time.as_secs_f64();
    let (sse_rate, ws_rate) = (rate(sse_time), rate(ws_time));
    println!(
        "paired, {rounds} rounds of {EVENTS} events: SSE {:.0} events/s, WebSocket {:.0} events/s, \
         WebSocket / SSE {:.3}",
        sse_rate,
        ws_rate,
        ws_rate / sse_rate
    );
}

fn main() {
    let rt = runtime();
    let base = rt.block_on(serve());
    let (sse, ws) = (
        client(&base, Transport::Sse),
        client(&base, Transport::WebSocket),
    );
    // Both read every event before anything is timed.
    assert_eq!(rt.block_on(stream(&sse)), EVENTS);
    assert_eq!(rt.block_on(stream(&ws)), EVENTS);
    let mut criterion = Criterion::default().configure_from_args();
    transports(&mut criterion, &rt, &sse, &ws);
    criterion.final_summary();
    paired(&rt, &sse, &ws, 30);
}
