//! How a held call waits, against a scripted server on tokio's paused clock: the approval is
//! read again as `Retry-After` asks, else after growing pauses; an approved call still
//! running is waited for; the call itself is sent once; an approval nobody decides ends the
//! wait once its lifetime and a margin have passed; an expired one is a typed error.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use halo_client::{ApprovalState, Client, Method, StatusCode};
use serde_json::{Value, json};
use support::fault::{self, Action, Reply};
use tokio::time::Instant;

const LOCATION: &str = "/.well-known/halo/approvals/a1";

/// The approval `a1` in `state`, with `extra` members, living `lifetime` seconds.
fn approval(state: &str, lifetime: u64, extra: &Value) -> Value {
    let mut approval = json!({
        "id": "a1", "href": LOCATION, "state": state, "tool": "refund",
        "call": {"method": "POST", "url": "/refunds/7?token=secret"},
        "caller": "alice", "arguments": {"amount": 3},
        "requested_at": "2026-12-02T10:00:00.000Z",
        "expires_at": format!("2026-12-02T10:{:02}:{:02}.000Z", lifetime / 60, lifetime % 60),
    });
    if let (Some(approval), Some(extra)) = (approval.as_object_mut(), extra.as_object()) {
        approval.extend(extra.clone());
    }
    approval
}

/// The server's `202` holding the call.
fn held(lifetime: u64) -> Reply {
    Reply::json(202, &approval("pending", lifetime, &json!({})))
        .header("Location", LOCATION)
        .header("Cache-Control", "no-store")
}

/// A scripted server describing `POST /refunds/{id}`, and a client of it that counts the
/// held calls it is told of.
async fn setup() -> (fault::Server, Client, Arc<AtomicUsize>) {
    let server = fault::Server::start().await;
    let schema = fault::schema(
        "POST",
        "/refunds/{id}",
        &json!({"effects": {"reversible": false, "approval": "required"}}),
    );
    server.describe("/refunds/{id}", &json!([schema]));
    let told = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&told);
    let client = Client::builder(&server.base)
        .retry(support::fast_retry())
        .timeout(Some(Duration::from_secs(5)))
        .on_approval_pending(move |approval| {
            assert_eq!(approval.state, ApprovalState::Pending);
            count.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    client
        .describe("/refunds/{id}", Method::POST)
        .await
        .unwrap();
    (server, client, told)
}

#[tokio::test(start_paused = true)]
async fn the_wait_follows_retry_after_then_backs_off_and_never_resends_the_call() {
    let (server, client, told) = setup().await;
    let ran = json!({"status": 201, "headers": {"content-type": "application/json",
                     "location": "/refunds/7/r1"}, "body": {"refund": "r1"}});
    server.script([
        Action::Reply(held(900).header("Retry-After", "3")),
        Action::Reply(Reply::json(200, &approval("pending", 900, &json!({})))),
        // Approved, still running: no answer yet.
        Action::Reply(Reply::json(
            200,
            &approval("approved", 900, &json!({"decided_by": "carol"})),
        )),
        Action::Reply(Reply::json(
            200,
            &approval(
                "approved",
                900,
                &json!({"decided_by": "carol", "response": ran}),
            ),
        )),
    ]);
    let started = Instant::now();
    let answer = client
        .invoke("/refunds/{id}", Method::POST, json!({"id": 7, "amount": 3}))
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::CREATED);
    assert_eq!(answer.json(), Some(&json!({"refund": "r1"})));
    assert_eq!(answer.headers()["location"], "/refunds/7/r1");
    assert_eq!(told.load(Ordering::SeqCst), 1);

    let requests = server.requests();
    let seen: Vec<(&str, &str)> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.path()))
        .collect();
    assert_eq!(
        seen,
        [
            ("POST", "/refunds/7"),
            ("GET", LOCATION),
            ("GET", LOCATION),
            ("GET", LOCATION)
        ]
    );
    let gaps: Vec<Duration> = requests.windows(2).map(|w| w[1].at - w[0].at).collect();
    // `Retry-After: 3` first, then 1 s and 2 s (0.5 s doubling, the first pause taken by
    // the server's).
    assert!(gaps[0] >= Duration::from_secs(3), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_secs(1), "{gaps:?}");
    assert!(gaps[2] >= Duration::from_secs(2), "{gaps:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{gaps:?}");
}

#[tokio::test(start_paused = true)]
async fn an_approval_nobody_decides_ends_after_its_lifetime_and_a_margin() {
    let (server, client, _) = setup().await;
    server.script([Action::Reply(held(10))]);
    server.otherwise(Reply::json(200, &approval("pending", 10, &json!({}))));
    let started = Instant::now();
    let error = client
        .invoke("/refunds/{id}", Method::POST, json!({"id": 7, "amount": 3}))
        .await
        .unwrap_err();
    let waited = started.elapsed();
    assert!(error.is_timeout(), "{error:?}");
    assert_eq!(error.approval().map(|a| a.id.as_str()), Some("a1"));
    assert!(
        error
            .to_string()
            .contains("approval a1 was not decided in time"),
        "{error}"
    );
    // The 10 s lifetime, the 60 s margin, and no more than one pause (5 s) past them.
    assert!(waited >= Duration::from_secs(70), "{waited:?}");
    assert!(waited <= Duration::from_secs(76), "{waited:?}");
    let requests = server.requests();
    assert_eq!(requests.iter().filter(|r| r.method == "POST").count(), 1);
    // Pauses grow to 5 s: some 16 reads in 70 s, not hundreds.
    assert!((10..=25).contains(&requests.len()), "{}", requests.len());
}

#[tokio::test(start_paused = true)]
async fn an_expired_approval_is_a_typed_error_and_a_failed_read_is_tried_again() {
    let (server, client, _) = setup().await;
    server.script([
        Action::Reply(held(900)),
        // The server restarting: the reads fail for a while (past the retry policy).
        Action::ResetBeforeRead,
        Action::ResetBeforeRead,
        Action::ResetBeforeRead,
        Action::ResetBeforeRead,
        Action::ResetBeforeRead,
        Action::Reply(Reply::json(200, &approval("expired", 900, &json!({})))),
    ]);
    let error = client
        .invoke("/refunds/{id}", Method::POST, json!({"id": 7, "amount": 3}))
        .await
        .unwrap_err();
    assert!(error.is_approval_expired(), "{error:?}");
    assert!(!error.is_denied());
    let message = error.to_string();
    assert!(
        message.contains(
            "POST /refunds/7: approval a1 was not decided before 2026-12-02T10:15:00.000Z"
        ),
        "{message}"
    );
    assert!(!message.contains("secret"), "{message}");
    let posts = server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(posts, 1);
}
