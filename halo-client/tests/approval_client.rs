//! Approvals against the bookstore over real HTTP: a refund (`effects.approval: required`) is
//! held by the server, the client is told of the pending approval and waits, an approver
//! (the admin, who may approve its own refunds) decides from another task, and the call
//! answers as the refund does; a denial is a typed error with who and why; an approved call
//! whose handler fails answers its failure; the reader may not list or decide; a client
//! that does not wait gets the `202` and waits later; a stream shows `approval_pending`; a
//! caller withdraws its own held call, and its wait ends with a typed error.

use std::time::Duration;

use futures_util::StreamExt as _;
use halo_client::protocol::{ToolEvent, ToolOutput};
use halo_client::{Approval, ApprovalState, Client, Credential, Method, StatusCode, ToolResponse};
use halo_tests::TestServer;
use halo_tests::bookstore::one_dune;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The longest a step of these tests may take.
const PATIENCE: Duration = Duration::from_secs(20);

/// The bookstore, and a client of it with `token`.
async fn bookstore() -> TestServer {
    halo_tests::spawn(bookstore::app()).await
}

fn client(server: &TestServer, token: &str) -> Client {
    Client::builder(server.base_url())
        .credential(Credential::bearer(token))
        .build()
        .unwrap()
}

/// A client of the admin that tells of every held call on the channel it gives back.
fn watched(server: &TestServer) -> (Client, mpsc::UnboundedReceiver<Approval>) {
    let (tell, told) = mpsc::unbounded_channel();
    let client = Client::builder(server.base_url())
        .credential(Credential::bearer("demo-admin"))
        .on_approval_pending(move |approval| {
            let _ = tell.send(approval.clone());
        })
        .build()
        .unwrap();
    (client, told)
}

/// An order of one Dune, paid: its id and the charge's id.
async fn paid_order(admin: &Client) -> (u64, String) {
    let order = admin
        .invoke("/api/orders", Method::POST, one_dune())
        .await
        .unwrap();
    let order = order.json().unwrap().clone();
    let id = order["id"].as_u64().unwrap();
    let charge = admin
        .invoke(
            "/api/payments/charge",
            Method::POST,
            json!({"order_id": id, "amount": order["total"], "currency": "EUR",
                   "payment_method": "pm_card_visa"}),
        )
        .await
        .unwrap();
    (
        id,
        charge.json().unwrap()["id"].as_str().unwrap().to_owned(),
    )
}

async fn order_status(admin: &Client, id: u64) -> Value {
    let order = admin
        .invoke("/api/orders/{id}", Method::GET, json!({"id": id}))
        .await
        .unwrap();
    order.json().unwrap()["status"].clone()
}

/// `POST url` with `args` as `client`, from another task: the call waits while it is held.
fn call_later(
    client: &Client,
    url: &str,
    args: Value,
) -> JoinHandle<halo_client::Result<ToolResponse>> {
    let (client, url) = (client.clone(), url.to_owned());
    tokio::spawn(async move { client.invoke(&url, Method::POST, args).await })
}

/// What the task `ends` gives, once it ends within [`PATIENCE`]; `what` says what should
/// end it.
async fn ended<T>(ends: JoinHandle<T>, what: &str) -> T {
    tokio::time::timeout(PATIENCE, ends)
        .await
        .expect(what)
        .unwrap()
}

async fn told(told: &mut mpsc::UnboundedReceiver<Approval>) -> Approval {
    tokio::time::timeout(PATIENCE, told.recv())
        .await
        .expect("the client tells of the held call")
        .expect("the hook is kept")
}

/// The bookstore; its admin, watched; a paid order; the admin's refund of it ("changed my
/// mind"), called from another task; and its approval, once the client tells of it.
async fn held_refund() -> (
    TestServer,
    Client,
    u64,
    JoinHandle<halo_client::Result<ToolResponse>>,
    Approval,
) {
    let server = bookstore().await;
    let (admin, mut pending) = watched(&server);
    let (order, charge) = paid_order(&admin).await;
    let refund = json!({"id": charge, "reason": "changed my mind"});
    let call = call_later(&admin, "/api/payments/{id}/refund", refund);
    let held = told(&mut pending).await;
    (server, admin, order, call, held)
}

#[tokio::test]
async fn a_held_refund_answers_as_the_refund_once_approved() {
    let server = bookstore().await;
    let (admin, mut pending) = watched(&server);
    let (order, charge) = paid_order(&admin).await;

    let call = call_later(
        &admin,
        &format!("/api/payments/{charge}/refund"),
        json!({"reason": "customer returned the book"}),
    );
    let held = told(&mut pending).await;
    assert_eq!(held.state, ApprovalState::Pending);
    assert_eq!(held.tool, "refund_payment");
    assert_eq!(held.caller.as_deref(), Some("admin"));
    assert_eq!(
        held.arguments,
        Some(json!({"reason": "customer returned the book"}))
    );
    let call_of = held.call.clone().unwrap();
    assert_eq!(
        (call_of.method.as_str(), call_of.url.as_str()),
        ("POST", format!("/api/payments/{charge}/refund").as_str())
    );
    assert!(
        held.lifetime().is_some_and(|l| l > Duration::ZERO),
        "{held:?}"
    );
    // Held, not run: the order is still paid while the caller waits.
    assert_eq!(order_status(&admin, order).await, "paid");
    assert!(!call.is_finished());

    // Another task of the approver finds it in the list and approves it.
    let approver = client(&server, "demo-admin");
    let listed = approver.approvals().await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].id, held.id);
    assert_eq!(
        approver.approval(&held.id).await.unwrap().state,
        ApprovalState::Pending
    );
    let approved = approver.approve(&held.id).await.unwrap();
    assert_eq!(approved.state, ApprovalState::Approved);
    assert_eq!(approved.decided_by.as_deref(), Some("admin"));
    let ran = approved
        .response
        .as_ref()
        .expect("the approval keeps the answer");
    assert_eq!(ran.status, 200);

    let answer = ended(call, "the call answers once approved").await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let refunded = answer.json().expect("the refund as JSON");
    assert_eq!(refunded["charge_id"], charge.as_str());
    assert_eq!(refunded["reason"], "customer returned the book");
    assert_eq!(Some(refunded), ran.body.as_ref());
    // Run exactly once, and nothing is pending any more.
    assert_eq!(order_status(&admin, order).await, "refunded");
    assert!(approver.approvals().await.unwrap().is_empty());
    assert!(pending.try_recv().is_err());
    // A decision taken is final.
    let again = approver.approve(&held.id).await.unwrap_err();
    assert_eq!(again.status(), Some(StatusCode::CONFLICT), "{again}");
}

#[tokio::test]
async fn a_denied_refund_is_a_typed_error_with_who_and_why_and_never_runs() {
    let (server, admin, order, call, held) = held_refund().await;
    let denied = client(&server, "demo-admin")
        .deny(&held.id, Some("the charge is disputed"))
        .await
        .unwrap();
    assert_eq!(denied.state, ApprovalState::Denied);
    assert_eq!(denied.reason.as_deref(), Some("the charge is disputed"));

    let error = ended(call, "the call ends once denied").await.unwrap_err();
    assert!(error.is_denied(), "{error:?}");
    assert!(!error.is_status() && !error.is_approval_expired());
    let approval = error.approval().expect("the denied approval");
    assert_eq!(approval.id, held.id);
    assert_eq!(approval.decided_by.as_deref(), Some("admin"));
    assert_eq!(approval.reason.as_deref(), Some("the charge is disputed"));
    let message = error.to_string();
    assert!(
        message.contains("POST /api/payments/")
            && message.contains("denied by admin: the charge is disputed"),
        "{message}"
    );
    // A model reading the failure sees a 403 problem that says why.
    let output = ToolOutput::from(&error);
    assert!(output.is_error);
    let problem = output.structured.expect("problem details");
    assert_eq!(problem["status"], 403, "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap_or("")
            .contains("the charge is disputed"),
        "{problem}"
    );
    assert_eq!(order_status(&admin, order).await, "paid");
}

#[tokio::test]
async fn an_approved_call_that_fails_answers_its_failure() {
    let server = bookstore().await;
    let (admin, mut pending) = watched(&server);
    let call = call_later(
        &admin,
        "/api/payments/{id}/refund",
        json!({"id": "ch_404", "reason": "no such charge"}),
    );
    let held = told(&mut pending).await;
    admin.approve(&held.id).await.unwrap();
    let error = ended(call, "the call answers once approved")
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(StatusCode::NOT_FOUND), "{error:?}");
    let problem = error.problem().expect("the handler's problem");
    assert!(
        problem.detail.as_deref().unwrap_or("").contains("ch_404"),
        "{problem:?}"
    );
}

#[tokio::test]
async fn only_approvers_list_and_decide() {
    let server = bookstore().await;
    let waiting = Client::builder(server.base_url())
        .credential(Credential::bearer("demo-admin"))
        .await_approvals(false)
        .build()
        .unwrap();
    let answer = waiting
        .invoke(
            "/api/payments/{id}/refund",
            Method::POST,
            json!({"id": "ch_1", "reason": "returned"}),
        )
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::ACCEPTED);
    let held = Approval::from_response(&answer).expect("the 202 carries the approval");
    assert_eq!(held.state, ApprovalState::Pending);

    let reader = client(&server, "demo-reader");
    let listing = reader.approvals().await.unwrap_err();
    assert_eq!(listing.status(), Some(StatusCode::FORBIDDEN), "{listing}");
    assert!(listing.problem().is_some());
    let approving = reader.approve(&held.id).await.unwrap_err();
    assert_eq!(approving.status(), Some(StatusCode::FORBIDDEN));
    let denying = reader.deny(&held.id, Some("no")).await.unwrap_err();
    assert_eq!(denying.status(), Some(StatusCode::FORBIDDEN));
    // Another caller's approval is not there at all for the reader.
    let reading = reader.approval(&held.id).await.unwrap_err();
    assert_eq!(reading.status(), Some(StatusCode::NOT_FOUND));
    let anonymous = Client::new(server.base_url()).unwrap();
    let unknown = anonymous.approvals().await.unwrap_err();
    assert_eq!(unknown.status(), Some(StatusCode::UNAUTHORIZED));
    assert!(waiting.approval("..").await.unwrap_err().is_argument());

    // Still pending for the approver, who can wait on it later.
    let pending = waiting.approvals().await.unwrap();
    assert_eq!(
        pending.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
        [held.id.as_str()]
    );
    let later = waiting.clone();
    let wait = tokio::spawn({
        let held = held.clone();
        async move { later.wait_for_approval(&held).await }
    });
    waiting.deny(&held.id, None).await.unwrap();
    let error = ended(wait, "the wait ends once denied").await.unwrap_err();
    assert!(error.is_denied(), "{error:?}");
    assert_eq!(error.approval().unwrap().reason, None);
}

#[tokio::test]
async fn a_stream_shows_the_pending_approval_then_the_call() {
    let server = bookstore().await;
    let admin = client(&server, "demo-admin");
    let (_, charge) = paid_order(&admin).await;
    let mut events = admin
        .invoke_stream(
            "/api/payments/{id}/refund",
            Method::POST,
            json!({"id": charge, "reason": "returned"}),
        )
        .await
        .unwrap();
    let approval = loop {
        let event = tokio::time::timeout(PATIENCE, events.next())
            .await
            .expect("an event")
            .expect("the stream goes on")
            .unwrap();
        if let Some(approval) = event.approval() {
            break approval;
        }
        assert!(
            matches!(event.event(), ToolEvent::ToolStart(_)),
            "{:?}",
            event.event()
        );
    };
    assert_eq!(approval.tool, "refund_payment");
    assert_eq!(approval.state, ApprovalState::Pending);
    admin.approve(&approval.id).await.unwrap();
    let end = tokio::time::timeout(PATIENCE, events.result())
        .await
        .expect("the stream ends once approved")
        .unwrap();
    assert_eq!(end.status, 200);
    assert_eq!(end.content["charge_id"], charge.as_str());
}

#[tokio::test]
async fn a_caller_withdraws_its_held_call_and_its_wait_ends() {
    let (server, admin, order, call, held) = held_refund().await;
    // Another caller cannot see it, so cannot withdraw it.
    let reader = client(&server, "demo-reader");
    let refused = reader.withdraw(&held.id).await.unwrap_err();
    assert_eq!(refused.status(), Some(StatusCode::NOT_FOUND), "{refused}");

    let withdrawn = client(&server, "demo-admin")
        .withdraw(&held.id)
        .await
        .unwrap();
    assert_eq!(withdrawn.state, ApprovalState::Cancelled);
    assert_eq!(withdrawn.decided_by.as_deref(), Some("admin"));
    assert_eq!(withdrawn.reason.as_deref(), Some("withdrawn by its caller"));

    let error = ended(call, "the call ends once withdrawn")
        .await
        .unwrap_err();
    assert!(error.is_approval_cancelled(), "{error:?}");
    assert!(!error.is_denied() && !error.is_approval_expired() && !error.is_status());
    assert_eq!(
        error.approval().map(|a| a.id.as_str()),
        Some(held.id.as_str())
    );
    let message = error.to_string();
    assert!(message.contains("withdrawn by admin"), "{message}");
    assert_eq!(order_status(&admin, order).await, "paid", "never run");
    // Withdrawn once: again is `409`, and so is an approval.
    let again = admin.withdraw(&held.id).await.unwrap_err();
    assert_eq!(again.status(), Some(StatusCode::CONFLICT), "{again}");
    let late = admin.approve(&held.id).await.unwrap_err();
    assert_eq!(late.status(), Some(StatusCode::CONFLICT), "{late}");
    assert!(admin.withdraw("").await.unwrap_err().is_argument());
}
