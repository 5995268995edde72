//! Approvals for risky tools, over real HTTP on loopback: a call of a tool whose schema says
//! `"effects": {"approval": "required"}` is answered `202` with its approval, runs exactly
//! once when an approver approves it, never when it is denied or expires; only its caller and
//! approvers see it; a retry with its idempotency key gets the same approval; what is kept is
//! bounded; without an approver the call is refused.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use common::approvals::{self, ALICE, APPROVALS, BOB, CAROL, Payments, Trail, streamed_refund};
use common::client::Answer;
use common::gate::Runs;
use halo_axum::protocol::Approval;
use halo_axum::{
    ApprovalLimits, ApprovalQueue, ApprovalRequest, ApprovalRule, Approver, Describe, HaloBuilder,
    Principal, Verdict, halo,
};
use halo_tests::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use utoipa_axum::routes;

/// Wipe the archive: irreversible, so a rule may ask for approval.
#[halo(reversible = false)]
#[utoipa::path(post, path = "/wipe", responses((status = 204)), security(("bearer" = [])))]
async fn wipe(State(runs): State<Runs>) -> axum::http::StatusCode {
    runs.add();
    axum::http::StatusCode::NO_CONTENT
}

/// The balance: no approval.
#[utoipa::path(get, path = "/balance", responses((status = 200)), security(("bearer" = [])))]
async fn balance(State(runs): State<Runs>) -> Json<Value> {
    Json(json!({"balance": 100, "run": runs.add()}))
}

struct Api {
    server: TestServer,
    runs: Runs,
    trail: Trail,
    http: reqwest::Client,
}

/// The payments API (with `wipe` and `balance`) behind a layer with the callers and an audit
/// trail, as `configure` builds it further.
async fn serve(configure: impl FnOnce(HaloBuilder) -> HaloBuilder) -> Api {
    let routes = approvals::payments()
        .routes(routes!(wipe))
        .routes(routes!(balance));
    let Payments {
        server,
        runs,
        trail,
    } = approvals::serve(routes, configure).await;
    Api {
        server,
        runs,
        trail,
        http: reqwest::Client::new(),
    }
}

/// With the approval queue decided by `approve`.
fn queue(builder: HaloBuilder) -> HaloBuilder {
    builder.approver(ApprovalQueue::new("approve"))
}

impl Api {
    async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
        key: Option<&str>,
    ) -> Answer {
        let mut request = self.http.request(method, self.server.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        Answer::read(request.send().await.expect("an answer")).await
    }

    /// `POST /refunds/{id}` by `token`.
    async fn refund(&self, token: &str, id: &str, amount: u32, key: Option<&str>) -> Answer {
        let body = json!({"amount": amount});
        let path = format!("/refunds/{id}");
        self.send(Method::POST, &path, Some(token), Some(&body), key)
            .await
    }

    async fn get(&self, path: &str, token: Option<&str>) -> Answer {
        self.send(Method::GET, path, token, None, None).await
    }

    /// `POST {location}/{action}` by `token`, with `body`.
    async fn decide(
        &self,
        location: &str,
        action: &str,
        token: &str,
        body: Option<&Value>,
    ) -> Answer {
        let path = format!("{location}/{action}");
        self.send(Method::POST, &path, Some(token), body, None)
            .await
    }
}

/// Asserts a `202` held call and gives its `Location`.
fn held(answer: &Answer) -> String {
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{}", answer.body);
    let location = answer.header("location").to_owned();
    let doc = answer.json();
    assert_eq!(doc["state"], "pending", "{doc}");
    assert_eq!(
        location,
        format!("{APPROVALS}/{}", doc["id"].as_str().expect("an id"))
    );
    assert_eq!(doc["href"], location.as_str());
    location
}

#[tokio::test]
async fn a_held_call_answers_202_and_runs_once_when_approved() {
    let api = serve(queue).await;
    let answer = api.refund(ALICE, "7", 20, None).await;
    let location = held(&answer);
    let doc = answer.json();
    assert_eq!(doc["tool"], "refund");
    assert_eq!(doc["call"], json!({"method": "POST", "url": "/refunds/7"}));
    assert_eq!(doc["arguments"], json!({"amount": 20}));
    assert_eq!(doc["caller"], "alice");
    assert!(
        doc["expires_at"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z'))
    );
    assert_eq!(answer.header("cache-control"), "no-store");
    assert_eq!(api.runs.count(), 0, "held, not run");

    // Its caller reads it; approvers list it.
    let read = api.get(&location, Some(ALICE)).await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.json()["state"], "pending");
    let list = api.get(APPROVALS, Some(CAROL)).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    let listed = &list.json()["approvals"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["id"], doc["id"]);
    assert_eq!(listed[0]["tool"], "refund");

    // Approved: it runs, as its caller, and the approver sees what it answered.
    let approved = api.decide(&location, "approve", CAROL, None).await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.body);
    let approved = approved.json();
    assert_eq!(approved["state"], "approved");
    assert_eq!(approved["decided_by"], "carol");
    assert_eq!(approved["response"]["status"], 200);
    let expected = json!({"refund": "7", "amount": 20, "by": "alice", "run": 1});
    assert_eq!(approved["response"]["body"], expected);
    assert_eq!(
        approved["response"]["headers"]["content-type"],
        "application/json"
    );
    assert_eq!(api.runs.count(), 1);

    // Its caller reads the answer; a second approval is refused and runs nothing.
    let read = api.get(&location, Some(ALICE)).await.json();
    assert_eq!(read["state"], "approved");
    assert_eq!(read["response"]["body"], expected);
    let again = api.decide(&location, "approve", CAROL, None).await;
    again.assert_problem(StatusCode::CONFLICT);
    assert!(
        again.detail().contains("approved already"),
        "{}",
        again.body
    );
    assert!(api.get(APPROVALS, Some(CAROL)).await.json()["approvals"] == json!([]));
    assert_eq!(api.runs.count(), 1, "exactly once");

    // The trail: requested, approved (by carol), run (as alice).
    assert_eq!(
        api.trail.outcomes(),
        ["approval_requested", "approved", "executed"]
    );
    let approval = api.trail.wait("approved").await;
    assert_eq!(approval.decided_by.as_deref(), Some("carol"));
    assert_eq!(approval.caller.as_deref(), Some("alice"));
    let run = api.trail.wait("executed").await;
    assert_eq!((run.caller.as_deref(), run.status), (Some("alice"), 200));
    assert_eq!(run.path, "/refunds/7");
}

#[tokio::test]
async fn a_denied_call_never_runs_and_its_caller_reads_why() {
    let api = serve(queue).await;
    let location = held(&api.refund(ALICE, "8", 500, None).await);
    let reason = json!({"reason": "over the daily limit"});
    let denied = api.decide(&location, "deny", CAROL, Some(&reason)).await;
    assert_eq!(denied.status, StatusCode::OK, "{}", denied.body);
    let read = api.get(&location, Some(ALICE)).await.json();
    assert_eq!(read["state"], "denied");
    assert_eq!(read["decided_by"], "carol");
    assert_eq!(read["reason"], "over the daily limit");
    assert!(read.get("response").is_none());
    // Decided: approving now changes nothing.
    let late = api.decide(&location, "approve", CAROL, None).await;
    late.assert_problem(StatusCode::CONFLICT);
    assert!(late.detail().contains("denied already"));
    assert_eq!(api.runs.count(), 0);
    let record = api.trail.wait("approval_denied").await;
    assert_eq!(record.decided_by.as_deref(), Some("carol"));
    // A decision's body is a JSON object.
    let other = held(&api.refund(ALICE, "9", 1, None).await);
    let bad = api
        .decide(&other, "deny", CAROL, Some(&json!(["no"])))
        .await;
    bad.assert_problem(StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn an_approval_nobody_decides_expires_as_denied() {
    let limits = ApprovalLimits::new().expire_after(Duration::from_secs(60));
    let api = serve(|b| queue(b).approval_limits(limits)).await;
    let location = held(&api.refund(ALICE, "7", 20, None).await);
    common::fast_forward(Duration::from_secs(59)).await;
    assert_eq!(
        api.get(&location, Some(ALICE)).await.json()["state"],
        "pending"
    );
    common::fast_forward(Duration::from_secs(2)).await;
    let record = api.trail.wait("approval_expired").await;
    assert_eq!(record.decided_by, None);
    assert_eq!(
        api.get(&location, Some(ALICE)).await.json()["state"],
        "expired"
    );
    assert_eq!(
        api.get(APPROVALS, Some(CAROL)).await.json()["approvals"],
        json!([])
    );
    let late = api.decide(&location, "approve", CAROL, None).await;
    late.assert_problem(StatusCode::CONFLICT);
    assert!(late.detail().contains("expired already"), "{}", late.body);
    assert_eq!(api.runs.count(), 0, "never run after expiry");
}

#[tokio::test]
async fn only_its_caller_and_approvers_see_an_approval() {
    let api = serve(queue).await;
    let location = held(&api.refund(ALICE, "7", 20, None).await);
    // Another caller: the approval does not exist for it.
    api.get(&location, Some(BOB))
        .await
        .assert_problem(StatusCode::NOT_FOUND);
    // The list and the decisions are for approvers: `403` whatever the id, `401` without
    // credentials.
    api.get(APPROVALS, Some(BOB))
        .await
        .assert_problem(StatusCode::FORBIDDEN);
    api.get(APPROVALS, None)
        .await
        .assert_problem(StatusCode::UNAUTHORIZED);
    for token in [ALICE, BOB] {
        let refused = api.decide(&location, "approve", token, None).await;
        refused.assert_problem(StatusCode::FORBIDDEN);
    }
    let unknown = api
        .decide(&format!("{APPROVALS}/nope"), "approve", BOB, None)
        .await;
    unknown.assert_problem(StatusCode::FORBIDDEN);
    // An approver reads any approval; an unknown id is `404`.
    assert_eq!(api.get(&location, Some(CAROL)).await.status, StatusCode::OK);
    api.get(&format!("{APPROVALS}/nope"), Some(CAROL))
        .await
        .assert_problem(StatusCode::NOT_FOUND);
    // Nobody approves a call of their own.
    let own = held(&api.refund(CAROL, "8", 5, None).await);
    let refused = api.decide(&own, "approve", CAROL, None).await;
    refused.assert_problem(StatusCode::FORBIDDEN);
    // A method the resource does not take.
    let wrong = api
        .send(Method::PUT, &location, Some(CAROL), None, None)
        .await;
    wrong.assert_problem(StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong.header("allow"), "GET, HEAD, DELETE");
    assert_eq!(api.runs.count(), 0);
}

#[tokio::test]
async fn an_approver_may_allow_its_own_calls() {
    let api = serve(|b| b.approver(ApprovalQueue::new("approve").self_approval(true))).await;
    let own = held(&api.refund(CAROL, "8", 5, None).await);
    let approved = api.decide(&own, "approve", CAROL, None).await;
    assert_eq!(approved.json()["response"]["body"]["by"], "carol");
    assert_eq!(api.runs.count(), 1);
}

#[tokio::test]
async fn without_an_approver_a_call_that_needs_approval_is_refused() {
    let api = serve(|b| b).await;
    let refused = api.refund(ALICE, "7", 20, None).await;
    refused.assert_problem(StatusCode::FORBIDDEN);
    assert!(refused.detail().contains("no approver"), "{}", refused.body);
    assert_eq!(api.runs.count(), 0, "never run");
    assert_eq!(api.trail.outcomes(), ["denied"]);
    // No approvals are served: the path is the application's (which has none).
    let none = api.get(APPROVALS, Some(CAROL)).await;
    assert_eq!(none.status, StatusCode::NOT_FOUND);
    // A tool without approval is untouched.
    assert_eq!(
        api.get("/balance", Some(ALICE)).await.json()["balance"],
        100
    );
}

#[tokio::test]
async fn a_retry_with_the_same_key_gets_the_same_approval_then_the_same_answer() {
    let api = serve(queue).await;
    let first = held(&api.refund(ALICE, "7", 20, Some("k-1")).await);
    let again = api.refund(ALICE, "7", 20, Some("k-1")).await;
    assert_eq!(held(&again), first, "the same approval");
    // The key with another request: refused.
    let other = api.refund(ALICE, "7", 21, Some("k-1")).await;
    other.assert_problem(StatusCode::UNPROCESSABLE_ENTITY);
    // Another caller's key of the same text is its own.
    let bobs = held(&api.refund(BOB, "7", 20, Some("k-1")).await);
    assert_ne!(bobs, first);
    let list = api.get(APPROVALS, Some(CAROL)).await.json();
    assert_eq!(
        list["approvals"].as_array().map(Vec::len),
        Some(2),
        "{list}"
    );

    let approved = api.decide(&first, "approve", CAROL, None).await.json();
    assert_eq!(approved["response"]["body"]["run"], 1);
    // Once run, a retry gets the answer again, without running.
    let replayed = api.refund(ALICE, "7", 20, Some("k-1")).await;
    assert_eq!(replayed.status, StatusCode::OK, "{}", replayed.body);
    assert_eq!(replayed.json(), approved["response"]["body"]);
    assert_eq!(api.runs.count(), 1, "exactly once");
    // Denied: a retry is refused, naming the reason.
    let reason = json!({"reason": "duplicate"});
    api.decide(&bobs, "deny", CAROL, Some(&reason)).await;
    let retried = api.refund(BOB, "7", 20, Some("k-1")).await;
    retried.assert_problem(StatusCode::FORBIDDEN);
    assert!(retried.detail().contains("duplicate"), "{}", retried.body);
    assert_eq!(api.runs.count(), 1);
}

#[tokio::test]
async fn the_approvals_kept_are_bounded() {
    let limits = ApprovalLimits::new().approvals(3).per_caller(2);
    let api = serve(|b| queue(b).approval_limits(limits)).await;
    held(&api.refund(ALICE, "1", 1, None).await);
    held(&api.refund(ALICE, "2", 1, None).await);
    let over = api.refund(ALICE, "3", 1, None).await;
    over.assert_problem(StatusCode::TOO_MANY_REQUESTS);
    assert!(
        over.header("retry-after")
            .parse::<u64>()
            .is_ok_and(|s| s >= 1)
    );
    held(&api.refund(BOB, "4", 1, None).await);
    let full = api.refund(CAROL, "5", 1, None).await;
    full.assert_problem(StatusCode::SERVICE_UNAVAILABLE);
    assert!(!full.header("retry-after").is_empty());
    assert_eq!(api.runs.count(), 0);
}

#[tokio::test]
async fn a_request_over_the_bytes_left_is_refused() {
    let limits = ApprovalLimits::new().bytes(300);
    let api = serve(|b| queue(b).approval_limits(limits)).await;
    let refused = api.refund(ALICE, &"x".repeat(400), 1, None).await;
    refused.assert_problem(StatusCode::SERVICE_UNAVAILABLE);
    held(&api.refund(ALICE, "1", 1, None).await);
}

#[tokio::test]
async fn schemas_say_which_calls_wait_for_approval() {
    let api = serve(|b| queue(b).require_approval(ApprovalRule::Irreversible)).await;
    let schema = |path: &'static str| {
        let url = api.server.url(path);
        async move { halo_tests::discover(&url, Some(ALICE)).await }
    };
    assert_eq!(
        schema("/refunds/1").await[0]["effects"]["approval"],
        "required"
    );
    let wipe = schema("/wipe").await;
    assert_eq!(
        wipe[0]["effects"],
        json!({"reversible": false, "approval": "required"})
    );
    assert!(schema("/balance").await[0].get("effects").is_none());
    // The rule is enforced as written.
    held(
        &api.send(Method::POST, "/wipe", Some(ALICE), None, None)
            .await,
    );
    // A tool without approval is untouched.
    assert_eq!(
        api.get("/balance", Some(ALICE)).await.status,
        StatusCode::OK
    );
    assert_eq!(api.runs.count(), 1);
    // Without the rule, only the declared approval shows.
    let plain = serve(queue).await;
    let url = plain.server.url("/wipe");
    let wipe = halo_tests::discover(&url, Some(ALICE)).await;
    assert_eq!(wipe[0]["effects"], json!({"reversible": false}));
}

/// Approves small refunds at once, denies large ones, leaves the rest to people.
struct Policy;

impl Approver for Policy {
    fn may_decide(&self, caller: &Principal) -> bool {
        caller.has_scope("approve")
    }

    async fn requested(&self, request: &ApprovalRequest) -> Option<Verdict> {
        let amount = request.arguments()?.get("amount")?.as_u64()?;
        match amount {
            0..=10 => Some(Verdict::approve("policy")),
            1000.. => Some(Verdict::deny("policy", "too large")),
            _ => None,
        }
    }
}

#[tokio::test]
async fn an_approver_may_decide_at_once() {
    let api = serve(|b| b.approver(Policy)).await;
    let small = held(&api.refund(ALICE, "1", 5, None).await);
    let run = api.trail.wait("executed").await;
    assert_eq!(run.decided_by.as_deref(), Some("policy"));
    let read = api.get(&small, Some(ALICE)).await.json();
    assert_eq!(read["state"], "approved");
    assert_eq!(read["response"]["body"]["amount"], 5);
    let large = held(&api.refund(ALICE, "2", 5000, None).await);
    api.trail.wait("approval_denied").await;
    let read = api.get(&large, Some(ALICE)).await.json();
    assert_eq!(
        (&read["state"], &read["reason"]),
        (&json!("denied"), &json!("too large"))
    );
    // The rest wait for a person.
    let middle = held(&api.refund(ALICE, "3", 50, None).await);
    assert_eq!(
        api.get(&middle, Some(ALICE)).await.json()["state"],
        "pending"
    );
    assert_eq!(api.runs.count(), 1);
}

#[tokio::test]
async fn a_streamed_call_waits_then_streams_its_own_events() {
    let api = serve(queue).await;
    let (response, head, location) = streamed_refund(&api.http, &api.server, "7").await;
    let events = common::client::events(&head);
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["tool_start", "approval_pending"]);
    assert_eq!(events[1].data["data"]["state"], "pending");
    assert_eq!(events[1].data["data"]["href"], location.as_str());
    assert_eq!(api.runs.count(), 0, "held, not run");
    api.decide(&location, "approve", CAROL, None).await;
    let rest = response.text().await.expect("the rest of the stream");
    let events = common::client::events(&format!("{head}{rest}"));
    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tool_start",
            "approval_pending",
            "tool_progress",
            "tool_end"
        ]
    );
    let end = &events[3].data["data"];
    assert_eq!(end["status"], 200);
    assert_eq!(end["content"]["refund"], "7");
    assert_eq!(api.runs.count(), 1);
}

#[tokio::test]
async fn a_streamed_call_denied_ends_with_a_tool_error() {
    let api = serve(queue).await;
    let (response, head, location) = streamed_refund(&api.http, &api.server, "8").await;
    let reason = json!({"reason": "not today"});
    api.decide(&location, "deny", CAROL, Some(&reason)).await;
    let rest = response.text().await.expect("the rest of the stream");
    let events = common::client::events(&format!("{head}{rest}"));
    let last = events.last().expect("events");
    assert_eq!(last.name, "tool_error");
    assert_eq!(last.data["data"]["status"], 403);
    assert!(
        last.data["data"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("not today"))
    );
    assert_eq!(api.runs.count(), 0);
}

#[tokio::test]
async fn describe_declares_an_approval_and_a_wrong_value_fails_the_build() {
    let api =
        serve(|b| queue(b).describe("balance", Describe::new().approval(Approval::Required))).await;
    let url = api.server.url("/balance");
    let schema = halo_tests::discover(&url, Some(ALICE)).await;
    assert_eq!(schema[0]["effects"], json!({"approval": "required"}));
    held(&api.get("/balance", Some(ALICE)).await);
    assert_eq!(api.runs.count(), 0);
    // Only `required` is a value.
    let error = HaloBuilder::from_openapi_json(json!({
        "openapi": "3.1.0",
        "info": {"title": "T", "version": "1"},
        "paths": {"/x": {"post": {"operationId": "x", "responses": {},
            "x-halo-effects": {"approval": "sometimes"}}}}
    }))
    .build()
    .expect_err("an unknown approval");
    assert!(error.is_metadata(), "{error}");
    assert!(
        error.to_string().contains("approval must be required"),
        "{error}"
    );
}
