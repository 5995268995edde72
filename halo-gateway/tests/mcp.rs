//! GitHub's and Stripe's documents behind one gateway, over `/mcp` with the official Rust MCP
//! SDK (rmcp's client): what listing costs in `cl100k` tokens, whether search still finds the
//! intended GitHub tool for tasks in a user's words among 1,239 tools of two APIs, and a call
//! through `call_tool` that reaches the upstream.

use axum::Json;
use axum::Router;
use axum::extract::Request;
use halo_gateway::{Config, Gateway};
use halo_tests::corpus::{Document, GITHUB_TASKS};
use halo_tests::mcp::call;
use halo_tests::tokens::cl100k_json;
use rmcp::ServiceExt as _;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_large_apis_cost_little_and_search_still_finds_the_tool() {
    // One upstream for both: it says which path it was asked for.
    let upstream =
        halo_tests::spawn(Router::new().fallback(|request: Request| async move {
            Json(json!({"asked": request.uri().path()}))
        }))
        .await;
    let dir = tempfile::tempdir().unwrap();
    for document in [Document::GitHub, Document::Stripe] {
        let file = dir.path().join(format!("{}.json", document.name()));
        std::fs::write(file, document.text()).unwrap();
    }
    let base = upstream.url("");
    let text = format!(
        "upstreams:\n  github: {{ openapi: github.json, base_url: \"{base}\" }}\n  stripe: {{ openapi: stripe.json, base_url: \"{base}\" }}\n"
    );
    let config = Config::from_text(&text, dir.path()).unwrap();
    let gateway = Gateway::build(&config).await.unwrap();
    assert_eq!(gateway.report().tools(), 771 + 468, "{}", gateway.report());
    let server = halo_tests::spawn(gateway.router()).await;
    let mcp =
        ().serve(StreamableHttpClientTransport::from_uri(server.url("/mcp")))
            .await
            .expect("an MCP session");

    // The default listing: the two progressive tools, not 1,239.
    let listed = mcp.list_tools(None).await.expect("tools/list");
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["search_tools", "call_tool"]);
    let listing = cl100k_json(&serde_json::to_value(&listed).unwrap());
    println!("tools/list of GitHub and Stripe through the gateway: {listing} cl100k tokens");
    assert!(listing <= 4_000, "{listing}");

    // Search, over the tasks written for GitHub alone (which finds 19 of 22 there).
    let mut in_top_5 = 0;
    for (task, operation_id) in GITHUB_TASKS {
        let wanted = format!("github_{}", halo_protocol::tool_name(operation_id));
        let found = call(&mcp, "search_tools", json!({"query": task})).await;
        let answer = found.structured_content.expect("structured");
        let ranked = halo_tests::json::each_str(&answer["tools"], "/name");
        if ranked.contains(&wanted.as_str()) {
            in_top_5 += 1;
        } else {
            println!("MISS {task:?}: wanted {wanted}, got {ranked:?}");
        }
    }
    println!(
        "intended tool in the top 5 for {in_top_5} of {} tasks",
        GITHUB_TASKS.len()
    );
    assert!(in_top_5 >= 18, "{in_top_5} of {}", GITHUB_TASKS.len());

    // A tool found by search is called by name, and the call reaches the upstream.
    let called = call(
        &mcp,
        "call_tool",
        json!({"name": "github_issues_list-for-repo", "arguments": {"owner": "octocat", "repo": "hello"}}),
    )
    .await;
    assert_eq!(called.is_error, Some(false), "{called:?}");
    let result = serde_json::to_value(&called).unwrap().to_string();
    assert!(result.contains("/repos/octocat/hello/issues"), "{result}");
    mcp.cancel().await.unwrap();
}
