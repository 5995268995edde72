//! Placing a call's arguments where the schema says: path, query, header or body.

use halo_protocol::{Location, ToolSchema};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::{Error, Result};

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

/// A request's parts, built from arguments.
#[derive(Debug, Default)]
pub(crate) struct Placed {
    /// The path (or absolute URL) with every template variable filled in.
    pub(crate) target: String,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Option<Payload>,
}

/// A request body.
#[derive(Debug, Clone)]
pub(crate) enum Payload {
    Json(Value),
    Raw {
        content_type: String,
        bytes: Vec<u8>,
    },
}

/// Places `args` (a JSON object, or `null` for none) for a call of `method` on `template`.
///
/// Each argument goes where its `input` entry's `in` says. Without one (an older server, or
/// an argument the schema does not list) a template variable goes to the path, and otherwise
/// GET, HEAD and DELETE send arguments in the query and other methods in a JSON body.
pub(crate) fn place(
    template: &str,
    method: &Method,
    schema: Option<&ToolSchema>,
    args: Value,
) -> Result<Placed> {
    let args = match args {
        Value::Object(args) => args,
        Value::Null => Map::new(),
        other => {
            return Err(Error::argument(format!(
                "arguments must be a JSON object, not {}",
                kind_of(&other)
            )));
        }
    };
    let mut path_values: Vec<(String, String)> = Vec::new();
    let mut placed = Placed::default();
    let mut body = Map::new();
    let mut whole_body: Option<(Value, Option<String>)> = None;
    for (name, value) in args {
        let entry = schema.and_then(|s| s.input.get(&name));
        let location = entry.and_then(|e| e.location).unwrap_or_else(|| {
            if is_template_variable(template, &name) {
                Location::Path
            } else if matches!(*method, Method::GET | Method::HEAD | Method::DELETE) {
                Location::Query
            } else {
                Location::Body
            }
        });
        match location {
            Location::Path => {
                let text = scalar(&name, "path", &value)?;
                path_values.push((name, text));
            }
            Location::Query => query(&name, &value, &mut placed.query)?,
            Location::Header => {
                let header = HeaderName::try_from(name.as_str())
                    .map_err(|_| Error::argument(format!("`{name}` is not a valid header name")))?;
                let text = scalar(&name, "header", &value)?;
                let value = HeaderValue::try_from(text).map_err(|_| {
                    Error::argument(format!("`{name}` holds characters a header cannot carry"))
                })?;
                placed.headers.insert(header, value);
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
    placed.body = match whole_body {
        Some((Value::String(text), Some(content_type))) => Some(Payload::Raw {
            content_type,
            bytes: text.into_bytes(),
        }),
        Some((value, _)) => Some(Payload::Json(value)),
        None if !body.is_empty() => Some(Payload::Json(Value::Object(body))),
        None if expects_body(method, schema) => Some(Payload::Json(Value::Object(Map::new()))),
        None => None,
    };
    Ok(placed)
}

/// Whether `name` is the entry that stands for the whole body (a body the server did not
/// flatten into properties): the only body entry, named as servers name it.
fn is_whole_body(schema: Option<&ToolSchema>, name: &str) -> bool {
    let Some(schema) = schema else { return false };
    let mut body_entries = schema
        .input
        .iter()
        .filter(|(_, entry)| entry.location == Some(Location::Body));
    matches!(body_entries.next(), Some((only, _)) if only == name && matches!(name, "body" | "request_body" | "_body"))
        && body_entries.next().is_none()
}

/// Methods that carry a body send `{}` when the schema has body entries but none was given.
fn expects_body(method: &Method, schema: Option<&ToolSchema>) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
        && schema.is_some_and(|s| s.input.values().any(|e| e.location == Some(Location::Body)))
}

/// Whether `{name}` (or `{*name}`) is a variable of a path template.
fn is_template_variable(template: &str, name: &str) -> bool {
    template.split('{').skip(1).any(|rest| {
        rest.split_once('}')
            .is_some_and(|(variable, _)| variable.trim_start_matches('*') == name)
    })
}

/// The template with each `{name}` replaced by its percent-encoded value.
fn fill_template(template: &str, values: &[(String, String)]) -> Result<String> {
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
            .ok_or_else(|| Error::argument(format!("missing path parameter `{name}`")))?;
        out.push_str(&rest[..start]);
        // `.` and `..` would be removed by URL normalisation (encoded or not) and send the call
        // to another resource; an empty value would do the same to the template.
        let leaves = |segment: &str| matches!(segment, "." | "..");
        if raw.starts_with('*') {
            // A catch-all keeps its slashes.
            if value.split('/').any(leaves) {
                return Err(Error::argument(format!(
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
                return Err(Error::argument(format!(
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

/// Query pairs for one argument: a scalar once, an array of scalars repeated (`a=1&a=2`),
/// `null` not at all; objects are refused.
fn query(name: &str, value: &Value, pairs: &mut Vec<(String, String)>) -> Result<()> {
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
fn scalar(name: &str, location: &str, value: &Value) -> Result<String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        Value::Bool(flag) => Ok(flag.to_string()),
        other => Err(Error::argument(format!(
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

    fn schema(value: Value) -> ToolSchema {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn follows_in_when_given() {
        let schema = schema(
            json!({"call": {"method": "POST", "url": "/b/{id}"}, "input": {
            "id": {"type": "integer", "in": "path", "required": true},
            "dry_run": {"type": "boolean", "in": "query"},
            "X-Trace": {"type": "string", "in": "header"},
            "title": {"type": "string", "in": "body"}}}),
        );
        let placed = place(
            "/b/{id}",
            &Method::POST,
            Some(&schema),
            json!({"id": 42, "dry_run": true, "X-Trace": "t1", "title": "Dune"}),
        )
        .unwrap();
        assert_eq!(placed.target, "/b/42");
        assert_eq!(placed.query, [("dry_run".to_owned(), "true".to_owned())]);
        assert_eq!(placed.headers["x-trace"], "t1");
        assert!(
            matches!(placed.body, Some(Payload::Json(ref v)) if *v == json!({"title": "Dune"}))
        );
    }

    #[test]
    fn falls_back_by_method_without_in() {
        let placed = place(
            "/items/{id}",
            &Method::GET,
            None,
            json!({"id": "a b/c", "q": ["x", 1]}),
        )
        .unwrap();
        assert_eq!(placed.target, "/items/a%20b%2Fc");
        assert_eq!(
            placed.query,
            [
                ("q".to_owned(), "x".to_owned()),
                ("q".to_owned(), "1".to_owned())
            ]
        );
        assert!(placed.body.is_none());
        let placed = place("/items", &Method::POST, None, json!({"name": "n"})).unwrap();
        assert!(matches!(placed.body, Some(Payload::Json(ref v)) if *v == json!({"name": "n"})));
        let placed = place(
            "/items/{id}",
            &Method::DELETE,
            None,
            json!({"id": 1, "force": true}),
        )
        .unwrap();
        assert_eq!(placed.query, [("force".to_owned(), "true".to_owned())]);
    }

    #[test]
    fn whole_bodies_are_sent_as_they_are() {
        let schema = schema(
            json!({"call": {"method": "POST", "url": "/tags"}, "input": {
            "body": {"type": "array", "in": "body", "required": true}}}),
        );
        let placed = place(
            "/tags",
            &Method::POST,
            Some(&schema),
            json!({"body": ["a", "b"]}),
        )
        .unwrap();
        assert!(matches!(placed.body, Some(Payload::Json(ref v)) if *v == json!(["a", "b"])));
        let raw = schema_with_media();
        let placed = place(
            "/notes",
            &Method::POST,
            Some(&raw),
            json!({"body": "hello"}),
        )
        .unwrap();
        assert!(
            matches!(placed.body, Some(Payload::Raw { ref content_type, .. }) if content_type == "text/plain")
        );
    }

    fn schema_with_media() -> ToolSchema {
        schema(
            json!({"call": {"method": "POST", "url": "/notes"}, "input": {
            "body": {"type": "string", "contentMediaType": "text/plain", "in": "body"}}}),
        )
    }

    #[test]
    fn bad_arguments_are_clear_errors() {
        let missing = place("/items/{id}", &Method::GET, None, json!({})).unwrap_err();
        assert!(missing.is_argument());
        assert!(missing.to_string().contains("missing path parameter `id`"));
        let nested = place("/items", &Method::GET, None, json!({"filter": {"a": 1}})).unwrap_err();
        assert!(
            nested.to_string().contains("`filter` goes in the query"),
            "{nested}"
        );
        assert!(
            place("/x", &Method::GET, None, json!([1]))
                .unwrap_err()
                .is_argument()
        );
        let header = schema(
            json!({"call": {"method": "GET", "url": "/x"}, "input": {"bad header": {"in": "header"}}}),
        );
        assert!(
            place(
                "/x",
                &Method::GET,
                Some(&header),
                json!({"bad header": "v"})
            )
            .unwrap_err()
            .is_argument()
        );
    }

    #[test]
    fn empty_bodies_for_body_methods_with_body_entries() {
        let schema = schema(
            json!({"call": {"method": "POST", "url": "/x"}, "input": {"note": {"in": "body"}}}),
        );
        let placed = place("/x", &Method::POST, Some(&schema), Value::Null).unwrap();
        assert!(matches!(placed.body, Some(Payload::Json(ref v)) if *v == json!({})));
    }

    #[test]
    fn values_that_would_leave_the_template_are_refused() {
        for id in ["", ".", ".."] {
            let error =
                place("/items/{id}", &Method::DELETE, None, json!({ "id": id })).unwrap_err();
            assert!(error.is_argument(), "{id:?}");
        }
        assert!(
            place(
                "/files/{*path}",
                &Method::GET,
                None,
                json!({"path": "a/../b"})
            )
            .is_err()
        );
        assert!(place("/items/{id}", &Method::GET, None, json!({"id": "..."})).is_ok());
    }

    #[test]
    fn catch_all_keeps_slashes() {
        let placed = place(
            "/files/{*path}",
            &Method::GET,
            None,
            json!({"path": "a/b c"}),
        )
        .unwrap();
        assert_eq!(placed.target, "/files/a/b%20c");
    }
}
