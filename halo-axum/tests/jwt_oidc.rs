//! `JwtAuthenticator` with a real authorization server: node's `oidc-provider`
//! (`halo_tests::oidc`) issues RS256 JWT access tokens for the API's resource with the
//! client-credentials grant, and a utoipa app behind the layer checks them over HTTP.
#![allow(missing_docs)]

use crate::books_api;

use axum::http::StatusCode;
use axum::http::header::WWW_AUTHENTICATE;
use halo_axum::mcp::McpService;
use halo_axum::{HaloLayer, JwtAuthenticator, ProtectedResource};
use halo_tests::oidc::{AuthorizationServer, CLIENT_ID};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

const RESOURCE: &str = "https://books.halo.test";
/// The MCP endpoint, a resource of its own for MCP clients.
const MCP_RESOURCE: &str = "https://books.halo.test/mcp";

/// `request`, sent.
async fn send(request: reqwest::RequestBuilder) -> reqwest::Response {
    request.send().await.expect("an answer")
}

/// The JSON answer to `request`.
async fn json_of(request: reqwest::RequestBuilder) -> Value {
    send(request).await.json().await.expect("JSON")
}

/// Checks the tokens of `server` for `audiences`.
async fn jwt(server: &AuthorizationServer, audiences: &[&str]) -> JwtAuthenticator {
    audiences
        .iter()
        .fold(
            JwtAuthenticator::builder(server.issuer()),
            |builder, audience| builder.audience(*audience),
        )
        .build()
        .await
        .expect("oidc-provider's discovery and keys")
}

#[tokio::test]
async fn tokens_from_a_real_authorization_server() {
    let server = AuthorizationServer::start(
        RESOURCE,
        &["books:read", "books:write"],
        &["books:read", "books:write"],
    );
    let (router, api) = books_api::books();
    let layer = HaloLayer::builder(api)
        .authenticator(jwt(&server, &[RESOURCE]).await)
        .protected_resource(ProtectedResource::new(RESOURCE, [server.issuer()]))
        .build()
        .unwrap();
    let app = halo_tests::spawn(router.layer(layer)).await;
    let http = reqwest::Client::new();
    let metadata_url = format!("{RESOURCE}/.well-known/oauth-protected-resource");

    // Without a token: 401, pointing at the metadata, which names the issuer.
    let anonymous = send(http.get(app.url("/books"))).await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        anonymous.headers()[WWW_AUTHENTICATE],
        format!(r#"Bearer realm="Books", resource_metadata="{metadata_url}""#).as_str()
    );
    let document = json_of(http.get(app.url("/.well-known/oauth-protected-resource"))).await;
    assert_eq!(
        document,
        json!({
            "resource": RESOURCE,
            "authorization_servers": [server.issuer()],
            "scopes_supported": ["books:write"],
            "bearer_methods_supported": ["header"],
            "resource_name": "Books",
        })
    );

    // A reader's token: reads, and is refused writing with the scope it lacks.
    let reader = server
        .client_credentials(RESOURCE, "books:read")
        .await
        .expect("a token for books:read");
    let listed = send(http.get(app.url("/books")).bearer_auth(&reader)).await;
    assert_eq!(listed.status(), StatusCode::OK);
    assert_eq!(
        listed.json::<Value>().await.unwrap(),
        json!({"caller": CLIENT_ID, "scopes": ["books:read"]})
    );
    let refused = send(http.post(app.url("/books")).bearer_auth(&reader)).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        refused.headers()[WWW_AUTHENTICATE],
        format!(
            r#"Bearer realm="Books", error="insufficient_scope", scope="books:write", resource_metadata="{metadata_url}""#
        )
        .as_str()
    );

    // A writer's token writes.
    let writer = server
        .client_credentials(RESOURCE, "books:read books:write")
        .await
        .expect("a token for books:write");
    let added = send(http.post(app.url("/books")).bearer_auth(&writer)).await;
    assert_eq!(added.status(), StatusCode::CREATED);

    // A token of the same server for another resource is refused.
    let elsewhere = server
        .client_credentials("https://other.halo.test", "books:read")
        .await;
    assert!(elsewhere.is_err(), "oidc-provider issues only for the API");
    // Its signature changed in one character.
    let tampered = halo_tests::oidc::tampered(&reader);
    let invalid = send(http.get(app.url("/books")).bearer_auth(&tampered)).await;
    assert_eq!(invalid.status(), StatusCode::UNAUTHORIZED);
    assert!(
        invalid.headers()[WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .contains(r#"error="invalid_token""#)
    );
}

/// An MCP client that knows nothing of the API finds the MCP endpoint's own metadata from
/// its `401`, gets a token for that resource from the issuer it names, and calls a tool
/// with it through the official Rust MCP SDK.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_endpoint_is_a_protected_resource_of_its_own() {
    let server = AuthorizationServer::start(
        MCP_RESOURCE,
        &["books:read", "books:write"],
        &["books:read"],
    );
    let (router, api) = books_api::books();
    let layer = HaloLayer::builder(api)
        .authenticator(jwt(&server, &[RESOURCE, MCP_RESOURCE]).await)
        .require_credentials(true)
        .protected_resource(ProtectedResource::new(RESOURCE, [server.issuer()]).mcp("/mcp"))
        .build()
        .unwrap();
    let mcp = McpService::builder(&layer, router.clone()).build();
    let app = halo_tests::spawn(router.layer(layer).nest_service("/mcp", mcp)).await;
    let http = reqwest::Client::new();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "probe", "version": "1"}},
    });

    // Without a token: the challenge names the MCP endpoint's own document...
    let initialize = |bearer: Option<String>| {
        let request = http
            .post(app.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        send(match bearer {
            Some(token) => request.bearer_auth(token),
            None => request,
        })
    };
    let anonymous = initialize(None).await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let mcp_metadata = format!("{RESOURCE}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        anonymous.headers()[WWW_AUTHENTICATE],
        format!(r#"Bearer realm="Books", resource_metadata="{mcp_metadata}""#).as_str()
    );
    // ... served at the path-suffixed well-known path, naming the MCP resource...
    let document = |path: &'static str| json_of(http.get(app.url(path)));
    let mcp_document = document("/.well-known/oauth-protected-resource/mcp").await;
    assert_eq!(mcp_document["resource"], MCP_RESOURCE);
    assert_eq!(
        mcp_document["authorization_servers"],
        json!([server.issuer()])
    );
    assert_eq!(mcp_document["scopes_supported"], json!(["books:write"]));
    // ... while the API's own document and challenges stay the API's.
    assert_eq!(
        document("/.well-known/oauth-protected-resource").await["resource"],
        RESOURCE
    );
    let over_http = send(http.get(app.url("/books"))).await;
    assert!(
        over_http.headers()[WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .ends_with(r#"resource_metadata="https://books.halo.test/.well-known/oauth-protected-resource""#)
    );

    // A token for the MCP resource, from the issuer the document names, works over MCP.
    let token = server
        .client_credentials(MCP_RESOURCE, "books:read")
        .await
        .expect("a token for the MCP resource");
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    let client = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(app.url("/mcp")),
    );
    let session = ().serve(transport).await.expect("an MCP session with the token");
    let tools = session.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, ["list_books"], "only what books:read may call");
    let listed = session
        .call_tool(CallToolRequestParams::new("list_books"))
        .await
        .expect("tools/call");
    assert_eq!(
        listed.structured_content,
        Some(json!({"caller": CLIENT_ID, "scopes": ["books:read"]}))
    );
    session.cancel().await.unwrap();

    // A broken token on /mcp: invalid_token, with the MCP endpoint's document.
    let refused = initialize(Some(format!("{token}x"))).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        refused.headers()[WWW_AUTHENTICATE],
        format!(
            r#"Bearer realm="Books", error="invalid_token", resource_metadata="{mcp_metadata}""#
        )
        .as_str()
    );
}
