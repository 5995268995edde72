//! A document the user does not own, built leniently: an operation that cannot be served is
//! left out of discovery (its requests still reach the application untouched), one with an
//! obvious repair is served repaired, and the others are served as usual.

use crate::common;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::routing::{get, post};
use halo_axum::{HaloBuilder, Validation};
use halo_tests::json::each_str;
use serde_json::{Value, json};

use common::served::{discover, serve};

/// A vendor's document: `get_book` declares no `{id}`, `create_order`'s body is a reference
/// to nothing, `get_report` declares a path parameter its template does not have.
fn sloppy() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Vendor", "version": "1"},
        "paths": {
            "/books": {"get": {"operationId": "list_books", "summary": "List the books",
                "responses": {"200": {"description": "The books"}}}},
            "/books/{id}": {"get": {"operationId": "get_book", "summary": "Get a book",
                "responses": {"200": {"description": "The book"}}}},
            "/orders": {"post": {"operationId": "create_order", "summary": "Order",
                "requestBody": {"content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Order"}}}},
                "responses": {"201": {"description": "Ordered"}}}},
            "/reports/{year}": {"get": {"operationId": "get_report", "summary": "A report",
                "parameters": [
                    {"name": "year", "in": "path", "required": true,
                     "schema": {"type": "integer"}},
                    {"name": "month", "in": "path", "required": true,
                     "schema": {"type": "integer"}}],
                "responses": {"200": {"description": "The report"}}}}
        }
    })
}

fn app() -> axum::Router {
    axum::Router::new()
        .route("/books", get(|| async { Json(json!([{"id": 1}])) }))
        .route(
            "/books/{id}",
            get(|Path(id): Path<String>| async move { Json(json!({"id": id})) }),
        )
        .route(
            "/orders",
            post(|| async { (StatusCode::CREATED, Json(json!({"ordered": true}))) }),
        )
}

#[test]
fn built_strictly_the_first_bad_operation_fails_the_document() {
    let error = HaloBuilder::from_openapi_json(sloppy())
        .build()
        .unwrap_err();
    assert!(error.is_unresolved_reference(), "{error}");
}

#[tokio::test]
async fn the_operations_that_cannot_be_served_are_left_out_and_the_rest_work() {
    let layer = HaloBuilder::from_openapi_json(sloppy())
        .validate(Validation::On)
        .lenient()
        .build()
        .unwrap();
    let record: Vec<(&str, &str, bool)> = layer
        .skipped()
        .iter()
        .map(|s| (s.method(), s.path(), s.is_repaired()))
        .collect();
    assert_eq!(
        record,
        [
            ("GET", "/books/{id}", true),
            ("POST", "/orders", false),
            ("GET", "/reports/{year}", false)
        ]
    );
    assert!(
        layer.skipped()[1]
            .reason()
            .contains("#/components/schemas/Order")
    );
    let base = serve(app().layer(layer)).await;

    let manifest: Value = discover(&base, "/").await.json().await.unwrap();
    assert_eq!(
        each_str(&manifest["tools"], "/name"),
        ["list_books", "get_book"]
    );
    for left_out in ["/orders", "/reports/2024"] {
        let answer = discover(&base, left_out).await;
        assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{left_out}");
    }

    // The repaired operation describes `id` as the string it is in the path.
    let schemas: Value = discover(&base, "/books/7").await.json().await.unwrap();
    let id = &schemas[0]["input"]["id"];
    assert_eq!(id["in"], "path");
    assert_eq!(id["type"], "string");
    assert_eq!(id["required"], true);

    let book: Value = reqwest::get(format!("{base}/books/7"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(book, json!({"id": "7"}));
    let books = reqwest::get(format!("{base}/books")).await.unwrap();
    assert_eq!(books.status(), StatusCode::OK);

    // What was left out is no tool, and still the application's own.
    let ordered = reqwest::Client::new()
        .post(format!("{base}/orders"))
        .json(&json!({"anything": "goes"}))
        .send()
        .await
        .unwrap();
    assert_eq!(ordered.status(), StatusCode::CREATED);
}
