//! The step of a call's path for a tool that needs approval, after the rate and the circuit
//! and before an idempotency key is claimed: the call is kept and answered `202 Accepted`
//! (or refused: `403` without an approver, `413` for a body over the limit, `422` for a key
//! reused with another request, `429`/`503` when no more approvals may be kept). A repeat
//! with the same idempotency key gets the same approval, and once it ran, the same answer.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use halo_protocol::{Problem, ToolEvent};
use http::header::{LOCATION, RETRY_AFTER};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::Value;
use tower_service::Service;

use super::decision::wait_end;
use super::run;
use super::run::watch;
use crate::approval::ApprovalRequest;
use crate::approval::runner;
use crate::approval::{Asked, Booked, Entry, Kept, Phase, State};
use crate::approval::{Unreachable, accepted, document, href, unreachable};
use crate::audit::{Outcome, redact};
use crate::govern::{caller_bucket, fingerprint};
use crate::layer::Shared;
use crate::registry::Route;
use crate::step::Stop;
use crate::stream::{self, Call, Progress};
use crate::{Principal, body, problem};

/// A call held at the approval step, as the steps before left it.
pub(crate) struct Held {
    pub(crate) parts: Parts,
    pub(crate) body: Body,
    /// The body's bytes, when a step before read them.
    pub(crate) read: Option<Bytes>,
    pub(crate) caller: Option<Principal>,
    /// The call's idempotency key, checked.
    pub(crate) key: Option<HeaderValue>,
    /// The caller asked for an event stream.
    pub(crate) streaming: bool,
}

/// Holds the call `held` of the tool at `route` for approval, to run through `inner` (ready)
/// once approved: the answer to send now.
pub(crate) async fn hold<S>(shared: &Arc<Shared>, inner: S, route: &Route, held: Held) -> Stop
where
    S: Service<http::Request<Body>, Response = Response> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    let book = &shared.approvals;
    if book.approver().is_none() {
        let detail =
            "this operation needs approval, and the server has no approver: it is never run";
        return Stop::new(
            Outcome::Denied,
            problem::response(StatusCode::FORBIDDEN, detail),
        );
    }
    let Held {
        mut parts,
        body,
        read,
        caller,
        key,
        streaming,
    } = held;
    let (_, bytes) = match body::buffered(&parts, body, read, shared.body_limit).await {
        Ok(read) => read,
        Err(problem) => return Stop::new(Outcome::Invalid, problem::from_problem(&problem)),
    };
    let tool = shared.discovery.registry.tool_at(route.tool());
    let caller_id = caller.as_ref().map(|c| c.id().to_owned());
    let target = parts
        .uri
        .path_and_query()
        .map_or("", |t| t.as_str())
        .to_owned();
    let key = key.map(|value| {
        // By the tool's name, not its index: the same after a reload, and on every replica.
        let indexed = format!(
            "{}\n{}\n{}",
            tool.name(),
            caller_id.as_deref().unwrap_or(""),
            String::from_utf8_lossy(value.as_bytes())
        );
        // The caller is in the index already.
        (
            indexed,
            fingerprint(parts.method.as_str(), &target, "", &bytes),
        )
    });
    let arguments = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .map(|mut value| {
            redact(&mut value, tool.sensitive());
            value
        });
    // Its id and expiry are set when it is booked.
    let request = ApprovalRequest::new(
        tool.name().to_owned(),
        caller_id.clone(),
        parts.method.as_str().to_owned(),
        target,
        arguments,
    );
    let quota = caller_bucket(caller_id.as_deref(), &parts);
    let trail = trail(&parts.headers);
    // What another replica needs to run it, when this layer lets one (no credentials).
    #[cfg(feature = "redis")]
    let portable = super::takeover::portable(shared, &parts, &bytes, caller.as_ref());
    #[cfg(not(feature = "redis"))]
    let portable = None;
    if let Some(caller) = caller {
        parts.extensions.insert(caller);
    }
    // A streamed call: opened now (`tool_start`), its handler's progress sent to it.
    let call = if streaming {
        match stream::open(&shared.calls, (route.tool(), tool), caller_id) {
            Ok(call) => {
                parts
                    .extensions
                    .insert(Progress::attached(Arc::clone(&call)));
                Some(call)
            }
            Err(stop) => return stop,
        }
    } else {
        None
    };
    let asked = Asked {
        tool: route.tool(),
        request,
        quota,
        key,
        trail,
        kept: Kept {
            parts,
            body: bytes,
            runner: runner(inner),
        },
        portable,
    };
    // Refused: a stream opened for the call ends at once.
    let refuse = |outcome: Outcome, response: Response| {
        if let Some(call) = &call {
            let status = response.status().as_u16();
            call.fail(Problem::new(status).with_detail("the call could not be held for approval"));
        }
        Stop::new(outcome, response)
    };
    let booked = match book.book(asked).await {
        Ok(booked) => booked,
        // Never run without an approval, never kept where other replicas cannot see it.
        Err(Unreachable) => return refuse(Outcome::Unavailable, unreachable()),
    };
    match booked {
        Booked::New(entry) => {
            run::note(shared, &entry, Outcome::ApprovalRequested, None);
            let response = match &call {
                None => accepted(&entry),
                Some(call) => streamed(shared, Arc::clone(call), &entry),
            };
            watch(shared, Arc::clone(&entry));
            Stop::new(Outcome::ApprovalRequested, response)
        }
        Booked::Again(entry, expired) => {
            if expired {
                run::note(shared, &entry, Outcome::ApprovalExpired, None);
            }
            again(&entry)
        }
        Booked::Mismatch => refuse(
            Outcome::Invalid,
            problem::response(
                StatusCode::UNPROCESSABLE_ENTITY,
                "this idempotency key was used for a different request",
            ),
        ),
        Booked::Full(caller, retry) => {
            let (outcome, status, detail) = if caller {
                (
                    Outcome::RateLimited,
                    StatusCode::TOO_MANY_REQUESTS,
                    "the caller has as many approvals waiting or kept as it may",
                )
            } else {
                (
                    Outcome::Unavailable,
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server keeps as many approvals as it may",
                )
            };
            let mut response = problem::response(status, detail);
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(retry.as_secs()));
            refuse(outcome, response)
        }
    }
}

/// The event stream of a held call: `tool_start`, `approval_pending` with the approval,
/// then the call's own events once it is approved and runs (its progress, `tool_end`), a
/// `tool_error` (`403`) when it is denied or expires, or the cancelled `tool_error` (`409`)
/// when its caller withdraws it. `Location` names the approval. While it waits, a cancel
/// request of the call withdraws the approval (`withdraw_stream`).
fn streamed(shared: &Arc<Shared>, call: Arc<Call>, entry: &Arc<Entry>) -> Response {
    call.push(&ToolEvent::ApprovalPending(document(entry)));
    let location = HeaderValue::try_from(href(entry)).ok();
    let keep_alive = shared.calls.config().keep_alive;
    shared.approvals.stream_waits(&call.id, Arc::clone(entry));
    let waits = Waits(Arc::clone(shared), call.id.clone());
    let entry = Arc::clone(entry);
    let waiting = async move {
        let entry = wait_end(&waits.0, entry).await;
        drop(waits);
        let answer = entry.answer();
        Ok::<_, Infallible>(match answer {
            Some(answer) => run::replay(answer),
            None if entry.phase() == Phase::Cancelled => stream::cancelled(),
            None => refused(&entry),
        })
    };
    let mut response = stream::spawn(call, waiting, keep_alive);
    if let Some(location) = location {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}

/// A streamed call waiting on its approval, as the book knows it: forgotten when its stream
/// stops waiting (the approval ended, or the stream was cancelled).
struct Waits(Arc<Shared>, String);

impl Drop for Waits {
    fn drop(&mut self) {
        self.0.approvals.stream_done(&self.1);
    }
}

/// A repeat of a call with the idempotency key of approval `entry`: the approval while it
/// waits or runs, the answer once it ran, `403` once denied, expired or withdrawn.
fn again(entry: &Entry) -> Stop {
    match entry.phase() {
        Phase::Pending | Phase::Running => Stop::new(Outcome::ApprovalRequested, accepted(entry)),
        Phase::Ran => {
            let replay = entry.answer();
            match replay {
                Some(answer) => Stop::new(Outcome::Replayed, run::replay(answer)),
                None => Stop::new(Outcome::ApprovalRequested, accepted(entry)),
            }
        }
        Phase::Denied | Phase::Expired | Phase::Cancelled => {
            Stop::new(Outcome::Denied, refused(entry))
        }
    }
}

/// `403` for a call whose approval was denied, expired or withdrawn.
pub(crate) fn refused(entry: &Entry) -> Response {
    let detail = entry.with_state(|state| match state {
        State::Denied {
            by,
            reason: Some(reason),
        } => format!("the call was denied by {by}: {reason}"),
        State::Denied { by, reason: None } => format!("the call was denied by {by}"),
        State::Cancelled { reason, .. } => {
            format!("the call's approval was {reason}: it was not run")
        }
        _ => "nobody approved the call in time: it expired, and was not run".to_owned(),
    });
    problem::response(StatusCode::FORBIDDEN, detail)
}

/// The headers the audit records of the call's decision and run carry over.
fn trail(headers: &HeaderMap) -> HeaderMap {
    let mut kept = HeaderMap::new();
    for name in ["x-request-id", "traceparent"] {
        if let Some(value) = headers.get(name) {
            kept.insert(name, value.clone());
        }
    }
    kept
}
