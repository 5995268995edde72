//! Tool streams over WebSocket (feature `ws`) on a real loopback socket: the same events as
//! over SSE for the same call; refusals before the upgrade as HTTP problems (`401`, a resume's
//! `410`) and after it as a problem message and a `4000 + status` close; resuming after a
//! cut; cancelling by a message and by a normal close (the handler is dropped), while a
//! client going away leaves the call running; the bounds on a client's message and silence.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use common::client::Event;
use common::gate::{Drops, Gate};
use common::socket::{self, Received, Socket};
use halo_axum::{
    HaloBuilder, HaloLayer, Principal, Progress, StaticAuthenticator, Validation, WebSocketLimits,
};
use halo_tests::TestServer;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

#[derive(Clone, Default)]
struct Held {
    gate: Gate,
    drops: Drops,
}

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

/// Run a job (held until the test lets it through).
#[utoipa::path(post, path = "/jobs", responses((status = 200)))]
async fn job(State(held): State<Held>, progress: Progress) -> Json<Value> {
    let running = held.drops.running();
    progress.step(1, Some(2), "started");
    held.gate.pass().await;
    running.finished();
    Json(json!({"done": true}))
}

/// The app, callers ann and bob, on a loopback port.
async fn spawn(held: &Held, configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> TestServer {
    let (router, api) = OpenApiRouter::new()
        .routes(routes!(count))
        .routes(routes!(job))
        .split_for_parts();
    let layer = HaloLayer::builder(api)
        .authenticator(
            StaticAuthenticator::new()
                .bearer("ann-token", Principal::new("ann"))
                .bearer("bob-token", Principal::new("bob")),
        )
        .validate(Validation::On);
    let layer = configure(layer).build().expect("a layer");
    let app = router.with_state(held.clone()).layer(layer.clone());
    halo_tests::spawn(layer.websocket_app(app)).await
}

const ANN: (&str, &str) = ("authorization", "Bearer ann-token");

async fn open(server: &TestServer, method: &str, path: &str) -> Socket {
    socket::open(&server.base_url(), method, path, &[ANN])
        .await
        .expect("an open socket")
}

/// The events with the call's id (which differs between two calls) left out.
fn comparable(events: &[Event]) -> Vec<(u64, String, Value)> {
    events
        .iter()
        .map(|event| {
            let mut data = event.data.clone();
            if let Some(id) = data["data"].get_mut("call_id") {
                *id = Value::Null;
            }
            (event.id, event.name.clone(), data)
        })
        .collect()
}

#[tokio::test]
async fn a_call_sends_the_same_events_as_over_sse() {
    let held = Held::default();
    let server = spawn(&held, |b| b).await;
    let sse = reqwest::Client::new()
        .post(server.url("/count"))
        .bearer_auth("ann-token")
        .header("accept", "text/event-stream")
        .json(&json!({"to": 5}))
        .send()
        .await
        .unwrap();
    let sse = common::client::events(&sse.text().await.unwrap());
    let mut socket = open(&server, "POST", "/count").await;
    socket.call(Some(json!({"to": 5}))).await;
    let (events, close) = socket.read_to_close().await;
    assert_eq!(close, Some(1000), "a normal close after the terminal event");
    assert_eq!(
        events.len(),
        7,
        "tool_start, 5 progress, tool_end: {events:?}"
    );
    assert_eq!(comparable(&events), comparable(&sse));
    assert_eq!(events[6].data["data"]["content"], json!({"counted": 5}));
}

#[tokio::test]
async fn refusals_before_the_upgrade_are_http_problems_and_after_it_close_codes() {
    let held = Held::default();
    let server = spawn(&held, |b| b).await;
    // Credentials the authenticator refuses: `401` before upgrading.
    let wrong = [("authorization", "Bearer wrong-token")];
    let refused = socket::open(&server.base_url(), "POST", "/count", &wrong)
        .await
        .err()
        .expect("refused");
    assert_eq!(refused.status, 401);
    assert_eq!(refused.content_type, "application/problem+json");
    assert_eq!(refused.body["status"], 401);
    // A resume of a call nobody kept: `410` before upgrading.
    let headers = [ANN, ("halo-call-id", "c-nothing"), ("last-event-id", "3")];
    let gone = socket::open(&server.base_url(), "POST", "/jobs", &headers)
        .await
        .err()
        .expect("refused");
    assert_eq!(gone.status, 410);
    // Arguments that do not match the schema: a problem message, then `4422`.
    let mut socket = open(&server, "POST", "/count").await;
    socket.call(Some(json!({"to": "five"}))).await;
    let Received::Problem(problem) = socket.next().await else {
        panic!("a problem message");
    };
    assert_eq!(problem["status"], 422);
    assert!(problem["errors"].is_array(), "{problem}");
    assert!(matches!(socket.next().await, Received::Closed(4422, _)));
    // A first message that is not a call: `1008`.
    let mut socket = open(&server, "POST", "/count").await;
    socket.send(r#"{"type": "dance"}"#).await;
    assert!(matches!(socket.next().await, Received::Closed(1008, _)));
}

#[tokio::test]
async fn a_cut_stream_resumes_after_its_last_id_with_every_event_once() {
    let held = Held::default();
    let server = spawn(&held, |b| b).await;
    let mut socket = open(&server, "POST", "/jobs").await;
    socket.call(None).await;
    let seen = socket.until("tool_progress").await;
    let call_id = seen[0].data["data"]["call_id"].as_str().unwrap().to_owned();
    socket.cut();
    held.gate.let_through(1);
    let headers = [ANN, ("halo-call-id", &call_id), ("last-event-id", "2")];
    let mut resumed = socket::open(&server.base_url(), "POST", "/jobs", &headers)
        .await
        .expect("resumed");
    let (rest, close) = resumed.read_to_close().await;
    assert_eq!(close, Some(1000));
    let ids: Vec<u64> = seen.iter().chain(&rest).map(|event| event.id).collect();
    assert_eq!(ids, [1, 2, 3], "each event once");
    assert_eq!(rest[0].name, "tool_end");
    assert_eq!(held.drops.count(), 0, "a cut leaves the call running");
    // Another caller cannot resume it.
    let bob = [
        ("authorization", "Bearer bob-token"),
        ("halo-call-id", &call_id),
        ("last-event-id", "0"),
    ];
    let refused = socket::open(&server.base_url(), "POST", "/jobs", &bob).await;
    assert_eq!(refused.err().expect("refused").status, 410);
}

#[tokio::test]
async fn a_cancel_message_or_a_normal_close_cancels_the_call_going_away_does_not() {
    let held = Held::default();
    let server = spawn(&held, |b| b).await;
    // A cancel message: the handler is dropped and the stream ends with the `409`.
    let mut socket = open(&server, "POST", "/jobs").await;
    socket.call(None).await;
    socket.until("tool_progress").await;
    held.gate.arrivals(1).await;
    socket.send(r#"{"type": "cancel"}"#).await;
    let end = socket.until("tool_error").await;
    assert_eq!(end.last().unwrap().data["data"]["status"], 409);
    assert!(matches!(socket.next().await, Received::Closed(1000, _)));
    held.drops.wait(1).await;
    // A normal close: the handler is dropped too.
    let mut socket = open(&server, "POST", "/jobs").await;
    socket.call(None).await;
    socket.until("tool_progress").await;
    held.gate.arrivals(2).await;
    socket.close(1000).await;
    held.drops.wait(2).await;
    // Going away (`1001`): the call runs on, for a client that resumes.
    let mut socket = open(&server, "POST", "/jobs").await;
    socket.call(None).await;
    let seen = socket.until("tool_progress").await;
    let call_id = seen[0].data["data"]["call_id"].as_str().unwrap().to_owned();
    held.gate.arrivals(3).await;
    socket.close(1001).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(held.drops.count(), 2, "going away does not cancel");
    held.gate.let_through(1);
    let headers = [ANN, ("halo-call-id", &call_id), ("last-event-id", "2")];
    let mut resumed = socket::open(&server.base_url(), "POST", "/jobs", &headers)
        .await
        .expect("resumed");
    let (rest, _) = resumed.read_to_close().await;
    assert_eq!(rest[0].name, "tool_end");
}

#[tokio::test]
async fn a_message_too_big_and_a_silent_client_are_closed_with_their_codes() {
    let held = Held::default();
    let limits = WebSocketLimits::new()
        .max_message(1024)
        .idle_timeout(Duration::from_millis(300));
    let server = spawn(&held, |b| b.websocket_limits(limits)).await;
    let mut socket = open(&server, "POST", "/count").await;
    socket
        .call(Some(json!({"to": 1, "padding": "x".repeat(4096)})))
        .await;
    assert!(matches!(socket.next().await, Received::Closed(1009, _)));
    // No call message within the idle limit: `4408`.
    let mut socket = open(&server, "POST", "/count").await;
    assert!(matches!(socket.next().await, Received::Closed(4408, _)));
}
