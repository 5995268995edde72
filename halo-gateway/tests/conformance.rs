//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `tests/mcp-servers`) against the gateway's `/mcp`, with a FastMCP server that has the
//! suite's tools behind it: what the suite checks of a server (the handshake, listing,
//! content of every kind, errors, progress, concurrent streams, DNS rebinding protection)
//! holds through the gateway. The scenarios the gateway does not serve are listed, with the
//! reason, in `fixtures/conformance-baseline.yaml`; the suite fails on any other failure
//! and on a listed scenario that passes.

use std::time::Duration;

use halo_gateway::{Config, Gateway};
use halo_tests::mcp_servers::{fastmcp_command, node};
use serde_json::json;

#[tokio::test]
async fn the_official_suite_passes_through_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let command = json!(fastmcp_command("fastmcp_conformance.py", &[]));
    let text = format!("upstreams:\n  fixture: {{ stdio: {command}, prefix: false }}\n");
    let config = Config::from_text(&text, dir.path()).unwrap();
    let gateway = Gateway::build(&config).await.unwrap();
    let server = halo_tests::spawn(gateway.router()).await;

    let suite = halo_tests::workspace_root()
        .join("tests/mcp-servers/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let baseline = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/conformance-baseline.yaml"
    );
    let run = tokio::process::Command::new(node())
        .arg(&suite)
        .args(["server", "--url", &server.url("/mcp")])
        .args(["--expected-failures", baseline])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(240), run)
        .await
        .expect("the suite ends within four minutes")
        .expect("node runs the suite");
    let printed = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{printed}");
    assert!(printed.contains("Baseline check passed"), "{printed}");
    for scenario in [
        "tools-call-image",
        "tools-call-mixed-content",
        "tools-call-with-progress",
    ] {
        assert!(
            printed.contains(&format!("✓ {scenario}")),
            "{scenario}: {printed}"
        );
    }
}
