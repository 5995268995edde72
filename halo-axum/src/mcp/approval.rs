//! Calls held for approval, over `/mcp` (HALO §10.3.2). A tool call the layer holds answers
//! `202 Accepted` with its approval; the bridge does not pass that on as the tool's result,
//! since to an MCP client the call is still the call it made. Instead:
//!
//! - a client that can be asked (it negotiated MCP `2026-07-28` or later and declared form
//!   elicitation), calling as someone who may approve their own calls, gets an
//!   `input_required` result: one `elicitation/create` asking to confirm the call, and the
//!   approval's id as the request state. Its retry carries the answer: accept approves the
//!   call (with the reason typed, if any), decline denies it, cancel leaves it pending;
//! - then, or for any other client, the bridge waits for the decision as an HTTP caller
//!   does: it reads the approval as the caller, in process, until the call ran (its answer is
//!   the result), was denied or expired (an error result saying so), or the approval's
//!   `expires_at` has passed.
//!
//! The stateless transport cannot send a request to the client in the middle of a call, so
//! an older client with elicitation (`2025-11-25`) waits like the others. Every read and
//! decision goes through the approvals endpoint as the caller: the request state names an
//! approval and nothing more, so a forged one can do nothing its sender could not do over
//! HTTP. While waiting, a client that sent a progress token gets one progress notification
//! naming the approval, and a cancelled request stops the wait: the approval stays pending
//! until someone decides it or it expires.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use halo_protocol::{
    APPROVALS_PATH, Confirmation, HeldCall as ShownCall, Problem, ToolOutput, confirmed_approval,
};
use http::header::{CONTENT_TYPE, LOCATION};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use rmcp::model::{InputResponses, ProgressNotificationParam, ProtocolVersion};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::layer::Shared;
use crate::local::Local;

/// The first pause between two reads of a pending approval; each pause doubles up to
/// [`MAX_DELAY`]. Reads are in process, so they cost little.
const FIRST_DELAY: Duration = Duration::from_millis(100);

/// The longest pause between two reads.
const MAX_DELAY: Duration = Duration::from_secs(2);

/// How long past `expires_at` the approval is read: the layer expires it when it is next
/// read.
const MARGIN: Duration = Duration::from_secs(2);

/// The longest wait believed, whatever `expires_at` says.
const MAX_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// Once approved, how much longer the call may take to run.
const RUN_WAIT: Duration = Duration::from_secs(10 * 60);

/// The longest approval id taken from a request state.
const MAX_ID: usize = 128;

/// An approval, as far as the bridge reads it.
#[derive(Debug, Deserialize)]
pub(super) struct Held {
    id: String,
    state: String,
    tool: String,
    #[serde(default)]
    call: Option<HeldCall>,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    expires_at: String,
    #[serde(default)]
    decided_by: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    response: Option<Ran>,
}

impl Held {
    /// The call as the confirmation shows it.
    fn shown(&self) -> ShownCall<'_> {
        let mut shown = ShownCall::new(&self.id, &self.tool, &self.expires_at);
        if let Some(call) = &self.call {
            shown = shown.call(&call.method, &call.url);
        }
        if let Some(arguments) = &self.arguments {
            shown = shown.arguments(arguments);
        }
        shown
    }
}

#[derive(Debug, Deserialize)]
struct HeldCall {
    method: String,
    url: String,
}

/// The answer of an approved call that ran.
#[derive(Debug, Deserialize)]
struct Ran {
    status: u16,
    #[serde(default)]
    body: Option<Value>,
}

/// Why an approval could not be read.
enum Unread {
    /// It will not be readable again (no longer kept, or not the caller's).
    Gone(String),
    /// Maybe next time.
    Passing,
}

/// The approval a call's answer holds: a `202` whose `Location` is an approval's, with the
/// approval as its body; `None` for any other answer.
pub(super) fn held(status: StatusCode, headers: &HeaderMap, body: &Value) -> Option<Held> {
    let location = headers.get(LOCATION)?.to_str().ok()?;
    let named = location
        .strip_prefix(APPROVALS_PATH)
        .is_some_and(|rest| rest.len() > 1 && rest.starts_with('/'));
    if status != StatusCode::ACCEPTED || !named {
        return None;
    }
    serde_json::from_value(body.clone()).ok()
}

/// The approvals of one MCP request's call: the layer (who may decide), the app, the
/// caller's HTTP request and the MCP request.
pub(super) struct Approvals<'a> {
    pub(super) layer: &'a Shared,
    pub(super) local: &'a Local,
    pub(super) caller: Option<&'a Parts>,
    pub(super) context: &'a RequestContext<RoleServer>,
}

impl Approvals<'_> {
    /// The result of a call held for approval: the confirmation, for a client that can be
    /// asked, else the call's end once decided.
    pub(super) async fn settle(&self, held: Held) -> rmcp::model::CallToolResponse {
        if self.can_ask() && self.decides_own().await {
            return held.shown().input_required().into();
        }
        rmcp::model::CallToolResult::from(self.wait(held).await).into()
    }

    /// The retry of a call that asked for confirmation, with `state` and the client's
    /// `responses`: the decision taken, then the call's end. `tool` is the manifest name of
    /// the tool called, which the approval must be of.
    pub(super) async fn resume(
        &self,
        tool: &str,
        state: &str,
        responses: Option<&InputResponses>,
    ) -> Result<ToolOutput, ErrorData> {
        let unknown =
            || ErrorData::invalid_params("the request state is not one of this server's", None);
        let id = confirmed_approval(state)
            .filter(|id| valid_id(id))
            .ok_or_else(unknown)?;
        let held = match self.read(id).await {
            Ok(held) if held.tool == tool => held,
            Ok(_) | Err(Unread::Gone(_)) => return Err(unknown()),
            Err(Unread::Passing) => {
                return Ok(ToolOutput::failure(format!(
                    "approval {id} could not be read; call again later"
                )));
            }
        };
        let held = match Confirmation::of_responses(responses) {
            _ if held.state != "pending" => held,
            Confirmation::Approve(reason) => self.decide(held, "approve", reason).await,
            Confirmation::Deny(reason) => self.decide(held, "deny", Some(reason)).await,
            // Cancelled: nobody decided; it waits for someone who does.
            _ => held,
        };
        Ok(self.wait(held).await)
    }

    /// Whether the client can be asked to confirm: it negotiated a version whose results
    /// may ask for input, and declared form elicitation.
    fn can_ask(&self) -> bool {
        let modern = self
            .context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let form = self
            .context
            .client_capabilities()
            .and_then(|capabilities| capabilities.elicitation)
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
        modern && form
    }

    /// Whether the caller may decide its own calls: the approver lets it decide, and lets
    /// callers decide their own.
    async fn decides_own(&self) -> bool {
        let (Some(approver), Some(caller)) = (self.layer.approvals.approver(), self.caller) else {
            return false;
        };
        if !approver.self_approval() {
            return false;
        }
        match self.layer.gate.identify(caller).await {
            Ok(Some(principal)) => approver.may_decide(&principal),
            _ => false,
        }
    }

    /// Approves or denies `held` as the caller: the approval as it then is. A refusal
    /// (`403`: the caller may not decide after all; `409`: decided already) leaves it to be
    /// read again.
    async fn decide(&self, held: Held, action: &str, reason: Option<String>) -> Held {
        let target = format!("{APPROVALS_PATH}/{}/{action}", held.id);
        let Ok(mut request) = self.local.request(self.caller, Method::POST, &target) else {
            return held;
        };
        request
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        *request.body_mut() = Body::from(json!({ "reason": reason }).to_string());
        match self.local.exchange(request).await {
            Ok((StatusCode::OK, _, body)) => serde_json::from_value(body).unwrap_or(held),
            _ => held,
        }
    }

    /// Reads approval `id` as the caller.
    async fn read(&self, id: &str) -> Result<Held, Unread> {
        let target = format!("{APPROVALS_PATH}/{id}");
        let request = self
            .local
            .request(self.caller, Method::GET, &target)
            .map_err(Unread::Gone)?;
        match self.local.exchange(request).await {
            Ok((StatusCode::OK, _, body)) => serde_json::from_value(body).map_err(|e| {
                Unread::Gone(format!("approval {id} is not as HALO describes it: {e}"))
            }),
            Ok((status, _, _))
                if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() =>
            {
                Err(Unread::Passing)
            }
            Ok((status, _, _)) => Err(Unread::Gone(format!(
                "approval {id} can no longer be read (status {})",
                status.as_u16()
            ))),
            Err(_) => Err(Unread::Passing),
        }
    }

    /// Waits for the decision on `held` and answers as its call does.
    async fn wait(&self, mut held: Held) -> ToolOutput {
        if let Some(output) = ended(&held) {
            return output;
        }
        self.tell_waiting(&held).await;
        let mut deadline = Instant::now() + lifetime(&held.expires_at) + MARGIN;
        let mut running = false;
        let mut delay = FIRST_DELAY;
        loop {
            let now = Instant::now();
            if now >= deadline {
                let what = if running { "run" } else { "decided" };
                return ToolOutput::failure(format!("approval {} was not {what} in time", held.id));
            }
            tokio::select! {
                () = tokio::time::sleep(delay.min(deadline - now)) => {}
                () = self.context.ct.cancelled() => {
                    return ToolOutput::failure(format!(
                        "the call was cancelled by the client; approval {} stays pending until \
                         someone decides it or it expires",
                        held.id
                    ));
                }
            }
            delay = (delay * 2).min(MAX_DELAY);
            match self.read(&held.id).await {
                Ok(read) => held = read,
                Err(Unread::Gone(message)) => return ToolOutput::failure(message),
                Err(Unread::Passing) => continue,
            }
            if let Some(output) = ended(&held) {
                return output;
            }
            if held.state == "approved" && !running {
                running = true;
                deadline = deadline.max(Instant::now() + RUN_WAIT);
            }
        }
    }

    /// Tells a client that sent a progress token that the call waits for approval.
    async fn tell_waiting(&self, held: &Held) {
        let Some(token) = self.context.meta.get_progress_token() else {
            return;
        };
        let message = format!(
            "waiting for approval {} of {} (expires {})",
            held.id, held.tool, held.expires_at
        );
        let note = ProgressNotificationParam::new(token, 0.0).with_message(message);
        // A client that stopped listening still gets the result.
        let _ = self.context.peer.notify_progress(note).await;
    }
}

/// The output of a decided approval: the answer of the call once it ran, an error when it
/// was denied or expired; `None` while it waits or runs.
fn ended(held: &Held) -> Option<ToolOutput> {
    match held.state.as_str() {
        "pending" => None,
        "approved" => {
            let ran = held.response.as_ref()?;
            Some(ToolOutput::from_response(
                ran.status,
                ran.body.clone().unwrap_or(Value::Null),
            ))
        }
        "denied" => {
            let mut detail = format!("approval {} was denied", held.id);
            if let Some(by) = &held.decided_by {
                let _ = write!(detail, " by {by}");
            }
            if let Some(reason) = &held.reason {
                let _ = write!(detail, ": {reason}");
            }
            detail.push_str("; the call did not run");
            Some(ToolOutput::problem(Problem::new(403).with_detail(detail)))
        }
        "expired" => Some(ToolOutput::problem(Problem::new(403).with_detail(format!(
            "approval {} expired at {} without a decision; the call did not run",
            held.id, held.expires_at
        )))),
        other => Some(ToolOutput::failure(format!(
            "approval {} is {other}, a state this server does not know",
            held.id
        ))),
    }
}

/// How long from now until `expires_at`: zero once past, 15 minutes when it cannot be read.
fn lifetime(expires_at: &str) -> Duration {
    match halo_protocol::parse_timestamp(expires_at) {
        Some(at) => at
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO)
            .min(MAX_WAIT),
        None => Duration::from_secs(15 * 60),
    }
}

/// Whether `id` is an approval id this server could have made.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document() -> Value {
        json!({"id": "a1", "href": "/.well-known/halo/approvals/a1", "state": "pending",
               "tool": "refund", "call": {"method": "POST", "url": "/refunds/1?key=secret"},
               "arguments": {"amount": 20, "card": "[redacted]"},
               "requested_at": "2026-12-02T10:00:00.000Z",
               "expires_at": "2026-12-02T10:15:00.000Z"})
    }

    #[test]
    fn only_a_202_naming_an_approval_is_held() {
        let mut headers = HeaderMap::new();
        assert!(held(StatusCode::ACCEPTED, &headers, &document()).is_none());
        headers.insert(LOCATION, HeaderValue::from_static("/jobs/1"));
        assert!(held(StatusCode::ACCEPTED, &headers, &document()).is_none());
        let approval = HeaderValue::from_static("/.well-known/halo/approvals/a1");
        headers.insert(LOCATION, approval);
        assert!(held(StatusCode::OK, &headers, &document()).is_none());
        assert!(held(StatusCode::ACCEPTED, &headers, &json!({"id": 1})).is_none());
        let found = held(StatusCode::ACCEPTED, &headers, &document()).expect("held");
        assert_eq!((found.id.as_str(), found.tool.as_str()), ("a1", "refund"));
    }

    #[test]
    fn the_confirmation_shows_the_call_without_its_query() {
        let found: Held = serde_json::from_value(document()).expect("an approval");
        let question = serde_json::to_value(found.shown().question()).expect("JSON");
        let text = question["message"].as_str().expect("a message");
        assert!(text.starts_with("Approve this call of the tool refund?\nPOST /refunds/1\n"));
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains(r#""card":"[redacted]""#), "{text}");
        assert!(ended(&found).is_none(), "pending");
        assert!(valid_id("a1") && !valid_id("../a1") && !valid_id(""));
        assert_eq!(lifetime("2000-01-01T00:00:00Z"), Duration::ZERO);
    }
}
