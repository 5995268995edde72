//! Checking a call against its schema before the handler sees it.
//!
//! Each described operation gets a [`Validator`] at start-up: one compiled JSON Schema for
//! its parameters (path, query and headers, read into one object keyed by input name, with
//! text converted to the numbers and booleans the schema asks for, `deepObject` and the
//! other query styles read as written) and one for its JSON or form body (urlencoded fields
//! and multipart parts read into the object they stand for: `items[0][price]=p` nests).
//! Problems come back as axum's own extractors answer: `400` for parameters (a path, query or
//! header value that cannot be read or does not match, with one [`FieldError`] per offending
//! value) and for a body that is not JSON, `415` for the wrong `Content-Type`, and `422` with
//! one [`FieldError`] per offending value of the body's data. Pointers
//! address the tool's arguments as its `input` map names them: `/id` for a parameter,
//! `/amount` for a property of a flattened body, `/body/0` inside a body passed whole.

mod fast;
mod form;
mod multipart;
mod params;
mod spec;
mod text;

use halo_protocol::{FieldError, InputField, Location, Problem, essence, is_json};
use http::HeaderMap;
use http::header::CONTENT_TYPE;
use indexmap::IndexMap;
use serde_json::Value;

pub(crate) use self::fast::Fast;
use self::params::Param;
pub(crate) use self::spec::BodySpec;

/// Whether a layer checks calls against their input schemas before the handler runs, for
/// halo-axum's `HaloBuilder::validate`.
///
/// ```
/// use halo_openapi::Validation;
///
/// assert_eq!(Validation::default(), Validation::Off);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Validation {
    /// No checks (the default): calls reach the handler as they come, and its extractors
    /// answer bad input.
    #[default]
    Off,
    /// Parameters and bodies are checked, `format` keywords (`date-time`, `email`, `uuid`,
    /// ...) asserted.
    On,
    /// Checked, with `format` keywords as annotations only, as JSON Schema 2020-12 reads them
    /// unless told otherwise. It saves the format checks' time (about a quarter of a 1 KiB
    /// body's validation with an `email`); the handler's typed fields still reject what they
    /// cannot hold.
    WithoutFormats,
}

/// The longest message kept per validation error; a message quotes the offending value,
/// which may be large.
const MAX_MESSAGE: usize = 300;

/// The compiled checks of one operation.
pub struct Validator {
    params: Vec<ParamCheck>,
    body: Option<BodyCheck>,
}

/// How a parameter is checked.
struct ParamCheck {
    param: Param,
    required: bool,
    schema: jsonschema::Validator,
    /// Where its errors point: `/<name>`.
    pointer: String,
}

/// How a body becomes the value its schema checks.
#[derive(Debug)]
enum Reader {
    /// Parsed as JSON (any `+json` media type).
    Json,
    /// `application/x-www-form-urlencoded`: its fields, read by the body's schema.
    Form(Value),
    /// `multipart/form-data`: its parts, read by the body's schema.
    Multipart(Value),
    /// Another media type: only the `Content-Type` is checked.
    Other,
}

impl Reader {
    fn of(spec: &BodySpec) -> Self {
        match halo_protocol::Form::of(&spec.media_type) {
            _ if spec.is_json() => Self::Json,
            Some(halo_protocol::Form::UrlEncoded) => Self::Form(spec.schema.clone()),
            Some(halo_protocol::Form::Multipart) => Self::Multipart(spec.schema.clone()),
            _ => Self::Other,
        }
    }
}

/// How a request body is checked.
struct BodyCheck {
    /// The schema of a JSON or form body; `None` for other media types.
    schema: Option<jsonschema::Validator>,
    /// How the body is read into what the schema checks.
    reader: Reader,
    /// The same schema for the check that reads the bytes without building a value, when
    /// it supports the schema's root.
    fast: Option<Fast>,
    media_type: String,
    required: bool,
    /// The input entry that stands for the whole body, when it was not flattened.
    entry: Option<String>,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator")
            .field("params", &self.params.len())
            .field("body", &self.body.as_ref().map(|b| &b.media_type))
            .finish_non_exhaustive()
    }
}

impl Validator {
    /// Compiles the checks of `schema` (and of the operation's request body).
    /// With `formats`, `format` keywords are asserted (a `date-time` must be one), not just
    /// annotations.
    pub(crate) fn compile(
        input: &IndexMap<String, InputField>,
        body: Option<&BodySpec>,
        formats: bool,
    ) -> Result<Self, String> {
        let mut params = Vec::new();
        for (name, field) in input {
            let Some(location @ (Location::Path | Location::Query | Location::Header)) =
                field.location
            else {
                continue;
            };
            let compiled = compile(&Value::Object(field.schema.clone()), formats)?;
            params.push(ParamCheck {
                param: Param::new(
                    name,
                    location,
                    &field.schema,
                    field.style.as_deref(),
                    field.explode,
                ),
                required: field.required,
                schema: compiled,
                pointer: format!("/{}", halo_protocol::escape_token(name)),
            });
        }
        let body = body
            .map(|spec| -> Result<BodyCheck, String> {
                let json = spec.is_json();
                let reader = Reader::of(spec);
                Ok(BodyCheck {
                    schema: (!matches!(reader, Reader::Other))
                        .then(|| compile(&spec.schema, formats))
                        .transpose()?,
                    reader,
                    fast: json.then(|| Fast::compile(&spec.schema, formats)).flatten(),
                    media_type: spec.media_type.clone(),
                    required: spec.required,
                    entry: spec.entry.clone(),
                })
            })
            .transpose()?;
        Ok(Self { params, body })
    }

    /// Whether the operation takes a body, so the request's must be read.
    #[must_use]
    pub fn takes_body(&self) -> bool {
        self.body.is_some()
    }

    /// Checks the parameters: path values as matched (still percent-encoded), the query
    /// string, and the headers.
    pub fn check_params(
        &self,
        path: &[(&str, &str)],
        query: Option<&str>,
        headers: &HeaderMap,
        errors: &mut Vec<FieldError>,
    ) -> Result<(), Box<Problem>> {
        if self.params.is_empty() {
            return Ok(());
        }
        let query = match query {
            Some(query) if !query.is_empty() => text::parse_query(query)?,
            _ => Vec::new(),
        };
        for check in &self.params {
            match check.param.read(path, &query, headers, errors)? {
                Some(value) => collect(&check.schema, &value, &check.pointer, errors),
                None if check.required => {
                    errors.push(FieldError::new(check.pointer.clone(), "is required"));
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Checks a request body (`bytes`, already read within the size limit). When the body
    /// had to be parsed to be checked, gives it back parsed, for
    /// halo-axum's `ValidJson` to use without parsing it again; a body the fast
    /// check vouches for is never parsed here.
    pub fn check_body(
        &self,
        headers: &HeaderMap,
        bytes: &[u8],
        errors: &mut Vec<FieldError>,
    ) -> Result<Option<Value>, Box<Problem>> {
        let Some(body) = &self.body else {
            return Ok(None);
        };
        if bytes.is_empty() && !body.required {
            return Ok(None);
        }
        let content_type = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(essence);
        let matches = content_type.is_some_and(|given| match body.reader {
            Reader::Json => is_json(given),
            _ => given.eq_ignore_ascii_case(essence(&body.media_type)) || body.media_type == "*/*",
        });
        if !matches {
            return Err(Box::new(Problem::new(415).with_detail(format!(
                "the body must be sent as Content-Type: {}",
                body.media_type
            ))));
        }
        if bytes.is_empty() {
            // What axum's `Json` answers an empty body with the right `Content-Type`.
            return Err(Box::new(
                Problem::new(400).with_detail("the body is empty; this operation needs one"),
            ));
        }
        let Some(schema) = &body.schema else {
            return Ok(None);
        };
        match &body.reader {
            // Handlers read forms themselves: nothing parsed is handed on.
            Reader::Form(form) => {
                collect(schema, &form::read_body(bytes, form)?, "", errors);
                return Ok(None);
            }
            Reader::Multipart(form) => {
                let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
                let value = multipart::read_body(bytes, content_type, form)?;
                collect(schema, &value, "", errors);
                return Ok(None);
            }
            Reader::Json | Reader::Other => {}
        }
        if body.fast.as_ref().is_some_and(|fast| fast.accepts(bytes)) {
            return Ok(None);
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|error| {
            Problem::new(400).with_detail(format!("the body is not valid JSON: {error}"))
        })?;
        let prefix = body
            .entry
            .as_deref()
            .map(|entry| format!("/{}", halo_protocol::escape_token(entry)))
            .unwrap_or_default();
        collect(schema, &value, &prefix, errors);
        Ok(Some(value))
    }
}

/// A form body as the value it stands for under `schema`; `None` when it is not UTF-8 once
/// percent-decoded.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn read_form(body: &str, schema: &Value) -> Option<Value> {
    form::read_body(body.as_bytes(), schema).ok()
}

/// A multipart body as the value it stands for under `schema`.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn read_multipart(
    body: &[u8],
    content_type: &str,
    schema: &Value,
) -> Option<Result<Value, &'static str>> {
    multipart::boundary(content_type)?;
    Some(
        multipart::read_body(body, Some(content_type), schema)
            .map_err(|_| "the multipart body is malformed"),
    )
}

fn compile(schema: &Value, formats: bool) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .should_validate_formats(formats)
        .build(schema)
        .map_err(|error| error.to_string())
}

/// Every error of `instance`, as pointers under `prefix`. A missing required property
/// points at the property itself.
fn collect(
    schema: &jsonschema::Validator,
    instance: &Value,
    prefix: &str,
    errors: &mut Vec<FieldError>,
) {
    if schema.is_valid(instance) {
        return;
    }
    for error in schema.iter_errors(instance) {
        let mut pointer = format!("{prefix}{}", error.instance_path());
        if let jsonschema::error::ValidationErrorKind::Required { property } = error.kind()
            && let Some(property) = property.as_str()
        {
            pointer.push('/');
            pointer.push_str(&halo_protocol::escape_token(property));
        }
        errors.push(FieldError::new(pointer, truncate(error.to_string())));
    }
}

fn truncate(mut message: String) -> String {
    if message.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(formats: bool, email: &str) -> Vec<FieldError> {
        let schema: halo_protocol::ToolSchema = serde_json::from_value(json!({
            "call": {"method": "GET", "url": "/people"},
            "input": {"email": {"type": "string", "format": "email", "in": "query"}}
        }))
        .unwrap();
        let validator = Validator::compile(&schema.input, None, formats).unwrap();
        let mut errors = Vec::new();
        let query = format!("email={email}");
        validator
            .check_params(&[], Some(&query), &HeaderMap::new(), &mut errors)
            .unwrap();
        errors
    }

    #[test]
    fn formats_are_asserted_or_only_annotations() {
        assert!(check(true, "ada%40example.com").is_empty());
        let errors = check(true, "not-an-address");
        assert_eq!(errors[0].pointer, "/email");
        assert!(check(false, "not-an-address").is_empty());
    }
}
