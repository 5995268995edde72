//! The [`Halo`] service: a request's way through the layer, top to bottom.
//!
//! `call` sorts requests: discovery (`OPTIONS` with the HALO media type), the discovery
//! documents the app opted in to, and calls of described operations, each matched to its
//! tool once; everything else goes to the inner service untouched. A call then takes the
//! design's chain of steps, each a function in the module of its idea that gives back the
//! value to go on with or the answer to send ([`Stop`]): identify → (resume) → authorize →
//! validate → rate → circuit → approval (held, run once approved) → idempotency →
//! timeout → inner service → stream envelope, with
//! the audit trail and metrics around the whole.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use http::request::Parts;
use http::{Method, Request, StatusCode};
use tower_service::Service;

use super::ResponseFuture;
use super::held;
use super::shared::Shared;
use crate::audit::{AuditRecord, Outcome};
use crate::catalog::{Document, Documents};
use crate::discovery::{Discovery, Viewer};
use crate::govern::{self, Permit, RateCall, RateHeaders, Ticket};
use crate::registry::Route;
use crate::step::{Step, Stop};
use crate::stream::{self, Named, Progress};
use crate::valid_json::ParsedBody;
use crate::{body, problem, validate};

/// The service [`HaloLayer`](super::HaloLayer) wraps an application in.
///
/// `OPTIONS` with the HALO media type is answered here. Calls of described operations go
/// through the layer's checks and, when they ask for `text/event-stream`, run as streamed
/// tools, unless the operation's own successful answer is an event stream (the application's
/// SSE route, passed through as it comes); every other request goes to the inner service
/// untouched. An ordinary `OPTIONS` on a described path that the application has no answer
/// for (`405`) becomes `204` with `Allow`. The discovery documents chosen with
/// [`HaloBuilder::catalogs`](crate::HaloBuilder::catalogs) are answered here too (`GET` and
/// `HEAD` at their paths).
#[derive(Debug, Clone)]
pub struct Halo<S> {
    inner: S,
    shared: Arc<Shared>,
    catalogs: Option<Arc<Documents>>,
}

impl<S> Halo<S> {
    pub(crate) fn new(inner: S, shared: Arc<Shared>, catalogs: Option<Arc<Documents>>) -> Self {
        Self {
            inner,
            shared,
            catalogs,
        }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Unwraps the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Halo<S>
where
    S: Service<Request<Body>, Response = Response> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    /// Answers a discovery document the app opted in to. Kept out of `call` (never
    /// inlined): the requests every app passes through should not carry its code.
    #[inline(never)]
    fn catalog(
        &mut self,
        documents: Arc<Documents>,
        document: Document,
        request: Request<Body>,
    ) -> ResponseFuture<S::Future, S::Error> {
        let shared = &self.shared;
        if !shared.gate.is_closed() || !document.is_personal() {
            let head = request.method() == Method::HEAD;
            let registry = &shared.discovery.registry;
            let answer = documents.answer(
                document,
                registry,
                Viewer::Everyone,
                request.headers(),
                head,
            );
            return match answer {
                Some(response) => ResponseFuture::ready(response),
                None => ResponseFuture::inner(self.inner.call(request)),
            };
        }
        // A document for the caller: `401` for credentials the gate refuses (or for none,
        // when discovery requires them), the caller's document, or the request passed on
        // when the document is not for this caller.
        let shared = Arc::clone(shared);
        let clone = self.inner.clone();
        let mut ready = std::mem::replace(&mut self.inner, clone);
        ResponseFuture::boxed(Box::pin(async move {
            let (parts, body) = request.into_parts();
            let caller = match shared.gate.discoverer(&parts).await {
                Ok(caller) => caller,
                Err(refused) => return Ok(crate::discovery::refused_discovery(refused)),
            };
            let viewer = Viewer::Caller(caller.as_ref());
            let head = parts.method == Method::HEAD;
            let registry = &shared.discovery.registry;
            match documents.answer(document, registry, viewer, &parts.headers, head) {
                Some(response) => Ok(response),
                None => ready.call(Request::from_parts(parts, body)).await,
            }
        }))
    }

    /// A cancel request, answered by the layer. Kept out of `call` (never inlined), as
    /// `catalog` is.
    #[inline(never)]
    fn cancel(&mut self, request: Request<Body>) -> ResponseFuture<S::Future, S::Error> {
        let shared = Arc::clone(&self.shared);
        let (parts, _) = request.into_parts();
        ResponseFuture::boxed(Box::pin(async move {
            Ok(super::cancel::answer(&shared, &parts).await)
        }))
    }

    /// A call of a described operation, through the layer's steps. Kept out of `call`
    /// (never inlined): the future it builds is large, and `call`'s own frame, which every
    /// passed-through request sets up, stays small.
    #[inline(never)]
    fn execute(
        &mut self,
        mut request: Request<Body>,
        route: Route,
        streaming: bool,
    ) -> ResponseFuture<S::Future, S::Error> {
        if self.shared.mark_calls {
            let call = super::ToolCall::new(&self.shared, route.tool());
            request.extensions_mut().insert(call);
        }
        // An approved call run here for a replica that stopped: its steps ran already
        // (`held::takeover`); only in-process requests carry the mark.
        #[cfg(feature = "redis")]
        if self.shared.governance.rules(route.tool()).approval && held::is_takeover(&request) {
            return ResponseFuture::inner(self.inner.call(request));
        }
        // The ready service serves this call; a clone takes its place for the next one.
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        ResponseFuture::boxed(Box::pin(execute(
            Arc::clone(&self.shared),
            ready,
            request,
            route,
            streaming,
        )))
    }

    /// A stream upgrade to WebSocket: the call of the operation it names, or the request
    /// passed on when it names none. Kept out of `call` (never inlined), as `catalog` is.
    #[cfg(feature = "ws")]
    #[inline(never)]
    fn websocket(&mut self, request: Request<Body>) -> ResponseFuture<S::Future, S::Error> {
        let Some(method) = super::websocket::method(&request) else {
            return ResponseFuture::ready(super::websocket::bad_method());
        };
        let registry = &self.shared.discovery.registry;
        let Some(route) = registry.route(request.uri(), &method) else {
            return ResponseFuture::inner(self.inner.call(request));
        };
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        let shared = Arc::clone(&self.shared);
        ResponseFuture::boxed(Box::pin(super::websocket::open(
            shared, ready, request, route, method,
        )))
    }

    /// A request of the approvals endpoints, answered by the layer. Kept out of `call`
    /// (never inlined), as `catalog` is.
    #[inline(never)]
    fn approvals(&mut self, request: Request<Body>) -> ResponseFuture<S::Future, S::Error> {
        let shared = Arc::clone(&self.shared);
        ResponseFuture::boxed(Box::pin(
            async move { Ok(held::serve(shared, request).await) },
        ))
    }

    /// `OPTIONS`: discovery with the HALO media type, scoped to the caller when an
    /// authenticator is set; otherwise the app's own answer, with `Allow` where it has none
    /// for a described path. Kept out of `call` (never inlined), as `catalog` is.
    #[inline(never)]
    fn options(&mut self, request: Request<Body>) -> ResponseFuture<S::Future, S::Error> {
        let shared = &self.shared;
        if !Discovery::is_discovery(&request) {
            let allow = shared
                .discovery
                .allow(request.uri().path(), shared.gate.is_closed());
            return ResponseFuture::options(self.inner.call(request), allow);
        }
        let (parts, _) = request.into_parts();
        if !shared.gate.is_closed() {
            let response = shared
                .discovery
                .respond(&parts.uri, &parts.headers, Viewer::Everyone);
            shared.discovered(&parts.uri, &response);
            return ResponseFuture::ready(response);
        }
        let shared = Arc::clone(shared);
        ResponseFuture::boxed(Box::pin(async move {
            let response = shared.discovery.respond_to(&shared.gate, &parts).await;
            shared.discovered(&parts.uri, &response);
            Ok(response)
        }))
    }
}

impl<S, B> Service<Request<B>> for Halo<S>
where
    S: Service<Request<Body>, Response = Response> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // This generic method is compiled in the application's crate, where this crate's
        // non-generic functions are not inlined unless marked `#[inline]` (without LTO). The
        // ones every passed-through request runs are: `stream::wanted`, `checks` and
        // `Governance::route` (measured: GET outermost / bare router 1.03-1.035 without,
        // 1.012-1.028 with).
        let request = request.map(Body::new);
        let shared = &self.shared;
        if request.method() == Method::OPTIONS {
            return self.options(request);
        }
        // Cancelling a running call (`DELETE /.well-known/halo/calls/{id}`).
        if stream::is_cancel(request.method(), request.uri().path()) {
            return self.cancel(request);
        }
        // Approvals of held calls (`/.well-known/halo/approvals`), when there is an approver.
        if shared.approvals.approver().is_some() && held::is_endpoint(request.uri().path()) {
            return self.approvals(request);
        }
        // The discovery documents beside HALO, when the app opted in (`HaloBuilder::catalogs`).
        if let Some(documents) = &self.catalogs
            && let Some(document) = documents.document(request.method(), request.uri().path())
        {
            let documents = Arc::clone(documents);
            return self.catalog(documents, document, request);
        }
        // A stream over WebSocket: an upgrade offering HALO's subprotocol.
        #[cfg(feature = "ws")]
        if super::websocket::is_upgrade(&request) {
            return self.websocket(request);
        }
        // Match: the described operation called, its path template matched once.
        let mut streaming = stream::wanted(request.headers());
        let registry = &shared.discovery.registry;
        let (uri, method) = (request.uri(), request.method());
        let route = if shared.checks(streaming) {
            // Every described operation goes through the layer.
            registry.route(uri, method)
        } else {
            // Only the tools with a rate, a key or a deadline do, and calls named to be
            // cancellable (`Halo-Call-Id`).
            shared.governance.route(registry, uri, method).or_else(|| {
                stream::is_named(request.headers()).then(|| registry.route(uri, method))?
            })
        };
        let Some(route) = route else {
            return ResponseFuture::inner(self.inner.call(request));
        };
        if streaming && registry.tool_at(route.tool()).streams_itself() {
            // The application's own event stream: checked and governed like any call of the
            // operation, never wrapped in a tool stream.
            streaming = false;
            if !shared.checks(false) && !shared.governance.governs(route.tool()) {
                return ResponseFuture::inner(self.inner.call(request));
            }
        }
        self.execute(request, route, streaming)
    }
}

/// Runs a call of a described operation (`route`) through the chain, then `inner` (which
/// must be ready), and writes it to the audit trail and the metrics when they are on.
/// `streaming`: the call runs as a tool stream.
pub(super) async fn execute<S>(
    shared: Arc<Shared>,
    inner: S,
    request: Request<Body>,
    route: Route,
    streaming: bool,
) -> Result<Response, S::Error>
where
    S: Service<Request<Body>, Response = Response> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    let started = Instant::now();
    let tool = shared.discovery.registry.tool_at(route.tool());
    let mut trail = shared.audit.as_ref().map(|_| {
        AuditRecord::new(
            request.headers(),
            tool.name(),
            request.method(),
            request.uri().path(),
        )
    });
    let (parts, body) = request.into_parts();
    let admitted = admit(&shared, &route, parts, body, streaming, trail.as_mut()).await;
    let ((response, outcome), streamed) = match admitted {
        Ok(Admission::Run(call)) => run(&shared, inner, &route, call, streaming).await?,
        Ok(Admission::Hold(held, rate)) => {
            // Boxed, as the admission: a call that runs does not carry this future's size.
            let stop = Box::pin(held::hold(&shared, inner, &route, *held)).await;
            let rate = rate.as_ref().map_or(&[][..], |h| &h[..]);
            (stop.with_headers(rate).into_parts(), None)
        }
        Err(stop) => (stop.into_parts(), None),
    };
    match streamed {
        // A streamed call is counted and written to the trail when it ends: with its end's
        // status, and `cancelled` when a cancel request or its client leaving ended it.
        Some(call) if trail.is_some() || shared.metrics.is_some() => {
            let shared = Arc::downgrade(&shared);
            call.on_end(move |end| {
                if let Some(shared) = shared.upgrade() {
                    let elapsed = started.elapsed();
                    finish(
                        &shared,
                        route.tool(),
                        trail,
                        end.status,
                        end.outcome,
                        elapsed,
                    );
                }
            });
        }
        _ => {
            let elapsed = started.elapsed();
            finish(
                &shared,
                route.tool(),
                trail,
                response.status(),
                outcome,
                elapsed,
            );
        }
    }
    Ok(response)
}

/// Counts a call of the tool at `tool` that ended with `status` and `outcome` after
/// `elapsed`, and writes its audit record (`trail`).
pub(super) fn finish(
    shared: &Shared,
    tool: usize,
    trail: Option<AuditRecord>,
    status: StatusCode,
    outcome: Outcome,
    elapsed: Duration,
) {
    if let Some(metrics) = &shared.metrics {
        metrics.call(tool, outcome, status, elapsed);
    }
    if let (Some(sink), Some(mut record)) = (&shared.audit, trail) {
        record.finish(status, outcome, elapsed);
        sink.record(record);
    }
}

/// Where the checks send a call: on to the handler, or to wait for approval (with the rate
/// headers every answer carries).
// Every call that runs takes the large variant: boxing it would cost each one an allocation.
#[allow(clippy::large_enum_variant)]
enum Admission {
    Run(Admitted),
    /// Boxed: the rare branch does not make every call's admission larger.
    Hold(Box<held::Held>, Option<RateHeaders>),
}

/// A call every check let through, on its way to the handler.
struct Admitted {
    parts: Parts,
    body: Body,
    /// The caller's id (the `Principal` itself is in the extensions).
    caller: Option<String>,
    /// The `RateLimit` headers every answer carries, when the tool has a rate.
    rate: Option<RateHeaders>,
    /// The claimed idempotency key, to keep the answer with.
    ticket: Option<Ticket>,
    /// The circuit breaker's permit, when the tool declares a circuit: given the handler's
    /// answer, or (dropped without one) counted as neither success nor failure.
    permit: Option<Permit>,
    /// The name its caller gave a call without a stream (`Halo-Call-Id`), kept while it runs
    /// so that it can be cancelled.
    named: Option<Named>,
}

/// The checks before the handler, in the design's order, noting the caller, the (redacted)
/// arguments and the idempotency key in `trail`.
async fn admit(
    shared: &Shared,
    route: &Route,
    mut parts: Parts,
    body: Body,
    streaming: bool,
    mut trail: Option<&mut AuditRecord>,
) -> Step<Admission> {
    let registry = &shared.discovery.registry;
    let tool = registry.tool_at(route.tool());
    // Identify (no future to poll when nobody is identified), unless a stream's upgrade
    // request did.
    #[cfg(feature = "ws")]
    let identified = parts
        .extensions
        .remove::<super::websocket::Identified>()
        .map(|identified| identified.0);
    #[cfg(not(feature = "ws"))]
    let identified: Option<Option<crate::Principal>> = None;
    let caller = match (identified, shared.gate.is_closed()) {
        (Some(identified), _) => identified,
        (None, true) => shared.gate.identify(&parts).await?,
        (None, false) => None,
    };
    if let Some(record) = trail.as_deref_mut() {
        record.caller = caller.as_ref().map(|c| c.id().to_owned());
    }
    // Resume: a client reconnecting to a streamed call gets the events it missed.
    if streaming && let Some(call_id) = parts.headers.get(stream::CALL_ID) {
        let calls = &shared.calls;
        let tool = (route.tool(), tool.name());
        let response = stream::resume(calls, &parts, call_id, tool, caller.as_ref()).await;
        return Err(Stop::new(Outcome::Replayed, response));
    }
    // Name: a call without a stream whose caller named it can be cancelled while it runs.
    let named = match parts.headers.get(stream::CALL_ID) {
        Some(call_id) if !streaming => {
            let caller = caller.as_ref().map(|caller| caller.id());
            Some(shared.calls.running().name(call_id, route.tool(), caller)?)
        }
        _ => None,
    };
    // Authorize.
    shared.gate.authorize(registry, tool, caller.as_ref())?;
    // Validate.
    let (body, read) = match tool.validator().filter(|_| shared.validate) {
        None => (body, None),
        Some(validator) => {
            let path = registry.path_params(route, parts.uri.path());
            validate::request_params(validator, &path, &parts)?;
            validate::request_body(validator, &mut parts, body, shared.body_limit).await?
        }
    };
    if shared.audit_arguments
        && let Some(record) = trail.as_deref_mut()
    {
        let parsed = parts.extensions.get::<ParsedBody>().map(|parsed| &parsed.0);
        record.note_arguments(tool.sensitive(), parsed, read.as_deref());
    }
    // Rate.
    let call = RateCall {
        registry,
        route,
        caller: caller.as_ref(),
        parts: &parts,
        body_limit: shared.body_limit,
    };
    let (body, read, rate) = shared.governance.limit(call, body, read).await?;
    let with_rate = |stop: Stop| match &rate {
        Some(headers) => stop.with_headers(headers),
        None => stop,
    };
    // Circuit: refused while the tool's circuit is open. From here on, a refusal drops the
    // permit, which counts as neither success nor failure.
    let permit = shared
        .governance
        .enter(route.tool())
        .await
        .map_err(with_rate)?;
    // Idempotency.
    let key = shared
        .governance
        .idempotency_key(route.tool(), tool, &parts, streaming)
        .map_err(with_rate)?;
    // Approval: a call that needs one is held (its key claimed when it runs).
    if shared.governance.rules(route.tool()).approval {
        let held = held::Held {
            parts,
            body,
            read,
            caller,
            key,
            streaming,
        };
        return Ok(Admission::Hold(Box::new(held), rate));
    }
    let (body, ticket) = match key {
        None => (body, None),
        Some(key) => {
            let (body, bytes) = body::buffered(&parts, body, read, shared.body_limit)
                .await
                .map_err(|problem| {
                    with_rate(Stop::new(Outcome::Invalid, problem::from_problem(&problem)))
                })?;
            if let Some(record) = trail {
                record.idempotency_key = Some(String::from_utf8_lossy(key.as_bytes()).into());
            }
            let claimed = shared
                .governance
                .claim(tool, &key, &parts, caller.as_ref(), &bytes)
                .await;
            (body, Some(claimed.map_err(with_rate)?))
        }
    };
    let caller_id = caller.as_ref().map(|c| c.id().to_owned());
    if let Some(caller) = caller {
        parts.extensions.insert(caller);
    }
    Ok(Admission::Run(Admitted {
        parts,
        body,
        caller: caller_id,
        rate,
        ticket,
        permit,
        named,
    }))
}

/// The handler within the tool's deadline, plainly (its answer kept for the idempotency
/// key) or in a stream envelope (the streamed call given back too).
async fn run<S>(
    shared: &Shared,
    mut inner: S,
    route: &Route,
    call: Admitted,
    streaming: bool,
) -> Result<((Response, Outcome), Option<Arc<stream::Call>>), S::Error>
where
    S: Service<Request<Body>, Response = Response> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    let Admitted {
        mut parts,
        body,
        caller,
        rate,
        ticket,
        permit,
        named,
    } = call;
    let rate = rate.as_ref().map_or(&[][..], |headers| &headers[..]);
    let deadline = shared.governance.rules(route.tool()).timeout;
    if !streaming {
        let handler = govern::within(deadline, inner.call(Request::from_parts(parts, body)));
        let answer = match named {
            None => handler.await,
            // Boxed: a call nobody named carries none of this future's size.
            Some(named) => match Box::pin(named.run(handler)).await {
                Some(answer) => answer,
                // Cancelled: the handler's future is dropped, the circuit counts the call as
                // neither success nor failure, and its idempotency key is freed.
                None => {
                    drop(permit);
                    let _ = shared
                        .governance
                        .settle(ticket, Err::<Response, ()>(()))
                        .await;
                    let mut response = stream::cancelled();
                    response.headers_mut().extend(rate.iter().cloned());
                    return Ok(((response, Outcome::Cancelled), None));
                }
            },
        };
        if let Some(permit) = permit {
            permit.record(answer.as_ref().ok().map(Response::status));
        }
        let outcome = govern::outcome(&answer);
        let mut response = shared.governance.settle(ticket, answer).await?;
        response.headers_mut().extend(rate.iter().cloned());
        return Ok(((response, outcome), None));
    }
    let tool = (
        route.tool(),
        shared.discovery.registry.tool_at(route.tool()),
    );
    let call = match stream::open(&shared.calls, tool, caller) {
        Ok(call) => call,
        Err(stop) => return Ok((stop.with_headers(rate).into_parts(), None)),
    };
    parts
        .extensions
        .insert(Progress::attached(Arc::clone(&call)));
    let running = govern::within(deadline, inner.call(Request::from_parts(parts, body)));
    // The circuit learns the answer when the handler ends in its task (or, when the task is
    // cancelled, counts the call as neither).
    let running = async move {
        let answer = running.await;
        if let Some(permit) = permit {
            permit.record(answer.as_ref().ok().map(Response::status));
        }
        answer
    };
    let mut response = stream::spawn(Arc::clone(&call), running, shared.calls.config().keep_alive);
    response.headers_mut().extend(rate.iter().cloned());
    Ok(((response, Outcome::Executed), Some(call)))
}
