//! The last touches on a rewritten schema object: what goes one way only left out of the
//! other, OpenAPI 3.0's `nullable` said as JSON Schema does, and no `discriminator` mapping
//! into the document.

use serde_json::{Map, Value};

use super::{Direction, Pass, State};

/// The last touches on a schema object once its keywords are rewritten: properties that do
/// not go this way left out (`readOnly` from input, `writeOnly` from output), and, in an
/// OpenAPI 3.0 document, `nullable` said as JSON Schema does.
pub(super) fn adjust(state: &State<'_>, schema: &mut Map<String, Value>, pass: Pass) {
    let flag = match pass.direction {
        Direction::Input => "readOnly",
        Direction::Output => "writeOnly",
    };
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        let before = properties.len();
        let mut dropped = Vec::new();
        properties.retain(|name, property| {
            let keep = !flagged(state, property, flag);
            if !keep {
                dropped.push(name.clone());
            }
            keep
        });
        if properties.len() < before
            && let Some(Value::Array(required)) = schema.get_mut("required")
        {
            required.retain(|name| {
                !name
                    .as_str()
                    .is_some_and(|n| dropped.iter().any(|d| d == n))
            });
        }
    }
    if pass.nullable {
        nullable(schema);
    }
    // `mapping` names schemas by their place in the document (`#/components/schemas/Cat`),
    // which a served schema does not have; the `oneOf` branches say the same.
    if let Some(Value::Object(discriminator)) = schema.get_mut("discriminator") {
        discriminator.remove("mapping");
    }
}

/// Whether a property's schema carries `flag: true`, itself or in the definition it refers to.
fn flagged(state: &State<'_>, schema: &Value, flag: &str) -> bool {
    if schema.get(flag) == Some(&Value::Bool(true)) {
        return true;
    }
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix("#/$defs/"))
        .and_then(|name| state.by_name.get(name))
        .is_some_and(|&id| state.targets[id as usize].body.get(flag) == Some(&Value::Bool(true)))
}

/// OpenAPI 3.0's `nullable: true` as JSON Schema: `null` added to `type` (and to `enum`),
/// or as one more alternative of `anyOf`/`oneOf`, or beside a reference or an `allOf`.
pub(crate) fn nullable(schema: &mut Map<String, Value>) {
    match schema.get("nullable") {
        Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            schema.remove("nullable");
            return;
        }
        _ => return,
    }
    schema.remove("nullable");
    let null = || Value::String("null".to_owned());
    if let Some(Value::Array(values)) = schema.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match schema.get_mut("type") {
        Some(Value::String(single)) => {
            let single = std::mem::take(single);
            schema.insert(
                "type".to_owned(),
                Value::Array(vec![Value::String(single), null()]),
            );
            return;
        }
        Some(Value::Array(types)) => {
            if !types.contains(&null()) {
                types.push(null());
            }
            return;
        }
        _ => {}
    }
    let null_schema = || {
        let mut map = Map::new();
        map.insert("type".to_owned(), null());
        Value::Object(map)
    };
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get_mut(union) {
            if !branches.contains(&null_schema()) {
                branches.push(null_schema());
            }
            return;
        }
    }
    // `{"$ref": …, "nullable": true}` or `{"allOf": […], "nullable": true}`: the schema or null.
    let mut alternative = Map::new();
    for keyword in ["$ref", "allOf"] {
        if let Some(value) = schema.remove(keyword) {
            alternative.insert(keyword.to_owned(), value);
        }
    }
    if !alternative.is_empty() {
        schema.insert(
            "anyOf".to_owned(),
            Value::Array(vec![Value::Object(alternative), null_schema()]),
        );
    }
}
