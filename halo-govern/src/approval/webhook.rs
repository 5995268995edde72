//! The webhook approver: each held call is POSTed, signed, to a URL the application names,
//! and the answer (`{"approved": true}`, or `false` with a `code` and `message`) decides it.
//! A hook that cannot answer leaves the call to the fallback approver, or to expiry.

mod signature;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use halo_auth::Principal;
use halo_protocol::APPROVALS_PATH;
use halo_protocol::Rfc3339;
use http::header::{CONTENT_TYPE, USER_AGENT};
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;
use tokio::time::{Instant, timeout_at};

pub use self::signature::{SignatureError, WebhookSecret};
use super::{ApprovalRequest, Approver, DynApprover, Verdict};

/// The name of the event a held call is sent as.
const EVENT: &str = "approval.requested";
/// The most bytes of a hook's answer read.
const MAX_ANSWER: usize = 64 * 1024;
/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// What the hook's log lines are filed under: where they were before the book left
/// halo-axum.
const TARGET: &str = "halo_axum::approval::webhook";

/// An [`Approver`] that asks a webhook: each call held for approval is sent once, as a JSON
/// event in a `POST` to the hook's URL, signed with a shared [`WebhookSecret`], and the
/// hook's answer decides it. Needs the feature `webhook`.
///
/// The event (the call's arguments redacted as [`ApprovalRequest::arguments`] gives them):
///
/// ```json
/// {"event_id": "evt_6c1f…", "event": "approval.requested", "created_at": "2026-12-02T10:00:00.000Z",
///  "data": {"id": "3f0c…", "href": "/.well-known/halo/approvals/3f0c…", "tool": "refund_payment",
///           "call": {"method": "POST", "url": "/api/payments/ch_1/refund"},
///           "caller": "admin", "arguments": {"reason": "customer returned the book"},
///           "expires_at": "2026-12-02T10:15:00.000Z"}}
/// ```
///
/// It carries `Halo-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "{t}.{body}">`; the
/// receiver checks it with [`WebhookSecret::verify`]. The hook answers with a `2xx` status
/// and a JSON object: `{"approved": true}` approves the call; `{"approved": false, "code":
/// "…", "message": "…"}` denies it, the message (and code) kept as the reason its caller
/// reads; `{"approved": null}` leaves it to the [`fallback`](WebhookApproverBuilder::fallback).
/// The audit trail names the deciding hook `webhook` (see
/// [`name`](WebhookApproverBuilder::name)).
///
/// **When the hook fails.** A connection that fails, no answer within the
/// [`timeout`](WebhookApproverBuilder::timeout), a status other than `2xx` (redirects are
/// not followed: the signed body goes nowhere else), or an answer that is not the shape
/// above (or is over 64 KiB) is tried again, up to [`attempts`](WebhookApproverBuilder::attempts)
/// in all, waiting [`backoff`](WebhookApproverBuilder::backoff) and twice as long each time
/// after. Each attempt is signed afresh and keeps the `event_id`, so a receiver can tell a
/// retry from a new call. The approval's `expires_at` may end the retries sooner: no attempt
/// starts after it or is waited for past it, and a wait that would end after it is not
/// begun, since a verdict then would be ignored. When the hook gives no verdict, the call is
/// never approved by it: it waits for the fallback (callers deciding over HTTP), or expires
/// as denied. Failures are logged as warnings naming the hook's origin, the approval and the
/// cause; never the URL's path or query, the secret or the arguments.
///
/// ```
/// use std::time::Duration;
/// use halo_govern::approval::{ApprovalQueue, WebhookApprover, WebhookSecret};
/// # let secret = "a-secret-of-sixteen-bytes-or-more".to_owned();
///
/// let hook = WebhookApprover::builder("https://risk.example.com/halo", WebhookSecret::new(secret))
///     .timeout(Duration::from_secs(5))
///     .attempts(4)
///     // What the hook leaves undecided waits for the callers holding `approvals`.
///     .fallback(ApprovalQueue::new("approvals"))
///     .build()?;
/// // halo-axum: `HaloLayer::builder(api).approver(hook).build()?`.
/// # let _ = hook;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct WebhookApprover {
    hook: Arc<Hook>,
    fallback: Option<Arc<dyn DynApprover>>,
}

/// Builds a [`WebhookApprover`]: [`WebhookApprover::builder`].
///
/// ```
/// use std::time::Duration;
/// use halo_auth::Principal;
/// use halo_govern::approval::{Approver, WebhookApprover, WebhookSecret};
///
/// let secret = WebhookSecret::new("a-secret-of-sixteen-bytes-or-more");
/// let hook = WebhookApprover::builder("http://127.0.0.1:9000/approve", secret)
///     .name("risk-engine")
///     .timeout(Duration::from_secs(2))
///     .attempts(5)
///     .backoff(Duration::from_millis(500))
///     .max_concurrent(4)
///     .build()?;
/// // Without a fallback nobody decides over HTTP.
/// assert!(!hook.may_decide(&Principal::new("admin").with_scopes(["approvals"])));
/// # Ok::<(), halo_govern::approval::WebhookError>(())
/// ```
#[derive(Clone)]
#[must_use]
pub struct WebhookApproverBuilder {
    url: String,
    secret: WebhookSecret,
    name: String,
    timeout: Duration,
    attempts: u32,
    backoff: Duration,
    max_concurrent: usize,
    fallback: Option<Arc<dyn DynApprover>>,
}

/// Why a [`WebhookApprover`] could not be built. The message names the hook's origin and the
/// cause, never the secret or the URL's path.
///
/// ```
/// use halo_govern::approval::{WebhookApprover, WebhookSecret};
///
/// let secret = WebhookSecret::new("a-secret-of-sixteen-bytes-or-more");
/// let error = WebhookApprover::builder("http://hooks.example.com/approve", secret)
///     .build()
///     .expect_err("signed bodies go over TLS, or stay on this machine");
/// assert!(error.to_string().contains("neither an https URL"));
/// ```
#[derive(Debug, Clone)]
pub struct WebhookError {
    message: String,
}

impl fmt::Display for WebhookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for WebhookError {}

impl WebhookError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: format!("WebhookApprover: {}", message.into()),
        }
    }
}

/// The hook and how it is asked, shared by the clones of one approver.
struct Hook {
    url: reqwest::Url,
    /// `scheme://host:port`, what logs and `Debug` show of the URL.
    origin: String,
    secret: WebhookSecret,
    name: String,
    timeout: Duration,
    attempts: u32,
    backoff: Duration,
    client: reqwest::Client,
    in_flight: Semaphore,
}

/// What a hook's answer says.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Approved(Option<String>),
    Denied(Option<String>),
    /// `{"approved": null}`: left to the fallback.
    Undecided,
}

/// Why an attempt failed, for the log: never the URL, the secret or the body.
struct Failure(String);

impl WebhookApprover {
    /// A builder for the hook at `url` (`https`, or `http` to a loopback host), its bodies
    /// signed with `secret`.
    pub fn builder(url: impl Into<String>, secret: WebhookSecret) -> WebhookApproverBuilder {
        WebhookApproverBuilder {
            url: url.into(),
            secret,
            name: "webhook".to_owned(),
            timeout: Duration::from_secs(10),
            attempts: 3,
            backoff: Duration::from_secs(1),
            max_concurrent: 16,
            fallback: None,
        }
    }

    /// The name of the header the signature is sent in.
    pub const SIGNATURE_HEADER: &'static str = "halo-signature";

    /// The name of the event a held call is sent as: `approval.requested`.
    pub const EVENT: &'static str = EVENT;
}

impl fmt::Debug for WebhookApprover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookApprover")
            .field("origin", &self.hook.origin)
            .field("name", &self.hook.name)
            .field("attempts", &self.hook.attempts)
            .field("fallback", &self.fallback.is_some())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for WebhookApproverBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookApproverBuilder")
            .field("origin", &origin_of(&self.url))
            .field("name", &self.name)
            .field("timeout", &self.timeout)
            .field("attempts", &self.attempts)
            .field("backoff", &self.backoff)
            .field("max_concurrent", &self.max_concurrent)
            .field("fallback", &self.fallback.is_some())
            .finish_non_exhaustive()
    }
}

impl WebhookApproverBuilder {
    /// The name the hook's decisions are recorded under (`decided_by` in the approval and
    /// the audit trail): `webhook` by default.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How long one attempt may take, from connecting to the end of the answer (10 s by
    /// default).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many times a call is sent before the hook is given up on (3 by default, at
    /// least 1). The approval's expiry may end the attempts sooner.
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// The wait before the second attempt (1 s by default), doubled before each one after,
    /// up to a minute. A wait that would end after the approval expires is not begun: the
    /// hook is given up on instead.
    pub fn backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// How many requests to the hook may be in flight at once (16 by default, at least 1);
    /// more held calls wait their turn.
    pub fn max_concurrent(mut self, requests: usize) -> Self {
        self.max_concurrent = requests.max(1);
        self
    }

    /// Who decides what the hook leaves undecided (it failed, or answered
    /// `{"approved": null}`): the callers `approver` admits decide over HTTP meanwhile (see
    /// [`Approver::may_decide`]), and its own [`requested`](Approver::requested) is asked
    /// after the hook's. Without one, nobody decides over HTTP and such calls expire.
    pub fn fallback(mut self, approver: impl Approver) -> Self {
        self.fallback = Some(Arc::new(approver));
        self
    }

    /// Checks the settings and makes the HTTP client.
    ///
    /// # Errors
    /// A URL that is neither `https` nor `http` to a loopback host, or carries credentials;
    /// a secret under 16 bytes; an HTTP client that cannot be made.
    pub fn build(self) -> Result<WebhookApprover, WebhookError> {
        let url = reqwest::Url::parse(self.url.trim())
            .map_err(|_| WebhookError::new("the hook's URL is not a URL"))?;
        let origin = url.origin().ascii_serialization();
        match url.scheme() {
            "https" if url.has_host() => {}
            "http" if is_loopback(&url) => {}
            _ => {
                return Err(WebhookError::new(format!(
                    "the hook {origin} is neither an https URL nor http to a loopback host"
                )));
            }
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(WebhookError::new(format!(
                "the hook {origin} carries credentials in its URL"
            )));
        }
        if self.secret.len() < 16 {
            return Err(WebhookError::new("the secret must be at least 16 bytes"));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(self.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| WebhookError::new(format!("HTTP client: {e}")))?;
        Ok(WebhookApprover {
            hook: Arc::new(Hook {
                url,
                origin,
                secret: self.secret,
                name: self.name,
                timeout: self.timeout,
                attempts: self.attempts,
                backoff: self.backoff,
                client,
                in_flight: Semaphore::new(self.max_concurrent),
            }),
            fallback: self.fallback,
        })
    }
}

impl Approver for WebhookApprover {
    fn may_decide(&self, caller: &Principal) -> bool {
        self.fallback
            .as_ref()
            .is_some_and(|fallback| fallback.may_decide(caller))
    }

    fn self_approval(&self) -> bool {
        self.fallback
            .as_ref()
            .is_some_and(|fallback| fallback.self_approval())
    }

    async fn requested(&self, request: &ApprovalRequest) -> Option<Verdict> {
        if let Some(verdict) = self.hook.ask(request).await {
            return Some(verdict);
        }
        match &self.fallback {
            Some(fallback) => fallback.requested(request).await,
            None => None,
        }
    }
}

impl Hook {
    /// Sends `request` until an attempt succeeds, all failed, or the approval expired: the
    /// hook's verdict, if it gave one in time.
    async fn ask(&self, request: &ApprovalRequest) -> Option<Verdict> {
        let event_id = format!("evt_{}", uuid::Uuid::new_v4().simple());
        let body = event(&event_id, request, SystemTime::now()).to_string();
        // The expiry on Tokio's clock, which the layer expires approvals by.
        let left = request.expires_at().duration_since(SystemTime::now());
        let expiry = Instant::now() + left.unwrap_or_default();
        let mut wait = self.backoff.min(MAX_BACKOFF);
        let mut expires = false;
        for attempt in 1..=self.attempts {
            let permit = timeout_at(expiry, self.in_flight.acquire()).await;
            let left = expiry.saturating_duration_since(Instant::now());
            let answered = match permit {
                // Each attempt is given up on when the approval expires.
                Ok(Ok(_permit)) if !left.is_zero() => {
                    self.attempt(&body, self.timeout.min(left)).await
                }
                Ok(Err(_closed)) => return None,
                _ => {
                    expires = true;
                    break;
                }
            };
            match answered {
                Ok(answer) => {
                    tracing::debug!(
                        target: TARGET,
                        hook = %self.origin, approval = request.id(), tool = request.tool(),
                        attempt, answer = ?answer, "approval webhook answered"
                    );
                    return self.verdict(answer);
                }
                Err(Failure(cause)) => tracing::warn!(
                    target: TARGET,
                    hook = %self.origin, approval = request.id(), tool = request.tool(),
                    attempt, attempts = self.attempts, %cause, "approval webhook failed"
                ),
            }
            if attempt < self.attempts {
                if Instant::now() + wait >= expiry {
                    expires = true;
                    break;
                }
                tokio::time::sleep(wait).await;
                wait = wait.saturating_mul(2).min(MAX_BACKOFF);
            }
        }
        let stop = match expires {
            true => "the approval expires before another attempt",
            false => "every attempt failed",
        };
        tracing::warn!(
            target: TARGET,
            hook = %self.origin, approval = request.id(), tool = request.tool(), stop,
            "approval webhook gave no verdict: the call waits for another approver or expires"
        );
        None
    }

    /// One signed `POST` of `body`, within `timeout`.
    async fn attempt(&self, body: &str, timeout: Duration) -> Result<Answer, Failure> {
        let signature = self.secret.sign(SystemTime::now(), body.as_bytes());
        let send = async {
            let mut response = self
                .client
                .post(self.url.clone())
                .header(CONTENT_TYPE, "application/json")
                .header(USER_AGENT, concat!("halo-axum/", env!("CARGO_PKG_VERSION")))
                .header(WebhookApprover::SIGNATURE_HEADER, signature)
                .body(body.to_owned())
                .send()
                .await
                .map_err(|e| Failure(cause(e)))?;
            let status = response.status();
            if !status.is_success() {
                return Err(Failure(format!("status {status}")));
            }
            let too_large = || Failure(format!("the answer is over {MAX_ANSWER} bytes"));
            if response
                .content_length()
                .is_some_and(|length| length > MAX_ANSWER as u64)
            {
                return Err(too_large());
            }
            let mut read = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| Failure(cause(e)))? {
                if read.len() + chunk.len() > MAX_ANSWER {
                    return Err(too_large());
                }
                read.extend_from_slice(&chunk);
            }
            answer(&read)
        };
        tokio::time::timeout(timeout, send)
            .await
            .map_err(|_| Failure(format!("no answer within {timeout:?}")))?
    }

    /// The verdict of `answer`, recorded under the hook's name.
    fn verdict(&self, answer: Answer) -> Option<Verdict> {
        match answer {
            Answer::Approved(reason) => Some(Verdict::new(true, &self.name, reason)),
            Answer::Denied(reason) => Some(Verdict::new(false, &self.name, reason)),
            Answer::Undecided => None,
        }
    }
}

/// The event a held call is sent as.
fn event(event_id: &str, request: &ApprovalRequest, now: SystemTime) -> Value {
    let mut data = Map::new();
    data.insert("id".into(), json!(request.id()));
    data.insert(
        "href".into(),
        json!(format!("{APPROVALS_PATH}/{}", request.id())),
    );
    data.insert("tool".into(), json!(request.tool()));
    data.insert(
        "call".into(),
        json!({"method": request.method(), "url": request.target()}),
    );
    if let Some(caller) = request.caller() {
        data.insert("caller".into(), json!(caller));
    }
    if let Some(arguments) = request.arguments() {
        data.insert("arguments".into(), arguments.clone());
    }
    data.insert(
        "expires_at".into(),
        json!(Rfc3339(request.expires_at()).to_string()),
    );
    json!({
        "event_id": event_id,
        "event": EVENT,
        "created_at": Rfc3339(now).to_string(),
        "data": data,
    })
}

/// Reads a hook's answer: a JSON object whose `approved` is `true`, `false` or `null`, with
/// an optional string `message` and `code` as the reason.
fn answer(body: &[u8]) -> Result<Answer, Failure> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Failure(format!("the answer is not JSON: {e}")))?;
    let Some(object) = value.as_object() else {
        return Err(Failure("the answer is not a JSON object".into()));
    };
    let text = |name: &str| {
        object
            .get(name)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
    };
    let reason = match (text("message"), text("code")) {
        (Some(message), Some(code)) => Some(format!("{message} ({code})")),
        (Some(text), None) | (None, Some(text)) => Some(text.to_owned()),
        (None, None) => None,
    };
    match object.get("approved") {
        Some(Value::Bool(true)) => Ok(Answer::Approved(reason)),
        Some(Value::Bool(false)) => Ok(Answer::Denied(reason)),
        Some(Value::Null) => Ok(Answer::Undecided),
        _ => Err(Failure(
            "the answer has no boolean (or null) `approved`".into(),
        )),
    }
}

/// A reqwest error and its causes on one line, without the URL.
fn cause(error: reqwest::Error) -> String {
    let timeout = error.is_timeout();
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    if timeout {
        text.push_str(" (timed out)");
    }
    text
}

/// `scheme://host:port` of `url`, or a placeholder when it is not one.
fn origin_of(url: &str) -> String {
    reqwest::Url::parse(url.trim()).map_or_else(
        |_| "(not a URL)".to_owned(),
        |url| url.origin().ascii_serialization(),
    )
}

/// Whether `url`'s host is this machine.
fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            id: "a1".into(),
            tool: "refund".into(),
            caller: Some("alice".into()),
            method: "POST".into(),
            target: "/refunds/7?x=1".into(),
            arguments: Some(json!({"amount": 20, "card": "[redacted]"})),
            expires_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_670_500),
        }
    }

    #[test]
    fn the_event_describes_the_held_call() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_669_600);
        let event = event("evt_1", &request(), at);
        assert_eq!(
            event,
            json!({
                "event_id": "evt_1",
                "event": "approval.requested",
                "created_at": "2025-12-02T10:00:00.000Z",
                "data": {
                    "id": "a1",
                    "href": "/.well-known/halo/approvals/a1",
                    "tool": "refund",
                    "call": {"method": "POST", "url": "/refunds/7?x=1"},
                    "caller": "alice",
                    "arguments": {"amount": 20, "card": "[redacted]"},
                    "expires_at": "2025-12-02T10:15:00.000Z"
                }
            })
        );
        let mut anonymous = request();
        anonymous.caller = None;
        anonymous.arguments = None;
        let event = event_of(&anonymous);
        assert!(event["data"].get("caller").is_none());
        assert!(event["data"].get("arguments").is_none());
    }

    fn event_of(request: &ApprovalRequest) -> Value {
        event("evt_2", request, SystemTime::now())
    }

    #[test]
    fn answers_in_the_hook_shape_are_read() {
        let read = |text: &str| answer(text.as_bytes()).map_err(|Failure(why)| why);
        assert_eq!(read(r#"{"approved": true}"#), Ok(Answer::Approved(None)));
        assert_eq!(
            read(r#"{"approved": true, "message": "small refund"}"#),
            Ok(Answer::Approved(Some("small refund".into())))
        );
        assert_eq!(read(r#"{"approved": false}"#), Ok(Answer::Denied(None)));
        assert_eq!(
            read(
                r#"{"approved": false, "code": "insufficient_balance", "message": "Balance is insufficient"}"#
            ),
            Ok(Answer::Denied(Some(
                "Balance is insufficient (insufficient_balance)".into()
            )))
        );
        assert_eq!(
            read(r#"{"approved": false, "code": "limit", "message": " "}"#),
            Ok(Answer::Denied(Some("limit".into())))
        );
        assert_eq!(read(r#"{"approved": null}"#), Ok(Answer::Undecided));
        for bad in [
            "",
            "not json",
            "[true]",
            r#"{"approved": "yes"}"#,
            r#"{"approved": 1}"#,
            r#"{"message": "no verdict"}"#,
            "{}",
        ] {
            assert!(read(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_hook_must_be_https_or_loopback_and_the_secret_long_enough() {
        let secret = || WebhookSecret::new("a-secret-of-sixteen-bytes");
        let build = |url: &str| WebhookApprover::builder(url, secret()).build();
        for good in [
            "https://hooks.example.com/approve?token=x",
            "http://127.0.0.1:8080/hook",
            "http://localhost/hook",
            "http://[::1]:9/hook",
        ] {
            assert!(build(good).is_ok(), "{good}");
        }
        for bad in [
            "http://hooks.example.com/approve",
            "ftp://127.0.0.1/x",
            "/relative",
            "https://user:pass@hooks.example.com/",
            "not a url",
        ] {
            let error = build(bad).expect_err(bad);
            assert!(!error.to_string().contains("pass"), "{error}");
        }
        let short = WebhookApprover::builder("https://h.example", WebhookSecret::new("short"))
            .build()
            .expect_err("a short secret");
        assert!(short.to_string().contains("16 bytes"), "{short}");
    }

    #[test]
    fn debug_output_names_only_the_origin() {
        let approver = WebhookApprover::builder(
            "https://hooks.example.com/T0/B1/secret-path?token=t",
            WebhookSecret::new("a-secret-of-sixteen-bytes"),
        );
        let shown = format!("{approver:?}");
        assert!(shown.contains("https://hooks.example.com"), "{shown}");
        assert!(!shown.contains("secret"), "{shown}");
        let built = approver.build().expect("valid");
        let shown = format!("{built:?}");
        assert!(
            !shown.contains("secret-path") && !shown.contains("token"),
            "{shown}"
        );
    }
}
