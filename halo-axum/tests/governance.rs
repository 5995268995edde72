//! What schemas declare, enforced on calls made in process: rate limits per caller and tool,
//! replays of keyed requests, deadlines (on Tokio's paused clock), the audit trail.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use common::client::{App, Call};
use common::gate::{Drops, Gate};
use halo_axum::{
    HaloBuilder, HaloLayer, Principal, StaticAuthenticator, ValidJson, Validation, halo,
};
use halo_tests::BearerScheme;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::time::Instant;
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

/// The handlers' state: how many calls ran, the gate that holds an order of 99 while it runs,
/// and the slow handlers dropped before they finished.
#[derive(Clone, Default)]
struct Shop {
    calls: Arc<AtomicUsize>,
    gate: Gate,
    unfinished: Drops,
}

impl Shop {
    fn next(&self) -> usize {
        self.calls.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
struct Charge {
    #[schema(minimum = 1)]
    amount: u32,
}

/// Charge a card.
#[halo(rate = "3/minute")]
#[utoipa::path(post, path = "/charge", request_body = Charge, responses((status = 200)),
    security(("bearer" = [])))]
async fn charge(State(shop): State<Shop>, ValidJson(charge): ValidJson<Charge>) -> Json<Value> {
    Json(json!({"charge": shop.next(), "amount": charge.amount}))
}

/// Place an order, once per key. An order of 99 waits at the test's gate.
#[halo(idempotency_key = "Idempotency-Key")]
#[utoipa::path(post, path = "/orders", request_body = Charge, responses((status = 201)))]
async fn order(
    State(shop): State<Shop>,
    ValidJson(charge): ValidJson<Charge>,
) -> (StatusCode, [(&'static str, &'static str); 1], Json<Value>) {
    let number = shop.next();
    if charge.amount == 503 && number == 1 {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [("x-order", "not taken")],
            Json(json!({"busy": true})),
        );
    }
    if charge.amount == 99 {
        shop.gate.pass().await;
    }
    (
        StatusCode::CREATED,
        [("x-order", "kept")],
        Json(json!({"order": number, "amount": charge.amount})),
    )
}

/// Think for too long: never answers.
#[halo(timeout_ms = 150)]
#[utoipa::path(get, path = "/slow", responses((status = 200)))]
async fn slow(State(shop): State<Shop>) -> &'static str {
    let running = shop.unfinished.running();
    std::future::pending::<()>().await;
    running.finished();
    "finally"
}

/// Think for a while, with no deadline of its own: never answers either.
#[utoipa::path(get, path = "/slowish", responses((status = 200)))]
async fn slowish(State(shop): State<Shop>) -> &'static str {
    let running = shop.unfinished.running();
    std::future::pending::<()>().await;
    running.finished();
    "done"
}

#[derive(OpenApi)]
#[openapi(info(title = "Shop", version = "1"), modifiers(&BearerScheme))]
struct Doc;

fn serve(shop: &Shop, configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> App {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(charge))
        .routes(routes!(order))
        .routes(routes!(slow))
        .routes(routes!(slowish))
        .split_for_parts();
    let auth = StaticAuthenticator::new()
        .bearer("alice", Principal::new("alice"))
        .bearer("bob", Principal::new("bob"));
    let layer = configure(
        HaloLayer::builder(api)
            .authenticator(auth)
            .validate(Validation::On),
    )
    .build()
    .unwrap();
    App::new(router.with_state(shop.clone()).layer(layer))
}

/// `POST path` with `body`, as `token`'s holder (anonymous when `None`).
fn post(app: &App, path: &str, token: Option<&str>, body: &Value) -> Call {
    app.post(path).caller(token).json(body)
}

#[tokio::test]
async fn a_rate_is_a_budget_per_caller_and_denied_callers_spend_none() {
    let shop = Shop::default();
    let app = serve(&shop, |b| b);
    // Refused callers first: bad credentials and invalid input spend nothing.
    for _ in 0..5 {
        let answer = post(&app, "/charge", Some("mallory"), &json!({"amount": 5}))
            .send()
            .await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        let answer = post(&app, "/charge", Some("alice"), &json!({"amount": 0}))
            .send()
            .await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    }
    for left in [2, 1, 0] {
        let answer = post(&app, "/charge", Some("alice"), &json!({"amount": 5}))
            .send()
            .await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.header("ratelimit-policy"), "\"charge\";q=3;w=60");
        assert_eq!(
            answer.header("ratelimit"),
            format!("\"charge\";r={left};t=0")
        );
    }
    let answer = post(&app, "/charge", Some("alice"), &json!({"amount": 5}))
        .send()
        .await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = answer.header("retry-after").parse().unwrap();
    assert!((1..=20).contains(&retry_after), "{retry_after}");
    assert_eq!(
        answer.header("ratelimit"),
        format!("\"charge\";r=0;t={retry_after}")
    );
    assert_eq!(answer.header("content-type"), "application/problem+json");
    assert_eq!(shop.count(), 3, "the refused call never ran");
    // Bob has a budget of his own.
    let answer = post(&app, "/charge", Some("bob"), &json!({"amount": 5}))
        .send()
        .await;
    assert_eq!(answer.status, StatusCode::OK);
}

#[tokio::test]
async fn a_keyed_request_runs_once_and_replays() {
    let shop = Shop::default();
    let app = serve(&shop, |b| b);
    let keyed = |key: &str, amount: u32| {
        post(&app, "/orders", None, &json!({"amount": amount})).header("idempotency-key", key)
    };
    let first = keyed("k1", 10).send().await;
    assert_eq!(first.status, StatusCode::CREATED);
    assert_eq!(first.header("x-order"), "kept");
    assert!(first.headers.get("idempotent-replayed").is_none());

    let again = keyed("k1", 10).send().await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_eq!(again.header("x-order"), "kept");
    assert_eq!(again.header("idempotent-replayed"), "true");
    assert_eq!(again.body, first.body, "the identical response");
    assert_eq!(shop.count(), 1, "the side effect happened once");

    let other = keyed("k1", 11).send().await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);
    // Without a key, every request runs.
    post(&app, "/orders", None, &json!({"amount": 10}))
        .send()
        .await;
    assert_eq!(shop.count(), 2);

    // While the first is still running (held at the gate), a repeat is a conflict.
    let slow = tokio::spawn(keyed("k2", 99).send());
    shop.gate.arrivals(1).await;
    let racing = keyed("k2", 99).send().await;
    assert_eq!(racing.status, StatusCode::CONFLICT);
    shop.gate.let_through(1);
    assert_eq!(slow.await.unwrap().status, StatusCode::CREATED);
    assert_eq!(keyed("k2", 99).send().await.status, StatusCode::CREATED);
    assert_eq!(shop.count(), 3);

    // The schema advertises the header.
    let schemas = app.discover("/orders").send().await;
    assert_eq!(schemas.status, StatusCode::OK);
    assert_eq!(
        schemas.json()[0]["limits"]["idempotency_key"],
        "Idempotency-Key"
    );
}

#[tokio::test(start_paused = true)]
async fn a_handler_past_its_deadline_is_dropped_with_504() {
    let shop = Shop::default();
    let app = serve(&shop, |b| b.default_timeout(Duration::from_millis(200)));
    let started = Instant::now();
    let answer = app.get("/slow").send().await;
    assert_eq!(answer.status, StatusCode::GATEWAY_TIMEOUT);
    let elapsed = started.elapsed();
    assert!(
        (Duration::from_millis(150)..Duration::from_secs(2)).contains(&elapsed),
        "answered at the deadline: {elapsed:?}"
    );
    assert!(answer.detail().contains("150 ms"), "{}", answer.body);

    // A streamed call ends with a tool_error instead.
    let text = app.get("/slow").streamed().send().await.body;
    assert!(
        text.contains("event: tool_error") && text.contains("\"status\":504"),
        "{text}"
    );

    // The layer's default deadline covers tools that declare none.
    let answer = app.get("/slowish").send().await;
    assert_eq!(answer.status, StatusCode::GATEWAY_TIMEOUT);
    // The dropped handlers never finished: each was dropped while it was still running.
    shop.unfinished.wait(3).await;
}

#[tokio::test]
async fn keys_work_without_validation_too() {
    let shop = Shop::default();
    let app = serve(&shop, |b| b.validate(Validation::Off));
    let keyed = |amount: u32| {
        post(&app, "/orders", None, &json!({"amount": amount})).header("idempotency-key", "k")
    };
    let first = keyed(3).send().await.body;
    let again = keyed(3).send().await;
    assert_eq!(again.header("idempotent-replayed"), "true");
    assert_eq!(again.body, first);
    assert_eq!(
        keyed(4).send().await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(shop.count(), 1);
}

#[tokio::test]
async fn an_answer_that_invites_a_retry_is_not_kept() {
    let shop = Shop::default();
    let app = serve(&shop, |b| b);
    let keyed =
        || post(&app, "/orders", None, &json!({"amount": 503})).header("idempotency-key", "k");
    assert_eq!(keyed().send().await.status, StatusCode::SERVICE_UNAVAILABLE);
    let retried = keyed().send().await;
    assert_eq!(retried.status, StatusCode::CREATED, "the retry ran");
    assert!(retried.headers.get("idempotent-replayed").is_none());
    assert_eq!(keyed().send().await.header("idempotent-replayed"), "true");
    assert_eq!(shop.count(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_audit_trail_has_one_line_per_call() {
    let path = std::env::temp_dir().join(format!("halo-audit-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let sink = halo_axum::JsonLinesSink::open(&path).unwrap();
    let shop = Shop::default();
    let app = serve(&shop, {
        let sink = sink.clone();
        move |b| b.audit(sink).audit_arguments(true)
    });
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0736ad-00f067aa0ba902b7-01";
    let charge =
        |token: &str, amount: u32| post(&app, "/charge", Some(token), &json!({"amount": amount}));
    charge("mallory", 5).send().await; // denied
    charge("alice", 0).send().await; // invalid
    for _ in 0..4 {
        charge("alice", 5)
            .header("traceparent", traceparent)
            .header("x-request-id", "req-1")
            .send()
            .await; // executed ×3, then rate-limited
    }
    let keyed =
        || post(&app, "/orders", None, &json!({"amount": 7})).header("idempotency-key", "k");
    keyed().send().await; // executed
    keyed().send().await; // replayed
    app.get("/slow").send().await; // timed out
    // Not described: no record.
    app.get("/nowhere").send().await;
    sink.flush();

    let text = std::fs::read_to_string(&path).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let outcomes: Vec<&str> = records
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "denied",
            "invalid",
            "executed",
            "executed",
            "executed",
            "rate_limited",
            "executed",
            "replayed",
            "timed_out"
        ]
    );
    let executed = &records[2];
    assert_eq!(executed["tool"], "charge");
    assert_eq!(executed["method"], "POST");
    assert_eq!(executed["path"], "/charge");
    assert_eq!(executed["status"], 200);
    assert_eq!(executed["caller"], "alice");
    assert_eq!(executed["request_id"], "req-1");
    assert_eq!(executed["trace_id"], "4bf92f3577b34da6a3ce929d0e0736ad");
    assert_eq!(executed["arguments"], json!({"amount": 5}));
    assert!(executed["latency_ms"].as_f64().unwrap() >= 0.0);
    assert!(executed["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(records[0]["status"], 401);
    assert_eq!(records[0]["caller"], Value::Null);
    assert_eq!(records[5]["status"], 429);
    assert_eq!(records[7]["idempotency_key"], "k");
    assert_eq!(records[8]["status"], 504);
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn idempotency_keys_are_short_visible_tokens() {
    let shop = Shop::default();
    let app = serve(&shop, |b| b);
    let keyed = |key: String| {
        post(&app, "/orders", None, &json!({"amount": 10})).header("idempotency-key", key)
    };
    for bad in [String::new(), "k".repeat(256), "two words".to_owned()] {
        let refused = keyed(bad.clone()).send().await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{bad:?}");
        assert!(
            refused.detail().contains("Idempotency-Key"),
            "{}",
            refused.body
        );
    }
    assert_eq!(shop.count(), 0, "no refused key ran its call");
    let longest = keyed("k".repeat(255)).send().await;
    assert_eq!(longest.status, StatusCode::CREATED);
    assert_eq!(shop.count(), 1);
}
