//! Leaving operations out of HALO: an app documents a fallback (`GET /{path}`) that agents
//! should never be offered. Left out by the builder or by `x-halo-exclude`, it is no tool,
//! discovery does not know it, and the app still answers its requests untouched.

use crate::common;

use axum::Json;
use axum::http::StatusCode;
use halo_axum::{BuildError, HaloBuilder, HaloLayer};
use halo_tests::json::each_str;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use common::served::{discover, serve};

/// Lists the books.
#[utoipa::path(get, path = "/books", responses((status = 200, body = Value)))]
async fn list_books() -> Json<Value> {
    Json(json!([{"id": 1, "title": "Dune"}]))
}

/// Answers every unknown one-segment path: documented as the app's JSON 404, with `{path}`
/// undeclared, as apps in the wild write it.
#[utoipa::path(get, path = "/{path}", responses((status = 404, body = Value)))]
async fn not_found() -> (StatusCode, Json<Value>) {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": "no such page"})),
    )
}

fn app() -> (axum::Router, utoipa::openapi::OpenApi) {
    OpenApiRouter::new()
        .routes(routes!(list_books))
        .routes(routes!(not_found))
        .split_for_parts()
}

/// The fallback is gone from discovery and still the app's own for every other request.
async fn assert_left_out(base: &str) {
    let manifest: Value = discover(base, "/").await.json().await.unwrap();
    let names: Vec<&str> = each_str(&manifest["tools"], "/name");
    assert_eq!(names, ["list_books"]);
    let unknown = discover(base, "/anything").await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        unknown.headers()["content-type"],
        "application/problem+json"
    );
    let books = discover(base, "/books").await;
    assert_eq!(books.status(), StatusCode::OK);
    let page = reqwest::get(format!("{base}/anything")).await.unwrap();
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
    let body: Value = page.json().await.unwrap();
    assert_eq!(body, json!({"error": "no such page"}));
}

#[test]
fn an_undeclared_path_parameter_names_the_way_to_leave_the_operation_out() {
    let (_, api) = app();
    let error = HaloLayer::builder(api).build().unwrap_err();
    assert!(error.is_invalid_parameter(), "{error}");
    let message = error.to_string();
    assert!(message.contains("{path}"), "{message}");
    assert!(message.contains("x-halo-exclude"), "{message}");
    assert!(message.contains("exclude_operation"), "{message}");
}

#[tokio::test]
async fn an_operation_left_out_by_id_is_no_tool_and_the_app_still_serves_it() {
    let (router, api) = app();
    let layer = HaloLayer::builder(api)
        .exclude_operation("not_found")
        .build()
        .unwrap();
    assert_left_out(&serve(router.layer(layer)).await).await;
}

#[tokio::test]
async fn a_path_left_out_takes_its_operations_with_it() {
    let (router, api) = app();
    let layer = HaloLayer::builder(api)
        .exclude_path("/{path}")
        .build()
        .unwrap();
    assert_left_out(&serve(router.layer(layer)).await).await;
}

#[tokio::test]
async fn the_extension_leaves_an_operation_out_of_the_document_itself() {
    let (router, api) = app();
    let mut document = serde_json::to_value(&api).unwrap();
    document["paths"]["/{path}"]["get"]["x-halo-exclude"] = json!(true);
    let layer = HaloBuilder::from_openapi_json(document).build().unwrap();
    assert_left_out(&serve(router.layer(layer)).await).await;
}

#[test]
fn leaving_out_what_the_document_does_not_have_is_an_error() {
    let check = |error: BuildError, named: &str| {
        assert!(error.is_unknown_operation(), "{error}");
        assert!(error.to_string().contains(named), "{error}");
    };
    let (_, api) = app();
    let builder = HaloLayer::builder(api.clone()).exclude_operation("not_found");
    check(
        builder.exclude_operation("no_such_op").build().unwrap_err(),
        "no_such_op",
    );
    let builder = HaloLayer::builder(api).exclude_operation("not_found");
    check(
        builder.exclude_path("/nowhere").build().unwrap_err(),
        "/nowhere",
    );
}

#[test]
fn the_extension_takes_only_a_boolean() {
    let (_, api) = app();
    let mut document = serde_json::to_value(&api).unwrap();
    document["paths"]["/{path}"]["get"]["x-halo-exclude"] = json!(true);
    document["paths"]["/books"]["get"]["x-halo-exclude"] = json!("yes");
    let error = HaloBuilder::from_openapi_json(document)
        .build()
        .unwrap_err();
    assert!(error.is_metadata(), "{error}");
    assert!(error.to_string().contains("x-halo-exclude"), "{error}");
}
