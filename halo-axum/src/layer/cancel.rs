//! The cancel request of a call (`DELETE /.well-known/halo/calls/{call_id}`): a streamed call
//! or a named running one cancelled, or, when the call waits on an approval, the approval
//! withdrawn. It composes the streams' registry of calls with the approvals, so it lives with
//! the layer that holds both.

use std::time::Instant;

use axum::response::{IntoResponse as _, Response};
use halo_protocol::is_call_id;
use http::StatusCode;
use http::request::Parts;

use super::Shared;
use crate::approval::{Unreachable, unreachable};
use crate::audit::{AuditRecord, Outcome};
use crate::stream::{self, Cancel, Found, PREFIX};
use crate::{Principal, problem};

/// Answers a cancel request (`DELETE /.well-known/halo/calls/{call_id}`): `204` when the
/// call is cancelled (now or before), `404` when no call of that id runs that the requester
/// may cancel, `409` for a streamed call that ended on its own, and `400` for an
/// administrator's id that several callers' calls have (`?caller=` names one), `503` when
/// the approval of a held call cannot be withdrawn for now. A call cancelled now is written
/// to the audit trail with the outcome `cancelled`, the requester as its caller (a held
/// call's withdrawal, by its approval's record).
pub(crate) async fn answer(shared: &Shared, parts: &Parts) -> Response {
    let started = Instant::now();
    let caller = match shared.gate.identify(parts).await {
        Ok(caller) => caller,
        Err(refused) => return refused.into_response(),
    };
    let not_found = || {
        problem::response(
            StatusCode::NOT_FOUND,
            "no call of yours with this id is running",
        )
    };
    let id = &parts.uri.path()[PREFIX.len()..];
    if !is_call_id(id) {
        return not_found();
    }
    let scope = shared.calls.config().cancel_scope.as_deref();
    let admin = scope.is_some_and(|scope| caller.as_ref().is_some_and(|c| c.has_scope(scope)));
    let whose = admin.then(|| named_caller(parts.uri.query()));
    let caller_id = caller.as_ref().map(Principal::id);
    let calls = &shared.calls;
    let streamed = calls
        .find(id)
        .filter(|call| admin || call.caller.as_deref() == caller_id);
    let (tool, now) = match streamed {
        Some(call) => {
            // Held for approval: withdrawn, it never runs (its audit record says so).
            match super::held::withdraw_stream(shared, &call.id, caller_id, admin).await {
                Ok(true) => {
                    call.cancel(stream::problem());
                    return StatusCode::NO_CONTENT.into_response();
                }
                Ok(false) => {}
                Err(Unreachable) => return unreachable(),
            }
            match call.cancel(stream::problem()) {
                Cancel::Now => (call.tool, true),
                Cancel::Before => (call.tool, false),
                Cancel::Ended => {
                    return problem::response(StatusCode::CONFLICT, "the call has already ended");
                }
            }
        }
        None => match calls
            .running()
            .cancel(id, caller_id, whose.as_ref().map(Option::as_deref))
        {
            Found::Cancelled(tool, now) => (tool, now),
            Found::Ambiguous => {
                return problem::response(
                    StatusCode::BAD_REQUEST,
                    "calls of several callers have this id: name one with ?caller=",
                );
            }
            Found::Nothing => return not_found(),
        },
    };
    if now && let Some(sink) = &shared.audit {
        let name = shared.discovery.registry.tool_at(tool).name();
        let mut record = AuditRecord::new(&parts.headers, name, &parts.method, parts.uri.path());
        record.caller = caller_id.map(str::to_owned);
        record.finish(
            StatusCode::NO_CONTENT,
            Outcome::Cancelled,
            started.elapsed(),
        );
        sink.record(record);
    }
    StatusCode::NO_CONTENT.into_response()
}

/// The `caller` query parameter of an administrator's request (form-decoded: `+` is a
/// space), which names whose call to cancel.
fn named_caller(query: Option<&str>) -> Option<String> {
    let value = query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("caller="))?;
    let spaced = value.replace('+', " ");
    let decoded = percent_encoding::percent_decode_str(&spaced).decode_utf8();
    decoded.ok().map(std::borrow::Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caller_parameter_is_percent_decoded() {
        assert_eq!(
            named_caller(Some("a=1&caller=svc%20one")).as_deref(),
            Some("svc one")
        );
        assert_eq!(named_caller(Some("a=1")), None);
        assert_eq!(named_caller(None), None);
    }
}
