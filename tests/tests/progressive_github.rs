//! Progressive disclosure on GitHub's real document (771 operations), measured in `cl100k`
//! tokens with a real tokenizer: what `/mcp` lists by default, what a `search_tools` answer
//! and an `OPTIONS /?q=` answer cost, and whether search finds the intended tool for tasks
//! written in a user's words (`GITHUB_TASKS`). The official MCP Python SDK finds a tool over
//! streamable HTTP and calls it by name though it was never listed.

use axum::Json;
use axum::Router;
use axum::routing::get;
use halo_axum::HaloBuilder;
use halo_axum::mcp::McpService;
use halo_tests::corpus::{Document, GITHUB_TASKS};
use halo_tests::mcp::call;
use halo_tests::tokens::{cl100k, cl100k_json};
use halo_tests::{TestServer, interop_script, python, spawn};
use reqwest::Method;
use rmcp::model::CallToolResult;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};

/// GitHub's tools behind the layer, with `/mcp`, and one real handler: listing a
/// repository's issues.
async fn github() -> TestServer {
    let layer = HaloBuilder::from_openapi_json(Document::GitHub.json())
        .build()
        .expect("GitHub's document builds");
    let app: Router = Router::new().route(
        "/repos/{owner}/{repo}/issues",
        get(|| async { Json(json!([{"number": 1, "title": "found by search"}])) }),
    );
    let mcp = McpService::builder(&layer, app.clone()).build();
    spawn(app.layer(layer).nest_service("/mcp", mcp)).await
}

async fn client(url: String) -> RunningService<RoleClient, ()> {
    ().serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .expect("an MCP session")
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(result).unwrap()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The tool name GitHub's `operationId` becomes.
fn name_of(operation_id: &str) -> String {
    halo_axum::protocol::tool_name(operation_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn github_through_mcp_costs_little_and_search_finds_the_tool() {
    let server = github().await;
    let mcp = client(server.url("/mcp")).await;

    // The default listing: two tools, not 771.
    let listed = mcp.list_tools(None).await.expect("tools/list");
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["search_tools", "call_tool"]);
    let listing_tokens = cl100k_json(&serde_json::to_value(&listed).unwrap());
    println!("tools/list by default: {listing_tokens} cl100k tokens");
    assert!(listing_tokens <= 4_000, "{listing_tokens}");
    // GitHub's discovery is public, for 60 s.
    assert_eq!(listed.ttl_ms, Some(60_000));
    assert_eq!(listed.cache_scope, Some(rmcp::model::CacheScope::Public));

    // Recall and cost of a search, over the tasks.
    let http = reqwest::Client::new();
    let mut in_top_5 = 0;
    let mut answers = Vec::new();
    let mut discoveries = Vec::new();
    for (task, operation_id) in GITHUB_TASKS {
        let wanted = name_of(operation_id);
        let found = call(&mcp, "search_tools", json!({"query": task})).await;
        assert_eq!(found.is_error, Some(false), "{task}: {}", text(&found));
        let answer = found.structured_content.clone().expect("structured");
        let tools = answer["tools"].as_array().expect("tools");
        assert!(tools.len() <= 5, "{task}");
        let ranked: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        if ranked.contains(&wanted.as_str()) {
            in_top_5 += 1;
        } else {
            println!("MISS {task:?}: wanted {wanted}, got {ranked:?}");
        }
        answers.push(cl100k(&text(&found)));

        let response = http
            .request(Method::OPTIONS, server.url("/"))
            .query(&[("q", task)])
            .header("accept", "application/llm+json")
            .send()
            .await
            .unwrap();
        let body = response.text().await.unwrap();
        let manifest: Value = serde_json::from_str(&body).unwrap();
        assert!(manifest["tools"].as_array().unwrap().len() <= 20, "{task}");
        discoveries.push(cl100k(&body));
    }
    answers.sort_unstable();
    discoveries.sort_unstable();
    println!(
        "search_tools answers (5 tools): median {} tokens, max {}; OPTIONS /?q= (20 tools): median {}, max {}; intended tool in the top 5 for {in_top_5} of {} tasks",
        answers[answers.len() / 2],
        answers[answers.len() - 1],
        discoveries[discoveries.len() / 2],
        discoveries[discoveries.len() - 1],
        GITHUB_TASKS.len()
    );
    assert!(in_top_5 >= 18, "{in_top_5} of {}", GITHUB_TASKS.len());
    assert!(answers[answers.len() - 1] <= 3_000, "{answers:?}");
    assert!(
        discoveries[discoveries.len() - 1] <= 1_000,
        "{discoveries:?}"
    );

    // A found tool is called by name, though never listed.
    let issues = call(
        &mcp,
        &name_of("issues/list-for-repo"),
        json!({"owner": "o", "repo": "r"}),
    )
    .await;
    assert_eq!(issues.is_error, Some(false), "{}", text(&issues));
    assert!(text(&issues).contains("found by search"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_finds_a_github_tool_over_http_and_calls_it_by_name() {
    let server = github().await;
    let output = tokio::process::Command::new(python())
        .arg(interop_script("mcp_client.py"))
        .arg("http")
        .arg(server.url("/mcp"))
        .args([
            "--find",
            "list the open issues of a repository",
            &name_of("issues/list-for-repo"),
            r#"{"owner": "o", "repo": "r"}"#,
        ])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .await
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_str(&stdout).expect("a JSON summary");
    assert_eq!(summary["ok"], true);
    assert!(
        summary["found"][0]["text"]
            .as_str()
            .unwrap()
            .contains("found by search")
    );
}

/// `estimate_tokens`, which budgets use, against the real tokenizer on every tool definition
/// of GitHub's and Stripe's documents (as MCP lists them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_estimate_tracks_cl100k() {
    for document in Document::ALL {
        let layer = HaloBuilder::from_openapi_json(document.json())
            .build()
            .expect("builds");
        let server = spawn(Router::new().layer(layer)).await;
        let client = halo_client::Client::new(server.base_url()).expect("a client");
        let manifest = client.discover(&[]).await.expect("the manifest");
        let schemas = client
            .describe_all(manifest.tools.iter())
            .await
            .expect("every schema");
        let tools: Vec<_> = manifest.tools.into_iter().zip(schemas).collect();
        let definitions = halo_axum::protocol::tool_definitions(&tools);
        let (mut estimated, mut real) = (0usize, 0usize);
        let every_output: usize = definitions
            .iter()
            .map(|definition| {
                cl100k(&serde_json::to_string(&rmcp::model::Tool::from(definition)).unwrap())
            })
            .sum();
        let mut ratios = Vec::new();
        for definition in &definitions {
            let definition = definition
                .clone()
                .with_output_within(halo_axum::protocol::SMALL_OUTPUT_TOKENS);
            let tool = rmcp::model::Tool::from(&definition);
            let text = serde_json::to_string(&tool).unwrap();
            let (e, r) = (definition.estimated_tokens(), cl100k(&text));
            estimated += e;
            real += r;
            ratios.push(e as f64 / r as f64);
        }
        ratios.sort_by(f64::total_cmp);
        let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
        println!(
            "{}: {} definitions, every output schema listed: {every_output} cl100k tokens; small ones only: estimated {estimated} / cl100k {real} = {:.2}; per tool p5 {:.2}, median {:.2}, p95 {:.2}",
            document.name(),
            definitions.len(),
            estimated as f64 / real as f64,
            at(0.05),
            at(0.5),
            at(0.95)
        );
        let total = estimated as f64 / real as f64;
        // High rather than low: a budget it keeps is kept.
        assert!((1.0..=1.25).contains(&total), "{total}");
        assert!(at(0.05) >= 0.9, "{}", at(0.05));
    }
}
