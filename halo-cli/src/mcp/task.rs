//! MCP Tasks (`io.modelcontextprotocol/tasks`, SEP-2663) in `halo mcp`, for a client that
//! declared the extension: a call held for approval answers with a task whose id names the
//! approval (`approval-{id}`). `tasks/get` reads the approval from the API and shows it as
//! the task (`working` while pending or running, `completed` with the call's result,
//! `failed` when denied or expired, `cancelled` once withdrawn); `tasks/cancel` withdraws it
//! ([`Client::withdraw`], `DELETE` of the approval), which the API allows its caller only.
//!
//! The approval is the task's state, kept by the API; `halo mcp` only remembers which tasks
//! it gave its client (the last [`REMEMBERED`]), and any other id is a task that does not
//! exist: a client reads its own tasks, not every approval the credentials may read.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use halo_client::protocol::{HeldCall, HeldStage, TaskTimes, ToolOutput, task_approval};
use halo_client::{Approval, ApprovalState, Client, StatusCode};

use rmcp::ErrorData;
use rmcp::model::{CreateTaskResult, DetailedTask};

/// How long a task is said to be kept when its approval's times cannot be read.
const UNKNOWN_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// How many task ids `halo mcp` remembers giving its client.
const REMEMBERED: usize = 1024;

/// The tasks of held calls given to the client, newest last.
#[derive(Default)]
pub(super) struct Tasks {
    issued: Mutex<VecDeque<String>>,
}

impl Tasks {
    /// The task a call held for `approval` answers with, remembered as the client's.
    pub(super) fn create(&self, approval: &Approval) -> Option<CreateTaskResult> {
        let task = task(approval)?;
        let mut issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
        if issued.len() >= REMEMBERED {
            issued.pop_front();
        }
        issued.push_back(task.task.task_id.clone());
        Some(CreateTaskResult::new(task.task))
    }

    /// The approval id of `task_id`, when it is a task given to the client.
    fn approval<'a>(&self, task_id: &'a str) -> Result<&'a str, ErrorData> {
        let issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
        match task_approval(task_id) {
            Some(id) if issued.iter().any(|given| given == task_id) => Ok(id),
            _ => Err(not_found(task_id)),
        }
    }

    /// `tasks/get`: the approval, read from the API, as its task.
    pub(super) async fn get(
        &self,
        client: &Client,
        task_id: &str,
    ) -> Result<DetailedTask, ErrorData> {
        let id = self.approval(task_id)?;
        let approval = read(client, task_id, id).await?;
        task(&approval).ok_or_else(|| not_found(task_id))
    }

    /// `tasks/cancel`: withdraws the approval, as its caller.
    pub(super) async fn cancel(&self, client: &Client, task_id: &str) -> Result<(), ErrorData> {
        let id = self.approval(task_id)?;
        match client.withdraw(id).await {
            Ok(_) => Ok(()),
            Err(error) if error.status() == Some(StatusCode::CONFLICT) => {
                let state = read(client, task_id, id).await?.state;
                Err(ErrorData::invalid_params(
                    format!(
                        "task {task_id} cannot be cancelled: it is {}",
                        status_words(state)
                    ),
                    None,
                ))
            }
            Err(error) => Err(unread(task_id, &error)),
        }
    }
}

/// Approval `id` of task `task_id`, read from the API.
async fn read(client: &Client, task_id: &str, id: &str) -> Result<Approval, ErrorData> {
    client
        .approval(id)
        .await
        .map_err(|error| unread(task_id, &error))
}

/// The JSON-RPC error for a failure to read or withdraw the approval of `task_id`.
fn unread(task_id: &str, error: &halo_client::Error) -> ErrorData {
    match error.status() {
        // Gone, or never the caller's.
        Some(StatusCode::NOT_FOUND | StatusCode::FORBIDDEN) => not_found(task_id),
        _ if error.is_argument() => not_found(task_id),
        _ => ErrorData::internal_error(
            format!("task {task_id} cannot be read now: {error}; try again later"),
            None,
        ),
    }
}

/// The error for a task that does not exist, or is not the client's.
fn not_found(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("no task of yours is named `{task_id}`"), None)
}

/// The task of a call held for `approval`, as it now is.
fn task(approval: &Approval) -> Option<DetailedTask> {
    let held = HeldCall::from_approval(approval)?;
    let lifetime = match (approval.requested_at_time(), approval.expires_at_time()) {
        (Some(requested), Some(expires)) => expires.duration_since(requested).unwrap_or_default(),
        _ => UNKNOWN_LIFETIME,
    };
    let updated = match approval.state {
        ApprovalState::Expired => &approval.expires_at,
        _ => &approval.requested_at,
    };
    let ttl_ms = u64::try_from(lifetime.as_millis()).unwrap_or(u64::MAX);
    let times = TaskTimes::new(approval.requested_at.clone(), updated.clone(), ttl_ms);
    Some(held.task(stage(approval), &times))
}

/// Where the call of `approval` stands.
fn stage(approval: &Approval) -> HeldStage {
    let id = &approval.id;
    match approval.state {
        ApprovalState::Pending => HeldStage::Pending,
        ApprovalState::Approved => match &approval.response {
            Some(response) => HeldStage::Ran(ToolOutput::from_response(
                response.status,
                response.body.clone().unwrap_or_default(),
            )),
            None => HeldStage::Running,
        },
        ApprovalState::Denied => HeldStage::denied(
            id,
            approval.decided_by.as_deref(),
            approval.reason.as_deref(),
        ),
        ApprovalState::Expired => HeldStage::expired(id, &approval.expires_at),
        ApprovalState::Cancelled => HeldStage::Withdrawn,
        // A state this version does not know: not over, as far as it can tell.
        _ => HeldStage::Running,
    }
}

/// How the task of an approval in `state` is told.
fn status_words(state: ApprovalState) -> &'static str {
    match state {
        ApprovalState::Pending => "working",
        ApprovalState::Approved => "working or completed (its call was approved)",
        ApprovalState::Denied | ApprovalState::Expired => "failed",
        ApprovalState::Cancelled => "cancelled",
        _ => "over",
    }
}

#[cfg(test)]
mod tests {
    use halo_client::protocol::approval_task_id;
    use rmcp::model::TaskStatus;
    use serde_json::json;

    use super::*;

    fn approval(state: &str) -> Approval {
        serde_json::from_value(json!({
            "id": "a1", "state": state, "tool": "refund_payment",
            "decided_by": "carol", "reason": "disputed",
            "requested_at": "2026-12-02T10:00:00.000Z", "expires_at": "2026-12-02T10:15:00.000Z",
        }))
        .expect("an approval")
    }

    #[test]
    fn only_the_tasks_given_are_read() {
        let tasks = Tasks::default();
        let pending = approval("pending");
        let created = tasks.create(&pending).expect("a task");
        assert_eq!(created.task.task_id, approval_task_id("a1"));
        assert_eq!(created.task.ttl_ms, Some(15 * 60 * 1000));
        assert!(tasks.approval(&created.task.task_id).is_ok());
        assert!(tasks.approval("approval-a2").is_err());
        let denied = task(&approval("denied")).expect("a task");
        assert_eq!(denied.status(), TaskStatus::Failed);
        let message = denied.task.status_message.expect("a message");
        assert_eq!(
            message,
            "approval a1 was denied by carol: disputed; the call did not run"
        );
    }
}
