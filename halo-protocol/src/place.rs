//! Placing a tool call's arguments where the schema says: path, query, header or body.

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use serde_json::{Map, Value};

use crate::{Form, Location, ToolSchema};

/// Characters escaped in a path segment: everything but RFC 3986 `pchar` minus `/`.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// A request's parts, built from a tool call's arguments by [`place_arguments`].
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Placement {
    /// The path (or absolute URL) with every template variable filled in and
    /// percent-encoded.
    pub target: String,
    /// Query parameters, not yet encoded, in order (an array argument repeats its name).
    pub query: Vec<(String, String)>,
    /// Headers: each name a valid header name, each value one a header can carry.
    pub headers: Vec<(String, String)>,
    /// The body, if the call has one.
    pub body: Option<Payload>,
}

/// A request body built from arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// A JSON body (`application/json`).
    Json(Value),
    /// A body the schema gives a media type of its own (`contentMediaType`), sent as is.
    Raw {
        /// Its media type.
        content_type: String,
        /// Its bytes.
        bytes: Vec<u8>,
    },
}

/// Arguments that cannot be placed in a request. Its message names the argument and why,
/// never its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PlaceError {
    message: String,
}

impl PlaceError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Places `args` (a JSON object, or `null` for none) for a call of `method` on `template`
/// (a path template such as `/api/books/{id}`, or an absolute URL).
///
/// Each argument goes where its `input` entry's `in` says. Without one (an older server, or
/// an argument the schema does not list) a template variable goes to the path, and otherwise
/// `GET`, `HEAD` and `DELETE` send arguments in the query and other methods in a JSON body.
/// A body entry named `body` (`request_body`, `_body`) that is the only one stands for the
/// whole body. `POST`, `PUT` and `PATCH` with body entries send `{}` when given none.
///
/// ```
/// use halo_protocol::{Payload, ToolSchema, place_arguments};
/// use serde_json::json;
///
/// let schema: ToolSchema = serde_json::from_value(json!({
///     "call": {"method": "PUT", "url": "/api/books/{id}"},
///     "input": {
///         "id": {"type": "integer", "in": "path", "required": true},
///         "notify": {"type": "boolean", "in": "query"},
///         "title": {"type": "string", "in": "body"}
///     }
/// }))
/// .unwrap();
/// let placed = place_arguments(
///     "/api/books/{id}",
///     "PUT",
///     Some(&schema),
///     json!({"id": 7, "notify": true, "title": "Dune"}),
/// )
/// .unwrap();
/// assert_eq!(placed.target, "/api/books/7");
/// assert_eq!(placed.query, [("notify".to_owned(), "true".to_owned())]);
/// assert_eq!(placed.body, Some(Payload::Json(json!({"title": "Dune"}))));
/// ```
///
/// # Errors
/// Arguments that are not an object, a missing path variable, a path value that would leave
/// its template (empty, `.`, `..`), a nested value in the path or a header, a value the
/// query parameter's (or form field's) `style` cannot write, or a header name or value a
/// request cannot carry.
///
/// Query parameters and the fields of `application/x-www-form-urlencoded` and
/// `multipart/form-data` bodies (entries with a `media_type`) are written as their entries'
/// `style` and `explode` say: `deepObject` as `filter[gte]=1`, nested values with brackets
/// (`items[0][price]=p`). Without a style, a query value must be a scalar or an array of
/// scalars, and a form field's nested values take brackets.
pub fn place_arguments(
    template: &str,
    method: &str,
    schema: Option<&ToolSchema>,
    args: Value,
) -> Result<Placement, PlaceError> {
    let args = match args {
        Value::Object(args) => args,
        Value::Null => Map::new(),
        other => {
            return Err(PlaceError::new(format!(
                "arguments must be a JSON object, not {}",
                kind_of(&other)
            )));
        }
    };
    let is = |name: &str| method.eq_ignore_ascii_case(name);
    let mut path_values: Vec<(String, String)> = Vec::new();
    let mut placed = Placement::default();
    let mut body = Map::new();
    let mut whole_body: Option<(Value, Option<String>)> = None;
    for (name, value) in args {
        let entry = schema.and_then(|s| s.input.get(&name));
        let location = entry
            .and_then(|e| e.location)
            .unwrap_or_else(|| implied_location(template, method, &name));
        match location {
            Location::Path => {
                let text = scalar(&name, "path", &value)?;
                path_values.push((name, text));
            }
            Location::Query => match entry.and_then(|e| e.style.as_deref()) {
                Some(style) => {
                    let explode = entry.and_then(|e| e.explode);
                    crate::style::pairs(&name, &value, Some(style), explode, &mut placed.query)
                        .map_err(PlaceError::new)?;
                }
                None => query(&name, &value, &mut placed.query)?,
            },
            Location::Header => {
                if !is_header_name(&name) {
                    return Err(PlaceError::new(format!(
                        "`{name}` is not a valid header name"
                    )));
                }
                let text = scalar(&name, "header", &value)?;
                if text.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
                    return Err(PlaceError::new(format!(
                        "`{name}` holds characters a header cannot carry"
                    )));
                }
                placed
                    .headers
                    .retain(|(taken, _)| !taken.eq_ignore_ascii_case(&name));
                placed.headers.push((name, text));
            }
            _ if is_whole_body(schema, &name) => {
                let media_type = entry
                    .and_then(|e| e.schema.get("contentMediaType"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                whole_body = Some((value, media_type));
            }
            _ => {
                body.insert(name, value);
            }
        }
    }
    placed.target = fill_template(template, &path_values)?;
    let expects_body = (is("POST") || is("PUT") || is("PATCH"))
        && schema.is_some_and(|s| s.input.values().any(|e| e.location == Some(Location::Body)));
    let form = schema.and_then(form_of);
    placed.body = match (whole_body, form) {
        (Some((Value::String(text), Some(content_type))), _) => Some(Payload::Raw {
            content_type,
            bytes: text.into_bytes(),
        }),
        (Some((value, _)), _) => Some(Payload::Json(value)),
        (None, Some(form)) if !body.is_empty() || expects_body => {
            Some(form_body(schema, form, &body)?)
        }
        (None, _) if !body.is_empty() => Some(Payload::Json(Value::Object(body))),
        (None, _) if expects_body => Some(Payload::Json(Value::Object(Map::new()))),
        (None, _) => None,
    };
    Ok(placed)
}

/// The form a body is when the schema says so (its body entries' `media_type`).
fn form_of(schema: &ToolSchema) -> Option<Form> {
    schema
        .input
        .values()
        .filter(|entry| entry.location == Some(Location::Body))
        .find_map(|entry| Form::of(entry.media_type.as_deref()?))
}

/// The body fields encoded as `form`, each as its entry's `style` and `explode` say.
fn form_body(
    schema: Option<&ToolSchema>,
    form: Form,
    fields: &Map<String, Value>,
) -> Result<Payload, PlaceError> {
    if form == Form::Multipart {
        let style_of = |name: &str| {
            let entry = schema.and_then(|s| s.input.get(name));
            (
                entry.and_then(|e| e.style.as_deref()),
                entry.and_then(|e| e.explode),
            )
        };
        let (content_type, bytes) =
            crate::style::multipart(fields, style_of).map_err(PlaceError::new)?;
        return Ok(Payload::Raw {
            content_type,
            bytes,
        });
    }
    let mut pairs = Vec::new();
    for (name, value) in fields {
        let entry = schema.and_then(|s| s.input.get(name));
        // Without an `encoding`, nested values take brackets, as form-reading servers expect
        // (`address[city]=London`), rather than OpenAPI's `form` default, which drops the name.
        let style = entry
            .and_then(|e| e.style.as_deref())
            .unwrap_or("deepObject");
        let explode = entry.and_then(|e| e.explode);
        crate::style::pairs(name, value, Some(style), explode, &mut pairs)
            .map_err(PlaceError::new)?;
    }
    Ok(Payload::Raw {
        content_type: Form::UrlEncoded.media_type().to_owned(),
        bytes: crate::style::urlencoded(&pairs),
    })
}

/// Whether `name` is the entry that stands for the whole body (a body the server did not
/// flatten into properties): the only body entry, named as servers name it.
fn is_whole_body(schema: Option<&ToolSchema>, name: &str) -> bool {
    schema.and_then(whole_body_entry) == Some(name)
}

/// Where an argument goes when its input entry says no `in` (entries of HALO 0.3.1 servers
/// may not): a variable of the path template in the path; any other argument of `GET`,
/// `HEAD` and `DELETE` in the query, and of other methods in the JSON body.
///
/// ```
/// use halo_protocol::{Location, implied_location};
///
/// assert_eq!(implied_location("/notes/{note_id}", "GET", "note_id"), Location::Path);
/// assert_eq!(implied_location("/notes", "get", "limit"), Location::Query);
/// assert_eq!(implied_location("/notes", "POST", "title"), Location::Body);
/// ```
#[must_use]
pub fn implied_location(template: &str, method: &str, name: &str) -> Location {
    let is = |name: &str| method.eq_ignore_ascii_case(name);
    if is_template_variable(template, name) {
        Location::Path
    } else if is("GET") || is("HEAD") || is("DELETE") {
        Location::Query
    } else {
        Location::Body
    }
}

/// The name of the input entry that stands for a tool's whole request body, when the server
/// did not flatten the body into properties (§5.3): the only body entry, named `body`,
/// `request_body` or `_body`. `None` when the body's entries are its properties, or it has
/// none.
///
/// ```
/// use halo_protocol::{ToolSchema, whole_body_entry};
///
/// let schema: ToolSchema = serde_json::from_value(serde_json::json!({
///     "call": {"method": "POST", "url": "/tags"},
///     "input": {"body": {"type": "array", "items": {"type": "string"}, "in": "body"}}
/// })).unwrap();
/// assert_eq!(whole_body_entry(&schema), Some("body"));
/// ```
#[must_use]
pub fn whole_body_entry(schema: &ToolSchema) -> Option<&str> {
    let mut body_entries = schema
        .input
        .iter()
        .filter(|(_, entry)| entry.location == Some(Location::Body));
    match (body_entries.next(), body_entries.next()) {
        (Some((only, _)), None) if matches!(only.as_str(), "body" | "request_body" | "_body") => {
            Some(only)
        }
        _ => None,
    }
}

/// Whether `{name}` (or `{*name}`) is a variable of a path template.
fn is_template_variable(template: &str, name: &str) -> bool {
    template_variables(template).any(|variable| variable == name)
}

/// The names of a path template's variables (`{id}`, or `{*rest}` for a catch-all), in order.
///
/// ```
/// let names: Vec<&str> =
///     halo_protocol::template_variables("/Accounts/{AccountSid}/Calls/{Sid}.json").collect();
/// assert_eq!(names, ["AccountSid", "Sid"]);
/// ```
pub fn template_variables(template: &str) -> impl Iterator<Item = &str> {
    template.split('{').skip(1).filter_map(|rest| {
        rest.split_once('}')
            .map(|(variable, _)| variable.trim_start_matches('*'))
    })
}

/// An RFC 9110 token: what a header name may be.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The template with each `{name}` replaced by its percent-encoded value.
fn fill_template(template: &str, values: &[(String, String)]) -> Result<String, PlaceError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        let raw = &rest[start + 1..start + len];
        let name = raw.trim_start_matches('*');
        let value = values
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| PlaceError::new(format!("missing path parameter `{name}`")))?;
        out.push_str(&rest[..start]);
        // `.` and `..` would be removed by URL normalisation (encoded or not) and send the call
        // to another resource; an empty value would do the same to the template.
        let leaves = |segment: &str| matches!(segment, "." | "..");
        if raw.starts_with('*') {
            // A catch-all keeps its slashes.
            if value.split('/').any(leaves) {
                return Err(PlaceError::new(format!(
                    "path parameter `{name}` may not contain `.` or `..` segments"
                )));
            }
            for (i, segment) in value.split('/').enumerate() {
                if i > 0 {
                    out.push('/');
                }
                out.extend(utf8_percent_encode(segment, SEGMENT));
            }
        } else {
            if value.is_empty() || leaves(value) {
                return Err(PlaceError::new(format!(
                    "path parameter `{name}` may not be empty, `.` or `..`"
                )));
            }
            out.extend(utf8_percent_encode(value, SEGMENT));
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Query pairs for an argument whose entry declares no `style`: a scalar once, an array of
/// scalars repeated (`a=1&a=2`), `null` not at all; objects are refused rather than guessed.
fn query(name: &str, value: &Value, pairs: &mut Vec<(String, String)>) -> Result<(), PlaceError> {
    match value {
        Value::Null => {}
        Value::Array(items) => {
            for item in items {
                pairs.push((name.to_owned(), scalar(name, "query", item)?));
            }
        }
        other => pairs.push((name.to_owned(), scalar(name, "query", other)?)),
    }
    Ok(())
}

/// A string, number or boolean as text; anything else cannot go in a path, query or header.
fn scalar(name: &str, location: &str, value: &Value) -> Result<String, PlaceError> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        Value::Bool(flag) => Ok(flag.to_string()),
        other => Err(PlaceError::new(format!(
            "`{name}` goes in the {location} and must be a string, number or boolean, not {}",
            kind_of(other)
        ))),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn headers_are_checked_and_not_repeated() {
        let schema: ToolSchema = serde_json::from_value(json!({
            "call": {"method": "GET", "url": "/x"},
            "input": {"X-Trace": {"in": "header"}, "x-trace": {"in": "header"},
                      "bad header": {"in": "header"}}
        }))
        .unwrap();
        let placed = place_arguments(
            "/x",
            "GET",
            Some(&schema),
            json!({"X-Trace": "a", "x-trace": "b"}),
        )
        .unwrap();
        assert_eq!(placed.headers, [("x-trace".to_owned(), "b".to_owned())]);
        let error =
            place_arguments("/x", "GET", Some(&schema), json!({"bad header": "v"})).unwrap_err();
        assert_eq!(error.to_string(), "`bad header` is not a valid header name");
        let error =
            place_arguments("/x", "GET", Some(&schema), json!({"X-Trace": "a\r\nb"})).unwrap_err();
        assert!(!error.to_string().contains("a\r\nb"), "{error}");
    }

    #[test]
    fn method_case_does_not_matter() {
        let placed = place_arguments("/items", "get", None, json!({"q": 1})).unwrap();
        assert_eq!(placed.query, [("q".to_owned(), "1".to_owned())]);
        assert!(placed.body.is_none());
    }
}
