//! [`ValidJson`]: a JSON body that the layer has already parsed and checked.

mod rejection;

use axum::extract::{FromRequest, Request};
use bytes::Bytes;
use http::header::CONTENT_TYPE;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use self::rejection::ValidJsonRejection;

/// A request body the layer parsed while validating it.
#[derive(Debug, Clone)]
pub(crate) struct ParsedBody(pub(crate) Value);

/// A JSON request body, like axum's [`Json`](axum::Json), that is parsed once.
///
/// Behind a validating [`HaloLayer`](crate::HaloLayer) the layer has already parsed the
/// body to check it against the schema; `ValidJson` takes that parsed value instead of
/// reading the bytes again. Without validation it parses the body itself. It rejects with a
/// [`ValidJsonRejection`], answered as problem+json with axum's statuses: `415` without a
/// JSON `Content-Type`, `400` for malformed JSON, `422` when the JSON does not fit `T`.
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
    type Rejection = ValidJsonRejection;

    async fn from_request(mut request: Request, state: &S) -> Result<Self, Self::Rejection> {
        if let Some(ParsedBody(value)) = request.extensions_mut().remove::<ParsedBody>() {
            return T::deserialize(value)
                .map(Self)
                .map_err(|error| ValidJsonRejection::parse(&error));
        }
        let json = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(halo_protocol::is_json);
        if !json {
            return Err(ValidJsonRejection::content_type());
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| ValidJsonRejection::body(&rejection))?;
        let mut deserializer = serde_json::Deserializer::from_slice(&bytes);
        let value = T::deserialize(&mut deserializer).and_then(|value| {
            deserializer.end()?;
            Ok(value)
        });
        value
            .map(Self)
            .map_err(|error| ValidJsonRejection::parse(&error))
    }
}
