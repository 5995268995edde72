//! Real OpenAPI documents nobody here wrote (GitHub's, Stripe's): each builds, and every
//! described path answers discovery (the app called in process) with self-contained schemas.

use crate::common;

use axum::Router;
use axum::http::StatusCode;
use common::client::App;
use halo_axum::{DocumentLimits, HaloBuilder};
use halo_tests::corpus::Document;
use serde_json::{Map, Value, json};

/// A concrete path for a template: `/repos/{owner}/{repo}` → `/repos/owner-1/repo-1`.
fn concrete(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c);
        out.push_str(&rest[open + 1..close]);
        out.push_str("-1");
        rest = rest.get(close + 1..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

/// Every JSON Schema a served tool schema holds: its input entries and its output.
/// Each input entry and the output of a served tool, standing alone: with the definitions
/// it reaches of those the tool's schemas share.
fn schemas(tool: &Value) -> Vec<Value> {
    let empty = Map::new();
    let shared = tool["$defs"].as_object().unwrap_or(&empty);
    let input = tool["input"].as_object().into_iter().flatten();
    input
        .map(|(_, entry)| entry)
        .chain(tool.get("output"))
        .map(|schema| match schema {
            Value::Object(schema) => Value::Object(halo_protocol::standalone(schema, shared)),
            other => other.clone(),
        })
        .collect()
}

/// The manifest or schemas at `path`, answered `200`.
async fn discover(app: &App, path: &str) -> Value {
    let answer = app.discover(path).send().await;
    assert_eq!(answer.status, StatusCode::OK, "{path}: {}", answer.body);
    answer.json()
}

async fn serves_every_path(document: Document) {
    let json = document.json();
    let layer = HaloBuilder::from_openapi_json(json.clone())
        .build()
        .unwrap_or_else(|e| panic!("{}: {e}", document.name()));
    let app = App::new(Router::new().layer(layer));

    let manifest = discover(&app, "/").await;
    let operations: usize = json["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| {
            ["get", "put", "post", "delete", "patch", "head", "trace"]
                .iter()
                .filter(|m| item.get(**m).is_some())
                .count()
        })
        .sum();
    assert_eq!(
        manifest["tools"].as_array().unwrap().len(),
        operations,
        "{}: every operation is a tool",
        document.name()
    );

    // `OPTIONS /` is the manifest, which lists the operations at `/` (GitHub has one).
    let mut tools = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|tool| tool["url"] == "/")
        .count();
    for template in json["paths"].as_object().unwrap().keys() {
        if template == "/" {
            continue;
        }
        let answer = app.discover(&concrete(template)).send().await;
        assert_eq!(answer.status, StatusCode::OK, "{template}");
        assert!(
            !answer.body.contains("#/components/"),
            "{template}: a reference into the document was served"
        );
        let served = answer.json();
        for tool in served.as_array().unwrap() {
            assert_eq!(tool["call"]["url"], json!(template));
            assert!(
                halo_protocol::is_self_contained(tool),
                "{template}: a dangling $ref in {tool}"
            );
            for schema in schemas(tool) {
                assert!(
                    halo_protocol::is_self_contained(&schema),
                    "{template}: a dangling $ref in {schema}"
                );
            }
            tools += 1;
        }
    }
    assert_eq!(tools, operations);
}

#[tokio::test]
async fn github_serves_every_path() {
    serves_every_path(Document::GitHub).await;
}

#[tokio::test]
async fn stripe_serves_every_path() {
    serves_every_path(Document::Stripe).await;
}

/// Stripe's `charge` reaches most of its reference cycle: each definition is served once in
/// a schema, however many paths lead to it.
#[tokio::test]
async fn a_definition_appears_once_per_schema() {
    let layer = HaloBuilder::from_openapi_json(Document::Stripe.json())
        .build()
        .unwrap();
    let served = discover(&App::new(Router::new().layer(layer)), "/v1/charges/ch_1").await;
    let get = served
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["call"]["method"] == "GET")
        .unwrap();
    let mut output = get["output"].as_object().unwrap().clone();
    let Some(Value::Object(defs)) = output.remove("$defs") else {
        panic!("no $defs")
    };
    let text = serde_json::to_string(&defs).unwrap();
    assert!(defs.len() > 50, "the cycle is in $defs: {}", defs.len());
    assert!(defs.contains_key("charge") && defs.contains_key("customer"));
    // Each definition's text once under `$defs` (none copied into another); the output
    // refers to `charge`, which is part of the cycle, rather than copy it.
    for (name, body) in &defs {
        let body = serde_json::to_string(body).unwrap();
        assert_eq!(text.matches(&body).count(), 1, "{name}");
    }
    assert_eq!(Value::Object(output), json!({"$ref": "#/$defs/charge"}));
}

/// A document built to explode: each schema refers to the one before it twice, and the last
/// back to the first. Expanded along paths it would be 2^n copies; bundled, each schema is
/// written once and the served size grows linearly with n.
fn explosive(n: usize) -> Value {
    let mut schemas = serde_json::Map::new();
    for i in 0..n {
        let prev = if i == 0 { n - 1 } else { i - 1 };
        schemas.insert(
            format!("S{i}"),
            json!({"type": "object", "description": format!("schema number {i}"), "properties": {
                "left": {"$ref": format!("#/components/schemas/S{prev}")},
                "right": {"$ref": format!("#/components/schemas/S{prev}")},
            }}),
        );
    }
    json!({
        "openapi": "3.0.3", "info": {"title": "Explosive", "version": "1"},
        "paths": {"/s": {"get": {"operationId": "get_s", "responses": {"200": {
            "description": "ok",
            "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/S{}", n - 1)}}}
        }}}}},
        "components": {"schemas": schemas}
    })
}

async fn served_size(document: Value) -> usize {
    let layer = HaloBuilder::from_openapi_json(document).build().unwrap();
    let served = discover(&App::new(Router::new().layer(layer)), "/s").await;
    assert!(halo_protocol::is_self_contained(&served[0]["output"]));
    // As served: minified, in the same order.
    serde_json::to_vec(&served).unwrap().len()
}

#[tokio::test]
async fn cyclic_documents_grow_linearly() {
    let sizes = [
        served_size(explosive(10)).await,
        served_size(explosive(100)).await,
        served_size(explosive(1000)).await,
    ];
    // Each step has ten times the schemas; the served schema grows about tenfold (a
    // schema's bytes are the same at every size but for the digits of its number).
    for pair in sizes.windows(2) {
        let ratio = pair[1] as f64 / pair[0] as f64;
        assert!((8.0..13.0).contains(&ratio), "{sizes:?}");
    }
}

#[test]
fn absurd_depth_is_a_build_error_naming_the_pointer_and_the_limit() {
    let mut schema = json!({"type": "string"});
    for _ in 0..200 {
        schema = json!({"type": "object", "properties": {"deeper": schema}});
    }
    let document = json!({
        "openapi": "3.1.0", "info": {"title": "Deep", "version": "1"},
        "paths": {"/deep": {"get": {"operationId": "deep", "responses": {"200": {
            "description": "ok",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Deep"}}}
        }}}}},
        "components": {"schemas": {"Deep": schema}}
    });
    let error = HaloBuilder::from_openapi_json(document.clone())
        .build()
        .unwrap_err();
    assert!(error.is_limit(), "{error}");
    let message = error.to_string();
    assert!(message.contains("GET /deep (deep)"), "{message}");
    assert!(
        message.contains("#/components/schemas/Deep/properties/deeper/properties/deeper"),
        "{message}"
    );
    assert!(message.contains("DocumentLimits::max_depth"), "{message}");
    // A higher limit takes it.
    HaloBuilder::from_openapi_json(document)
        .document_limits(DocumentLimits::new().max_depth(512))
        .build()
        .unwrap();
}

#[test]
fn served_size_and_definition_limits_are_build_errors() {
    let error = HaloBuilder::from_openapi_json(explosive(50))
        .document_limits(DocumentLimits::new().max_schema_bytes(1000))
        .build()
        .unwrap_err();
    assert!(error.is_limit(), "{error}");
    assert!(error.to_string().contains("max_schema_bytes"), "{error}");
    let error = HaloBuilder::from_openapi_json(explosive(50))
        .document_limits(DocumentLimits::new().max_defs(10))
        .build()
        .unwrap_err();
    assert!(error.is_limit(), "{error}");
    assert!(error.to_string().contains("max_defs"), "{error}");
}

#[test]
fn references_that_lead_only_to_references_are_a_build_error() {
    let document = json!({
        "openapi": "3.0.3", "info": {"title": "Loop", "version": "1"},
        "paths": {"/l": {"get": {"operationId": "l", "responses": {"200": {
            "description": "ok",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/A"}}}
        }}}}},
        "components": {"schemas": {
            "A": {"$ref": "#/components/schemas/B"},
            "B": {"$ref": "#/components/schemas/A"}
        }}
    });
    let error = HaloBuilder::from_openapi_json(document)
        .build()
        .unwrap_err();
    assert!(
        error.to_string().contains("leads only to references"),
        "{error}"
    );
}

#[test]
fn a_swagger_2_document_is_refused_with_a_clear_error() {
    let document = json!({
        "swagger": "2.0", "info": {"title": "Old", "version": "1"},
        "paths": {"/pets": {"post": {"parameters": [{"in": "body", "name": "pet",
            "schema": {"$ref": "#/definitions/Pet"}}], "responses": {"200": {"description": ""}}}}},
        "definitions": {"Pet": {"type": "object"}}
    });
    let error = HaloBuilder::from_openapi_json(document)
        .build()
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("Swagger \"2.0\""), "{message}");
    assert!(message.contains("OpenAPI 3.0 and 3.1"), "{message}");
}
