//! MCP Tasks (`io.modelcontextprotocol/tasks`, SEP-2663) in `halo mcp`, for a client that
//! declared the extension. Two kinds of calls answer with a task:
//!
//! - a call held for approval: the task's id names the approval (`approval-{id}`).
//!   `tasks/get` reads the approval from the API and shows it as the task (`working` while
//!   pending or running, `completed` with the call's result, `failed` when denied or
//!   expired, `cancelled` once withdrawn); `tasks/cancel` withdraws it ([`Client::withdraw`],
//!   `DELETE` of the approval), which the API allows its caller only. The approval is the
//!   task's state, kept by the API;
//! - a call of a streaming tool still running after a grace ([`TaskLimits`]): rmcp's
//!   [`TaskManager`] keeps its task in this process, its status message the call's last
//!   progress step ([`TaskSteps`]), its result the call's. `tasks/cancel` cancels the call on
//!   the API ([`Client::cancel`], `DELETE /.well-known/halo/calls/{id}`), and the task ends
//!   `cancelled` once the server stopped it. `halo mcp` has one client, so the bounds are its
//!   caller's: as many tasks at once as one caller may keep.
//!
//! `halo mcp` only answers for the tasks it gave its client (the last [`REMEMBERED`], a
//! streamed call's task counted while it is kept), and any other id is a task that does not
//! exist: a client reads its own tasks, not every approval the credentials may read.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use halo_client::protocol::{
    HeldCall, HeldStage, STREAMED_FIRST_MESSAGE, STREAMED_POLL_MS, TaskLimits, TaskSteps,
    TaskTimes, ToolOutput, cancellable, task_approval, task_not_found as not_found, task_over,
};
use halo_client::{Approval, ApprovalState, CallId, Client, StatusCode};

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, CreateTaskResult, DetailedTask};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use tokio::sync::mpsc::UnboundedReceiver;

use super::streamed::{Running, Step, follow};

/// How long a task is said to be kept when its approval's times cannot be read.
const UNKNOWN_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// How many task ids `halo mcp` remembers giving its client.
const REMEMBERED: usize = 1024;

/// The tasks given to the client.
pub(super) struct Tasks {
    given: Mutex<Given>,
    /// Keeps the tasks of streamed calls: their status, their result, their time to live.
    manager: TaskManager,
    limits: TaskLimits,
}

impl Default for Tasks {
    fn default() -> Self {
        Self::new(TaskLimits::default())
    }
}

/// The ids of the tasks given to the client.
#[derive(Default)]
struct Given {
    /// Of held calls, newest last.
    held: VecDeque<String>,
    /// Of streamed calls still kept.
    streamed: HashMap<String, StreamedCall>,
}

/// The call of a streamed call's task.
struct StreamedCall {
    /// Its id, as the server named it.
    id: Option<CallId>,
    created: Instant,
    /// When it ended.
    ended: Option<Instant>,
}

impl Tasks {
    pub(super) fn new(limits: TaskLimits) -> Self {
        Self {
            given: Mutex::new(Given::default()),
            manager: TaskManager::new(),
            limits,
        }
    }

    /// When a streamed call becomes a task, how many are kept, and for how long.
    pub(super) fn limits(&self) -> &TaskLimits {
        &self.limits
    }

    /// The tasks given, those of streamed calls no longer kept forgotten.
    fn given(&self) -> MutexGuard<'_, Given> {
        let mut given = self.given.lock().unwrap_or_else(PoisonError::into_inner);
        let limits = self.limits;
        given
            .streamed
            .retain(|_, call| limits.keeps(call.created, call.ended));
        given
    }

    /// The task a call held for `approval` answers with, remembered as the client's.
    pub(super) fn create(&self, approval: &Approval) -> Option<CreateTaskResult> {
        let task = task(approval)?;
        let mut given = self.given();
        while given.held.len() + given.streamed.len() >= REMEMBERED {
            if given.held.pop_front().is_none() {
                break;
            }
        }
        given.held.push_back(task.task.task_id.clone());
        Some(CreateTaskResult::new(task.task))
    }

    /// Makes the `running` streamed call a task, its `steps` the status message: the task,
    /// or the call and its steps back when as many tasks of streamed calls are kept as may
    /// be (or as many task ids as are remembered).
    pub(super) fn adopt(
        self: &Arc<Self>,
        running: Running,
        steps: UnboundedReceiver<Step>,
    ) -> Result<CreateTaskResult, (Running, UnboundedReceiver<Step>)> {
        // Held while the task is made, so that its call ending at once finds it.
        let mut given = self.given();
        let kept = given.streamed.len();
        if !self.limits.has_room(kept, kept) || given.held.len() + kept >= REMEMBERED {
            return Err((running, steps));
        }
        let id = running.id().cloned();
        let tasks = Arc::clone(self);
        let options = TaskOptions::new()
            .with_ttl_ms(self.limits.ttl_ms())
            .with_poll_interval_ms(STREAMED_POLL_MS)
            .with_status_message(STREAMED_FIRST_MESSAGE);
        let task = self.manager.spawn(options, move |context| {
            Box::pin(async move {
                let mut running = running;
                let mut words = TaskSteps::default();
                let ended = follow(running.end(), steps, |step| {
                    context.set_status_message(match step {
                        Step::Progress(data) => words.message(&data),
                        Step::Held(held) => held.task_message(),
                    });
                    std::future::ready(())
                })
                .await;
                if let Some(call) = tasks.given().streamed.get_mut(context.task_id()) {
                    call.ended = Some(Instant::now());
                }
                if ended.cancelled && context.is_cancel_requested() {
                    return Err(TaskExit::Cancelled);
                }
                Ok(CallToolResult::from(ended.output))
            })
        });
        let call = StreamedCall {
            id,
            created: Instant::now(),
            ended: None,
        };
        given.streamed.insert(task.task_id.clone(), call);
        Ok(CreateTaskResult::new(task))
    }

    /// The approval id of `task_id`, when it is a held call's task given to the client.
    fn approval<'a>(&self, task_id: &'a str) -> Result<&'a str, ErrorData> {
        let given = self.given();
        match task_approval(task_id) {
            Some(id) if given.held.iter().any(|held| held == task_id) => Ok(id),
            _ => Err(not_found(task_id)),
        }
    }

    /// The call of `task_id`, when it is a streamed call's task given to the client (its id,
    /// as the server named it).
    fn streamed(&self, task_id: &str) -> Option<Option<CallId>> {
        self.given()
            .streamed
            .get(task_id)
            .map(|call| call.id.clone())
    }

    /// `tasks/get`: a streamed call's task as it is, or the approval, read from the API, as
    /// its task.
    pub(super) async fn get(
        &self,
        client: &Client,
        task_id: &str,
    ) -> Result<DetailedTask, ErrorData> {
        if self.streamed(task_id).is_some() {
            return self
                .manager
                .get_task(task_id)
                .map_err(|_| not_found(task_id));
        }
        let id = self.approval(task_id)?;
        let approval = read(client, task_id, id).await?;
        task(&approval).ok_or_else(|| not_found(task_id))
    }

    /// `tasks/cancel`: cancels a streamed call on the API, or withdraws the approval, as its
    /// caller.
    pub(super) async fn cancel(&self, client: &Client, task_id: &str) -> Result<(), ErrorData> {
        if let Some(call) = self.streamed(task_id) {
            return self.cancel_streamed(client, task_id, call).await;
        }
        let id = self.approval(task_id)?;
        match client.withdraw(id).await {
            Ok(_) => Ok(()),
            Err(error) if error.status() == Some(StatusCode::CONFLICT) => {
                let state = read(client, task_id, id).await?.state;
                Err(task_over(task_id, status_words(state)))
            }
            Err(error) => Err(unread(task_id, &error)),
        }
    }

    /// `tasks/cancel` of a streamed call's task: the call, named `call` by the server, is
    /// cancelled on the API; its `409` end then ends the task `cancelled`. A call that ended
    /// meanwhile ends its task as it ended.
    async fn cancel_streamed(
        &self,
        client: &Client,
        task_id: &str,
        call: Option<CallId>,
    ) -> Result<(), ErrorData> {
        cancellable(task_id, self.manager.get_task(task_id))?;
        // The intent first: the call's cancelled end then ends the task `cancelled`.
        self.manager
            .cancel_task(task_id)
            .map_err(|_| not_found(task_id))?;
        // No id: the server answered without a stream, so the call is over.
        let Some(id) = call else { return Ok(()) };
        match client.cancel(&id).await {
            Ok(_) => Ok(()),
            // It ended before the cancel reached it.
            Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => Ok(()),
            Err(error) => Err(ErrorData::internal_error(
                format!("the call of task {task_id} could not be cancelled: {error}"),
                None,
            )),
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
