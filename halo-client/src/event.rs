//! [`StreamEvent`]: one event of a streamed call, as the client yields it (decoded from the
//! event stream by `sse`, yielded by a `ToolStream`).

use halo_protocol::ToolEvent;

/// One event of a streamed call, with its id.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StreamEvent {
    id: u64,
    event: ToolEvent,
}

impl StreamEvent {
    pub(crate) fn new(id: u64, event: ToolEvent) -> Self {
        Self { id, event }
    }

    /// The event's id: its place in the call, counting from 1 (events of other kinds that
    /// the client skips take their places too).
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The event.
    #[must_use]
    pub fn event(&self) -> &ToolEvent {
        &self.event
    }

    /// The event, taken out.
    #[must_use]
    pub fn into_event(self) -> ToolEvent {
        self.event
    }
}
