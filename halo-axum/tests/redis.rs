//! Rate budgets and idempotency records shared through a real Redis by two instances of one
//! API, over real HTTP; and what each does while Redis is down. Needs `redis-server` (see
//! `halo_tests::redis`).
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use common::audit::Records;
use common::client::Answer;
use common::gate::{Gate, Runs};
use halo_axum::{
    Fallback, HaloLayer, Principal, Progress, RedisStore, StaticAuthenticator, ValidJson,
    Validation, halo,
};
use halo_tests::BearerScheme;
use halo_tests::shared_redis::SharedRedis;
use halo_tests::{TestServer, spawn};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

/// One instance's state: how many orders and charges its handlers took, a gate that holds
/// the `amount: 77` orders (and the second step of `/work`) until the test opens it, and the
/// instance's audit records.
#[derive(Debug, Clone, Default)]
struct Instance {
    runs: Runs,
    charges: Runs,
    gate: Gate,
    audit: Records,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
struct Amount {
    #[schema(minimum = 1)]
    amount: u32,
}

/// Charge a card.
#[halo(rate = "3/minute")]
#[utoipa::path(post, path = "/charge", request_body = Amount, responses((status = 200)),
    security(("bearer" = [])))]
async fn charge(State(instance): State<Instance>, ValidJson(_): ValidJson<Amount>) -> Json<Value> {
    let run = instance.charges.add();
    Json(json!({"charged": run}))
}

/// Place an order, once per key. An order of 77 waits for the test's gate.
#[halo(idempotency_key = "Idempotency-Key")]
#[utoipa::path(post, path = "/orders", request_body = Amount, responses((status = 201)),
    security(("bearer" = [])))]
async fn order(
    State(instance): State<Instance>,
    ValidJson(order): ValidJson<Amount>,
) -> (StatusCode, [(&'static str, &'static str); 1], Json<Value>) {
    let run = instance.runs.add();
    if order.amount == 77 {
        instance.gate.pass().await;
    }
    (
        StatusCode::CREATED,
        [("x-order", "kept")],
        Json(json!({"order": run, "amount": order.amount})),
    )
}

/// Work in two steps; the second waits for the test's gate.
#[halo(stream = true)]
#[utoipa::path(post, path = "/work", responses((status = 200)), security(("bearer" = [])))]
async fn work(State(instance): State<Instance>, progress: Progress) -> Json<Value> {
    instance.runs.add();
    progress.step(1, Some(2), "first");
    instance.gate.pass().await;
    progress.step(2, Some(2), "second");
    Json(json!({"done": true}))
}

#[derive(OpenApi)]
#[openapi(info(title = "Shop", version = "1"), modifiers(&BearerScheme))]
struct Doc;

/// Serves one instance of the API with `store`.
async fn serve(instance: &Instance, store: RedisStore) -> TestServer {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(charge))
        .routes(routes!(order))
        .routes(routes!(work))
        .split_for_parts();
    let layer = HaloLayer::builder(api)
        .authenticator(
            StaticAuthenticator::new()
                .bearer("alice", Principal::new("alice"))
                .bearer("bob", Principal::new("bob")),
        )
        .redis(store)
        .audit(instance.audit.clone())
        .validate(Validation::On)
        .build()
        .unwrap();
    spawn(router.with_state(instance.clone()).layer(layer)).await
}

/// Runs each test on one Redis server and on a Redis Cluster (`<test>::server`,
/// `<test>::cluster`).
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use halo_tests::shared_redis::SharedRedis;

            #[tokio::test]
            async fn server() {
                super::$name(SharedRedis::server()).await;
            }

            #[tokio::test]
            async fn cluster() {
                super::$name(SharedRedis::cluster()).await;
            }
        }
    )*};
}

on_both!(
    two_instances_spend_one_budget_with_the_same_headers,
    a_key_runs_once_across_instances_409_while_it_runs_422_for_another_body,
    while_redis_is_down_keys_are_refused_rates_go_local_and_a_finished_response_is_kept,
    operators_see_a_store_that_does_not_answer,
    a_refusing_rate_fallback_answers_503_and_a_local_key_fallback_runs,
    a_stream_started_on_one_instance_resumes_live_on_the_other,
    events_sent_while_redis_is_down_reach_it_in_order_when_it_is_back
);

/// A store on `redis` (a cluster's when it is one), with keys under `prefix`.
fn store(redis: &SharedRedis, prefix: &str) -> RedisStore {
    let store = match redis {
        SharedRedis::Server(server) => RedisStore::open(&server.url()),
        SharedRedis::Cluster(cluster) => RedisStore::open_cluster(cluster.urls()),
    };
    store.unwrap().prefix(prefix)
}

/// Two instances sharing `redis`, each with its own state.
async fn two(
    redis: &SharedRedis,
    configure: impl Fn(RedisStore) -> RedisStore,
) -> [(TestServer, Instance); 2] {
    let mut pair = Vec::new();
    for _ in 0..2 {
        let instance = Instance::default();
        let store = configure(store(redis, "shop:"));
        pair.push((serve(&instance, store).await, instance));
    }
    pair.try_into().unwrap()
}

async fn post(server: &TestServer, path: &str, key: Option<&str>, body: Value) -> Answer {
    post_to(server.url(path), key, body).await
}

/// `POST url` as alice, with the idempotency key when given.
async fn post_to(url: String, key: Option<&str>, body: Value) -> Answer {
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth("alice")
        .json(&body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    Answer::read(request.send().await.unwrap()).await
}

/// Waits until `check` holds, at most 10 s: for what depends on Redis coming back.
async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    halo_tests::wait::eventually(what, Duration::from_secs(10), check).await;
}

/// A 503 for an unreachable store: problem+json, Retry-After, and nothing of the URL.
fn assert_unavailable(answer: &Answer, redis: &SharedRedis) {
    answer.assert_problem(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.header("retry-after"), "1");
    let problem = answer.json();
    assert_eq!(problem["status"], 503);
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains("cannot be reached"), "{detail}");
    let ports: Vec<String> = redis
        .urls()
        .iter()
        .map(|url| {
            url.rsplit(':')
                .next()
                .unwrap()
                .trim_end_matches('/')
                .to_owned()
        })
        .collect();
    let secrets = [redis.password(), "redis://", "127.0.0.1"];
    for secret in secrets.into_iter().chain(ports.iter().map(String::as_str)) {
        assert!(
            !answer.body.contains(secret),
            "{secret} leaked: {}",
            answer.body
        );
        assert!(
            !answer.headers.values().any(|v| v
                .as_bytes()
                .windows(secret.len())
                .any(|w| w == secret.as_bytes())),
            "{secret} leaked into a header"
        );
    }
}

async fn two_instances_spend_one_budget_with_the_same_headers(redis: SharedRedis) {
    let [(a, _), (b, _)] = two(&redis, |store| store).await;
    for (base, left) in [(&a, 2), (&b, 1), (&a, 0)] {
        let answer = post(base, "/charge", None, json!({"amount": 5})).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert_eq!(answer.header("ratelimit-policy"), "\"charge\";q=3;w=60");
        assert_eq!(
            answer.header("ratelimit"),
            format!("\"charge\";r={left};t=0")
        );
    }
    for base in [&b, &a] {
        let answer = post(base, "/charge", None, json!({"amount": 5})).await;
        assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
        let retry_after: u64 = answer.header("retry-after").parse().unwrap();
        // One call frees up every 20 s, timed by Redis's clock.
        assert!((19..=20).contains(&retry_after), "{retry_after}");
        assert_eq!(
            answer.header("ratelimit"),
            format!("\"charge\";r=0;t={retry_after}")
        );
        assert_eq!(answer.header("content-type"), "application/problem+json");
    }
    // Invalid input spends nothing, on either instance.
    let answer = post(&b, "/charge", None, json!({"amount": 0})).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        redis
            .command_for(
                "shop:rate:charge:p:alice",
                &["EXISTS", "shop:rate:charge:p:alice"]
            )
            .as_deref(),
        Some(":1")
    );
}

async fn a_key_runs_once_across_instances_409_while_it_runs_422_for_another_body(
    redis: SharedRedis,
) {
    let [(a, on_a), (b, on_b)] = two(&redis, |store| store).await;
    let first = tokio::spawn(post_to(
        a.url("/orders"),
        Some("k-1"),
        json!({"amount": 77}),
    ));
    on_a.gate.arrivals(1).await;
    let running = post(&b, "/orders", Some("k-1"), json!({"amount": 77})).await;
    running.assert_problem(StatusCode::CONFLICT);
    let other = post(&b, "/orders", Some("k-1"), json!({"amount": 78})).await;
    assert_eq!(
        other.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        other.body
    );

    on_a.gate.let_through(1);
    let first = first.await.unwrap();
    assert_eq!(first.status, StatusCode::CREATED);
    assert_eq!(first.header("idempotent-replayed"), "");
    let replayed = post(&b, "/orders", Some("k-1"), json!({"amount": 77})).await;
    assert_eq!(replayed.status, StatusCode::CREATED);
    assert_eq!(replayed.header("idempotent-replayed"), "true");
    assert_eq!(replayed.header("x-order"), "kept");
    assert_eq!(replayed.body, first.body, "the same bytes");
    let other = post(&b, "/orders", Some("k-1"), json!({"amount": 78})).await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        (on_a.runs.count(), on_b.runs.count()),
        (1, 0),
        "the order ran once, on A"
    );
}

async fn while_redis_is_down_keys_are_refused_rates_go_local_and_a_finished_response_is_kept(
    mut redis: SharedRedis,
) {
    let [(a, on_a), (b, on_b)] = two(&redis, |store| store).await;
    let kept = post(&a, "/orders", Some("before"), json!({"amount": 5})).await;
    assert_eq!(kept.status, StatusCode::CREATED);
    // An order is running on A when Redis goes away.
    let running = tokio::spawn(post_to(
        a.url("/orders"),
        Some("during"),
        json!({"amount": 77}),
    ));
    on_a.gate.arrivals(1).await;
    assert_eq!(on_a.runs.count(), 2);
    redis.stop();

    // A new key is refused before its handler runs; so is a replay Redis holds.
    let refused = post(&b, "/orders", Some("new"), json!({"amount": 5})).await;
    assert_unavailable(&refused, &redis);
    let refused = post(&b, "/orders", Some("before"), json!({"amount": 5})).await;
    assert_unavailable(&refused, &redis);
    assert_eq!(on_b.runs.count(), 0);
    assert_eq!(on_b.audit.outcomes(), ["unavailable", "unavailable"]);
    // Rates fall back to each instance's own budget.
    let charged = post(&b, "/charge", None, json!({"amount": 5})).await;
    assert_eq!(charged.status, StatusCode::OK, "{}", charged.body);
    assert_eq!(charged.header("ratelimit"), "\"charge\";r=2;t=0");

    // The running order ends while Redis is down: its caller gets the answer, and A keeps it.
    on_a.gate.let_through(1);
    let during = running.await.unwrap();
    assert_eq!(during.status, StatusCode::CREATED, "{}", during.body);
    let again = post(&a, "/orders", Some("during"), json!({"amount": 77})).await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_eq!(again.header("idempotent-replayed"), "true");
    assert_eq!(again.body, during.body);
    let other = post(&a, "/orders", Some("during"), json!({"amount": 76})).await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);

    // Back up: the record from before the outage is there, and the one made during it
    // reaches Redis, so B replays both.
    redis.start_again();
    for (key, amount, first) in [("before", 5, &kept), ("during", 77, &during)] {
        eventually("B replays the kept response", || async {
            let replay = post(&b, "/orders", Some(key), json!({"amount": amount})).await;
            if replay.status == StatusCode::CREATED {
                assert_eq!(replay.header("idempotent-replayed"), "true");
                assert_eq!(replay.body, first.body);
                return true;
            }
            // Until then: 503 (Redis paused after the failure) or 409 (not written yet).
            assert!(
                [StatusCode::SERVICE_UNAVAILABLE, StatusCode::CONFLICT].contains(&replay.status),
                "{}: {}",
                replay.status,
                replay.body
            );
            false
        })
        .await;
    }
    assert_eq!(
        (on_a.runs.count(), on_b.runs.count()),
        (2, 0),
        "no order ran twice"
    );
}

/// What an operator sees of a store that stops answering: the readiness probe turns `503`,
/// each failed operation is counted in `halo_store_errors_total` by store and operation and
/// logged (one warning, however many fail, naming the store, the operation and the node, and
/// never a password); and when the store is back, the probe is ready again without a restart.
async fn operators_see_a_store_that_does_not_answer(mut redis: SharedRedis) {
    let (log, _logging) = common::log::capture();
    #[cfg(feature = "prometheus")]
    let prometheus = common::prometheus();
    let instance = Instance::default();
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(order))
        .split_for_parts();
    let layer = HaloLayer::builder(api)
        .authenticator(StaticAuthenticator::new().bearer("alice", Principal::new("alice")))
        .redis(store(&redis, "ops:"))
        .build()
        .unwrap();
    let readiness = layer.readiness();
    let app = router.with_state(instance.clone()).layer(layer).route(
        "/ready",
        axum::routing::get(move || {
            let readiness = readiness.clone();
            async move { readiness.answer().await }
        }),
    );
    let server = spawn(app).await;
    let ready = || async { reqwest::get(server.url("/ready")).await.unwrap() };
    let answer = ready().await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(
        answer.json::<Value>().await.unwrap(),
        json!({"ready": true})
    );

    redis.stop();
    for key in ["k-1", "k-2", "k-3"] {
        let refused = post(&server, "/orders", Some(key), json!({"amount": 5})).await;
        assert_unavailable(&refused, &redis);
    }
    // The node: the server's address, or (every node being down, none can name the
    // holder of the key's slot) the slot.
    let node = match &redis {
        SharedRedis::Server(server) => format!("node=127.0.0.1:{}", server.port()),
        SharedRedis::Cluster(_) => " of the cluster".to_owned(),
    };
    let warning = |line: &&str| line.contains("the shared store did not answer");
    eventually("the failure is logged", || async {
        log.text().lines().any(|line| warning(&line))
    })
    .await;
    let text = log.text();
    let warnings: Vec<&str> = text.lines().filter(warning).collect();
    assert_eq!(warnings.len(), 1, "{text}");
    for part in [r#"store="idempotency""#, r#"operation="claim""#, &node] {
        assert!(warnings[0].contains(part), "{part} in {text}");
    }
    assert!(!text.contains(redis.password()), "{text}");
    let answer = ready().await;
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.headers()["retry-after"], "1");
    let text = answer.text().await.unwrap();
    for url in redis.urls() {
        assert!(!text.contains(&url), "{text}");
    }
    #[cfg(feature = "prometheus")]
    {
        let metrics = prometheus.render();
        let counted = metrics.lines().any(|line| {
            line.starts_with("halo_store_errors_total")
                && line.contains(r#"store="idempotency""#)
                && line.contains(r#"operation="claim""#)
        });
        assert!(counted, "{metrics}");
    }
    assert_eq!(instance.runs.count(), 0);

    redis.start_again();
    eventually("ready again", || async {
        ready().await.status() == StatusCode::OK
    })
    .await;
}

async fn a_refusing_rate_fallback_answers_503_and_a_local_key_fallback_runs(
    mut redis: SharedRedis,
) {
    let [(a, on_a), _] = two(&redis, |store| {
        store
            .rate_fallback(Fallback::Refuse)
            .idempotency_fallback(Fallback::Local)
            .timeout(Duration::from_millis(300))
    })
    .await;
    redis.stop();
    let refused = post(&a, "/charge", None, json!({"amount": 5})).await;
    assert_unavailable(&refused, &redis);
    assert!(refused.body.contains("rate budgets"), "{}", refused.body);
    assert_eq!(on_a.charges.count(), 0);
    assert_eq!(on_a.audit.outcomes(), ["unavailable"]);
    let local = post(&a, "/orders", Some("k"), json!({"amount": 5})).await;
    assert_eq!(local.status, StatusCode::CREATED);
    let again = post(&a, "/orders", Some("k"), json!({"amount": 5})).await;
    assert_eq!(again.header("idempotent-replayed"), "true");
    assert_eq!(again.body, local.body);
    assert_eq!(on_a.runs.count(), 1);
}

/// `POST /work` as `token`, asking for an event stream; resuming `call` after `last` when given.
fn work_stream(
    server: &TestServer,
    token: &str,
    resume: Option<(&str, &str)>,
) -> reqwest::RequestBuilder {
    let mut request = reqwest::Client::new()
        .post(server.url("/work"))
        .bearer_auth(token)
        .header("accept", "text/event-stream");
    if let Some((call, last)) = resume {
        request = request
            .header("halo-call-id", call)
            .header("last-event-id", last);
    }
    request
}

/// The ids of the events in an event-stream text.
fn event_ids(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|line| line.strip_prefix("id: "))
        .map(|id| id.parse().unwrap())
        .collect()
}

async fn a_stream_started_on_one_instance_resumes_live_on_the_other(mut redis: SharedRedis) {
    let [(a, on_a), (b, on_b)] = two(&redis, |store| store).await;
    let mut started = work_stream(&a, "alice", None).send().await.unwrap();
    assert_eq!(started.status(), StatusCode::OK);
    let call = started.headers()["halo-call-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut received = String::new();
    while event_ids(&received).len() < 2 {
        let chunk = started.chunk().await.unwrap().unwrap();
        received.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    drop(started);
    assert_eq!(event_ids(&received), [1, 2]);

    // B replays what it missed, and goes on live while A's handler still waits.
    let mut resumed = work_stream(&b, "alice", Some((&call, "1")))
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    assert_eq!(resumed.headers()["halo-call-id"], call.as_str());
    assert_eq!(resumed.headers()["content-type"], "text/event-stream");
    let mut text = String::new();
    while event_ids(&text).is_empty() {
        let chunk = resumed.chunk().await.unwrap().unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert_eq!(event_ids(&text), [2]);
    on_a.gate.let_through(1);
    while let Some(chunk) = resumed.chunk().await.unwrap() {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert_eq!(event_ids(&text), [2, 3, 4], "{text}");
    assert!(text.contains("event: tool_end"), "{text}");
    assert!(text.contains("\"done\":true"), "{text}");
    assert_eq!(
        (on_a.runs.count(), on_b.runs.count()),
        (1, 0),
        "the handler ran once, on A"
    );

    // The whole call again from B; not for another caller, an unknown call, or a future id.
    let all = work_stream(&b, "alice", Some((&call, "0")))
        .send()
        .await
        .unwrap();
    assert_eq!(event_ids(&all.text().await.unwrap()), [1, 2, 3, 4]);
    for (token, id, last) in [
        ("bob", call.as_str(), "1"),
        ("alice", "c-unknown", "1"),
        ("alice", call.as_str(), "9"),
    ] {
        let refused = work_stream(&b, token, Some((id, last)))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::GONE, "{token} {id} {last}");
    }
    // Redis down: B cannot tell, and says so.
    redis.stop();
    let down = work_stream(&b, "alice", Some((&call, "1")))
        .send()
        .await
        .unwrap();
    assert_unavailable(&Answer::read(down).await, &redis);
}

async fn events_sent_while_redis_is_down_reach_it_in_order_when_it_is_back(mut redis: SharedRedis) {
    let [(a, on_a), (b, _)] = two(&redis, |store| store).await;
    let started = work_stream(&a, "alice", None).send().await.unwrap();
    let call = started.headers()["halo-call-id"]
        .to_str()
        .unwrap()
        .to_owned();
    redis.stop();
    // The call ends while Redis is down; its own client gets every event from memory.
    on_a.gate.let_through(1);
    let text = started.text().await.unwrap();
    assert_eq!(event_ids(&text), [1, 2, 3, 4], "{text}");

    redis.start_again();
    eventually("B replays the events copied after the outage", || async {
        let resumed = work_stream(&b, "alice", Some((&call, "0")))
            .send()
            .await
            .unwrap();
        if resumed.status() != StatusCode::OK {
            // Until B and A reach Redis again.
            assert!(
                [StatusCode::SERVICE_UNAVAILABLE, StatusCode::GONE].contains(&resumed.status()),
                "{}",
                resumed.status()
            );
            return false;
        }
        let replayed = resumed.text().await.unwrap();
        assert_eq!(replayed, text, "the same events, in order");
        true
    })
    .await;
}
