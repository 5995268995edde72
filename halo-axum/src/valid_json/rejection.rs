//! [`ValidJsonRejection`]: why [`ValidJson`](super::ValidJson) turned a request away.

use std::fmt;

use axum::extract::rejection::BytesRejection;
use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::problem;

/// Why a [`ValidJson`](super::ValidJson) body was refused, in the style of axum's
/// [`JsonRejection`](axum::extract::rejection::JsonRejection): a typed value a handler can
/// inspect (`Result<ValidJson<T>, ValidJsonRejection>`) or answer with as it is. Its
/// response is an `application/problem+json` document with the status axum's `Json` answers
/// the same failure with.
///
/// ```
/// use axum::response::IntoResponse;
/// use halo_axum::{ValidJson, ValidJsonRejection};
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct NewBook { title: String }
///
/// async fn add_book(body: Result<ValidJson<NewBook>, ValidJsonRejection>) -> axum::response::Response {
///     match body {
///         Ok(ValidJson(book)) => book.title.into_response(),
///         // A body that is JSON but not a book: say so in the app's own words.
///         Err(rejection) if rejection.is_data_error() => {
///             (rejection.status(), "that is not a book").into_response()
///         }
///         Err(rejection) => rejection.into_response(),
///     }
/// }
/// # let _ = axum::Router::<()>::new().route("/books", axum::routing::post(add_book));
/// ```
#[derive(Debug)]
pub struct ValidJsonRejection {
    kind: Kind,
    detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// No JSON `Content-Type` (`415`).
    ContentType,
    /// Not JSON at all (`400`).
    Syntax,
    /// JSON, but not what the handler's type holds (`422`).
    Data,
    /// The body could not be read: too large (`413`) or cut off (`400`).
    Body(StatusCode),
}

impl ValidJsonRejection {
    pub(super) fn content_type() -> Self {
        Self {
            kind: Kind::ContentType,
            detail: "the body must be sent as Content-Type: application/json".to_owned(),
        }
    }

    pub(super) fn parse(error: &serde_json::Error) -> Self {
        if error.is_data() {
            Self {
                kind: Kind::Data,
                detail: format!("the body does not fit: {error}"),
            }
        } else {
            Self {
                kind: Kind::Syntax,
                detail: format!("the body is not valid JSON: {error}"),
            }
        }
    }

    pub(super) fn body(rejection: &BytesRejection) -> Self {
        Self {
            kind: Kind::Body(rejection.status()),
            detail: rejection.body_text(),
        }
    }

    /// The status the rejection answers with: `415`, `400`, `422` or `413`.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        match self.kind {
            Kind::ContentType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Kind::Syntax => StatusCode::BAD_REQUEST,
            Kind::Data => StatusCode::UNPROCESSABLE_ENTITY,
            Kind::Body(status) => status,
        }
    }

    /// What went wrong, in words (the response's `detail`).
    #[must_use]
    pub fn body_text(&self) -> &str {
        &self.detail
    }

    /// The request had no JSON `Content-Type`.
    #[must_use]
    pub fn is_missing_content_type(&self) -> bool {
        self.kind == Kind::ContentType
    }

    /// The body is not JSON.
    #[must_use]
    pub fn is_syntax_error(&self) -> bool {
        self.kind == Kind::Syntax
    }

    /// The body is JSON, but not a value of the handler's type.
    #[must_use]
    pub fn is_data_error(&self) -> bool {
        self.kind == Kind::Data
    }

    /// The body could not be read (too large, or the connection failed).
    #[must_use]
    pub fn is_body_error(&self) -> bool {
        matches!(self.kind, Kind::Body(_))
    }
}

impl fmt::Display for ValidJsonRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for ValidJsonRejection {}

impl IntoResponse for ValidJsonRejection {
    fn into_response(self) -> Response {
        problem::response(self.status(), self.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_answer_with_axums_statuses() {
        let content_type = ValidJsonRejection::content_type();
        assert!(content_type.is_missing_content_type());
        assert_eq!(content_type.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

        let syntax = serde_json::from_str::<Vec<u32>>("[1, ").unwrap_err();
        let syntax = ValidJsonRejection::parse(&syntax);
        assert!(syntax.is_syntax_error() && !syntax.is_data_error());
        assert_eq!(syntax.status(), StatusCode::BAD_REQUEST);

        let data = serde_json::from_str::<u32>("\"seven\"").unwrap_err();
        let data = ValidJsonRejection::parse(&data);
        assert!(data.is_data_error());
        assert_eq!(data.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(data.to_string().starts_with("the body does not fit: "));

        let response = data.into_response();
        assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            response.headers()[http::header::CONTENT_TYPE],
            "application/problem+json"
        );
    }
}
