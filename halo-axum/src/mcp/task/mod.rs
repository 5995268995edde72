//! MCP Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) on `/mcp`, for clients
//! that declare the extension.
//!
//! Two kinds of calls answer with a task (`resultType: "task"`) rather than with their
//! result:
//!
//! - a call the layer holds for approval (`held`): the task's id names the approval
//!   (`approval-{id}`), and the approvals' own functions read and withdraw it, as its caller.
//!   It is `working` while the approval is pending (its message says where it is decided)
//!   and while the approved call runs, `completed` with the call's result once it ran,
//!   `failed` when it was denied or expired (the error's `data` is the problem details), and
//!   `cancelled` once withdrawn. With approvals kept in Redis, any replica answers for it;
//! - a call of a streaming tool still running after a short grace (`streamed`): the task
//!   lives in the instance that runs the call (as a hosted agent's run does), bounded per
//!   caller and in all, and kept for a time to live ([`TaskLimits`]). Its status message is
//!   the handler's last progress step, and its result the call's.
//!
//! `tasks/get` reads a task, `tasks/cancel` withdraws a pending approval (as `DELETE` of the
//! approval does) or cancels a running streamed call (as `DELETE` of the call does), and
//! `tasks/update` has nothing to deliver: these tasks never ask for input. Every task is its
//! caller's: any other caller (an approver included) is told that no such task exists, which
//! is also what an unknown id gets (`-32602`).

mod held;
mod streamed;

use std::sync::Arc;

// The error for a task that does not exist, or is not the caller's.
use halo_protocol::{task_approval, task_not_found as not_found};
use http::request::Parts;
use rmcp::ErrorData;
use rmcp::model::{CreateTaskResult, DetailedTask, ErrorCode};

pub(super) use self::streamed::{Answer, Running, Streamed, call_id};
use crate::layer::Shared;
use crate::layer::held::decision::Entry;
pub use halo_protocol::TaskLimits;

/// Why a task request cannot be done, besides a task that does not exist or is over.
enum TaskError {
    /// The approvals' store cannot be reached.
    Unreachable,
}

impl TaskError {
    fn error(self, task_id: &str) -> ErrorData {
        match self {
            Self::Unreachable => ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "task {task_id} cannot be read now: the store of approvals cannot be \
                     reached; try again later"
                ),
                None,
            ),
        }
    }
}

/// The tasks of `/mcp`: those of held approvals (in the approvals' book) and those of
/// streamed calls (in this instance).
pub(super) struct Tasks<'a> {
    pub(super) layer: &'a Arc<Shared>,
    pub(super) streamed: &'a Arc<Streamed>,
    /// The MCP request's HTTP request: its credentials say whose tasks are read.
    pub(super) parts: Option<&'a Parts>,
}

impl Tasks<'_> {
    /// `tasks/get`.
    pub(super) async fn get(&self, task_id: &str) -> Result<DetailedTask, ErrorData> {
        match task_approval(task_id) {
            Some(id) => held::get(self.layer, self.parts, task_id, id).await,
            None => self.streamed.get(self.layer, self.parts, task_id).await,
        }
    }

    /// `tasks/cancel`.
    pub(super) async fn cancel(&self, task_id: &str) -> Result<(), ErrorData> {
        match task_approval(task_id) {
            Some(id) => held::cancel(self.layer, self.parts, task_id, id).await,
            None => {
                let streamed = Arc::clone(self.streamed);
                streamed.cancel(self.layer, self.parts, task_id).await
            }
        }
    }

    /// `tasks/update`: the task exists and is the caller's; there is nothing to deliver.
    pub(super) async fn update(&self, task_id: &str) -> Result<(), ErrorData> {
        self.get(task_id).await.map(|_| ())
    }
}

/// The task a call held for approval answers with, `entry` being its approval.
pub(super) fn held_task(layer: &Shared, entry: &Entry) -> CreateTaskResult {
    CreateTaskResult::new(held::task(layer, entry).task)
}
