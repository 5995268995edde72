//! A layer built again with `carry_over` keeps the state of the one it replaces, over HTTP:
//! spent rate budgets stay spent and an open circuit stays open while the declarations are the
//! same; a changed declaration starts afresh. Calls held for approval stay pending.

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use halo_axum::{ApprovalQueue, HaloBuilder, HaloLayer};
use serde_json::{Value, json};

use crate::common::approvals::{self, ALICE, APPROVALS, CAROL};
use crate::common::gate::Runs;

fn document(rate: &str) -> Value {
    json!({
        "openapi": "3.1.0", "info": {"title": "Carry", "version": "1"},
        "paths": {
            "/ping": {"get": {"operationId": "ping", "responses": {"200": {"description": "pong"}},
                              "x-halo-limits": {"rate": rate}}},
            "/flaky": {"get": {"operationId": "flaky", "responses": {"200": {"description": "ok"}},
                               "x-halo-resilience": {"circuit": {"failures": 1, "cool_down_ms": 60000, "successes": 1}}}}
        }
    })
}

async fn serve(layer: HaloLayer) -> halo_tests::TestServer {
    let app = Router::new()
        .route("/ping", get(|| async { "pong" }))
        .route(
            "/flaky",
            get(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        )
        .layer(layer);
    halo_tests::spawn(app).await
}

async fn status(server: &halo_tests::TestServer, path: &str) -> StatusCode {
    reqwest::get(server.url(path)).await.unwrap().status()
}

#[tokio::test]
async fn state_carries_over_while_declarations_stay() {
    let first = HaloBuilder::from_openapi_json(document("1/minute"))
        .build()
        .unwrap();
    let old = serve(first.clone()).await;
    assert_eq!(status(&old, "/ping").await, StatusCode::OK);
    assert_eq!(
        status(&old, "/flaky").await,
        StatusCode::INTERNAL_SERVER_ERROR
    );
    assert_eq!(
        status(&old, "/flaky").await,
        StatusCode::SERVICE_UNAVAILABLE
    );

    let second = HaloBuilder::from_openapi_json(document("1/minute"))
        .carry_over(&first)
        .build()
        .unwrap();
    let new = serve(second.clone()).await;
    assert_eq!(status(&new, "/ping").await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        status(&new, "/flaky").await,
        StatusCode::SERVICE_UNAVAILABLE
    );

    // Without carrying over, a layer starts afresh; with a changed rate, so does the tool.
    let fresh = serve(
        HaloBuilder::from_openapi_json(document("1/minute"))
            .build()
            .unwrap(),
    )
    .await;
    assert_eq!(status(&fresh, "/ping").await, StatusCode::OK);
    let changed = HaloBuilder::from_openapi_json(document("2/minute"))
        .carry_over(&second)
        .build()
        .unwrap();
    let changed = serve(changed).await;
    assert_eq!(status(&changed, "/ping").await, StatusCode::OK);
    // The circuit's declaration did not change: still open.
    assert_eq!(
        status(&changed, "/flaky").await,
        StatusCode::SERVICE_UNAVAILABLE
    );
}

/// The payments API behind `layer`, on loopback.
async fn payments(layer: HaloLayer, runs: &Runs) -> halo_tests::TestServer {
    let (router, _) = approvals::payments().split_for_parts();
    halo_tests::spawn(router.with_state(runs.clone()).layer(layer)).await
}

/// The payments API's layer: alice calls, carol decides.
fn payments_layer(previous: Option<&HaloLayer>) -> HaloLayer {
    let (_, api) = approvals::payments::<Runs>().split_for_parts();
    let mut builder = HaloLayer::builder(api)
        .authenticator(approvals::callers())
        .approver(ApprovalQueue::new("approve"));
    if let Some(previous) = previous {
        builder = builder.carry_over(previous);
    }
    builder.build().unwrap()
}

async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value, Option<String>) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let location = response
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned());
    (
        status,
        response.json().await.unwrap_or(Value::Null),
        location,
    )
}

/// A call held for approval before a reload is read, listed, decided and run after it, on
/// the layer built to replace the one that held it; one approved after a reload that removed
/// its tool does not run.
#[tokio::test]
async fn pending_approvals_carry_over() {
    let http = reqwest::Client::new();
    let runs = Runs::default();
    let first = payments_layer(None);
    let old = payments(first.clone(), &runs).await;
    let refund = |server: &halo_tests::TestServer, id: &str| {
        http.post(server.url(&format!("/refunds/{id}")))
            .bearer_auth(ALICE)
            .json(&json!({"amount": 20}))
    };
    let approve = |server: &halo_tests::TestServer, location: &str| {
        http.post(server.url(&format!("{location}/approve")))
            .bearer_auth(CAROL)
    };
    let (status, held, location) = send(refund(&old, "7")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{held}");
    let location = location.expect("a Location");

    let second = payments_layer(Some(&first));
    let new = payments(second.clone(), &runs).await;
    let (status, listed, _) = send(http.get(new.url(APPROVALS)).bearer_auth(CAROL)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["approvals"][0]["id"], held["id"], "{listed}");
    let (status, approved, _) = send(approve(&new, &location)).await;
    assert_eq!(status, StatusCode::OK, "{approved}");
    assert_eq!(approved["response"]["status"], 200, "{approved}");
    assert_eq!(approved["response"]["body"]["refund"], "7");
    assert_eq!(runs.count(), 1);
    // Its caller reads the answer from either layer.
    for server in [&old, &new] {
        let (_, read, _) = send(http.get(server.url(&location)).bearer_auth(ALICE)).await;
        assert_eq!(read["state"], "approved", "{read}");
    }

    // Held, then the tool is removed by a reload: approved, it does not run.
    let (status, _, location) = send(refund(&new, "8")).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let location = location.expect("a Location");
    let without = HaloBuilder::from_openapi_json(document("1/minute"))
        .authenticator(approvals::callers())
        .approver(ApprovalQueue::new("approve"))
        .carry_over(&second)
        .build()
        .unwrap();
    let after = serve(without).await;
    let (status, approved, _) = send(approve(&after, &location)).await;
    assert_eq!(status, StatusCode::OK, "{approved}");
    assert_eq!(approved["response"]["status"], 410, "{approved}");
    assert_eq!(runs.count(), 1, "not run");
}
