//! How many tasks of streamed calls `/mcp` keeps, for how long, and when a streamed call
//! becomes one.

use std::time::Duration;

/// The bounds of the MCP tasks that streamed calls become on `/mcp`
/// ([`McpBuilder::task_limits`](super::super::McpBuilder::task_limits)).
///
/// A call of a streaming tool by a client that declared the Tasks extension runs for a
/// short grace first: answered by then, its result is the answer, as for any client; still
/// running, it becomes a task. Each task is its caller's, lives in the instance that runs
/// it, and is kept for its time to live from when it was made (a call still running then is
/// stopped and the task `failed`), and as long again once it ended, so that its result can
/// be read. A caller with as many tasks as it may keep, or an instance with as many as it
/// keeps in all, gets its call answered as a client without tasks is (it waits for the
/// result). Tasks of held approvals are not counted here: the approvals' own limits bound
/// them.
///
/// ```
/// use std::time::Duration;
/// use halo_axum::mcp::TaskLimits;
///
/// let limits = TaskLimits::default()
///     .grace(Duration::from_millis(500))
///     .ttl(Duration::from_secs(30 * 60))
///     .per_caller(8)
///     .total(500);
/// # let _ = limits;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct TaskLimits {
    pub(crate) grace: Duration,
    pub(crate) ttl: Duration,
    pub(crate) per_caller: usize,
    pub(crate) total: usize,
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

    /// The most tasks the instance keeps at once (1,000 by default, 1 at least).
    pub fn total(mut self, tasks: usize) -> Self {
        self.total = tasks.max(1);
        self
    }
}
