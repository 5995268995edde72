//! Placing a call's arguments where the schema says: path, query, header or body.

use halo_protocol::{ToolSchema, place_arguments};
use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

pub(crate) use halo_protocol::Payload;

use crate::{Error, Result};

/// A request's parts, built from arguments.
#[derive(Debug, Default)]
pub(crate) struct Placed {
    /// The path (or absolute URL) with every template variable filled in.
    pub(crate) target: String,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Option<Payload>,
}

/// Places `args` (a JSON object, or `null` for none) for a call of `method` on `template`,
/// as [`place_arguments`] says.
pub(crate) fn place(
    template: &str,
    method: &Method,
    schema: Option<&ToolSchema>,
    args: Value,
) -> Result<Placed> {
    let placement = place_arguments(template, method.as_str(), schema, args)
        .map_err(|error| Error::argument(error.to_string()))?;
    let mut headers = HeaderMap::with_capacity(placement.headers.len());
    for (name, value) in placement.headers {
        // Checked by `place_arguments`; kept as errors rather than trusted.
        let header = HeaderName::try_from(name.as_str())
            .map_err(|_| Error::argument(format!("`{name}` is not a valid header name")))?;
        let value = HeaderValue::try_from(value).map_err(|_| {
            Error::argument(format!("`{name}` holds characters a header cannot carry"))
        })?;
        headers.insert(header, value);
    }
    Ok(Placed {
        target: placement.target,
        query: placement.query,
        headers,
        body: placement.body,
    })
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
