//! The stream envelope of a call that asks for `text/event-stream`: the call is opened (kept
//! for resuming), its handler runs in a task of its own, and the client gets the call's
//! events from the first.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use halo_protocol::Problem;

use super::calls::{Call, Calls};
use super::sse::{finish, respond};
use crate::audit::Outcome;
use crate::problem;
use crate::registry::Tool;
use crate::step::{Step, Stop};

/// Opens a streamed call of `tool` (at `index`) by `caller`, and sends `tool_start`: `503`
/// when as many calls as may be kept are all still running.
pub(crate) fn open(
    calls: &Calls,
    (index, tool): (usize, &Tool),
    caller: Option<String>,
) -> Step<Arc<Call>> {
    let call = calls
        .start(index, tool.name(), caller)
        .map_err(|problem| Stop::new(Outcome::Unavailable, problem::from_problem(&problem)))?;
    call.begin(tool.name(), tool.is_agent());
    Ok(call)
}

/// Runs `running` (the handler, within its deadline) in a task of its own that ends `call`
/// with its answer, and answers with the call's event stream from the start.
pub(crate) fn spawn<F, E>(call: Arc<Call>, running: F, keep_alive: Duration) -> Response
where
    F: Future<Output = Result<Response, E>> + Send + 'static,
    E: Send + 'static,
{
    let unfinished = Unfinished(Arc::clone(&call));
    let task = tokio::spawn(async move {
        let answer = running.await;
        finish(Arc::clone(&unfinished.0), answer).await;
    });
    call.set_task(task.abort_handle());
    respond(call.subscribe(), 0, keep_alive)
}

/// Ends a call whose task is dropped before the call ended (its handler panicked) with a
/// `500`, so that its stream and its audit record do not wait forever. A call that ended
/// (its handler's answer, a cancel request, its client gone) is left as it is.
struct Unfinished(Arc<Call>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        self.0
            .fail(Problem::new(500).with_detail("the operation failed without a response"));
    }
}
