//! A long streamed call as an MCP task (the Tasks extension, `io.modelcontextprotocol/tasks`,
//! SEP-2663), as both MCP bridges make one for a client that declared the extension: a call
//! of a streaming tool still running after a grace becomes a task, bounded by
//! [`TaskLimits`], whose status message is the call's last progress step
//! ([`TaskSteps`]) and whose result is the call's.

use std::time::{Duration, Instant};

use rmcp::model::{NumberOrString, ProgressToken};
use serde_json::Value;

use crate::mcp_progress;

/// The poll interval suggested for a streamed call's task, in milliseconds.
pub const STREAMED_POLL_MS: u64 = 1_000;

/// The status message of a streamed call's task until its first progress step.
pub const STREAMED_FIRST_MESSAGE: &str = "the call runs";

/// The bounds of the MCP tasks that streamed calls become, on `/mcp`
/// (`McpBuilder::task_limits` in halo-axum) and in `halo mcp` (`--task-grace`).
///
/// A call of a streaming tool by a client that declared the Tasks extension runs for a
/// short grace first: answered by then, its result is the answer, as for any client; still
/// running, it becomes a task. Each task is its caller's, lives in the process that runs
/// it, and is kept for its time to live from when it was made (a call still running then is
/// stopped and the task `failed`), and as long again once it ended, so that its result can
/// be read. A caller with as many tasks as it may keep, or a process with as many as it
/// keeps in all, gets its call answered as a client without tasks is (it waits for the
/// result). Tasks of held approvals are not counted here: the approvals' own limits bound
/// them.
///
/// ```
/// use std::time::Duration;
/// use halo_protocol::TaskLimits;
///
/// let limits = TaskLimits::default()
///     .grace(Duration::from_millis(500))
///     .ttl(Duration::from_secs(30 * 60))
///     .per_caller(8)
///     .total(500);
/// assert_eq!(limits.grace_period(), Duration::from_millis(500));
/// assert!(limits.has_room(7, 499));
/// assert!(!limits.has_room(8, 100));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct TaskLimits {
    grace: Duration,
    ttl: Duration,
    per_caller: usize,
    total: usize,
}

impl Default for TaskLimits {
    /// A grace of 2 seconds, a time to live of an hour, 16 tasks per caller and 1,000 in
    /// all.
    fn default() -> Self {
        Self {
            grace: Duration::from_secs(2),
            ttl: Duration::from_secs(60 * 60),
            per_caller: 16,
            total: 1_000,
        }
    }
}

impl TaskLimits {
    /// How long a streamed call runs before it becomes a task (2 seconds by default);
    /// `Duration::ZERO` makes every streamed call a task.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How long a task is kept from when it was made, and again once it ended (an hour by
    /// default, a second at least); a call still running when it is up is stopped.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// The most tasks one caller keeps at once (16 by default, 1 at least).
    pub fn per_caller(mut self, tasks: usize) -> Self {
        self.per_caller = tasks.max(1);
        self
    }

    /// The most tasks the process keeps at once (1,000 by default, 1 at least).
    pub fn total(mut self, tasks: usize) -> Self {
        self.total = tasks.max(1);
        self
    }

    /// How long a streamed call runs before it becomes a task.
    #[must_use]
    pub fn grace_period(&self) -> Duration {
        self.grace
    }

    /// The tasks' time to live, in milliseconds (their `ttlMs`).
    #[must_use]
    pub fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether a task made at `created`, whose call ended at `ended` (if it did), is still
    /// kept: for its time to live once ended; while running, until stopped at its time to
    /// live and then kept as long again.
    #[must_use]
    pub fn keeps(&self, created: Instant, ended: Option<Instant>) -> bool {
        match ended {
            Some(at) => at.elapsed() < self.ttl,
            None => created.elapsed() < self.ttl * 2,
        }
    }

    /// Whether another task may be made for a caller that keeps `callers` tasks, in a
    /// process that keeps `kept` in all.
    #[must_use]
    pub fn has_room(&self, callers: usize, kept: usize) -> bool {
        callers < self.per_caller && kept < self.total
    }
}

/// The status messages of a streamed call's task, one a progress step (a `tool_progress`
/// event's data): `step 1 of 2: reading the ledger`, `step 3: …`, or `step 4`, numbered as
/// [`mcp_progress`] numbers the steps it relays.
///
/// ```
/// use halo_protocol::TaskSteps;
/// use serde_json::json;
///
/// let mut steps = TaskSteps::default();
/// let first = json!({"step": 1, "total": 2, "message": "reading the ledger"});
/// assert_eq!(steps.message(&first), "step 1 of 2: reading the ledger");
/// assert_eq!(steps.message(&json!("checking")), "step 2: checking");
/// assert_eq!(steps.message(&json!(null)), "step 3");
/// ```
#[derive(Debug, Clone, Default)]
pub struct TaskSteps {
    previous: f64,
}

impl TaskSteps {
    /// The status message of the progress step `data`, the next of the call's.
    pub fn message(&mut self, data: &Value) -> String {
        // `mcp_progress` reads a step's message; the token is not sent anywhere.
        let token = ProgressToken(NumberOrString::Number(0));
        let note = mcp_progress(token, self.previous, data);
        self.previous = note.progress;
        match (note.message, note.total) {
            (Some(message), Some(total)) => format!("step {} of {total}: {message}", note.progress),
            (Some(message), None) => format!("step {}: {message}", note.progress),
            (None, _) => format!("step {}", note.progress),
        }
    }
}
