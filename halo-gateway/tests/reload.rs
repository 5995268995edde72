//! A gateway rebuilt from its changed configuration file: new calls see the new policies, a
//! broken file leaves the running gateway serving.

use std::time::Duration;

use axum::Router;
use halo_gateway::Reloading;
use reqwest::StatusCode;
use serde_json::json;

fn document() -> serde_json::Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Echo", "version": "1"},
        "paths": {"/ping": {"get": {"operationId": "ping", "responses": {"200": {"description": "pong"}}}}}
    })
}

fn config(upstream: &str, rate: &str) -> String {
    format!(
        "listen: 127.0.0.1:0\nupstreams:\n  echo: {{ openapi: echo.json, base_url: \"{upstream}\" }}\npolicies:\n  - set: {{ rate: {rate} }}\n"
    )
}

/// An upstream answering `pong` to everything, and a folder holding its document.
async fn echo() -> (halo_tests::TestServer, tempfile::TempDir) {
    let server = halo_tests::spawn(Router::new().fallback(|| async { "pong" })).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("echo.json"), document().to_string()).unwrap();
    (server, dir)
}

async fn rate_of(gateway: &str) -> String {
    let schemas = halo_tests::discover(&format!("{gateway}/echo/ping"), None).await;
    schemas[0]["limits"]["rate"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_changed_file_is_served_and_a_broken_one_is_not() {
    let (upstream_server, dir) = echo().await;
    let upstream = upstream_server.url("");
    let path = dir.path().join("gateway.yaml");
    std::fs::write(&path, config(&upstream, "100/minute")).unwrap();
    let gateway = Reloading::start(&path).await.unwrap();
    let url_server = halo_tests::spawn(gateway.router()).await;
    let url = url_server.url("");
    assert_eq!(rate_of(&url).await, "100/minute");

    // Reloaded on request.
    std::fs::write(&path, config(&upstream, "1/minute")).unwrap();
    let report = gateway.reload().await.unwrap();
    assert_eq!(report.tools(), 1);
    assert_eq!(rate_of(&url).await, "1/minute");
    let ping = || reqwest::get(format!("{url}/echo/ping"));
    assert_eq!(ping().await.unwrap().status(), StatusCode::OK);
    assert_eq!(
        ping().await.unwrap().status(),
        StatusCode::TOO_MANY_REQUESTS
    );

    // A broken file: the gateway serving goes on.
    std::fs::write(&path, "upstreams: {echo: {openapi: echo.json, rate: 3}}").unwrap();
    let error = gateway.reload().await.unwrap_err();
    assert!(error.to_string().contains("rate"), "{error}");
    assert_eq!(rate_of(&url).await, "1/minute");

    // The same declarations again: the budget spent is still spent.
    std::fs::write(&path, format!("{}\n", config(&upstream, "1/minute"))).unwrap();
    gateway.reload().await.unwrap();
    assert_eq!(rate_of(&url).await, "1/minute");
    assert_eq!(
        ping().await.unwrap().status(),
        StatusCode::TOO_MANY_REQUESTS
    );

    // Watched: a change to the file is picked up without being asked.
    tokio::spawn(gateway.clone().watch(Duration::from_millis(50)));
    std::fs::write(&path, config(&upstream, "7/minute")).unwrap();
    let mut seen = String::new();
    for _ in 0..200 {
        seen = rate_of(&url).await;
        if seen == "7/minute" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(seen, "7/minute");
    // A changed rate is a new budget.
    assert_eq!(ping().await.unwrap().status(), StatusCode::OK);
}

/// A call held for approval before a reload is decided and run after it.
#[tokio::test]
async fn a_held_call_survives_a_reload() {
    let (upstream_server, dir) = echo().await;
    let upstream = upstream_server.url("");
    let path = dir.path().join("gateway.yaml");
    let config = |rate: &str| {
        format!(
            "listen: 127.0.0.1:0\nauth:\n  tokens:\n    dev-token-0123456789ab: {{ caller: dev }}\n    ops-token-0123456789ab: {{ caller: ops, scopes: [admin] }}\napprovals: {{ scope: admin }}\nupstreams:\n  echo: {{ openapi: echo.json, base_url: \"{upstream}\" }}\npolicies:\n  - set: {{ rate: {rate}, approval: required }}\n"
        )
    };
    std::fs::write(&path, config("100/minute")).unwrap();
    let gateway = Reloading::start(&path).await.unwrap();
    let server = halo_tests::spawn(gateway.router()).await;
    let http = reqwest::Client::new();
    let held = http
        .get(server.url("/echo/ping"))
        .bearer_auth("dev-token-0123456789ab")
        .send()
        .await
        .unwrap();
    assert_eq!(held.status(), StatusCode::ACCEPTED);
    let location = held.headers()["location"].to_str().unwrap().to_owned();

    std::fs::write(&path, config("50/minute")).unwrap();
    gateway.reload().await.unwrap();
    let approved = http
        .post(server.url(&format!("{location}/approve")))
        .bearer_auth("ops-token-0123456789ab")
        .send()
        .await
        .unwrap();
    assert_eq!(approved.status(), StatusCode::OK);
    let approved: serde_json::Value = approved.json().await.unwrap();
    assert_eq!(approved["state"], "approved", "{approved}");
    assert_eq!(approved["response"]["status"], 200, "{approved}");
    assert_eq!(approved["response"]["body"], "pong", "{approved}");
}

/// A `stdio` MCP server whose settings did not change is kept across a reload (the same
/// process, its state with it); one whose settings changed is started anew.
#[tokio::test]
async fn a_stdio_server_is_kept_across_a_reload_while_its_settings_stay() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.yaml");
    let command = json!(halo_tests::mcp_servers::fastmcp_notes_command());
    let config = |timeout: &str, mark: &str| {
        format!(
            "listen: 127.0.0.1:0\nupstreams:\n  notes: {{ stdio: {command}, env: {{ MARK: {mark} }} }}\npolicies:\n  - set: {{ timeout: {timeout} }}\n"
        )
    };
    std::fs::write(&path, config("5s", "one")).unwrap();
    let gateway = Reloading::start(&path).await.unwrap();
    let server = halo_tests::spawn(gateway.router()).await;
    let http = reqwest::Client::new();
    let read = || {
        http.post(server.url("/notes/read_note"))
            .json(&json!({"title": "plan"}))
            .send()
    };
    let kept = http
        .post(server.url("/notes/add_note"))
        .json(&json!({"title": "plan", "text": "ship it"}))
        .send()
        .await
        .unwrap();
    assert_eq!(kept.status(), StatusCode::OK);

    // A policy changed: the same server, the note still there.
    std::fs::write(&path, config("4s", "one")).unwrap();
    gateway.reload().await.unwrap();
    let answer = read().await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let answer: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(answer["result"], "ship it");

    // Its environment changed: a new process, which keeps no note.
    std::fs::write(&path, config("4s", "two")).unwrap();
    gateway.reload().await.unwrap();
    let answer = read().await.unwrap();
    assert_eq!(answer.status(), StatusCode::BAD_GATEWAY);
    assert!(answer.text().await.unwrap().contains("no note"));
}
