//! Building a layer from generated OpenAPI documents full of reference cycles (and bare
//! reference loops, nullable and readOnly properties, form bodies, suffix templates): it never
//! panics; when it builds, every path answers discovery with self-contained schemas no larger
//! than linear in the document, the same bytes each time it is built.
#![no_main]

use axum::body::Body;
use halo_axum::{DocumentLimits, HaloBuilder, Validation};
use http::Request;
use libfuzzer_sys::fuzz_target;

#[path = "choices.rs"]
mod choices;
use choices::Choices;
use serde_json::{Map, Value, json};
use tower::ServiceExt as _;

/// A schema of at most `depth` levels, referring to the `count` components by index.
fn schema(choices: &mut Choices<'_>, count: usize, depth: usize) -> Value {
    let reference = |i: usize| json!({"$ref": format!("#/components/schemas/S{i}")});
    let kind = if depth == 0 {
        choices.below(3)
    } else {
        choices.below(11)
    };
    let mut out = match kind {
        0 => reference(choices.below(count)),
        1 => json!({"type": "string", "format": "date-time"}),
        2 => json!({"type": "integer", "minimum": 0}),
        3 | 4 => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for i in 0..choices.below(4) {
                let name = format!("p{i}");
                let mut property = schema(choices, count, depth - 1);
                match choices.below(6) {
                    0 => property["readOnly"] = json!(true),
                    1 => property["writeOnly"] = json!(true),
                    2 => required.push(json!(name)),
                    _ => {}
                }
                properties.insert(name, property);
            }
            json!({"type": "object", "properties": properties, "required": required})
        }
        5 => json!({"type": "array", "items": schema(choices, count, depth - 1)}),
        6 => {
            json!({"anyOf": [schema(choices, count, depth - 1), schema(choices, count, depth - 1)]})
        }
        7 => json!({"allOf": [reference(choices.below(count))], "description": "wrapped"}),
        // Large subschemas written out again and again, the same few each time (one refers
        // to a component, which may hold it: a cycle through a repeat).
        9 | 10 => repeated(choices.below(3), count),
        _ => json!({"oneOf": [reference(choices.below(count)), reference(choices.below(count))],
                    "discriminator": {"propertyName": "kind",
                                      "mapping": {"a": "#/components/schemas/S0"}}}),
    };
    if choices.below(4) == 0 {
        out["nullable"] = json!(true);
    }
    if choices.below(5) == 0 {
        out["example"] = json!({"$ref": "not a reference"});
    }
    out
}

/// One of three subschemas over 256 bytes, for the bundler to find repeated.
fn repeated(which: usize, count: usize) -> Value {
    let words: Vec<String> = (0..30).map(|i| format!("value_{which}_{i}")).collect();
    match which {
        0 => json!({"type": "array", "items": {"type": "string", "enum": words}}),
        1 => json!({"type": "object", "title": "Repeated", "x-vendor": which,
                    "properties": {"list": {"enum": words}, "again": {"enum": words}}}),
        _ => json!({"type": "object", "description": words.join(" "),
                    "properties": {"back": {"$ref": format!("#/components/schemas/S{}", count - 1)}}}),
    }
}

fn document(choices: &mut Choices<'_>) -> Value {
    let count = 1 + choices.below(24);
    let mut schemas = Map::new();
    for i in 0..count {
        schemas.insert(format!("S{i}"), schema(choices, count, 4));
    }
    let templates = [
        "/a",
        "/b/{id}",
        "/c/{id}.json",
        "/d/v{version}/x",
        "/e/{id}#alt",
        "/e/{id}",
    ];
    let mut paths = Map::new();
    for (n, template) in templates.iter().enumerate() {
        if choices.below(3) == 0 {
            continue;
        }
        let mut parameters = Vec::new();
        for variable in template
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(v, _)| v))
        {
            parameters.push(json!({"name": variable, "in": "path", "required": true,
                                   "schema": schema(choices, count, 1)}));
        }
        if choices.below(2) == 0 {
            parameters.push(
                json!({"name": "filter", "in": "query", "style": "deepObject",
                                   "explode": true, "schema": schema(choices, count, 2)}),
            );
        }
        let media = if choices.below(2) == 0 {
            "application/json"
        } else {
            "application/x-www-form-urlencoded"
        };
        let method = if choices.below(2) == 0 { "get" } else { "post" };
        let mut operation = json!({
            "operationId": format!("op{n}"),
            "parameters": parameters,
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": schema(choices, count, 3)}}}}
        });
        if method == "post" {
            operation["requestBody"] =
                json!({"content": {media: {"schema": schema(choices, count, 3)}}});
        }
        paths.insert((*template).to_owned(), json!({method: operation}));
    }
    json!({
        "openapi": if choices.below(2) == 0 { "3.0.3" } else { "3.1.0" },
        "info": {"title": "Generated", "version": "1"},
        "paths": paths,
        "components": {"schemas": schemas}
    })
}

/// Every `$ref` in a served schema: each must point into an enclosing `$defs`, and each
/// entry and the output stand alone with the definitions the tool shares.
fn check_tool(tool: &Value) {
    assert!(halo_protocol::is_self_contained(tool), "{tool}");
    let empty = serde_json::Map::new();
    let shared = tool["$defs"].as_object().unwrap_or(&empty);
    let entries = tool["input"].as_object().into_iter().flatten().map(|(_, e)| e);
    for schema in entries.chain(tool.get("output")) {
        if let Value::Object(schema) = schema {
            let alone = Value::Object(halo_protocol::standalone(schema, shared));
            assert!(halo_protocol::is_self_contained(&alone), "{alone}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut choices = Choices(data);
    let document = document(&mut choices);
    let size = serde_json::to_vec(&document).unwrap().len();
    let validate = if choices.below(2) == 0 {
        Validation::On
    } else {
        Validation::Off
    };
    let build = || {
        HaloBuilder::from_openapi_json(document.clone())
            .validate(validate)
            .document_limits(DocumentLimits::new().max_depth(64))
            .build()
    };
    let Ok(layer) = build() else {
        return;
    };
    let again = build().expect("builds the same way twice");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let app = axum::Router::new().layer(layer);
    let twin = axum::Router::new().layer(again);
    let concrete = ["/a", "/b/1", "/c/1.json", "/d/v2/x", "/e/1"];
    for path in concrete {
        let discover = || {
            Request::options(path)
                .header("accept", "application/llm+json")
                .body(Body::empty())
                .unwrap()
        };
        let (response, twin) = runtime.block_on(async {
            let response = app.clone().oneshot(discover()).await.unwrap();
            let twin = twin.clone().oneshot(discover()).await.unwrap();
            (response, twin)
        });
        if response.status() == 404 {
            continue;
        }
        assert_eq!(response.status(), 200, "{path}");
        let read = |response: http::Response<Body>| {
            runtime.block_on(async {
                axum::body::to_bytes(response.into_body(), usize::MAX)
                    .await
                    .unwrap()
            })
        };
        let bytes = read(response);
        assert_eq!(bytes, read(twin), "{path}: not the same bytes twice");
        let tools: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
        for tool in &tools {
            check_tool(tool);
            // Each definition once per schema: a schema is at most about the document,
            // once per input entry and once for the output.
            let schemas = tool["input"].as_object().map_or(0, Map::len) + 1;
            let served = serde_json::to_vec(tool).unwrap().len();
            assert!(
                served <= 3 * schemas * size + 4096,
                "{path}: {served} bytes served from a {size}-byte document"
            );
        }
    }
});
