//! A layer built again with `carry_over` keeps the state of the one it replaces, over HTTP:
//! spent rate budgets stay spent and an open circuit stays open while the declarations are the
//! same; a changed declaration starts afresh.

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use halo_axum::{HaloBuilder, HaloLayer};
use serde_json::{Value, json};

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
