//! Circuit breakers shared through a real Redis by two instances of one API, over real HTTP:
//! a circuit opened through one instance refuses on the other, its half-open probe is one call
//! across both, successful probes close it on both; and while Redis is down each instance
//! breaks alone, until Redis's state returns. The changes of state in the metrics, counted
//! once across instances. Needs `redis-server` (see `halo_tests::redis`).
//!
//! Cool-downs are real time here (Redis's clock times them), so they are short (1 s) and the
//! tests wait for what they can observe (a handler at a gate, Redis's state) rather than for
//! a time.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use common::audit::Records;
use common::client::Answer;
use common::gate::{Answering, Gate, Runs};
use common::prometheus;
use halo_axum::{HaloLayer, RedisStore, halo};
use halo_tests::redis::RedisServer;
use halo_tests::{TestServer, spawn};
use tokio::task::JoinHandle;
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

/// One instance's state: how many calls its handler ran, the gate a held call waits at, and
/// its audit records.
#[derive(Debug, Clone, Default)]
struct Instance {
    runs: Runs,
    gate: Gate,
    audit: Records,
}

/// Answer with the status asked for.
#[halo(circuit = "2/1s/2")]
#[utoipa::path(get, path = "/flaky", params(Answering), responses((status = 200)))]
async fn flaky(State(instance): State<Instance>, Query(query): Query<Answering>) -> StatusCode {
    instance.runs.add();
    if query.hold {
        instance.gate.pass().await;
    }
    StatusCode::from_u16(query.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// Answer with the status asked for; a long cool-down, so that a circuit open in an
/// instance's own breaker stays open for the test.
#[halo(circuit = "2/60s/1")]
#[utoipa::path(get, path = "/fragile", params(Answering), responses((status = 200)))]
async fn fragile(State(instance): State<Instance>, Query(query): Query<Answering>) -> StatusCode {
    instance.runs.add();
    StatusCode::from_u16(query.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

#[derive(OpenApi)]
#[openapi(info(title = "Upstream", version = "1"))]
struct Doc;

/// Two instances sharing `redis` (key prefix `up:`, circuits read every 100 ms), each with its
/// own state; with metrics when `metered` (one test only: the recorder is the process's).
async fn two(redis: &RedisServer, metered: bool) -> [(TestServer, Instance); 2] {
    let mut pair = Vec::new();
    for _ in 0..2 {
        let instance = Instance::default();
        let store = RedisStore::open(&redis.url())
            .unwrap()
            .prefix("up:")
            .circuit_refresh(Duration::from_millis(100));
        let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
            .routes(routes!(flaky))
            .routes(routes!(fragile))
            .split_for_parts();
        let layer = HaloLayer::builder(api)
            .redis(store)
            .audit(instance.audit.clone())
            .metrics(metered)
            .build()
            .unwrap();
        let server = spawn(router.with_state(instance.clone()).layer(layer)).await;
        pair.push((server, instance));
    }
    pair.try_into().unwrap()
}

async fn get(server: &TestServer, status: u16) -> Answer {
    get_to(server.url(&format!("/flaky?status={status}"))).await
}

async fn get_to(url: String) -> Answer {
    Answer::read(reqwest::get(url).await.unwrap()).await
}

/// A `503` of an open (or half-open) circuit, with `Retry-After: 1`.
fn assert_refused(answer: &Answer) {
    answer.assert_problem(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.header("retry-after"), "1", "{}", answer.body);
    assert!(answer.detail().contains("circuit"), "{}", answer.body);
}

/// The state of `tool`'s circuit in Redis (`:0` closed, `:1` half-open, `:2` open).
fn shared(redis: &RedisServer, tool: &str) -> Option<String> {
    redis.command(&[
        "EVAL",
        "return tonumber(redis.call('HGET', KEYS[1], 's')) or -1",
        "1",
        &format!("up:{{circuits}}{tool}"),
    ])
}

async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    halo_tests::wait::eventually(what, Duration::from_secs(10), check).await;
}

/// Once the cool-down is over, a call held at `instance`'s gate (the `arrival`th there): the
/// probe. Calls refused before (`503`) are sent again.
async fn probe(server: &TestServer, instance: &Instance, arrival: usize) -> JoinHandle<Answer> {
    let url = server.url("/flaky?status=200&hold=true");
    halo_tests::wait::eventually_some("a probe gets through", Duration::from_secs(10), || {
        let call = tokio::spawn(get_to(url.clone()));
        async move {
            let mut call = call;
            tokio::select! {
                answer = &mut call => {
                    assert_refused(&answer.unwrap());
                    None
                }
                () = instance.gate.arrivals(arrival) => Some(call),
            }
        }
    })
    .await
}

/// The value of the sample `name{labels}` in the Prometheus text (labels in any order).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut wanted: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    wanted.sort();
    text.lines().find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let (metric, rest) = series.split_once('{')?;
        let mut got: Vec<String> = rest
            .strip_suffix('}')?
            .split(',')
            .map(str::to_owned)
            .collect();
        got.sort();
        (metric == name && got == wanted).then(|| value.parse().unwrap())
    })
}

#[tokio::test]
async fn a_circuit_opened_through_one_instance_refuses_on_the_other_and_one_probe_closes_it() {
    let metrics = prometheus();
    let redis = RedisServer::start();
    let [(a, on_a), (b, on_b)] = two(&redis, true).await;
    // B has read the shared state (closed) before A's failures.
    assert_eq!(get(&b, 200).await.status, StatusCode::OK);
    for _ in 0..2 {
        assert_eq!(get(&a, 500).await.status, StatusCode::INTERNAL_SERVER_ERROR);
    }
    eventually("the shared circuit opens", || async {
        shared(&redis, "flaky").as_deref() == Some(":2")
    })
    .await;
    assert_refused(&get(&a, 200).await);
    // B learns it from its refresh (every 100 ms), without a failure of its own.
    eventually("B refuses too", || async {
        get(&b, 200).await.status == StatusCode::SERVICE_UNAVAILABLE
    })
    .await;
    let refused = get(&b, 200).await;
    assert_refused(&refused);
    assert!(
        refused.detail().contains("2 times in a row"),
        "{}",
        refused.body
    );
    let ran = (on_a.runs.count(), on_b.runs.count());
    assert_eq!(get(&a, 200).await.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        (on_a.runs.count(), on_b.runs.count()),
        ran,
        "refused calls never run"
    );
    assert_eq!(on_b.audit.last_outcome(), "circuit_open");

    // After the cool-down, one probe at a time across both instances.
    let first = probe(&a, &on_a, 1).await;
    assert_eq!(shared(&redis, "flaky").as_deref(), Some(":1"), "half-open");
    for server in [&a, &b, &a, &b] {
        assert_refused(&get(server, 200).await);
    }
    let busy = get(&a, 200).await;
    assert!(busy.detail().contains("half-open"), "{}", busy.body);
    assert_eq!(on_a.runs.count(), ran.0 + 1, "only the probe ran");
    assert_eq!(on_b.runs.count(), ran.1);
    on_a.gate.let_through(1);
    assert_eq!(first.await.unwrap().status, StatusCode::OK);
    // The second successful probe (through B this time) closes it, for both.
    let second = probe(&b, &on_b, 1).await;
    assert_refused(&get(&a, 200).await);
    on_b.gate.let_through(1);
    assert_eq!(second.await.unwrap().status, StatusCode::OK);
    eventually("the shared circuit closes", || async {
        shared(&redis, "flaky").as_deref() == Some(":0")
    })
    .await;
    assert_eq!(get(&a, 200).await.status, StatusCode::OK);
    assert_eq!(get(&b, 200).await.status, StatusCode::OK);

    // Each change counted once across the instances, and the state as each sees it.
    let text = metrics.render();
    let changes = |to: &str| {
        sample(
            &text,
            "halo_circuit_transitions_total",
            &[("tool", "flaky"), ("to", to)],
        )
    };
    assert_eq!(changes("open"), Some(1.0), "{text}");
    assert_eq!(changes("half_open"), Some(1.0));
    assert_eq!(changes("closed"), Some(1.0));
    assert_eq!(
        sample(&text, "halo_circuit_state", &[("tool", "flaky")]),
        Some(0.0)
    );
    let refusals = sample(
        &text,
        "halo_tool_calls_total",
        &[
            ("tool", "flaky"),
            ("outcome", "circuit_open"),
            ("status", "5xx"),
        ],
    );
    assert!(refusals.is_some_and(|n| n >= 9.0), "{text}");
}

#[tokio::test]
async fn while_redis_is_down_each_instance_breaks_alone_until_redis_is_back() {
    let mut redis = RedisServer::start();
    let [(a, on_a), (b, _)] = two(&redis, false).await;
    let fragile =
        |server: &TestServer, status: u16| get_to(server.url(&format!("/fragile?status={status}")));
    assert_eq!(fragile(&a, 200).await.status, StatusCode::OK);
    assert_eq!(fragile(&b, 200).await.status, StatusCode::OK);
    redis.stop();
    // A's failures cannot be shared: A's own breaker counts them, and opens.
    for _ in 0..2 {
        let answer = fragile(&a, 500).await;
        assert_eq!(
            answer.status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "{}",
            answer.body
        );
    }
    eventually("A opens alone", || async {
        fragile(&a, 200).await.status == StatusCode::SERVICE_UNAVAILABLE
    })
    .await;
    let ran = on_a.runs.count();
    let refused = fragile(&a, 200).await;
    refused.assert_problem(StatusCode::SERVICE_UNAVAILABLE);
    let retry_after: u64 = refused.header("retry-after").parse().unwrap();
    assert!((50..=60).contains(&retry_after), "{retry_after}");
    assert_eq!(on_a.runs.count(), ran);
    // B's circuit stays closed: it saw no failure.
    assert_eq!(fragile(&b, 200).await.status, StatusCode::OK);

    // Redis is back: its state (closed: nothing was counted there) replaces A's own, long
    // before A's own cool-down would have ended.
    redis.start_again();
    eventually("A takes Redis's state again", || async {
        fragile(&a, 200).await.status == StatusCode::OK
    })
    .await;
    assert_eq!(
        shared(&redis, "fragile").as_deref(),
        Some(":-1"),
        "never written"
    );
    // And the circuit is shared again: A's failures open it for B.
    for _ in 0..2 {
        assert_eq!(
            fragile(&a, 500).await.status,
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }
    eventually("the shared circuit opens", || async {
        shared(&redis, "fragile").as_deref() == Some(":2")
    })
    .await;
    eventually("B refuses after A's failures", || async {
        fragile(&b, 200).await.status == StatusCode::SERVICE_UNAVAILABLE
    })
    .await;
}
