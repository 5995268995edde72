//! The idempotency step of a call: a key claimed, a kept answer replayed, or a refusal.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use halo_govern::{Claim, Full, IdempotencyStore, Stored, Ticket, check_key, fingerprint};
use http::request::Parts;
use http::{HeaderName, HeaderValue, StatusCode};

use super::{Governance, caller_bucket, refusal};
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
                (outcome, refusal::full(full))
            }
            Err(unavailable) => (
                Outcome::Unavailable,
                refusal::unavailable(unavailable, "idempotency records"),
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
