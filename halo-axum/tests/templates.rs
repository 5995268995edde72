//! Path templates that axum's router cannot express, as real documents write them: literal
//! text beside a parameter (Twilio's `{Sid}.json`, `v{version}`), two parameters in one
//! segment, and path keys with a `#fragment` (Box's way of describing several operations on
//! one path). Each is described, matched, validated and governed (the app called in process).

use crate::common;

use axum::Router;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::get;
use common::client::App;
use halo_axum::{HaloBuilder, Principal, StaticAuthenticator, Validation};
use halo_tests::json::each_str;
use serde_json::{Value, json};

fn document() -> Value {
    let sid = |pattern: &str| {
        json!({"name": "Sid", "in": "path", "required": true,
               "schema": {"type": "string", "pattern": pattern}})
    };
    json!({
        "openapi": "3.0.1", "info": {"title": "Telephony", "version": "1"},
        "paths": {
            "/2010-04-01/Accounts/{Sid}.json": {"get": {
                "operationId": "FetchAccount",
                "parameters": [sid("^AC[0-9a-f]{2}$")],
                "x-halo-limits": {"rate": "2/minute"},
                "responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/account"}}}}}
            }},
            "/2010-04-01/Accounts/{AccountSid}/Calls/{Sid}.json": {"get": {
                "operationId": "FetchCall",
                "parameters": [
                    {"name": "AccountSid", "in": "path", "required": true, "schema": {"type": "string"}},
                    sid("^CA[0-9a-f]{2}$")
                ],
                "responses": {"200": {"description": "ok"}}
            }},
            "/v{version}/status": {"get": {
                "operationId": "status",
                "parameters": [{"name": "version", "in": "path", "required": true,
                                "schema": {"type": "integer"}}],
                "responses": {"200": {"description": "ok"}}
            }},
            "/repos/{owner}.{repo}": {"get": {
                "operationId": "repo",
                "parameters": [
                    {"name": "owner", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "repo", "in": "path", "required": true, "schema": {"type": "string"}}
                ],
                "responses": {"200": {"description": "ok"}}
            }},
            "/files/{file_id}": {
                "parameters": [{"name": "file_id", "in": "path", "required": true,
                                "schema": {"type": "string"}}],
                "get": {"operationId": "get_files_id", "summary": "Get a file",
                        "responses": {"200": {"description": "ok"}}},
                "delete": {"operationId": "delete_files_id", "responses": {"204": {"description": "gone"}}}
            },
            "/files/{file_id}#get_shared_link": {
                "parameters": [{"name": "file_id", "in": "path", "required": true,
                                "schema": {"type": "string"}}],
                "get": {"operationId": "get_files_id#get_shared_link",
                        "summary": "Get a file's shared link",
                        "parameters": [{"name": "fields", "in": "query", "required": true,
                                        "schema": {"type": "string", "enum": ["shared_link"]}}],
                        "x-halo-limits": {"rate": "1/minute"},
                        "responses": {"200": {"description": "ok"}}}
            }
        },
        "components": {"schemas": {"account": {"type": "object", "properties": {
            "sid": {"type": "string"}, "friendly_name": {"type": "string"}}}}}
    })
}

/// The app: axum routes what its router can express and parses the rest itself.
fn app() -> Router {
    Router::new()
        .route(
            "/2010-04-01/Accounts/{file}",
            get(|Path(file): Path<String>| async move {
                axum::Json(json!({"sid": file.trim_end_matches(".json")}))
            }),
        )
        .route("/files/{id}", get(|| async { "file" }))
        .route("/v2/status", get(|| async { "ok" }))
}

fn serve(builder: HaloBuilder) -> App {
    App::new(app().layer(builder.build().unwrap()))
}

async fn discover(app: &App, path: &str) -> (StatusCode, Value) {
    let answer = app.discover(path).send().await;
    (answer.status, answer.json())
}

#[tokio::test]
async fn concrete_paths_are_discovered_as_their_templates() {
    let app = serve(HaloBuilder::from_openapi_json(document()));
    let (status, manifest) = discover(&app, "/").await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = each_str(&manifest["tools"], "/name");
    assert_eq!(names.len(), 7, "{names:?}");
    let distinct: std::collections::BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        7,
        "every tool keeps its own name: {names:?}"
    );

    for (path, template) in [
        (
            "/2010-04-01/Accounts/AC1.json",
            "/2010-04-01/Accounts/{Sid}.json",
        ),
        (
            "/2010-04-01/Accounts/AC1/Calls/CA2.json",
            "/2010-04-01/Accounts/{AccountSid}/Calls/{Sid}.json",
        ),
        ("/v2/status", "/v{version}/status"),
        ("/repos/halo.rs", "/repos/{owner}.{repo}"),
    ] {
        let (status, schemas) = discover(&app, path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(schemas[0]["call"]["url"], template, "{path}");
    }
    let (_, account) = discover(&app, "/2010-04-01/Accounts/AC1.json").await;
    assert_eq!(
        account[0]["output"]["properties"]["friendly_name"],
        json!({"type": "string"})
    );
    for path in ["/2010-04-01/Accounts/AC1.xml", "/v/status", "/repos/halo"] {
        assert_eq!(
            discover(&app, path).await.0,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }

    // Both GETs of `/files/{file_id}` and its DELETE answer at the real path, each with the
    // template as its URL (no fragment) and its own name.
    let (status, files) = discover(&app, "/files/F1").await;
    assert_eq!(status, StatusCode::OK);
    let tools: Vec<(&str, &str)> = files
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["call"]["method"].as_str().unwrap(),
                t["call"]["url"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("GET", "/files/{file_id}"),
            ("DELETE", "/files/{file_id}"),
            ("GET", "/files/{file_id}")
        ]
    );
    assert_eq!(files[2]["input"]["fields"]["required"], true);
}

#[tokio::test]
async fn calls_of_suffix_templates_are_validated_and_governed() {
    let auth = StaticAuthenticator::new().bearer("t", Principal::new("caller"));
    let app = serve(
        HaloBuilder::from_openapi_json(document())
            .authenticator(auth)
            .validate(Validation::On),
    );
    let get = |path: &str| app.get(path).bearer_auth("t").send();

    // The parameter is the text before the suffix: its pattern applies to `ACzz`, not to
    // `ACzz.json`.
    let refused = get("/2010-04-01/Accounts/ACzz.json").await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    let problem = refused.json();
    assert_eq!(problem["errors"][0]["pointer"], "/Sid", "{problem}");

    // Two calls a minute, then 429: the rate the suffix template declares.
    for _ in 0..2 {
        let ok = get("/2010-04-01/Accounts/AC0a.json").await;
        assert_eq!(ok.status, StatusCode::OK);
        assert_eq!(ok.json(), json!({"sid": "AC0a"}));
    }
    let limited = get("/2010-04-01/Accounts/AC0b.json").await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);

    // `v{version}`: an integer.
    assert_eq!(get("/v2/status").await.status, StatusCode::OK);
    assert_eq!(get("/vtwo/status").await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn fragment_operations_are_told_apart_by_their_required_query() {
    let app = serve(HaloBuilder::from_openapi_json(document()));
    // `#get_shared_link` allows one call a minute; plain `GET /files/{file_id}` has no rate.
    let shared = |query: &'static str| app.get(&format!("/files/F1{query}")).send();
    assert_eq!(shared("?fields=shared_link").await.status, StatusCode::OK);
    assert_eq!(
        shared("?fields=shared_link").await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    for _ in 0..3 {
        assert_eq!(shared("").await.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn path_items_given_by_reference_are_described() {
    let document = json!({
        "openapi": "3.1.0", "info": {"title": "Refs", "version": "1"},
        "paths": {"/pets": {"$ref": "#/components/pathItems/pets"}},
        "components": {"pathItems": {"pets": {"get": {
            "operationId": "list_pets",
            "responses": {"200": {"description": "ok"}}
        }}}}
    });
    let app = serve(HaloBuilder::from_openapi_json(document));
    let (status, schemas) = discover(&app, "/pets").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(schemas[0]["call"], json!({"method": "GET", "url": "/pets"}));
    let dangling = json!({
        "openapi": "3.1.0", "info": {"title": "Refs", "version": "1"},
        "paths": {"/pets": {"$ref": "#/components/pathItems/nowhere"}}
    });
    let error = HaloBuilder::from_openapi_json(dangling)
        .build()
        .unwrap_err();
    assert!(error.is_unresolved_reference(), "{error}");
    assert!(error.to_string().contains("/pets"), "{error}");
}
