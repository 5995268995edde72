//! `Client::search` over real HTTP: against a server that searches (its answer has a
//! `search` member) the client keeps the server's ranking and total; against one that does
//! not (a plain HALO 0.3.1 server ignores `q` and answers its whole manifest) the client
//! ranks, filters and counts the manifest itself. Either way the request carries `q`, the
//! tags, the limit, the HALO `Accept` and the credential; a bad limit or an empty query
//! fails before any request.

use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::routing::options;
use halo_client::{Client, Credential};
use serde_json::{Value, json};

/// What the server saw: each request's raw query and `Accept` and `Authorization` headers.
type Seen = Arc<Mutex<Vec<(String, Option<String>, Option<String>)>>>;

/// A manifest server on `127.0.0.1:<free port>`; with `searches`, it answers `?q=` with a
/// canned ranking and a `search` member, as a server that searches does.
async fn serve(searches: bool) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = Router::new()
        .route("/", options(manifest))
        .with_state((Arc::clone(&seen), searches));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, seen)
}

fn tools() -> Vec<Value> {
    vec![
        json!({"url": "/api/books", "method": "GET", "name": "search_books",
               "description": "Search the catalogue by title or author", "tags": ["books", "read"]}),
        json!({"url": "/api/books", "method": "POST", "name": "create_book",
               "description": "Add a book to the catalogue", "tags": ["books", "write"]}),
        json!({"url": "/api/weather", "method": "GET", "name": "get_weather",
               "description": "Today's weather in a city", "tags": ["weather", "read"]}),
        json!({"url": "/api/orders", "method": "POST", "name": "create_order",
               "description": "Order books for a customer", "tags": ["orders", "write"]}),
    ]
}

async fn manifest(
    State((seen, searches)): State<(Seen, bool)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> impl IntoResponse {
    let header_text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    seen.lock().unwrap_or_else(PoisonError::into_inner).push((
        query.clone().unwrap_or_default(),
        header_text(header::ACCEPT),
        header_text(header::AUTHORIZATION),
    ));
    let mut body = json!({"api": "Shop", "version": "1.0", "tools": tools()});
    if searches && query.is_some_and(|q| q.contains("q=")) {
        // Best first, as a searching server would rank "order books": two shown, three matched.
        let all = tools();
        body["tools"] = json!([all[3], all[0]]);
        body["search"] = json!({"q": "order books", "total": 3});
    }
    (
        [(header::CONTENT_TYPE, "application/llm+json")],
        body.to_string(),
    )
}

fn requests(seen: &Seen) -> Vec<(String, Option<String>, Option<String>)> {
    seen.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

fn names(found: &halo_client::SearchResults) -> Vec<&str> {
    found.tools.iter().map(|tool| tool.name.as_str()).collect()
}

#[tokio::test]
async fn a_searching_server_ranks() {
    let (base, seen) = serve(true).await;
    let client = Client::builder(&base)
        .credential(Credential::bearer("t0ken"))
        .build()
        .unwrap();
    let found = client
        .search("order books")
        .tags(&["books", "orders"])
        .limit(2)
        .send()
        .await
        .unwrap();
    assert!(found.server_ranked);
    assert_eq!(names(&found), ["create_order", "search_books"]);
    assert_eq!(found.total, 3);

    let seen = requests(&seen);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, "q=order+books&tags=books%2Corders&limit=2");
    assert_eq!(seen[0].1.as_deref(), Some("application/llm+json"));
    assert_eq!(seen[0].2.as_deref(), Some("Bearer t0ken"));
}

#[tokio::test]
async fn a_plain_server_is_ranked_by_the_client() {
    let (base, seen) = serve(false).await;
    let client = Client::new(&base).unwrap();

    let found = client.search("what is the weather").send().await.unwrap();
    assert!(!found.server_ranked);
    assert_eq!(names(&found)[0], "get_weather");
    assert_eq!(found.total, 1);

    // Books match three tools; the limit keeps the best, the total counts them all.
    let books = client.search("books").limit(1).send().await.unwrap();
    assert_eq!((books.tools.len(), books.total), (1, 3));
    let all = client.search("books").send().await.unwrap();
    assert_eq!(all.total, 3);
    assert_eq!(all.tools.len(), 3);

    // The tag filter applies even when the server ignored it.
    let writes = client
        .search("books")
        .tags(&["write"])
        .send()
        .await
        .unwrap();
    let mut written = names(&writes);
    written.sort_unstable();
    assert_eq!(written, ["create_book", "create_order"]);

    let nothing = client.search("kubernetes").send().await.unwrap();
    assert_eq!((nothing.tools.len(), nothing.total), (0, 0));

    let seen = requests(&seen);
    assert_eq!(seen.len(), 5);
    assert_eq!(seen[0].0, "q=what+is+the+weather");
    assert_eq!(seen[1].0, "q=books&limit=1");
    assert_eq!(seen[2].2, None, "no credential was configured");
}

#[tokio::test]
async fn bad_arguments_fail_before_any_request() {
    let (base, seen) = serve(true).await;
    let client = Client::new(&base).unwrap();
    for limit in [0, 101] {
        let error = client
            .search("books")
            .limit(limit)
            .send()
            .await
            .unwrap_err();
        assert!(error.is_argument(), "{error}");
        assert!(error.to_string().contains("1 to 100"), "{error}");
    }
    let error = client.search("  ").send().await.unwrap_err();
    assert!(error.is_argument(), "{error}");
    assert!(client.search("books").limit(100).send().await.is_ok());
    assert_eq!(requests(&seen).len(), 1);
}

#[tokio::test]
async fn an_answer_that_is_not_a_manifest_is_an_error() {
    let app = Router::new().route("/", options(|| async { "hello" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let error = Client::new(&base)
        .unwrap()
        .search("books")
        .send()
        .await
        .unwrap_err();
    assert!(error.is_not_described(), "{error}");
}
