//! With `RUST_LOG=trace`, the bookstore's log shows requests but not their credentials:
//! neither a token in a query string nor an `Authorization` or `X-API-Key` header. Runs the
//! real binary and reads everything it writes to standard error.

#![cfg(unix)]

use crate::support;

use std::time::Duration;

use reqwest::{Client, Method};
use serde_json::json;
use support::{spawn_traced, stdout_lines, terminate};

/// What every secret a request below carries in its query string starts with.
const QUERY_SECRET: &str = "SECRET-";

#[tokio::test]
async fn trace_logs_show_requests_without_credentials() {
    let (mut child, log) = spawn_traced(&[]);
    let lines_rx = stdout_lines(&mut child);
    let first = tokio::task::spawn_blocking(move || lines_rx.recv_timeout(Duration::from_secs(60)))
        .await
        .unwrap()
        .expect("the first line of stdout");
    let base = first
        .strip_prefix("bookstore listening on ")
        .expect("first line names the address")
        .to_owned();

    let client = Client::new();
    let send = |method: Method, path_and_query: &str| {
        client.request(method, format!("{base}{path_and_query}"))
    };
    let requests = [
        send(
            Method::GET,
            "/api/books?q=dune&access_token=SECRET-access-token",
        )
        .bearer_auth("demo-reader"),
        send(Method::GET, "/health?Token=SECRET-token"),
        send(Method::OPTIONS, "/?api_key=SECRET-api-key")
            .header("accept", "application/llm+json")
            .header("x-api-key", "demo-key"),
        send(
            Method::GET,
            "/openapi.json?client_secret=SECRET-client-secret",
        )
        .bearer_auth("demo-admin"),
        send(
            Method::GET,
            "/api/inventory/9780441013593?password=SECRET-password",
        )
        .header("X-API-Key", "demo-key"),
        // A path the router rejects, and a name written with a percent-escape.
        send(Method::GET, "/api/books/not-a-number?token=SECRET-rejected"),
        send(Method::GET, "/api/books?access%5Ftoken=SECRET-encoded")
            .header("authorization", "Bearer demo-admin"),
        send(Method::POST, "/mcp?access_token=SECRET-mcp")
            .bearer_auth("demo-admin")
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}}),
            ),
        // A tool called over MCP goes through the app in process, with the caller's header.
        send(Method::POST, "/mcp")
            .bearer_auth("demo-reader")
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "get_book", "arguments": {"id": 1}}})),
    ];
    for request in requests {
        let response = request.send().await.expect("a response");
        let status = response.status();
        let _ = response.bytes().await;
        assert!(status.as_u16() < 500, "{status}");
    }

    let status = terminate(child).await;
    assert!(status.success(), "{status}");
    let log = log.join().expect("the log");

    // The requests were traced, with their queries redacted...
    assert!(
        log.contains("/api/books?q=dune&access_token=[redacted]"),
        "{log}"
    );
    assert!(log.contains("/health?Token=[redacted]"), "{log}");
    assert!(log.contains("/api/books/1 "), "the MCP call: {log}");
    // ...and no credential appears anywhere.
    for secret in [QUERY_SECRET, "demo-admin", "demo-reader", "demo-key"] {
        let line = log.lines().find(|line| line.contains(secret));
        assert!(line.is_none(), "{secret} is logged: {line:?}");
    }
}
