//! A client reconnecting to a streamed call (`Halo-Call-Id` and `Last-Event-ID`): the events
//! it missed, from this instance's memory or, for a call of another instance, from the
//! shared store.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::stream;
use http::request::Parts;
use http::{HeaderValue, StatusCode};

use super::Calls;
use super::sse::{KEEP_ALIVE, event_stream, respond};
use crate::Principal;
use crate::govern::{KeptCall, ReplayStore};
use crate::problem;

/// The `410` detail for a call that is not kept.
pub(crate) const NOT_KEPT: &str = "the call is not kept (it ended too long ago, or never was)";
/// The `410` detail for events that are no longer kept.
pub(crate) const EVENTS_GONE: &str = "the events after that id are no longer kept";

/// How often a stream of another instance's call looks for new events.
const POLL: Duration = Duration::from_millis(100);
/// How long a resume waits for events that the instance running the call may not have
/// copied to the store yet.
const GRACE: Duration = Duration::from_secs(1);

/// The events of call `call_id` (of the tool at `tool`, named `name`, by `caller`) after
/// `Last-Event-ID`: `400` for an id that is not a number, `410` when the call or those
/// events are no longer kept (or are another tool's or caller's).
pub(crate) async fn resume(
    calls: &Calls,
    parts: &Parts,
    call_id: &HeaderValue,
    (tool, name): (usize, &str),
    caller: Option<&Principal>,
) -> Response {
    let gone = |detail: &str| problem::response(StatusCode::GONE, detail);
    let after = match parts.headers.get("last-event-id").map(HeaderValue::to_str) {
        None => 0,
        Some(Ok(text)) => match text.trim().parse::<u64>() {
            Ok(id) => id,
            Err(_) => {
                return problem::response(StatusCode::BAD_REQUEST, "Last-Event-ID is not a number");
            }
        },
        Some(Err(_)) => {
            return problem::response(StatusCode::BAD_REQUEST, "Last-Event-ID is not a number");
        }
    };
    let keep_alive = calls.config().keep_alive;
    let call = call_id
        .to_str()
        .ok()
        .and_then(|id| calls.find(id))
        .filter(|call| call.tool == tool && call.caller.as_deref() == caller.map(Principal::id));
    let Some(call) = call else {
        return match (calls.shared(), call_id.to_str()) {
            (Some(store), Ok(id)) => {
                let caller = caller.map(Principal::id);
                resume_shared(store, id, name, caller, after, keep_alive).await
            }
            _ => gone(NOT_KEPT),
        };
    };
    if !call.can_resume_after(after) {
        return gone(EVENTS_GONE);
    }
    respond(call.subscribe(), after, keep_alive)
}

/// A client resuming, through this instance, a call that another instance runs or ran: the
/// events after `after` that `store` keeps, then new ones as they arrive (looked for every
/// 100 ms) until the terminal one. `410` when the store does not keep the call for this tool
/// (`name`) and `caller`, or no longer keeps the events after `after`.
async fn resume_shared(
    store: &Arc<dyn ReplayStore>,
    id: &str,
    name: &str,
    caller: Option<&str>,
    after: u64,
    keep_alive: Duration,
) -> Response {
    let gone = |detail: &str| problem::response(StatusCode::GONE, detail);
    let deadline = Instant::now() + GRACE;
    let kept = loop {
        let late = Instant::now() >= deadline;
        match store.read(id, after).await {
            Err(unavailable) => {
                return crate::govern::refusal::unavailable(unavailable, "stream events");
            }
            Ok(Some(kept)) if kept.tool != name || kept.caller.as_deref() != caller => {
                return gone(NOT_KEPT);
            }
            // The events the client saw may still be on their way to the store.
            Ok(Some(kept)) if after <= kept.newest || late => break kept,
            Ok(None) if late => return gone(NOT_KEPT),
            Ok(_) => tokio::time::sleep(POLL).await,
        }
    };
    let oldest = if kept.oldest == 0 {
        kept.newest + 1
    } else {
        kept.oldest
    };
    if after + 1 < oldest || after > kept.newest {
        return gone(EVENTS_GONE);
    }
    let state = Remote {
        store: Arc::clone(store),
        id: id.to_owned(),
        after,
        next: Some(kept),
        quiet_since: Instant::now(),
        done: false,
    };
    let events = stream::unfold(state, move |mut state| async move {
        if state.done {
            return None;
        }
        loop {
            let kept = match state.next.take() {
                Some(kept) => Ok(Some(kept)),
                None => {
                    tokio::time::sleep(POLL).await;
                    state.store.read(&state.id, state.after).await
                }
            };
            match kept {
                // No longer kept (expired, or its instance stopped long ago): the stream ends.
                Ok(None) => return None,
                Ok(Some(kept)) if !kept.frames.is_empty() => {
                    let last = kept.frames.last().map_or(state.after, |frame| frame.0);
                    state.done = kept.finished && last >= kept.newest;
                    state.after = last;
                    state.quiet_since = Instant::now();
                    let bytes: Vec<u8> = kept
                        .frames
                        .iter()
                        .flat_map(|(_, bytes)| bytes.iter().copied())
                        .collect();
                    return Some((Ok::<_, Infallible>(Bytes::from(bytes)), state));
                }
                Ok(Some(kept)) if kept.finished => return None,
                // Nothing new, or the store cannot be reached for now: keep the line alive.
                Ok(Some(_)) | Err(_) => {
                    if state.quiet_since.elapsed() >= keep_alive {
                        state.quiet_since = Instant::now();
                        return Some((Ok(KEEP_ALIVE), state));
                    }
                }
            }
        }
    });
    event_stream(Body::from_stream(events), HeaderValue::try_from(id).ok())
}

/// Where a stream of another instance's call is.
struct Remote {
    store: Arc<dyn ReplayStore>,
    id: String,
    after: u64,
    /// Events read already, to send first.
    next: Option<KeptCall>,
    quiet_since: Instant,
    done: bool,
}
