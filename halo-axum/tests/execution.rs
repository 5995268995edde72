//! Execution on the described routes: who sees what, who may call what, what input reaches a
//! handler, localised discovery (the app called in process); streamed calls and their
//! resumption over real HTTP, where the client that leaves is a closed connection.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use common::client::{Answer, App, Call, Event, events};
use common::gate::{Drops, Gate};
use halo_axum::{
    HaloBuilder, HaloLayer, OnDisconnect, Principal, Progress, StaticAuthenticator, ToolResult,
    ValidJson, Validation, halo,
};
use halo_tests::{BearerScheme, TestServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

/// How many times handlers ran; the gate `summarize` waits at before each chapter after the
/// first; its runs dropped before they finished.
#[derive(Clone)]
struct Hits {
    count: Arc<AtomicUsize>,
    chapters: Gate,
    unfinished: Drops,
}

impl Default for Hits {
    /// `summarize` reads every chapter at once.
    fn default() -> Self {
        Self {
            count: Arc::default(),
            chapters: Gate::open(),
            unfinished: Drops::default(),
        }
    }
}

impl Hits {
    /// `summarize` waits before chapters 2 to 5 until the test lets it on.
    fn paced() -> Self {
        Self {
            chapters: Gate::default(),
            ..Self::default()
        }
    }

    fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    fn hit(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
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
    let running = hits.unfinished.running();
    for chapter in 1..=5 {
        if chapter > 1 {
            hits.chapters.pass().await;
        }
        progress.step(chapter, Some(5), format!("reading chapter {chapter}"));
    }
    running.finished();
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

#[derive(OpenApi)]
#[openapi(info(title = "Library", version = "1.0.0"), modifiers(&BearerScheme))]
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

/// The library behind the layer `configure` builds.
fn layered(hits: &Hits, configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> axum::Router {
    let (router, api) = library(hits);
    router.layer(configure(HaloLayer::builder(api)).build().unwrap())
}

fn checked(builder: HaloBuilder) -> HaloBuilder {
    builder
        .authenticator(authenticator())
        .validate(Validation::On)
}

/// The library with credentials and validation, called in process.
fn serve(hits: &Hits) -> App {
    App::new(layered(hits, checked))
}

fn send(app: &App, method: Method, path: &str, token: Option<&str>) -> Call {
    app.request(method, path).caller(token)
}

async fn names(app: &App, token: Option<&str>) -> Vec<String> {
    let manifest = app.discover("/").caller(token).send().await.json();
    manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The status and body of a problem answer.
fn problem(answer: &Answer) -> (StatusCode, Value) {
    (answer.status, answer.problem())
}

#[tokio::test]
async fn discovery_shows_each_caller_what_it_may_call() {
    let hits = Hits::default();
    let app = serve(&hits);
    assert_eq!(names(&app, None).await, ["fail", "get_book"]);
    assert_eq!(
        names(&app, Some("reader-token")).await,
        ["fail", "get_book", "summarize"]
    );
    assert_eq!(
        names(&app, Some("writer-token")).await,
        ["add_book", "fail", "get_book", "summarize"]
    );
    assert_eq!(
        names(&app, Some("admin-token")).await,
        ["add_book", "fail", "get_book", "purge", "summarize"]
    );

    // A path shows only the methods the caller may call; all hidden is a 404.
    let schemas = app
        .discover("/books")
        .bearer_auth("writer-token")
        .send()
        .await
        .json();
    assert_eq!(schemas.as_array().unwrap().len(), 1);
    assert_eq!(schemas[0]["call"]["method"], "POST");
    let (status, _) = problem(
        &app.discover("/books")
            .bearer_auth("reader-token")
            .send()
            .await,
    );
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = problem(&app.discover("/books/1/summarize").send().await);
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Answers that depend on the caller are private and say so.
    let answer = app.discover("/").bearer_auth("reader-token").send().await;
    assert!(answer.header("cache-control").starts_with("private"));
    let vary = answer.header("vary");
    assert!(
        vary.contains("authorization") && vary.contains("accept"),
        "{vary}"
    );

    // Bad credentials are refused, never treated as anonymous.
    let answer = app.discover("/").bearer_auth("stolen").send().await;
    assert!(answer.header("www-authenticate").starts_with("Bearer"));
    let (status, body) = problem(&answer);
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(!body.to_string().contains("stolen"));
    assert_eq!(hits.count(), 0);
}

#[tokio::test]
async fn discovery_may_require_credentials() {
    let hits = Hits::default();
    let app = App::new(layered(&hits, |b| checked(b).require_credentials(true)));
    let answer = app.discover("/").send().await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert!(answer.headers.contains_key("www-authenticate"));
    assert_eq!(names(&app, Some("reader-token")).await.len(), 3);
}

#[tokio::test]
async fn calls_need_credentials_and_scopes() {
    let hits = Hits::default();
    let app = serve(&hits);
    let book = json!({"title": "Dune", "pages": 412});
    let add = |token: Option<&str>| send(&app, Method::POST, "/books", token).json(&book);

    let answer = add(None).send().await;
    assert!(answer.headers.contains_key("www-authenticate"));
    assert_eq!(problem(&answer).0, StatusCode::UNAUTHORIZED);
    let answer = add(Some("reader-token")).send().await;
    let challenge = answer.header("www-authenticate");
    assert!(
        challenge.contains(r#"error="insufficient_scope""#) && challenge.contains("books:write"),
        "{challenge}"
    );
    let (status, body) = problem(&answer);
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        body["detail"].as_str().unwrap().contains("books:write"),
        "{body}"
    );
    let answer = send(&app, Method::DELETE, "/books", Some("writer-token"))
        .send()
        .await;
    assert_eq!(problem(&answer).0, StatusCode::FORBIDDEN);
    let answer = add(Some("bogus")).send().await;
    let challenge = answer.header("www-authenticate");
    assert!(
        challenge.contains(r#"error="invalid_token""#),
        "{challenge}"
    );
    assert_eq!(problem(&answer).0, StatusCode::UNAUTHORIZED);
    assert_eq!(hits.count(), 0, "no rejected call reached a handler");

    let answer = add(Some("writer-token")).send().await;
    assert_eq!(answer.status, StatusCode::CREATED);
    assert_eq!(
        answer.json()["by"],
        "writer",
        "the handler sees the principal"
    );
    let answer = send(&app, Method::DELETE, "/books", Some("admin-token"))
        .send()
        .await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT);
    // Public operations need nothing.
    let answer = send(&app, Method::GET, "/books/7", None).send().await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(hits.count(), 3);
}

#[tokio::test]
async fn invalid_input_never_reaches_the_handler() {
    let hits = Hits::default();
    let app = App::new(layered(&hits, |b| checked(b).body_limit(1024)));
    let post = |body: &str, content_type: &str| {
        send(&app, Method::POST, "/books", Some("writer-token"))
            .header("content-type", content_type)
            .body(body.to_owned())
            .send()
    };
    let get = |path: &str| send(&app, Method::GET, path, None).send();

    let (status, body) = problem(&post("{\"title\": ", "application/json").await);
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("not valid JSON"));

    let (status, _) = problem(&post("title=Dune", "application/x-www-form-urlencoded").await);
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let big = format!("{{\"title\": \"{}\", \"pages\": 1}}", "x".repeat(2000));
    let (status, _) = problem(&post(&big, "application/json").await);
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);

    let (status, body) =
        problem(&post(r#"{"title": "", "pages": "many"}"#, "application/json").await);
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

    let (status, body) = problem(&post(r#"{"title": "Dune"}"#, "application/json").await);
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["errors"][0]["pointer"], "/pages", "{body}");

    let (status, _) = problem(&post("", "application/json").await);
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a required body is missing, as axum's Json answers it"
    );

    // Parameters: a path value that is not a number, a query value over its maximum, a
    // query string that is not UTF-8.
    let (status, body) = problem(&get("/books/seven").await);
    assert_eq!(status, StatusCode::BAD_REQUEST, "as axum's Path answers");
    assert_eq!(body["errors"][0]["pointer"], "/id");
    let (status, body) = problem(&get("/books/7?level=9").await);
    assert_eq!(status, StatusCode::BAD_REQUEST, "as axum's Query answers");
    assert_eq!(body["errors"][0]["pointer"], "/level");
    let (status, _) = problem(&get("/books/7?level=%FF").await);
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(hits.count(), 0, "the handlers never ran");

    assert_eq!(get("/books/7?level=2").await.status, StatusCode::OK);
    let answer = post(
        r#"{"title": "Dune", "pages": 412}"#,
        "application/json; charset=utf-8",
    )
    .await;
    assert_eq!(answer.status, StatusCode::CREATED);
    assert_eq!(hits.count(), 2);
}

#[tokio::test]
async fn validation_can_be_turned_off() {
    let hits = Hits::default();
    let app = App::new(layered(&hits, |b| {
        b.authenticator(authenticator()).validate(Validation::Off)
    }));
    let answer = send(&app, Method::GET, "/books/7?level=9", None)
        .send()
        .await;
    assert_eq!(answer.status, StatusCode::OK, "the handler decides");
    assert_eq!(hits.count(), 1);

    // `ValidJson` parses the body itself then, with the same kind of answers.
    let post = |body: &'static str, content_type: &'static str| {
        send(&app, Method::POST, "/books", Some("writer-token"))
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let (status, _) = problem(&post("{", "application/json").await);
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = problem(&post(r#"{"title": "Dune"}"#, "application/json").await);
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = problem(&post(r#"{"title": "Dune", "pages": 1}"#, "text/plain").await);
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let answer = post(r#"{"title": "", "pages": 1}"#, "application/json").await;
    assert_eq!(
        answer.status,
        StatusCode::CREATED,
        "no schema check without validation"
    );
}

#[tokio::test]
async fn discovery_speaks_the_callers_language() {
    let hits = Hits::default();
    let app = serve(&hits);
    let ask = |path: &str, language: &str| {
        app.discover(path)
            .header("accept-language", language)
            .send()
    };
    let answer = ask("/books/7", "zh-CN, en;q=0.5").await;
    assert_eq!(answer.header("content-language"), "zh");
    assert!(answer.header("vary").contains("accept-language"));
    let schemas = answer.json();
    assert_eq!(schemas[0]["title"], "读书");
    assert_eq!(schemas[0]["description"], "读一本书");
    assert_eq!(schemas[0]["why"], "需要书的详情时使用");

    let answer = ask("/books/7", "fr, en-GB").await;
    assert!(!answer.headers.contains_key("content-language"));
    let schemas = answer.json();
    assert_eq!(schemas[0]["description"], "Read a book.");
    assert!(schemas[0].get("title").is_none());

    let manifest = ask("/", "zh").await.json();
    assert_eq!(
        manifest["tools"][0]["name"], "get_book",
        "names stay identifiers"
    );
    assert_eq!(manifest["tools"][0]["title"], "读书");
}

/// Serves the library behind the layer `configure` builds on a loopback port: streamed calls
/// go over real HTTP.
async fn spawn(hits: &Hits, configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> TestServer {
    halo_tests::spawn(layered(hits, configure)).await
}

/// `POST path` asking for an event stream, as `token`'s holder.
fn stream_request(server: &TestServer, path: &str, token: Option<&str>) -> reqwest::RequestBuilder {
    let request = reqwest::Client::new()
        .post(server.url(path))
        .header("accept", "text/event-stream");
    match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}

async fn read(request: reqwest::RequestBuilder) -> Answer {
    Answer::read(request.send().await.unwrap()).await
}

#[tokio::test]
async fn the_same_route_streams_progress_or_answers_plainly() {
    let hits = Hits::default();
    let server = spawn(&hits, checked).await;
    let answer = read(stream_request(
        &server,
        "/books/7/summarize",
        Some("reader-token"),
    ))
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("content-type"), "text/event-stream");
    let streamed = events(&answer.body);
    let kinds: Vec<&str> = streamed.iter().map(|event| event.name.as_str()).collect();
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
    let ids: Vec<u64> = streamed.iter().map(|event| event.id).collect();
    assert_eq!(ids, (1..=7).collect::<Vec<_>>());
    assert_eq!(streamed[0].data["data"]["tool"], "summarize");
    assert!(
        streamed[0].data["data"]["call_id"]
            .as_str()
            .unwrap()
            .starts_with("c-")
    );
    assert_eq!(
        streamed[1].data["data"],
        json!({"step": 1, "total": 5, "message": "reading chapter 1"})
    );
    assert_eq!(
        streamed[6].data["data"]["content"],
        json!({"book": 7, "summary": "a desert planet"})
    );
    assert_eq!(streamed[6].data["data"]["meta"], json!({"chapters": 5}));

    // Without the SSE accept: the plain result, content only.
    let answer = read(
        reqwest::Client::new()
            .post(server.url("/books/7/summarize"))
            .bearer_auth("reader-token"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.json(),
        json!({"book": 7, "summary": "a desert planet"})
    );

    // Checks come first, as plain HTTP errors.
    let answer = read(stream_request(&server, "/books/7/summarize", None)).await;
    assert_eq!(problem(&answer).0, StatusCode::UNAUTHORIZED);
    let answer = read(stream_request(
        &server,
        "/books/x/summarize",
        Some("reader-token"),
    ))
    .await;
    assert_eq!(problem(&answer).0, StatusCode::BAD_REQUEST);
    assert_eq!(hits.count(), 2);

    // A handler's error ends the stream with its problem.
    let failed = events(
        &read(stream_request(&server, "/books/7/fail", None))
            .await
            .body,
    );
    let last = failed.last().unwrap();
    assert_eq!(last.name, "tool_error");
    assert_eq!(last.data["data"]["status"], 409);
    assert_eq!(last.data["data"]["detail"], "already summarised");

    // The schema advertises the stream.
    let schemas =
        halo_tests::discover(&server.url("/books/7/summarize"), Some("reader-token")).await;
    assert_eq!(schemas[0]["stream"], json!({"events": ["tool_progress"]}));
}

#[tokio::test]
async fn streams_work_without_an_authenticator() {
    let hits = Hits::default();
    let server = spawn(&hits, |b| b).await;
    let answer = read(stream_request(&server, "/books/3/summarize", None)).await;
    let streamed = events(&answer.body);
    assert_eq!(streamed.len(), 7);
    assert_eq!(streamed[6].name, "tool_end");
}

/// Reads `response` until `enough` events have arrived: what was read.
async fn read_events(response: &mut reqwest::Response, enough: usize) -> String {
    let mut received = String::new();
    while events(&received).len() < enough {
        let chunk = response.chunk().await.unwrap().expect("more events");
        received.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    received
}

/// Starts a streamed `summarize` of book 7 as `token`'s holder: the response, its body still
/// to read, and the call's id.
async fn start_summary(server: &TestServer, token: Option<&str>) -> (reqwest::Response, String) {
    let response = stream_request(server, "/books/7/summarize", token)
        .send()
        .await
        .unwrap();
    let call_id = response.headers()["halo-call-id"]
        .to_str()
        .unwrap()
        .to_owned();
    (response, call_id)
}

#[tokio::test]
async fn a_dropped_stream_resumes_from_last_event_id() {
    // The handler waits before its second chapter until the client has gone.
    let hits = Hits::paced();
    let server = spawn(&hits, checked).await;
    let (mut response, call_id) = start_summary(&server, Some("reader-token")).await;
    // Read until two events have arrived, then hang up.
    let first = events(&read_events(&mut response, 2).await);
    drop(response);
    assert_eq!(first.len(), 2, "{first:?}");
    let last_id = first.last().unwrap().id;
    hits.chapters.let_through(4);

    let resume = |token: Option<&str>, id: &str, last: &str| {
        read(
            stream_request(&server, "/books/7/summarize", token)
                .header("halo-call-id", id.to_owned())
                .header("last-event-id", last.to_owned()),
        )
    };
    let rest = events(
        &resume(Some("reader-token"), &call_id, &last_id.to_string())
            .await
            .body,
    );
    let ids: Vec<u64> = first.iter().chain(&rest).map(|event| event.id).collect();
    assert_eq!(ids, (1..=7).collect::<Vec<_>>(), "every event exactly once");
    assert_eq!(rest.last().unwrap().name, "tool_end");
    assert_eq!(hits.count(), 1, "resuming never runs the handler again");

    // Someone else cannot resume it; an unknown call is gone; a bad id is a 400.
    let answer = resume(Some("writer-token"), &call_id, "1").await;
    assert_eq!(problem(&answer).0, StatusCode::GONE);
    let answer = resume(Some("reader-token"), "c-unknown", "1").await;
    assert_eq!(problem(&answer).0, StatusCode::GONE);
    let answer = resume(Some("reader-token"), &call_id, "x").await;
    assert_eq!(problem(&answer).0, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_cancelling_layer_drops_the_handler_when_the_client_leaves() {
    // The handler waits before its second chapter, for ever: only a cancel ends it.
    let hits = Hits::paced();
    let server = spawn(&hits, |b| b.on_disconnect(OnDisconnect::Cancel)).await;
    let (mut response, call_id) = start_summary(&server, None).await;
    response.chunk().await.unwrap();
    drop(response);
    // The server sees the connection close, and the layer drops the handler.
    hits.unfinished.wait(1).await;
    let replay = stream_request(&server, "/books/7/summarize", None)
        .header("halo-call-id", call_id)
        .header("last-event-id", "0");
    let replayed: Vec<Event> = events(&read(replay).await.body);
    let last = replayed.last().unwrap();
    assert_eq!(last.name, "tool_error", "{replayed:?}");
    assert!(
        replayed.len() < 7,
        "the handler stopped early: {replayed:?}"
    );
}
