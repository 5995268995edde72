//! Calls held for approval (HALO §10.3.2), through `halo mcp`. The client is built not to
//! wait by itself, so a held call comes back as its `202` and its approval; then:
//!
//! - when the MCP client declared form elicitation and the caller may decide approvals (it
//!   may list them), the person at the client is asked to confirm the call: with an
//!   `elicitation/create` request on an MCP `2025-11-25` connection, or an `input_required`
//!   result (the approval's id as its request state) on `2026-07-28`, which forbids requests
//!   from the server. Accept approves the call (with the reason typed, if any), decline
//!   denies it, cancel leaves it pending. A server that lets nobody approve their own calls
//!   refuses the approval (`403`): the call then waits for someone else;
//! - then, or for any other client, it waits for the decision as `halo call` does
//!   ([`Client::wait_for_approval`]): the result is the call's answer once it ran, or an
//!   error saying who denied it and why, or that it expired.
//!
//! While waiting, a client that sent a progress token gets one progress notification naming
//! the approval; a cancelled request stops the wait, and the approval stays pending until
//! someone decides it or it expires (the server cannot cancel a held call). Decisions and
//! reads go to the API with `halo mcp`'s credentials, so a forged request state can do
//! nothing those credentials could not do over HTTP.

use std::time::{Duration, SystemTime};

use futures_util::future::{self, Either};
use halo_client::protocol::{Asking, Confirmation, HeldCall, ToolOutput, confirmed_approval};
use halo_client::{Approval, ApprovalState, Client};
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientResult, ElicitRequest, ElicitResult, InputResponses,
    ProgressNotificationParam, ServerRequest,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use super::log;
use super::task::Tasks;

/// How long a confirmation may take when the approval's expiry cannot be read.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// The approvals of one MCP request's call.
pub(super) struct Approvals<'a> {
    pub(super) client: &'a Client,
    pub(super) context: &'a RequestContext<RoleServer>,
    /// The tasks given to the client, for one that declared the Tasks extension.
    pub(super) tasks: &'a Tasks,
}

impl Approvals<'_> {
    /// The result of a call held for `approval`: a task for a client that declared the Tasks
    /// extension ([`task`](super::task)); else confirmed by the client when it can be asked,
    /// then waited for.
    pub(super) async fn settle(&self, approval: Approval) -> CallToolResponse {
        let wants_tasks = self
            .context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        if wants_tasks && let Some(task) = self.tasks.create(&approval) {
            return CallToolResponse::Task(task);
        }
        let shown = HeldCall::from_approval(&approval);
        let approval = match (self.asking().await, shown) {
            (Some(Asking::Result), Some(shown)) => return shown.input_required().into(),
            (Some(Asking::Request), Some(shown)) => match self.ask(&shown, &approval).await {
                Some(answer) => self.decide(approval, Confirmation::of(&answer)).await,
                None => approval,
            },
            _ => approval,
        };
        CallToolResult::from(self.wait(approval).await).into()
    }

    /// The retry of a call that asked for confirmation with an `input_required` result:
    /// `state` names the approval, `responses` carry the answer. `tool` is the manifest name
    /// of the tool called, which the approval must be of.
    pub(super) async fn resume(
        &self,
        tool: &str,
        state: &str,
        responses: Option<&InputResponses>,
    ) -> Result<ToolOutput, ErrorData> {
        let unknown =
            || ErrorData::invalid_params("the request state is not one of this server's", None);
        let id = confirmed_approval(state).ok_or_else(unknown)?;
        let approval = match self.client.approval(id).await {
            Ok(approval) if approval.tool == tool => approval,
            Ok(_) => return Err(unknown()),
            Err(error) if error.is_argument() || error.status().is_some() => {
                return Err(unknown());
            }
            Err(error) => return Ok(ToolOutput::from(&error)),
        };
        let approval = self
            .decide(approval, Confirmation::of_responses(responses))
            .await;
        Ok(self.wait(approval).await)
    }

    /// How the client can be asked to confirm, when it declared form elicitation and the
    /// caller may decide approvals.
    async fn asking(&self) -> Option<Asking> {
        let version = self.context.protocol_version();
        let capabilities = self.context.client_capabilities();
        let asking = Asking::of(version.as_ref(), capabilities.as_ref())?;
        // Only approvers may list approvals: a caller who may not decide is not asked.
        self.client.approvals().await.ok().map(|_| asking)
    }

    /// Asks the client to confirm the call `shown` with `elicitation/create`: its answer, or
    /// `None` when the request was cancelled, failed, or got no answer before `approval`
    /// expires.
    async fn ask(&self, shown: &HeldCall, approval: &Approval) -> Option<ElicitResult> {
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(shown.question()));
        let asked = self.context.peer.send_request(request);
        let bounded = tokio::time::timeout(lifetime(approval), asked);
        match future::select(Box::pin(bounded), Box::pin(self.context.ct.cancelled())).await {
            Either::Left((Ok(Ok(ClientResult::ElicitResult(answer))), _)) => Some(answer),
            Either::Left((Ok(Ok(_)), _)) => {
                log("the MCP client answered the confirmation with something else");
                None
            }
            Either::Left((Ok(Err(error)), _)) => {
                log(&format!("cannot ask the MCP client to confirm: {error}"));
                None
            }
            Either::Left((Err(_), _)) | Either::Right(_) => None,
        }
    }

    /// Approves or denies `approval` as the client's answer says (undecided leaves it as it
    /// is): the approval as it then is. A refusal (`403`: callers may not approve their own
    /// calls; `409`: decided already) leaves it to the wait.
    async fn decide(&self, approval: Approval, answer: Confirmation) -> Approval {
        if approval.state != ApprovalState::Pending {
            return approval;
        }
        let decided = match &answer {
            Confirmation::Approve(reason) => {
                self.client
                    .approve_with_reason(&approval.id, reason.as_deref())
                    .await
            }
            Confirmation::Deny(reason) => self.client.deny(&approval.id, Some(reason)).await,
            _ => return approval,
        };
        match decided {
            Ok(decided) => decided,
            Err(error) => {
                log(&format!(
                    "approval {} was not decided ({error}); waiting for a decision",
                    approval.id
                ));
                approval
            }
        }
    }

    /// Waits for the decision on `approval` and answers as its call does.
    async fn wait(&self, approval: Approval) -> ToolOutput {
        if approval.state == ApprovalState::Pending {
            self.tell_waiting(&approval).await;
        }
        let waited = self.client.wait_for_approval(&approval);
        match future::select(Box::pin(waited), Box::pin(self.context.ct.cancelled())).await {
            Either::Left((Ok(response), _)) => ToolOutput::from(&response),
            Either::Left((Err(error), _)) => ToolOutput::from(&error),
            Either::Right(((), _)) => ToolOutput::failure(format!(
                "the call was cancelled by the client; approval {} stays pending until someone \
                 decides it or it expires",
                approval.id
            )),
        }
    }

    /// Tells a client that sent a progress token that the call waits for approval.
    async fn tell_waiting(&self, approval: &Approval) {
        let (Some(token), Some(held)) = (
            self.context.meta.get_progress_token(),
            HeldCall::from_approval(approval),
        ) else {
            return;
        };
        let note = ProgressNotificationParam::new(token, 0.0).with_message(held.waiting());
        // A client that stopped listening still gets the result.
        let _ = self.context.peer.notify_progress(note).await;
    }
}

/// How long until `approval` expires (on the local clock): 15 minutes when its times cannot
/// be read, at most a day.
fn lifetime(approval: &Approval) -> Duration {
    approval
        .expires_at_time()
        .map_or(DEFAULT_LIFETIME, |at| {
            at.duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO)
        })
        .min(Duration::from_secs(24 * 60 * 60))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn approval(arguments: Value) -> Approval {
        serde_json::from_value(json!({
            "id": "a1", "state": "pending", "tool": "refund_payment",
            "call": {"method": "POST", "url": "/api/payments/ch_1/refund?token=secret"},
            "arguments": arguments,
            "requested_at": "2026-12-02T10:00:00.000Z", "expires_at": "2026-12-02T10:15:00.000Z",
        }))
        .expect("an approval")
    }

    #[test]
    fn the_confirmation_names_the_call_without_its_query() {
        let held = approval(json!({"reason": "returned", "card": "[redacted]"}));
        let shown = HeldCall::from_approval(&held).expect("an approval document");
        let question = serde_json::to_value(shown.question()).expect("JSON");
        let text = question["message"].as_str().expect("a message");
        assert!(
            text.starts_with("Approve this call of the tool refund_payment?"),
            "{text}"
        );
        assert!(
            text.contains("\nPOST /api/payments/ch_1/refund\n"),
            "{text}"
        );
        assert!(!text.contains("secret"), "{text}");
        assert!(text.contains(r#""card":"[redacted]""#), "{text}");
        assert!(
            text.contains("Approval a1 expires at 2026-12-02T10:15:00.000Z"),
            "{text}"
        );
        // A past expiry leaves no time to ask.
        let mut past = approval(Value::Null);
        past.expires_at = "2000-01-01T00:00:00Z".to_owned();
        assert_eq!(lifetime(&past), Duration::ZERO);
    }
}
