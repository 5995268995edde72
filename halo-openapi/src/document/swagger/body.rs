//! What a Swagger 2.0 operation takes in its body: an `in: body` parameter's schema, or the
//! `in: formData` parameters as the properties of a form, as an OpenAPI 3.0 `requestBody`.

use serde_json::{Map, Value};

use super::super::notes::{Notes, pointer};
use super::{parameters, schema};

const URLENCODED: &str = "application/x-www-form-urlencoded";
const MULTIPART: &str = "multipart/form-data";

/// The request body of an `in: body` parameter at `at`, in each media type of `consumes`
/// (JSON when it names none).
pub(super) fn body(
    parameter: &Map<String, Value>,
    consumes: &[String],
    at: &str,
    notes: &mut Notes,
) -> Value {
    let schema = match parameter.get("schema") {
        Some(value) => schema::schema(value, &pointer(at, "schema"), notes),
        None => Value::Object(Map::new()),
    };
    let json = ["application/json".to_owned()];
    let media_types = if consumes.is_empty() {
        &json[..]
    } else {
        consumes
    };
    let content = media_types
        .iter()
        .map(|media_type| (media_type.clone(), media(schema.clone(), None)))
        .collect();
    let mut out = Map::new();
    copy_texts(parameter, &mut out);
    out.insert("content".to_owned(), Value::Object(content));
    Value::Object(out)
}

/// The request body of the `in: formData` parameters `fields` (each with where it is): an
/// object with a property each, sent as a URL-encoded form, or as `multipart/form-data`
/// where a field is a file or `consumes` names multipart and not the other.
pub(super) fn form(
    fields: &[(&Map<String, Value>, String)],
    consumes: &[String],
    notes: &mut Notes,
) -> Value {
    let names = |wanted: &str| consumes.iter().any(|media_type| media_type == wanted);
    let file = fields
        .iter()
        .any(|(field, _)| field.get("type").and_then(Value::as_str) == Some("file"));
    let media_type = if file || (names(MULTIPART) && !names(URLENCODED)) {
        MULTIPART
    } else {
        URLENCODED
    };
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut encoding = Map::new();
    for (field, at) in fields {
        let Some(name) = field.get("name").and_then(Value::as_str) else {
            continue;
        };
        let mut property = if field.get("type").and_then(Value::as_str) == Some("file") {
            let mut binary = Map::new();
            schema::binary(&mut binary);
            Value::Object(binary)
        } else {
            parameters::schema_of(field, at, notes)
        };
        if let (Value::Object(property), Some(description)) =
            (&mut property, field.get("description"))
        {
            property.insert("description".to_owned(), description.clone());
        }
        if property.get("type").and_then(Value::as_str) == Some("array") {
            let format = field.get("collectionFormat").and_then(Value::as_str);
            if let Some((style, explode)) =
                parameters::style("formData", format.unwrap_or("csv"), at, notes)
            {
                let mut how = Map::new();
                how.insert("style".to_owned(), Value::String(style.to_owned()));
                how.insert("explode".to_owned(), Value::Bool(explode));
                encoding.insert(name.to_owned(), Value::Object(how));
            }
        }
        if field.get("required") == Some(&Value::Bool(true)) {
            required.push(Value::String(name.to_owned()));
        }
        properties.insert(name.to_owned(), property);
    }
    let mut object = Map::new();
    object.insert("type".to_owned(), Value::String("object".to_owned()));
    object.insert("properties".to_owned(), Value::Object(properties));
    let any_required = !required.is_empty();
    if any_required {
        object.insert("required".to_owned(), Value::Array(required));
    }
    let encoding = (!encoding.is_empty()).then_some(Value::Object(encoding));
    let mut content = Map::new();
    content.insert(
        media_type.to_owned(),
        media(Value::Object(object), encoding),
    );
    let mut out = Map::new();
    if any_required {
        out.insert("required".to_owned(), Value::Bool(true));
    }
    out.insert("content".to_owned(), Value::Object(content));
    Value::Object(out)
}

/// A media type object: its schema, and how the fields of a form are written.
fn media(schema: Value, encoding: Option<Value>) -> Value {
    let mut out = Map::new();
    out.insert("schema".to_owned(), schema);
    if let Some(encoding) = encoding {
        out.insert("encoding".to_owned(), encoding);
    }
    Value::Object(out)
}

/// A body parameter's `description`, `required` and extensions, onto its request body.
fn copy_texts(parameter: &Map<String, Value>, out: &mut Map<String, Value>) {
    for (key, value) in parameter {
        if matches!(key.as_str(), "description" | "required") || key.starts_with("x-") {
            out.insert(key.clone(), value.clone());
        }
    }
}
