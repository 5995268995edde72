//! Who may see and call what: the HALO layer enforces the demo credentials. Discovery shows
//! each caller only the tools it may call, and a refused or invalid call never reaches its
//! handler (the store is unchanged afterwards).

use crate::support;

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::{Caller, Server, expect_problem, expect_unauthorized, pointers, send};

const PUBLIC: &[&str] = &[
    "get_book",
    "get_weather",
    "legacy_search_books",
    "search_books",
];

/// Every `operationId` of the OpenAPI document.
fn every_operation() -> BTreeSet<String> {
    let doc = serde_json::to_value(bookstore::openapi()).unwrap();
    doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .filter_map(|operation| operation["operationId"].as_str())
        .map(str::to_owned)
        .collect()
}

fn sorted(names: &[&str], more: &[&str]) -> Vec<String> {
    let all: BTreeSet<String> = names.iter().chain(more).map(|&n| n.to_owned()).collect();
    all.into_iter().collect()
}

#[tokio::test]
async fn each_caller_discovers_only_what_it_may_call() {
    let server = Server::start().await;

    assert_eq!(
        server.tool_names(Caller::Anonymous).await,
        sorted(PUBLIC, &[])
    );
    assert_eq!(
        server.tool_names(Caller::Reader).await,
        sorted(PUBLIC, &["get_order", "summarize_book"])
    );
    assert_eq!(
        server.tool_names(Caller::Key).await,
        sorted(PUBLIC, &["get_stock", "release_stock", "reserve_stock"])
    );
    let admin = server.tool_names(Caller::Admin).await;
    assert_eq!(admin.len(), 15);
    assert_eq!(
        admin.into_iter().collect::<BTreeSet<_>>(),
        every_operation(),
        "the admin sees every operation"
    );

    // The reader's manifest has no write or admin tool at all.
    let (_, _, manifest) = send(server.discover_as(Caller::Reader, "/")).await;
    for tool in manifest["tools"].as_array().unwrap() {
        let tags = tool["tags"].as_array().unwrap();
        assert!(
            !tags.iter().any(|tag| tag == "write" || tag == "admin"),
            "the reader sees {tool}"
        );
    }
    // Tag filters apply within what the caller may see.
    let (_, _, payments) = send(server.discover_as(Caller::Reader, "/?tags=payments")).await;
    assert_eq!(payments["tools"], json!([]));
}

#[tokio::test]
async fn a_path_shows_only_the_methods_the_caller_may_call() {
    let server = Server::start().await;

    // Every operation of the path hidden: 404, as for a path that does not exist.
    for (caller, path) in [
        (Caller::Reader, "/api/payments/charge"),
        (Caller::Reader, "/api/orders"),
        (Caller::Reader, "/api/payments/ch_1/refund"),
        (Caller::Reader, "/api/inventory/9780441172719/reserve"),
        (Caller::Key, "/api/orders"),
        (Caller::Anonymous, "/api/books/1/summarize"),
        (Caller::Anonymous, "/api/orders/1001"),
    ] {
        let (status, _, body) = send(server.discover_as(caller, path)).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{caller:?} OPTIONS {path}: {body}"
        );
    }

    // Some hidden: only the others are described.
    let methods = |schemas: &Value| -> Vec<String> {
        schemas
            .as_array()
            .unwrap()
            .iter()
            .map(|schema| schema["call"]["method"].as_str().unwrap().to_owned())
            .collect()
    };
    let (status, _, books) = send(server.discover_as(Caller::Reader, "/api/books")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(methods(&books), ["GET"]);
    let (_, _, book) = send(server.discover_as(Caller::Reader, "/api/books/1")).await;
    assert_eq!(methods(&book), ["GET"]);
    let (_, _, book) = send(server.discover_as(Caller::Admin, "/api/books/1")).await;
    assert_eq!(methods(&book).len(), 3);

    let (status, _, _) =
        send(server.discover_as(Caller::Key, "/api/inventory/9780441172719/reserve")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = send(server.discover_as(Caller::Admin, "/api/payments/ch_1/refund")).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn bad_credentials_are_refused_never_treated_as_anonymous() {
    let server = Server::start().await;
    for request in [
        server.discover("/").bearer_auth("stolen-token"),
        server.discover("/").basic_auth("user", Some("pw")),
        server.discover("/").header("X-API-Key", "wrong"),
    ] {
        let challenge = expect_unauthorized(request).await;
        assert!(challenge.contains("Bearer"), "{challenge}");
        assert!(challenge.contains("X-API-Key"), "{challenge}");
    }
    let (headers, problem) =
        expect_problem(server.discover("/").bearer_auth("stolen-token"), 401).await;
    assert!(headers.contains_key("www-authenticate"));
    assert!(!problem.to_string().contains("stolen-token"), "{problem}");
}

#[tokio::test]
async fn refused_and_invalid_calls_never_reach_a_handler() {
    let server = Server::start().await;
    let book = json!({
        "title": "The Dispossessed", "author": "Ursula K. Le Guin", "isbn": "9780061054884",
        "price": 9.99, "published_year": 1974, "pages": 387
    });
    let create = |caller: Caller| caller.sign(server.post("/api/books"));

    // Creating a book: no credentials, read-only credentials, the inventory key, a blank
    // title (the schema says "not blank"; only the handler trimmed before).
    expect_unauthorized(create(Caller::Anonymous).json(&book)).await;
    expect_problem(create(Caller::Reader).json(&book), 403).await;
    expect_problem(create(Caller::Key).json(&book), 403).await;
    let mut blank = book.clone();
    blank["title"] = json!("   ");
    let (_, problem) = expect_problem(create(Caller::Admin).json(&blank), 422).await;
    assert_eq!(pointers(&problem), ["/title"]);
    let (_, _, found) = send(server.get("/api/books?q=dispossessed")).await;
    assert_eq!(found["total"], 0, "no book was created");

    // Deleting and replacing a book without the scope.
    expect_problem(
        Caller::Reader.sign(server.request(Method::DELETE, "/api/books/1")),
        403,
    )
    .await;
    let mut repriced = book.clone();
    repriced["isbn"] = json!("9780441172719");
    repriced["price"] = json!(1.0);
    expect_problem(
        Caller::Reader
            .sign(server.request(Method::PUT, "/api/books/1"))
            .json(&repriced),
        403,
    )
    .await;
    let (status, _, dune) = send(server.get("/api/books/1")).await;
    assert_eq!(status, StatusCode::OK, "book 1 is still there");
    assert_eq!(dune["price"], 10.99, "and still costs what it did");

    // Holding stock: a bearer token is not the inventory key; quantities out of range.
    let reserve = "/api/inventory/9780441172719/reserve";
    let hold = json!({"quantity": 2});
    expect_unauthorized(server.post(reserve).json(&hold)).await;
    expect_problem(Caller::Reader.sign(server.post(reserve)).json(&hold), 403).await;
    for quantity in [0, 51] {
        let (_, problem) = expect_problem(
            Caller::Key
                .sign(server.post(reserve))
                .json(&json!({"quantity": quantity})),
            422,
        )
        .await;
        assert_eq!(pointers(&problem), ["/quantity"]);
    }
    let (_, _, stock) = send(Caller::Key.sign(server.get("/api/inventory/9780441172719"))).await;
    assert_eq!(stock["reserved"], 0, "nothing was held: {stock}");

    // Paying: read-only credentials, a currency the schema does not allow.
    let (status, _, order) = send(Caller::Admin.sign(server.post("/api/orders")).json(
        &json!({"customer_email": "ada@example.com", "items": [{"book_id": 1, "quantity": 1}]}),
    ))
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let order_id = order["id"].as_u64().unwrap();
    let charge = |currency: &str| {
        json!({"order_id": order_id, "amount": order["total"], "currency": currency,
               "payment_method": "pm_card_visa"})
    };
    expect_problem(
        Caller::Reader
            .sign(server.post("/api/payments/charge"))
            .json(&charge("EUR")),
        403,
    )
    .await;
    let (_, problem) = expect_problem(
        Caller::Admin
            .sign(server.post("/api/payments/charge"))
            .json(&charge("USD")),
        422,
    )
    .await;
    assert_eq!(pointers(&problem), ["/currency"]);
    let (_, _, unpaid) =
        send(Caller::Reader.sign(server.get(&format!("/api/orders/{order_id}")))).await;
    assert_eq!(unpaid["status"], "pending_payment", "no charge was taken");

    // After all that, the first charge is still the store's first.
    let (status, _, paid) = send(
        Caller::Admin
            .sign(server.post("/api/payments/charge"))
            .json(&charge("EUR")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{paid}");
    assert_eq!(paid["id"], "ch_1");
}
