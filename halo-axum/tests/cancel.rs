//! Cancelling running calls over real HTTP (`DELETE /.well-known/halo/calls/{call_id}`): a
//! streamed call and a call named by its caller (`Halo-Call-Id`), by their caller or an
//! administrator; someone else's cancel is a `404` and the call goes on; the handler is
//! dropped (a drop guard says so) and the audit trail says `cancelled`, for the cancel request
//! and for the call itself (a streamed call's record is written when it ends).
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::time::{Duration, SystemTime};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use common::audit::Records;
use common::client::{Answer, events};
use common::gate::{Drops, Gate};
use halo_axum::{
    Describe, HaloBuilder, HaloLayer, OnDisconnect, Principal, Progress, StaticAuthenticator,
};
use halo_tests::TestServer;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

/// Where the handlers wait (until the test lets them through or they are cancelled), and
/// which of them were dropped before they finished.
#[derive(Clone, Default)]
struct Held {
    gate: Gate,
    drops: Drops,
}

/// Build a report.
#[utoipa::path(get, path = "/reports/{id}", params(("id" = u64, Path, description = "Which")),
    responses((status = 200)))]
async fn report(State(held): State<Held>, Path(id): Path<u64>) -> Json<Value> {
    let running = held.drops.running();
    held.gate.pass().await;
    running.finished();
    Json(json!({"report": id}))
}

/// Run a job.
#[utoipa::path(post, path = "/jobs", responses((status = 200)))]
async fn job(State(held): State<Held>, progress: Progress) -> Json<Value> {
    let running = held.drops.running();
    progress.step(1, Some(2), "started");
    held.gate.pass().await;
    running.finished();
    Json(json!({"done": true}))
}

/// Place an order (its `Idempotency-Key` makes a repeat safe).
#[utoipa::path(post, path = "/orders", responses((status = 201)))]
async fn order(State(held): State<Held>) -> (StatusCode, Json<Value>) {
    let running = held.drops.running();
    held.gate.pass().await;
    running.finished();
    (StatusCode::CREATED, Json(json!({"ordered": true})))
}

/// Delete a report: the application's own `DELETE`, which the layer leaves alone.
async fn delete_report(Path(id): Path<u64>) -> Json<Value> {
    Json(json!({"deleted": id}))
}

/// The app behind the layer `configure` builds, on a loopback port.
async fn spawn(held: &Held, configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> TestServer {
    let (router, api) = OpenApiRouter::new()
        .routes(routes!(report))
        .routes(routes!(job))
        .routes(routes!(order))
        .split_for_parts();
    let router = router
        .route("/reports/{id}", axum::routing::delete(delete_report))
        .with_state(held.clone());
    let orders = Describe::new().idempotency_key("Idempotency-Key");
    let layer = configure(HaloLayer::builder(api).describe("order", orders))
        .build()
        .expect("a layer");
    halo_tests::spawn(router.layer(layer)).await
}

/// Callers ann and bob, and root, who holds the cancel scope; calls audited to `records`.
fn governed(records: &Records) -> impl FnOnce(HaloBuilder) -> HaloBuilder {
    let records = records.clone();
    move |builder| {
        builder
            .authenticator(
                StaticAuthenticator::new()
                    .bearer("ann-token", Principal::new("ann"))
                    .bearer("bob-token", Principal::new("bob"))
                    .bearer(
                        "root-token",
                        Principal::new("root").with_scopes(["halo:admin"]),
                    ),
            )
            .cancel_scope("halo:admin")
            .audit(records)
    }
}

fn http() -> reqwest::Client {
    reqwest::Client::new()
}

/// `DELETE /.well-known/halo/calls/{id}` (a path and query) as `token`'s holder.
async fn cancel(server: &TestServer, id: &str, token: Option<&str>) -> Answer {
    let request = http().delete(server.url(&format!("/.well-known/halo/calls/{id}")));
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    Answer::read(request.send().await.unwrap()).await
}

/// `GET /reports/{n}` named `id`, as `token`'s holder, in a task of its own.
fn named_report(
    server: &TestServer,
    id: &str,
    token: Option<&str>,
) -> tokio::task::JoinHandle<Answer> {
    let mut request = http()
        .get(server.url("/reports/1"))
        .header("halo-call-id", id);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    tokio::spawn(async move { Answer::read(request.send().await.unwrap()).await })
}

/// A streamed `POST /jobs` as `token`'s holder, read up to its progress: the response and
/// the call's id.
async fn start_job(server: &TestServer, token: Option<&str>) -> (reqwest::Response, String) {
    let mut request = http()
        .post(server.url("/jobs"))
        .header("accept", "text/event-stream");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let mut response = request.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let call_id = response.headers()["halo-call-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut read = String::new();
    while events(&read).len() < 2 {
        let chunk = response.chunk().await.unwrap().expect("more events");
        read.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    (response, call_id)
}

/// The rest of a stream's events.
async fn rest(response: reqwest::Response) -> Vec<common::client::Event> {
    events(&response.text().await.unwrap())
}

/// When a call's record says it ended: the time it reached the layer plus its latency.
fn ended_at(record: &halo_axum::AuditRecord) -> SystemTime {
    record.time + Duration::from_secs_f64(record.latency_ms / 1000.0)
}

#[tokio::test]
async fn a_streamed_call_cancelled_by_its_caller_ends_with_a_cancelled_tool_error() {
    let (held, records) = (Held::default(), Records::default());
    let server = spawn(&held, governed(&records)).await;
    let (response, call_id) = start_job(&server, Some("ann-token")).await;
    held.gate.arrivals(1).await;

    // Someone else is told there is no such call, and it goes on.
    cancel(&server, &call_id, Some("bob-token"))
        .await
        .assert_problem(StatusCode::NOT_FOUND);
    cancel(&server, &call_id, None)
        .await
        .assert_problem(StatusCode::NOT_FOUND);
    assert_eq!(held.drops.count(), 0);
    assert!(records.all().is_empty(), "a running call has no record yet");

    let before_cancel = SystemTime::now();
    let answer = cancel(&server, &call_id, Some("ann-token")).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
    held.drops.wait(1).await;
    let last = rest(response).await.pop().expect("a last event");
    assert_eq!(last.name, "tool_error");
    assert_eq!(last.data["data"]["status"], 409, "{:?}", last.data);
    assert_eq!(last.data["data"]["detail"], "the call was cancelled");

    // Cancelling again changes nothing and says the same.
    let again = cancel(&server, &call_id, Some("ann-token")).await;
    assert_eq!(again.status, StatusCode::NO_CONTENT);

    // The call's own record, written when it ended, then one for the cancel: both cancelled.
    assert_eq!(records.outcomes(), ["cancelled", "cancelled"]);
    let all = records.all();
    let (call, request) = (&all[0], &all[1]);
    assert_eq!((call.method.as_str(), call.status), ("POST", 409));
    assert_eq!(call.caller.as_deref(), Some("ann"));
    assert!(
        ended_at(call) >= before_cancel,
        "its latency runs to its cancel: {call:?}"
    );
    assert_eq!(request.caller.as_deref(), Some("ann"));
    assert_eq!(request.tool, "job");
    assert_eq!((request.method.as_str(), request.status), ("DELETE", 204));
}

#[tokio::test]
async fn a_streamed_call_its_client_left_is_recorded_as_cancelled() {
    let (held, records) = (Held::default(), Records::default());
    let server = spawn(&held, |builder| {
        governed(&records)(builder).on_disconnect(OnDisconnect::Cancel)
    })
    .await;
    let (response, _) = start_job(&server, Some("ann-token")).await;
    held.gate.arrivals(1).await;
    assert!(records.all().is_empty(), "{:?}", records.all());
    drop(response);
    held.drops.wait(1).await;
    let all = records.all().clone();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!((all[0].outcome.as_str(), all[0].status), ("cancelled", 503));
    assert_eq!(all[0].path, "/jobs");
}

#[tokio::test]
async fn a_named_call_without_a_stream_is_cancelled_by_its_caller_only() {
    let (held, records) = (Held::default(), Records::default());
    let server = spawn(&held, governed(&records)).await;
    let call = named_report(&server, "report-1", Some("ann-token"));
    held.gate.arrivals(1).await;

    cancel(&server, "report-1", Some("bob-token"))
        .await
        .assert_problem(StatusCode::NOT_FOUND);
    cancel(&server, "report-1", None)
        .await
        .assert_problem(StatusCode::NOT_FOUND);
    assert_eq!(
        held.drops.count(),
        0,
        "another caller's cancel leaves it running"
    );

    let answer = cancel(&server, "report-1", Some("ann-token")).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
    let answer = call.await.unwrap();
    answer.assert_problem(StatusCode::CONFLICT);
    assert_eq!(answer.detail(), "the call was cancelled");
    held.drops.wait(1).await;

    // Over, so no longer kept: its id names nothing now, and may be used again.
    cancel(&server, "report-1", Some("ann-token"))
        .await
        .assert_problem(StatusCode::NOT_FOUND);
    let outcomes = records.outcomes();
    assert_eq!(outcomes, ["cancelled", "cancelled"], "{:?}", records.all());
    let all = records.all();
    let (call, request) = if all[0].method == "GET" {
        (&all[0], &all[1])
    } else {
        (&all[1], &all[0])
    };
    assert_eq!((call.status, call.path.as_str()), (409, "/reports/1"));
    assert_eq!(call.caller.as_deref(), Some("ann"));
    assert_eq!((request.status, request.method.as_str()), (204, "DELETE"));
}

#[tokio::test]
async fn another_callers_cancel_is_not_found_and_the_call_ends_as_usual() {
    let (held, records) = (Held::default(), Records::default());
    let server = spawn(&held, governed(&records)).await;
    let call = named_report(&server, "mine", Some("ann-token"));
    let (response, call_id) = start_job(&server, Some("ann-token")).await;
    held.gate.arrivals(2).await;
    for id in ["mine", call_id.as_str()] {
        let answer = cancel(&server, id, Some("bob-token")).await;
        answer.assert_problem(StatusCode::NOT_FOUND);
        assert_eq!(answer.detail(), "no call of yours with this id is running");
    }
    let before_end = SystemTime::now();
    held.gate.let_through(2);
    let answer = call.await.unwrap();
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(answer.json(), json!({"report": 1}));
    assert_eq!(rest(response).await.pop().unwrap().name, "tool_end");
    assert_eq!(held.drops.count(), 0);
    // The streamed call's record is written as it ends, with its handler's status.
    let all = records.all().clone();
    let job = all.iter().find(|record| record.path == "/jobs").unwrap();
    assert_eq!((job.outcome.as_str(), job.status), ("executed", 200));
    assert!(ended_at(job) >= before_end, "{job:?}");
    // A streamed call that ended on its own is still kept: cancelling it is a conflict.
    cancel(&server, &call_id, Some("ann-token"))
        .await
        .assert_problem(StatusCode::CONFLICT);
}

#[tokio::test]
async fn an_administrator_may_cancel_any_call() {
    let (held, records) = (Held::default(), Records::default());
    let server = spawn(&held, governed(&records)).await;
    let (response, call_id) = start_job(&server, Some("bob-token")).await;
    let bobs = named_report(&server, "nightly", Some("bob-token"));
    let anns = named_report(&server, "nightly", Some("ann-token"));
    held.gate.arrivals(3).await;

    let answer = cancel(&server, &call_id, Some("root-token")).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
    assert_eq!(
        rest(response).await.pop().unwrap().data["data"]["status"],
        409
    );

    // Two callers named their calls alike: the administrator says whose.
    cancel(&server, "nightly", Some("root-token"))
        .await
        .assert_problem(StatusCode::BAD_REQUEST);
    let answer = cancel(&server, "nightly?caller=bob", Some("root-token")).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
    bobs.await.unwrap().assert_problem(StatusCode::CONFLICT);
    // Now only ann's has that id.
    let answer = cancel(&server, "nightly", Some("root-token")).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
    anns.await.unwrap().assert_problem(StatusCode::CONFLICT);
    held.drops.wait(3).await;
    let cancellers: Vec<_> = records
        .all()
        .iter()
        .filter(|record| record.method == "DELETE")
        .map(|record| record.caller.clone().unwrap_or_default())
        .collect();
    assert_eq!(cancellers, ["root", "root", "root"]);
}

#[tokio::test]
async fn ids_that_name_nothing_and_names_in_use_are_refused() {
    let held = Held::default();
    let server = spawn(&held, governed(&Records::default())).await;
    for id in ["c-0000", "unknown", "a%20b", "x/y", &"x".repeat(129)] {
        let answer = cancel(&server, id, Some("ann-token")).await;
        answer.assert_problem(StatusCode::NOT_FOUND);
    }
    // Bad credentials are refused as anywhere else.
    cancel(&server, "unknown", Some("forged"))
        .await
        .assert_problem(StatusCode::UNAUTHORIZED);

    // A name that cannot name a call; a name the caller is using already.
    let bad = http()
        .get(server.url("/reports/1"))
        .header("halo-call-id", "not ok")
        .bearer_auth("ann-token")
        .send()
        .await
        .unwrap();
    Answer::read(bad)
        .await
        .assert_problem(StatusCode::BAD_REQUEST);
    let first = named_report(&server, "twice", Some("ann-token"));
    held.gate.arrivals(1).await;
    let clash = named_report(&server, "twice", Some("ann-token"))
        .await
        .unwrap();
    clash.assert_problem(StatusCode::CONFLICT);
    assert!(clash.detail().contains("still running"), "{}", clash.body);
    // Another caller may use the same name.
    let bobs = named_report(&server, "twice", Some("bob-token"));
    held.gate.arrivals(2).await;
    held.gate.let_through(2);
    assert_eq!(first.await.unwrap().status, StatusCode::OK);
    assert_eq!(bobs.await.unwrap().status, StatusCode::OK);
    assert_eq!(held.drops.count(), 0);
}

#[tokio::test]
async fn a_bare_layer_cancels_a_named_call_and_leaves_the_apps_own_routes_alone() {
    // No authenticator, no audit, no validation: only the named call goes through the layer.
    let held = Held::default();
    let server = spawn(&held, |builder| builder).await;
    let call = named_report(&server, "anon-1", None);
    held.gate.arrivals(1).await;
    let answer = cancel(&server, "anon-1", None).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
    call.await.unwrap().assert_problem(StatusCode::CONFLICT);
    held.drops.wait(1).await;

    // The app's DELETE on the tool's path, and other methods under the prefix, are the app's.
    let deleted = http()
        .delete(server.url("/reports/1"))
        .send()
        .await
        .unwrap();
    let deleted = Answer::read(deleted).await;
    assert_eq!(deleted.json(), json!({"deleted": 1}));
    let other = http()
        .get(server.url("/.well-known/halo/calls/anon-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
    assert_eq!(other.text().await.unwrap(), "", "the router's own 404");
}

#[tokio::test]
async fn a_cancelled_call_frees_its_idempotency_key() {
    let held = Held::default();
    let server = spawn(&held, governed(&Records::default())).await;
    let place = |name: &str| {
        let request = http()
            .post(server.url("/orders"))
            .bearer_auth("ann-token")
            .header("idempotency-key", "order-7")
            .header("halo-call-id", name);
        tokio::spawn(async move { Answer::read(request.send().await.unwrap()).await })
    };
    let first = place("order-try-1");
    held.gate.arrivals(1).await;
    let answer = cancel(&server, "order-try-1", Some("ann-token")).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.body);
    first.await.unwrap().assert_problem(StatusCode::CONFLICT);
    held.drops.wait(1).await;

    // The key was not kept with the cancelled answer: the repeat runs the handler.
    let second = place("order-try-2");
    held.gate.arrivals(2).await;
    held.gate.let_through(1);
    let answer = second.await.unwrap();
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    assert_eq!(answer.json(), json!({"ordered": true}));
}
