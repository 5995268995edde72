//! A governed call of an MCP server's tool through the gateway against the same call made
//! straight to the server, paired: `server-everything`'s `echo`, over stdio and over
//! streamable HTTP. Each round makes one direct call (rmcp's client, as any MCP client) and
//! one through the gateway (`POST /<upstream>/echo`: a rate, a deadline and a circuit
//! checked, the body validated, then the `tools/call`), one after the other, so that both
//! see the same machine; the medians and what the gateway adds are printed.
//!
//! `cargo bench -p halo-gateway --bench mcp_upstream` (needs `tests/mcp-servers`' packages:
//! `npm ci` there, or `bash .ci/test`). `HALO_BENCH_ROUNDS` sets the rounds (2,000).

use std::time::{Duration, Instant};

use halo_gateway::{Config, Gateway};
use halo_tests::mcp_servers::{EverythingOverHttp, McpServer};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::var("HALO_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000);
    let http = EverythingOverHttp::start().await;
    let stdio: Vec<Value> = McpServer::Everything
        .stdio_command()
        .into_iter()
        .map(Value::String)
        .collect();
    let dir = tempfile::tempdir().expect("a directory");
    let text = format!(
        "upstreams:\n  local: {{ stdio: {} }}\n  remote: {{ mcp: \"{}\" }}\npolicies:\n  - match: {{ upstream: \"*\" }}\n    set: {{ rate: 1000000/minute, timeout: 5s, circuit: 5/30s/2 }}\n",
        Value::Array(stdio),
        http.url
    );
    let config = Config::from_text(&text, dir.path()).expect("a configuration");
    let gateway = Gateway::build(&config).await.expect("a gateway");
    let server = halo_tests::spawn(gateway.router()).await;
    let client = reqwest::Client::new();

    let command = McpServer::Everything.stdio_command();
    let mut child = tokio::process::Command::new(&command[0]);
    child.args(&command[1..]);
    let direct_stdio =
        ().serve(TokioChildProcess::new(child).expect("a child"))
            .await
            .expect("stdio");
    let direct_http =
        ().serve(StreamableHttpClientTransport::from_uri(http.url.as_str()))
            .await
            .expect("http");

    println!("mcp_upstream: {rounds} paired rounds, `echo` of server-everything, release build");
    for (name, direct, path) in [
        ("stdio", &direct_stdio, "/local/echo"),
        ("streamable HTTP", &direct_http, "/remote/echo"),
    ] {
        let url = server.url(path);
        let mut straight = Vec::with_capacity(rounds);
        let mut through = Vec::with_capacity(rounds);
        for round in 0..rounds + rounds / 10 {
            let direct_took = call(direct).await;
            let started = Instant::now();
            let answer = client
                .post(&url)
                .json(&json!({"message": "hi"}))
                .send()
                .await
                .expect("an answer");
            assert!(answer.status().is_success(), "{}", answer.status());
            let _ = answer.bytes().await.expect("a body");
            let gateway_took = started.elapsed();
            // The first tenth warms up.
            if round >= rounds / 10 {
                straight.push(direct_took);
                through.push(gateway_took);
            }
        }
        let (direct_p50, gateway_p50) = (median(&mut straight), median(&mut through));
        println!(
            "{name}: direct p50 {} µs, through the gateway p50 {} µs: {:.2}x, {} µs added",
            direct_p50.as_micros(),
            gateway_p50.as_micros(),
            gateway_p50.as_secs_f64() / direct_p50.as_secs_f64(),
            gateway_p50.saturating_sub(direct_p50).as_micros()
        );
    }
}

/// One direct `echo` call: how long it took.
async fn call(client: &RunningService<RoleClient, ()>) -> Duration {
    let Value::Object(arguments) = json!({"message": "hi"}) else {
        unreachable!("an object")
    };
    let started = Instant::now();
    let result = client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
        .await
        .expect("a result");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    started.elapsed()
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}
