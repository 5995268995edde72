//! The catalogue over real HTTP: search, create, read, replace, delete, summarise, and the errors.

mod support;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, LOCATION, WWW_AUTHENTICATE};
use serde_json::{Value, json};
use support::{ADMIN, READER, Server, expect_problem, pointers, send};

fn dispossessed() -> Value {
    json!({
        "title": "The Dispossessed", "author": "Ursula K. Le Guin", "isbn": "9780061054884",
        "price": 9.99, "published_year": 1974, "pages": 387
    })
}

fn titles(page: &Value) -> Vec<&str> {
    page["items"]
        .as_array()
        .expect("items is an array")
        .iter()
        .map(|b| b["title"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn search_returns_an_object_with_items_and_total() {
    let server = Server::start().await;

    let (status, _, page) = send(server.get("/api/books?q=dune")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.is_object());
    assert_eq!(titles(&page), ["Dune"]);
    assert_eq!(page["total"], 1);
    assert_eq!(page["items"][0]["isbn"], "9780441172719");

    let (_, _, page) = send(server.get("/api/books?author=le%20guin")).await;
    assert_eq!(
        titles(&page),
        ["The Left Hand of Darkness", "A Wizard of Earthsea"]
    );

    let (_, _, page) = send(server.get("/api/books?max_price=9.5")).await;
    assert!(
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["price"].as_f64().unwrap() <= 9.5)
    );
    assert_eq!(page["total"], 3);

    let (_, _, all) = send(server.get("/api/books")).await;
    let (_, _, page) = send(server.get("/api/books?limit=2&offset=1")).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert_eq!(page["items"][0], all["items"][1]);
    assert_eq!(page["total"], all["total"]);
    assert_eq!(
        (page["limit"].as_u64(), page["offset"].as_u64()),
        (Some(2), Some(1))
    );

    let (_, _, page) = send(server.get("/api/books?q=no+such+words")).await;
    assert_eq!(
        page,
        json!({"items": [], "total": 0, "limit": 20, "offset": 0})
    );
}

#[tokio::test]
async fn search_rejects_bad_parameters_with_problems() {
    let server = Server::start().await;
    let (_, problem) = expect_problem(server.get("/api/books?limit=0&max_price=-1"), 422).await;
    assert_eq!(pointers(&problem), ["/limit", "/max_price"]);
    expect_problem(server.get("/api/books?limit=lots"), 400).await;
    expect_problem(server.get("/api/books?limit=101"), 422).await;
}

#[tokio::test]
async fn deprecated_title_search_still_answers() {
    let server = Server::start().await;
    let (status, _, page) = send(server.get("/api/books/search?title=NAME")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(titles(&page), ["The Name of the Rose"]);
}

#[tokio::test]
async fn creating_a_book_needs_a_token_with_books_write() {
    let server = Server::start().await;

    let (headers, problem) =
        expect_problem(server.post("/api/books").json(&dispossessed()), 401).await;
    assert!(
        headers[WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    assert_eq!(problem["title"], "Unauthorized");

    let (headers, _) = expect_problem(
        server
            .post("/api/books")
            .bearer_auth("not-a-token")
            .json(&dispossessed()),
        401,
    )
    .await;
    assert!(
        headers[WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );

    let (_, _) = expect_problem(
        server
            .post("/api/books")
            .basic_auth("user", Some("pw"))
            .json(&dispossessed()),
        401,
    )
    .await;

    let (headers, problem) = expect_problem(
        server
            .post("/api/books")
            .bearer_auth(READER)
            .json(&dispossessed()),
        403,
    )
    .await;
    assert!(
        headers[WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .contains("insufficient_scope")
    );
    assert!(problem["detail"].as_str().unwrap().contains("books:write"));

    let (status, headers, book) = send(
        server
            .post("/api/books")
            .bearer_auth(ADMIN)
            .json(&dispossessed()),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let id = book["id"].as_u64().expect("id");
    assert_eq!(headers[LOCATION], format!("/api/books/{id}").as_str());
    assert_eq!(book["currency"], "EUR");

    let (status, _, fetched) = send(server.get(&format!("/api/books/{id}"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(fetched, book);

    // The same ISBN twice is a conflict.
    expect_problem(
        server
            .post("/api/books")
            .bearer_auth(ADMIN)
            .json(&dispossessed()),
        409,
    )
    .await;

    // A new book has a stock record with nothing on hand.
    let (status, _, stock) = send(
        server
            .get("/api/inventory/9780061054884")
            .header("x-api-key", "demo-key"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stock["on_hand"], 0);
}

#[tokio::test]
async fn malformed_and_mistyped_bodies_are_problems() {
    let server = Server::start().await;
    let post = || server.post("/api/books").bearer_auth(ADMIN);

    let (_, problem) = expect_problem(
        post()
            .header(CONTENT_TYPE, "application/json")
            .body("{\"title\": "),
        400,
    )
    .await;
    assert_eq!(problem["title"], "Bad Request");
    expect_problem(
        post()
            .header(CONTENT_TYPE, "application/json")
            .body("not json at all"),
        400,
    )
    .await;

    let mut wrong_type = dispossessed();
    wrong_type["price"] = json!("cheap");
    expect_problem(post().json(&wrong_type), 422).await;

    let mut unknown_field = dispossessed();
    unknown_field["colour"] = json!("blue");
    expect_problem(post().json(&unknown_field), 422).await;

    expect_problem(post().json(&json!({"title": "Only a title"})), 422).await;
    expect_problem(post().body(dispossessed().to_string()), 415).await;

    let invalid = json!({
        "title": "", "author": "A", "isbn": "978-0-06-105488-4", "price": -1.0,
        "published_year": 3000, "pages": 0
    });
    let (_, problem) = expect_problem(post().json(&invalid), 422).await;
    assert_eq!(
        pointers(&problem),
        ["/isbn", "/pages", "/price", "/published_year", "/title"]
    );
}

#[tokio::test]
async fn get_put_delete_a_book() {
    let server = Server::start().await;

    let (_, problem) = expect_problem(server.get("/api/books/999"), 404).await;
    assert!(problem["detail"].as_str().unwrap().contains("999"));
    expect_problem(server.get("/api/books/abc"), 400).await;
    expect_problem(server.get("/api/books/99999999999999999999999"), 400).await;
    expect_problem(server.get("/api/books/-1"), 400).await;

    let replacement = json!({
        "title": "Dune", "author": "Frank Herbert", "isbn": "9780441172719",
        "price": 12.5, "published_year": 1965, "pages": 688
    });
    expect_problem(
        server
            .request(reqwest::Method::PUT, "/api/books/1")
            .json(&replacement),
        401,
    )
    .await;
    expect_problem(
        server
            .request(reqwest::Method::PUT, "/api/books/1")
            .bearer_auth(READER)
            .json(&replacement),
        403,
    )
    .await;
    expect_problem(
        server
            .request(reqwest::Method::PUT, "/api/books/404")
            .bearer_auth(ADMIN)
            .json(&replacement),
        404,
    )
    .await;
    let (status, _, book) = send(
        server
            .request(reqwest::Method::PUT, "/api/books/1")
            .bearer_auth(ADMIN)
            .json(&replacement),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(book["price"], 12.5);
    assert_eq!(book["id"], 1);
    let (_, _, fetched) = send(server.get("/api/books/1")).await;
    assert_eq!(fetched["price"], 12.5);

    // Taking another book's ISBN is a conflict.
    let mut clash = replacement.clone();
    clash["isbn"] = json!("9780441569595");
    expect_problem(
        server
            .request(reqwest::Method::PUT, "/api/books/1")
            .bearer_auth(ADMIN)
            .json(&clash),
        409,
    )
    .await;

    expect_problem(server.request(reqwest::Method::DELETE, "/api/books/8"), 401).await;
    expect_problem(
        server
            .request(reqwest::Method::DELETE, "/api/books/8")
            .bearer_auth(READER),
        403,
    )
    .await;
    let response = server
        .request(reqwest::Method::DELETE, "/api/books/8")
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert!(response.bytes().await.unwrap().is_empty());
    expect_problem(server.get("/api/books/8"), 404).await;
    expect_problem(
        server
            .request(reqwest::Method::DELETE, "/api/books/8")
            .bearer_auth(ADMIN),
        404,
    )
    .await;
}

#[tokio::test]
async fn summarize_reads_chapters_and_summarises() {
    let server = Server::start().await;
    let path = "/api/books/1/summarize";

    expect_problem(server.post(path).json(&json!({})), 401).await;
    let (status, _, summary) = send(
        server
            .post(path)
            .bearer_auth(READER)
            .json(&json!({"chapters": 2})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(summary["book_id"], 1);
    assert_eq!(summary["style"], "brief");
    assert_eq!(summary["chapters"].as_array().unwrap().len(), 2);
    assert_eq!(
        summary["summary"],
        "Dune by Frank Herbert, in 2 chapters: the scene is set, then the stakes are raised."
    );

    let (_, _, detailed) = send(
        server
            .post(path)
            .bearer_auth(READER)
            .json(&json!({"chapters": 1, "style": "detailed"})),
    )
    .await;
    assert!(
        detailed["chapters"][0]["summary"]
            .as_str()
            .unwrap()
            .contains("pages")
    );

    let (_, problem) = expect_problem(
        server
            .post(path)
            .bearer_auth(READER)
            .json(&json!({"chapters": 0})),
        422,
    )
    .await;
    assert_eq!(pointers(&problem), ["/chapters"]);
    expect_problem(
        server
            .post(path)
            .bearer_auth(READER)
            .json(&json!({"style": "epic"})),
        422,
    )
    .await;
    expect_problem(
        server
            .post("/api/books/77/summarize")
            .bearer_auth(READER)
            .json(&json!({})),
        404,
    )
    .await;
}

#[tokio::test]
async fn serves_its_openapi_document() {
    let server = Server::start().await;
    let (status, headers, doc) = send(server.get("/openapi.json")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[CONTENT_TYPE], "application/json");
    assert_eq!(doc["info"]["title"], "Bookstore");
    assert_eq!(doc["paths"].as_object().unwrap().len(), 12);
    assert_eq!(doc, serde_json::to_value(bookstore::openapi()).unwrap());
}
