//! Two `bookstore` processes sharing one Redis (`--redis URL`, `HALO_REDIS`): one charge budget
//! and one record per idempotency key; and what they answer while Redis is down. Needs
//! `redis-server` (see `halo_tests::redis`).

use crate::support;

use std::process::Command;
use std::time::Duration;

use halo_tests::redis::RedisServer;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use support::process::Bookstore;
use support::{expect_problem, send};

/// Two bookstores on one Redis: A told by `--redis`, B by `HALO_REDIS`.
fn two(redis: &RedisServer) -> (Bookstore, Bookstore) {
    let url = redis.url();
    (
        Bookstore::start(&["--redis", &url], &[]),
        Bookstore::start(&[], &[("HALO_REDIS", &url)]),
    )
}

fn replayed(headers: &HeaderMap) -> bool {
    headers
        .get("idempotent-replayed")
        .is_some_and(|value| value == "true")
}

/// Waits until `check` holds, at most 10 s.
async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    halo_tests::wait::eventually(what, Duration::from_secs(10), check).await;
}

#[tokio::test]
async fn two_bookstores_share_the_charge_budget() {
    let redis = RedisServer::start();
    let (a, b) = two(&redis);
    for (store, order_id) in [(&a, 1), (&a, 2), (&a, 3), (&b, 4), (&b, 5)] {
        let (status, headers, body) = send(store.charge(order_id)).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "the handler ran: {body}"
        );
        assert!(headers.contains_key("ratelimit"));
    }
    for store in [&a, &b] {
        let (headers, problem) = expect_problem(store.charge(6), 429).await;
        let retry_after: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=12).contains(&retry_after), "{retry_after}");
        assert!(problem["detail"].as_str().unwrap().contains("rate"));
    }
}

#[tokio::test]
async fn an_order_placed_on_one_bookstore_is_replayed_by_the_other() {
    let redis = RedisServer::start();
    let (a, b) = two(&redis);
    let (status, placed_headers, placed) = send(a.order("order-1", 1)).await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    assert!(!replayed(&placed_headers));
    let id = placed["id"].as_u64().unwrap();

    let (status, headers, again) = send(b.order("order-1", 1)).await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(replayed(&headers), "{headers:?}");
    assert_eq!(again, placed, "A's order, not a new one");
    assert_eq!(headers["location"], placed_headers["location"]);
    assert_eq!(headers["content-type"], placed_headers["content-type"]);
    // B never placed it: its store does not have it, and its own first order gets the id A's
    // first order got.
    expect_problem(b.get_order(id), 404).await;
    let (status, _, own) = send(b.order("order-2", 1)).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(own["id"].as_u64(), Some(id));

    // The key with another order, on either bookstore: 422.
    for store in [&a, &b] {
        expect_problem(store.order("order-1", 2), 422).await;
    }
}

#[tokio::test]
async fn while_redis_is_down_keyed_orders_get_503_and_after_it_returns_the_records_are_there() {
    let mut redis = RedisServer::start();
    let (a, b) = two(&redis);
    let (status, _, placed) = send(a.order("before", 1)).await;
    assert_eq!(status, StatusCode::CREATED);
    for order_id in 1..=5 {
        let (status, _, _) = send(b.charge(order_id)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    }
    redis.stop();

    // Keyed orders are refused before they run, replays included; nothing leaks of the URL.
    for (store, key) in [(&a, "new"), (&b, "before")] {
        let (headers, problem) = expect_problem(store.order(key, 1), 503).await;
        assert_eq!(headers["retry-after"], "1");
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.contains("cannot be reached"), "{detail}");
        let text = problem.to_string();
        for secret in [redis.password(), "redis://", "127.0.0.1"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
    }
    // Charges go on with each bookstore's own budget, which counts only the outage.
    let (status, headers, _) = send(a.charge(6)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(headers["ratelimit"].to_str().unwrap().contains("r=4"));

    redis.start_again();
    eventually("the order kept before the outage is replayed", || async {
        let (status, headers, again) = send(b.order("before", 1)).await;
        if status == StatusCode::SERVICE_UNAVAILABLE {
            return false;
        }
        assert_eq!(status, StatusCode::CREATED);
        assert!(replayed(&headers));
        assert_eq!(again, placed);
        true
    })
    .await;
    // So is the budget spent before it (A may answer from its own budget until it has
    // reconnected).
    eventually("A sees the shared budget again", || async {
        let (status, _, _) = send(a.charge(7)).await;
        status == StatusCode::TOO_MANY_REQUESTS
    })
    .await;
    // B's own first order still gets the first id: it never ran A's.
    let (_, _, own) = send(b.order("after", 1)).await;
    assert_eq!(own["id"], placed["id"]);
}

#[test]
fn a_bad_redis_url_stops_the_bookstore_without_repeating_it() {
    let output = Command::new(env!("CARGO_BIN_EXE_bookstore"))
        .args([
            "--addr",
            "127.0.0.1:0",
            "--redis",
            "http://user:s3cret@host/",
        ])
        .env("RUST_LOG", "off")
        .output()
        .expect("run bookstore");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid Redis URL"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
}
