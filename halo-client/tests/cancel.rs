//! Cancelling running calls against a halo-axum server over real HTTP: `ToolStream::cancel`,
//! `Client::cancel` with a stream's id while its events are still read (the stream ends with
//! the `409` `tool_error`), a call named with `invoke_cancellable` cancelled from elsewhere,
//! and what a cancel of an ended, unknown or someone else's call gives.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use futures_util::StreamExt as _;
use halo_axum::{HaloLayer, Principal, Progress, StaticAuthenticator};
use halo_client::protocol::ToolEvent;
use halo_client::{CallId, CancelOutcome, Client, Credential, Method};
use halo_tests::TestServer;
use halo_tests::held::Held;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

/// How long the test waits for a handler to arrive or be dropped.
const PATIENCE: Duration = Duration::from_secs(10);

/// Run a job that only a cancel ends.
#[utoipa::path(post, path = "/jobs", responses((status = 200)))]
async fn job(State(signals): State<Held>, progress: Progress) -> Json<Value> {
    progress.step(1, None, "started");
    signals.until_cancelled().await;
    Json(json!({"done": true}))
}

/// Build a report that only a cancel ends.
#[utoipa::path(get, path = "/reports", responses((status = 200)))]
async fn report(State(signals): State<Held>) -> Json<Value> {
    signals.until_cancelled().await;
    Json(json!({}))
}

/// Answer at once.
#[utoipa::path(get, path = "/quick", responses((status = 200)))]
async fn quick() -> Json<Value> {
    Json(json!({"quick": true}))
}

async fn spawn(signals: &Held) -> TestServer {
    let (router, api) = OpenApiRouter::new()
        .routes(routes!(job))
        .routes(routes!(report))
        .routes(routes!(quick))
        .split_for_parts();
    let layer = HaloLayer::builder(api)
        .authenticator(
            StaticAuthenticator::new()
                .bearer("ann-token", Principal::new("ann"))
                .bearer("bob-token", Principal::new("bob")),
        )
        .build()
        .expect("a layer");
    halo_tests::spawn(router.with_state(signals.clone()).layer(layer)).await
}

fn client(server: &TestServer, token: &str) -> Client {
    Client::builder(server.base_url())
        .credential(Credential::bearer(token))
        .build()
        .unwrap()
}

#[tokio::test]
async fn tool_stream_cancel_stops_the_call() {
    let signals = Held::default();
    let server = spawn(&signals).await;
    let client = client(&server, "ann-token");
    let mut events = client
        .invoke_stream("/jobs", Method::POST, json!({}))
        .await
        .unwrap();
    let id = events.call_id().expect("the server names the call").clone();
    assert!(id.as_str().starts_with("c-"), "{id}");
    let start = events.next().await.unwrap().unwrap();
    assert!(matches!(start.event(), ToolEvent::ToolStart(_)));
    signals.arrival(PATIENCE).await;
    assert_eq!(events.cancel().await.unwrap(), CancelOutcome::Cancelled);
    signals.drop_seen(PATIENCE).await;
    // It stays cancelled; a repeat says so.
    assert_eq!(client.cancel(&id).await.unwrap(), CancelOutcome::Cancelled);
}

#[tokio::test]
async fn a_stream_cancelled_by_its_id_ends_with_a_cancelled_tool_error() {
    let signals = Held::default();
    let server = spawn(&signals).await;
    let client = client(&server, "ann-token");
    let events = client
        .invoke_stream("/jobs", Method::POST, json!({}))
        .await
        .unwrap();
    let id = events.call_id().unwrap().clone();
    signals.arrival(PATIENCE).await;

    // Someone else cannot cancel it.
    let bob = self::client(&server, "bob-token");
    let refused = bob.cancel(&id).await.unwrap_err();
    assert_eq!(refused.status().map(|s| s.as_u16()), Some(404), "{refused}");

    assert_eq!(client.cancel(&id).await.unwrap(), CancelOutcome::Cancelled);
    let error = events.result().await.unwrap_err();
    assert_eq!(error.status().map(|s| s.as_u16()), Some(409), "{error}");
    let problem = error.problem().expect("the problem");
    assert_eq!(problem.detail.as_deref(), Some("the call was cancelled"));
    signals.drop_seen(PATIENCE).await;
}

#[tokio::test]
async fn a_named_call_is_cancelled_from_elsewhere() {
    let signals = Held::default();
    let server = spawn(&signals).await;
    let client = client(&server, "ann-token");
    let id = CallId::random();
    let call = {
        let (client, id) = (client.clone(), id.clone());
        tokio::spawn(async move {
            client
                .invoke_cancellable("/reports", Method::GET, json!({}), &id)
                .await
        })
    };
    signals.arrival(PATIENCE).await;
    assert_eq!(client.cancel(&id).await.unwrap(), CancelOutcome::Cancelled);
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error.status().map(|s| s.as_u16()), Some(409), "{error}");
    signals.drop_seen(PATIENCE).await;
    // Over: nothing of that id runs any more.
    let gone = client.cancel(&id).await.unwrap_err();
    assert!(gone.is_status(), "{gone}");
    assert_eq!(gone.status().map(|s| s.as_u16()), Some(404));
}

#[tokio::test]
async fn an_ended_call_is_already_ended_and_an_unknown_one_is_not_found() {
    let server = spawn(&Held::default()).await;
    let client = client(&server, "ann-token");
    let mut events = client
        .invoke_stream("/quick", Method::GET, json!({}))
        .await
        .unwrap();
    let id = events.call_id().unwrap().clone();
    while let Some(event) = events.next().await {
        event.unwrap();
    }
    assert_eq!(
        client.cancel(&id).await.unwrap(),
        CancelOutcome::AlreadyEnded
    );
    let unknown = client.cancel(&CallId::new("nothing-here").unwrap()).await;
    assert_eq!(unknown.unwrap_err().status().map(|s| s.as_u16()), Some(404));
}
