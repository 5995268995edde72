//! A call held for approval as an MCP task (the Tasks extension,
//! `io.modelcontextprotocol/tasks`, SEP-2663), as both MCP bridges show it to a client that
//! declared the extension: the task's id names the approval, and its status follows the
//! approval's state.
//!
//! | approval | task |
//! |---|---|
//! | pending | `working`, the message saying where it is decided |
//! | approved, the call running | `working` |
//! | the call ran | `completed`, the call's tool result (`isError` for a `4xx`/`5xx`) |
//! | denied, expired | `failed`, an error whose `data` is the problem details |
//! | withdrawn | `cancelled` |

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, DetailedTask, ErrorCode, JsonObject, Task, TaskPayload, TaskStatus,
};
use serde_json::Value;

use crate::{APPROVALS_PATH, HeldCall, Problem, ToolOutput};

/// What the id of a held call's task starts with; the approval's id follows.
const PREFIX: &str = "approval-";

/// The longest approval id a task id may name.
const MAX_ID: usize = 128;

/// The poll interval suggested for a held call's task, in milliseconds: a person decides it,
/// so polling more often learns nothing sooner.
pub const APPROVAL_POLL_MS: u64 = 2_000;

/// The JSON-RPC error code of a `failed` task whose call did not run (denied or expired):
/// the first of the codes JSON-RPC leaves to servers. Its `data` is the problem details.
pub const NOT_RUN: i32 = -32_000;

/// The id of the task of a call held for approval `approval`.
///
/// ```
/// use halo_protocol::{approval_task_id, task_approval};
///
/// let task = approval_task_id("3f9c");
/// assert_eq!(task, "approval-3f9c");
/// assert_eq!(task_approval(&task), Some("3f9c"));
/// assert_eq!(task_approval("approval-../x"), None);
/// assert_eq!(task_approval("0b7e-…"), None);
/// ```
#[must_use]
pub fn approval_task_id(approval: &str) -> String {
    format!("{PREFIX}{approval}")
}

/// The approval a task id names, when it is the id of a held call's task and the approval id
/// could be one (1 to 128 letters, digits, `-` or `_`); `None` for any other.
#[must_use]
pub fn task_approval(task_id: &str) -> Option<&str> {
    task_id.strip_prefix(PREFIX).filter(|id| {
        !id.is_empty()
            && id.len() <= MAX_ID
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// Where a held call stands, as its task shows it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HeldStage {
    /// Nobody decided it yet.
    Pending,
    /// Approved; the call runs.
    Running,
    /// The call ran: its output.
    Ran(ToolOutput),
    /// Denied or expired: why the call did not run.
    NotRun(Problem),
    /// Withdrawn by its caller (or cancelled by an administrator): the call never runs.
    Withdrawn,
}

impl HeldStage {
    /// Approval `id` was denied (by `by`, for `reason`): a `403` saying so.
    ///
    /// ```
    /// use halo_protocol::HeldStage;
    ///
    /// let HeldStage::NotRun(problem) = HeldStage::denied("a1", Some("carol"), Some("disputed")) else {
    ///     unreachable!()
    /// };
    /// assert_eq!(problem.status, 403);
    /// assert_eq!(
    ///     problem.detail.as_deref(),
    ///     Some("approval a1 was denied by carol: disputed; the call did not run")
    /// );
    /// ```
    #[must_use]
    pub fn denied(id: &str, by: Option<&str>, reason: Option<&str>) -> Self {
        let mut detail = format!("approval {id} was denied");
        if let Some(by) = by {
            detail.push_str(" by ");
            detail.push_str(by);
        }
        if let Some(reason) = reason {
            detail.push_str(": ");
            detail.push_str(reason);
        }
        detail.push_str("; the call did not run");
        Self::NotRun(Problem::new(403).with_detail(detail))
    }

    /// Approval `id` expired at `expires_at` (RFC 3339) undecided: a `403` saying so.
    #[must_use]
    pub fn expired(id: &str, expires_at: &str) -> Self {
        Self::NotRun(Problem::new(403).with_detail(format!(
            "approval {id} expired at {expires_at} without a decision; the call did not run"
        )))
    }
}

/// When a held call's task was made and last moved (RFC 3339), and how long it is kept from
/// when it was made, in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskTimes {
    /// When the call was held (the approval's `requested_at`).
    pub created_at: String,
    /// When it last moved (its decision, or when it was held).
    pub updated_at: String,
    /// How long after `created_at` the task can be read.
    pub ttl_ms: u64,
}

impl TaskTimes {
    /// The times of a task made at `created_at`, last moved at `updated_at`, kept `ttl_ms`.
    #[must_use]
    pub fn new(created_at: impl Into<String>, updated_at: impl Into<String>, ttl_ms: u64) -> Self {
        Self {
            created_at: created_at.into(),
            updated_at: updated_at.into(),
            ttl_ms,
        }
    }
}

impl HeldCall {
    /// The task of this held call at `stage`.
    ///
    /// ```
    /// use halo_protocol::{HeldCall, HeldStage, Problem, TaskTimes};
    /// use rmcp::model::TaskStatus;
    ///
    /// let held = HeldCall::new("a1", "refund", "2026-12-02T10:15:00Z");
    /// let times = TaskTimes::new("2026-12-02T10:00:00Z", "2026-12-02T10:00:00Z", 900_000);
    /// let task = held.task(HeldStage::Pending, &times);
    /// assert_eq!(task.status(), TaskStatus::Working);
    /// assert_eq!(task.task.task_id, "approval-a1");
    /// let message = task.task.status_message.unwrap();
    /// assert!(message.contains("/.well-known/halo/approvals/a1"), "{message}");
    /// let denied = Problem::new(403).with_detail("approval a1 was denied by carol");
    /// let task = held.task(HeldStage::NotRun(denied), &times);
    /// assert_eq!(task.status(), TaskStatus::Failed);
    /// ```
    #[must_use]
    pub fn task(&self, stage: HeldStage, times: &TaskTimes) -> DetailedTask {
        let id = self.id();
        let (message, payload) = match stage {
            HeldStage::Pending => (self.task_message(), TaskPayload::Working),
            HeldStage::Running => (
                format!(
                    "approval {id} was approved; the call of {} runs",
                    self.tool()
                ),
                TaskPayload::Working,
            ),
            HeldStage::Ran(output) => (
                format!(
                    "approval {id} was approved and the call of {} ran",
                    self.tool()
                ),
                TaskPayload::Completed {
                    result: object(serde_json::to_value(CallToolResult::from(output))),
                },
            ),
            HeldStage::NotRun(problem) => {
                let error = not_run(&problem);
                (
                    error.message.to_string(),
                    TaskPayload::Failed {
                        error: object(serde_json::to_value(error)),
                    },
                )
            }
            HeldStage::Withdrawn => (
                format!(
                    "approval {id} was withdrawn; the call of {} did not run",
                    self.tool()
                ),
                TaskPayload::Cancelled,
            ),
        };
        let task = Task::new(
            approval_task_id(id),
            TaskStatus::Working,
            times.created_at.clone(),
            times.updated_at.clone(),
        )
        .with_status_message(message)
        .with_ttl_ms(times.ttl_ms)
        .with_poll_interval_ms(APPROVAL_POLL_MS);
        DetailedTask::new(task, payload)
    }

    /// The status message of a pending call's task: what it waits for, until when, and
    /// where it is decided.
    #[must_use]
    pub fn task_message(&self) -> String {
        let id = self.id();
        format!(
            "{}; an approver approves or denies it at {APPROVALS_PATH}/{id} (POST \
             {APPROVALS_PATH}/{id}/approve or /deny), and tasks/cancel withdraws it",
            self.waiting()
        )
    }
}

/// The error of a task whose call did not run for `problem` (denied or expired): code
/// [`NOT_RUN`], the problem's detail as its message, and the problem details as its `data`.
///
/// ```
/// use halo_protocol::{NOT_RUN, Problem, not_run};
///
/// let error = not_run(&Problem::new(403).with_detail("approval a1 expired"));
/// assert_eq!((error.code.0, &*error.message), (NOT_RUN, "approval a1 expired"));
/// assert_eq!(error.data.unwrap()["status"], 403);
/// ```
#[must_use]
pub fn not_run(problem: &Problem) -> ErrorData {
    let message = problem
        .detail
        .clone()
        .unwrap_or_else(|| "the call did not run".to_owned());
    ErrorData::new(
        ErrorCode(NOT_RUN),
        message,
        serde_json::to_value(problem).ok(),
    )
}

/// The error of a request of the Tasks extension whose parameters an MCP server could not
/// read (rmcp then hands it over as a request of an unknown method): `-32602`, saying what
/// they are. `None` for any other method, which is not found.
///
/// ```
/// use halo_protocol::malformed_task_request;
///
/// let error = malformed_task_request("tasks/get").unwrap();
/// assert_eq!(error.code.0, -32602);
/// assert!(malformed_task_request("tools/other").is_none());
/// ```
#[must_use]
pub fn malformed_task_request(method: &str) -> Option<ErrorData> {
    let takes = match method {
        "tasks/get" | "tasks/cancel" => r#"{"taskId": string}"#,
        "tasks/update" => r#"{"taskId": string, "inputResponses": object}"#,
        _ => return None,
    };
    Some(ErrorData::invalid_params(
        format!("{method} takes the parameters {takes}"),
        None,
    ))
}

/// The error for a task that does not exist, or is not the caller's (`-32602`): the same
/// words for both, so that the answer never says that a task exists.
///
/// ```
/// let error = halo_protocol::task_not_found("7");
/// assert_eq!((error.code.0, &*error.message), (-32602, "no task of yours is named `7`"));
/// ```
#[must_use]
pub fn task_not_found(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("no task of yours is named `{task_id}`"), None)
}

/// The error for `tasks/cancel` of a task that is over, `status` saying how (`-32602`).
///
/// ```
/// let error = halo_protocol::task_over("7", "completed");
/// assert_eq!(&*error.message, "task 7 cannot be cancelled: it is completed");
/// ```
#[must_use]
pub fn task_over(task_id: &str, status: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("task {task_id} cannot be cancelled: it is {status}"),
        None,
    )
}

/// Whether the task `task_id` may still be cancelled, `read` being what reading it gave
/// (rmcp's `TaskManager::get_task`): [`task_not_found`] when it could not be read,
/// [`task_over`] when its status is terminal.
///
/// ```
/// use halo_protocol::cancellable;
///
/// let error = cancellable::<()>("7", Err(())).unwrap_err();
/// assert_eq!(&*error.message, "no task of yours is named `7`");
/// ```
///
/// # Errors
/// [`task_not_found`] for a task not read, [`task_over`] for a `completed`, `failed` or
/// `cancelled` one.
pub fn cancellable<E>(task_id: &str, read: Result<DetailedTask, E>) -> Result<(), ErrorData> {
    let status = read.map_err(|_| task_not_found(task_id))?.status();
    if !status.is_terminal() {
        return Ok(());
    }
    let words = serde_json::to_value(status).unwrap_or_default();
    Err(task_over(task_id, words.as_str().unwrap_or("over")))
}

/// `value` as a JSON object (an empty one for anything else, which the values here never
/// are).
fn object(value: Result<Value, serde_json::Error>) -> JsonObject {
    match value {
        Ok(Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn held() -> HeldCall {
        HeldCall::new("a1", "refund", "2026-12-02T10:15:00Z")
    }

    fn times() -> TaskTimes {
        TaskTimes::new("2026-12-02T10:00:00Z", "2026-12-02T10:01:00Z", 60_000)
    }

    #[test]
    fn each_stage_is_a_status_with_its_payload() {
        let ran = held().task(
            HeldStage::Ran(ToolOutput::from_response(200, json!({"refund": 1}))),
            &times(),
        );
        let wire = serde_json::to_value(&ran).expect("JSON");
        assert_eq!(wire["status"], "completed");
        assert_eq!(wire["result"]["structuredContent"], json!({"refund": 1}));
        assert_eq!(wire["result"]["isError"], false);
        assert_eq!(wire["ttlMs"], 60_000);
        assert_eq!(wire["pollIntervalMs"], APPROVAL_POLL_MS);
        assert_eq!(wire["createdAt"], "2026-12-02T10:00:00Z");
        assert_eq!(wire["lastUpdatedAt"], "2026-12-02T10:01:00Z");

        let problem = Problem::new(403).with_detail("approval a1 expired");
        let failed = held().task(HeldStage::NotRun(problem), &times());
        let wire = serde_json::to_value(&failed).expect("JSON");
        assert_eq!(wire["status"], "failed");
        assert_eq!(wire["error"]["code"], NOT_RUN);
        assert_eq!(wire["error"]["message"], "approval a1 expired");
        assert_eq!(wire["error"]["data"]["status"], 403);

        let running = held().task(HeldStage::Running, &times());
        assert_eq!(running.status(), TaskStatus::Working);
        let withdrawn = held().task(HeldStage::Withdrawn, &times());
        assert_eq!(withdrawn.status(), TaskStatus::Cancelled);
    }

    #[test]
    fn only_approval_ids_are_named() {
        assert_eq!(task_approval("approval-a_1-B"), Some("a_1-B"));
        for other in [
            "approval-",
            "approval-a/b",
            "approval-a b",
            "a1",
            "",
            &format!("approval-{}", "a".repeat(MAX_ID + 1)),
        ] {
            assert_eq!(task_approval(other), None, "{other}");
        }
    }
}
