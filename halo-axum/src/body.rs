//! Reading a request body within the layer's size limit, for the steps that need its bytes
//! (validation, idempotency fingerprints).

use axum::body::Body;
use bytes::Bytes;
use halo_protocol::Problem;
use http::header::CONTENT_LENGTH;
use http::request::Parts;
use http_body_util::BodyExt;

/// Reads a request body of at most `limit` bytes: `413` past it (or when `Content-Length`
/// says so, before reading), `400` when the connection fails mid-body.
pub(crate) async fn read(parts: &Parts, body: Body, limit: usize) -> Result<Bytes, Box<Problem>> {
    let too_large = || {
        Box::new(Problem::new(413).with_detail(format!("the body is larger than {limit} bytes")))
    };
    let declared = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(too_large());
    }
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(_) => Err(Box::new(
            Problem::new(400).with_detail("the body could not be read"),
        )),
    }
}

/// The bytes of a body some step needs whole, and the body to hand on: read now, unless a
/// step before read them already (`read`, with `body` made from them).
pub(crate) async fn buffered(
    parts: &Parts,
    body: Body,
    read: Option<Bytes>,
    limit: usize,
) -> Result<(Body, Bytes), Box<Problem>> {
    match read {
        Some(bytes) => Ok((body, bytes)),
        None => {
            let bytes = self::read(parts, body, limit).await?;
            Ok((Body::from(bytes.clone()), bytes))
        }
    }
}
