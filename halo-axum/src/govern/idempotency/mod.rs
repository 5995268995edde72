//! `Idempotency-Key`: the first request with a key runs, and its response is kept; a repeat
//! gets that response again and never runs the handler a second time. What is kept is
//! bounded ([`IdempotencyLimits`]): per caller and in all, in records and in bytes; a new key
//! that does not fit is refused, and a live record is never dropped to make room.
//!
//! The step of a call's path is in two parts: [`Governance::idempotency_key`] before the
//! body is read, then [`Governance::claim`]; after the handler, [`Governance::settle`] keeps
//! its answer (or frees the key).

mod limits;
mod local;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::request::Parts;
use http::{HeaderName, HeaderValue, StatusCode};
use sha2::{Digest, Sha256};

pub use self::limits::IdempotencyLimits;
pub(crate) use self::local::Idempotency;
use super::store::{Claim, Fingerprint, Full, IdempotencyStore, Stored, Ticket};
use super::{Governance, caller_bucket};
use crate::Principal;
use crate::audit::Outcome;
use crate::problem;
use crate::registry::Tool;
use crate::step::{Step, Stop};

/// The most of a response body kept for replay.
const MAX_KEPT: usize = 4 * 1024 * 1024;

impl Governance {
    /// The idempotency key a call of `tool` (at `index`) sends, when its tool takes one
    /// (`limits.idempotency_key`) and its answer can be kept: a stream, the layer's or the
    /// application's own (`streaming`), cannot. `400` for a value that is not a key.
    pub(crate) fn idempotency_key(
        &self,
        index: usize,
        tool: &Tool,
        parts: &Parts,
        streaming: bool,
    ) -> Step<Option<HeaderValue>> {
        let Some(value) = self
            .rules(index)
            .key_header
            .as_ref()
            .filter(|_| !streaming && !tool.streams_itself())
            .and_then(|header| parts.headers.get(header))
        else {
            return Ok(None);
        };
        // Named as the schema spells it; the header map lowercases.
        let header = tool
            .schema()
            .limits
            .as_ref()
            .and_then(|limits| limits.idempotency_key.as_deref())
            .unwrap_or("Idempotency-Key");
        match check_key(header, value) {
            Ok(()) => Ok(Some(value.clone())),
            Err(problem) => Err(Stop::new(Outcome::Invalid, problem::from_problem(&problem))),
        }
    }

    /// Claims the idempotency key `value` for this call of `tool` by `caller`, whose body
    /// is `body`: the ticket to keep its answer with, or the answer instead of running it
    /// (the kept response, `409` while the first still runs, `422` for a key used with
    /// another request, `429` when the caller keeps as many records as it may, `503` when
    /// the store is full or the shared store cannot be reached).
    pub(crate) async fn claim(
        &self,
        tool: &Tool,
        value: &HeaderValue,
        parts: &Parts,
        caller: Option<&Principal>,
        body: &[u8],
    ) -> Step<Ticket> {
        let caller_id = caller.map_or("", Principal::id);
        let target = parts.uri.path_and_query().map_or("", |t| t.as_str());
        let print = fingerprint(parts.method.as_str(), target, caller_id, body);
        // By tool name, which every instance of the API agrees on.
        let key = format!(
            "{}\n{caller_id}\n{}",
            tool.name(),
            String::from_utf8_lossy(value.as_bytes())
        );
        // Whose quota of kept records the key counts against: the caller rate limits count
        // (the principal, else the client's address).
        let quota = caller_bucket(caller.map(Principal::id), parts);
        let (outcome, response) = match self.stores.records.claim(key, &quota, print).await {
            Ok(Claim::First(ticket)) => return Ok(ticket),
            Ok(Claim::Full(full)) => {
                let outcome = match full {
                    Full::Caller(_) => Outcome::RateLimited,
                    Full::Store(_) => Outcome::Unavailable,
                };
                (outcome, full.response())
            }
            Err(unavailable) => (
                Outcome::Unavailable,
                unavailable.response("idempotency records"),
            ),
            Ok(Claim::Replay(stored)) => (Outcome::Replayed, replay(stored)),
            Ok(Claim::InFlight) => (
                Outcome::Invalid,
                problem::response(
                    StatusCode::CONFLICT,
                    "a request with this idempotency key is still running",
                ),
            ),
            Ok(Claim::Mismatch) => (
                Outcome::Invalid,
                problem::response(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "this idempotency key was used for a different request",
                ),
            ),
        };
        Err(Stop::new(outcome, response))
    }

    /// After the handler: keeps the answer of a call that claimed a key (`ticket`) for
    /// replay, or frees the key when the call failed.
    pub(crate) async fn settle<E>(
        &self,
        ticket: Option<Ticket>,
        answer: Result<Response, E>,
    ) -> Result<Response, E> {
        let Some(ticket) = ticket else {
            return answer;
        };
        // Boxed: the future of a call without a key (most calls) stays small.
        Box::pin(self.keep_or_free(ticket, answer)).await
    }

    /// [`settle`](Self::settle) for a call that claimed a key.
    async fn keep_or_free<E>(
        &self,
        ticket: Ticket,
        answer: Result<Response, E>,
    ) -> Result<Response, E> {
        let records = &*self.stores.records;
        match answer {
            Ok(response) => Ok(keep(records, ticket, response).await),
            Err(error) => {
                records.abandon(ticket).await;
                Err(error)
            }
        }
    }
}

/// Keeps the response of a keyed call for replay, and gives it back. Answers that say the
/// request was not handled and may be sent again (`408`, `429`, `502`, `503`) are not kept:
/// the key stays free for that retry.
async fn keep(store: &dyn IdempotencyStore, ticket: Ticket, response: Response) -> Response {
    if matches!(response.status().as_u16(), 408 | 429 | 502 | 503) {
        store.abandon(ticket).await;
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_KEPT).await {
        Ok(bytes) => bytes,
        Err(_) => {
            tracing::warn!(
                target: "halo_axum::idempotency",
                "a keyed response is larger than {MAX_KEPT} bytes (or failed); its status and headers are kept without the body"
            );
            Bytes::new()
        }
    };
    let stored = Stored {
        status: parts.status,
        headers: parts.headers.clone(),
        body: bytes.clone(),
    };
    store.finish(ticket, stored).await;
    Response::from_parts(parts, Body::from(bytes))
}

/// A kept response, marked as a replay.
fn replay(stored: Stored) -> Response {
    let mut response = Response::new(Body::from(stored.body));
    *response.status_mut() = stored.status;
    *response.headers_mut() = stored.headers;
    response.headers_mut().insert(
        HeaderName::from_static("idempotent-replayed"),
        HeaderValue::from_static("true"),
    );
    response
}

/// The fingerprint of a request.
pub(crate) fn fingerprint(method: &str, target: &str, caller: &str, body: &[u8]) -> Fingerprint {
    let mut digest = Sha256::new();
    for part in [
        method.as_bytes(),
        target.as_bytes(),
        caller.as_bytes(),
        body,
    ] {
        digest.update((part.len() as u64).to_be_bytes());
        digest.update(part);
    }
    digest.finalize().into()
}

/// The longest key kept: a key is a token the client makes up (a UUID is 36 characters),
/// and every one kept takes memory for a day.
pub(crate) const MAX_KEY: usize = 255;

/// A key as the header gave it, if it is one: 1 to [`MAX_KEY`] visible ASCII characters.
/// Anything else is refused before it is kept or looked up.
pub(crate) fn check_key(
    header: &str,
    value: &http::HeaderValue,
) -> Result<(), Box<halo_protocol::Problem>> {
    let bytes = value.as_bytes();
    if (1..=MAX_KEY).contains(&bytes.len()) && bytes.iter().all(|b| b.is_ascii_graphic()) {
        return Ok(());
    }
    Err(Box::new(halo_protocol::Problem::new(400).with_detail(
        format!("`{header}` must be 1 to {MAX_KEY} visible ASCII characters (a UUID will do)"),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_short_visible_tokens() {
        let check = |text: &str| {
            check_key(
                "Idempotency-Key",
                &http::HeaderValue::from_str(text).unwrap(),
            )
        };
        assert!(check("8e0f0c1c-4d1a-4c8e-9b1e-2f1d1c0a9b7e").is_ok());
        assert!(check(&"k".repeat(MAX_KEY)).is_ok());
        for bad in ["", " ", "two words", "tab\there"] {
            assert_eq!(check(bad).unwrap_err().status, 400, "{bad:?}");
        }
        assert!(check(&"k".repeat(MAX_KEY + 1)).is_err());
        let refused = check("").unwrap_err();
        assert!(refused.detail.unwrap().contains("`Idempotency-Key`"));
    }
}
