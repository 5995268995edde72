//! [`ValidJson`]: a JSON body that the layer has already parsed and checked.

use axum::extract::{FromRequest, Request};
use axum::response::Response;
use bytes::Bytes;
use http::StatusCode;
use http::header::CONTENT_TYPE;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::problem;

/// A request body the layer parsed while validating it.
#[derive(Debug, Clone)]
pub(crate) struct ParsedBody(pub(crate) Value);

/// A JSON request body, like axum's [`Json`](axum::Json), that is parsed once.
///
/// Behind a validating [`HaloLayer`](crate::HaloLayer) the layer has already parsed the
/// body to check it against the schema; `ValidJson` takes that parsed value instead of
/// reading the bytes again. Without validation it parses the body itself. Rejections are
/// problem+json: `415` without a JSON `Content-Type`, `400` for malformed JSON, `422` when the
/// JSON does not fit `T`.
///
/// ```
/// use halo_axum::ValidJson;
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct NewBook { title: String, pages: u32 }
///
/// async fn add_book(ValidJson(book): ValidJson<NewBook>) -> String {
///     format!("{} ({} pages)", book.title, book.pages)
/// }
/// # let _ = axum::Router::<()>::new().route("/books", axum::routing::post(add_book));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ValidJson<T>(pub T);

impl<T, S> FromRequest<S> for ValidJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request(mut request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let unfit = |error: serde_json::Error| {
            problem::response(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("the body does not fit: {error}"),
            )
        };
        if let Some(ParsedBody(value)) = request.extensions_mut().remove::<ParsedBody>() {
            return T::deserialize(value).map(Self).map_err(unfit);
        }
        let json = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(halo_protocol::is_json);
        if !json {
            return Err(problem::response(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the body must be sent as Content-Type: application/json",
            ));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| problem::response(rejection.status(), rejection.body_text()))?;
        let mut deserializer = serde_json::Deserializer::from_slice(&bytes);
        let value = T::deserialize(&mut deserializer).and_then(|value| {
            deserializer.end()?;
            Ok(value)
        });
        value.map(Self).map_err(|error| {
            if error.is_data() {
                unfit(error)
            } else {
                problem::response(
                    StatusCode::BAD_REQUEST,
                    format!("the body is not valid JSON: {error}"),
                )
            }
        })
    }
}
