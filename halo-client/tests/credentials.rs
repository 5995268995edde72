//! Credentials stay with their hosts: each kind is applied to the host the map names (and
//! `host:port` wins over `host`), never to another origin, whether the request goes there
//! through an absolute `call.url` or a redirect, and credential files expand `${ENV}`.

use crate::support;

use std::process::Command;

use halo_client::{Client, ClientBuilder, Credential, Credentials, HeaderName, Method};
use serde_json::json;
use support::fault::{self, Action};
use support::{authority, halo};

const TOKEN: &str = "tok-a1b2c3";
const KEY: &str = "key-d4e5f6";

/// Builds `client` and gets item 1 through it: the server sees a discovery, then the call.
async fn get_item(client: ClientBuilder) {
    let client = client.build().unwrap();
    client
        .invoke("/items/{id}", Method::GET, json!({"id": "1"}))
        .await
        .unwrap();
}

/// `(authorization, x-custom-key)` of a request recorded by the HALO server.
fn carried(seen: &halo::Seen) -> (Option<&str>, Option<&str>) {
    (seen.header("authorization"), seen.header("x-custom-key"))
}

#[tokio::test]
async fn each_kind_is_applied_to_its_host() {
    let server = halo::Server::start().await;
    let host = authority(&server.base);
    for (credential, expected) in [
        (Credential::bearer(TOKEN), (Some("Bearer tok-a1b2c3"), None)),
        (
            Credential::api_key(HeaderName::from_static("x-custom-key"), KEY),
            (None, Some("key-d4e5f6")),
        ),
        (
            Credential::basic("ada", "pw"),
            (Some("Basic YWRhOnB3"), None),
        ),
    ] {
        let before = server.seen().len();
        get_item(
            Client::builder(&server.base).credentials(Credentials::new().with(host, credential)),
        )
        .await;
        let seen = &server.seen()[before..];
        assert_eq!(seen.len(), 2, "discovery and call");
        for request in seen {
            assert_eq!(
                carried(request),
                expected,
                "{} {}",
                request.method,
                request.uri
            );
        }
    }
}

#[tokio::test]
async fn the_builders_credential_is_for_the_base_host() {
    let server = halo::Server::start().await;
    get_item(Client::builder(&server.base).credential(Credential::bearer(TOKEN))).await;
    let calls = server.calls("GET", "/items/1");
    assert_eq!(calls[0].header("authorization"), Some("Bearer tok-a1b2c3"));
}

#[tokio::test]
async fn hosts_not_in_the_map_get_nothing() {
    let server = halo::Server::start().await;
    let port = server.addr.port();
    let other_port = if port == u16::MAX { port - 1 } else { port + 1 };
    let credentials = Credentials::new()
        .with(format!("127.0.0.1:{other_port}"), Credential::bearer(TOKEN))
        .with(
            format!("localhost:{port}"),
            Credential::api_key(HeaderName::from_static("x-custom-key"), KEY),
        )
        .with("example.com", Credential::basic("ada", "pw"));
    get_item(Client::builder(&server.base).credentials(credentials)).await;
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    for request in &seen {
        assert_eq!(carried(request), (None, None), "{}", request.uri);
    }
}

#[tokio::test]
async fn an_absolute_call_url_on_another_origin_gets_no_credentials() {
    let home = halo::Server::start().await;
    let elsewhere = fault::Server::start().await;
    let client = Client::builder(&home.base)
        .credentials(
            Credentials::new()
                .with(authority(&home.base), Credential::bearer(TOKEN))
                .with(
                    format!("localhost:{}", home.addr.port()),
                    Credential::bearer(TOKEN),
                ),
        )
        .build()
        .unwrap();
    for url in [
        elsewhere.url("/undo/{id}"),
        format!("http://localhost:{}/undo/{{id}}", elsewhere.addr.port()),
    ] {
        let schema: halo_client::protocol::ToolSchema =
            serde_json::from_value(fault::schema("DELETE", &url, &json!({}))).unwrap();
        let response = client.call(&schema, json!({"id": 9})).await.unwrap();
        assert_eq!(response.to_value()["target"], "/undo/9");
    }
    let requests = elsewhere.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.header("authorization"), None);
    }
    assert!(home.seen().is_empty(), "nothing went to the home API");
}

/// A fault server describing `GET /go`, and a client of it holding `credential` for it
/// (by `host:port`), schema already read.
async fn origin(credential: Credential) -> (fault::Server, Client) {
    support::go_with(&json!({}), credential).await
}

/// A credential of each kind, with the header it travels in and its value there.
fn each_kind() -> [(Credential, &'static str, &'static str); 3] {
    [
        (
            Credential::bearer(TOKEN),
            "authorization",
            "Bearer tok-a1b2c3",
        ),
        (
            Credential::api_key(HeaderName::from_static("x-custom-key"), KEY),
            "x-custom-key",
            KEY,
        ),
        (
            Credential::basic("ada", "pw"),
            "authorization",
            "Basic YWRhOnB3",
        ),
    ]
}

#[tokio::test]
async fn a_redirect_to_another_origin_drops_every_credential() {
    let other = fault::Server::start().await;
    for (credential, header, value) in each_kind() {
        let (home, client) = origin(credential).await;
        for status in [301, 302, 303, 307, 308] {
            for target in [
                other.url("/landing"),
                format!("http://localhost:{}/landing", other.addr.port()),
            ] {
                let before = other.requests().len();
                home.script([Action::redirect(status, &target)]);
                let response = client.invoke("/go", Method::GET, json!({})).await.unwrap();
                assert_eq!(response.to_value()["target"], "/landing");
                let sent = home.requests();
                let first = sent.last().unwrap();
                assert_eq!(first.header(header), Some(value), "the home origin has it");
                let landed = &other.requests()[before..];
                assert_eq!(landed.len(), 1, "{status} {target}");
                assert_eq!(landed[0].header("authorization"), None, "{status} {target}");
                assert_eq!(landed[0].header("x-custom-key"), None, "{status} {target}");
            }
        }
    }
}

#[tokio::test]
async fn a_redirect_to_another_origin_carries_that_origins_own_credential() {
    let other = fault::Server::start().await;
    let (home, _) = origin(Credential::bearer(TOKEN)).await;
    let client = Client::builder(&home.base)
        .credentials(
            Credentials::new()
                .with(authority(&home.base), Credential::bearer(TOKEN))
                .with(
                    authority(&other.base),
                    Credential::api_key(HeaderName::from_static("x-custom-key"), KEY),
                ),
        )
        .build()
        .unwrap();
    client.describe("/go", Method::GET).await.unwrap();
    home.script([Action::redirect(307, &other.url("/landing"))]);
    client.invoke("/go", Method::GET, json!({})).await.unwrap();
    let landed = other.requests();
    assert_eq!(
        landed[0].header("authorization"),
        None,
        "not the home token"
    );
    assert_eq!(landed[0].header("x-custom-key"), Some(KEY));
}

#[tokio::test]
async fn a_redirect_within_the_origin_keeps_the_credential() {
    // The bearer token and the API key.
    for (credential, header, value) in each_kind().into_iter().take(2) {
        let (home, client) = origin(credential).await;
        home.script([
            Action::redirect(302, "/moved"),
            Action::redirect(307, &home.url("/moved-again")),
        ]);
        let response = client.invoke("/go", Method::GET, json!({})).await.unwrap();
        assert_eq!(response.to_value()["target"], "/moved-again");
        let requests = home.requests();
        let targets: Vec<&str> = requests.iter().map(|r| r.target.as_str()).collect();
        assert_eq!(targets, ["/go", "/moved", "/moved-again"]);
        for request in &requests {
            assert_eq!(request.header(header), Some(value), "{}", request.target);
        }
    }
}

#[tokio::test]
async fn host_and_port_beat_a_bare_host() {
    let home = fault::Server::start().await;
    let other = fault::Server::start().await;
    home.describe("/go", &json!([fault::schema("GET", "/go", &json!({}))]));
    let credentials = Credentials::new()
        .with("127.0.0.1", Credential::bearer("bare"))
        .with(authority(&home.base), Credential::bearer("port"));
    let client = Client::builder(&home.base)
        .credentials(credentials)
        .build()
        .unwrap();
    client.invoke("/go", Method::GET, json!({})).await.unwrap();
    assert_eq!(
        home.requests()[0].header("authorization"),
        Some("Bearer port")
    );
    assert_eq!(
        home.discoveries()[0].header("authorization"),
        Some("Bearer port")
    );
    // Another port of the same host has no entry of its own: the bare host's applies.
    let schema: halo_client::protocol::ToolSchema =
        serde_json::from_value(fault::schema("GET", &other.url("/x"), &json!({}))).unwrap();
    client.call(&schema, json!({})).await.unwrap();
    assert_eq!(
        other.requests()[0].header("authorization"),
        Some("Bearer bare")
    );
}

/// An IPv6 host is written in brackets in URLs and `host:port` (`[::1]:8080`), and that is
/// the key `ClientBuilder::credential` itself inserts for an IPv6 base URL.
///
/// Regression test: the lookup used to strip the brackets (`::1:8080`, `::1`), so neither the
/// builder's own entry nor a map entry written as `[::1]:8080` ever applied. Skipped where
/// there is no IPv6 loopback.
#[tokio::test]
async fn ipv6_hosts_are_keyed_as_urls_write_them() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        return;
    }
    let server = fault::Server::start_on("[::1]:0".parse().unwrap()).await;
    server.describe("/go", &json!([fault::schema("GET", "/go", &json!({}))]));
    assert!(server.base.starts_with("http://[::1]:"), "{}", server.base);
    let from_builder = Client::builder(&server.base)
        .credential(Credential::bearer("builder"))
        .build()
        .unwrap();
    let from_map = Client::builder(&server.base)
        .credentials(Credentials::new().with(authority(&server.base), Credential::bearer("map")))
        .build()
        .unwrap();
    from_builder
        .invoke("/go", Method::GET, json!({}))
        .await
        .unwrap();
    from_map
        .invoke("/go", Method::GET, json!({}))
        .await
        .unwrap();
    let requests = server.requests();
    let seen: Vec<Option<&str>> = requests.iter().map(|r| r.header("authorization")).collect();
    assert_eq!(seen, [Some("Bearer builder"), Some("Bearer map")]);
}

/// Environment variables of the child process run by
/// `credentials_from_a_file_expand_environment_variables`.
const CHILD_VAR: &str = "HALO_CLIENT_TEST_CHILD_VAR";
const CHILD_DIR: &str = "HALO_CLIENT_TEST_CHILD_DIR";

/// Credential files expand `${NAME}` from the environment. The variable is set only in a
/// child process (this test binary, running `file_credentials_child`), so no test ever
/// changes the environment of a running process (`set_var` is `unsafe`, which the workspace
/// forbids, and racy under a multi-threaded runtime).
#[test]
fn credentials_from_a_file_expand_environment_variables() {
    let pid = std::process::id();
    let var = format!("HALO_CLIENT_IT_SECRET_{pid}");
    let dir = std::env::temp_dir().join(format!("halo-client-credentials-{pid}"));
    std::fs::create_dir_all(&dir).unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "credentials::file_credentials_child",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD_VAR, &var)
        .env(CHILD_DIR, &dir)
        .env(&var, format!("env-secret-{pid}"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 passed"),
        "the child ran: {stdout}\n{stderr}"
    );
}

/// The body of `credentials_from_a_file_expand_environment_variables`, run in a child process
/// whose environment holds the variable. A no-op when run on its own.
#[tokio::test]
async fn file_credentials_child() {
    let (Ok(var), Ok(dir)) = (std::env::var(CHILD_VAR), std::env::var(CHILD_DIR)) else {
        return;
    };
    let secret = std::env::var(&var).unwrap();
    let server = halo::Server::start().await;
    let other = halo::Server::start().await;
    let path = std::path::Path::new(&dir).join("credentials.json");
    let file = json!({
        authority(&server.base): {"type": "bearer", "value": format!("pre-${{{var}}}-post")},
        authority(&other.base): {"type": "apikey", "header": "X-Custom-Key", "value": format!("${{{var}}}")},
    });
    std::fs::write(&path, file.to_string()).unwrap();
    let credentials = Credentials::from_file(&path).unwrap();
    assert!(!format!("{credentials:?}").contains(&secret));

    for target in [&server, &other] {
        get_item(Client::builder(&target.base).credentials(credentials.clone())).await;
    }
    let call = &server.calls("GET", "/items/1")[0];
    let expected = format!("Bearer pre-{secret}-post");
    assert_eq!(carried(call), (Some(expected.as_str()), None));
    let call = &other.calls("GET", "/items/1")[0];
    assert_eq!(carried(call), (None, Some(secret.as_str())));

    // A variable that is not set is an error naming it, never a value.
    let missing = format!("{var}_UNSET");
    std::fs::write(
        &path,
        json!({"h": {"type": "bearer", "value": format!("${{{missing}}}")}}).to_string(),
    )
    .unwrap();
    let error = Credentials::from_file(&path).unwrap_err();
    assert!(error.is_credentials(), "{error:?}");
    assert!(error.to_string().contains(&missing), "{error}");
}
