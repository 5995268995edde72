//! Swagger 2.0 responses: a response's `schema` becomes its `content`, in each media type the
//! operation produces, with the example given for that type; its headers get schemas.

use serde_json::{Map, Value};

use super::super::notes::{Note, Notes, pointer};
use super::{parameters, schema};

/// The responses object of an operation at `at`, which produces `produces`.
pub(super) fn responses(
    responses: &Map<String, Value>,
    produces: &[String],
    at: &str,
    notes: &mut Notes,
) -> Value {
    let successful = responses.keys().any(|status| status.starts_with('2'));
    if !successful && responses.contains_key("default") {
        notes.note(Note::DefaultOnly, || at.to_owned());
    }
    let converted = responses.iter().map(|(status, value)| {
        let at = pointer(at, status);
        let value = match value {
            Value::Object(object) => response(object, produces, &at, notes),
            other => other.clone(),
        };
        (status.clone(), value)
    });
    Value::Object(converted.collect())
}

/// One response (or a reference to one) at `at`.
pub(super) fn response(
    response: &Map<String, Value>,
    produces: &[String],
    at: &str,
    notes: &mut Notes,
) -> Value {
    let mut out = Map::new();
    if let Some(Value::String(target)) = response.get("$ref") {
        out.insert("$ref".to_owned(), Value::String(schema::reference(target)));
        return Value::Object(out);
    }
    let description = response.get("description").cloned();
    out.insert(
        "description".to_owned(),
        description.unwrap_or_else(|| Value::String(String::new())),
    );
    if let Some(Value::Object(headers)) = response.get("headers") {
        let at = pointer(at, "headers");
        let headers = headers.iter().map(|(name, header)| {
            let header = match header {
                Value::Object(header) => self::header(header, &pointer(&at, name), notes),
                other => other.clone(),
            };
            (name.clone(), header)
        });
        out.insert("headers".to_owned(), Value::Object(headers.collect()));
    }
    if let Some(value) = response.get("schema") {
        let schema = schema::schema(value, &pointer(at, "schema"), notes);
        let examples = response.get("examples").and_then(Value::as_object);
        let json = ["application/json".to_owned()];
        let media_types = if produces.is_empty() {
            &json[..]
        } else {
            produces
        };
        let content = media_types.iter().map(|media_type| {
            let mut media = Map::new();
            media.insert("schema".to_owned(), schema.clone());
            if let Some(example) = examples.and_then(|examples| examples.get(media_type)) {
                media.insert("example".to_owned(), example.clone());
            }
            (media_type.clone(), Value::Object(media))
        });
        out.insert("content".to_owned(), Value::Object(content.collect()));
    }
    for (key, value) in response {
        if key.starts_with("x-") {
            out.insert(key.clone(), value.clone());
        }
    }
    Value::Object(out)
}

/// A response header: its description, and its type and bounds as a schema.
fn header(header: &Map<String, Value>, at: &str, notes: &mut Notes) -> Value {
    let mut out = Map::new();
    for (key, value) in header {
        if key == "description" || key.starts_with("x-") && key != "x-nullable" {
            out.insert(key.clone(), value.clone());
        }
    }
    out.insert(
        "schema".to_owned(),
        parameters::schema_of(header, at, notes),
    );
    Value::Object(out)
}
