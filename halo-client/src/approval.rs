//! Approvals (HALO §10.3.2, extension): a call of a tool whose schema says
//! `"effects": {"approval": "required"}` is not run when it arrives. The server keeps the
//! request and answers `202 Accepted` with `Location: /.well-known/halo/approvals/{id}` and
//! the [`Approval`]; someone the server trusts approves or denies it, and only an approved
//! call runs, once.
//!
//! Why the client waits by itself: to a caller, a held call is still the call it made. So
//! [`Client::invoke`] and [`Client::call`] read the approval again until it is decided, and
//! answer as the call would have (the handler's status and body, kept by the server), or
//! with an error when it is denied, expires or is withdrawn ([`Error::is_denied`],
//! [`Error::is_approval_expired`], [`Error::is_approval_cancelled`]). They never send the
//! request again: the server holds it, and a second one would be a second refund. A caller that wants to know (a CLI printing
//! the approval's id, an agent telling its user) names a hook
//! ([`ClientBuilder::on_approval_pending`]); one that must not block asks for the `202` back
//! ([`ClientBuilder::await_approvals`]) and waits later ([`Client::wait_for_approval`]).
//!
//! Here: the approval as the server shows it, and the approval of an `approval_pending`
//! event. Reading and deciding approvals as an approver, withdrawing one's own, and waiting
//! for a decision are the client's (`client::approval`).
//!
//! [`Client::invoke`]: crate::Client::invoke
//! [`Client::call`]: crate::Client::call
//! [`Client::wait_for_approval`]: crate::Client::wait_for_approval
//! [`ClientBuilder::on_approval_pending`]: crate::ClientBuilder::on_approval_pending
//! [`ClientBuilder::await_approvals`]: crate::ClientBuilder::await_approvals
//! [`Error::is_denied`]: crate::Error::is_denied
//! [`Error::is_approval_expired`]: crate::Error::is_approval_expired
//! [`Error::is_approval_cancelled`]: crate::Error::is_approval_cancelled

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use halo_protocol::ToolEvent;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, LOCATION};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{StreamEvent, ToolResponse};

pub(crate) use halo_protocol::APPROVALS_PATH;

/// A call held for someone's approval, as the server shows it: in the `202` of the call, on
/// its `Location`, in the list of pending approvals, and in an `approval_pending` event.
///
/// ```
/// use halo_client::{Approval, ApprovalState};
///
/// let approval: Approval = serde_json::from_str(r#"{
///     "id": "3f0c", "href": "/.well-known/halo/approvals/3f0c", "state": "denied",
///     "tool": "refund_payment", "call": {"method": "POST", "url": "/api/payments/ch_1/refund"},
///     "caller": "admin", "arguments": {"reason": "customer returned the book"},
///     "requested_at": "2026-12-02T10:00:00.000Z", "expires_at": "2026-12-02T10:15:00.000Z",
///     "decided_by": "auditor", "reason": "the charge is disputed"
/// }"#).unwrap();
/// assert_eq!(approval.state, ApprovalState::Denied);
/// assert_eq!(approval.decided_by.as_deref(), Some("auditor"));
/// assert_eq!(approval.lifetime(), Some(std::time::Duration::from_secs(15 * 60)));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Approval {
    /// The approval's id.
    pub id: String,
    /// Where it is read (`/.well-known/halo/approvals/{id}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
    /// Pending, or how it was decided.
    pub state: ApprovalState,
    /// The tool's manifest name.
    pub tool: String,
    /// The method and the path (and query) called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<ApprovalCall>,
    /// The principal that called; `None` when anonymous.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The call's JSON body, secrets (`writeOnly`, `format: password`) replaced by
    /// `"[redacted]"`; `None` without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// When the call arrived: RFC 3339, UTC ([`requested_at_time`](Self::requested_at_time)
    /// reads it).
    #[serde(default)]
    pub requested_at: String,
    /// When a pending approval expires, as [`requested_at`](Self::requested_at)
    /// ([`expires_at_time`](Self::expires_at_time) reads it).
    #[serde(default)]
    pub expires_at: String,
    /// Who approved or denied it: a principal's id, or the name an automatic approver gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Why, when the approver said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Once an approved call ran: its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ApprovalResponse>,
}

/// Where an approval stands: it moves one way only, from pending to one of the others.
///
/// ```
/// use halo_client::ApprovalState;
///
/// let state: ApprovalState = serde_json::from_str(r#""expired""#).unwrap();
/// assert_eq!(state, ApprovalState::Expired);
/// assert!(state.is_decided());
/// assert_eq!(ApprovalState::Pending.as_str(), "pending");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ApprovalState {
    /// Nobody has decided yet.
    Pending,
    /// Approved: the call runs (or ran: [`Approval::response`] then holds its answer).
    Approved,
    /// Denied: the call never runs.
    Denied,
    /// Nobody decided in time: it counts as denied, and the call never runs.
    Expired,
    /// Withdrawn by its caller before anyone decided ([`Client::withdraw`]): the call never
    /// runs.
    ///
    /// [`Client::withdraw`]: crate::Client::withdraw
    Cancelled,
    /// A state this version does not know.
    #[serde(other)]
    Unknown,
}

impl ApprovalState {
    /// The state as the server writes it (`"unknown"` for [`Unknown`](Self::Unknown)).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
            Self::Unknown => "unknown",
        }
    }

    /// Whether it is no longer pending.
    #[must_use]
    pub const fn is_decided(self) -> bool {
        !matches!(self, Self::Pending)
    }
}

impl fmt::Display for ApprovalState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The request an approval holds: its method, and the path and query it called.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApprovalCall {
    /// The method (`POST`).
    pub method: String,
    /// The path and query (`/api/payments/ch_1/refund`).
    pub url: String,
}

/// The answer of an approved call once it ran, as the server kept it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApprovalResponse {
    /// The handler's status.
    pub status: u16,
    /// The headers kept (`Content-Type`, `Location`, `ETag`, ...), by lower-case name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The body: JSON when it was JSON, a string when it was text; `None` when there was
    /// none or it was left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// Whether the body was left out (binary, or over the server's bounds).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub body_omitted: bool,
}

impl Approval {
    /// The approval a `202 Accepted` answer carries (a call held for approval, when the
    /// client was built not to wait: [`ClientBuilder::await_approvals`]); `None` for any
    /// other answer.
    ///
    /// [`ClientBuilder::await_approvals`]: crate::ClientBuilder::await_approvals
    ///
    /// ```no_run
    /// use halo_client::{Approval, Client, Method};
    /// use serde_json::json;
    ///
    /// # async fn run() -> halo_client::Result<()> {
    /// let client = Client::builder("http://127.0.0.1:3000").await_approvals(false).build()?;
    /// let answer = client
    ///     .invoke("/api/payments/{id}/refund", Method::POST, json!({"id": "ch_1", "reason": "returned"}))
    ///     .await?;
    /// if let Some(approval) = Approval::from_response(&answer) {
    ///     println!("approval {} is {}", approval.id, approval.state);
    /// }
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn from_response(response: &ToolResponse) -> Option<Self> {
        if response.status() != StatusCode::ACCEPTED || !response.headers().contains_key(LOCATION) {
            return None;
        }
        serde_json::from_value(response.json()?.clone()).ok()
    }

    /// [`requested_at`](Self::requested_at) as a time; `None` when it is not RFC 3339.
    #[must_use]
    pub fn requested_at_time(&self) -> Option<SystemTime> {
        halo_protocol::parse_timestamp(&self.requested_at)
    }

    /// [`expires_at`](Self::expires_at) as a time; `None` when it is not RFC 3339.
    #[must_use]
    pub fn expires_at_time(&self) -> Option<SystemTime> {
        halo_protocol::parse_timestamp(&self.expires_at)
    }

    /// How long the server lets it wait in all (from `requested_at` to `expires_at`, both
    /// read on the server's clock); `None` when either is missing or not RFC 3339.
    #[must_use]
    pub fn lifetime(&self) -> Option<Duration> {
        self.expires_at_time()?
            .duration_since(self.requested_at_time()?)
            .ok()
    }

    /// The answer of an approved call that ran, as it would have come had it not waited;
    /// `None` before it ran, or when its status is not one.
    ///
    /// A body the server left out ([`ApprovalResponse::body_omitted`]) is
    /// [`Body::Empty`](crate::Body::Empty).
    #[must_use]
    pub fn to_response(&self) -> Option<ToolResponse> {
        let response = self.response.as_ref()?;
        let status = StatusCode::from_u16(response.status).ok()?;
        let mut headers = HeaderMap::new();
        for (name, value) in &response.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::try_from(name.as_str()),
                HeaderValue::try_from(value.as_str()),
            ) {
                headers.append(name, value);
            }
        }
        let json = headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(halo_protocol::is_json);
        // The server keeps a JSON body as JSON, else text as a string: give back what it was.
        Some(match (&response.body, json) {
            (None, _) => ToolResponse::new(status, headers, b""),
            (Some(body), true) => ToolResponse::from_value(status, headers, body.clone()),
            (Some(Value::String(text)), false) => {
                ToolResponse::new(status, headers, text.as_bytes())
            }
            (Some(other), false) => {
                ToolResponse::new(status, headers, other.to_string().as_bytes())
            }
        })
    }
}

impl StreamEvent {
    /// The approval of an `approval_pending` event (a streamed call held for approval: its
    /// own events follow once it is approved); `None` for another event.
    ///
    /// ```no_run
    /// use futures_util::StreamExt as _;
    /// use halo_client::{Client, Method};
    /// use serde_json::json;
    ///
    /// # async fn run() -> halo_client::Result<()> {
    /// let client = Client::new("http://127.0.0.1:3000")?;
    /// let mut events = client
    ///     .invoke_stream("/api/payments/{id}/refund", Method::POST, json!({"id": "ch_1", "reason": "returned"}))
    ///     .await?;
    /// while let Some(event) = events.next().await {
    ///     if let Some(approval) = event?.approval() {
    ///         eprintln!("waiting for approval {}", approval.id);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn approval(&self) -> Option<Approval> {
        match self.event() {
            ToolEvent::ApprovalPending(value) => serde_json::from_value(value.clone()).ok(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Body;

    fn approval(response: Value) -> Approval {
        serde_json::from_value(json!({
            "id": "a1", "state": "approved", "tool": "t",
            "requested_at": "2026-12-02T10:00:00.000Z", "expires_at": "2026-12-02T10:15:00.000Z",
            "response": response,
        }))
        .unwrap()
    }

    #[test]
    fn answers_come_back_as_they_were() {
        let json = approval(json!({"status": 200,
            "headers": {"content-type": "application/json", "etag": "\"1\""}, "body": {"id": 1}}))
        .to_response()
        .unwrap();
        assert_eq!(json.status(), StatusCode::OK);
        assert_eq!(json.json(), Some(&json!({"id": 1})));
        assert_eq!(json.headers()["etag"], "\"1\"");

        let text = approval(json!({"status": 201,
            "headers": {"content-type": "text/plain"}, "body": "done"}))
        .to_response()
        .unwrap();
        assert_eq!(*text.body(), Body::Text("done".into()));
        let number_text = approval(json!({"status": 200,
            "headers": {"content-type": "text/plain"}, "body": 42}))
        .to_response()
        .unwrap();
        assert_eq!(*number_text.body(), Body::Text("42".into()));

        let omitted = approval(json!({"status": 200, "headers": {}, "body_omitted": true}))
            .to_response()
            .unwrap();
        assert_eq!(*omitted.body(), Body::Empty);
        let problem = approval(json!({"status": 404,
            "headers": {"content-type": "application/problem+json"}, "body": {"status": 404}}))
        .to_response()
        .unwrap();
        assert_eq!(problem.status(), StatusCode::NOT_FOUND);

        assert!(approval(json!({"status": 1000})).to_response().is_none());
        let bad_header = approval(json!({"status": 200, "headers": {"bad name": "x"}}));
        assert!(bad_header.to_response().unwrap().headers().is_empty());
    }

    #[test]
    fn states_and_times() {
        let unknown: ApprovalState = serde_json::from_str(r#""paused""#).unwrap();
        assert_eq!(unknown, ApprovalState::Unknown);
        let cancelled: ApprovalState = serde_json::from_str(r#""cancelled""#).unwrap();
        assert_eq!(cancelled, ApprovalState::Cancelled);
        assert!(cancelled.is_decided());
        assert_eq!(cancelled.to_string(), "cancelled");
        assert!(!ApprovalState::Pending.is_decided());
        let approval = approval(Value::Null);
        assert_eq!(approval.lifetime(), Some(Duration::from_secs(900)));
        let backwards = Approval {
            expires_at: "2026-12-02T09:00:00Z".into(),
            ..approval.clone()
        };
        assert_eq!(backwards.lifetime(), None);
        let missing = Approval {
            requested_at: String::new(),
            ..approval
        };
        assert_eq!(missing.lifetime(), None);
    }

    #[test]
    fn a_202_carries_the_approval() {
        let mut headers = HeaderMap::new();
        headers.insert(
            LOCATION,
            HeaderValue::from_static("/.well-known/halo/approvals/a1"),
        );
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let body = json!({"id": "a1", "state": "pending", "tool": "t"}).to_string();
        let held = ToolResponse::new(StatusCode::ACCEPTED, headers.clone(), body.as_bytes());
        assert_eq!(Approval::from_response(&held).unwrap().id, "a1");
        let ok = ToolResponse::new(StatusCode::OK, headers, body.as_bytes());
        assert!(Approval::from_response(&ok).is_none());
    }
}
