//! Calls held for approval, over `/mcp` (HALO §10.3.2). A tool call the layer holds answers
//! `202 Accepted` with its approval; the bridge does not pass that on as the tool's result,
//! since to an MCP client the call is still the call it made. Instead:
//!
//! - a client that declared the MCP Tasks extension gets a task naming the approval
//!   ([`task`](super::task)), read and withdrawn later with `tasks/get` and `tasks/cancel`;
//! - a client that can be asked (it negotiated MCP `2026-07-28` or later and declared form
//!   elicitation), calling as someone who may approve their own calls, gets an
//!   `input_required` result: one `elicitation/create` asking to confirm the call, and the
//!   approval's id as the request state. Its retry carries the answer: accept approves the
//!   call (with the reason typed, if any), decline denies it, cancel leaves it pending;
//! - then, or for any other client, the bridge waits for the approval to end: the call ran
//!   (its answer is the result), was denied or expired (an error result saying so).
//!
//! The stateless transport cannot send a request to the client in the middle of a call, so
//! an older client with elicitation (`2025-11-25`) waits like the others. The bridge reads,
//! decides and waits through the approvals' own functions, as the caller (identified once
//! from the MCP request's credentials): the request state names an approval and nothing
//! more, so a forged one can do nothing its sender could not do over HTTP. The wait watches
//! the approval in this process and does not read it again and again (only an approval that
//! another replica holds in Redis is read every while). It is bounded by the approval's
//! expiry plus a margin, and longer once it is approved and runs. While waiting, a client
//! that sent a progress token gets one progress notification naming the approval, and a
//! cancelled request stops the wait: the approval stays pending until someone decides it or
//! it expires.

use std::fmt::Write as _;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use halo_protocol::{
    APPROVALS_PATH, Confirmation, HeldCall, HeldStage, Problem, Rfc3339, ToolOutput,
    confirmed_approval,
};
use http::header::LOCATION;
use http::request::Parts;
use http::{HeaderMap, StatusCode};
use rmcp::ErrorData;
use rmcp::model::{CreateTaskResult, InputResponses, ProgressNotificationParam};
use serde_json::Value;
use tokio::time::Instant;

use super::asked::Asked;
use crate::Principal;
use crate::layer::Shared;
use crate::layer::held::decision::{
    Entry, Phase, Refusal, State, decide_as, kept_answer, read_as, wait_end,
};

/// How long past its expiry an approval is waited for before the wait looks at it once more:
/// it expires on its own at its deadline, so this is only a bound.
const MARGIN: Duration = Duration::from_secs(2);

/// Once approved, how much longer the call may take to run.
const RUN_WAIT: Duration = Duration::from_secs(10 * 60);

/// The longest approval id taken from a request state.
const MAX_ID: usize = 128;

/// The call a call's answer holds for approval: a `202` whose `Location` is an approval's,
/// with the approval as its body; `None` for any other answer.
pub(super) fn held(status: StatusCode, headers: &HeaderMap, body: &Value) -> Option<HeldCall> {
    let location = headers.get(LOCATION)?.to_str().ok()?;
    let named = location
        .strip_prefix(APPROVALS_PATH)
        .is_some_and(|rest| rest.len() > 1 && rest.starts_with('/'));
    if status != StatusCode::ACCEPTED || !named {
        return None;
    }
    HeldCall::from_approval(body)
}

/// The approvals of one MCP request's call: the layer (its approvals, and who may decide),
/// the caller's HTTP request and the MCP request.
pub(super) struct Approvals<'a> {
    pub(super) layer: &'a Arc<Shared>,
    pub(super) caller: Option<&'a Parts>,
    pub(super) asked: Asked<'a>,
}

impl Approvals<'_> {
    /// The result of a call held for approval: a task, for a client that declared the Tasks
    /// extension; the confirmation, for a client that can be asked; else the call's end once
    /// decided.
    pub(super) async fn settle(&self, held: HeldCall) -> rmcp::model::CallToolResponse {
        if self.asked.wants_tasks()
            && let Some(task) = self.task(&held).await
        {
            return rmcp::model::CallToolResponse::Task(task);
        }
        let output = match self.identify(held.id()).await {
            Ok(caller) if self.can_ask() && self.decides_own(caller.as_ref()) => {
                return held.input_required().into();
            }
            Ok(caller) => match read_as(self.layer, caller.as_ref(), held.id()).await {
                Ok(entry) => self.wait(caller.as_ref(), entry).await,
                Err(refusal) => unread(held.id(), refusal),
            },
            Err(refused) => refused,
        };
        rmcp::model::CallToolResult::from(output).into()
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
        let caller = match self.identify(id).await {
            Ok(caller) => caller,
            Err(refused) => return Ok(refused),
        };
        let caller = caller.as_ref();
        let entry = match read_as(self.layer, caller, id).await {
            Ok(entry) if entry.request.tool() == tool => entry,
            Ok(_) | Err(Refusal::Missing) => return Err(unknown()),
            Err(refusal) => return Ok(unread(id, refusal)),
        };
        let entry = match Confirmation::of_responses(responses) {
            _ if entry.phase() != Phase::Pending => entry,
            Confirmation::Approve(reason) => self.decide(caller, entry, true, reason).await,
            Confirmation::Deny(reason) => self.decide(caller, entry, false, Some(reason)).await,
            // Cancelled: nobody decided; it waits for someone who does.
            _ => entry,
        };
        Ok(self.wait(caller, entry).await)
    }

    /// The task of the call held for `held`, read as the caller; `None` when the approval
    /// cannot be read (the call is then settled as for a client without tasks).
    async fn task(&self, held: &HeldCall) -> Option<CreateTaskResult> {
        let caller = self.identify(held.id()).await.ok()?;
        let entry = read_as(self.layer, caller.as_ref(), held.id()).await.ok()?;
        Some(super::task::held_task(self.layer, &entry))
    }

    /// The caller, as the layer identifies the MCP request's credentials; an error result
    /// (approval `id` cannot be read) when it refuses them.
    async fn identify(&self, id: &str) -> Result<Option<Principal>, ToolOutput> {
        let Some(parts) = self.caller else {
            return Ok(None);
        };
        self.layer.gate.identify(parts).await.map_err(|_| {
            ToolOutput::problem(Problem::new(401).with_detail(format!(
                "the credentials were refused, so approval {id} cannot be read"
            )))
        })
    }

    /// Whether the client can be asked to confirm: with an `input_required` result, since
    /// the stateless transport cannot send it a request in the middle of a call.
    fn can_ask(&self) -> bool {
        self.asked.can_ask()
    }

    /// Whether `caller` may decide its own calls: the approver lets it decide, and lets
    /// callers decide their own.
    fn decides_own(&self, caller: Option<&Principal>) -> bool {
        let (Some(approver), Some(caller)) = (self.layer.approvals.approver(), caller) else {
            return false;
        };
        approver.self_approval() && approver.may_decide(caller)
    }

    /// Approves (`approve`) or denies `entry` as `caller`: the approval once decided (and run,
    /// when approved). A refusal (the caller may not decide after all, or it was decided
    /// already) leaves `entry` to be waited for.
    async fn decide(
        &self,
        caller: Option<&Principal>,
        entry: Arc<Entry>,
        approve: bool,
        reason: Option<String>,
    ) -> Arc<Entry> {
        match decide_as(self.layer, caller, &entry.id, approve, reason).await {
            Ok(decided) => decided,
            Err(_) => entry,
        }
    }

    /// Waits for `entry` to end and answers as its call does. The wait ends when the
    /// approval does (notified, not read again and again), when the client cancels, or at
    /// the approval's deadline plus [`MARGIN`]: it is then read once more, and a call that
    /// was approved and still runs is given [`RUN_WAIT`] more.
    async fn wait(&self, caller: Option<&Principal>, entry: Arc<Entry>) -> ToolOutput {
        if let Some(output) = ended(&entry) {
            return output;
        }
        self.tell_waiting(&entry).await;
        let id = Arc::clone(&entry.id);
        let mut deadline = entry.deadline + MARGIN;
        let mut running = false;
        let mut end = pin!(wait_end(self.layer, entry));
        loop {
            tokio::select! {
                last = &mut end => {
                    return ended(&last).unwrap_or_else(|| {
                        ToolOutput::failure(format!(
                            "approval {id} can no longer be read; it was {} when last read",
                            phase_words(last.phase())
                        ))
                    });
                }
                () = self.asked.cancelled() => {
                    return ToolOutput::failure(format!(
                        "the call was cancelled by the client; approval {id} stays pending until \
                         someone decides it or it expires"
                    ));
                }
                () = tokio::time::sleep_until(deadline) => {
                    let now = read_as(self.layer, caller, &id).await;
                    if let Ok(now) = &now {
                        if let Some(output) = ended(now) {
                            return output;
                        }
                        if now.phase() == Phase::Running && !running {
                            running = true;
                            deadline = Instant::now() + RUN_WAIT;
                            continue;
                        }
                    }
                    let what = if running { "run" } else { "decided" };
                    return ToolOutput::failure(format!("approval {id} was not {what} in time"));
                }
            }
        }
    }

    /// Tells a client that sent a progress token that the call waits for approval.
    async fn tell_waiting(&self, entry: &Entry) {
        let Some(token) = self.asked.progress_token() else {
            return;
        };
        let expires_at = Rfc3339(entry.expires_at).to_string();
        let held = HeldCall::new(&*entry.id, entry.request.tool(), expires_at);
        let note = ProgressNotificationParam::new(token, 0.0).with_message(held.waiting());
        self.asked.notify_progress(note).await;
    }
}

/// The output of an approval that ended: the answer of the call once it ran, an error when
/// it was denied, expired or withdrawn; `None` while it waits or runs.
fn ended(entry: &Entry) -> Option<ToolOutput> {
    match stage(entry) {
        HeldStage::Pending | HeldStage::Running => None,
        HeldStage::Ran(output) => Some(output),
        HeldStage::NotRun(problem) => Some(ToolOutput::problem(problem)),
        HeldStage::Withdrawn => {
            let mut detail = format!("approval {} was cancelled", entry.id);
            entry.with_state(|state| {
                if let State::Cancelled { by, reason } = state {
                    if let Some(by) = by {
                        let _ = write!(detail, " by {by}");
                    }
                    let _ = write!(detail, ": {reason}");
                }
            });
            detail.push_str("; the call did not run");
            Some(ToolOutput::problem(Problem::new(409).with_detail(detail)))
        }
        _ => None,
    }
}

/// Where the call of `entry` stands: waiting, running, ran (its answer), denied or expired
/// (why, as a `403` problem), or withdrawn. What a waiting call ends with, and what its task
/// shows ([`task`](super::task)).
pub(super) fn stage(entry: &Entry) -> HeldStage {
    let id = &entry.id;
    match entry.phase() {
        Phase::Pending => HeldStage::Pending,
        Phase::Running => HeldStage::Running,
        Phase::Ran => match kept_answer(entry) {
            Some((status, body)) => {
                HeldStage::Ran(ToolOutput::from_response(status.as_u16(), body))
            }
            // Ran, and its answer not read yet: it is told as running.
            None => HeldStage::Running,
        },
        Phase::Denied => entry.with_state(|state| match state {
            State::Denied { by, reason } => HeldStage::denied(id, Some(by), reason.as_deref()),
            _ => HeldStage::denied(id, None, None),
        }),
        Phase::Expired => HeldStage::expired(id, &Rfc3339(entry.expires_at).to_string()),
        Phase::Cancelled => HeldStage::Withdrawn,
    }
}

/// How a phase that has not ended is told.
fn phase_words(phase: Phase) -> &'static str {
    match phase {
        Phase::Pending => "pending",
        _ => "approved",
    }
}

/// The error result for approval `id` that `refusal` kept from being read.
fn unread(id: &str, refusal: Refusal) -> ToolOutput {
    match refusal {
        Refusal::Unreachable => ToolOutput::failure(format!(
            "approval {id} could not be read: the store of approvals cannot be reached; read \
             {APPROVALS_PATH}/{id} later"
        )),
        _ => ToolOutput::failure(format!("approval {id} can no longer be read")),
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
    use http::HeaderValue;
    use serde_json::json;

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
        assert_eq!(
            found,
            HeldCall::from_approval(&document()).expect("an approval")
        );
        assert_eq!(found.id(), "a1");
    }

    #[test]
    fn the_confirmation_shows_the_call_without_its_query() {
        let found = HeldCall::from_approval(&document()).expect("an approval");
        let question = serde_json::to_value(found.question()).expect("JSON");
        let text = question["message"].as_str().expect("a message");
        assert!(text.starts_with("Approve this call of the tool refund?\nPOST /refunds/1\n"));
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains(r#""card":"[redacted]""#), "{text}");
        assert!(valid_id("a1") && !valid_id("../a1") && !valid_id(""));
        assert!(!valid_id(&"a".repeat(MAX_ID + 1)));
    }
}
