//! Errors as `application/problem+json` (RFC 9457), and extractors whose rejections use them.
//!
//! Every failure a handler or an extractor can produce becomes an [`ApiError`], which answers with
//! a standard status code and a problem details body: `type`, `title`, `status`, `detail`, and for
//! validation failures an `errors` list of `{ "pointer", "message" }`.
//!
//! Most refusals never get this far: the HALO layer answers `401`, `403`, and input that breaks
//! the operation's schema (`400`, `413`, `415`, `422`) with the same kind of body before a
//! handler runs. What is left here is what only the handlers know: an unknown id (`404`), a
//! conflict with the store (`409`), a value the schema allows but the store rejects (`422`).

use axum::extract::FromRequestParts;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

/// The media type of problem details bodies.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// Problem details bodies and their validation errors: the protocol's own types (their
/// OpenAPI schemas come with `halo-protocol`'s `utoipa` feature).
pub use halo_axum::protocol::{FieldError, Problem};

/// An error answered as `application/problem+json`.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    detail: String,
    errors: Vec<FieldError>,
}

impl ApiError {
    /// An error with the given status and explanation.
    #[must_use]
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
            errors: Vec::new(),
        }
    }

    /// `400 Bad Request`.
    #[must_use]
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    /// `404 Not Found`.
    #[must_use]
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }

    /// `409 Conflict`.
    #[must_use]
    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }

    /// `422 Unprocessable Content` for one invalid value at `pointer`.
    #[must_use]
    pub fn invalid(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self::validation(vec![FieldError::new(pointer, message)])
    }

    /// `422 Unprocessable Content` listing every invalid value.
    #[must_use]
    pub fn validation(errors: Vec<FieldError>) -> Self {
        let detail = match errors.as_slice() {
            [one] => format!("{}: {}", one.pointer, one.message),
            many => format!("{} values are invalid", many.len()),
        };
        Self {
            errors,
            ..Self::new(StatusCode::UNPROCESSABLE_ENTITY, detail)
        }
    }

    /// The status code this error answers with.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The problem details body this error answers with.
    #[must_use]
    pub fn problem(&self) -> Problem {
        let mut problem = Problem::new(self.status.as_u16()).with_detail(self.detail.clone());
        self.status
            .canonical_reason()
            .unwrap_or("Error")
            .clone_into(&mut problem.title);
        problem.errors.clone_from(&self.errors);
        problem
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status, self.detail)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.problem()).unwrap_or_default();
        let mut response = (self.status, body).into_response();
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        response
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        Self::new(rejection.status(), rejection.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        Self::new(rejection.status(), rejection.body_text())
    }
}

/// Path parameters whose rejections are problem details (axum's `Path` otherwise).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(value) =
            axum::extract::Path::<T>::from_request_parts(parts, state).await?;
        Ok(Self(value))
    }
}

/// Query parameters whose rejections are problem details (axum's `Query` otherwise).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Query(value) =
            axum::extract::Query::<T>::from_request_parts(parts, state).await?;
        Ok(Self(value))
    }
}

/// The result type of every handler.
pub type ApiResult<T> = Result<T, ApiError>;
