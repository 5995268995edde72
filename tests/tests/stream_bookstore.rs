//! A streamed tool call from end to end: halo-client's `invoke_stream` against the bookstore's
//! `summarize_book` (halo-axum's SSE execution), through a proxy that cuts the connection in
//! the middle of the stream. The client resumes with `Last-Event-ID`, every event arrives
//! exactly once.

use crate::sse;

use futures_util::StreamExt;
use halo_client::protocol::ToolEvent;
use halo_client::{Client, Credential, Credentials, Method};
use halo_tests::spawn;
use serde_json::json;
use sse::{Cut, Proxy};

#[tokio::test]
async fn a_cut_stream_resumes_and_every_event_arrives_once() {
    let server = spawn(bookstore::app()).await;
    let proxy = Proxy::start(server.addr()).await;
    let host = proxy.base.trim_start_matches("http://").to_owned();
    let client = Client::builder(&proxy.base)
        .credentials(
            Credentials::new().with(&host, Credential::bearer(bookstore::auth::READER_TOKEN)),
        )
        .build()
        .unwrap();
    // The first stream is cut after three events (start and two steps) and a few bytes of
    // the fourth; the resumed one runs to the end.
    proxy.cut([Cut {
        events: 3,
        bytes: 7,
    }]);

    let mut stream = client
        .invoke_stream(
            "/api/books/{id}/summarize",
            Method::POST,
            json!({"id": 1, "chapters": 4}),
        )
        .await
        .unwrap();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    let ids: Vec<u64> = events.iter().map(|e| e.id()).collect();
    assert_eq!(
        ids,
        (1..=6).collect::<Vec<_>>(),
        "each event once, in order"
    );
    assert!(
        matches!(events[0].event(), ToolEvent::ToolStart(start) if start.tool == "summarize_book")
    );
    let steps: Vec<_> = events[1..5]
        .iter()
        .map(|e| match e.event() {
            ToolEvent::ToolProgress(data) => data["step"].as_u64().unwrap(),
            other => panic!("expected progress, got {other:?}"),
        })
        .collect();
    assert_eq!(steps, [1, 2, 3, 4]);
    let ToolEvent::ToolEnd(end) = events[5].event() else {
        panic!("the stream ends with tool_end");
    };
    assert_eq!(end.status, 200);
    assert_eq!(end.content["book_id"], 1);
    assert_eq!(end.content["chapters"].as_array().unwrap().len(), 4);
    assert_eq!(end.meta.as_ref().unwrap()["chapters_read"], 4);
    assert!(proxy.connections() >= 2, "the client reconnected");
}

#[tokio::test]
async fn a_stream_without_credentials_is_refused_before_it_starts() {
    let server = spawn(bookstore::app()).await;
    let admin = Client::builder(server.base_url())
        .credentials(Credentials::new().with(
            server.addr().to_string(),
            Credential::bearer(bookstore::auth::ADMIN_TOKEN),
        ))
        .build()
        .unwrap();
    let schema = admin
        .describe("/api/books/{id}/summarize", Method::POST)
        .await
        .unwrap();
    let anonymous = Client::new(server.base_url()).unwrap();
    let error = anonymous
        .call_stream(&schema, json!({"id": 1}))
        .await
        .unwrap_err();
    assert_eq!(error.status().map(|s| s.as_u16()), Some(401));
    assert_eq!(error.problem().unwrap().status, 401);
}
