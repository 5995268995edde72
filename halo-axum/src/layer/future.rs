use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::body::Body;
use axum::response::Response;
use http::header::ALLOW;
use http::{HeaderValue, StatusCode};
use pin_project_lite::pin_project;

use crate::discovery::vary_on_accept;

/// A call the layer runs itself: checks, then the inner service.
type Boxed<E> = Pin<Box<dyn Future<Output = Result<Response, E>> + Send>>;

pin_project! {
    /// The response future of [`Halo`](super::Halo).
    pub struct ResponseFuture<F, E> {
        #[pin]
        kind: Kind<F, E>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F, E> {
        // Answered by the layer itself.
        Ready { response: Option<Response> },
        // Checked (and perhaps streamed) by the layer.
        Boxed { future: Boxed<E> },
        // An ordinary OPTIONS passed to the application.
        Options { #[pin] future: F, allow: Option<HeaderValue> },
        // Anything else, passed through untouched.
        Inner { #[pin] future: F },
    }
}

impl<F, E> ResponseFuture<F, E> {
    pub(crate) fn boxed(future: Boxed<E>) -> Self {
        Self {
            kind: Kind::Boxed { future },
        }
    }

    pub(crate) fn ready(response: Response) -> Self {
        Self {
            kind: Kind::Ready {
                response: Some(response),
            },
        }
    }

    pub(crate) fn options(future: F, allow: Option<HeaderValue>) -> Self {
        Self {
            kind: Kind::Options { future, allow },
        }
    }

    pub(crate) fn inner(future: F) -> Self {
        Self {
            kind: Kind::Inner { future },
        }
    }
}

impl<F, E> Future for ResponseFuture<F, E>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Ready { response } => {
                Poll::Ready(Ok(response.take().expect("polled after completion")))
            }
            KindProj::Inner { future } => future.poll(cx),
            KindProj::Boxed { future } => future.as_mut().poll(cx),
            KindProj::Options { future, allow } => {
                let mut response = ready!(future.poll(cx))?;
                if response.status() == StatusCode::METHOD_NOT_ALLOWED
                    && let Some(described) = allow.take()
                {
                    let routed = response.headers().get(ALLOW).cloned();
                    response = no_content(with_options(routed.unwrap_or(described)));
                }
                vary_on_accept(response.headers_mut());
                Poll::Ready(Ok(response))
            }
        }
    }
}

/// The application's own `Allow` list (it knows about implicit `HEAD`), plus `OPTIONS`.
fn with_options(allow: HeaderValue) -> HeaderValue {
    let listed = allow
        .to_str()
        .unwrap_or_default()
        .split(',')
        .any(|method| method.trim().eq_ignore_ascii_case("OPTIONS"));
    if listed {
        return allow;
    }
    let mut joined = allow.as_bytes().to_vec();
    joined.extend_from_slice(if joined.is_empty() {
        b"OPTIONS"
    } else {
        b",OPTIONS"
    });
    HeaderValue::from_bytes(&joined).unwrap_or(allow)
}

/// `204 No Content` with `Allow`: the answer to `OPTIONS` on a path the application routes
/// but gives no `OPTIONS` handler.
fn no_content(allow: HeaderValue) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    response.headers_mut().insert(ALLOW, allow);
    response
}

impl<F, E> std::fmt::Debug for ResponseFuture<F, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}
