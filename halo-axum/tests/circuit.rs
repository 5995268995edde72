//! `resilience.circuit`, enforced on calls made in process (on Tokio's paused clock): failures
//! in a row open a tool's circuit, an open circuit refuses with `503` without running the
//! handler, and a half-open one lets one probe through at a time.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use common::audit::Records;
use common::client::{Answer, App};
use common::gate::{Answering, Drops, Gate, Runs};
use halo_axum::protocol::Circuit;
use halo_axum::{BuildError, Describe, HaloBuilder, HaloLayer, halo};
use serde_json::json;
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

/// The handlers' state: how many calls ran, the gate a held call waits at, and the held
/// calls dropped before they finished.
#[derive(Clone, Default)]
struct Upstream {
    runs: Runs,
    gate: Gate,
    unfinished: Drops,
}

async fn answer(upstream: &Upstream, query: &Answering) -> StatusCode {
    upstream.runs.add();
    if query.hold {
        let running = upstream.unfinished.running();
        upstream.gate.pass().await;
        running.finished();
    }
    StatusCode::from_u16(query.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// Answer with the status asked for.
#[halo(circuit = "3/10s/2", rate = "100/minute")]
#[utoipa::path(get, path = "/flaky", params(Answering), responses((status = 200)))]
async fn flaky(State(upstream): State<Upstream>, Query(query): Query<Answering>) -> StatusCode {
    answer(&upstream, &query).await
}

/// Answer with the status asked for; no circuit of its own.
#[utoipa::path(get, path = "/plain", operation_id = "plain", params(Answering),
    responses((status = 200)))]
async fn plain(State(upstream): State<Upstream>, Query(query): Query<Answering>) -> StatusCode {
    answer(&upstream, &query).await
}

/// Never answers within its deadline.
#[halo(timeout_ms = 100, circuit = "2/5s/1")]
#[utoipa::path(get, path = "/slow", responses((status = 200)))]
async fn slow(State(upstream): State<Upstream>) -> StatusCode {
    upstream.runs.add();
    std::future::pending::<()>().await;
    StatusCode::OK
}

#[derive(OpenApi)]
#[openapi(info(title = "Upstream", version = "1"))]
struct Doc;

fn router() -> (axum::Router<Upstream>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(flaky))
        .routes(routes!(plain))
        .routes(routes!(slow))
        .split_for_parts()
}

fn try_serve(
    upstream: &Upstream,
    configure: impl FnOnce(HaloBuilder) -> HaloBuilder,
) -> Result<App, BuildError> {
    let (router, api) = router();
    let layer = configure(HaloLayer::builder(api)).build()?;
    Ok(App::new(router.with_state(upstream.clone()).layer(layer)))
}

fn serve(upstream: &Upstream, configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> App {
    try_serve(upstream, configure).unwrap()
}

async fn flaky_call(app: &App, status: u16) -> Answer {
    app.get(&format!("/flaky?status={status}")).send().await
}

/// Moves Tokio's (paused) clock on.
async fn wait(seconds: u64) {
    tokio::time::advance(Duration::from_secs(seconds)).await;
}

fn assert_circuit_open(answer: &Answer, retry_after: &str) {
    answer.assert_problem(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.header("retry-after"), retry_after);
}

#[tokio::test(start_paused = true)]
async fn failures_in_a_row_open_the_circuit_and_refusals_skip_the_handler() {
    let upstream = Upstream::default();
    let records = Records::default();
    let app = serve(&upstream, {
        let records = records.clone();
        |b| b.audit(records)
    });
    for _ in 0..3 {
        assert_eq!(flaky_call(&app, 500).await.status, 500);
    }
    let refused = flaky_call(&app, 200).await;
    assert_circuit_open(&refused, "10");
    assert!(
        refused.detail().contains("3 times in a row"),
        "{}",
        refused.body
    );
    // Refusals carry the rate headers, like the answers.
    assert!(refused.header("ratelimit").starts_with("\"flaky\";r="));
    assert!(!refused.header("ratelimit-policy").is_empty());
    wait(4).await;
    assert_circuit_open(&flaky_call(&app, 200).await, "6");
    assert_eq!(upstream.runs.count(), 3, "no refused call ran");
    assert_eq!(
        records.outcomes(),
        [
            "executed",
            "executed",
            "executed",
            "circuit_open",
            "circuit_open"
        ]
    );
    // Another tool has a circuit of its own (none here).
    assert_eq!(app.get("/plain?status=200").send().await.status, 200);
}

#[tokio::test(start_paused = true)]
async fn client_errors_and_successes_between_failures_keep_it_closed() {
    let upstream = Upstream::default();
    let app = serve(&upstream, |b| b);
    for status in [500, 502, 404, 500, 503, 200, 500, 500, 422, 429, 400] {
        assert_eq!(flaky_call(&app, status).await.status, status);
    }
    // Calls the app rejects (`400`) are not failures either.
    for _ in 0..5 {
        let invalid = app.get("/flaky?status=x").send().await;
        assert_eq!(invalid.status, StatusCode::BAD_REQUEST, "{}", invalid.body);
    }
    assert_eq!(flaky_call(&app, 200).await.status, 200);
    assert_eq!(upstream.runs.count(), 12);
}

#[tokio::test(start_paused = true)]
async fn half_open_lets_one_probe_through_and_successes_close_it() {
    let upstream = Upstream::default();
    let app = serve(&upstream, |b| b);
    for _ in 0..3 {
        flaky_call(&app, 500).await;
    }
    wait(10).await;
    // The first call after the cool-down is the probe; held at the gate, it keeps the others
    // out.
    let probe = tokio::spawn(app.get("/flaky?status=200&hold=true").send());
    upstream.gate.arrivals(1).await;
    let refused = flaky_call(&app, 200).await;
    assert_circuit_open(&refused, "1");
    assert!(refused.detail().contains("probe"), "{}", refused.body);
    upstream.gate.let_through(1);
    assert_eq!(probe.await.unwrap().status, 200);
    // One success of two: still half-open, the next call is the next probe.
    assert_eq!(flaky_call(&app, 200).await.status, 200);
    // Closed: failures count from zero again.
    for _ in 0..2 {
        assert_eq!(flaky_call(&app, 500).await.status, 500);
    }
    assert_eq!(flaky_call(&app, 200).await.status, 200);
    assert_eq!(upstream.runs.count(), 3 + 2 + 3);
}

#[tokio::test(start_paused = true)]
async fn a_failed_probe_opens_it_again() {
    let upstream = Upstream::default();
    let app = serve(&upstream, |b| b);
    for _ in 0..3 {
        flaky_call(&app, 500).await;
    }
    wait(10).await;
    assert_eq!(flaky_call(&app, 200).await.status, 200);
    // A success, then a failed probe: open for a whole cool-down again.
    assert_eq!(flaky_call(&app, 500).await.status, 500);
    assert_circuit_open(&flaky_call(&app, 200).await, "10");
    assert_eq!(upstream.runs.count(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_probe_releases_its_permit() {
    let upstream = Upstream::default();
    let app = serve(&upstream, |b| b);
    for _ in 0..3 {
        flaky_call(&app, 500).await;
    }
    wait(10).await;
    let probe = tokio::spawn(app.get("/flaky?status=500&hold=true").send());
    upstream.gate.arrivals(1).await;
    assert_circuit_open(&flaky_call(&app, 200).await, "1");
    // The caller goes away: the probe is dropped, and counts as neither.
    probe.abort();
    upstream.unfinished.wait(1).await;
    assert_eq!(
        flaky_call(&app, 200).await.status,
        200,
        "the next call probes"
    );
    assert_eq!(flaky_call(&app, 200).await.status, 200);
    // Closed (two successes): three failures to open it again.
    for _ in 0..2 {
        flaky_call(&app, 500).await;
    }
    assert_eq!(flaky_call(&app, 200).await.status, 200);
}

#[tokio::test(start_paused = true)]
async fn the_layers_own_timeouts_are_failures() {
    let upstream = Upstream::default();
    let app = serve(&upstream, |b| b);
    for _ in 0..2 {
        assert_eq!(app.get("/slow").send().await.status, 504);
    }
    assert_circuit_open(&app.get("/slow").send().await, "5");
    assert_eq!(upstream.runs.count(), 2);
}

#[tokio::test(start_paused = true)]
async fn streamed_calls_count_when_their_handler_ends() {
    let upstream = Upstream::default();
    let app = serve(&upstream, |b| b);
    for _ in 0..3 {
        let text = app.get("/flaky?status=500").streamed().send().await.body;
        assert!(text.contains("event: tool_error"), "{text}");
    }
    let refused = app.get("/flaky?status=200").streamed().send().await;
    assert_circuit_open(&refused, "10");
    assert_circuit_open(&flaky_call(&app, 200).await, "10");
    wait(10).await;
    // A streamed probe that succeeds counts too.
    let text = app.get("/flaky?status=200").streamed().send().await.body;
    assert!(text.contains("event: tool_end"), "{text}");
    assert_eq!(flaky_call(&app, 200).await.status, 200);
    for _ in 0..2 {
        flaky_call(&app, 500).await;
    }
    assert_eq!(flaky_call(&app, 200).await.status, 200, "closed again");
    assert_eq!(upstream.runs.count(), 3 + 2 + 2 + 1);
}

#[tokio::test(start_paused = true)]
async fn the_schema_shows_the_circuit_declared_described_or_by_default() {
    let upstream = Upstream::default();
    let schema = |app: App, path: &'static str| async move {
        app.discover(path).send().await.json()[0]["resilience"]["circuit"].clone()
    };
    let app = serve(&upstream, |b| b);
    assert_eq!(
        schema(app.clone(), "/flaky").await,
        json!({"failures": 3, "cool_down_ms": 10000, "successes": 2})
    );
    assert!(schema(app.clone(), "/plain").await.is_null());

    // The default, for tools that declare none, is shown and enforced.
    let app = serve(&upstream, |b| {
        b.default_circuit("1/3s/1".parse::<Circuit>().unwrap())
    });
    assert_eq!(
        schema(app.clone(), "/plain").await,
        json!({"failures": 1, "cool_down_ms": 3000, "successes": 1})
    );
    assert_eq!(schema(app.clone(), "/flaky").await["failures"], 3);
    assert_eq!(app.get("/plain?status=500").send().await.status, 500);
    assert_circuit_open(&app.get("/plain?status=200").send().await, "3");

    // Attached by operationId.
    let described = Describe::new().circuit("2/1500ms/1".parse().unwrap());
    let app = serve(&upstream, |b| b.describe("plain", described));
    assert_eq!(
        schema(app.clone(), "/plain").await,
        json!({"failures": 2, "cool_down_ms": 1500, "successes": 1})
    );
    for _ in 0..2 {
        app.get("/plain?status=500").send().await;
    }
    assert_circuit_open(&app.get("/plain?status=200").send().await, "2");
}

#[test]
fn circuits_in_extensions_are_checked_at_build() {
    let document = |circuit: serde_json::Value| {
        json!({
            "openapi": "3.1.0",
            "info": {"title": "t", "version": "1"},
            "paths": {"/x": {"get": {
                "operationId": "x",
                "responses": {"200": {"description": "ok"}},
                "x-halo-resilience": {"circuit": circuit}
            }}}
        })
    };
    let build = |circuit| HaloBuilder::from_openapi_json(document(circuit)).build();
    assert!(build(json!({"failures": 2})).is_ok());
    for (bad, needle) in [
        (json!({"failures": 0}), "failures must be at least 1"),
        (json!({"successes": 0}), "successes must be at least 1"),
        (json!({"cool_down_ms": 0}), "cool-down"),
        (json!({"cool_down": 5}), "cool_down"),
        (json!("5/30s/2"), "x-halo-resilience"),
    ] {
        let error = build(bad.clone()).unwrap_err().to_string();
        assert!(error.contains(needle), "{bad}: {error}");
    }
}
