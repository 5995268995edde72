//! Swagger 2.0 parameters that are not a body (`query`, `header`, `path`): their type,
//! format, items, enum, default and bounds become a `schema`, their `collectionFormat` a
//! `style` and `explode`.

use serde_json::{Map, Value};

use super::super::notes::{Note, Notes, pointer};
use super::schema;

/// The keys of a Swagger 2.0 parameter (or header, or items) that describe its value: they
/// make its OpenAPI 3.0 schema.
const SCHEMA_KEYS: [&str; 17] = [
    "type",
    "format",
    "items",
    "enum",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "x-nullable",
];

/// The schema a parameter, header or items object at `at` describes its value with (a
/// `schema` it has, which Swagger 2.0 allows only in a body, is taken as it is).
pub(super) fn schema_of(object: &Map<String, Value>, at: &str, notes: &mut Notes) -> Value {
    if !object.contains_key("type")
        && let Some(schema) = object.get("schema")
    {
        return schema::schema(schema, &pointer(at, "schema"), notes);
    }
    let mut out = Map::new();
    for key in SCHEMA_KEYS {
        let Some(value) = object.get(key) else {
            continue;
        };
        let value = match (key, value) {
            // Items of an array parameter are a parameter-like object of their own.
            ("items", Value::Object(items)) => schema_of(items, &pointer(at, key), notes),
            _ => value.clone(),
        };
        out.insert(key.to_owned(), value);
    }
    schema::schema(&Value::Object(out), at, notes)
}

/// A `query`, `header` or `path` parameter at `at` as OpenAPI 3.0 writes it.
pub(super) fn parameter(parameter: &Map<String, Value>, at: &str, notes: &mut Notes) -> Value {
    let mut out = Map::new();
    let location = parameter.get("in").and_then(Value::as_str).unwrap_or("");
    for (key, value) in parameter {
        let keep = matches!(
            key.as_str(),
            "name" | "in" | "description" | "required" | "allowEmptyValue" | "deprecated"
        ) || key.starts_with("x-") && key != "x-nullable";
        if keep {
            out.insert(key.clone(), value.clone());
        }
    }
    if location == "path" {
        out.insert("required".to_owned(), Value::Bool(true));
    }
    let schema = schema_of(parameter, at, notes);
    if schema.get("type").and_then(Value::as_str) == Some("array") {
        let format = parameter.get("collectionFormat").and_then(Value::as_str);
        if let Some((style, explode)) = style(location, format.unwrap_or("csv"), at, notes) {
            out.insert("style".to_owned(), Value::String(style.to_owned()));
            out.insert("explode".to_owned(), Value::Bool(explode));
        }
    }
    out.insert("schema".to_owned(), schema);
    Value::Object(out)
}

/// How an array in `location` is written by a `collectionFormat`, when that is not
/// OpenAPI 3.0's default for the location (a query's `form` exploded; a path's or header's
/// `simple`).
pub(super) fn style(
    location: &str,
    format: &str,
    at: &str,
    notes: &mut Notes,
) -> Option<(&'static str, bool)> {
    let query = matches!(location, "query" | "formData");
    match (format, query) {
        ("csv", true) => Some(("form", false)),
        ("multi", true) => Some(("form", true)),
        ("ssv", true) => Some(("spaceDelimited", false)),
        ("pipes", true) => Some(("pipeDelimited", false)),
        ("csv", false) => None,
        _ => {
            notes.note(Note::Tsv, || pointer(at, "collectionFormat"));
            None
        }
    }
}
