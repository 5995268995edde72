use std::sync::Arc;
use std::task::{Context, Poll};

use axum::response::Response;
use http::{Method, Request};
use tower_service::Service;

use super::ResponseFuture;
use crate::discovery::Discovery;

/// The service [`HaloLayer`](super::HaloLayer) wraps an application in.
///
/// `OPTIONS` with the HALO media type is answered here; every other request goes to the
/// inner service. An ordinary `OPTIONS` on a described path that the application has no
/// answer for (`405`) becomes `204` with `Allow`.
#[derive(Debug, Clone)]
pub struct Halo<S> {
    inner: S,
    discovery: Arc<Discovery>,
}

impl<S> Halo<S> {
    pub(crate) fn new(inner: S, discovery: Arc<Discovery>) -> Self {
        Self { inner, discovery }
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

impl<S, B> Service<Request<B>> for Halo<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if request.method() != Method::OPTIONS {
            return ResponseFuture::inner(self.inner.call(request));
        }
        if Discovery::is_discovery(&request) {
            return ResponseFuture::ready(self.discovery.respond(&request));
        }
        let allow = self.discovery.allow(request.uri().path());
        ResponseFuture::options(self.inner.call(request), allow)
    }
}
