//! A caller withdraws its own held call, over real HTTP on loopback: `DELETE` of its approval
//! moves it from pending to `cancelled` and the call never runs; only its caller may (anyone
//! else is told it does not exist, an approver is told to deny instead); a decided, expired or
//! withdrawn approval is `409`; a withdrawal racing an approval has one winner; a repeat with
//! the call's idempotency key is refused; a streamed held call is withdrawn by cancelling the
//! call (`DELETE /.well-known/halo/calls/{call_id}`), and its stream ends with the cancelled
//! `tool_error` however it is withdrawn; the audit trail says who withdrew it.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use common::approvals::{self, ALICE, APPROVALS, BOB, CAROL, Trail, rest, streamed_refund};
use common::client::Answer;
use common::gate::Runs;
use halo_axum::{ApprovalQueue, HaloBuilder};
use halo_tests::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::json;

const CALLS: &str = "/.well-known/halo/calls";

struct Api {
    server: TestServer,
    runs: Runs,
    audit: Trail,
    http: reqwest::Client,
}

/// The payments API, its calls decided by holders of `approve`.
async fn serve() -> Api {
    let queue = |builder: HaloBuilder| builder.approver(ApprovalQueue::new("approve"));
    let payments = approvals::serve(approvals::payments(), queue).await;
    Api {
        server: payments.server,
        runs: payments.runs,
        audit: payments.trail,
        http: reqwest::Client::new(),
    }
}

impl Api {
    async fn send(&self, method: Method, path: &str, token: &str) -> Answer {
        let request = self
            .http
            .request(method, self.server.url(path))
            .bearer_auth(token);
        Answer::read(request.send().await.expect("an answer")).await
    }

    /// `POST /refunds/{id}` by `token`: its approval's `Location`.
    async fn hold(&self, token: &str, id: &str, key: Option<&str>) -> String {
        let answer = self.refund(token, id, key).await;
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{}", answer.body);
        answer.header("location").to_owned()
    }

    async fn refund(&self, token: &str, id: &str, key: Option<&str>) -> Answer {
        let mut request = self
            .http
            .post(self.server.url(&format!("/refunds/{id}")))
            .bearer_auth(token)
            .json(&json!({"amount": 20}));
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        Answer::read(request.send().await.expect("an answer")).await
    }

    async fn withdraw(&self, location: &str, token: &str) -> Answer {
        self.send(Method::DELETE, location, token).await
    }

    async fn approve(&self, location: &str) -> Answer {
        let path = format!("{location}/approve");
        self.send(Method::POST, &path, CAROL).await
    }

    /// The records with `outcome`.
    fn records(&self, outcome: &str) -> Vec<halo_axum::AuditRecord> {
        self.audit.records(outcome)
    }
}

#[tokio::test]
async fn its_caller_withdraws_a_pending_call_which_never_runs() {
    let api = serve().await;
    let location = api.hold(ALICE, "7", None).await;
    let withdrawn = api.withdraw(&location, ALICE).await;
    assert_eq!(withdrawn.status, StatusCode::OK, "{}", withdrawn.body);
    assert_eq!(withdrawn.header("cache-control"), "no-store");
    let doc = withdrawn.json();
    assert_eq!(doc["state"], "cancelled", "{doc}");
    assert_eq!(doc["decided_by"], "alice");
    assert_eq!(doc["reason"], "withdrawn by its caller");
    assert!(doc.get("response").is_none(), "{doc}");

    // Its caller reads it cancelled; nothing waits; nobody can approve it any more.
    let read = api.send(Method::GET, &location, ALICE).await.json();
    assert_eq!(read["state"], "cancelled");
    let list = api.send(Method::GET, APPROVALS, CAROL).await.json();
    assert_eq!(list["approvals"], json!([]));
    let late = api.approve(&location).await;
    late.assert_problem(StatusCode::CONFLICT);
    assert!(late.detail().contains("cancelled already"), "{}", late.body);
    // Withdrawn once: a second withdrawal is `409`.
    let again = api.withdraw(&location, ALICE).await;
    again.assert_problem(StatusCode::CONFLICT);
    assert!(
        again.detail().contains("cancelled already"),
        "{}",
        again.body
    );
    assert_eq!(api.runs.count(), 0, "never run");

    // The trail: requested, then cancelled by alice (once).
    assert_eq!(api.audit.outcomes(), ["approval_requested", "cancelled"]);
    let record = &api.records("cancelled")[0];
    assert_eq!(record.decided_by.as_deref(), Some("alice"));
    assert_eq!(record.caller.as_deref(), Some("alice"));
    assert_eq!((record.status, record.path.as_str()), (409, "/refunds/7"));
}

#[tokio::test]
async fn only_its_caller_withdraws_a_call() {
    let api = serve().await;
    let location = api.hold(ALICE, "7", None).await;
    // Another caller: it does not exist; an approver who did not make it denies instead.
    api.withdraw(&location, BOB)
        .await
        .assert_problem(StatusCode::NOT_FOUND);
    let approver = api.withdraw(&location, CAROL).await;
    approver.assert_problem(StatusCode::FORBIDDEN);
    assert!(approver.detail().contains("denies"), "{}", approver.body);
    api.withdraw(&format!("{APPROVALS}/nope"), ALICE)
        .await
        .assert_problem(StatusCode::NOT_FOUND);
    let read = api.send(Method::GET, &location, ALICE).await.json();
    assert_eq!(read["state"], "pending");
    // The id resource takes GET, HEAD and DELETE; the list does not take DELETE.
    let wrong = api.send(Method::PUT, &location, ALICE).await;
    wrong.assert_problem(StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong.header("allow"), "GET, HEAD, DELETE");
    let list = api.send(Method::DELETE, APPROVALS, ALICE).await;
    list.assert_problem(StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(list.header("allow"), "GET, HEAD");

    // Approved, it ran: too late to withdraw.
    let approved = api.approve(&location).await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.body);
    let late = api.withdraw(&location, ALICE).await;
    late.assert_problem(StatusCode::CONFLICT);
    assert!(late.detail().contains("approved already"), "{}", late.body);
    assert_eq!(api.runs.count(), 1);
    assert!(api.records("cancelled").is_empty());
}

#[tokio::test]
async fn a_withdrawal_racing_an_approval_has_one_winner() {
    let api = serve().await;
    for round in 0..10 {
        let location = api.hold(ALICE, &round.to_string(), None).await;
        let (withdrawn, approved) =
            tokio::join!(api.withdraw(&location, ALICE), api.approve(&location));
        approvals::assert_one_won(round, &withdrawn, &approved);
        let state = api.send(Method::GET, &location, ALICE).await.json()["state"].clone();
        let expected = if withdrawn.status == StatusCode::OK {
            "cancelled"
        } else {
            "approved"
        };
        assert_eq!(state, expected, "round {round}");
    }
    let approvals = api.records("approved").len();
    assert_eq!(api.runs.count(), approvals, "only approved calls ran");
    assert_eq!(api.records("cancelled").len() + approvals, 10);
}

#[tokio::test]
async fn a_repeat_of_a_withdrawn_call_with_its_key_is_refused() {
    let api = serve().await;
    let location = api.hold(ALICE, "7", Some("k-1")).await;
    assert_eq!(api.withdraw(&location, ALICE).await.status, StatusCode::OK);
    let repeat = api.refund(ALICE, "7", Some("k-1")).await;
    repeat.assert_problem(StatusCode::FORBIDDEN);
    assert!(repeat.detail().contains("withdrawn"), "{}", repeat.body);
    assert_eq!(api.runs.count(), 0);
}

/// A streamed call of `/refunds/{id}` by alice ([`streamed_refund`]): the response read up
/// to its `approval_pending` event, what was read, its `Location` and its call id.
async fn streamed(api: &Api, id: &str) -> (reqwest::Response, String, String, String) {
    let (response, head, location) = streamed_refund(&api.http, &api.server, id).await;
    let call_id = response.headers()["halo-call-id"].to_str().expect("ASCII");
    let call_id = call_id.to_owned();
    (response, head, location, call_id)
}

/// The last event of a stream whose beginning was `head`, read to its end.
async fn last(response: reqwest::Response, head: &str) -> common::client::Event {
    rest(response, head).await.last().cloned().expect("events")
}

/// Asserts the cancelled `tool_error`.
fn assert_cancelled(event: &common::client::Event) {
    assert_eq!(event.name, "tool_error", "{:?}", event.data);
    assert_eq!(event.data["data"]["status"], 409, "{:?}", event.data);
    assert_eq!(event.data["data"]["detail"], "the call was cancelled");
}

#[tokio::test]
async fn cancelling_a_streamed_held_call_withdraws_its_approval() {
    let api = serve().await;
    let (response, head, location, call_id) = streamed(&api, "7").await;
    let cancel = format!("{CALLS}/{call_id}");
    // Another caller's cancel finds nothing.
    api.send(Method::DELETE, &cancel, BOB)
        .await
        .assert_problem(StatusCode::NOT_FOUND);
    let cancelled = api.send(Method::DELETE, &cancel, ALICE).await;
    assert_eq!(
        cancelled.status,
        StatusCode::NO_CONTENT,
        "{}",
        cancelled.body
    );
    assert_cancelled(&last(response, &head).await);
    let read = api.send(Method::GET, &location, ALICE).await.json();
    assert_eq!(read["state"], "cancelled", "{read}");
    assert_eq!(read["decided_by"], "alice");
    api.approve(&location)
        .await
        .assert_problem(StatusCode::CONFLICT);
    assert_eq!(api.runs.count(), 0, "never run");
    let records = api.records("cancelled");
    assert_eq!(records.len(), 1, "{:?}", api.audit.outcomes());
    assert_eq!(records[0].decided_by.as_deref(), Some("alice"));
}

#[tokio::test]
async fn a_streamed_held_call_withdrawn_by_its_approval_ends_cancelled() {
    let api = serve().await;
    let (response, head, location, call_id) = streamed(&api, "8").await;
    let withdrawn = api.withdraw(&location, ALICE).await;
    assert_eq!(withdrawn.status, StatusCode::OK, "{}", withdrawn.body);
    assert_cancelled(&last(response, &head).await);
    // The stream ended: cancelling it now is `409`, as for a call that ended.
    let cancel = format!("{CALLS}/{call_id}");
    let late = api.send(Method::DELETE, &cancel, ALICE).await;
    late.assert_problem(StatusCode::CONFLICT);
    assert_eq!(api.runs.count(), 0);
}
