//! Execution on the described routes, over real HTTP: who sees what, who may call what,
//! what input reaches a handler, streamed calls and their resumption, localised discovery.
#![allow(missing_docs, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use halo_axum::{
    HaloBuilder, HaloLayer, OnDisconnect, Principal, Progress, StaticAuthenticator, ToolResult,
    ValidJson, halo,
};
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

/// How many times handlers ran.
#[derive(Clone, Default)]
struct Hits(Arc<AtomicUsize>);

impl Hits {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    fn hit(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
struct NewBook {
    #[schema(min_length = 1)]
    title: String,
    #[schema(minimum = 1)]
    pages: u32,
}

#[derive(Debug, Serialize, ToSchema)]
struct Book {
    id: u64,
    title: String,
    pages: u32,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the layer's validation, not by the handler
struct Detail {
    /// How much to say.
    #[param(maximum = 3)]
    level: Option<u8>,
}

/// Read a book.
#[halo(locale(
    "zh",
    name = "读书",
    description = "读一本书",
    why = "需要书的详情时使用"
))]
#[utoipa::path(get, path = "/books/{id}", tags = ["books", "read"],
    params(("id" = u64, Path, description = "The book"), Detail),
    responses((status = 200, body = Book)))]
async fn get_book(State(hits): State<Hits>, Path(id): Path<u64>) -> Json<Book> {
    hits.hit();
    Json(Book {
        id,
        title: "Dune".into(),
        pages: 412,
    })
}

/// Add a book.
#[utoipa::path(post, path = "/books", tags = ["books", "write"], request_body = NewBook,
    responses((status = 201, body = Book)), security(("bearer" = ["books:write"])))]
async fn add_book(
    State(hits): State<Hits>,
    caller: Principal,
    ValidJson(book): ValidJson<NewBook>,
) -> (StatusCode, Json<Value>) {
    hits.hit();
    (
        StatusCode::CREATED,
        Json(json!({"id": 1, "title": book.title, "pages": book.pages, "by": caller.id()})),
    )
}

/// Remove every book.
#[utoipa::path(delete, path = "/books", tags = ["admin"], responses((status = 204)),
    security(("bearer" = ["admin"])))]
async fn purge(State(hits): State<Hits>) -> StatusCode {
    hits.hit();
    StatusCode::NO_CONTENT
}

/// Summarize a book, chapter by chapter.
#[halo(stream = true)]
#[utoipa::path(post, path = "/books/{id}/summarize", tags = ["books", "read"],
    params(("id" = u64, Path)), responses((status = 200, body = Object)),
    security(("bearer" = [])))]
async fn summarize(
    State(hits): State<Hits>,
    Path(id): Path<u64>,
    progress: Progress,
) -> ToolResult<Value> {
    hits.hit();
    for chapter in 1..=5 {
        progress.step(chapter, Some(5), format!("reading chapter {chapter}"));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ToolResult::new(json!({"book": id, "summary": "a desert planet"}))
        .with_meta(json!({"chapters": 5}))
}

/// Refuse on purpose.
#[utoipa::path(post, path = "/books/{id}/fail", tags = ["books"],
    params(("id" = u64, Path)), responses((status = 409)))]
async fn fail(
    Path(_id): Path<u64>,
    progress: Progress,
) -> (StatusCode, [(&'static str, &'static str); 1], &'static str) {
    progress.step(1, None, "trying");
    (
        StatusCode::CONFLICT,
        [("content-type", "application/problem+json")],
        r#"{"type":"about:blank","title":"Conflict","status":409,"detail":"already summarised"}"#,
    )
}

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[derive(OpenApi)]
#[openapi(info(title = "Library", version = "1.0.0"), modifiers(&Bearer))]
struct Doc;

fn library(hits: &Hits) -> (axum::Router, utoipa::openapi::OpenApi) {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(get_book))
        .routes(routes!(add_book, purge))
        .routes(routes!(summarize))
        .routes(routes!(fail))
        .split_for_parts();
    (router.with_state(hits.clone()), api)
}

fn authenticator() -> StaticAuthenticator {
    StaticAuthenticator::new()
        .bearer(
            "admin-token",
            Principal::new("admin").with_scopes(["books:write", "admin"]),
        )
        .bearer(
            "writer-token",
            Principal::new("writer").with_scopes(["books:write"]),
        )
        .bearer("reader-token", Principal::new("reader"))
}

async fn serve_with(hits: &Hits, configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> String {
    let (router, api) = library(hits);
    let layer = configure(HaloLayer::builder(api)).build().unwrap();
    let app = router.layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn serve(hits: &Hits) -> String {
    serve_with(hits, |b| b.authenticator(authenticator()).validate(true)).await
}

fn send(base: &str, method: Method, path: &str, token: Option<&str>) -> reqwest::RequestBuilder {
    let request = reqwest::Client::new().request(method, format!("{base}{path}"));
    match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}

async fn discover(base: &str, path: &str, token: Option<&str>) -> reqwest::Response {
    send(base, Method::OPTIONS, path, token)
        .header("accept", "application/llm+json")
        .send()
        .await
        .unwrap()
}

async fn names(base: &str, token: Option<&str>) -> Vec<String> {
    let manifest: Value = discover(base, "/", token).await.json().await.unwrap();
    manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

async fn problem(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json",
        "a {status} answer is a problem"
    );
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn discovery_shows_each_caller_what_it_may_call() {
    let hits = Hits::default();
    let base = serve(&hits).await;
    assert_eq!(names(&base, None).await, ["fail", "get_book"]);
    assert_eq!(
        names(&base, Some("reader-token")).await,
        ["fail", "get_book", "summarize"]
    );
    assert_eq!(
        names(&base, Some("writer-token")).await,
        ["add_book", "fail", "get_book", "summarize"]
    );
    assert_eq!(
        names(&base, Some("admin-token")).await,
        ["add_book", "fail", "get_book", "purge", "summarize"]
    );

    // A path shows only the methods the caller may call; all hidden is a 404.
    let schemas: Value = discover(&base, "/books", Some("writer-token"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(schemas.as_array().unwrap().len(), 1);
    assert_eq!(schemas[0]["call"]["method"], "POST");
    let (status, _) = problem(discover(&base, "/books", Some("reader-token")).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = problem(discover(&base, "/books/1/summarize", None).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Answers that depend on the caller are private and say so.
    let response = discover(&base, "/", Some("reader-token")).await;
    assert!(
        response.headers()["cache-control"]
            .to_str()
            .unwrap()
            .starts_with("private")
    );
    let vary = response.headers()["vary"].to_str().unwrap();
    assert!(
        vary.contains("authorization") && vary.contains("accept"),
        "{vary}"
    );

    // Bad credentials are refused, never treated as anonymous.
    let response = discover(&base, "/", Some("stolen")).await;
    assert!(
        response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(!body.to_string().contains("stolen"));
    assert_eq!(hits.count(), 0);
}

#[tokio::test]
async fn discovery_may_require_credentials() {
    let hits = Hits::default();
    let base = serve_with(&hits, |b| {
        b.authenticator(authenticator())
            .require_credentials(true)
            .validate(true)
    })
    .await;
    let response = discover(&base, "/", None).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(response.headers().contains_key("www-authenticate"));
    assert_eq!(names(&base, Some("reader-token")).await.len(), 3);
}

#[tokio::test]
async fn calls_need_credentials_and_scopes() {
    let hits = Hits::default();
    let base = serve(&hits).await;
    let book = json!({"title": "Dune", "pages": 412});

    let response = send(&base, Method::POST, "/books", None)
        .json(&book)
        .send()
        .await
        .unwrap();
    assert!(response.headers().contains_key("www-authenticate"));
    assert_eq!(problem(response).await.0, StatusCode::UNAUTHORIZED);
    let response = send(&base, Method::POST, "/books", Some("reader-token"))
        .json(&book)
        .send()
        .await
        .unwrap();
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        challenge.contains(r#"error="insufficient_scope""#) && challenge.contains("books:write"),
        "{challenge}"
    );
    let (status, body) = problem(response).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        body["detail"].as_str().unwrap().contains("books:write"),
        "{body}"
    );
    let response = send(&base, Method::DELETE, "/books", Some("writer-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(response).await.0, StatusCode::FORBIDDEN);
    let response = send(&base, Method::POST, "/books", Some("bogus"))
        .json(&book)
        .send()
        .await
        .unwrap();
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains(r#"error="invalid_token""#),
        "{challenge}"
    );
    assert_eq!(problem(response).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(hits.count(), 0, "no rejected call reached a handler");

    let response = send(&base, Method::POST, "/books", Some("writer-token"))
        .json(&book)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let created: Value = response.json().await.unwrap();
    assert_eq!(created["by"], "writer", "the handler sees the principal");
    let response = send(&base, Method::DELETE, "/books", Some("admin-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    // Public operations need nothing.
    let response = send(&base, Method::GET, "/books/7", None)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(hits.count(), 3);
}

#[tokio::test]
async fn invalid_input_never_reaches_the_handler() {
    let hits = Hits::default();
    let base = serve_with(&hits, |b| {
        b.authenticator(authenticator())
            .body_limit(1024)
            .validate(true)
    })
    .await;
    let post = |body: reqwest::Body, content_type: &'static str| {
        send(&base, Method::POST, "/books", Some("writer-token"))
            .header("content-type", content_type)
            .body(body)
    };

    let (status, body) = problem(
        post("{\"title\": ".into(), "application/json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("not valid JSON"));

    let (status, _) = problem(
        post("title=Dune".into(), "application/x-www-form-urlencoded")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let big = format!("{{\"title\": \"{}\", \"pages\": 1}}", "x".repeat(2000));
    let (status, _) = problem(post(big.into(), "application/json").send().await.unwrap()).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);

    let (status, body) = problem(
        post(
            r#"{"title": "", "pages": "many"}"#.into(),
            "application/json",
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let pointers: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pointer"].as_str().unwrap())
        .collect();
    assert!(
        pointers.contains(&"/title") && pointers.contains(&"/pages"),
        "{body}"
    );

    let (status, body) = problem(
        post(r#"{"title": "Dune"}"#.into(), "application/json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["errors"][0]["pointer"], "/pages", "{body}");

    let (status, _) = problem(
        post(reqwest::Body::from(""), "application/json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a required body is missing, as axum's Json answers it"
    );

    // Parameters: a path value that is not a number, a query value over its maximum, a
    // query string that is not UTF-8.
    let (status, body) = problem(
        send(&base, Method::GET, "/books/seven", None)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "as axum's Path answers");
    assert_eq!(body["errors"][0]["pointer"], "/id");
    let (status, body) = problem(
        send(&base, Method::GET, "/books/7?level=9", None)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "as axum's Query answers");
    assert_eq!(body["errors"][0]["pointer"], "/level");
    let (status, _) = problem(
        send(&base, Method::GET, "/books/7?level=%FF", None)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(hits.count(), 0, "the handlers never ran");

    let response = send(&base, Method::GET, "/books/7?level=2", None)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let response = post(
        r#"{"title": "Dune", "pages": 412}"#.into(),
        "application/json; charset=utf-8",
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(hits.count(), 2);
}

#[tokio::test]
async fn validation_can_be_turned_off() {
    let hits = Hits::default();
    let base = serve_with(&hits, |b| b.authenticator(authenticator()).validate(false)).await;
    let response = send(&base, Method::GET, "/books/7?level=9", None)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "the handler decides");
    assert_eq!(hits.count(), 1);

    // `ValidJson` parses the body itself then, with the same kind of answers.
    let post = |body: &'static str, content_type: &'static str| {
        send(&base, Method::POST, "/books", Some("writer-token"))
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let (status, _) = problem(post("{", "application/json").await.unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = problem(
        post(r#"{"title": "Dune"}"#, "application/json")
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = problem(
        post(r#"{"title": "Dune", "pages": 1}"#, "text/plain")
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let response = post(r#"{"title": "", "pages": 1}"#, "application/json")
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "no schema check without validation"
    );
}

/// The events of an SSE body: (id, event, data).
fn events(text: &str) -> Vec<(u64, String, Value)> {
    text.split("\n\n")
        .filter(|block| block.lines().any(|line| line.starts_with("data:")))
        .map(|block| {
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|line| line.strip_prefix(name))
                    .unwrap()
                    .trim()
                    .to_owned()
            };
            (
                field("id:").parse().unwrap(),
                field("event:"),
                serde_json::from_str(&field("data:")).unwrap(),
            )
        })
        .collect()
}

fn stream_request(base: &str, path: &str, token: Option<&str>) -> reqwest::RequestBuilder {
    send(base, Method::POST, path, token).header("accept", "text/event-stream")
}

#[tokio::test]
async fn the_same_route_streams_progress_or_answers_plainly() {
    let hits = Hits::default();
    let base = serve(&hits).await;
    let response = stream_request(&base, "/books/7/summarize", Some("reader-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let streamed = events(&response.text().await.unwrap());
    let kinds: Vec<&str> = streamed.iter().map(|(_, kind, _)| kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "tool_start",
            "tool_progress",
            "tool_progress",
            "tool_progress",
            "tool_progress",
            "tool_progress",
            "tool_end"
        ]
    );
    let ids: Vec<u64> = streamed.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(ids, (1..=7).collect::<Vec<_>>());
    assert_eq!(streamed[0].2["data"]["tool"], "summarize");
    assert!(
        streamed[0].2["data"]["call_id"]
            .as_str()
            .unwrap()
            .starts_with("c-")
    );
    assert_eq!(
        streamed[1].2["data"],
        json!({"step": 1, "total": 5, "message": "reading chapter 1"})
    );
    assert_eq!(
        streamed[6].2["data"]["content"],
        json!({"book": 7, "summary": "a desert planet"})
    );
    assert_eq!(streamed[6].2["data"]["meta"], json!({"chapters": 5}));

    // Without the SSE accept: the plain result, content only.
    let response = send(
        &base,
        Method::POST,
        "/books/7/summarize",
        Some("reader-token"),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"book": 7, "summary": "a desert planet"})
    );

    // Checks come first, as plain HTTP errors.
    let response = stream_request(&base, "/books/7/summarize", None)
        .send()
        .await
        .unwrap();
    assert_eq!(problem(response).await.0, StatusCode::UNAUTHORIZED);
    let response = stream_request(&base, "/books/x/summarize", Some("reader-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(response).await.0, StatusCode::BAD_REQUEST);
    assert_eq!(hits.count(), 2);

    // A handler's error ends the stream with its problem.
    let response = stream_request(&base, "/books/7/fail", None)
        .send()
        .await
        .unwrap();
    let failed = events(&response.text().await.unwrap());
    let last = failed.last().unwrap();
    assert_eq!(last.1, "tool_error");
    assert_eq!(last.2["data"]["status"], 409);
    assert_eq!(last.2["data"]["detail"], "already summarised");

    // The schema advertises the stream.
    let schemas: Value = discover(&base, "/books/7/summarize", Some("reader-token"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(schemas[0]["stream"], json!({"events": ["tool_progress"]}));
}

#[tokio::test]
async fn streams_work_without_an_authenticator() {
    let hits = Hits::default();
    let base = serve_with(&hits, |b| b).await;
    let response = stream_request(&base, "/books/3/summarize", None)
        .send()
        .await
        .unwrap();
    let streamed = events(&response.text().await.unwrap());
    assert_eq!(streamed.len(), 7);
    assert_eq!(streamed[6].1, "tool_end");
}

#[tokio::test]
async fn a_dropped_stream_resumes_from_last_event_id() {
    let hits = Hits::default();
    let base = serve(&hits).await;
    let mut response = stream_request(&base, "/books/7/summarize", Some("reader-token"))
        .send()
        .await
        .unwrap();
    let call_id = response.headers()["halo-call-id"]
        .to_str()
        .unwrap()
        .to_owned();
    // Read until two events have arrived, then hang up.
    let mut received = String::new();
    while events(&received).len() < 2 {
        let chunk = response.chunk().await.unwrap().unwrap();
        received.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    drop(response);
    let first = events(&received);
    let last_id = first.last().unwrap().0;

    let resume = |token: Option<&str>, id: &str, last: &str| {
        stream_request(&base, "/books/7/summarize", token)
            .header("halo-call-id", id.to_owned())
            .header("last-event-id", last.to_owned())
            .send()
    };
    let rest = events(
        &resume(Some("reader-token"), &call_id, &last_id.to_string())
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    );
    let ids: Vec<u64> = first.iter().chain(&rest).map(|(id, _, _)| *id).collect();
    assert_eq!(ids, (1..=7).collect::<Vec<_>>(), "every event exactly once");
    assert_eq!(rest.last().unwrap().1, "tool_end");
    assert_eq!(hits.count(), 1, "resuming never runs the handler again");

    // Someone else cannot resume it; an unknown call is gone; a bad id is a 400.
    let response = resume(Some("writer-token"), &call_id, "1").await.unwrap();
    assert_eq!(problem(response).await.0, StatusCode::GONE);
    let response = resume(Some("reader-token"), "c-unknown", "1")
        .await
        .unwrap();
    assert_eq!(problem(response).await.0, StatusCode::GONE);
    let response = resume(Some("reader-token"), &call_id, "x").await.unwrap();
    assert_eq!(problem(response).await.0, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_cancelling_layer_drops_the_handler_when_the_client_leaves() {
    let hits = Hits::default();
    let base = serve_with(&hits, |b| b.on_disconnect(OnDisconnect::Cancel)).await;
    let mut response = stream_request(&base, "/books/7/summarize", None)
        .send()
        .await
        .unwrap();
    let call_id = response.headers()["halo-call-id"]
        .to_str()
        .unwrap()
        .to_owned();
    response.chunk().await.unwrap();
    drop(response);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let replay = stream_request(&base, "/books/7/summarize", None)
        .header("halo-call-id", call_id)
        .header("last-event-id", "0")
        .send()
        .await
        .unwrap();
    let replayed = events(&replay.text().await.unwrap());
    let last = replayed.last().unwrap();
    assert_eq!(last.1, "tool_error", "{replayed:?}");
    assert!(
        replayed.len() < 7,
        "the handler stopped early: {replayed:?}"
    );
}

#[tokio::test]
async fn discovery_speaks_the_callers_language() {
    let hits = Hits::default();
    let base = serve(&hits).await;
    let ask = |language: &'static str| {
        send(&base, Method::OPTIONS, "/books/7", None)
            .header("accept", "application/llm+json")
            .header("accept-language", language)
            .send()
    };
    let response = ask("zh-CN, en;q=0.5").await.unwrap();
    assert_eq!(response.headers()["content-language"], "zh");
    assert!(
        response.headers()["vary"]
            .to_str()
            .unwrap()
            .contains("accept-language")
    );
    let schemas: Value = response.json().await.unwrap();
    assert_eq!(schemas[0]["title"], "读书");
    assert_eq!(schemas[0]["description"], "读一本书");
    assert_eq!(schemas[0]["why"], "需要书的详情时使用");

    let response = ask("fr, en-GB").await.unwrap();
    assert!(!response.headers().contains_key("content-language"));
    let schemas: Value = response.json().await.unwrap();
    assert_eq!(schemas[0]["description"], "Read a book.");
    assert!(schemas[0].get("title").is_none());

    let manifest: Value = send(&base, Method::OPTIONS, "/", None)
        .header("accept", "application/llm+json")
        .header("accept-language", "zh")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        manifest["tools"][0]["name"], "get_book",
        "names stay identifiers"
    );
    assert_eq!(manifest["tools"][0]["title"], "读书");
}
