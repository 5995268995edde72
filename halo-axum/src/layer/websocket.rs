//! A streamed call over WebSocket (feature `ws`, HALO §10.1.2): the upgrade request of a
//! described operation is checked (who calls, whether they may) and, for a client resuming,
//! answered by the engine before the upgrade, so that every refusal is still an HTTP problem;
//! a new call's arguments come in the socket's first message. The call then runs through the
//! layer's whole chain (`service::execute`, as an SSE call does) and the socket only writes
//! its event stream (`stream::relay`).

use std::sync::Arc;
use std::time::Instant;

use axum::Router;

use axum::body::Body;
use axum::extract::FromRequestParts as _;
use axum::extract::ws::WebSocketUpgrade;
use axum::response::Response;
use halo_protocol::{EVENT_STREAM, METHOD_HEADER, WEBSOCKET_PROTOCOL};
use http::header::{
    ACCEPT, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, SEC_WEBSOCKET_EXTENSIONS, SEC_WEBSOCKET_KEY,
    SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use http::request::Parts;
use http::{HeaderValue, Method, Request, StatusCode};
use serde_json::Value;
use tower_service::Service;

use super::Shared;
use crate::audit::AuditRecord;
use crate::registry::Route;
use crate::stream::{self, Cancel};
use crate::{HaloLayer, Principal, problem};

/// The caller identified before the upgrade, so that the call's own steps do not ask the
/// authenticator again.
#[derive(Debug, Clone)]
pub(crate) struct Identified(pub(crate) Option<Principal>);

/// Whether a request asks to open a HALO stream over WebSocket: a `GET` upgrade to
/// `websocket` that offers the `halo-stream.v1` subprotocol (any other upgrade is the
/// application's).
#[inline]
pub(super) fn is_upgrade(request: &Request<Body>) -> bool {
    let headers = request.headers();
    request.method() == Method::GET
        && headers.get(UPGRADE).is_some_and(|value| {
            value
                .to_str()
                .is_ok_and(|value| value.eq_ignore_ascii_case("websocket"))
        })
        && headers.get_all(SEC_WEBSOCKET_PROTOCOL).iter().any(|value| {
            value.to_str().is_ok_and(|list| {
                list.split(',')
                    .any(|protocol| protocol.trim() == WEBSOCKET_PROTOCOL)
            })
        })
}

/// The method of the operation a stream upgrade calls (`Halo-Method`, `GET` without it), or
/// `None` when the header is not a method.
pub(super) fn method(request: &Request<Body>) -> Option<Method> {
    match request.headers().get(METHOD_HEADER) {
        None => Some(Method::GET),
        Some(value) => Method::from_bytes(value.as_bytes()).ok(),
    }
}

/// The `400` of an upgrade whose `Halo-Method` is not a method.
pub(super) fn bad_method() -> Response {
    problem::response(StatusCode::BAD_REQUEST, "Halo-Method is not an HTTP method")
}

/// Opens a streamed call of `route` (its operation's `method`) over WebSocket: `401`/`403`
/// before upgrading for a caller refused, and for a client resuming, the engine's refusal
/// (`410`); otherwise `101`, and the call runs on the socket.
pub(super) async fn open<S>(
    shared: Arc<Shared>,
    inner: S,
    request: Request<Body>,
    route: Route,
    method: Method,
) -> Result<Response, S::Error>
where
    S: Service<Request<Body>, Response = Response> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    let started = Instant::now();
    let tool = shared.discovery.registry.tool_at(route.tool());
    if tool.streams_itself() {
        return Ok(problem::response(
            StatusCode::BAD_REQUEST,
            "this operation sends its own event stream, which is not served over WebSocket",
        ));
    }
    let (mut parts, _) = request.into_parts();
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(upgrade) => upgrade,
        Err(rejection) => {
            return Ok(problem::response(rejection.status(), rejection.body_text()));
        }
    };
    // Who calls, and whether they may: refused before the upgrade, with the audit record a
    // refused call has.
    let checked = async {
        let caller = shared.gate.identify(&parts).await?;
        let registry = &shared.discovery.registry;
        shared.gate.authorize(registry, tool, caller.as_ref())?;
        Ok::<_, crate::step::Stop>(caller)
    };
    let caller = match checked.await {
        Ok(caller) => caller,
        Err(stop) => {
            let (response, outcome) = stop.into_parts();
            let trail = shared
                .audit
                .as_ref()
                .map(|_| AuditRecord::new(&parts.headers, tool.name(), &method, parts.uri.path()));
            let elapsed = started.elapsed();
            super::service::finish(
                &shared,
                route.tool(),
                trail,
                response.status(),
                outcome,
                elapsed,
            );
            return Ok(response);
        }
    };
    let config = shared.calls.config();
    let (keep_alive, limits) = (config.keep_alive, config.websocket);
    let (buffer, max_buffer) = limits.write_buffer();
    let upgrade = upgrade
        .protocols([WEBSOCKET_PROTOCOL])
        .max_message_size(limits.max_message_bytes())
        .max_frame_size(limits.max_message_bytes())
        .write_buffer_size(buffer)
        .max_write_buffer_size(max_buffer);
    engine_head(&mut parts, method, &caller);
    let caller_id = caller.as_ref().map(|caller| caller.id().to_owned());
    // A client resuming: the engine answers now, so that `410` stays an HTTP answer.
    if parts.headers.contains_key(stream::CALL_ID) {
        let request = Request::from_parts(parts, Body::empty());
        let shared_ = Arc::clone(&shared);
        let response = super::service::execute(shared_, inner, request, route, true).await?;
        if !response.status().is_success() {
            return Ok(response);
        }
        let cancel = canceller(shared, &response, caller_id);
        return Ok(upgrade.on_upgrade(move |socket| {
            stream::relay(socket, response, keep_alive, limits, cancel)
        }));
    }
    Ok(upgrade.on_upgrade(move |mut socket| async move {
        let Some(arguments) = stream::first_call(&mut socket, &limits).await else {
            return;
        };
        let request = call_request(parts, arguments.as_ref());
        let answer = match shared.socket_app.app() {
            // The app's own layer runs the call, as it would the same call over SSE.
            Some(mut app) => Ok(app
                .call(request)
                .await
                .unwrap_or_else(|never| match never {})),
            None => super::service::execute(Arc::clone(&shared), inner, request, route, true).await,
        };
        let Ok(response) = answer else {
            let failed = problem::response(StatusCode::INTERNAL_SERVER_ERROR, "the call failed");
            let cancel: stream::Cancelling = Box::new(|| Box::pin(async {}));
            return stream::relay(socket, failed, keep_alive, limits, cancel).await;
        };
        let cancel = canceller(shared, &response, caller_id);
        stream::relay(socket, response, keep_alive, limits, cancel).await;
    }))
}

impl HaloLayer {
    /// Gives the layer the app that WebSocket calls are sent into (feature `ws`), and the
    /// router to serve instead of `app`.
    ///
    /// A call over WebSocket arrives as a `GET` upgrade; the layer turns it into the call of
    /// the operation's own method. Wrapping the whole router
    /// (`HaloLayer::layer(router)`), the layer sends that call on to the router itself. Applied
    /// route by route (`Router::layer`), axum has already chosen the `GET` handler of the path
    /// (or its `405`), so the layer needs the app to reach a `POST` operation's handler: serve
    /// the router this gives back. It holds `app` for as long as it is served (the layer holds
    /// it weakly). The first app given is the one used.
    ///
    /// ```
    /// use axum::Router;
    /// use halo_axum::HaloLayer;
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(post, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api).build().expect("valid HALO metadata");
    /// let app: Router = router.layer(layer.clone());
    /// let app: Router = layer.websocket_app(app);
    /// # let _ = app;
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    #[must_use = "serve the router it gives back: the layer reaches the app while it is served"]
    pub fn websocket_app(&self, app: Router) -> Router {
        self.shared.socket_app.hold(app)
    }
}

/// Makes the upgrade request's head the call's: the operation's method, the upgrade's own
/// headers taken out, `Accept: text/event-stream`, and the caller already identified.
fn engine_head(parts: &mut Parts, method: Method, caller: &Option<Principal>) {
    parts.method = method;
    let headers = &mut parts.headers;
    for name in [
        CONNECTION,
        UPGRADE,
        SEC_WEBSOCKET_KEY,
        SEC_WEBSOCKET_VERSION,
        SEC_WEBSOCKET_PROTOCOL,
        SEC_WEBSOCKET_EXTENSIONS,
        CONTENT_LENGTH,
        CONTENT_TYPE,
    ] {
        headers.remove(name);
    }
    headers.remove(METHOD_HEADER);
    headers.insert(ACCEPT, HeaderValue::from_static(EVENT_STREAM));
    parts.extensions.insert(Identified(caller.clone()));
}

/// The call's request: `parts` with the call message's arguments as its JSON body (none
/// without arguments).
fn call_request(mut parts: Parts, arguments: Option<&Value>) -> Request<Body> {
    let Some(arguments) = arguments else {
        return Request::from_parts(parts, Body::empty());
    };
    let bytes = serde_json::to_vec(arguments).unwrap_or_default();
    let headers = &mut parts.headers;
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(bytes.len()));
    Request::from_parts(parts, Body::from(bytes))
}

/// What a cancel message (or the client's normal close) does: the call of `response`
/// (named by its `Halo-Call-Id`) cancelled as its caller's cancel request would, its
/// approval withdrawn when it still waits for one.
fn canceller(
    shared: Arc<Shared>,
    response: &Response,
    caller: Option<String>,
) -> stream::Cancelling {
    let id = response
        .headers()
        .get(stream::CALL_ID)
        .and_then(|id| id.to_str().ok())
        .map(str::to_owned);
    Box::new(move || {
        let (shared, id, caller) = (Arc::clone(&shared), id.clone(), caller.clone());
        Box::pin(async move {
            let Some(call) = id.and_then(|id| shared.calls.find(&id)) else {
                return;
            };
            if call.caller != caller {
                return;
            }
            let by = caller.as_deref();
            if let Ok(true) = super::held::withdraw_stream(&shared, &call.id, by, false).await {
                call.cancel(stream::problem());
                return;
            }
            if call.cancel(stream::problem()) == Cancel::Now {
                tracing::debug!(target: "halo_axum::stream", call = %call.id, "cancelled by its socket");
            }
        })
    })
}
