//! `bookstore --oauth-issuer URL [--oauth-audience URL]`: the JWT access tokens of a real
//! authorization server (node's `oidc-provider`, `halo_tests::oidc`) are accepted beside the
//! demo credentials, with the scopes they carry, and the bookstore describes itself as their
//! protected resource (RFC 9728).
#![cfg(unix)]
#![allow(missing_docs)]

use crate::support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bookstore::auth::READ_SCOPES;
use bookstore::cli::Cli;
use halo_tests::oidc::AuthorizationServer;
use reqwest::StatusCode;
use reqwest::header::WWW_AUTHENTICATE;
use serde_json::{Value, json};
use support::{READER, spawn_bookstore, spawn_traced, stdout_lines, terminate};

const AUDIENCE: &str = "https://books.halo.test";

/// The bookstore started with `args`, and its base URL once it has printed its `oauth:` line.
async fn start(args: &[&str]) -> (Child, String) {
    let mut child = spawn_bookstore(args, &[]);
    let lines = stdout_lines(&mut child);
    let printed = tokio::task::spawn_blocking(move || {
        let mut printed = Vec::new();
        while let Ok(line) = lines.recv_timeout(Duration::from_secs(30)) {
            let done = line.starts_with("oauth:");
            printed.push(line);
            if done {
                break;
            }
        }
        printed
    })
    .await
    .unwrap();
    let base = printed[0]
        .strip_prefix("bookstore listening on ")
        .expect("the first line names the address")
        .to_owned();
    assert!(
        printed
            .last()
            .is_some_and(|line| line.starts_with("oauth:")),
        "{printed:?}"
    );
    (child, base)
}

/// The protected-resource metadata at the well-known path followed by `suffix`.
async fn metadata(base: &str, suffix: &str) -> Value {
    let url = format!("{base}/.well-known/oauth-protected-resource{suffix}");
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

/// The names of the tools a discovery with `token` lists.
async fn tool_names(base: &str, token: &str) -> Vec<String> {
    let discovery = reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, format!("{base}/"))
        .header("accept", "application/llm+json")
        .bearer_auth(token);
    let manifest = halo_tests::json::fetch(discovery).await;
    let mut names = halo_tests::json::each_str(&manifest["tools"], "/name");
    names.sort_unstable();
    names.into_iter().map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuers_tokens_are_accepted_beside_the_demo_credentials() {
    let server = AuthorizationServer::start(
        AUDIENCE,
        &["books:read", "orders:read", "payments:read", "admin"],
        READ_SCOPES,
    );
    let (child, base) = start(&[
        "--oauth-issuer",
        server.issuer(),
        "--oauth-audience",
        AUDIENCE,
    ])
    .await;
    let http = reqwest::Client::new();
    let metadata_url = format!("{AUDIENCE}/.well-known/oauth-protected-resource");

    // The issuer's token with the read scopes sees and calls what the demo reader does.
    let token = server
        .client_credentials(AUDIENCE, &READ_SCOPES.join(" "))
        .await
        .expect("a token for the bookstore");
    let by_token = tool_names(&base, &token).await;
    assert!(
        by_token.iter().any(|name| name == "get_order"),
        "{by_token:?}"
    );
    assert_eq!(by_token, tool_names(&base, READER).await);
    let order = http
        .get(format!("{base}/api/orders/1001"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    // Past the gate: the handler answers that there is no such order, as to the reader.
    assert_eq!(order.status(), StatusCode::NOT_FOUND);
    let by_reader = http
        .get(format!("{base}/api/orders/1001"))
        .bearer_auth(READER)
        .send()
        .await
        .unwrap();
    assert_eq!(by_reader.status(), StatusCode::NOT_FOUND);

    // Without credentials, the challenge names the metadata, which names the issuer.
    let anonymous = http
        .get(format!("{base}/api/orders/1001"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let challenge = anonymous.headers()[WWW_AUTHENTICATE].to_str().unwrap();
    assert!(
        challenge.contains(&format!(r#"resource_metadata="{metadata_url}""#)),
        "{challenge}"
    );
    let document = metadata(&base, "").await;
    assert_eq!(document["resource"], AUDIENCE);
    assert_eq!(document["authorization_servers"], json!([server.issuer()]));
    let mcp = metadata(&base, "/mcp").await;
    assert_eq!(mcp["resource"], format!("{AUDIENCE}/mcp"));

    // The whole document is for administrators: a reader's token lacks the scope, and the
    // guard's challenge says which and where to get one.
    let openapi = http
        .get(format!("{base}/openapi.json"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(openapi.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        openapi.headers()[WWW_AUTHENTICATE],
        format!(
            r#"Bearer realm="Bookstore", error="insufficient_scope", scope="admin", resource_metadata="{metadata_url}""#
        )
        .as_str()
    );

    // A token changed in one character is refused with the JWT authenticator's reason.
    let tampered = halo_tests::oidc::tampered(&token);
    let refused = http
        .get(format!("{base}/api/orders/1001"))
        .bearer_auth(&tampered)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(
        refused.headers()[WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .contains(r#"error="invalid_token""#)
    );
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["detail"], "the token's signature does not match");
    assert!(
        !problem.to_string().contains(&tampered),
        "no token in errors"
    );

    assert!(terminate(child).await.success());
}

/// Tokens never reach the log (at `trace`) or the audit trail: not the valid one, not a
/// tampered one, not one sent to `/mcp` and passed on to a tool in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_never_reach_the_log_or_the_audit_trail() {
    let server = AuthorizationServer::start(AUDIENCE, READ_SCOPES, READ_SCOPES);
    let audit = std::env::temp_dir().join(format!(
        "bookstore-oauth-audit-{}.jsonl",
        std::process::id()
    ));
    let audit_path = audit.to_str().expect("a UTF-8 temporary path");
    let (mut child, log) = spawn_traced(&[
        "--oauth-issuer",
        server.issuer(),
        "--oauth-audience",
        AUDIENCE,
        "--audit",
        audit_path,
    ]);
    let lines = stdout_lines(&mut child);
    let first = tokio::task::spawn_blocking(move || lines.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("the first line of stdout");
    let base = first
        .strip_prefix("bookstore listening on ")
        .unwrap()
        .to_owned();

    let token = server
        .client_credentials(AUDIENCE, &READ_SCOPES.join(" "))
        .await
        .unwrap();
    let tampered = format!("{}x", &token);
    let http = reqwest::Client::new();
    for bearer in [&token, &tampered] {
        let answer = http
            .get(format!("{base}/api/orders/1001"))
            .bearer_auth(bearer)
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_client_error(), "{}", answer.status());
    }
    let over_mcp = http
        .post(format!("{base}/mcp"))
        .bearer_auth(&token)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get_order", "arguments": {"id": 1001}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(over_mcp.status(), StatusCode::OK);
    assert!(terminate(child).await.success());

    let log = log.join().unwrap();
    let trail = std::fs::read_to_string(&audit).unwrap_or_default();
    let _ = std::fs::remove_file(&audit);
    assert!(
        log.contains("/api/orders/1001"),
        "the requests were traced: {log}"
    );
    assert!(
        trail.contains("get_order"),
        "the calls were audited: {trail}"
    );
    // Not the token, nor its signature alone.
    let signature = token.rsplit('.').next().unwrap();
    for (name, text) in [("log", &log), ("audit trail", &trail)] {
        assert!(!text.contains(signature), "a token in the {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audience_defaults_to_the_bookstores_base_url() {
    let server = AuthorizationServer::start(AUDIENCE, &["books:read"], &["books:read"]);
    let (child, base) = start(&["--oauth-issuer", server.issuer()]).await;
    let document = metadata(&base, "").await;
    assert_eq!(document["resource"], base.as_str());
    assert!(terminate(child).await.success());
}

#[test]
fn an_issuer_that_cannot_be_reached_stops_the_start() {
    let output = Command::new(env!("CARGO_BIN_EXE_bookstore"))
        .args([
            "--addr",
            "127.0.0.1:0",
            "--oauth-issuer",
            "http://127.0.0.1:1",
        ])
        .env("RUST_LOG", "off")
        .stdin(Stdio::null())
        .output()
        .expect("run bookstore");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bookstore: --oauth-issuer: JwtAuthenticator: discovery failed"),
        "{stderr}"
    );
}

#[test]
fn the_oauth_flags_are_checked() {
    let cli =
        Cli::parse_from_args(["bookstore", "--oauth-issuer", "http://127.0.0.1:9000"]).unwrap();
    // Kept as written: issuers are compared character for character.
    assert_eq!(cli.oauth_issuer.as_deref(), Some("http://127.0.0.1:9000"));
    assert_eq!(cli.oauth_audience, None);
    let error =
        Cli::parse_from_args(["bookstore", "--oauth-audience", "https://b.example"]).unwrap_err();
    assert!(error.to_string().contains("--oauth-issuer"), "{error}");
    for bad in ["id.example", "ftp://id.example", "https://id.example/?x=1"] {
        assert!(
            Cli::parse_from_args(["bookstore", "--oauth-issuer", bad]).is_err(),
            "{bad}"
        );
    }
}
