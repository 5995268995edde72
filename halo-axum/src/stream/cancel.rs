//! Cancelling a running call: `DELETE /.well-known/halo/calls/{call_id}`.
//!
//! A streamed call is named by the server (its `Halo-Call-Id`, `c-…`), and cancelling it
//! aborts the task that runs its handler and ends its stream with a `409` `tool_error`. A
//! call without a stream is cancellable only when its caller named it with a `Halo-Call-Id`
//! request header of its own: the name is kept here ([`Running`]) for as long as the call
//! runs, and cancelling it drops the handler's future, so the caller gets the `409` problem
//! instead of an answer. Calls without that header cost nothing: no entry, no lock.
//!
//! A streamed call held for approval (HALO §10.3.2) that still waits is cancelled by
//! withdrawing its approval: the approval is `cancelled`, the call never runs, and its
//! stream ends with the same `409` `tool_error`.
//!
//! Only the caller that started a call (the same principal, or anonymous for an anonymous
//! call, as for resuming) may cancel it, or a caller holding the layer's cancel scope
//! (`HaloBuilder::cancel_scope`). Anyone else is told, as for an id that names nothing, that
//! no such call runs (`404`): the answer never reveals another caller's call.
//!
//! The path is under `/.well-known/halo/`, which the layer answers itself only for `DELETE`:
//! an application's own routes (a `DELETE` on a tool's path included) are never shadowed.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::response::Response;
use futures_util::future::{self, Either};
use halo_protocol::{CALL_ID_HEADER, Problem, is_call_id};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use tokio::sync::oneshot;

use crate::audit::Outcome;
use crate::problem;
use crate::step::{Step, Stop};

/// Where the layer answers cancel requests: this prefix, then the call's id.
pub(crate) use halo_protocol::CALLS_PATH as PREFIX;

/// The detail of the problem a cancelled call ends with.
const CANCELLED: &str = "the call was cancelled";

/// Whether a request is a cancel request (`DELETE` under [`PREFIX`]).
#[inline] // On the pass-through path of `Halo::call` (see there).
pub(crate) fn is_cancel(method: &Method, path: &str) -> bool {
    *method == Method::DELETE && path.starts_with(PREFIX)
}

/// `Halo-Call-Id`, ready to look up (no name to parse on each request).
pub(crate) const CALL_ID: HeaderName = HeaderName::from_static(CALL_ID_HEADER);

/// Whether a request names its call (`Halo-Call-Id`), to be cancellable while it runs.
#[inline] // On the pass-through path of `Halo::call` (see there).
pub(crate) fn is_named(headers: &HeaderMap) -> bool {
    headers.contains_key(CALL_ID)
}

/// The problem a cancelled call ends with: `409`, as the call's caller did not fail and the
/// server is not unavailable (a `503` would invite a retry that runs it again).
pub(crate) fn problem() -> Problem {
    Problem::new(409).with_detail(CANCELLED)
}

/// The answer of a call without a stream that was cancelled while it ran.
pub(crate) fn cancelled() -> Response {
    problem::from_problem(&problem())
}

/// The calls named by their callers (`Halo-Call-Id`) that run without a stream, by id; a
/// call is kept while it runs and forgotten when it ends.
#[derive(Debug)]
pub(crate) struct Running {
    inner: Mutex<Names>,
    /// The most calls kept at once.
    max: usize,
}

#[derive(Debug, Default)]
struct Names {
    /// The calls of each id: one per caller, so mostly one.
    calls: HashMap<String, Vec<Entry>>,
    count: usize,
}

#[derive(Debug)]
struct Entry {
    /// Who called (`None`: anonymous).
    caller: Option<String>,
    /// The tool called (its index in the registry).
    tool: usize,
    /// Tells the call to stop; taken by the first cancel request.
    stop: Option<oneshot::Sender<()>>,
}

/// What a cancel request found among the named calls.
pub(crate) enum Found {
    /// A call of this tool, now cancelled (`true`) or by an earlier request (`false`).
    Cancelled(usize, bool),
    /// Calls of several callers, none of them the requester's (only an administrator sees
    /// this).
    Ambiguous,
    /// No call of the requester's (or, for an administrator, of anyone's).
    Nothing,
}

impl Running {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            inner: Mutex::new(Names::default()),
            max,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Names> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps the call of `tool` by `caller` that its caller named `id` while it runs: `400`
    /// for an id that cannot name a call, `409` when the caller already runs a call of that
    /// name, `503` when as many named calls run as may be kept.
    pub(crate) fn name(
        self: &Arc<Self>,
        id: &HeaderValue,
        tool: usize,
        caller: Option<&str>,
    ) -> Step<Named> {
        let refuse = |outcome, status, detail: &str| {
            Err(Stop::new(outcome, problem::response(status, detail)))
        };
        let Some(id) = id.to_str().ok().filter(|id| is_call_id(id)) else {
            return refuse(
                Outcome::Invalid,
                StatusCode::BAD_REQUEST,
                "Halo-Call-Id must be 1 to 128 letters, digits, '-', '.', '_' or '~'",
            );
        };
        let (stop, stopped) = oneshot::channel();
        let mut names = self.lock();
        if names.count >= self.max {
            return refuse(
                Outcome::Unavailable,
                StatusCode::SERVICE_UNAVAILABLE,
                "too many named calls are running; try again shortly",
            );
        }
        let entries = names.calls.entry(id.to_owned()).or_default();
        if entries
            .iter()
            .any(|entry| entry.caller.as_deref() == caller)
        {
            return refuse(
                Outcome::Invalid,
                StatusCode::CONFLICT,
                "a call of yours with this Halo-Call-Id is still running",
            );
        }
        entries.push(Entry {
            caller: caller.map(str::to_owned),
            tool,
            stop: Some(stop),
        });
        names.count += 1;
        Ok(Named {
            running: Arc::clone(self),
            id: id.to_owned(),
            caller: caller.map(str::to_owned),
            stopped,
        })
    }

    /// Forgets the call named `id` of `caller`.
    fn forget(&self, id: &str, caller: Option<&str>) {
        let mut names = self.lock();
        let Some(entries) = names.calls.get_mut(id) else {
            return;
        };
        let before = entries.len();
        entries.retain(|entry| entry.caller.as_deref() != caller);
        let removed = before - entries.len();
        if entries.is_empty() {
            names.calls.remove(id);
        }
        names.count -= removed;
    }

    /// Cancels the call named `id`: `caller`'s own, else, for an administrator (`admin`:
    /// whose calls, `None` for anyone's), the one other caller's call of that name.
    pub(crate) fn cancel(
        &self,
        id: &str,
        caller: Option<&str>,
        admin: Option<Option<&str>>,
    ) -> Found {
        let mut names = self.lock();
        let Some(entries) = names.calls.get_mut(id) else {
            return Found::Nothing;
        };
        let index = match entries
            .iter()
            .position(|entry| entry.caller.as_deref() == caller)
        {
            Some(own) => own,
            None => {
                let Some(whose) = admin else {
                    return Found::Nothing;
                };
                let mut theirs = entries
                    .iter()
                    .enumerate()
                    .filter(|(_, entry)| whose.is_none_or(|w| entry.caller.as_deref() == Some(w)));
                match (theirs.next(), theirs.next()) {
                    (Some((index, _)), None) => index,
                    (Some(_), Some(_)) => return Found::Ambiguous,
                    (None, _) => return Found::Nothing,
                }
            }
        };
        let entry = &mut entries[index];
        let now = entry.stop.take().is_some_and(|stop| stop.send(()).is_ok());
        Found::Cancelled(entry.tool, now)
    }
}

/// A named call while it runs: forgotten when dropped.
#[derive(Debug)]
pub(crate) struct Named {
    running: Arc<Running>,
    id: String,
    caller: Option<String>,
    stopped: oneshot::Receiver<()>,
}

impl Named {
    /// Runs `handler` until it ends (`Some`) or the call is cancelled (`None`: the handler's
    /// future is dropped). A cancel request that comes as the handler ends wins.
    pub(crate) async fn run<F: Future>(mut self, handler: F) -> Option<F::Output> {
        let stopped = async {
            if (&mut self.stopped).await.is_err() {
                // Never told to stop (its sender is only dropped with the entry).
                future::pending::<()>().await;
            }
        };
        match future::select(pin!(stopped), pin!(handler)).await {
            Either::Left(((), _)) => None,
            Either::Right((output, _)) => Some(output),
        }
    }
}

impl Drop for Named {
    fn drop(&mut self) {
        self.running.forget(&self.id, self.caller.as_deref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_kept_while_its_call_runs_and_bound() {
        let running = Arc::new(Running::new(2));
        let id = HeaderValue::from_static("job-1");
        let first = running.name(&id, 0, Some("ann")).expect("named");
        // Another caller may use the same id; the same caller may not.
        let other = running.name(&id, 0, Some("bob")).expect("named");
        let full = running.name(&HeaderValue::from_static("job-2"), 0, None);
        assert_eq!(full.unwrap_err().into_response().status(), 503);
        drop(other);
        let clash = running.name(&id, 0, Some("ann"));
        assert_eq!(clash.unwrap_err().into_response().status(), 409);
        drop(first);
        assert_eq!(running.lock().count, 0);
        assert!(running.lock().calls.is_empty());
        let bad = running.name(&HeaderValue::from_static("a b"), 0, None);
        assert_eq!(bad.unwrap_err().into_response().status(), 400);
    }

    #[test]
    fn only_the_caller_or_an_administrator_finds_a_named_call() {
        let running = Arc::new(Running::new(10));
        let id = HeaderValue::from_static("job");
        let _ann = running.name(&id, 3, Some("ann")).expect("named");
        let _bob = running.name(&id, 4, Some("bob")).expect("named");
        assert!(matches!(
            running.cancel("job", Some("eve"), None),
            Found::Nothing
        ));
        assert!(matches!(running.cancel("job", None, None), Found::Nothing));
        assert!(matches!(
            running.cancel("job", Some("root"), Some(None)),
            Found::Ambiguous
        ));
        assert!(matches!(
            running.cancel("job", Some("root"), Some(Some("bob"))),
            Found::Cancelled(4, true)
        ));
        assert!(matches!(
            running.cancel("job", Some("ann"), None),
            Found::Cancelled(3, true)
        ));
        assert!(matches!(
            running.cancel("job", Some("ann"), None),
            Found::Cancelled(3, false)
        ));
    }
}
