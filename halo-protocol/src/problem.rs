//! Problem details bodies (RFC 9457).

use serde::{Deserialize, Serialize};

/// A problem details body, served as `application/problem+json`.
///
/// ```
/// use halo_protocol::{FieldError, Problem};
///
/// let problem = Problem::new(422)
///     .with_detail("the request body does not match the schema")
///     .with_error(FieldError::new("/amount", "-5 is less than the minimum of 1"));
/// let json = serde_json::to_value(&problem).unwrap();
/// assert_eq!(json["title"], "Unprocessable Content");
/// assert_eq!(json["errors"][0]["pointer"], "/amount");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct Problem {
    /// A URI reference identifying the problem type; `about:blank` when the status says it all.
    #[serde(rename = "type", default = "about_blank")]
    pub type_uri: String,
    /// A short summary of the problem type.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// An explanation of this occurrence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A URI reference identifying this occurrence (typically the request path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// Validation errors, one per offending value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
}

/// One validation error: where (a JSON pointer into the input) and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[non_exhaustive]
pub struct FieldError {
    /// JSON pointer (RFC 6901) to the offending value; empty for the whole input.
    pub pointer: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// A validation error at `pointer`.
    #[must_use]
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

fn about_blank() -> String {
    "about:blank".to_owned()
}

impl Problem {
    /// A problem for `status`, titled with the status's standard reason phrase.
    #[must_use]
    pub fn new(status: u16) -> Self {
        Self {
            type_uri: about_blank(),
            title: reason_phrase(status).to_owned(),
            status,
            detail: None,
            instance: None,
            errors: Vec::new(),
        }
    }

    /// Sets the explanation of this occurrence.
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Sets the instance (usually the request path).
    #[must_use]
    pub fn with_instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
        self
    }

    /// Sets the problem type URI.
    #[must_use]
    pub fn with_type(mut self, type_uri: impl Into<String>) -> Self {
        self.type_uri = type_uri.into();
        self
    }

    /// Adds a validation error.
    #[must_use]
    pub fn with_error(mut self, error: FieldError) -> Self {
        self.errors.push(error);
        self
    }

    /// The JSON body.
    #[must_use]
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self)
            .unwrap_or_else(|_| br#"{"type":"about:blank","status":500}"#.to_vec())
    }
}

/// The standard reason phrase of the status codes HALO servers answer with.
fn reason_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omits_empty_fields() {
        let json = serde_json::to_value(Problem::new(404)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "about:blank", "title": "Not Found", "status": 404})
        );
    }

    #[test]
    fn round_trips() {
        let problem = Problem::new(400)
            .with_detail("bad")
            .with_instance("/x")
            .with_error(FieldError::new("", "whole"));
        let back: Problem = serde_json::from_slice(&problem.to_json()).unwrap();
        assert_eq!(back, problem);
    }
}
