use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use http::{Method, Request};
use tower_service::Service;

use super::ResponseFuture;
use crate::catalog::{self, Document, Documents};
use crate::discovery::{Discovery, Viewer};
use crate::execute::{self, Shared};

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
        if shared.authenticator.is_none() || !document.is_personal() {
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
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        ResponseFuture::boxed(Box::pin(catalog::serve(
            documents,
            Arc::clone(shared),
            ready,
            request,
            document,
        )))
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
        // ones every passed-through request runs are: `wants_stream`, `checks` and
        // `Governance::tool` (measured: GET outermost / bare router 1.03-1.035 without,
        // 1.012-1.028 with).
        let request = request.map(Body::new);
        let shared = &self.shared;
        if request.method() == Method::OPTIONS {
            if !Discovery::is_discovery(&request) {
                let authenticated = shared.authenticator.is_some();
                let allow = shared.discovery.allow(request.uri().path(), authenticated);
                return ResponseFuture::options(self.inner.call(request), allow);
            }
            if shared.authenticator.is_none() {
                let (parts, _) = request.into_parts();
                let response =
                    shared
                        .discovery
                        .respond(&parts.uri, &parts.headers, Viewer::Everyone);
                shared.discovered(&parts.uri, &response);
                return ResponseFuture::ready(response);
            }
            let shared = Arc::clone(shared);
            let (parts, _) = request.into_parts();
            return ResponseFuture::boxed(Box::pin(
                async move { Ok(shared.discover(parts).await) },
            ));
        }
        // The discovery documents beside HALO, when the app opted in (`HaloBuilder::catalogs`).
        if let Some(documents) = &self.catalogs
            && let Some(document) = documents.document(request.method(), request.uri().path())
        {
            let documents = Arc::clone(documents);
            return self.catalog(documents, document, request);
        }
        let mut streaming = execute::wants_stream(request.headers());
        let registry = &shared.discovery.registry;
        let (uri, method) = (request.uri(), request.method());
        let tool = if shared.checks(streaming) {
            // Every described operation goes through the layer.
            registry
                .path(uri.path())
                .and_then(|(_, entry)| registry.tool(entry, method, uri.query()))
                .map(|(index, _)| index)
        } else {
            // Only the tools with a rate, a key or a deadline do.
            shared.governance.tool(registry, uri, method)
        };
        let Some(tool) = tool else {
            return ResponseFuture::inner(self.inner.call(request));
        };
        if streaming && registry.tool_at(tool).own_stream {
            // The application's own event stream: checked and governed like any call of the
            // operation, never wrapped in a tool stream.
            streaming = false;
            if !shared.checks(false) && !shared.governance.governs(tool) {
                return ResponseFuture::inner(self.inner.call(request));
            }
        }
        // The ready service serves this call; a clone takes its place for the next one.
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        ResponseFuture::boxed(Box::pin(execute::execute(
            Arc::clone(shared),
            ready,
            request,
            tool,
            streaming,
        )))
    }
}
