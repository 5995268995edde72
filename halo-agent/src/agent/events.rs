//! An agent run's events as a stream ([`AgentStream`]), and where the run emits them.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use futures_util::{FutureExt as _, Stream};
use halo_protocol::AgentEvent;

use crate::Error;

/// The events a run has emitted and its stream has not yielded yet.
type Queue = Arc<Mutex<VecDeque<AgentEvent>>>;

/// Where a run's events go: a stream's queue, or nowhere.
pub(super) struct Emitter(Option<Queue>);

impl Emitter {
    pub(super) fn none() -> Self {
        Self(None)
    }

    /// Queues the event `make` makes; when nobody listens it is not even made.
    pub(super) fn emit(&self, make: impl FnOnce() -> AgentEvent) {
        if let Some(queue) = &self.0 {
            queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push_back(make());
        }
    }
}

/// The events of an agent run ([`Agent::run_stream`](super::Agent::run_stream)), ending with `agent_end` or
/// `agent_error`.
///
/// The run advances as the stream is polled, and stops when the stream is dropped.
#[must_use = "a run only advances while its stream is polled"]
pub struct AgentStream {
    queue: Queue,
    /// The run; its output is the error it failed with.
    driver: Option<BoxFuture<'static, Option<Error>>>,
    error: Option<Error>,
}

impl AgentStream {
    /// The stream of the events `run` emits with the emitter it is given.
    pub(super) fn new(run: impl FnOnce(Emitter) -> BoxFuture<'static, Option<Error>>) -> Self {
        let queue = Queue::default();
        let driver = run(Emitter(Some(Arc::clone(&queue))));
        Self {
            queue,
            driver: Some(driver),
            error: None,
        }
    }

    /// The error the run failed with, once the stream has yielded its `agent_error` (`None`
    /// before, and for a run that answered): what the event's `detail` describes in words,
    /// with its predicates and accessors ([`Error::is_connect`], [`Error::endpoint`], ...).
    ///
    /// ```no_run
    /// use futures_util::StreamExt as _;
    /// use halo_agent::protocol::AgentEvent;
    /// # async fn run(agent: halo_agent::Agent, tools: impl halo_agent::ToolSet + 'static) {
    ///
    /// let mut events = agent.run_stream(tools, "Is Dune in stock?");
    /// while let Some(event) = events.next().await {
    ///     if let AgentEvent::AgentError(failure) = event
    ///         && events.error().is_some_and(|error| error.is_connect())
    ///     {
    ///         eprintln!("the model is down: {}", failure.detail);
    ///     }
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }

    fn pop(&self) -> Option<AgentEvent> {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }
}

impl Stream for AgentStream {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        if let Some(event) = self.pop() {
            return Poll::Ready(Some(event));
        }
        // The run only produces events while it is polled here, so an empty queue means
        // it needs polling (or is over).
        // The run emits its last event and ends in the same poll: its error is kept before
        // the `agent_error` that describes it is yielded.
        if let Some(driver) = self.driver.as_mut()
            && let Poll::Ready(error) = driver.poll_unpin(cx)
        {
            self.driver = None;
            self.error = error;
        }
        match self.pop() {
            Some(event) => Poll::Ready(Some(event)),
            None if self.driver.is_none() => Poll::Ready(None),
            None => Poll::Pending,
        }
    }
}

impl fmt::Debug for AgentStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentStream")
            .field("running", &self.driver.is_some())
            .finish_non_exhaustive()
    }
}
