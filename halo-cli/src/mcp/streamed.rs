//! Calls of streaming tools through `halo mcp`: their events read into progress steps and an
//! end, relayed as MCP progress notifications to a client that sent a progress token, or
//! made the status message of a task ([`task`](super::task)) for a client that declared the
//! Tasks extension and whose call outlasts the grace.

use std::future::Future;
use std::pin::pin;

use futures_util::StreamExt as _;
use futures_util::future::{self, Either};
use halo_client::protocol::{HeldCall, ToolEvent, ToolOutput, mcp_progress};
use halo_client::{CallId, Client, StreamEvent, ToolStream};
use rmcp::RoleServer;
use rmcp::model::ProgressToken;
use rmcp::service::Peer;
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use super::{cancelled, log};

/// What a streamed call says as it runs.
pub(super) enum Step {
    /// A `tool_progress` event's data.
    Progress(Value),
    /// The call waits for this approval; its own events follow once someone approves it.
    Held(HeldCall),
}

/// How a streamed call ended.
pub(super) struct Ended {
    pub(super) output: ToolOutput,
    /// Whether it ended with a `409` `tool_error`: the server cancelled it.
    pub(super) cancelled: bool,
}

impl Ended {
    fn output(output: ToolOutput) -> Self {
        Self {
            output,
            cancelled: false,
        }
    }
}

/// Reads the events of a streamed call to its end, sending its steps to `steps`.
pub(super) async fn read(mut events: ToolStream, steps: UnboundedSender<Step>) -> Ended {
    while let Some(event) = events.next().await {
        // A receiver gone (the client stopped listening) still lets the call end.
        let _ = match event.map(StreamEvent::into_event) {
            Ok(ToolEvent::ToolProgress(data)) => steps.send(Step::Progress(data)),
            Ok(ToolEvent::ApprovalPending(value)) => match HeldCall::from_approval(&value) {
                Some(held) => steps.send(Step::Held(held)),
                None => Ok(()),
            },
            Ok(ToolEvent::ToolEnd(end)) => {
                return Ended::output(ToolOutput::from_response(end.status, end.content));
            }
            Ok(ToolEvent::ToolError(problem)) => {
                let cancelled = problem.status == 409;
                let output = ToolOutput::problem(problem);
                return Ended { output, cancelled };
            }
            Ok(_) => Ok(()),
            Err(error) => return Ended::output(ToolOutput::from(&error)),
        };
    }
    Ended::output(ToolOutput::failure("the stream ended before the call did"))
}

/// Awaits `end`, handing each step of `steps` to `each` (and awaiting what it does) as it
/// comes: every step sent before the end is handed over before the end is returned.
pub(super) async fn follow<T, F, Fut>(
    end: impl Future<Output = T>,
    mut steps: UnboundedReceiver<Step>,
    mut each: F,
) -> T
where
    F: FnMut(Step) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut end = pin!(end);
    loop {
        let next = match future::select(pin!(steps.recv()), end.as_mut()).await {
            Either::Left((step, _)) => Either::Left(step),
            Either::Right((ended, _)) => Either::Right(ended),
        };
        match next {
            Either::Left(Some(step)) => each(step).await,
            // No more steps: the reader is over, or nearly.
            Either::Left(None) => return end.await,
            Either::Right(ended) => {
                while let Ok(step) = steps.try_recv() {
                    each(step).await;
                }
                return ended;
            }
        }
    }
}

/// A streamed call read in a Tokio task of its own. Dropped before its end (a task stopped
/// at its time to live), it is cancelled on the API.
pub(super) struct Running {
    reader: Option<JoinHandle<Ended>>,
    client: Client,
    /// The call's id, as the server named it.
    id: Option<CallId>,
}

impl Running {
    /// Reads `events` in a Tokio task of its own, sending its steps to `steps`.
    pub(super) fn spawn(client: &Client, events: ToolStream, steps: UnboundedSender<Step>) -> Self {
        let id = events.call_id().cloned();
        Self {
            reader: Some(tokio::spawn(read(events, steps))),
            client: client.clone(),
            id,
        }
    }

    /// The call's id, as the server named it (`None`: it answered without a stream).
    pub(super) fn id(&self) -> Option<&CallId> {
        self.id.as_ref()
    }

    /// How the call ended. Awaited once to its end.
    pub(super) async fn end(&mut self) -> Ended {
        let Some(reader) = self.reader.as_mut() else {
            return Ended::output(ToolOutput::failure("the call was read already"));
        };
        let joined = reader.await;
        self.reader = None;
        joined.unwrap_or_else(|error| {
            Ended::output(ToolOutput::failure(format!("the call stopped: {error}")))
        })
    }

    /// Stops reading the call and cancels it on the API, as for `notifications/cancelled`.
    pub(super) async fn cancel(mut self) -> ToolOutput {
        if let Some(reader) = self.reader.take() {
            reader.abort();
        }
        cancelled(&self.client, self.id.as_ref()).await
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(reader) = self.reader.take() else {
            return;
        };
        reader.abort();
        // No runtime: the process is ending, and the server's deadline stops the call.
        let runtime = tokio::runtime::Handle::try_current();
        if let (Some(id), Ok(runtime)) = (self.id.take(), runtime) {
            let client = self.client.clone();
            runtime.spawn(async move {
                if let Err(error) = client.cancel(&id).await {
                    log(&format!("cannot cancel call {id}: {error}"));
                }
            });
        }
    }
}

/// Awaits `end`, relaying each step of `steps` as an MCP progress notification for `token`
/// (none without one): a call waiting for approval is said to wait.
pub(super) async fn relayed<T>(
    end: impl Future<Output = T>,
    steps: UnboundedReceiver<Step>,
    token: Option<ProgressToken>,
    peer: &Peer<RoleServer>,
) -> T {
    let mut progress = 0.0;
    follow(end, steps, |step| {
        let note = token.as_ref().map(|token| {
            let data = match step {
                Step::Progress(data) => data,
                Step::Held(held) => json!({ "message": held.waiting() }),
            };
            let note = mcp_progress(token.clone(), progress, &data);
            progress = note.progress;
            note
        });
        let peer = peer.clone();
        async move {
            if let Some(note) = note {
                // A client that stopped listening still gets the result.
                let _ = peer.notify_progress(note).await;
            }
        }
    })
    .await
}
