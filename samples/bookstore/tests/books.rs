//! The catalogue over real HTTP: search, create, read, replace, delete, summarise (plainly and as
//! an event stream), and the errors.

use crate::support;

use bookstore::model::BookSummary;
use halo_axum::protocol::ToolEvent;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, WWW_AUTHENTICATE};
use serde_json::{Value, json};
use support::{ADMIN, READER, Server, expect_problem, expect_unauthorized, pointers, send, stream};

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
    let (_, problem) = expect_problem(server.get("/api/books?limit=0&max_price=-1"), 400).await;
    assert_eq!(pointers(&problem), ["/limit", "/max_price"]);
    let (_, problem) = expect_problem(server.get("/api/books?limit=lots"), 400).await;
    assert_eq!(pointers(&problem), ["/limit"]);
    let (_, problem) = expect_problem(server.get("/api/books?limit=101"), 400).await;
    assert_eq!(pointers(&problem), ["/limit"]);
    let (_, problem) = expect_problem(server.get("/api/books?max_price=NaN"), 400).await;
    assert_eq!(pointers(&problem), ["/max_price"]);
    // A query string that is not UTF-8 cannot be read at all.
    expect_problem(server.get("/api/books?limit=%FF"), 400).await;
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

    // The HALO layer refuses before the handler runs: 401 with a challenge naming both
    // schemes the API accepts, 403 for credentials without `books:write`.
    let (headers, problem) =
        expect_problem(server.post("/api/books").json(&dispossessed()), 401).await;
    let challenge = headers[WWW_AUTHENTICATE].to_str().unwrap();
    assert_eq!(
        challenge,
        r#"Bearer realm="Bookstore", ApiKey realm="Bookstore", header="X-API-Key""#
    );
    assert_eq!(problem["title"], "Unauthorized");

    for credentials in [
        server.post("/api/books").bearer_auth("not-a-token"),
        server.post("/api/books").basic_auth("user", Some("pw")),
    ] {
        let challenge = expect_unauthorized(credentials.json(&dispossessed())).await;
        assert_eq!(
            challenge,
            r#"Bearer realm="Bookstore", error="invalid_token", ApiKey realm="Bookstore", header="X-API-Key""#
        );
    }

    let (_, problem) = expect_problem(
        server
            .post("/api/books")
            .bearer_auth(READER)
            .json(&dispossessed()),
        403,
    )
    .await;
    assert_eq!(problem["title"], "Forbidden");

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
    for id in ["abc", "-1", "1.5", "99999999999999999999999"] {
        let (_, problem) = expect_problem(server.get(&format!("/api/books/{id}")), 400).await;
        assert_eq!(pointers(&problem), ["/id"], "{id}");
    }

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

    expect_unauthorized(server.post(path).json(&json!({}))).await;
    // Without `Accept: text/event-stream`: the summary as plain JSON, without the meta.
    let response = server
        .post(path)
        .bearer_auth(READER)
        .json(&json!({"chapters": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[CONTENT_TYPE], "application/json");
    let summary: Value = response.json().await.unwrap();
    let typed: BookSummary = serde_json::from_value(summary.clone()).expect("a BookSummary");
    assert_eq!(typed.chapters.len(), 2);
    assert!(summary.get("meta").is_none(), "{summary}");
    assert_eq!(summary["book_id"], 1);
    assert_eq!(summary["style"], "brief");
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

    for chapters in [0, 21] {
        let (_, problem) = expect_problem(
            server
                .post(path)
                .bearer_auth(READER)
                .json(&json!({"chapters": chapters})),
            422,
        )
        .await;
        assert_eq!(pointers(&problem), ["/chapters"]);
    }
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
async fn summarize_streams_a_step_per_chapter_then_the_summary() {
    let server = Server::start().await;
    let path = "/api/books/1/summarize";
    let events = stream(
        server
            .post(path)
            .bearer_auth(READER)
            .json(&json!({"chapters": 3})),
    )
    .await;
    let names: Vec<&str> = events.iter().map(ToolEvent::name).collect();
    assert_eq!(
        names,
        [
            "tool_start",
            "tool_progress",
            "tool_progress",
            "tool_progress",
            "tool_end"
        ]
    );
    let ToolEvent::ToolStart(start) = &events[0] else {
        unreachable!()
    };
    assert_eq!(start.tool, "summarize_book");
    for (chapter, event) in (1..=3).zip(&events[1..4]) {
        let ToolEvent::ToolProgress(progress) = event else {
            unreachable!()
        };
        assert_eq!(
            *progress,
            json!({"step": chapter, "total": 3, "message": format!("summarising chapter {chapter}")})
        );
    }
    let ToolEvent::ToolEnd(end) = &events[4] else {
        unreachable!()
    };
    assert_eq!(end.status, 200);
    let summary: BookSummary = serde_json::from_value(end.content.clone()).expect("a BookSummary");
    assert_eq!((summary.book_id, summary.chapters.len()), (1, 3));
    assert!(
        summary.summary.contains("then an ally is found"),
        "{summary:?}"
    );
    let meta = end.meta.as_ref().expect("meta for the interface");
    assert_eq!(meta["chapters_read"], 3);
    assert!(meta["elapsed_ms"].as_u64().unwrap() >= 3 * 40, "{meta}");

    // Refusals and invalid input come first, as plain problems rather than streams.
    let streamed = |request: reqwest::RequestBuilder| request.header(ACCEPT, "text/event-stream");
    expect_unauthorized(streamed(server.post(path)).json(&json!({}))).await;
    expect_problem(
        streamed(server.post(path))
            .bearer_auth(READER)
            .json(&json!({"chapters": 0})),
        422,
    )
    .await;
    // What only the handler knows ends the stream with its problem.
    let events = stream(
        server
            .post("/api/books/77/summarize")
            .bearer_auth(READER)
            .json(&json!({})),
    )
    .await;
    let Some(ToolEvent::ToolError(problem)) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(problem.status, 404);
    assert!(
        problem.detail.as_deref().unwrap_or_default().contains("77"),
        "{problem:?}"
    );
}

#[tokio::test]
async fn serves_its_openapi_document() {
    let server = Server::start().await;
    // The whole document names every admin operation: for the administrator only
    // (`tests/admin_routes.rs`).
    let (status, headers, doc) = send(server.get("/openapi.json").bearer_auth(ADMIN)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[CONTENT_TYPE], "application/json");
    assert_eq!(doc["info"]["title"], "Bookstore");
    assert_eq!(doc["paths"].as_object().unwrap().len(), 12);
    assert_eq!(doc, serde_json::to_value(bookstore::openapi()).unwrap());
}
