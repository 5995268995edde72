//! The notes API, whose OpenAPI document comes from aide, through real HTTP on loopback:
//! discovery, schemas from schemars, validation and declared limits enforced by the layer,
//! and halo-client calling its tools.

use halo_client::Client;
use halo_protocol::lint::{Level, Linter};
use halo_protocol::{Manifest, ToolEntry, ToolSchema};
use halo_tests::{TestServer, discover, spawn};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn start() -> TestServer {
    spawn(notes::app()).await
}

/// The notes the server holds.
async fn held(server: &TestServer) -> Vec<Value> {
    let response = reqwest::get(server.url("/notes")).await.unwrap();
    response.json().await.unwrap()
}

#[tokio::test]
async fn every_documented_route_is_a_tool() {
    let server = start().await;
    let manifest: Manifest =
        serde_json::from_value(discover(&server.url("/"), None).await).unwrap();
    assert_eq!(manifest.api, "Notes");
    let tools: Vec<(&str, &str, &str)> = manifest
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.method.as_str(), t.url.as_str()))
        .collect();
    // `/health` is served but not documented, so it is not a tool.
    assert_eq!(
        tools,
        [
            ("list_notes", "GET", "/notes"),
            ("create_note", "POST", "/notes"),
            ("get_note", "GET", "/notes/{id}"),
            ("delete_note", "DELETE", "/notes/{id}"),
        ]
    );
    let create = &manifest.tools[1];
    assert_eq!(create.tags, ["notes", "write"]);
    assert_eq!(create.description, "Write a note.");

    let written: Vec<ToolEntry> =
        serde_json::from_value(discover(&server.url("/?tags=write"), None).await["tools"].clone())
            .unwrap();
    assert_eq!(written.len(), 2);
}

#[tokio::test]
async fn schemas_come_from_schemars_and_metadata_from_describe() {
    let server = start().await;
    let schemas: Vec<ToolSchema> =
        serde_json::from_value(discover(&server.url("/notes"), None).await).unwrap();
    let create = schemas.iter().find(|s| s.call.method == "POST").unwrap();
    let create = serde_json::to_value(create).unwrap();
    let input = &create["input"];
    assert_eq!(input["text"]["minLength"], 1, "{input}");
    assert_eq!(input["text"]["maxLength"], 500);
    assert_eq!(input["text"]["required"], true);
    assert_eq!(input["text"]["in"], "body");
    assert_eq!(input["tags"]["maxItems"], 10);
    assert_ne!(input["tags"]["required"], true);
    assert!(
        create["why"]
            .as_str()
            .unwrap()
            .starts_with("Use to remember")
    );
    assert_eq!(create["effects"]["reversible"], true);
    assert_eq!(create["effects"]["undo"], "DELETE /notes/{id}");
    assert_eq!(create["limits"]["rate"], "30/minute");
    assert_eq!(create["limits"]["idempotency_key"], "Idempotency-Key");
    assert_eq!(create["examples"][0]["input"]["text"], "Renew the passport");

    let list = schemas.iter().find(|s| s.call.method == "GET").unwrap();
    let limit = &serde_json::to_value(list).unwrap()["input"]["limit"];
    assert_eq!(
        (limit["minimum"].clone(), limit["maximum"].clone()),
        (json!(1), json!(100))
    );

    // The path's parameter is described from the `NoteId` extractor.
    let one: Vec<ToolSchema> =
        serde_json::from_value(discover(&server.url("/notes/1"), None).await).unwrap();
    let delete =
        serde_json::to_value(one.iter().find(|s| s.call.method == "DELETE").unwrap()).unwrap();
    assert_eq!(delete["effects"]["reversible"], false);
    assert_eq!(delete["input"]["id"]["type"], "integer", "{delete}");
    assert_eq!(delete["input"]["id"]["in"], "path");
}

#[tokio::test]
async fn the_layer_refuses_what_aide_schemas_forbid() {
    let server = start().await;
    let http = reqwest::Client::new();
    let post = |body: Value| {
        http.post(server.url("/notes"))
            .header("idempotency-key", "k-1")
            .json(&body)
            .send()
    };
    for (body, pointer) in [
        (json!({"text": ""}), "/text"),
        (json!({"text": "x", "tags": "home"}), "/tags"),
        (json!({"text": "x", "colour": "red"}), ""),
        (json!({}), "/text"),
    ] {
        let response = post(body.clone()).await.unwrap();
        assert_eq!(
            response.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}"
        );
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );
        let problem: Value = response.json().await.unwrap();
        assert!(
            problem["errors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["pointer"] == pointer),
            "{body}: {problem}"
        );
    }
    // Query and path parameters are checked as well (400, as axum's `Query` and `Path`).
    let too_many = http
        .get(server.url("/notes?limit=500"))
        .send()
        .await
        .unwrap();
    assert_eq!(too_many.status(), StatusCode::BAD_REQUEST);
    let not_a_number = http.get(server.url("/notes/abc")).send().await.unwrap();
    assert_eq!(not_a_number.status(), StatusCode::BAD_REQUEST);
    // Nothing refused was written.
    let all = held(&server).await;
    assert_eq!(all.len(), 3);
}

#[tokio::test]
async fn a_repeated_write_with_its_key_is_replayed_not_run_again() {
    let server = start().await;
    let http = reqwest::Client::new();
    let write = |text: &str| {
        http.post(server.url("/notes"))
            .header("idempotency-key", "one-fern")
            .json(&json!({"text": text}))
            .send()
    };
    let first = write("Water the ferns").await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();
    let again = write("Water the ferns").await.unwrap();
    assert_eq!(again.status(), StatusCode::CREATED);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.json::<Value>().await.unwrap(), first);
    // The same key for another note is a mistake, not a new note.
    let other = write("Feed the cat").await.unwrap();
    assert_eq!(other.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let all = held(&server).await;
    assert_eq!(all.len(), 4, "one note written: {all:?}");
}

#[tokio::test]
async fn halo_client_calls_the_tools() {
    let server = start().await;
    let client = Client::new(server.base_url()).unwrap();
    let manifest = client.discover(&["notes"]).await.unwrap();
    let schemas = client.describe_all(&manifest.tools).await.unwrap();
    let tool = |name: &str| {
        let index = manifest.tools.iter().position(|t| t.name == name).unwrap();
        &schemas[index]
    };

    // The client adds the Idempotency-Key the schema asks for, and places the path argument.
    let created = client
        .call(
            tool("create_note"),
            json!({"text": "Water the ferns", "tags": ["home"]}),
        )
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let id = created.json().unwrap()["id"].as_u64().unwrap();
    let read = client
        .call(tool("get_note"), json!({"id": id}))
        .await
        .unwrap();
    assert_eq!(read.json().unwrap()["text"], "Water the ferns");
    let home = client
        .call(tool("list_notes"), json!({"tag": "home", "limit": 5}))
        .await
        .unwrap();
    assert_eq!(home.json().unwrap().as_array().unwrap().len(), 2);

    let deleted = client
        .call(tool("delete_note"), json!({"id": id}))
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let gone = client
        .call(tool("get_note"), json!({"id": id}))
        .await
        .unwrap_err();
    assert_eq!(gone.status(), Some(StatusCode::NOT_FOUND));
    assert!(
        gone.problem()
            .unwrap()
            .detail
            .unwrap()
            .contains(&id.to_string())
    );
}

#[tokio::test]
async fn writes_beyond_the_declared_rate_are_refused() {
    let server = start().await;
    let http = reqwest::Client::new();
    let mut statuses = Vec::new();
    for i in 0..31 {
        let response = http
            .post(server.url("/notes"))
            .header("idempotency-key", format!("k-{i}"))
            .json(&json!({"text": format!("note {i}")}))
            .send()
            .await
            .unwrap();
        statuses.push(response.status());
    }
    assert!(
        statuses[..30].iter().all(|s| *s == StatusCode::CREATED),
        "{statuses:?}"
    );
    assert_eq!(statuses[30], StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn the_notes_api_passes_lint_with_warnings_denied() {
    let server = start().await;
    let client = Client::new(server.base_url()).unwrap();
    let manifest = client.discover(&[]).await.unwrap();
    let schemas = client.describe_all(&manifest.tools).await.unwrap();
    let tools: Vec<(ToolEntry, ToolSchema)> = manifest.tools.into_iter().zip(schemas).collect();
    let report = Linter::new().warnings(Level::Deny).check(&tools);
    assert!(report.findings.is_empty(), "{report:#?}");
}
