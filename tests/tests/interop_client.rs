//! Interop the other way round: halo-rs's client against a server made HALO-compliant by the
//! Python reference implementation (`halo-fastapi` 0.3.0): discover, describe (multi-method
//! paths, single objects or arrays), call with a path parameter, credentials on a protected
//! route, and a problem-free 4xx on a bad token.
//!
//! Needs the interop virtualenv (`bash .ci/test` creates it) or `HALO_PYTHON`.

use halo_client::{Client, Credential, Method, RetryPolicy};
use halo_tests::FastApiServer;
use serde_json::json;

fn client(server: &FastApiServer, token: Option<&str>) -> Client {
    let builder = Client::builder(server.base_url()).retry(RetryPolicy::none());
    let builder = match token {
        Some(token) => builder.credential(Credential::bearer(token)),
        None => builder,
    };
    builder.build().unwrap()
}

#[tokio::test]
async fn discovers_describes_and_calls_a_halo_fastapi_server() {
    let server = FastApiServer::start();
    let client = client(&server, Some(FastApiServer::TOKEN));

    let manifest = client.discover(&[]).await.unwrap();
    assert_eq!(manifest.api, "Notes");
    let names: Vec<&str> = manifest.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["list_notes", "create_note", "get_note", "delete_note"]
    );
    let read = client.discover(&["read"]).await.unwrap();
    assert!(
        read.tools
            .iter()
            .all(|t| t.tags.iter().any(|tag| tag == "read"))
    );
    assert_eq!(
        read.tools.len(),
        1,
        "the reference serves no tags for parameter-only routes"
    );

    // One OPTIONS per path answers both methods; each describe gets its own method.
    let list = client.describe("/notes", Method::GET).await.unwrap();
    let create = client.describe("/notes", Method::POST).await.unwrap();
    assert_eq!(list.call.method, "GET");
    assert_eq!(create.call.method, "POST");
    assert!(create.input["title"].required);
    assert_eq!(create.limits.as_ref().unwrap().idempotent, Some(false));
    let missing = client.describe("/notes", Method::PUT).await.unwrap_err();
    assert!(missing.is_not_described(), "{missing}");
    let all = client.describe_all(&manifest.tools).await.unwrap();
    assert_eq!(all.len(), 4);

    // The reference does not describe path parameters: the template fills them anyway.
    let note = client
        .invoke("/notes/{note_id}", Method::GET, json!({"note_id": 1}))
        .await
        .unwrap();
    assert_eq!(note.json().unwrap()["title"], "first");
    let found = client
        .invoke("/notes", Method::GET, json!({"q": "fir"}))
        .await
        .unwrap();
    assert_eq!(found.json().unwrap()["total"], 1);

    let created = client
        .invoke(
            "/notes",
            Method::POST,
            json!({"title": "from rust", "body": "hi"}),
        )
        .await
        .unwrap();
    let id = created.json().unwrap()["id"].as_u64().unwrap();
    let deleted = client
        .invoke("/notes/{note_id}", Method::DELETE, json!({"note_id": id}))
        .await
        .unwrap();
    assert_eq!(deleted.json().unwrap()["deleted"], id);
}

#[tokio::test]
async fn a_protected_route_without_the_token_keeps_its_error_body() {
    let server = FastApiServer::start();
    let client = client(&server, Some("wrong-token"));
    let error = client
        .invoke("/notes", Method::POST, json!({"title": "x"}))
        .await
        .unwrap_err();
    assert!(error.is_status());
    assert_eq!(error.status().map(|s| s.as_u16()), Some(401));
    let body = error.response().unwrap().json().unwrap();
    assert_eq!(body["detail"], "a valid bearer token is required");
    assert!(!error.to_string().contains("wrong-token"));
    assert!(!format!("{error:?}").contains("wrong-token"));

    let anonymous = client_without_token(&server);
    let missing = anonymous
        .invoke("/notes/{note_id}", Method::GET, json!({"note_id": 999}))
        .await
        .unwrap_err();
    assert_eq!(missing.status().map(|s| s.as_u16()), Some(404));
}

fn client_without_token(server: &FastApiServer) -> Client {
    client(server, None)
}
