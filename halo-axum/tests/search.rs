//! `OPTIONS /?q=`: discovery's search (the app called in process), scoped to the caller, cached like every
//! discovery answer; and the tags derived for untagged documents.

use crate::common;

use axum::Router;
use axum::http::StatusCode;
use common::client::{Answer, App};
use halo_axum::{HaloBuilder, HaloLayer, Principal, StaticAuthenticator};
use halo_tests::json::each_str;
use serde_json::{Value, json};

async fn discover(app: &App, path: &str, token: Option<&str>) -> Answer {
    app.discover(path).caller(token).send().await
}

async fn json(app: &App, path: &str, token: Option<&str>) -> Value {
    let answer = discover(app, path, token).await;
    assert_eq!(answer.status, StatusCode::OK, "{path}");
    answer.json()
}

fn names(manifest: &Value) -> Vec<&str> {
    each_str(&manifest["tools"], "/name")
}

#[tokio::test]
async fn search_ranks_limits_filters_and_caches() {
    let (router, api) = common::petshop();
    let app = App::new(router.layer(HaloLayer::from_openapi(api)));

    let found = json(&app, "/?q=delete+a+pet", None).await;
    assert_eq!(names(&found)[0], "delete_pet", "{found}");
    assert_eq!(found["api"], "Pet Shop");
    assert_eq!(found["search"]["q"], "delete a pet");
    let total = found["search"]["total"].as_u64().unwrap();
    assert_eq!(total as usize, names(&found).len());
    assert!(total >= 2, "{found}");

    // Parameter names and `why` are searched too.
    let found = json(&app, "/?q=find%20pets%20before%20acting", None).await;
    assert_eq!(names(&found)[0], "list_pets", "{found}");

    // The limit cuts the answer, not the total.
    let one = json(&app, "/?q=pet&limit=1", None).await;
    assert_eq!(names(&one).len(), 1);
    assert!(one["search"]["total"].as_u64().unwrap() > 1);

    // Tags still filter.
    let read = json(&app, "/?q=pet&tags=read", None).await;
    assert!(!names(&read).is_empty());
    for tool in read["tools"].as_array().unwrap() {
        assert!(
            tool["tags"].as_array().unwrap().contains(&json!("read")),
            "{tool}"
        );
    }

    // Nothing in common: an empty answer, never an error.
    let none = json(&app, "/?q=kubernetes", None).await;
    assert_eq!(none["tools"], json!([]));
    assert_eq!(none["search"]["total"], 0);

    // A blank query is the plain manifest.
    let plain = json(&app, "/?q=+", None).await;
    assert!(plain.get("search").is_none());
    assert_eq!(plain, json(&app, "/", None).await);

    // A bad limit is a clear 400 problem.
    for query in ["limit=0", "limit=101", "limit=ten"] {
        let answer = discover(&app, &format!("/?q=pet&{query}"), None).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{query}");
        assert!(answer.detail().contains("1 to 100"), "{}", answer.body);
    }

    // Cached like every discovery answer: an entity tag, and 304 when it still holds.
    let answer = discover(&app, "/?q=pet", None).await;
    let etag = answer.header("etag");
    assert!(answer.header("cache-control").contains("max-age"));
    let again = app
        .discover("/?q=pet")
        .header("if-none-match", etag)
        .send()
        .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    let other = discover(&app, "/?q=category", None).await;
    assert_ne!(other.header("etag"), etag);
}

#[tokio::test]
async fn search_finds_only_what_the_caller_may_call() {
    let (router, api) = common::petshop();
    let layer = HaloLayer::builder(api)
        .authenticator(
            StaticAuthenticator::new()
                .bearer("writer", Principal::new("w").with_scopes(["pets:write"]))
                .bearer("reader", Principal::new("r")),
        )
        .build()
        .unwrap();
    let app = App::new(router.layer(layer));

    let writer = json(&app, "/?q=add+a+pet", Some("writer")).await;
    assert_eq!(names(&writer)[0], "add_pet", "{writer}");
    let reader = json(&app, "/?q=add+a+pet", Some("reader")).await;
    assert!(!names(&reader).contains(&"add_pet"), "{reader}");
    // Not even counted.
    assert_eq!(
        reader["search"]["total"].as_u64().unwrap() as usize,
        names(&reader).len()
    );
    assert!(!reader.to_string().contains("add_pet"));
    let answer = discover(&app, "/?q=add+a+pet", Some("reader")).await;
    assert!(answer.header("cache-control").starts_with("private"));
}

#[tokio::test]
async fn untagged_operations_get_their_resource_as_a_tag() {
    let operation = |id: &str| json!({"operationId": id, "summary": id, "responses": {"200": {"description": "ok"}}});
    let document = json!({
        "openapi": "3.0.3",
        "info": {"title": "Payments", "version": "1"},
        "paths": {
            "/v1/customers": {"get": operation("list_customers")},
            "/v1/customers/{customer}/sources": {
                "parameters": [{"name": "customer", "in": "path", "required": true, "schema": {"type": "string"}}],
                "get": operation("list_sources")
            },
            "/v1/charges": {"post": operation("create_charge")},
            "/v1/tagged": {"get": {"operationId": "tagged", "tags": ["own"], "responses": {"200": {"description": "ok"}}}}
        }
    });
    let layer = HaloBuilder::from_openapi_json(document).build().unwrap();
    let app = App::new(Router::new().layer(layer));

    let manifest = json(&app, "/", None).await;
    let mut tags: Vec<(&str, &Value)> = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| (tool["name"].as_str().unwrap(), &tool["tags"]))
        .collect();
    tags.sort_unstable_by_key(|(name, _)| *name);
    assert_eq!(
        tags,
        [
            ("create_charge", &json!(["charges"])),
            ("list_customers", &json!(["customers"])),
            ("list_sources", &json!(["customers"])),
            ("tagged", &json!(["own"])),
        ]
    );
    let customers = json(&app, "/?tags=customers", None).await;
    assert_eq!(names(&customers), ["list_customers", "list_sources"]);
    let schema = json(&app, "/v1/charges", None).await;
    assert_eq!(schema[0]["tags"], json!(["charges"]));
}
