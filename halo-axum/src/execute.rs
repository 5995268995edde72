//! The request path of described operations: identify the caller, authorize, validate,
//! then run the handler, plainly or as a stream. Also discovery when it depends on the
//! caller.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use halo_protocol::{CALL_ID_HEADER, EVENT_STREAM, FieldError, Problem};
use http::header::{CONTENT_LENGTH, RETRY_AFTER, WWW_AUTHENTICATE};
use http::request::Parts;
use http::{HeaderName, HeaderValue, Request, StatusCode};
use http_body_util::BodyExt;
use tower_service::Service;

use crate::Principal;
use crate::audit::{AuditRecord, AuditSink, Outcome, redact, sensitive};
use crate::auth::DynAuthenticator;
use crate::challenge::Challenges;
use crate::discovery::{Discovery, Viewer};
use crate::govern::{
    Claim, Decision, Governance, IdempotencyStore, Stored, Ticket, caller_key, fingerprint,
    seconds_up,
};
use crate::metrics::Metrics;
use crate::problem;
use crate::stream::{self, Calls, Progress};
use crate::valid_json::ParsedBody;
use crate::validate::{self, Validator};

/// Everything a layer shares between its services.
pub(crate) struct Shared {
    pub(crate) discovery: Discovery,
    pub(crate) authenticator: Option<Box<dyn DynAuthenticator>>,
    /// Discovery without credentials is refused (`401`) rather than shown the public tools.
    pub(crate) require_credentials: bool,
    pub(crate) validate: bool,
    pub(crate) body_limit: usize,
    pub(crate) calls: Calls,
    pub(crate) challenges: Challenges,
    pub(crate) governance: Governance,
    pub(crate) audit: Option<Box<dyn AuditSink>>,
    /// Whether audit records carry the (redacted) arguments.
    pub(crate) audit_arguments: bool,
    /// Counts and times calls and discovery, when on.
    pub(crate) metrics: Option<Metrics>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("discovery", &self.discovery)
            .field("authenticator", &self.authenticator.is_some())
            .field("validate", &self.validate)
            .finish_non_exhaustive()
    }
}

const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// Whether a request asks for an event stream.
#[inline] // On the pass-through path of `Halo::call` (see there).
pub(crate) fn wants_stream(parts_headers: &http::HeaderMap) -> bool {
    parts_headers
        .get_all(http::header::ACCEPT)
        .iter()
        .any(|value| {
            value
                .to_str()
                .is_ok_and(|accept| halo_protocol::accepts(accept, EVENT_STREAM))
        })
}

impl Shared {
    /// Whether every call of a described operation needs the layer: checks are on, or the
    /// caller asks for a stream. Otherwise only governed tools do.
    #[inline] // On the pass-through path of `Halo::call` (see there).
    pub(crate) fn checks(&self, streaming: bool) -> bool {
        self.authenticator.is_some()
            || self.validate
            || self.audit.is_some()
            || self.metrics.is_some()
            || streaming
    }

    /// Who sent the request: `Ok(None)` for anonymous (or when no authenticator is set),
    /// `Err` with the `401` to answer for bad credentials.
    async fn identify(&self, parts: &Parts) -> Result<Option<Principal>, Response> {
        let Some(authenticator) = &self.authenticator else {
            return Ok(None);
        };
        authenticator.identify(parts).await.map_err(|rejected| {
            let mut response = problem::response(StatusCode::UNAUTHORIZED, rejected.to_string());
            // RFC 6750 §3.1: say that the credentials, not their absence, are the problem.
            response
                .headers_mut()
                .insert(WWW_AUTHENTICATE, self.challenges.invalid());
            response
        })
    }

    fn unauthorized(&self, detail: impl Into<String>) -> Response {
        let mut response = problem::response(StatusCode::UNAUTHORIZED, detail);
        response
            .headers_mut()
            .insert(WWW_AUTHENTICATE, self.challenges.missing());
        response
    }

    /// Who is discovering tools (over HALO or MCP): the caller, or the `401` for
    /// credentials the authenticator refuses, or for none when credentials are required.
    pub(crate) async fn discoverer(&self, parts: &Parts) -> Result<Option<Principal>, Response> {
        match self.identify(parts).await {
            Ok(None) if self.require_credentials => {
                Err(self.unauthorized("discovery needs credentials"))
            }
            identified => identified,
        }
    }

    /// Discovery for a caller, when an authenticator is set.
    pub(crate) async fn discover(&self, parts: Parts) -> Response {
        let response = match self.discoverer(&parts).await {
            Err(refused) => refused,
            Ok(caller) => {
                self.discovery
                    .respond(&parts.uri, &parts.headers, Viewer::Caller(caller.as_ref()))
            }
        };
        self.discovered(&parts.uri, &response);
        response
    }

    /// Counts a discovery request, when metrics are on.
    pub(crate) fn discovered(&self, uri: &http::Uri, response: &Response) {
        if let Some(metrics) = &self.metrics {
            metrics.discovery(uri.path(), response.status());
        }
    }
}

/// Runs a call of the described operation `tool` through the checks, then `inner` (which
/// must be ready), and writes it to the audit trail when there is one. `streaming`: the
/// request asks for an event stream.
pub(crate) async fn execute<S>(
    shared: Arc<Shared>,
    inner: S,
    request: Request<Body>,
    tool: usize,
    streaming: bool,
) -> Result<Response, S::Error>
where
    S: Service<Request<Body>, Response = Response> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    let started = Instant::now();
    let mut trail = shared.audit.as_ref().map(|_| {
        AuditRecord::new(
            request.headers(),
            shared.discovery.registry.tool_at(tool).name(),
            request.method(),
            request.uri().path(),
        )
    });
    let (response, outcome) = run(&shared, inner, request, tool, streaming, trail.as_mut()).await?;
    if let Some(metrics) = &shared.metrics {
        metrics.call(tool, outcome, response.status(), started.elapsed());
    }
    if let (Some(sink), Some(mut record)) = (&shared.audit, trail) {
        record.finish(response.status(), outcome, started.elapsed());
        sink.record(record);
    }
    Ok(response)
}

/// The checks, then the handler: the answer and what happened, with the caller, key and
/// arguments noted in `trail`.
async fn run<S>(
    shared: &Arc<Shared>,
    mut inner: S,
    request: Request<Body>,
    tool: usize,
    streaming: bool,
    mut trail: Option<&mut AuditRecord>,
) -> Result<(Response, Outcome), S::Error>
where
    S: Service<Request<Body>, Response = Response> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    let (mut parts, body) = request.into_parts();
    let caller = match shared.identify(&parts).await {
        Ok(caller) => caller,
        Err(response) => return Ok((response, Outcome::Denied)),
    };
    if let Some(record) = trail.as_deref_mut() {
        record.caller = caller.as_ref().map(|c| c.id().to_owned());
    }
    if streaming && let Some(call_id) = parts.headers.get(CALL_ID_HEADER) {
        let response = resume(shared, &parts, call_id, tool, caller.as_ref()).await;
        return Ok((response, Outcome::Replayed));
    }
    let registry = &shared.discovery.registry;
    let described = registry.tool_at(tool);
    if shared.authenticator.is_some() && !registry.admits(described, caller.as_ref()) {
        let refused = match caller {
            None => shared.unauthorized("this operation needs credentials"),
            Some(caller) => forbidden(shared, &registry.missing_scopes(described, &caller)),
        };
        return Ok((refused, Outcome::Denied));
    }
    let (body, mut read) = match described.validator.as_ref().filter(|_| shared.validate) {
        None => (body, None),
        Some(validator) => match validated(shared, validator, &mut parts, body).await {
            Ok(checked) => checked,
            Err(refused) => return Ok((refused, Outcome::Invalid)),
        },
    };
    if shared.audit_arguments
        && let Some(record) = trail.as_deref_mut()
        && let Some(mut arguments) = match parts.extensions.get::<ParsedBody>() {
            Some(ParsedBody(parsed)) => Some(parsed.clone()),
            // The fast check vouched for the body without parsing it.
            None => read
                .as_deref()
                .and_then(|bytes| serde_json::from_slice(bytes).ok()),
        }
    {
        redact(&mut arguments, &sensitive(&described.schema.input));
        record.arguments = Some(arguments);
    }
    let rules = shared.governance.rules(tool);
    let mut limited = None;
    if let Some(rate) = &rules.rate {
        let stores = &shared.governance.stores;
        let decision = match stores
            .rates
            .check(rate, &caller_key(caller.as_ref(), &parts))
            .await
        {
            Ok(decision) => decision,
            Err(unavailable) => {
                return Ok((unavailable.response("rate budgets"), Outcome::Unavailable));
            }
        };
        let headers = [
            (RATELIMIT_POLICY, rate.policy()),
            (RATELIMIT, rate.state(&decision)),
        ];
        if let Decision::Limited { retry_after } = decision {
            let seconds = seconds_up(retry_after);
            let mut response = problem::response(
                StatusCode::TOO_MANY_REQUESTS,
                format!("this operation's rate is used up; try again in {seconds} s"),
            );
            response.headers_mut().extend(headers);
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(seconds));
            return Ok((response, Outcome::RateLimited));
        }
        limited = Some(headers);
    }
    let key_value = rules
        .key_header
        .as_ref()
        // A stream, the layer's or the application's own, cannot be kept for replay.
        .filter(|_| !streaming && !described.own_stream)
        .and_then(|header| parts.headers.get(header))
        .cloned();
    if let Some(value) = &key_value {
        // Named as the schema spells it; the header map lowercases.
        let header = described
            .schema
            .limits
            .as_ref()
            .and_then(|limits| limits.idempotency_key.as_deref())
            .unwrap_or("Idempotency-Key");
        if let Err(problem) = crate::govern::check_key(header, value) {
            return Ok((
                with_headers(problem::from_problem(&problem), limited),
                Outcome::Invalid,
            ));
        }
    }
    let body = match (&key_value, read.is_some()) {
        (Some(_), false) => match read_body(&parts, body, shared.body_limit).await {
            Ok(bytes) => {
                read = Some(bytes.clone());
                Body::from(bytes)
            }
            Err(problem) => return Ok((problem::from_problem(&problem), Outcome::Invalid)),
        },
        _ => body,
    };
    let claim = match key_value {
        None => None,
        Some(value) => {
            if let Some(record) = trail {
                record.idempotency_key = Some(String::from_utf8_lossy(value.as_bytes()).into());
            }
            let caller_id = caller.as_ref().map_or("", Principal::id);
            let body = read.as_deref().unwrap_or_default();
            match claim_key(shared, tool, &parts, caller_id, &value, body).await {
                Ok(ticket) => Some(ticket),
                Err(refused) => {
                    let (refused, outcome) = *refused;
                    return Ok((with_headers(refused, limited), outcome));
                }
            }
        }
    };
    let caller_id = caller.as_ref().map(|c| c.id().to_owned());
    if let Some(caller) = caller {
        parts.extensions.insert(caller);
    }
    let deadline = rules.timeout;
    if !streaming {
        let response = within(deadline, inner.call(Request::from_parts(parts, body))).await;
        let outcome = match &response {
            Ok(answer) if answer.extensions().get::<DeadlinePassed>().is_some() => {
                Outcome::TimedOut
            }
            _ => Outcome::Executed,
        };
        let records = &*shared.governance.stores.records;
        let response = match (claim, response) {
            (Some(ticket), Ok(response)) => Ok(keep(records, ticket, response).await),
            (Some(ticket), Err(error)) => {
                records.abandon(ticket).await;
                Err(error)
            }
            (None, response) => response,
        };
        return response.map(|response| (with_headers(response, limited), outcome));
    }
    let call = match shared.calls.start(tool, described.name(), caller_id) {
        Ok(call) => call,
        Err(problem) => return Ok((problem::from_problem(&problem), Outcome::Unavailable)),
    };
    call.begin(described.name(), described.is_agent());
    parts
        .extensions
        .insert(Progress::attached(Arc::clone(&call)));
    let running = inner.call(Request::from_parts(parts, body));
    let finished = Arc::clone(&call);
    let task = tokio::spawn(async move {
        stream::finish(finished, within(deadline, running).await).await;
    });
    call.set_task(task.abort_handle());
    let subscription = call.subscribe();
    let response = with_headers(
        stream::respond(subscription, 0, shared.calls.config().keep_alive),
        limited,
    );
    Ok((response, Outcome::Executed))
}

/// The `RateLimit` headers of an allowed call, added to its answer.
fn with_headers(
    mut response: Response,
    limited: Option<[(HeaderName, HeaderValue); 2]>,
) -> Response {
    if let Some(headers) = limited {
        response.headers_mut().extend(headers);
    }
    response
}

/// Claims an idempotency key for this call: the ticket to keep its response with, or the
/// answer instead of running it (the kept response, `409` while the first still runs, `422`
/// for a key used with another request, `429` when the caller keeps as many records as it
/// may, `503` when the store is full or the shared store cannot be reached).
async fn claim_key(
    shared: &Shared,
    tool: usize,
    parts: &Parts,
    caller_id: &str,
    value: &HeaderValue,
    body: &[u8],
) -> Result<Ticket, Box<(Response, Outcome)>> {
    let target = parts.uri.path_and_query().map_or("", |t| t.as_str());
    let print = fingerprint(parts.method.as_str(), target, caller_id, body);
    // By tool name, which every instance of the API agrees on.
    let key = format!(
        "{}\n{caller_id}\n{}",
        shared.discovery.registry.tool_at(tool).name(),
        String::from_utf8_lossy(value.as_bytes())
    );
    // Whose quota of kept records the key counts against: the caller rate limits count (the
    // principal, else the client's address).
    let quota = crate::govern::caller_bucket(Some(caller_id).filter(|id| !id.is_empty()), parts);
    let claim = shared
        .governance
        .stores
        .records
        .claim(key, &quota, print)
        .await;
    let answer = match claim {
        Ok(Claim::First(ticket)) => return Ok(ticket),
        Ok(Claim::Full(full)) => {
            let outcome = match full {
                crate::govern::Full::Caller(_) => Outcome::RateLimited,
                crate::govern::Full::Store(_) => Outcome::Unavailable,
            };
            (full.response(), outcome)
        }
        Err(unavailable) => (
            unavailable.response("idempotency records"),
            Outcome::Unavailable,
        ),
        Ok(Claim::Replay(stored)) => (replay(stored), Outcome::Replayed),
        Ok(Claim::InFlight) => (
            problem::response(
                StatusCode::CONFLICT,
                "a request with this idempotency key is still running",
            ),
            Outcome::Invalid,
        ),
        Ok(Claim::Mismatch) => (
            problem::response(
                StatusCode::UNPROCESSABLE_ENTITY,
                "this idempotency key was used for a different request",
            ),
            Outcome::Invalid,
        ),
    };
    Err(Box::new(answer))
}

/// The handler's answer, or `504` when `deadline` passes first (the handler is dropped).
async fn within<F, E>(deadline: Option<Duration>, running: F) -> Result<Response, E>
where
    F: Future<Output = Result<Response, E>>,
{
    match deadline {
        None => running.await,
        Some(limit) => tokio::time::timeout(limit, running)
            .await
            .unwrap_or_else(|_| Ok(timed_out(limit))),
    }
}

/// Marks the layer's own `504`, for the audit trail.
#[derive(Debug, Clone, Copy)]
struct DeadlinePassed;

/// `504` for a handler that did not answer within `limit`.
fn timed_out(limit: Duration) -> Response {
    let mut response = problem::response(
        StatusCode::GATEWAY_TIMEOUT,
        format!(
            "the operation did not answer within its deadline of {} ms",
            limit.as_millis()
        ),
    );
    response.extensions_mut().insert(DeadlinePassed);
    response
}

/// The most of a response body kept for replay.
const MAX_KEPT: usize = 4 * 1024 * 1024;

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

/// Checks a call's parameters and body against `validator`: the body to hand on and, when the
/// operation takes one, its bytes (its parsed JSON goes into the extensions for
/// `ValidJson`), or the problem response that refuses the call.
async fn validated(
    shared: &Shared,
    validator: &Validator,
    parts: &mut Parts,
    body: Body,
) -> Result<(Body, Option<Bytes>), Response> {
    let refuse = |problem: Box<Problem>| problem::from_problem(&problem);
    let mut errors: Vec<FieldError> = Vec::new();
    let pairs = shared.discovery.registry.path_params(parts.uri.path());
    validator
        .check_params(&pairs, parts.uri.query(), &parts.headers, &mut errors)
        .map_err(refuse)?;
    if !errors.is_empty() {
        // Like axum's `Path` and `Query`, which run before a body extractor: the body is
        // not read.
        return Err(problem::from_problem(&validate::invalid(
            validate::Part::Params,
            errors,
        )));
    }
    let checked = if validator.takes_body() {
        let bytes = read_body(parts, body, shared.body_limit)
            .await
            .map_err(refuse)?;
        if let Some(parsed) = validator
            .check_body(&parts.headers, &bytes, &mut errors)
            .map_err(refuse)?
        {
            parts.extensions.insert(ParsedBody(parsed));
        }
        (Body::from(bytes.clone()), Some(bytes))
    } else {
        (body, None)
    };
    if errors.is_empty() {
        Ok(checked)
    } else {
        Err(problem::from_problem(&validate::invalid(
            validate::Part::Body,
            errors,
        )))
    }
}

/// `403` naming the scopes that are missing, in the body and (RFC 6750 §3.1) in
/// `WWW-Authenticate`.
fn forbidden(shared: &Shared, missing: &[&str]) -> Response {
    let mut response = problem::response(
        StatusCode::FORBIDDEN,
        format!(
            "the credentials lack the scope{} this operation needs: {}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        ),
    );
    if let Some(value) = shared.challenges.insufficient_scope(missing) {
        response.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    response
}

/// A reconnecting client: the events of its call after `Last-Event-ID`, from this instance's
/// memory or, for a call of another instance, from the shared store.
async fn resume(
    shared: &Shared,
    parts: &Parts,
    call_id: &HeaderValue,
    tool: usize,
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
    let keep_alive = shared.calls.config().keep_alive;
    let call = call_id
        .to_str()
        .ok()
        .and_then(|id| shared.calls.find(id))
        .filter(|call| call.tool == tool && call.caller.as_deref() == caller.map(Principal::id));
    let Some(call) = call else {
        return match (shared.calls.shared(), call_id.to_str()) {
            (Some(store), Ok(id)) => {
                let name = shared.discovery.registry.tool_at(tool).name();
                let caller = caller.map(Principal::id);
                stream::resume_shared(store, id, name, caller, after, keep_alive).await
            }
            _ => gone(stream::NOT_KEPT),
        };
    };
    if !call.can_resume_after(after) {
        return gone(stream::EVENTS_GONE);
    }
    stream::respond(call.subscribe(), after, keep_alive)
}

/// Reads a request body of at most `limit` bytes: `413` past it, `400` when the
/// connection fails mid-body.
async fn read_body(parts: &Parts, body: Body, limit: usize) -> Result<Bytes, Box<Problem>> {
    let too_large = || {
        Box::new(Problem::new(413).with_detail(format!("the body is larger than {limit} bytes")))
    };
    let declared = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(too_large());
    }
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(_) => Err(Box::new(
            Problem::new(400).with_detail("the body could not be read"),
        )),
    }
}
