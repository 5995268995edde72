//! The bookstore (an axum app with the HALO layer) as a `halo` upstream: discovered as
//! halo-client discovers it, its tools served by the gateway with their meaning kept, its
//! calls forwarded with the gateway's credential for it.

use crate::sse::{Cut, Proxy};
use futures_util::StreamExt as _;
use halo_gateway::{Config, Gateway};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn the_bookstore_behind_the_gateway_keeps_its_tools_and_their_meaning() {
    let bookstore_server = halo_tests::spawn(bookstore::app()).await;
    let bookstore = bookstore_server.url("");
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "upstreams:\n  books: {{ halo: \"{bookstore}\", headers: {{ Authorization: \"Bearer ${{BOOKS_TOKEN}}\" }} }}\n"
    );
    let config = Config::from_text_with_env(&text, dir.path(), |name| {
        (name == "BOOKS_TOKEN").then(|| bookstore::auth::ADMIN_TOKEN.to_owned())
    })
    .unwrap();
    let gateway = Gateway::build(&config).await.unwrap();
    let url_server = halo_tests::spawn(gateway.router()).await;
    let url = url_server.url("");

    // Every tool the bookstore shows its administrator, each under the gateway's prefix.
    let direct =
        halo_tests::discover(&format!("{bookstore}/"), Some(bookstore::auth::ADMIN_TOKEN)).await;
    let through = halo_tests::discover(&format!("{url}/"), None).await;
    let names = |manifest: &Value, prefix: &str| -> Vec<String> {
        manifest["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| format!("{prefix}{}", tool["name"].as_str().unwrap()))
            .collect()
    };
    let mut expected = names(&direct, "books_");
    let mut served = names(&through, "");
    expected.sort();
    served.sort();
    assert_eq!(served, expected);
    assert_eq!(gateway.report().tools(), expected.len());

    // The meaning travels: `why`, limits and effects as the bookstore declares them.
    let direct: Value = halo_tests::discover(
        &format!("{bookstore}/api/books/1"),
        Some(bookstore::auth::ADMIN_TOKEN),
    )
    .await;
    let through: Value = halo_tests::discover(&format!("{url}/books/api/books/1"), None).await;
    let get = |schemas: &Value, method: &str| -> Value {
        schemas
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["call"]["method"] == method)
            .cloned()
            .unwrap_or_else(|| panic!("{schemas:#}"))
    };
    for method in ["GET", "PUT", "DELETE"] {
        let (direct, through) = (get(&direct, method), get(&through, method));
        assert_eq!(through["why"], direct["why"], "{method}");
        // Links name the same tools, under the gateway's prefix.
        let mut effects = direct["effects"].clone();
        if let Some(undo) = effects.get_mut("undo") {
            *undo = json!(format!("/books{}", undo.as_str().unwrap()));
        }
        assert_eq!(through["effects"], effects, "{method}");
        assert_eq!(through["limits"], direct["limits"], "{method}");
        assert_eq!(
            through["input"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            direct["input"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            "{method}"
        );
    }

    // Calls reach it with the gateway's credential: an administrator's operation works.
    let created = reqwest::Client::new()
        .post(format!("{url}/books/api/books"))
        .json(
            &json!({"title": "Gateway Tales", "author": "A. Writer", "isbn": "9780000000002",
                      "price": 9.99, "published_year": 2024, "pages": 120}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        created.status(),
        StatusCode::CREATED,
        "{:?}",
        created.text().await
    );
    let book: Value = created.json().await.unwrap();
    let id = book["id"].as_u64().unwrap();
    let fetched: Value = reqwest::get(format!("{url}/books/api/books/{id}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(fetched["title"], book["title"]);
    // Arguments are checked by the gateway before they leave.
    let refused = reqwest::get(format!("{url}/books/api/books/not-a-number"))
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        json!(refused.headers()["content-type"].to_str().unwrap()),
        "application/problem+json"
    );
}

/// A gateway in front of the bookstore (as a reader) reached through a [`Proxy`] that can cut
/// its streams; the bookstore's server, kept alive.
async fn bookstore_through_a_proxy() -> (halo_tests::TestServer, Proxy, halo_tests::TestServer) {
    let bookstore = halo_tests::spawn(bookstore::app()).await;
    let proxy = Proxy::start(bookstore.addr()).await;
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "upstreams:\n  books: {{ halo: \"{}\", headers: {{ Authorization: \"Bearer {}\" }} }}\n",
        proxy.base,
        bookstore::auth::READER_TOKEN
    );
    let config = Config::from_text(&text, dir.path()).unwrap();
    let gateway = Gateway::build(&config).await.unwrap();
    (halo_tests::spawn(gateway.router()).await, proxy, bookstore)
}

/// A streamed call of a HALO upstream's tool: the gateway streams it from the bookstore, whose
/// stream is cut part-way (halo-client resumes it with `Last-Event-ID`), and relays each of
/// its progress steps once, in order, ending with its result as JSON.
#[tokio::test]
async fn a_streamed_call_relays_the_upstreams_progress_across_a_cut() {
    let (server, proxy, _bookstore) = bookstore_through_a_proxy().await;
    // The upstream's first event stream is cut after its start, two steps and a few bytes.
    proxy.cut([Cut {
        events: 3,
        bytes: 7,
    }]);

    let summarize = server.url("/books/api/books/1/summarize");
    let (status, text) = halo_tests::sse::post_streamed(&summarize, &json!({"chapters": 4})).await;
    assert_eq!(status, StatusCode::OK);
    let events = halo_tests::sse::tool_events(&text);
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tool_start",
            "tool_progress",
            "tool_progress",
            "tool_progress",
            "tool_progress",
            "tool_end"
        ],
        "{text}"
    );
    let steps: Vec<u64> = events[1..5]
        .iter()
        .map(|(_, data)| data["step"].as_u64().unwrap_or_else(|| panic!("{text}")))
        .collect();
    assert_eq!(steps, [1, 2, 3, 4], "each step once, in order");
    assert_eq!(events[0].1["tool"], "books_summarize_book");
    let end = &events[5].1;
    assert_eq!(end["status"], 200);
    assert_eq!(end["content"]["book_id"], 1, "the result as JSON: {end}");
    assert_eq!(end["meta"]["chapters_read"], 4);
    assert_eq!(proxy.cuts_left(), 0, "the upstream's stream was cut");

    // A plain call is forwarded as before: one answer, no stream asked of the upstream.
    let plain = reqwest::Client::new()
        .post(server.url("/books/api/books/1/summarize"))
        .json(&json!({"chapters": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), StatusCode::OK);
    let plain: Value = plain.json().await.unwrap();
    assert_eq!(plain["chapters"].as_array().unwrap().len(), 2);
}

/// The same streamed call over WebSocket (HALO §10.1.2): the gateway answers the upgrade on
/// the tool's path, relays the upstream's steps as SSE does, and ends with the result.
#[tokio::test]
async fn a_streamed_call_is_relayed_over_a_websocket() {
    let (server, _proxy, _bookstore) = bookstore_through_a_proxy().await;
    let client = |transport| {
        halo_client::Client::builder(server.url(""))
            .stream_transport(transport)
            .build()
            .unwrap()
    };
    let events = |transport| {
        let client = client(transport);
        async move {
            let mut stream = client
                .invoke_stream(
                    "/books/api/books/1/summarize",
                    reqwest::Method::POST,
                    json!({"chapters": 3}),
                )
                .await
                .unwrap();
            let mut events = Vec::new();
            while let Some(event) = stream.next().await {
                let mut event = serde_json::to_value(event.unwrap().event()).unwrap();
                // Each call has its own id and takes its own time.
                if let Some(id) = event["data"].get_mut("call_id") {
                    *id = Value::Null;
                }
                if let Some(took) = event["data"]["meta"].get_mut("elapsed_ms") {
                    *took = Value::Null;
                }
                events.push(event);
            }
            events
        }
    };
    let over_socket = events(halo_client::Transport::WebSocket).await;
    let types: Vec<&str> = over_socket
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "tool_start",
            "tool_progress",
            "tool_progress",
            "tool_progress",
            "tool_end"
        ],
        "{over_socket:#?}"
    );
    assert_eq!(over_socket[4]["data"]["content"]["book_id"], 1);
    assert_eq!(over_socket, events(halo_client::Transport::Sse).await);
}

/// A streamed call cancelled at the gateway is cancelled at its `halo` upstream too: the
/// gateway asks the upstream to stop its call rather than let it run on for nobody.
#[tokio::test]
async fn a_call_cancelled_at_the_gateway_is_cancelled_upstream() {
    let (server, proxy, _bookstore) = bookstore_through_a_proxy().await;

    // Twenty chapters take most of a second: the call is cancelled once its first step
    // arrives.
    let mut answer = reqwest::Client::new()
        .post(server.url("/books/api/books/1/summarize"))
        .header("accept", "text/event-stream")
        .json(&json!({"chapters": 20}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let mut text = String::new();
    while !text.contains("event: tool_progress") {
        let chunk = answer.chunk().await.unwrap().expect("the stream goes on");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    // The first event, whole; what follows it may still be on its way.
    let first = text.split_inclusive("\n\n").next().expect("tool_start");
    let events = halo_tests::sse::tool_events(first);
    let id = events[0].1["call_id"]
        .as_str()
        .expect("tool_start names the call");
    let cancelled = reqwest::Client::new()
        .delete(server.url(&format!("/.well-known/halo/calls/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), StatusCode::NO_CONTENT);
    let rest = answer.text().await.unwrap();
    assert!(rest.contains("event: tool_error"), "{rest}");

    let asked = |proxy: &Proxy| {
        proxy
            .requests()
            .iter()
            .any(|line| line.starts_with("DELETE /.well-known/halo/calls/"))
    };
    for _ in 0..100 {
        if asked(&proxy) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(asked(&proxy), "{:?}", proxy.requests());
}
