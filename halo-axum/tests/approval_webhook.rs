//! The webhook approver, over real HTTP on loopback: a held call is POSTed, signed, to a
//! receiver that checks the signature with `WebhookSecret::verify`; its answer approves
//! (the call runs once) or denies (with its reason, never run); failures are retried a
//! bounded number of times, never past the approval's expiry, and never approve; a hook that
//! gives no verdict leaves the call to the fallback approver or to expiry; redirects are not
//! followed.
#![allow(missing_docs, unreachable_pub)]

use crate::common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use common::approvals::{self, ALICE, APPROVALS, BOB, CAROL, Payments, Trail};
use common::client::Answer;
use common::gate::Runs;
use halo_axum::{
    ApprovalLimits, ApprovalQueue, ApprovalRequest, Approver, HaloBuilder, Principal,
    SignatureError, Verdict, WebhookApprover, WebhookApproverBuilder, WebhookSecret,
};
use halo_tests::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::watch;

const SECRET: &str = "whsec-test-0123456789abcdef";
const TOLERANCE: Duration = Duration::from_secs(300);
/// How long a test waits for something that should happen at once.
const PATIENCE: Duration = Duration::from_secs(10);

/// An approver around another that tells the test each verdict it gave (or that it gave
/// none): how a test knows the webhook is done.
struct Watched<A> {
    inner: A,
    verdicts: Arc<watch::Sender<Vec<Option<Verdict>>>>,
}

impl<A: Approver> Approver for Watched<A> {
    fn may_decide(&self, caller: &Principal) -> bool {
        self.inner.may_decide(caller)
    }

    fn self_approval(&self) -> bool {
        self.inner.self_approval()
    }

    async fn requested(&self, request: &ApprovalRequest) -> Option<Verdict> {
        let verdict = self.inner.requested(request).await;
        self.verdicts.send_modify(|all| all.push(verdict.clone()));
        verdict
    }
}

/// What the receiver answers, in turn; the last one again once the others are used.
#[derive(Clone)]
enum Reply {
    Json(u16, Value),
    Text(u16, &'static str),
    Redirect(String),
    /// No answer, ever.
    Silent,
}

/// A request the receiver got.
#[derive(Clone, Debug)]
struct Seen {
    signature: String,
    content_type: String,
    body: Bytes,
    verified: Result<(), SignatureError>,
}

impl Seen {
    fn event(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON event")
    }
}

struct Receiver {
    secret: WebhookSecret,
    replies: Mutex<VecDeque<Reply>>,
    seen: watch::Sender<Vec<Seen>>,
}

/// A webhook on loopback that checks each request's signature with its secret (`401`
/// when it does not verify), records it, and answers as scripted.
struct Hook {
    server: TestServer,
    receiver: Arc<Receiver>,
}

async fn receive(
    State(receiver): State<Arc<Receiver>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let signature = header(WebhookApprover::SIGNATURE_HEADER);
    let verified = receiver
        .secret
        .verify(&signature, &body, SystemTime::now(), TOLERANCE);
    receiver.seen.send_modify(|seen| {
        seen.push(Seen {
            signature,
            content_type: header("content-type"),
            body,
            verified,
        });
    });
    if verified.is_err() {
        return (StatusCode::UNAUTHORIZED, "bad signature").into_response();
    }
    let reply = {
        let mut replies = receiver
            .replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match replies.len() {
            0 => Reply::Silent,
            1 => replies[0].clone(),
            _ => replies.pop_front().expect("more than one"),
        }
    };
    let status = |code: u16| StatusCode::from_u16(code).expect("a status");
    match reply {
        Reply::Json(code, value) => (status(code), Json(value)).into_response(),
        Reply::Text(code, text) => (status(code), text).into_response(),
        Reply::Redirect(to) => (StatusCode::TEMPORARY_REDIRECT, [("location", to)]).into_response(),
        Reply::Silent => std::future::pending().await,
    }
}

impl Hook {
    async fn spawn(secret: &str, replies: impl IntoIterator<Item = Reply>) -> Self {
        let receiver = Arc::new(Receiver {
            secret: WebhookSecret::new(secret),
            replies: Mutex::new(replies.into_iter().collect()),
            seen: watch::channel(Vec::new()).0,
        });
        let router = axum::Router::new()
            .route("/hook", post(receive))
            .with_state(Arc::clone(&receiver));
        let server = halo_tests::spawn(router).await;
        Self { server, receiver }
    }

    fn url(&self) -> String {
        self.server.url("/hook")
    }

    /// An approver for this hook, signing with [`SECRET`], retrying at once.
    fn approver(&self) -> WebhookApproverBuilder {
        WebhookApprover::builder(self.url(), WebhookSecret::new(SECRET))
            .backoff(Duration::from_millis(5))
    }

    fn seen(&self) -> Vec<Seen> {
        self.receiver.seen.borrow().clone()
    }

    /// The first `count` requests, once they came.
    async fn requests(&self, count: usize) -> Vec<Seen> {
        let mut seen = self.receiver.seen.subscribe();
        let waited = tokio::time::timeout(PATIENCE, seen.wait_for(|seen| seen.len() >= count));
        let seen = waited
            .await
            .unwrap_or_else(|_| panic!("{count} requests to the hook: {:?}", self.seen()))
            .expect("the receiver is there");
        seen[..count].to_vec()
    }
}

struct Api {
    server: TestServer,
    runs: Runs,
    trail: Trail,
    verdicts: Arc<watch::Sender<Vec<Option<Verdict>>>>,
    http: reqwest::Client,
}

/// The payments API, its calls decided by `approver` (watched), expiring after a minute.
async fn serve(approver: impl Approver) -> Api {
    serve_expiring(approver, Duration::from_secs(60)).await
}

/// The payments API, its calls decided by `approver` (watched), expiring after `expiry`.
async fn serve_expiring(approver: impl Approver, expiry: Duration) -> Api {
    let verdicts = Arc::new(watch::channel(Vec::new()).0);
    let watched = Watched {
        inner: approver,
        verdicts: Arc::clone(&verdicts),
    };
    let limits = ApprovalLimits::new().expire_after(expiry);
    let configure = |builder: HaloBuilder| builder.approver(watched).approval_limits(limits);
    let Payments {
        server,
        runs,
        trail,
    } = approvals::serve(approvals::payments(), configure).await;
    Api {
        server,
        runs,
        trail,
        verdicts,
        http: reqwest::Client::new(),
    }
}

impl Api {
    async fn send(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<&Value>,
        key: Option<&str>,
    ) -> Answer {
        let mut request = self
            .http
            .request(method, self.server.url(path))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(body);
        }
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        Answer::read(request.send().await.expect("an answer")).await
    }

    /// Alice's refund of `amount` (with a PIN), held: its approval's `Location`.
    async fn held(&self, amount: u32, key: Option<&str>) -> String {
        let body = json!({"amount": amount, "pin": "secret-pin-4921"});
        let answer = self
            .send(Method::POST, "/refunds/7", ALICE, Some(&body), key)
            .await;
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{}", answer.body);
        answer.header("location").to_owned()
    }

    async fn get(&self, path: &str, token: &str) -> Answer {
        self.send(Method::GET, path, token, None, None).await
    }

    /// The approver's first verdict (or its lack), once it gave it.
    async fn verdict(&self) -> Option<Verdict> {
        let mut verdicts = self.verdicts.subscribe();
        let given = tokio::time::timeout(PATIENCE, verdicts.wait_for(|all| !all.is_empty()))
            .await
            .expect("the approver answers in time")
            .expect("the approver is there");
        given[0].clone()
    }
}

/// The hook's approval.
fn approve() -> Reply {
    Reply::Json(200, json!({"approved": true}))
}

#[tokio::test]
async fn a_hook_that_approves_runs_the_call_once() {
    let hook = Hook::spawn(SECRET, [approve()]).await;
    let api = serve(hook.approver().build().expect("a valid hook")).await;
    let location = api.held(20, None).await;
    let run = api.trail.wait("executed").await;
    assert_eq!(run.decided_by.as_deref(), Some("webhook"));
    assert_eq!(run.caller.as_deref(), Some("alice"));
    let decision = api.trail.wait("approved").await;
    assert_eq!(decision.decided_by.as_deref(), Some("webhook"));
    assert_eq!(api.runs.count(), 1);

    // Its caller reads who decided and what the call answered.
    let read = api.get(&location, ALICE).await.json();
    assert_eq!(read["state"], "approved", "{read}");
    assert_eq!(read["decided_by"], "webhook");
    assert_eq!(read["response"]["body"]["amount"], 20);
    assert_eq!(
        read["response"]["body"]["pin"], true,
        "the handler gets the PIN"
    );

    // The hook got one signed event describing the call, without the PIN.
    let [seen] = hook.requests(1).await.try_into().expect("one request");
    assert_eq!(seen.verified, Ok(()));
    assert_eq!(seen.content_type, "application/json");
    assert!(seen.signature.starts_with("t="), "{}", seen.signature);
    let event = seen.event();
    assert_eq!(event["event"], "approval.requested");
    assert!(
        event["event_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("evt_"))
    );
    assert!(
        event["created_at"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z'))
    );
    let data = &event["data"];
    assert_eq!(data["href"], location.as_str());
    assert_eq!(
        location,
        format!("{APPROVALS}/{}", data["id"].as_str().expect("an id"))
    );
    assert_eq!(data["tool"], "refund");
    assert_eq!(data["call"], json!({"method": "POST", "url": "/refunds/7"}));
    assert_eq!(data["caller"], "alice");
    assert_eq!(
        data["arguments"],
        json!({"amount": 20, "pin": "[redacted]"})
    );
    assert!(!String::from_utf8_lossy(&seen.body).contains("secret-pin-4921"));
    // The hook learns how long it has, as the caller does.
    assert!(read["expires_at"].is_string(), "{read}");
    assert_eq!(data["expires_at"], read["expires_at"]);
    assert_eq!(hook.seen().len(), 1, "asked once");
}

#[tokio::test]
async fn a_hook_that_denies_gives_its_reason_and_the_call_never_runs() {
    let denial = json!({"approved": false, "code": "limit", "message": "over the daily limit"});
    let hook = Hook::spawn(SECRET, [Reply::Json(200, denial)]).await;
    let api = serve(hook.approver().name("risk-hook").build().expect("valid")).await;
    let location = api.held(900, Some("k-1")).await;
    let decision = api.trail.wait("approval_denied").await;
    assert_eq!(decision.decided_by.as_deref(), Some("risk-hook"));
    let read = api.get(&location, ALICE).await.json();
    assert_eq!(read["state"], "denied");
    assert_eq!(read["reason"], "over the daily limit (limit)");
    // The caller's retry with its key is refused with the reason.
    let body = json!({"amount": 900, "pin": "secret-pin-4921"});
    let retried = api
        .send(Method::POST, "/refunds/7", ALICE, Some(&body), Some("k-1"))
        .await;
    retried.assert_problem(StatusCode::FORBIDDEN);
    let detail = retried.detail();
    assert!(
        detail.contains("risk-hook: over the daily limit (limit)"),
        "{detail}"
    );
    assert_eq!(api.runs.count(), 0, "never run");
    assert_eq!(hook.seen().len(), 1);
}

#[tokio::test]
async fn a_failing_hook_is_asked_again_with_the_same_event() {
    let replies = [Reply::Text(500, "down for a moment"), approve()];
    let hook = Hook::spawn(SECRET, replies).await;
    let api = serve(hook.approver().build().expect("valid")).await;
    api.held(5, None).await;
    let run = api.trail.wait("executed").await;
    assert_eq!(run.decided_by.as_deref(), Some("webhook"));
    let [first, second] = hook.requests(2).await.try_into().expect("two requests");
    assert_eq!((first.verified, second.verified), (Ok(()), Ok(())));
    assert_eq!(first.body, second.body, "the same event, signed afresh");
    assert_eq!(api.runs.count(), 1);
    assert_eq!(hook.seen().len(), 2);
}

#[tokio::test]
async fn a_hook_that_keeps_failing_leaves_the_call_to_people() {
    // A server error, an answer that is not JSON, one not in the hook's shape: never an
    // approval, however many times.
    let replies = [
        Reply::Text(502, "bad gateway"),
        Reply::Text(200, "ok!"),
        Reply::Json(200, json!({"approved": "yes"})),
    ];
    let hook = Hook::spawn(SECRET, replies).await;
    let approver = hook
        .approver()
        .attempts(3)
        .fallback(ApprovalQueue::new("approve"))
        .build()
        .expect("valid");
    let api = serve(approver).await;
    let location = api.held(50, None).await;
    assert_eq!(api.verdict().await, None, "no verdict from a failing hook");
    assert_eq!(hook.seen().len(), 3, "three attempts, then it gives up");
    assert_eq!(api.get(&location, ALICE).await.json()["state"], "pending");
    // The fallback's approvers decide over HTTP; others may not.
    let path = format!("{location}/approve");
    let refused = api.send(Method::POST, &path, BOB, None, None).await;
    refused.assert_problem(StatusCode::FORBIDDEN);
    let approved = api.send(Method::POST, &path, CAROL, None, None).await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.body);
    assert_eq!(approved.json()["decided_by"], "carol");
    assert_eq!(api.runs.count(), 1);
    assert_eq!(hook.seen().len(), 3, "not asked again");
}

#[tokio::test]
async fn a_hook_may_leave_the_call_to_people_at_once() {
    let hook = Hook::spawn(SECRET, [Reply::Json(200, json!({"approved": null}))]).await;
    let approver = hook.approver().fallback(ApprovalQueue::new("approve"));
    let api = serve(approver.build().expect("valid")).await;
    let location = api.held(50, None).await;
    assert_eq!(api.verdict().await, None);
    assert_eq!(
        hook.seen().len(),
        1,
        "an answer, not a failure: not asked again"
    );
    let list = api.get(APPROVALS, CAROL).await.json();
    assert_eq!(list["approvals"][0]["href"], location.as_str(), "{list}");
}

#[tokio::test]
async fn a_hook_that_is_down_leaves_the_call_to_expire_as_denied() {
    // A port nothing listens on.
    let closed = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        listener.local_addr().expect("its address")
    };
    let url = format!("http://{closed}/hook");
    let approver = WebhookApprover::builder(url, WebhookSecret::new(SECRET))
        .attempts(2)
        .backoff(Duration::from_millis(5))
        .build()
        .expect("valid");
    let api = serve(approver).await;
    let location = api.held(5, None).await;
    assert_eq!(api.verdict().await, None);
    // Without a fallback, nobody decides over HTTP.
    api.get(APPROVALS, CAROL)
        .await
        .assert_problem(StatusCode::FORBIDDEN);
    common::fast_forward(Duration::from_secs(61)).await;
    let expired = api.trail.wait("approval_expired").await;
    assert_eq!(expired.decided_by, None);
    assert_eq!(api.get(&location, ALICE).await.json()["state"], "expired");
    assert_eq!(api.runs.count(), 0, "never run");
}

#[tokio::test]
async fn a_silent_hook_is_given_up_on_after_its_timeout() {
    let hook = Hook::spawn(SECRET, [Reply::Silent]).await;
    let approver = hook
        .approver()
        .timeout(Duration::from_millis(200))
        .attempts(2)
        .build()
        .expect("valid");
    let api = serve(approver).await;
    let location = api.held(5, None).await;
    assert_eq!(api.verdict().await, None);
    assert_eq!(hook.seen().len(), 2);
    assert_eq!(api.get(&location, ALICE).await.json()["state"], "pending");
    assert_eq!(api.runs.count(), 0);
}

#[tokio::test]
async fn a_failing_hook_is_not_tried_again_after_the_approval_expires() {
    // The next attempt would come a minute later, after the approval expired: the hook is
    // given up on at once instead, before the attempts run out.
    let hook = Hook::spawn(SECRET, [Reply::Text(503, "busy")]).await;
    let approver = hook
        .approver()
        .attempts(3)
        .backoff(Duration::from_secs(60))
        .build()
        .expect("valid");
    let api = serve_expiring(approver, Duration::from_secs(2)).await;
    let location = api.held(5, None).await;
    // No verdict, and at once: not after a minute's wait.
    assert_eq!(api.verdict().await, None);
    assert_eq!(hook.seen().len(), 1, "one attempt of three");
    api.trail.wait("approval_expired").await;
    assert_eq!(api.get(&location, ALICE).await.json()["state"], "expired");
    assert_eq!(hook.seen().len(), 1, "none after the expiry");
    assert_eq!(api.runs.count(), 0);
}

#[tokio::test]
async fn a_silent_hook_is_not_waited_for_past_the_approval_s_expiry() {
    // Each attempt may take a minute, but the approval expires after a second: the first
    // attempt is given up on then, and no other starts.
    let hook = Hook::spawn(SECRET, [Reply::Silent]).await;
    let approver = hook
        .approver()
        .timeout(Duration::from_secs(60))
        .attempts(3)
        .build()
        .expect("valid");
    let api = serve_expiring(approver, Duration::from_secs(1)).await;
    let location = api.held(5, None).await;
    // No verdict, once the approval expired: not after a minute's wait.
    assert_eq!(api.verdict().await, None);
    api.trail.wait("approval_expired").await;
    assert_eq!(api.get(&location, ALICE).await.json()["state"], "expired");
    assert_eq!(hook.seen().len(), 1, "one attempt of three");
    assert_eq!(api.runs.count(), 0);
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let elsewhere = Hook::spawn(SECRET, [approve()]).await;
    let hook = Hook::spawn(SECRET, [Reply::Redirect(elsewhere.url())]).await;
    let api = serve(hook.approver().attempts(2).build().expect("valid")).await;
    let location = api.held(5, None).await;
    assert_eq!(api.verdict().await, None, "a redirect is a failure");
    assert_eq!(hook.seen().len(), 2);
    assert!(
        elsewhere.seen().is_empty(),
        "the signed body went nowhere else"
    );
    assert_eq!(api.get(&location, ALICE).await.json()["state"], "pending");
    assert_eq!(api.runs.count(), 0);
}

#[tokio::test]
async fn a_receiver_rejects_another_secret_a_tampered_body_and_a_replay() {
    // The receiver knows another secret: it refuses every attempt, and nothing is approved.
    let hook = Hook::spawn("the-receivers-own-secret", [approve()]).await;
    let api = serve(hook.approver().attempts(2).build().expect("valid")).await;
    api.held(5, None).await;
    assert_eq!(api.verdict().await, None);
    let seen = hook.requests(2).await;
    assert!(
        seen.iter()
            .all(|s| s.verified == Err(SignatureError::Mismatch))
    );
    assert_eq!(api.runs.count(), 0);

    // With the right secret the request verifies, but not with its body changed, nor
    // replayed past the tolerance.
    let secret = WebhookSecret::new(SECRET);
    let (header, body) = (&seen[0].signature, &seen[0].body);
    let now = SystemTime::now();
    assert_eq!(secret.verify(header, body, now, TOLERANCE), Ok(()));
    let tampered = String::from_utf8_lossy(body).replace("\"amount\":5", "\"amount\":500");
    assert_ne!(tampered.as_bytes(), &body[..]);
    assert_eq!(
        secret.verify(header, tampered.as_bytes(), now, TOLERANCE),
        Err(SignatureError::Mismatch)
    );
    let later = now + Duration::from_secs(3600);
    assert_eq!(
        secret.verify(header, body, later, TOLERANCE),
        Err(SignatureError::Stale)
    );
    assert_eq!(
        secret.verify("t=1,v1=00", body, now, TOLERANCE),
        Err(SignatureError::Malformed)
    );
}
