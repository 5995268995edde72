//! What schemas declare, enforced over real HTTP: rate limits per caller and tool, replays of
//! keyed requests, deadlines.
#![allow(missing_docs, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use halo_axum::{HaloBuilder, HaloLayer, Principal, StaticAuthenticator, ValidJson, halo};
use halo_tests::BearerScheme;
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

#[derive(Clone, Default)]
struct Counter(Arc<AtomicUsize>);

impl Counter {
    fn next(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
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
async fn charge(
    State(counter): State<Counter>,
    ValidJson(charge): ValidJson<Charge>,
) -> Json<Value> {
    Json(json!({"charge": counter.next(), "amount": charge.amount}))
}

/// Place an order, once per key.
#[halo(idempotency_key = "Idempotency-Key")]
#[utoipa::path(post, path = "/orders", request_body = Charge, responses((status = 201)))]
async fn order(
    State(counter): State<Counter>,
    ValidJson(charge): ValidJson<Charge>,
) -> (StatusCode, [(&'static str, &'static str); 1], Json<Value>) {
    let number = counter.next();
    if charge.amount == 503 && number == 1 {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [("x-order", "not taken")],
            Json(json!({"busy": true})),
        );
    }
    if charge.amount == 99 {
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    (
        StatusCode::CREATED,
        [("x-order", "kept")],
        Json(json!({"order": number, "amount": charge.amount})),
    )
}

/// Think for too long.
#[halo(timeout_ms = 150)]
#[utoipa::path(get, path = "/slow", responses((status = 200)))]
async fn slow(State(counter): State<Counter>) -> &'static str {
    tokio::time::sleep(Duration::from_secs(3)).await;
    counter.next();
    "finally"
}

/// Think for a while, with no deadline of its own.
#[utoipa::path(get, path = "/slowish", responses((status = 200)))]
async fn slowish() -> &'static str {
    tokio::time::sleep(Duration::from_millis(600)).await;
    "done"
}

#[derive(OpenApi)]
#[openapi(info(title = "Shop", version = "1"), modifiers(&BearerScheme))]
struct Doc;

async fn serve(counter: &Counter, configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> String {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(charge))
        .routes(routes!(order))
        .routes(routes!(slow))
        .routes(routes!(slowish))
        .split_for_parts();
    let auth = StaticAuthenticator::new()
        .bearer("alice", Principal::new("alice"))
        .bearer("bob", Principal::new("bob"));
    let layer = configure(HaloLayer::builder(api).authenticator(auth).validate(true))
        .build()
        .unwrap();
    let app = router.with_state(counter.clone()).layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    format!("http://{addr}")
}

fn post(base: &str, path: &str, token: Option<&str>, body: Value) -> reqwest::RequestBuilder {
    let request = reqwest::Client::new()
        .request(Method::POST, format!("{base}{path}"))
        .json(&body);
    match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_rate_is_a_budget_per_caller_and_denied_callers_spend_none() {
    let counter = Counter::default();
    let base = serve(&counter, |b| b).await;
    // Refused callers first: bad credentials and invalid input spend nothing.
    for _ in 0..5 {
        let response = post(&base, "/charge", Some("mallory"), json!({"amount": 5}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        let response = post(&base, "/charge", Some("alice"), json!({"amount": 0}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    }
    for left in [2, 1, 0] {
        let response = post(&base, "/charge", Some("alice"), json!({"amount": 5}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(header(&response, "ratelimit-policy"), "\"charge\";q=3;w=60");
        assert_eq!(
            header(&response, "ratelimit"),
            format!("\"charge\";r={left};t=0")
        );
    }
    let response = post(&base, "/charge", Some("alice"), json!({"amount": 5}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = header(&response, "retry-after").parse().unwrap();
    assert!((1..=20).contains(&retry_after), "{retry_after}");
    assert_eq!(
        header(&response, "ratelimit"),
        format!("\"charge\";r=0;t={retry_after}")
    );
    assert_eq!(
        header(&response, "content-type"),
        "application/problem+json"
    );
    assert_eq!(counter.count(), 3, "the refused call never ran");
    // Bob has a budget of his own.
    let response = post(&base, "/charge", Some("bob"), json!({"amount": 5}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_keyed_request_runs_once_and_replays() {
    let counter = Counter::default();
    let base = serve(&counter, |b| b).await;
    let keyed = |key: &str, amount: u32| {
        post(&base, "/orders", None, json!({"amount": amount}))
            .header("idempotency-key", key.to_owned())
    };
    let first = keyed("k1", 10).send().await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    assert_eq!(header(&first, "x-order"), "kept");
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first_body = first.text().await.unwrap();

    let again = keyed("k1", 10).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::CREATED);
    assert_eq!(header(&again, "x-order"), "kept");
    assert_eq!(header(&again, "idempotent-replayed"), "true");
    assert_eq!(
        again.text().await.unwrap(),
        first_body,
        "the identical response"
    );
    assert_eq!(counter.count(), 1, "the side effect happened once");

    let other = keyed("k1", 11).send().await.unwrap();
    assert_eq!(other.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // Without a key, every request runs.
    post(&base, "/orders", None, json!({"amount": 10}))
        .send()
        .await
        .unwrap();
    assert_eq!(counter.count(), 2);

    // While the first is still running, a repeat is a conflict.
    let slow = tokio::spawn(keyed("k2", 99).send());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let racing = keyed("k2", 99).send().await.unwrap();
    assert_eq!(racing.status(), StatusCode::CONFLICT);
    assert_eq!(slow.await.unwrap().unwrap().status(), StatusCode::CREATED);
    assert_eq!(
        keyed("k2", 99).send().await.unwrap().status(),
        StatusCode::CREATED
    );
    assert_eq!(counter.count(), 3);

    // The schema advertises the header.
    let schemas: Value = halo_tests::discover(&format!("{base}/orders"), None).await;
    assert_eq!(schemas[0]["limits"]["idempotency_key"], "Idempotency-Key");
}

#[tokio::test]
async fn a_handler_past_its_deadline_is_dropped_with_504() {
    let counter = Counter::default();
    let base = serve(&counter, |b| b.default_timeout(Duration::from_millis(200))).await;
    let started = Instant::now();
    let response = reqwest::get(format!("{base}/slow")).await.unwrap();
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "answered at the deadline"
    );
    let problem: Value = response.json().await.unwrap();
    assert!(
        problem["detail"].as_str().unwrap().contains("150 ms"),
        "{problem}"
    );

    // A streamed call ends with a tool_error instead.
    let text = reqwest::Client::new()
        .get(format!("{base}/slow"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("event: tool_error") && text.contains("\"status\":504"),
        "{text}"
    );

    // The layer's default deadline covers tools that declare none.
    let response = reqwest::get(format!("{base}/slowish")).await.unwrap();
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(counter.count(), 0, "the dropped handlers never finished");
}

#[tokio::test]
async fn keys_work_without_validation_too() {
    let counter = Counter::default();
    let base = serve(&counter, |b| b.validate(false)).await;
    let keyed = |amount: u32| {
        post(&base, "/orders", None, json!({"amount": amount})).header("idempotency-key", "k")
    };
    let first = keyed(3).send().await.unwrap().text().await.unwrap();
    let again = keyed(3).send().await.unwrap();
    assert_eq!(header(&again, "idempotent-replayed"), "true");
    assert_eq!(again.text().await.unwrap(), first);
    assert_eq!(
        keyed(4).send().await.unwrap().status(),
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(counter.count(), 1);
}

#[tokio::test]
async fn an_answer_that_invites_a_retry_is_not_kept() {
    let counter = Counter::default();
    let base = serve(&counter, |b| b).await;
    let keyed =
        || post(&base, "/orders", None, json!({"amount": 503})).header("idempotency-key", "k");
    assert_eq!(
        keyed().send().await.unwrap().status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    let retried = keyed().send().await.unwrap();
    assert_eq!(retried.status(), StatusCode::CREATED, "the retry ran");
    assert!(retried.headers().get("idempotent-replayed").is_none());
    assert_eq!(
        header(&keyed().send().await.unwrap(), "idempotent-replayed"),
        "true"
    );
    assert_eq!(counter.count(), 2);
}

#[tokio::test]
async fn the_audit_trail_has_one_line_per_call() {
    let path = std::env::temp_dir().join(format!("halo-audit-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let sink = halo_axum::JsonLinesSink::open(&path).unwrap();
    let counter = Counter::default();
    let base = serve(&counter, {
        let sink = sink.clone();
        move |b| b.audit(sink).audit_arguments(true)
    })
    .await;
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0736ad-00f067aa0ba902b7-01";
    let charge =
        |token: &str, amount: u32| post(&base, "/charge", Some(token), json!({"amount": amount}));
    charge("mallory", 5).send().await.unwrap(); // denied
    charge("alice", 0).send().await.unwrap(); // invalid
    for _ in 0..4 {
        charge("alice", 5)
            .header("traceparent", traceparent)
            .header("x-request-id", "req-1")
            .send()
            .await
            .unwrap(); // executed ×3, then rate-limited
    }
    let keyed =
        || post(&base, "/orders", None, json!({"amount": 7})).header("idempotency-key", "k");
    keyed().send().await.unwrap(); // executed
    keyed().send().await.unwrap(); // replayed
    reqwest::get(format!("{base}/slow")).await.unwrap(); // timed out
    // Not described: no record.
    reqwest::get(format!("{base}/nowhere")).await.unwrap();
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
    let counter = Counter::default();
    let base = serve(&counter, |b| b).await;
    let keyed = |key: String| {
        post(&base, "/orders", None, json!({"amount": 10})).header("idempotency-key", key)
    };
    for bad in [String::new(), "k".repeat(256), "two words".to_owned()] {
        let refused = keyed(bad.clone()).send().await.unwrap();
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{bad:?}");
        assert_eq!(header(&refused, "content-type"), "application/problem+json");
        let problem: Value = refused.json().await.unwrap();
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .contains("Idempotency-Key"),
            "{problem}"
        );
    }
    assert_eq!(counter.count(), 0, "no refused key ran its call");
    let longest = keyed("k".repeat(255)).send().await.unwrap();
    assert_eq!(longest.status(), StatusCode::CREATED);
    assert_eq!(counter.count(), 1);
}
