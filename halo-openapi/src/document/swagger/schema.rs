//! A Swagger 2.0 schema object as an OpenAPI 3.0 one: references into `#/components`,
//! `x-nullable` as `nullable`, `type: file` as binary data, a `discriminator` name as an
//! object. Some documents write what Swagger 2.0 does not allow (`type` as a list, the type
//! `null`); that is read the way JSON Schema reads it, and noted.

use serde_json::{Map, Value};

use super::super::notes::{Note, Notes, pointer};

/// A reference into a Swagger 2.0 document, pointing into the OpenAPI 3.0 one instead.
pub(super) fn reference(reference: &str) -> String {
    for (from, to) in [
        ("#/definitions/", "#/components/schemas/"),
        ("#/parameters/", "#/components/parameters/"),
        ("#/responses/", "#/components/responses/"),
    ] {
        if let Some(rest) = reference.strip_prefix(from) {
            return format!("{to}{rest}");
        }
    }
    reference.to_owned()
}

/// The schema `value`, found at `at` in the document, as OpenAPI 3.0 writes it.
pub(super) fn schema(value: &Value, at: &str, notes: &mut Notes) -> Value {
    let Value::Object(map) = value else {
        return value.clone();
    };
    let mut out = Map::with_capacity(map.len());
    for (key, inner) in map {
        let here = || pointer(at, key);
        let converted = match (key.as_str(), inner) {
            ("$ref", Value::String(target)) => Value::String(reference(target)),
            ("x-nullable", Value::Bool(nullable)) => {
                if *nullable {
                    notes.note(Note::XNullable, here);
                    out.insert("nullable".to_owned(), Value::Bool(true));
                }
                continue;
            }
            ("type", kind) => {
                kinds(kind, &mut out, at, notes);
                continue;
            }
            ("discriminator", Value::String(name)) => {
                let mut discriminator = Map::new();
                discriminator.insert("propertyName".to_owned(), Value::String(name.clone()));
                Value::Object(discriminator)
            }
            ("items" | "not" | "additionalProperties", Value::Object(_)) => {
                schema(inner, &here(), notes)
            }
            ("items" | "allOf" | "anyOf" | "oneOf", Value::Array(items)) => {
                let at = here();
                let items = items.iter().enumerate();
                let converted =
                    items.map(|(i, item)| schema(item, &pointer(&at, &i.to_string()), notes));
                Value::Array(converted.collect())
            }
            ("properties" | "patternProperties", Value::Object(properties)) => {
                let at = here();
                let converted = properties.iter().map(|(name, property)| {
                    (name.clone(), schema(property, &pointer(&at, name), notes))
                });
                Value::Object(converted.collect())
            }
            _ => inner.clone(),
        };
        out.insert(key.clone(), converted);
    }
    if out.get("type").and_then(Value::as_str) == Some("file") {
        notes.note(Note::FileOutsideForm, || pointer(at, "type"));
        binary(&mut out);
    }
    Value::Object(out)
}

/// `type: file` as OpenAPI 3.0 says binary data.
pub(super) fn binary(schema: &mut Map<String, Value>) {
    schema.insert("type".to_owned(), Value::String("string".to_owned()));
    schema.insert("format".to_owned(), Value::String("binary".to_owned()));
}

/// `type` into `out`: as it is, unless it is a list (one type is unwrapped; the type `null`
/// becomes `nullable`) or the type `null` alone.
fn kinds(kind: &Value, out: &mut Map<String, Value>, at: &str, notes: &mut Notes) {
    let here = || pointer(at, "type");
    match kind {
        Value::Array(kinds) => {
            notes.note(Note::TypeList, here);
            let null = Value::String("null".to_owned());
            let mut kinds = kinds.clone();
            if kinds.contains(&null) {
                notes.note(Note::NullType, here);
                kinds.retain(|kind| *kind != null);
                out.insert("nullable".to_owned(), Value::Bool(true));
            }
            match kinds.len() {
                0 => {}
                1 => {
                    out.insert("type".to_owned(), kinds.swap_remove(0));
                }
                _ => {
                    out.insert("type".to_owned(), Value::Array(kinds));
                }
            }
        }
        Value::String(name) if name == "null" => {
            notes.note(Note::NullType, here);
            out.insert("type".to_owned(), kind.clone());
        }
        _ => {
            out.insert("type".to_owned(), kind.clone());
        }
    }
}
