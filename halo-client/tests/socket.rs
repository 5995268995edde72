//! Streamed calls over WebSocket (`Transport::WebSocket`, feature `ws`) against a halo-axum
//! server on loopback: the same events as over SSE; a socket cut part-way (by the proxy of
//! `support/proxy.rs`, after some of the server's frames) resumed with every event once;
//! dropping the stream cancels the call (the handler is dropped); refusals keep their status
//! and problem, before the upgrade (`401`) and after it (`422`; a `429` with its
//! `Retry-After` and rate headers, as over SSE).

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use futures_util::StreamExt as _;
use halo_axum::{HaloLayer, Principal, Progress, StaticAuthenticator, Validation, halo};
use halo_client::protocol::ToolEvent;
use halo_client::{CancelOutcome, Client, Credential, Method, RetryPolicy, StreamEvent, Transport};
use halo_tests::TestServer;
use halo_tests::held::Held;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::support::sse::{Cut, Proxy};

const PATIENCE: Duration = Duration::from_secs(10);

/// How far to count.
#[derive(Deserialize, ToSchema)]
struct Count {
    /// The last number.
    to: u64,
}

/// Count aloud.
#[utoipa::path(post, path = "/count", request_body = Count, responses((status = 200)))]
async fn count(progress: Progress, Json(count): Json<Count>) -> Json<Value> {
    for n in 1..=count.to {
        progress.step(n, Some(count.to), format!("{n}"));
    }
    Json(json!({"counted": count.to}))
}

/// Run a job that only a cancel ends.
#[utoipa::path(post, path = "/jobs", responses((status = 200)))]
async fn job(State(signals): State<Held>, progress: Progress) -> Json<Value> {
    progress.step(1, None, "started");
    signals.until_cancelled().await;
    Json(json!({"done": true}))
}

/// Count aloud, once a minute.
#[halo(rate = "1/minute")]
#[utoipa::path(post, path = "/rare", request_body = Count, responses((status = 200)))]
async fn rare(progress: Progress, Json(count): Json<Count>) -> Json<Value> {
    progress.step(1, None, "counting");
    Json(json!({"counted": count.to}))
}

async fn spawn(signals: &Held) -> TestServer {
    let (router, api) = OpenApiRouter::new()
        .routes(routes!(count))
        .routes(routes!(rare))
        .routes(routes!(job))
        .split_for_parts();
    let layer = HaloLayer::builder(api)
        .authenticator(StaticAuthenticator::new().bearer("ann-token", Principal::new("ann")))
        .validate(Validation::On)
        .build()
        .expect("a layer");
    let app = router.with_state(signals.clone()).layer(layer.clone());
    halo_tests::spawn(layer.websocket_app(app)).await
}

fn client(base: &str, token: &str, transport: Transport) -> Client {
    Client::builder(base)
        .credential(Credential::bearer(token))
        .retry(crate::support::fast_retry())
        .stream_transport(transport)
        .build()
        .unwrap()
}

/// Every event of a stream, read to its end.
async fn collect(client: &Client, path: &str, args: Value) -> Vec<StreamEvent> {
    let mut stream = client
        .invoke_stream(path, Method::POST, args)
        .await
        .unwrap();
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(PATIENCE, stream.next()).await.unwrap() {
        events.push(event.unwrap());
    }
    events
}

/// The events with the call's id left out.
fn comparable(events: &[StreamEvent]) -> Vec<(u64, Value)> {
    events
        .iter()
        .map(|event| {
            let mut value = serde_json::to_value(event.event()).unwrap();
            if let Some(id) = value["data"].get_mut("call_id") {
                *id = Value::Null;
            }
            (event.id(), value)
        })
        .collect()
}

#[tokio::test]
async fn a_socket_yields_the_same_events_as_sse() {
    let server = spawn(&Held::default()).await;
    let base = server.base_url();
    let sse = collect(
        &client(&base, "ann-token", Transport::Sse),
        "/count",
        json!({"to": 20}),
    )
    .await;
    let ws = client(&base, "ann-token", Transport::WebSocket);
    let events = collect(&ws, "/count", json!({"to": 20})).await;
    assert_eq!(events.len(), 22);
    assert_eq!(comparable(&events), comparable(&sse));
    let end = ws
        .invoke_stream("/count", Method::POST, json!({"to": 2}))
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(end.content, json!({"counted": 2}));
}

#[tokio::test]
async fn a_cut_socket_is_resumed_and_each_event_arrives_once() {
    let server = spawn(&Held::default()).await;
    let proxy = Proxy::start(server.addr()).await;
    // The first socket is cut after 3 events, the second (the resumption) after 5 more.
    proxy.cut([Cut::after(3), Cut::after(5)]);
    let ws = client(&proxy.base, "ann-token", Transport::WebSocket);
    let events = collect(&ws, "/count", json!({"to": 40})).await;
    let ids: Vec<u64> = events.iter().map(StreamEvent::id).collect();
    assert_eq!(
        ids,
        (1..=42).collect::<Vec<_>>(),
        "each event once, in order"
    );
    assert!(matches!(events[41].event(), ToolEvent::ToolEnd(_)));
    assert_eq!(proxy.cuts_left(), 0, "both sockets were cut");
    let upgrades = proxy
        .requests()
        .iter()
        .filter(|line| line.starts_with("GET /count"))
        .count();
    assert_eq!(upgrades, 3, "one upgrade and two resumptions");
}

#[tokio::test]
async fn dropping_a_socket_stream_cancels_the_call() {
    let signals = Held::default();
    let server = spawn(&signals).await;
    let ws = client(&server.base_url(), "ann-token", Transport::WebSocket);
    let mut events = ws
        .invoke_stream("/jobs", Method::POST, json!({}))
        .await
        .unwrap();
    assert!(events.call_id().is_some(), "the first event names the call");
    let start = events.next().await.unwrap().unwrap();
    assert!(matches!(start.event(), ToolEvent::ToolStart(_)));
    signals.arrival(PATIENCE).await;
    drop(events);
    signals.drop_seen(PATIENCE).await;
    // `cancel` works on a socket's call too.
    let events = ws
        .invoke_stream("/jobs", Method::POST, json!({}))
        .await
        .unwrap();
    signals.arrival(PATIENCE).await;
    assert_eq!(events.cancel().await.unwrap(), CancelOutcome::Cancelled);
    signals.drop_seen(PATIENCE).await;
}

#[tokio::test]
async fn refusals_keep_their_status_and_problem() {
    let server = spawn(&Held::default()).await;
    let base = server.base_url();
    let stranger = client(&base, "wrong-token", Transport::WebSocket);
    let error = stranger
        .invoke_stream("/count", Method::POST, json!({"to": 1}))
        .await
        .unwrap_err();
    assert_eq!(error.status().map(|s| s.as_u16()), Some(401), "{error}");
    let ws = client(&base, "ann-token", Transport::WebSocket);
    let error = ws
        .stream_request(
            Method::POST,
            "/count",
            [(
                reqwest::header::CONTENT_TYPE,
                reqwest::header::HeaderValue::from_static("application/json"),
            )]
            .into_iter()
            .collect(),
            Some(bytes::Bytes::from_static(br#"{"to": "five"}"#)),
            false,
        )
        .await
        .unwrap_err();
    assert_eq!(error.status().map(|s| s.as_u16()), Some(422), "{error}");
    assert_eq!(error.problem().expect("the problem").status, 422);
}

#[tokio::test]
async fn a_rate_refusal_keeps_its_retry_after_and_rate_headers() {
    let server = spawn(&Held::default()).await;
    let base = server.base_url();
    let once = |transport| {
        Client::builder(&base)
            .credential(Credential::bearer("ann-token"))
            .retry(RetryPolicy::none())
            .stream_transport(transport)
            .build()
            .unwrap()
    };
    let (ws, sse) = (once(Transport::WebSocket), once(Transport::Sse));
    let first = collect(&ws, "/rare", json!({"to": 1})).await;
    assert_eq!(first.len(), 3, "{first:?}");
    let mut refused = Vec::new();
    for client in [&ws, &sse] {
        let error = client
            .invoke_stream("/rare", Method::POST, json!({"to": 1}))
            .await
            .unwrap_err();
        assert_eq!(error.status().map(|s| s.as_u16()), Some(429), "{error}");
        let headers = error.response().expect("the refusal").headers().clone();
        for name in ["retry-after", "ratelimit", "ratelimit-policy"] {
            assert!(headers.contains_key(name), "{name}: {headers:?}");
        }
        refused.push(headers);
    }
    let seconds = |headers: &reqwest::header::HeaderMap| -> u64 {
        headers["retry-after"].to_str().unwrap().parse().unwrap()
    };
    let (over_socket, over_sse) = (seconds(&refused[0]), seconds(&refused[1]));
    assert!((50..=60).contains(&over_socket), "{over_socket}");
    assert!(
        over_sse.abs_diff(over_socket) <= 1,
        "{over_sse} / {over_socket}"
    );
    assert_eq!(
        refused[0]["ratelimit-policy"],
        refused[1]["ratelimit-policy"]
    );
}
