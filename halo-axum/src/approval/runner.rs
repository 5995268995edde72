//! How a held request runs once approved: through the application's service, kept with the
//! request as a boxed call (the `R` of halo-govern's book, which only keeps it).

use std::future::Future;
use std::pin::Pin;

use axum::body::Body;
use axum::response::Response;
use http::Request;
use tower_service::Service;

/// The service failed (its error type is the application's): answered as `500`.
pub(crate) struct Failed;

/// Runs a held request through the application's service.
pub(crate) type Runner = Box<
    dyn FnOnce(Request<Body>) -> Pin<Box<dyn Future<Output = Result<Response, Failed>> + Send>>
        + Send,
>;

/// A runner of `inner` (ready, and polled ready again before it runs).
pub(crate) fn runner<S>(mut inner: S) -> Runner
where
    S: Service<Request<Body>, Response = Response> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    Box::new(move |request| {
        Box::pin(async move {
            std::future::poll_fn(|cx| inner.poll_ready(cx))
                .await
                .map_err(|_| Failed)?;
            inner.call(request).await.map_err(|_| Failed)
        })
    })
}
