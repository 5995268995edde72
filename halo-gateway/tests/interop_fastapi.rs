//! A service made HALO-compliant by the Python reference implementation (`halo-fastapi`
//! 0.3.0) as a `halo` upstream: discovered, served under the gateway's prefix, called with
//! the gateway's credential for it and never the caller's.
//!
//! Needs the interop virtualenv (`bash .ci/test` creates it) or `HALO_PYTHON`.

use halo_gateway::{Config, Gateway};
use halo_tests::FastApiServer;
use halo_tests::json::{each_str, fetch};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn a_halo_fastapi_service_behind_the_gateway() {
    let server = tokio::task::spawn_blocking(FastApiServer::start)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "auth: {{ tokens: {{ \"caller-token-0123456789\": {{ caller: agent }} }} }}\n\
         upstreams:\n  notes: {{ halo: \"{}\", headers: {{ Authorization: \"Bearer {}\" }} }}\n",
        server.base_url(),
        FastApiServer::TOKEN
    );
    let config = Config::from_text(&text, dir.path()).unwrap();
    let gateway = Gateway::build(&config).await.unwrap();
    assert_eq!(gateway.report().tools(), 4, "{}", gateway.report());
    let url_server = halo_tests::spawn(gateway.router()).await;
    let url = url_server.url("");
    let http = reqwest::Client::new();

    let manifest = halo_tests::discover(&format!("{url}/"), Some("caller-token-0123456789")).await;
    let names = each_str(&manifest["tools"], "/name");
    assert!(names.contains(&"notes_create_note"), "{names:?}");

    let note = fetch(
        http.get(format!("{url}/notes/notes/1"))
            .bearer_auth("caller-token-0123456789"),
    )
    .await;
    assert_eq!(note["title"], "first", "{note}");

    // Creating a note needs the service's token: the gateway's, not the caller's.
    let created = http
        .post(format!("{url}/notes/notes"))
        .bearer_auth("caller-token-0123456789")
        .json(&json!({"title": "through the gateway"}))
        .send()
        .await
        .unwrap();
    assert!(created.status().is_success(), "{}", created.status());
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["title"], "through the gateway");
    let anonymous = http
        .get(format!("{url}/notes/notes/1"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}
