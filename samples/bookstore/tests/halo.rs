//! The bookstore as HALO describes it: the manifest, per-path schemas, the sample's promise
//! that every HALO field is used somewhere, and the Chinese texts. Discovery shows each caller
//! only what it may call (see `access.rs`), so these tests discover as the admin, who sees
//! everything.

use crate::support;

use std::collections::BTreeSet;

use halo_tests::json::{each_str, strings};
use reqwest::StatusCode;
use reqwest::header::CONTENT_TYPE;
use serde_json::Value;
use support::{Caller, Server, send};

const TOOLS: &[(&str, &str, &str)] = &[
    ("GET", "/api/books", "search_books"),
    ("POST", "/api/books", "create_book"),
    ("GET", "/api/books/search", "legacy_search_books"),
    ("GET", "/api/books/{id}", "get_book"),
    ("PUT", "/api/books/{id}", "update_book"),
    ("DELETE", "/api/books/{id}", "delete_book"),
    ("POST", "/api/books/{id}/summarize", "summarize_book"),
    ("GET", "/api/inventory/{sku}", "get_stock"),
    ("POST", "/api/inventory/{sku}/reserve", "reserve_stock"),
    ("POST", "/api/inventory/{sku}/release", "release_stock"),
    ("POST", "/api/orders", "create_order"),
    ("GET", "/api/orders/{id}", "get_order"),
    ("POST", "/api/payments/charge", "charge_payment"),
    ("POST", "/api/payments/{id}/refund", "refund_payment"),
    ("GET", "/api/weather", "get_weather"),
];

async fn manifest(server: &Server, query: &str) -> Value {
    let (status, headers, manifest) =
        send(server.discover_as(Caller::Admin, &format!("/{query}"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[CONTENT_TYPE], "application/llm+json");
    manifest
}

/// Every schema of every described path, fetched with `OPTIONS`.
async fn all_schemas(server: &Server) -> Vec<Value> {
    let urls: BTreeSet<&str> = TOOLS.iter().map(|(_, url, _)| *url).collect();
    let mut schemas = Vec::new();
    for url in urls {
        let (status, _, array) = send(server.discover_as(Caller::Admin, url)).await;
        assert_eq!(status, StatusCode::OK, "OPTIONS {url}: {array}");
        schemas.extend(
            array
                .as_array()
                .unwrap_or_else(|| panic!("OPTIONS {url} is not an array"))
                .iter()
                .cloned(),
        );
    }
    schemas
}

#[tokio::test]
async fn the_manifest_lists_every_operation() {
    let server = Server::start().await;
    let manifest = manifest(&server, "").await;
    assert_eq!(manifest["api"], "Bookstore");
    assert_eq!(manifest["version"], "1.2.0");
    let tools = manifest["tools"].as_array().unwrap();
    let listed: BTreeSet<(&str, &str, &str)> = tools
        .iter()
        .map(|t| {
            (
                t["method"].as_str().unwrap(),
                t["url"].as_str().unwrap(),
                t["name"].as_str().unwrap(),
            )
        })
        .collect();
    let expected: BTreeSet<(&str, &str, &str)> = TOOLS.iter().copied().collect();
    assert_eq!(listed, expected);
    for tool in tools {
        let tags = strings(&tool["tags"]);
        assert!(
            tags.contains(&"read") ^ tags.contains(&"write"),
            "{tool}: exactly one of read/write"
        );
        assert!(tags.len() >= 2, "{tool}: a domain tag too");
        assert!(!tool["description"].as_str().unwrap().is_empty());
    }
}

#[tokio::test]
async fn tags_filter_the_manifest() {
    let server = Server::start().await;
    let names = |manifest: &Value| -> Vec<String> {
        let listed = each_str(&manifest["tools"], "/name");
        listed.into_iter().map(str::to_owned).collect()
    };
    assert_eq!(
        names(&manifest(&server, "?tags=payments").await),
        ["charge_payment", "refund_payment"]
    );
    assert_eq!(
        names(&manifest(&server, "?tags=admin").await),
        ["refund_payment"]
    );
    assert_eq!(
        names(&manifest(&server, "?tags=weather,inventory").await).len(),
        4
    );
    assert!(names(&manifest(&server, "?tags=nope").await).is_empty());
}

#[tokio::test]
async fn every_halo_field_is_used_somewhere() {
    let server = Server::start().await;
    let schemas = all_schemas(&server).await;
    assert_eq!(schemas.len(), TOOLS.len());
    let used = |pointer: &str| {
        schemas
            .iter()
            .any(|s| s.pointer(pointer).is_some_and(|v| !v.is_null()))
    };
    for pointer in [
        "/why",
        "/auth/scopes",
        "/auth/header",
        "/effects/reversible",
        "/effects/undo",
        "/limits/rate",
        "/limits/idempotent",
        "/limits/idempotency_key",
        "/next/0/when",
        "/next/0/suggest",
        "/examples/0/input",
        "/examples/0/output",
        "/resilience/retry",
        "/resilience/backoff",
        "/resilience/timeout_ms",
        "/resilience/fallback",
        "/resilience/circuit/failures",
        "/trust/signed",
        "/trust/jwks",
        "/observe/trace_header",
        "/observe/explain",
        "/status",
        "/sunset",
        "/replace_with",
        "/stream/events",
    ] {
        assert!(used(pointer), "no schema has {pointer}");
    }
}

#[tokio::test]
async fn write_tools_have_examples_and_reversible_ones_say_how_to_undo() {
    let server = Server::start().await;
    for schema in all_schemas(&server).await {
        let tags = schema["tags"].as_array().unwrap();
        if tags.iter().any(|t| t == "write") {
            assert!(
                schema["examples"].as_array().is_some_and(|e| !e.is_empty()),
                "{}: no example",
                schema["call"]
            );
            for example in schema["examples"].as_array().unwrap() {
                assert!(example["input"].is_object(), "example inputs are objects");
                assert!(
                    example["output"].is_null() || example["output"].is_object(),
                    "example outputs are objects"
                );
            }
        }
        if schema.pointer("/effects/reversible") == Some(&Value::Bool(true)) {
            assert!(
                schema.pointer("/effects/undo").is_some(),
                "{}: reversible without undo",
                schema["call"]
            );
        }
        assert!(schema["why"].as_str().is_some_and(|w| !w.is_empty()));
    }
}

#[tokio::test]
async fn schemas_describe_auth_and_input_locations() {
    let server = Server::start().await;
    let discover = |path: &str| send(server.discover_as(Caller::Admin, path));
    let (_, _, charge) = discover("/api/payments/charge").await;
    assert_eq!(charge[0]["auth"]["type"], "bearer");
    assert_eq!(charge[0]["auth"]["scopes"][0], "payments:write");
    assert_eq!(charge[0]["limits"]["rate"], "5/minute");
    assert_eq!(charge[0]["effects"]["undo"], "/api/payments/{id}/refund");

    let (_, _, stock) = discover("/api/inventory/9780441172719").await;
    assert_eq!(stock[0]["auth"]["type"], "apikey");
    assert_eq!(stock[0]["auth"]["header"], "X-API-Key");
    assert!(
        stock[0]["auth"].get("scopes").is_none(),
        "the key needs no scope"
    );
    assert_eq!(stock[0]["input"]["sku"]["in"], "path");

    let (_, _, weather) = discover("/api/weather").await;
    assert_eq!(weather[0]["input"]["city"]["in"], "query");
    assert_eq!(weather[0]["input"]["city"]["required"], true);
    assert!(
        weather[0]
            .get("auth")
            .is_none_or(|auth| auth["type"] == "none")
    );

    let (_, _, orders) = discover("/api/orders").await;
    assert_eq!(orders[0]["input"]["Idempotency-Key"]["in"], "header");
    assert_eq!(orders[0]["next"][0]["suggest"], "/api/payments/charge");
}

#[tokio::test]
async fn localised_texts_are_declared() {
    let doc = serde_json::to_value(bookstore::openapi()).unwrap();
    let localised: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .filter(|op| op.pointer("/x-halo-i18n/zh").is_some())
        .filter_map(|op| op["operationId"].as_str())
        .collect();
    assert_eq!(
        localised,
        [
            "search_books",
            "get_book",
            "create_order",
            "charge_payment",
            "get_weather"
        ]
    );
}

#[tokio::test]
async fn plain_options_and_unknown_paths() {
    let server = Server::start().await;
    let (status, _, _) = send(server.discover("/api/nowhere")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Without the HALO media type, OPTIONS is not a discovery request.
    let response = server
        .request(reqwest::Method::OPTIONS, "/api/weather")
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    assert_ne!(
        response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
        Some("application/llm+json")
    );
}

/// The five operations with Chinese texts: (name, title, description).
const ZH: &[(&str, &str, &str)] = &[
    (
        "search_books",
        "搜索图书",
        "按书名、作者、ISBN 或价格搜索图书目录。",
    ),
    ("get_book", "获取图书", "按 id 返回一本图书的详细信息。"),
    (
        "create_order",
        "创建订单",
        "按当前价格为所选图书创建一个待付款订单。",
    ),
    (
        "charge_payment",
        "支付订单",
        "从顾客保存的支付方式中扣取订单总额，并将订单标记为已付款。",
    ),
    ("get_weather", "查询天气", "查询取书城市的当前天气。"),
];

#[tokio::test]
async fn discovery_speaks_chinese_when_asked() {
    let server = Server::start().await;
    let response = server
        .discover_as(Caller::Admin, "/")
        .header("accept-language", "zh-CN, en;q=0.5")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-language"], "zh");
    let manifest: Value = response.json().await.unwrap();
    let tools = manifest["tools"].as_array().unwrap();
    assert_eq!(tools.len(), TOOLS.len());
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        assert!(
            TOOLS.iter().any(|(_, _, known)| *known == name),
            "names stay identifiers: {name}"
        );
        match ZH.iter().find(|(zh_name, ..)| *zh_name == name) {
            Some((_, title, description)) => {
                assert_eq!(tool["title"], *title, "{tool}");
                assert_eq!(tool["description"], *description, "{tool}");
            }
            None => {
                assert!(tool.get("title").is_none(), "{tool}");
                assert!(tool["description"].as_str().unwrap().is_ascii(), "{tool}");
            }
        }
    }

    // Each localised schema, as a caller who may see it.
    for (name, title, description) in ZH {
        let (_, url, _) = TOOLS.iter().find(|(_, _, tool)| tool == name).unwrap();
        let response = server
            .discover_as(Caller::Admin, url)
            .header("accept-language", "zh")
            .send()
            .await
            .unwrap();
        assert_eq!(response.headers()["content-language"], "zh", "{url}");
        let schemas: Value = response.json().await.unwrap();
        let schema = schemas
            .as_array()
            .unwrap()
            .iter()
            .find(|schema| schema["title"] == *title)
            .unwrap_or_else(|| panic!("{url}: no schema titled {title}: {schemas}"));
        assert_eq!(schema["description"], *description);
    }
    let (_, _, search) = send(
        server
            .discover("/api/books")
            .header("accept-language", "zh"),
    )
    .await;
    assert_eq!(
        search[0]["why"],
        "先用它查找图书及其 id，其他图书、库存和订单工具都需要这个 id 或 ISBN"
    );

    // A language the bookstore does not speak gets the English texts.
    let response = server
        .discover("/api/weather")
        .header("accept-language", "fr")
        .send()
        .await
        .unwrap();
    assert!(!response.headers().contains_key("content-language"));
    let schemas: Value = response.json().await.unwrap();
    assert!(schemas[0].get("title").is_none());
    assert!(
        schemas[0]["description"]
            .as_str()
            .unwrap()
            .starts_with("Get the current weather")
    );
}
