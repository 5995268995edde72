//! The layer's metrics, scraped from the Prometheus endpoint the app mounts (the app called in
//! process): calls counted by tool, outcome and status class, timed, and discovery counted.
//!
//! The recorder is global to the process, so every test here uses tools of its own names
//! and only one test makes discovery requests.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use axum::Json;
use axum::extract::Path;
use axum::http::{Method, StatusCode};
use common::client::{App, Call};
use common::prometheus;
use halo_axum::{
    HaloBuilder, HaloLayer, Principal, Prometheus, StaticAuthenticator, Validation, halo,
};
use halo_tests::BearerScheme;
use serde_json::{Value, json};
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

/// Read a book.
#[utoipa::path(get, path = "/books/{id}", operation_id = "m_read", params(("id" = u64, Path)),
    responses((status = 200)))]
async fn read(Path(id): Path<u64>) -> Json<Value> {
    Json(json!({"id": id}))
}

/// Charge a card.
#[halo(rate = "2/minute")]
#[utoipa::path(post, path = "/charge", operation_id = "m_charge", responses((status = 200)),
    security(("bearer" = [])))]
async fn charge() -> Json<Value> {
    Json(json!({"charged": true}))
}

/// Think for too long: never answers (the layer's latency is timed on the real clock, so this
/// deadline passes in real time).
#[halo(timeout_ms = 100)]
#[utoipa::path(get, path = "/slow", operation_id = "m_slow", responses((status = 200)))]
async fn slow() -> &'static str {
    std::future::pending::<()>().await;
    "finally"
}

/// Think for too long, called as a streamed tool: its stream ends with the deadline's error.
#[halo(timeout_ms = 100)]
#[utoipa::path(get, path = "/drowsy", operation_id = "s_drowsy", responses((status = 200)))]
async fn drowsy() -> &'static str {
    std::future::pending::<()>().await;
    "finally"
}

/// Place an order, once per key.
#[halo(idempotency_key = "Idempotency-Key")]
#[utoipa::path(post, path = "/orders", operation_id = "m_order", responses((status = 201)))]
async fn order() -> (StatusCode, Json<Value>) {
    (StatusCode::CREATED, Json(json!({"placed": true})))
}

/// Fail at once: its circuit opens after one failure.
#[halo(circuit = "1/30s/1")]
#[utoipa::path(get, path = "/fragile", operation_id = "c_fragile", responses((status = 200)))]
async fn fragile() -> StatusCode {
    StatusCode::BAD_GATEWAY
}

/// Never fail: its circuit stays closed.
#[halo(circuit = "1/30s/1")]
#[utoipa::path(get, path = "/sturdy", operation_id = "c_sturdy", responses((status = 200)))]
async fn sturdy() -> StatusCode {
    StatusCode::OK
}

/// Stay out of the metrics.
#[utoipa::path(get, path = "/quiet", operation_id = "q_quiet", responses((status = 200)))]
async fn quiet() -> &'static str {
    "shh"
}

/// Be discovered.
#[utoipa::path(get, path = "/found/{id}", operation_id = "d_found", params(("id" = u64, Path)),
    responses((status = 200)))]
async fn found(Path(id): Path<u64>) -> Json<Value> {
    Json(json!({"id": id}))
}

#[derive(OpenApi)]
#[openapi(info(title = "Metered", version = "1"), modifiers(&BearerScheme))]
struct Doc;

/// `router` behind the layer `configure` builds, with the Prometheus endpoint at `/metrics`
/// beside it (not behind the layer).
fn serve(router: OpenApiRouter, configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> App {
    let (router, api) = router.split_for_parts();
    let layer = configure(HaloLayer::builder(api)).build().unwrap();
    App::new(router.layer(layer).route_service("/metrics", prometheus()))
}

fn doc() -> OpenApiRouter {
    OpenApiRouter::with_openapi(Doc::openapi())
}

async fn send(call: Call) -> StatusCode {
    call.send().await.status
}

/// The text at `/metrics`.
async fn scrape(app: &App) -> String {
    let answer = app.get("/metrics").send().await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.header("content-type"),
        "text/plain; version=0.0.4; charset=utf-8"
    );
    answer.body
}

/// The value of the sample `name{labels}` (labels in any order, and no others), if present.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut wanted: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    wanted.sort();
    text.lines().find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
        if metric != name {
            return None;
        }
        let mut got: Vec<String> = rest
            .strip_suffix('}')?
            .split(',')
            .filter(|pair| !pair.is_empty())
            .map(str::to_owned)
            .collect();
        got.sort();
        (got == wanted).then(|| value.parse().unwrap())
    })
}

fn calls(text: &str, tool: &str, outcome: &str, status: &str) -> Option<f64> {
    sample(
        text,
        "halo_tool_calls_total",
        &[("tool", tool), ("outcome", outcome), ("status", status)],
    )
}

#[tokio::test]
async fn calls_are_counted_by_tool_outcome_and_status_and_timed() {
    let app = serve(
        doc()
            .routes(routes!(read))
            .routes(routes!(charge))
            .routes(routes!(slow))
            .routes(routes!(order)),
        |builder| {
            builder
                .authenticator(StaticAuthenticator::new().bearer("alice", Principal::new("alice")))
                .validate(Validation::On)
                .metrics(true)
        },
    );
    for id in 1..=3 {
        let status = send(app.get(&format!("/books/{id}"))).await;
        assert_eq!(status, StatusCode::OK);
    }
    let status = send(app.get("/books/seven")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let status = send(app.post("/charge").bearer_auth("mallory")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    for expected in [
        StatusCode::OK,
        StatusCode::OK,
        StatusCode::TOO_MANY_REQUESTS,
    ] {
        let status = send(app.post("/charge").bearer_auth("alice")).await;
        assert_eq!(status, expected);
    }
    let status = send(app.get("/slow")).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    for _ in 0..2 {
        let status = send(
            app.post("/orders")
                .header("idempotency-key", "secret-key-1"),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
    }

    let text = scrape(&app).await;
    assert_eq!(
        calls(&text, "m_read", "executed", "2xx"),
        Some(3.0),
        "{text}"
    );
    assert_eq!(calls(&text, "m_read", "invalid", "4xx"), Some(1.0));
    assert_eq!(calls(&text, "m_charge", "denied", "4xx"), Some(1.0));
    assert_eq!(calls(&text, "m_charge", "executed", "2xx"), Some(2.0));
    assert_eq!(calls(&text, "m_charge", "rate_limited", "4xx"), Some(1.0));
    assert_eq!(calls(&text, "m_slow", "timed_out", "5xx"), Some(1.0));
    assert_eq!(calls(&text, "m_order", "executed", "2xx"), Some(1.0));
    assert_eq!(calls(&text, "m_order", "replayed", "2xx"), Some(1.0));
    assert_eq!(calls(&text, "m_read", "executed", "4xx"), None);

    // Durations in seconds, with buckets: the timed-out call took its 100 ms deadline.
    let duration = |tool: &str, outcome: &str, suffix: &str, le: Option<&str>| {
        let mut labels = vec![("tool", tool), ("outcome", outcome)];
        labels.extend(le.map(|le| ("le", le)));
        sample(
            &text,
            &format!("halo_tool_call_duration_seconds{suffix}"),
            &labels,
        )
    };
    assert_eq!(duration("m_read", "executed", "_count", None), Some(3.0));
    assert_eq!(duration("m_slow", "timed_out", "_count", None), Some(1.0));
    assert_eq!(
        duration("m_slow", "timed_out", "_bucket", Some("0.05")),
        Some(0.0)
    );
    assert_eq!(
        duration("m_slow", "timed_out", "_bucket", Some("0.5")),
        Some(1.0)
    );
    let slow = duration("m_slow", "timed_out", "_sum", None).unwrap();
    assert!((0.1..1.0).contains(&slow), "{slow}");
    assert!(text.contains("# TYPE halo_tool_call_duration_seconds histogram"));
    assert!(text.contains("# HELP halo_tool_calls_total "));

    // Labels are bounded: no caller, path, argument or key ever becomes one.
    for unbounded in ["alice", "mallory", "/books", "seven", "secret-key-1"] {
        assert!(!text.contains(unbounded), "{unbounded} in\n{text}");
    }
}

#[tokio::test]
async fn a_streamed_call_is_counted_as_it_ends_as_the_audit_trail_writes_it() {
    let app = serve(doc().routes(routes!(drowsy)), |builder| {
        builder.metrics(true)
    });
    let answer = app
        .get("/drowsy")
        .header("accept", "text/event-stream")
        .send()
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.body.contains("event: tool_error"), "{}", answer.body);

    // Counted once, with how the stream ended (its `504`), not how it began.
    let text = scrape(&app).await;
    assert_eq!(
        calls(&text, "s_drowsy", "timed_out", "5xx"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(calls(&text, "s_drowsy", "executed", "2xx"), None);
    let timed = sample(
        &text,
        "halo_tool_call_duration_seconds_sum",
        &[("tool", "s_drowsy"), ("outcome", "timed_out")],
    )
    .unwrap();
    assert!((0.1..1.0).contains(&timed), "timed until it ended: {timed}");
}

#[tokio::test]
async fn circuits_show_their_state_and_count_their_changes() {
    // Installed before the layer is built, which shows the circuits' first state.
    let _installed = prometheus();
    let app = serve(
        doc().routes(routes!(fragile)).routes(routes!(sturdy)),
        |builder| builder.metrics(true),
    );
    let state = |text: &str, tool: &str| sample(text, "halo_circuit_state", &[("tool", tool)]);
    let text = scrape(&app).await;
    // Shown from the start, closed.
    assert_eq!(state(&text, "c_fragile"), Some(0.0), "{text}");
    assert_eq!(state(&text, "c_sturdy"), Some(0.0));
    assert!(text.contains("# TYPE halo_circuit_state gauge"), "{text}");

    assert_eq!(send(app.get("/sturdy")).await, StatusCode::OK);
    assert_eq!(send(app.get("/fragile")).await, StatusCode::BAD_GATEWAY);
    for _ in 0..2 {
        assert_eq!(
            send(app.get("/fragile")).await,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
    let text = scrape(&app).await;
    assert_eq!(state(&text, "c_fragile"), Some(2.0), "open: {text}");
    assert_eq!(state(&text, "c_sturdy"), Some(0.0));
    let changes = |tool: &str, to: &str| {
        sample(
            &text,
            "halo_circuit_transitions_total",
            &[("tool", tool), ("to", to)],
        )
    };
    assert_eq!(changes("c_fragile", "open"), Some(1.0), "{text}");
    assert_eq!(changes("c_fragile", "closed"), None);
    assert_eq!(changes("c_sturdy", "open"), None);
    // Refusals are calls with the outcome circuit_open.
    assert_eq!(calls(&text, "c_fragile", "circuit_open", "5xx"), Some(2.0));
    assert_eq!(calls(&text, "c_fragile", "executed", "5xx"), Some(1.0));
}

#[tokio::test]
async fn a_layer_without_metrics_records_nothing() {
    let app = serve(doc().routes(routes!(quiet)), |builder| builder);
    let status = send(app.get("/quiet")).await;
    assert_eq!(status, StatusCode::OK);
    let text = scrape(&app).await;
    assert!(!text.contains("q_quiet"), "{text}");
}

#[tokio::test]
async fn discovery_is_counted_by_target_and_status() {
    // Without an authenticator discovery is answered on the spot; with one, per caller.
    let open = serve(doc().routes(routes!(found)), |builder| {
        builder.metrics(true)
    });
    let guarded = serve(doc().routes(routes!(found)), |builder| {
        builder
            .authenticator(StaticAuthenticator::new().bearer("alice", Principal::new("alice")))
            .require_credentials(true)
            .metrics(true)
    });
    let answer = open.discover("/").send().await;
    assert_eq!(answer.status, StatusCode::OK);
    let etag = answer.header("etag");
    assert_eq!(
        send(open.discover("/").header("if-none-match", etag)).await,
        StatusCode::NOT_MODIFIED
    );
    assert_eq!(send(open.discover("/found/1")).await, StatusCode::OK);
    assert_eq!(send(open.discover("/lost")).await, StatusCode::NOT_FOUND);
    assert_eq!(send(guarded.discover("/")).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        send(guarded.discover("/").bearer_auth("mallory")).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        send(guarded.discover("/").bearer_auth("alice")).await,
        StatusCode::OK
    );
    // A plain OPTIONS (a CORS preflight, say) is not discovery.
    assert_ne!(
        send(open.request(Method::OPTIONS, "/found/1")).await,
        StatusCode::INTERNAL_SERVER_ERROR
    );

    let text = scrape(&open).await;
    let discovered = |target: &str, status: &str| {
        sample(
            &text,
            "halo_discovery_requests_total",
            &[("target", target), ("status", status)],
        )
    };
    assert_eq!(discovered("manifest", "2xx"), Some(2.0), "{text}");
    assert_eq!(discovered("manifest", "3xx"), Some(1.0));
    assert_eq!(discovered("manifest", "4xx"), Some(2.0));
    assert_eq!(discovered("path", "2xx"), Some(1.0));
    assert_eq!(discovered("path", "4xx"), Some(1.0));
    assert!(!text.contains("/lost"), "{text}");
}

#[tokio::test]
async fn the_endpoint_answers_get_and_head_only() {
    let app = serve(doc().routes(routes!(quiet)), |builder| builder);
    let head = app.request(Method::HEAD, "/metrics").send().await;
    assert_eq!(head.status, StatusCode::OK);
    let answer = app.post("/metrics").send().await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(answer.header("allow"), "GET, HEAD");
    assert_eq!(answer.problem()["status"], 405);
}

#[test]
fn a_second_recorder_is_refused_with_a_clear_error() {
    let _installed = prometheus();
    let error = Prometheus::install().unwrap_err();
    assert!(
        error.to_string().contains("another metrics recorder"),
        "{error}"
    );
    assert!(std::error::Error::source(&error).is_some());
}
