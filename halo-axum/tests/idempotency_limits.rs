//! The bounds on kept idempotency records, on calls made in process: a caller past its quota
//! gets `429`, a full store `503`, both with `Retry-After` and without running the handler;
//! keys already kept replay whatever the fullness; room comes back when records expire (on
//! Tokio's paused clock, which the in-memory store keeps time by). With the `redis` feature,
//! the per-caller quota shared by two instances through a real Redis (needs `redis-server`,
//! see `halo_tests::redis`), on the real clock.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use common::audit::Records;
use common::client::{Answer, App};
use common::gate::Runs;
use halo_axum::{
    HaloBuilder, HaloLayer, IdempotencyLimits, Principal, StaticAuthenticator, ValidJson, halo,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

/// How many times the handler ran, and the audit records.
#[derive(Clone, Default)]
struct Shop {
    runs: Runs,
    audit: Records,
}

impl Shop {
    fn last_outcome(&self) -> String {
        self.audit.last_outcome()
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
struct Order {
    #[schema(minimum = 1)]
    amount: u32,
}

/// Place an order, once per key. An order of 503 is answered `503` (not kept).
#[halo(idempotency_key = "Idempotency-Key")]
#[utoipa::path(post, path = "/orders", request_body = Order, responses((status = 201)))]
async fn order(
    State(shop): State<Shop>,
    ValidJson(order): ValidJson<Order>,
) -> (StatusCode, [(&'static str, &'static str); 1], Json<Value>) {
    let run = shop.runs.add();
    let status = if order.amount == 503 {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::CREATED
    };
    (
        status,
        [("x-order", "kept")],
        Json(json!({"order": run, "amount": order.amount})),
    )
}

#[derive(OpenApi)]
#[openapi(info(title = "Shop", version = "1"))]
struct Doc;

/// The shop behind the layer as `configure` leaves the builder.
fn serve(shop: &Shop, configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> App {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(order))
        .split_for_parts();
    let auth = StaticAuthenticator::new()
        .bearer("alice", Principal::new("alice"))
        .bearer("bob", Principal::new("bob"))
        .bearer("carol", Principal::new("carol"));
    let builder = HaloLayer::builder(api)
        .authenticator(auth)
        .audit(shop.audit.clone());
    let layer = configure(builder).build().unwrap();
    App::new(router.with_state(shop.clone()).layer(layer))
}

/// `POST /orders` as `caller` (anonymous when `None`) with `key` and `amount`.
async fn order_as(app: &App, caller: Option<&str>, key: &str, amount: u32) -> Answer {
    app.post("/orders")
        .header("idempotency-key", key)
        .caller(caller)
        .json(&json!({"amount": amount}))
        .send()
        .await
}

fn retry_after(answer: &Answer) -> u64 {
    answer.header("retry-after").parse().unwrap()
}

/// A refusal for want of room: `status`, problem+json, `Retry-After` within the TTL, and a
/// detail that names no caller.
fn assert_refused(answer: &Answer, status: StatusCode, ttl: u64) {
    assert_eq!(answer.status, status, "{}", answer.body);
    assert_eq!(answer.header("content-type"), "application/problem+json");
    assert!(
        (1..=ttl).contains(&retry_after(answer)),
        "{}",
        retry_after(answer)
    );
    let detail = answer.detail();
    assert!(detail.contains("was not run"), "{detail}");
    for name in ["alice", "bob", "carol", "127.0.0.1"] {
        assert!(!answer.body.contains(name), "{name} in {}", answer.body);
    }
}

const TTL: Duration = Duration::from_secs(2);

#[tokio::test(start_paused = true)]
async fn a_full_caller_gets_429_a_full_store_503_and_kept_keys_still_replay() {
    let shop = Shop::default();
    let app = serve(&shop, |builder| {
        builder.idempotency_ttl(TTL).idempotency_limits(
            IdempotencyLimits::new()
                .per_caller(2)
                .records(3)
                .bytes(1 << 20),
        )
    });
    for key in ["a1", "a2"] {
        let answer = order_as(&app, Some("alice"), key, 5).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    }
    assert_eq!(shop.runs.count(), 2);
    // Alice's quota is used up: her third key is refused, and the handler does not run.
    let refused = order_as(&app, Some("alice"), "a3", 5).await;
    assert_refused(&refused, StatusCode::TOO_MANY_REQUESTS, TTL.as_secs());
    assert!(
        refused.detail().contains("this caller"),
        "{}",
        refused.detail()
    );
    assert_eq!(shop.last_outcome(), "rate_limited");
    assert_eq!(shop.runs.count(), 2, "a refused key never runs");
    // A call that is not kept (503 from the handler) gives its room back.
    let busy = order_as(&app, Some("bob"), "b0", 503).await;
    assert_eq!(busy.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(shop.runs.count(), 3);
    // Bob has a quota of his own, until the store as a whole is full.
    let answer = order_as(&app, Some("bob"), "b1", 5).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    assert_eq!(shop.runs.count(), 4);
    for caller in [Some("carol"), Some("bob"), None] {
        let refused = order_as(&app, caller, "c1", 5).await;
        assert_refused(&refused, StatusCode::SERVICE_UNAVAILABLE, TTL.as_secs());
        assert_eq!(shop.last_outcome(), "unavailable");
    }
    assert_eq!(shop.runs.count(), 4, "refused keys never run");
    // Keys already kept replay as usual, however full the store.
    for (caller, key) in [("alice", "a1"), ("alice", "a2"), ("bob", "b1")] {
        let again = order_as(&app, Some(caller), key, 5).await;
        assert_eq!(again.status, StatusCode::CREATED, "{}", again.body);
        assert_eq!(again.header("idempotent-replayed"), "true");
        assert_eq!(again.header("x-order"), "kept");
    }
    let mismatch = order_as(&app, Some("alice"), "a1", 6).await;
    assert_eq!(mismatch.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(shop.runs.count(), 4);
    // Once the records expire, there is room again, for everyone.
    tokio::time::advance(TTL + Duration::from_millis(100)).await;
    for (caller, key) in [(Some("carol"), "c1"), (Some("alice"), "a3"), (None, "n1")] {
        let answer = order_as(&app, caller, key, 5).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        assert!(answer.headers.get("idempotent-replayed").is_none());
    }
    assert_eq!(shop.runs.count(), 7);
}

#[tokio::test]
async fn anonymous_callers_share_the_quota_of_their_address() {
    let shop = Shop::default();
    let app = serve(&shop, |builder| {
        builder.idempotency_limits(IdempotencyLimits::new().per_caller(2))
    });
    for key in ["n1", "n2"] {
        let answer = order_as(&app, None, key, 5).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    }
    let refused = order_as(&app, None, "n3", 5).await;
    assert_refused(&refused, StatusCode::TOO_MANY_REQUESTS, 24 * 60 * 60);
    // The default TTL: a day until the oldest expires.
    assert!(retry_after(&refused) > 24 * 60 * 60 - 60);
    // A principal is a caller of its own, even from the same address.
    let answer = order_as(&app, Some("alice"), "n3", 5).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    assert_eq!(shop.runs.count(), 3);
}

#[tokio::test(start_paused = true)]
async fn the_byte_limit_refuses_new_keys_and_keeps_what_ran_without_its_body() {
    let shop = Shop::default();
    // Alice's record ("order\nalice\n" and an 80-byte key) takes 92 of the 100 bytes; her
    // response does not fit in the 8 left, so its status alone is kept.
    let app = serve(&shop, |builder| {
        builder
            .idempotency_ttl(TTL)
            .idempotency_limits(IdempotencyLimits::new().bytes(100))
    });
    let long = "k".repeat(80);
    let first = order_as(&app, Some("alice"), &long, 5).await;
    assert_eq!(first.status, StatusCode::CREATED);
    let whole = json!({"order": 1, "amount": 5});
    assert_eq!(first.json(), whole, "the caller gets it all");
    for key in [long.as_str(), "b"] {
        let refused = order_as(&app, Some("bob"), key, 5).await;
        assert_refused(&refused, StatusCode::SERVICE_UNAVAILABLE, TTL.as_secs());
    }
    assert_eq!(shop.runs.count(), 1);
    // The key never runs again: its repeat gets the status, without the body.
    let again = order_as(&app, Some("alice"), &long, 5).await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_eq!(again.header("idempotent-replayed"), "true");
    assert_eq!(again.body, "");
    assert_eq!(shop.runs.count(), 1);
    tokio::time::advance(TTL + Duration::from_millis(100)).await;
    let answer = order_as(&app, Some("bob"), "b", 5).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    // Bob's record ("order\nbob\nb", 11 bytes) leaves room for his whole response.
    let again = order_as(&app, Some("bob"), "b", 5).await;
    assert_eq!(again.header("idempotent-replayed"), "true");
    assert_eq!(again.json(), json!({"order": 2, "amount": 5}));
}

#[cfg(feature = "redis")]
mod shared {
    use halo_axum::RedisStore;
    use halo_tests::redis::RedisServer;

    use super::*;

    #[tokio::test]
    async fn two_instances_share_each_callers_quota_in_redis() {
        let redis = RedisServer::start();
        let limits = IdempotencyLimits::new().per_caller(2).records(3);
        let shop = Shop::default();
        let instances: Vec<App> = (0..2)
            .map(|_| {
                let store = RedisStore::open(&redis.url()).unwrap().prefix("shop:");
                serve(&shop, |builder| {
                    builder
                        .redis(store)
                        .idempotency_ttl(TTL)
                        .idempotency_limits(limits)
                })
            })
            .collect();
        let [a, b] = [&instances[0], &instances[1]];
        for (app, key) in [(a, "a1"), (b, "a2")] {
            let answer = order_as(app, Some("alice"), key, 5).await;
            assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        }
        // Alice's quota is counted in Redis: full on either instance.
        for app in [a, b] {
            let refused = order_as(app, Some("alice"), "a3", 5).await;
            assert_refused(&refused, StatusCode::TOO_MANY_REQUESTS, TTL.as_secs());
            assert_eq!(shop.last_outcome(), "rate_limited");
        }
        assert_eq!(shop.runs.count(), 2);
        // Kept keys replay through either instance; another caller has its own quota (the
        // totals are Redis's maxmemory, not counted here).
        let again = order_as(b, Some("alice"), "a1", 5).await;
        assert_eq!(again.header("idempotent-replayed"), "true");
        for key in ["b0", "b1", "b2"] {
            let amount = if key == "b0" { 503 } else { 5 };
            let answer = order_as(a, Some("bob"), key, amount).await;
            assert_ne!(
                answer.status,
                StatusCode::TOO_MANY_REQUESTS,
                "{}",
                answer.body
            );
        }
        // Bob's 503 was not kept, so it took none of his quota.
        let refused = order_as(b, Some("bob"), "b3", 5).await;
        assert_refused(&refused, StatusCode::TOO_MANY_REQUESTS, TTL.as_secs());
        assert_eq!(shop.runs.count(), 5);
        // Once the records expire (on Redis's clock: this waits in real time), so do the
        // quotas, and Redis keeps nothing. A refusal for the quota changes nothing in Redis,
        // so asking again until the quota has room is asking once it has.
        let answer = halo_tests::wait::eventually_some(
            "Alice's records expire, and her quota with them",
            TTL + Duration::from_secs(5),
            || async {
                let answer = order_as(b, Some("alice"), "a3", 5).await;
                (answer.status != StatusCode::TOO_MANY_REQUESTS).then_some(answer)
            },
        )
        .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        // Redis deletes expired keys within a moment of their expiry.
        halo_tests::wait::eventually(
            "Redis deletes the expired keys",
            TTL + Duration::from_secs(5),
            || async { redis.command(&["DBSIZE"]).as_deref() == Some(":0") },
        )
        .await;
    }
}
