//! What a call through halo-client's rig tools (feature `rig`) costs over the same call made
//! with `Client::invoke`, against the test suite's local axum + `HaloLayer` server
//! (`tests/support`), client and server on one current-thread runtime:
//!
//! - `rig_paired/rig_over_invoke`: the `get_item` tool's rig `DynamicTool::execute({"id":
//!   "7"})` (rig's inline dispatch, the adapter, `Client::call`, the answer as a rig
//!   `ToolOutput`) against `Client::invoke("/items/{id}", GET, {"id": "7"})` (schema
//!   cached, body parsed), alternating call by call so that load from other processes hits
//!   both alike. Criterion prints the ratio as a time: `1.0300 µs` means 1.030. Target ≤ 1.05.
//! - `rig_paired/rig_over_call`: the same against `Client::call` with the schema in hand,
//!   which is what the rig tool calls.
//! - `rig_paired/bare_rig_over_call`: a bare rig `DynamicTool` whose callback is that same
//!   `Client::call` against the call itself: what rig's own dispatch costs, whatever the
//!   adapter does.
//! - `rig_paired/invoke_over_invoke`: the method's control (should read 1.00).
//!
//! ```sh
//! cargo bench -p halo-client --features rig --bench rig -- --warm-up-time 1 --measurement-time 4
//! python3 halo-client/benches/ratios.py
//! ```

#[path = "../tests/support/mod.rs"]
mod support;

use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_main};
use halo_client::rig::RigTools;
use halo_client::{Body, Client, Method};
use rig_core::message::ToolName;
use rig_core::tool::{DynamicTool, ToolOutput};
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

async fn invoke(client: &Client) -> Body {
    client
        .invoke("/items/{id}", Method::GET, json!({"id": "7"}))
        .await
        .expect("the GET tool answers")
        .into_body()
}

fn rig(c: &mut Criterion) {
    let rt = runtime();
    let server = rt.block_on(halo::Server::builder().record(false).start());
    let client = Client::builder(&server.base)
        .timeout(None)
        .build()
        .expect("a client");
    // Warm everything: the schema cache and one pooled connection.
    let (tool, schema) = rt.block_on(async {
        let tools = RigTools::builder(&client)
            .all_tools()
            .discover()
            .await
            .expect("the tools");
        let tool = tools
            .tools()
            .into_iter()
            .find(|tool| tool.name().as_str() == "get_item")
            .expect("the get_item tool");
        let schema = client
            .describe("/items/{id}", Method::GET)
            .await
            .expect("the schema");
        let answer = tool.execute(json!({"id": "7"})).await.expect("an answer");
        let Body::Json(invoked) = invoke(&client).await else {
            panic!("a JSON answer");
        };
        assert_eq!(answer.as_json(), Some(&invoked));
        (tool, schema)
    });
    // rig's own dispatch alone: a bare DynamicTool around the same `Client::call`.
    let bare = {
        let (client, schema) = (client.clone(), schema.clone());
        DynamicTool::new(
            ToolName::new("bare").expect("a name"),
            "",
            json!({"type": "object"}),
            move |arguments| {
                let (client, schema) = (client.clone(), schema.clone());
                Box::pin(async move {
                    let response = client.call(&schema, arguments).await.expect("an answer");
                    Ok(ToolOutput::json(response.to_value()))
                })
            },
        )
    };
    let (client, tool, schema, bare) = (&client, &tool, &schema, &bare);
    let through_rig = || async move {
        tool.execute(json!({"id": "7"}))
            .await
            .expect("the rig tool answers")
    };

    let mut group = c.benchmark_group("rig_paired");
    group.bench_function("rig_over_invoke", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| paired(iters, through_rig, || invoke(client)));
    });
    group.bench_function("rig_over_call", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            paired(iters, through_rig, || async move {
                client
                    .call(schema, json!({"id": "7"}))
                    .await
                    .expect("the GET tool answers")
                    .into_body()
            })
        });
    });
    group.bench_function("bare_rig_over_call", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            paired(
                iters,
                || async move { bare.execute(json!({"id": "7"})).await.expect("an answer") },
                || async move {
                    client
                        .call(schema, json!({"id": "7"}))
                        .await
                        .expect("the GET tool answers")
                        .into_body()
                },
            )
        });
    });
    group.bench_function("invoke_over_invoke", |b| {
        b.to_async(&rt)
            .iter_custom(|iters| paired(iters, || invoke(client), || invoke(client)));
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

// `criterion_group!` writes an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    use super::rig;

    criterion::criterion_group!(benches, rig);
}

criterion_main!(group::benches);
