//! With the feature `axum`: [`Principal`] as an extractor of the handlers behind the layer,
//! and [`Unauthenticated`] as the `401` problem document it stands for.

use axum_core::body::Body;
use axum_core::extract::{FromRequestParts, OptionalFromRequestParts};
use axum_core::response::{IntoResponse, Response};
use halo_protocol::{PROBLEM_MEDIA_TYPE, Problem};
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::request::Parts;
use http::{HeaderValue, StatusCode};

use crate::{Principal, Unauthenticated};

impl<S: Sync> FromRequestParts<S> for Principal {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Self>()
            .cloned()
            .ok_or_else(|| unauthorized("this operation needs credentials"))
    }
}

impl<S: Sync> OptionalFromRequestParts<S> for Principal {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &S,
    ) -> Result<Option<Self>, Self::Rejection> {
        Ok(parts.extensions.get::<Self>().cloned())
    }
}

impl IntoResponse for Unauthenticated {
    fn into_response(self) -> Response {
        unauthorized(self.message)
    }
}

/// A `401` problem document saying `detail`, not to be cached.
fn unauthorized(detail: impl Into<String>) -> Response {
    let problem = Problem::new(StatusCode::UNAUTHORIZED.as_u16()).with_detail(detail);
    let mut response = Response::new(Body::from(problem.to_json()));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_MEDIA_TYPE));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
