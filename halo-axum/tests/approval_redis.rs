//! Approvals kept in Redis, shared by two instances of one API over real HTTP on loopback:
//! a call held on one is listed, read and decided on the other, and run exactly once across
//! both (by the instance that holds it); both read the answer, and a streamed caller gets
//! the call's own events or the denial; an idempotency key repeated on the other instance
//! finds the same approval; expiry is seen from both and recorded once, also for an approval
//! whose instance stopped; a call withdrawn by its caller on the other instance never runs
//! (its stream ends cancelled), and a withdrawal racing an approval has one winner; no
//! credential reaches Redis; with Redis down nothing is held, decided or run. Needs `redis-server` (see `halo_tests::redis`).
//!
//! Expiry is timed by Redis's clock (real time), so it is short (1 s), and the tests poll
//! for what they can only observe (a state in Redis) with a deadline.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::time::Duration;

use common::approvals::{self, ALICE, APPROVALS, Api, CAROL, redis_holds, rest, streamed_refund};
use common::client::Answer;
use halo_axum::ApprovalLimits;
use halo_tests::redis::RedisServer;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Two instances, `a` and `b`, sharing `redis` (key prefix `pay:`), with `limits`.
async fn two(redis: &RedisServer, limits: ApprovalLimits) -> (Api, Api) {
    let a = approvals::on_redis(redis, "a", limits, false).await;
    (a, approvals::on_redis(redis, "b", limits, false).await)
}

impl Api {
    /// `POST /refunds/{id}` by alice.
    async fn refund(&self, id: &str, amount: u32, key: Option<&str>) -> Answer {
        let mut request = self
            .http
            .post(self.server.url(&format!("/refunds/{id}")))
            .bearer_auth(ALICE)
            .json(&json!({"amount": amount}));
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        Answer::read(request.send().await.expect("an answer")).await
    }

    /// `POST {location}/{action}` by carol.
    async fn decide(&self, location: &str, action: &str, body: Option<&Value>) -> Answer {
        let mut request = self
            .http
            .post(self.server.url(&format!("{location}/{action}")))
            .bearer_auth(CAROL);
        if let Some(body) = body {
            request = request.json(body);
        }
        Answer::read(request.send().await.expect("an answer")).await
    }

    /// `DELETE {location}` by alice: the call withdrawn.
    async fn withdraw(&self, location: &str) -> Answer {
        let request = self
            .http
            .delete(self.server.url(location))
            .bearer_auth(ALICE);
        Answer::read(request.send().await.expect("an answer")).await
    }

    fn count(&self, outcome: &str) -> usize {
        let outcomes = self.instance.audit.outcomes();
        outcomes.iter().filter(|o| o.as_str() == outcome).count()
    }
}

/// Asserts a `202` held call and gives its `Location`.
fn held(answer: &Answer) -> String {
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{}", answer.body);
    let doc = answer.json();
    assert_eq!(doc["state"], "pending", "{doc}");
    answer.header("location").to_owned()
}

#[tokio::test]
async fn a_call_held_on_one_instance_is_approved_on_the_other_and_run_once() {
    let redis = RedisServer::start();
    let (a, b) = two(&redis, ApprovalLimits::new()).await;
    let location = held(&a.refund("7", 20, None).await);
    // The credentials of the call are not stored; what the approver sees is.
    assert!(!redis_holds(&redis, ALICE), "a credential in Redis");
    assert!(redis_holds(&redis, "/refunds/7"));

    // B lists it and reads it, as A does.
    let list = b.get(APPROVALS, CAROL).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    let listed = &list.json()["approvals"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["href"], location.as_str());
    assert_eq!(listed[0]["caller"], "alice");
    assert_eq!(listed[0]["arguments"], json!({"amount": 20}));
    assert_eq!(b.get(&location, ALICE).await.json()["state"], "pending");

    // Approved on B, which has not served the tool: A, which holds it, runs it, once, as
    // alice; B answers once it ran.
    let approved = b.decide(&location, "approve", None).await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.body);
    let approved = approved.json();
    assert_eq!(approved["state"], "approved");
    assert_eq!(approved["decided_by"], "carol", "{approved}");
    assert_eq!(approved["response"]["status"], 200, "{approved}");
    let expected = json!({"refund": "7", "amount": 20, "by": "alice", "on": "a", "run": 1});
    assert_eq!(approved["response"]["body"], expected);
    assert_eq!((a.instance.runs.count(), b.instance.runs.count()), (1, 0));

    // Both show the answer; deciding again is refused on either, and runs nothing.
    for api in [&a, &b] {
        let read = api.get(&location, ALICE).await.json();
        assert_eq!(read["state"], "approved", "{read}");
        assert_eq!(read["response"]["body"], expected);
        api.decide(&location, "approve", None)
            .await
            .assert_problem(StatusCode::CONFLICT);
    }
    assert_eq!(b.get(APPROVALS, CAROL).await.json()["approvals"], json!([]));
    assert_eq!(a.instance.runs.count() + b.instance.runs.count(), 1);
    assert_eq!(
        a.instance.audit.outcomes(),
        ["approval_requested", "executed"]
    );
    assert_eq!(b.instance.audit.outcomes(), ["approved"]);
    assert!(!redis_holds(&redis, ALICE), "a credential in Redis");
}

#[tokio::test]
async fn an_approval_whose_instance_stopped_expires_and_never_runs() {
    let redis = RedisServer::start();
    let (a, b) = two(&redis, ApprovalLimits::new()).await;
    let location = held(&a.refund("7", 20, None).await);
    let Api { server, .. } = a;
    server.shutdown().await.expect("A stops");
    // A's heartbeat would lapse in 30 s; gone at once here.
    let forget = "for _, key in ipairs(redis.call('KEYS', 'pay:{approvals}approval-replica:*')) do \
                  redis.call('DEL', key) end return 0";
    halo_tests::wait::eventually("expired without A", Duration::from_secs(10), || async {
        assert!(redis.command(&["EVAL", forget, "0"]).is_some());
        b.get(&location, ALICE).await.json()["state"] == "expired"
    })
    .await;
    let late = b.decide(&location, "approve", None).await;
    late.assert_problem(StatusCode::CONFLICT);
    assert_eq!(b.count("approval_expired"), 1);
    assert_eq!(b.instance.runs.count(), 0);
}

#[tokio::test]
async fn a_call_denied_on_one_instance_is_refused_to_its_caller_on_the_other() {
    let redis = RedisServer::start();
    let (a, b) = two(&redis, ApprovalLimits::new()).await;
    let location = held(&a.refund("8", 500, Some("k-8")).await);
    let reason = json!({"reason": "over the daily limit"});
    let denied = b.decide(&location, "deny", Some(&reason)).await;
    assert_eq!(denied.status, StatusCode::OK, "{}", denied.body);
    assert_eq!(denied.json()["state"], "denied");
    let read = a.get(&location, ALICE).await.json();
    assert_eq!(
        (&read["state"], &read["reason"]),
        (&json!("denied"), &json!("over the daily limit"))
    );
    // Its caller, asking again on A with the key: refused, with the reason.
    let again = a.refund("8", 500, Some("k-8")).await;
    again.assert_problem(StatusCode::FORBIDDEN);
    assert!(again.detail().contains("daily limit"), "{}", again.body);
    a.decide(&location, "approve", None)
        .await
        .assert_problem(StatusCode::CONFLICT);
    assert_eq!(a.instance.runs.count() + b.instance.runs.count(), 0);
}

#[tokio::test]
async fn approvals_on_both_instances_at_once_run_the_call_once() {
    let redis = RedisServer::start();
    let (a, b) = two(&redis, ApprovalLimits::new()).await;
    for round in 0..5 {
        let location = held(&a.refund(&round.to_string(), 1, None).await);
        let (on_a, on_b) = tokio::join!(
            a.decide(&location, "approve", None),
            b.decide(&location, "approve", None)
        );
        let mut statuses = [on_a.status, on_b.status];
        statuses.sort();
        assert_eq!(
            statuses,
            [StatusCode::OK, StatusCode::CONFLICT],
            "round {round}"
        );
        let loser = if on_a.status == StatusCode::CONFLICT {
            &on_a
        } else {
            &on_b
        };
        assert!(
            loser.detail().contains("approved already"),
            "{}",
            loser.body
        );
    }
    assert_eq!(a.instance.runs.count() + b.instance.runs.count(), 5);
    assert_eq!(a.count("executed") + b.count("executed"), 5);
}

#[tokio::test]
async fn an_idempotency_key_finds_the_approval_on_any_instance() {
    let redis = RedisServer::start();
    let (a, b) = two(&redis, ApprovalLimits::new()).await;
    let first = held(&a.refund("7", 20, Some("k-1")).await);
    let again = b.refund("7", 20, Some("k-1")).await;
    assert_eq!(held(&again), first, "the same approval");
    b.refund("7", 21, Some("k-1"))
        .await
        .assert_problem(StatusCode::UNPROCESSABLE_ENTITY);
    let list = a.get(APPROVALS, CAROL).await.json();
    assert_eq!(
        list["approvals"].as_array().map(Vec::len),
        Some(1),
        "{list}"
    );
    // Approved on A (which holds it): run there; the repeat on B replays the answer.
    let approved = a.decide(&first, "approve", None).await.json();
    assert_eq!(approved["response"]["body"]["on"], "a");
    let replayed = b.refund("7", 20, Some("k-1")).await;
    assert_eq!(replayed.status, StatusCode::OK, "{}", replayed.body);
    assert_eq!(replayed.json(), approved["response"]["body"]);
    assert_eq!((a.instance.runs.count(), b.instance.runs.count()), (1, 0));
}

#[tokio::test]
async fn an_approval_nobody_decides_expires_on_both_instances_once() {
    let redis = RedisServer::start();
    let limits = ApprovalLimits::new().expire_after(Duration::from_secs(1));
    let (a, b) = two(&redis, limits).await;
    let location = held(&a.refund("7", 20, None).await);
    halo_tests::wait::eventually("expired on B", Duration::from_secs(10), || async {
        b.get(&location, ALICE).await.json()["state"] == "expired"
    })
    .await;
    assert_eq!(a.get(&location, ALICE).await.json()["state"], "expired");
    assert_eq!(a.get(APPROVALS, CAROL).await.json()["approvals"], json!([]));
    let late = b.decide(&location, "approve", None).await;
    late.assert_problem(StatusCode::CONFLICT);
    assert!(late.detail().contains("expired already"), "{}", late.body);
    // Recorded once, by whichever instance saw it due first.
    assert_eq!(a.count("approval_expired") + b.count("approval_expired"), 1);
    assert_eq!(a.instance.runs.count() + b.instance.runs.count(), 0);
}

#[tokio::test]
async fn with_redis_down_nothing_is_held_decided_or_run() {
    let mut redis = RedisServer::start();
    let (a, b) = two(&redis, ApprovalLimits::new()).await;
    let location = held(&a.refund("7", 20, None).await);
    redis.stop();
    let refused = a.refund("8", 20, None).await;
    refused.assert_problem(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.header("retry-after"), "1");
    assert!(!refused.body.contains(redis.password()), "{}", refused.body);
    for api in [&a, &b] {
        api.decide(&location, "approve", None)
            .await
            .assert_problem(StatusCode::SERVICE_UNAVAILABLE);
        api.get(APPROVALS, CAROL)
            .await
            .assert_problem(StatusCode::SERVICE_UNAVAILABLE);
        api.get(&location, ALICE)
            .await
            .assert_problem(StatusCode::SERVICE_UNAVAILABLE);
    }
    assert_eq!(a.instance.runs.count() + b.instance.runs.count(), 0);
    assert_eq!(
        a.count("unavailable"),
        1,
        "{:?}",
        a.instance.audit.outcomes()
    );
}

fn names(events: &[common::client::Event]) -> Vec<&str> {
    events.iter().map(|event| event.name.as_str()).collect()
}

#[tokio::test]
async fn a_streamed_caller_whose_call_is_denied_on_the_other_instance_gets_a_403() {
    let redis = RedisServer::start();
    let (a, b) = two(&redis, ApprovalLimits::new()).await;
    let (response, head, location) = streamed_refund(&a.http, &a.server, "9").await;
    let reason = json!({"reason": "not today"});
    let denied = b.decide(&location, "deny", Some(&reason)).await;
    assert_eq!(denied.status, StatusCode::OK, "{}", denied.body);
    let events = rest(response, &head).await;
    assert_eq!(
        names(&events),
        ["tool_start", "approval_pending", "tool_error"]
    );
    let error = &events[2].data["data"];
    assert_eq!(error["status"], 403, "{error}");
    assert!(
        error["detail"]
            .as_str()
            .is_some_and(|d| d.contains("not today"))
    );
    assert_eq!(a.instance.runs.count() + b.instance.runs.count(), 0);
}

#[tokio::test]
async fn a_streamed_caller_gets_its_own_events_when_its_instance_runs_the_call() {
    let redis = RedisServer::start();
    let (a, b) = two(&redis, ApprovalLimits::new()).await;
    let (response, head, location) = streamed_refund(&a.http, &a.server, "9").await;
    b.decide(&location, "approve", None).await;
    let events = rest(response, &head).await;
    assert_eq!(
        names(&events),
        [
            "tool_start",
            "approval_pending",
            "tool_progress",
            "tool_end"
        ]
    );
    assert_eq!(events[3].data["data"]["content"]["on"], "a");
    assert_eq!((a.instance.runs.count(), b.instance.runs.count()), (1, 0));
}

#[tokio::test]
async fn a_call_withdrawn_on_the_other_instance_never_runs_and_its_stream_ends() {
    let redis = RedisServer::start();
    let (a, b) = two(&redis, ApprovalLimits::new()).await;
    // Streamed on A, withdrawn on B: A's stream ends with the cancelled `tool_error`.
    let (response, head, location) = streamed_refund(&a.http, &a.server, "9").await;
    let withdrawn = b.withdraw(&location).await;
    assert_eq!(withdrawn.status, StatusCode::OK, "{}", withdrawn.body);
    let doc = withdrawn.json();
    assert_eq!(
        (&doc["state"], &doc["decided_by"]),
        (&json!("cancelled"), &json!("alice"))
    );
    assert_eq!(doc["reason"], "withdrawn by its caller");
    let events = rest(response, &head).await;
    assert_eq!(
        names(&events),
        ["tool_start", "approval_pending", "tool_error"]
    );
    assert_eq!(
        events[2].data["data"]["status"], 409,
        "{:?}",
        events[2].data
    );
    // Both read it cancelled; neither approves it, nor withdraws it again.
    for api in [&a, &b] {
        assert_eq!(api.get(&location, ALICE).await.json()["state"], "cancelled");
        let late = api.decide(&location, "approve", None).await;
        late.assert_problem(StatusCode::CONFLICT);
        assert!(late.detail().contains("cancelled already"), "{}", late.body);
        api.withdraw(&location)
            .await
            .assert_problem(StatusCode::CONFLICT);
    }
    // Without a stream: held on A, withdrawn on B, approved on A too late.
    let plain = held(&a.refund("8", 5, None).await);
    assert_eq!(b.withdraw(&plain).await.status, StatusCode::OK);
    a.decide(&plain, "approve", None)
        .await
        .assert_problem(StatusCode::CONFLICT);
    assert_eq!(a.instance.runs.count() + b.instance.runs.count(), 0);
    assert_eq!((a.count("cancelled"), b.count("cancelled")), (0, 2));
    let records = b.instance.audit.all();
    let record = records.iter().find(|r| r.outcome.as_str() == "cancelled");
    assert_eq!(record.and_then(|r| r.decided_by.as_deref()), Some("alice"));
}

#[tokio::test]
async fn a_withdrawal_racing_an_approval_on_the_other_instance_has_one_winner() {
    let redis = RedisServer::start();
    let (a, b) = two(&redis, ApprovalLimits::new()).await;
    for round in 0..5 {
        let location = held(&a.refund(&round.to_string(), 1, None).await);
        let (withdrawn, approved) =
            tokio::join!(b.withdraw(&location), a.decide(&location, "approve", None));
        approvals::assert_one_won(round, &withdrawn, &approved);
    }
    let approved = a.count("approved") + b.count("approved");
    let cancelled = a.count("cancelled") + b.count("cancelled");
    assert_eq!(approved + cancelled, 5);
    assert_eq!(a.instance.runs.count() + b.instance.runs.count(), approved);
}
