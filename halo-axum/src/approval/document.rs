//! The JSON an approval is shown as: to its caller (the `202` and `GET` on its `Location`)
//! and to approvers (the list, and the answer to a decision). One shape for all, so a
//! client reads one thing:
//!
//! ```json
//! {"id": "9f…", "href": "/.well-known/halo/approvals/9f…", "state": "approved",
//!  "tool": "refund_payment", "call": {"method": "POST", "url": "/api/payments/7/refund"},
//!  "caller": "reader", "arguments": {"amount": 20},
//!  "requested_at": "…", "expires_at": "…", "decided_by": "admin",
//!  "response": {"status": 200, "headers": {"content-type": "application/json"}, "body": {…}}}
//! ```

use axum::body::Body;
use axum::response::Response;
use halo_protocol::Rfc3339;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use http::{HeaderValue, StatusCode};
use serde_json::{Map, Value, json};

use super::APPROVALS_PATH;
use super::{Answer, Entry, Phase, State};

/// The words of the `state` member.
pub(crate) fn state_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Pending => "pending",
        Phase::Running | Phase::Ran => "approved",
        Phase::Denied => "denied",
        Phase::Expired => "expired",
        Phase::Cancelled => "cancelled",
    }
}

/// Where the approval is read.
pub(crate) fn href(entry: &Entry) -> String {
    format!("{APPROVALS_PATH}/{}", entry.id)
}

/// The approval as JSON.
pub(crate) fn document(entry: &Entry) -> Value {
    let request = &entry.request;
    let mut doc = Map::new();
    doc.insert("id".into(), json!(&*entry.id));
    doc.insert("href".into(), json!(href(entry)));
    doc.insert("state".into(), json!(state_name(entry.phase())));
    doc.insert("tool".into(), json!(request.tool()));
    doc.insert(
        "call".into(),
        json!({"method": request.method(), "url": request.target()}),
    );
    if let Some(caller) = request.caller() {
        doc.insert("caller".into(), json!(caller));
    }
    if let Some(arguments) = request.arguments() {
        doc.insert("arguments".into(), arguments.clone());
    }
    let at = |time| Value::String(Rfc3339(time).to_string());
    doc.insert("requested_at".into(), at(entry.requested_at));
    doc.insert("expires_at".into(), at(entry.expires_at));
    entry.with_state(|state| match state {
        State::Pending(_) | State::Expired => {}
        State::Approved { by, reason, answer } => {
            decided(&mut doc, by, reason.as_deref());
            if let Some(answer) = answer {
                doc.insert("response".into(), response(answer));
            }
        }
        State::Denied { by, reason } => decided(&mut doc, by, reason.as_deref()),
        State::Cancelled { by, reason } => {
            if let Some(by) = by {
                doc.insert("decided_by".into(), json!(by));
            }
            doc.insert("reason".into(), json!(reason));
        }
    });
    Value::Object(doc)
}

fn decided(doc: &mut Map<String, Value>, by: &str, reason: Option<&str>) {
    doc.insert("decided_by".into(), json!(by));
    if let Some(reason) = reason {
        doc.insert("reason".into(), json!(reason));
    }
}

/// The handler's answer: its status, the headers kept, and its body as JSON when it is
/// JSON, as a string when it is text, else left out (`"body_omitted": true`, as when it was
/// over the bounds).
pub(crate) fn response(answer: &Answer) -> Value {
    let headers: Map<String, Value> = answer
        .headers
        .iter()
        .filter_map(|(name, value)| Some((name.to_string(), json!(value.to_str().ok()?))))
        .collect();
    let mut out = json!({"status": answer.status.as_u16(), "headers": headers});
    let body = answer.body.as_ref().and_then(|bytes| {
        if bytes.is_empty() {
            return Some(Value::Null);
        }
        serde_json::from_slice::<Value>(bytes)
            .ok()
            .or_else(|| std::str::from_utf8(bytes).ok().map(|text| json!(text)))
    });
    match body {
        Some(Value::Null) => {}
        Some(body) => out["body"] = body,
        None => out["body_omitted"] = json!(true),
    }
    out
}

/// An answer carrying `doc` as JSON, never cached.
pub(crate) fn respond(status: StatusCode, doc: &Value) -> Response {
    let mut response = Response::new(Body::from(doc.to_string()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `202 Accepted` for a held call: the approval, and `Location` naming it.
pub(crate) fn accepted(entry: &Entry) -> Response {
    let mut response = respond(StatusCode::ACCEPTED, &document(entry));
    if let Ok(location) = HeaderValue::try_from(href(entry)) {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}
