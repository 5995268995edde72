//! The approvals over HTTP, under `/.well-known/halo/approvals` (served when the layer has
//! an approver):
//!
//! | request | who | answer |
//! |---|---|---|
//! | `GET /.well-known/halo/approvals` | approvers | `{"approvals": [...]}`, the pending ones, oldest first |
//! | `GET /.well-known/halo/approvals/{id}` | its caller, approvers | the approval |
//! | `POST /.well-known/halo/approvals/{id}/approve` | approvers but its caller | the approval, after the call ran |
//! | `POST /.well-known/halo/approvals/{id}/deny` | approvers but its caller | the approval; body `{"reason": "..."}` (optional) |
//! | `DELETE /.well-known/halo/approvals/{id}` | its caller | the approval, withdrawn (`cancelled`): the call never runs |
//!
//! Who may do what, and why the statuses differ: the list and the decisions are for
//! approvers, so a caller who is not one gets `403` (`401` without credentials) whatever the
//! id, which says nothing of whether an approval exists. An approval's own resource is its
//! caller's: anyone else (not an approver) gets `404`, as if it did not exist, like a stream
//! of another caller (§10.1). Nobody decides a call of their own (`403`: a second person
//! approves) unless the approver allows it. Only its caller withdraws a call: an approver
//! who did not make it gets `403` (it denies instead). A decision or a withdrawal of an
//! approval decided already, expired or withdrawn, is `409`. With approvals kept in Redis that cannot be reached, every request here
//! is `503`.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use http::header::ALLOW;
use http::{HeaderValue, Method, Request, StatusCode};
use serde_json::{Value, json};

use super::decision::{approver, decide_as, read_as};
use super::run;
use super::withdraw::withdraw_as;
use crate::approval::APPROVALS_PATH;
use crate::approval::{Unreachable, document, respond, unreachable};
use crate::layer::Shared;
use crate::{Principal, body, problem};

/// The most bytes of a decision's body (`{"reason": ...}`).
const MAX_DECISION: usize = 16 * 1024;

/// Whether `path` is one of the approvals' endpoints.
#[inline] // On the pass-through path of `Halo::call` when approvals are on.
pub(crate) fn is_endpoint(path: &str) -> bool {
    path.strip_prefix(APPROVALS_PATH)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Answers a request of an approvals endpoint.
pub(crate) async fn serve(shared: Arc<Shared>, request: Request<Body>) -> Response {
    let (parts, body) = request.into_parts();
    let caller = match shared.gate.identify(&parts).await {
        Ok(caller) => caller,
        Err(refused) => return refused.into_response(),
    };
    let rest = parts.uri.path()[APPROVALS_PATH.len()..].trim_start_matches('/');
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let method = &parts.method;
    match (segments.as_slice(), method) {
        ([], &Method::GET | &Method::HEAD) => list(&shared, caller.as_ref()).await,
        ([id], &Method::GET | &Method::HEAD) => match read_as(&shared, caller.as_ref(), id).await {
            Ok(entry) => respond(StatusCode::OK, &document(&entry)),
            Err(refusal) => refusal.response(),
        },
        ([id], &Method::DELETE) => match withdraw_as(&shared, caller.as_ref(), id).await {
            Ok(entry) => respond(StatusCode::OK, &document(&entry)),
            Err(refusal) => refusal.response(),
        },
        ([id, action @ ("approve" | "deny")], &Method::POST) => {
            let reason = match body::read(&parts, body, MAX_DECISION).await {
                Ok(bytes) => match reason(&bytes) {
                    Some(reason) => reason,
                    None => {
                        return problem::response(
                            StatusCode::BAD_REQUEST,
                            "a decision's body is a JSON object with an optional string `reason`",
                        );
                    }
                },
                Err(problem) => return problem::from_problem(&problem),
            };
            let approve = *action == "approve";
            let decided = decide_as(&shared, caller.as_ref(), id, approve, reason).await;
            match decided {
                Ok(entry) => respond(StatusCode::OK, &document(&entry)),
                Err(refusal) => refusal.response(),
            }
        }
        ([], _) => not_allowed("GET, HEAD"),
        ([_], _) => not_allowed("GET, HEAD, DELETE"),
        ([_, "approve" | "deny"], _) => not_allowed("POST"),
        _ => problem::response(StatusCode::NOT_FOUND, "no such approval resource"),
    }
}

/// The pending approvals, for approvers.
async fn list(shared: &Shared, caller: Option<&Principal>) -> Response {
    if let Err(refusal) = approver(shared, caller) {
        return refusal.response();
    }
    match run::pending(shared).await {
        Ok(pending) => {
            let pending: Vec<Value> = pending.iter().map(|entry| document(entry)).collect();
            respond(StatusCode::OK, &json!({"approvals": pending}))
        }
        Err(Unreachable) => unreachable(),
    }
}

fn not_allowed(allow: &'static str) -> Response {
    let mut response = problem::response(
        StatusCode::METHOD_NOT_ALLOWED,
        "this approvals resource does not take that method",
    );
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    response
}

/// The reason of a decision's body: empty, or a JSON object with an optional string
/// `reason`; `None` for anything else (`400`).
fn reason(bytes: &[u8]) -> Option<Option<String>> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Some(None);
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(object)) => match object.get("reason") {
            None | Some(Value::Null) => Some(None),
            Some(Value::String(reason)) => Some(Some(reason.clone()).filter(|r| !r.is_empty())),
            Some(_) => None,
        },
        _ => None,
    }
}
