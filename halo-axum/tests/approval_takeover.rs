//! Approvals kept in Redis whose instance stopped, over real HTTP on loopback: with the app
//! given to the layer (`HaloLayer::take_over_with`), a call held on an instance that then
//! stops stays pending, and once approved runs on another instance, exactly once, as its
//! caller; what is kept for that holds no credential and is gone once the call ran. Without
//! it, such an approval expires and never runs. With its instance alive, that instance runs
//! it as before. Needs `redis-server` (see `halo_tests::redis`).
//!
//! An instance counts as stopped when its heartbeat in Redis lapses: set to 1 s here, and
//! the tests wait for the lapse with a deadline.
#![cfg(feature = "redis")]
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::time::Duration;

use common::approvals::{self, ALICE, APPROVALS, Api, CAROL, redis_holds};
use common::client::Answer;
use halo_axum::ApprovalLimits;
use halo_tests::redis::RedisServer;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// How long a test waits for a heartbeat to lapse, or a run to be seen.
const PATIENCE: Duration = Duration::from_secs(10);

/// A session cookie alice's calls carry: a credential that must not reach Redis.
const COOKIE: &str = "session=cookie-secret-77";

/// Instance `name` of the payments API on `redis` (prefix `pay:`, heartbeat 1 s), given
/// its app to run orphaned calls when `takes_over`.
async fn instance(redis: &RedisServer, name: &'static str, takes_over: bool) -> Api {
    let limits = ApprovalLimits::new().holder_timeout(Duration::from_secs(1));
    approvals::on_redis(redis, name, limits, takes_over).await
}

impl Api {
    /// `POST /refunds/{id}` by alice, with a session cookie and an idempotency key.
    async fn refund_with_cookie(&self, id: &str, key: &str) -> Answer {
        let request = self
            .http
            .post(self.server.url(&format!("/refunds/{id}")))
            .bearer_auth(ALICE)
            .header("cookie", COOKIE)
            .header("idempotency-key", key)
            .json(&json!({"amount": 20}));
        Answer::read(request.send().await.expect("an answer")).await
    }

    /// `POST {location}/approve` by carol.
    async fn approve(&self, location: &str) -> Answer {
        let url = self.server.url(&format!("{location}/approve"));
        let request = self.http.post(url).bearer_auth(CAROL);
        Answer::read(request.send().await.expect("an answer")).await
    }

    /// Stops the instance: its server and, with it, its layer, so its heartbeat lapses.
    async fn stop(self) {
        self.server.shutdown().await.expect("the instance stops");
    }

    fn runs(&self) -> usize {
        self.instance.runs.count()
    }
}

/// Asserts a `202` held call and gives its `Location`.
fn held(answer: &Answer) -> String {
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{}", answer.body);
    answer.header("location").to_owned()
}

/// Waits until no instance has a heartbeat in Redis (none holds approvals, or they stopped).
async fn heartbeats_lapse(redis: &RedisServer) {
    let count = "return #redis.call('KEYS', 'pay:{approvals}approval-replica:*')";
    halo_tests::wait::eventually("the heartbeats lapse", PATIENCE, || async {
        redis.command(&["EVAL", count, "0"]).as_deref() == Some(":0")
    })
    .await;
}

/// The answer the refund handler gives alice's refund 7 on instance `on`.
fn refunded_on(on: &str) -> Value {
    json!({"refund": "7", "amount": 20, "by": "alice", "on": on, "run": 1})
}

#[tokio::test]
async fn a_call_whose_instance_stopped_runs_once_on_the_instance_that_approves_it() {
    let redis = RedisServer::start();
    let a = instance(&redis, "a", true).await;
    let b = instance(&redis, "b", true).await;
    let location = held(&a.refund_with_cookie("7", "k-take").await);
    // What B needs to run it is kept, without the caller's credentials.
    assert!(redis_holds(&redis, "idempotency-key:k-take"));
    assert!(!redis_holds(&redis, ALICE), "a bearer token in Redis");
    assert!(!redis_holds(&redis, "cookie-secret"), "a cookie in Redis");

    a.stop().await;
    heartbeats_lapse(&redis).await;
    // Its holder gone, it still waits: it can run elsewhere.
    let read = b.get(&location, ALICE).await.json();
    assert_eq!(read["state"], "pending", "{read}");

    let approved = b.approve(&location).await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.body);
    let approved = approved.json();
    assert_eq!(approved["state"], "approved", "{approved}");
    assert_eq!(approved["decided_by"], "carol");
    assert_eq!(approved["response"]["status"], 200, "{approved}");
    // The handler ran on B, once, as alice.
    assert_eq!(approved["response"]["body"], refunded_on("b"));
    assert_eq!(b.runs(), 1);
    let read = b.get(&location, ALICE).await.json();
    assert_eq!(read["response"]["body"], refunded_on("b"), "{read}");
    assert_eq!(b.instance.audit.outcomes(), ["approved", "executed"]);
    let executed = b.instance.audit.all().last().cloned().expect("a record");
    assert_eq!(executed.decided_by.as_deref(), Some("carol"));
    assert_eq!(executed.caller.as_deref(), Some("alice"));

    // Once it ran, the kept request is gone; deciding again runs nothing.
    assert!(!redis_holds(&redis, "idempotency-key:k-take"));
    b.approve(&location)
        .await
        .assert_problem(StatusCode::CONFLICT);
    // Alice asking again with the key on B gets the kept answer, not a second run.
    let again = b.refund_with_cookie("7", "k-take").await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(again.json(), refunded_on("b"));
    assert_eq!(b.runs(), 1);
    assert!(!redis_holds(&redis, ALICE), "a bearer token in Redis");
}

#[tokio::test]
async fn without_the_app_a_call_whose_instance_stopped_expires_and_never_runs() {
    let redis = RedisServer::start();
    let a = instance(&redis, "a", false).await;
    let b = instance(&redis, "b", false).await;
    let location = held(&a.refund_with_cookie("7", "k-keep").await);
    // Nothing but what the approver sees is kept: the request stays in A's memory.
    assert!(!redis_holds(&redis, "idempotency-key:k-keep"));
    a.stop().await;
    heartbeats_lapse(&redis).await;
    let read = b.get(&location, ALICE).await.json();
    assert_eq!(read["state"], "expired", "{read}");
    b.approve(&location)
        .await
        .assert_problem(StatusCode::CONFLICT);
    assert_eq!(b.runs(), 0);
}

#[tokio::test]
async fn a_call_whose_instance_is_alive_runs_there() {
    let redis = RedisServer::start();
    let a = instance(&redis, "a", true).await;
    let b = instance(&redis, "b", true).await;
    let location = held(&a.refund_with_cookie("7", "k-alive").await);
    let approved = b.approve(&location).await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.body);
    assert_eq!(approved.json()["response"]["body"], refunded_on("a"));
    assert_eq!((a.runs(), b.runs()), (1, 0));
    assert!(!redis_holds(&redis, "idempotency-key:k-alive"));
}

#[tokio::test]
async fn instances_racing_to_take_over_a_call_run_it_once() {
    let redis = RedisServer::start();
    let a = instance(&redis, "a", true).await;
    let (b, c) = (
        instance(&redis, "b", true).await,
        instance(&redis, "c", true).await,
    );
    // D may approve, but has no app to run the call with: it waits for another to.
    let d = instance(&redis, "d", false).await;
    let location = held(&a.refund_with_cookie("7", "k-race").await);
    a.stop().await;
    heartbeats_lapse(&redis).await;

    let approving = d.approve(&location);
    let reading = halo_tests::wait::eventually_some("a run", PATIENCE, || async {
        // B and C both find it approved and orphaned, and both try to take it over.
        let (on_b, on_c) = tokio::join!(b.get(&location, ALICE), c.get(&location, ALICE));
        [on_b.json(), on_c.json()]
            .into_iter()
            .find(|read| read["response"].is_object())
    });
    let (approved, ran) = tokio::join!(approving, reading);
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.body);
    assert_eq!(b.runs() + c.runs(), 1, "run once");
    assert_eq!(d.runs(), 0);
    let on = if b.runs() == 1 { "b" } else { "c" };
    assert_eq!(ran["response"]["body"], refunded_on(on));
    assert_eq!(approved.json()["response"]["body"], refunded_on(on));
    assert_eq!(d.get(APPROVALS, CAROL).await.json()["approvals"], json!([]));
}
