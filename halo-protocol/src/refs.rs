//! Checking that a JSON Schema stands alone.

use serde_json::{Map, Value};

/// Whether every `$ref` in a schema resolves inside it: each must be `#/$defs/Name` with
/// `Name` defined in an enclosing `$defs`. HALO schemas must be self-contained, since a client
/// has no document to resolve `#/components/...` against.
///
/// Values of data keywords (`example`, `examples`, `default`, `enum`, `const`) are data, and
/// a `$ref` key inside them is not a reference.
///
/// ```
/// use halo_protocol::is_self_contained;
/// use serde_json::json;
///
/// assert!(is_self_contained(&json!({
///     "type": "object",
///     "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
///     "$defs": {"Node": {"type": "object"}}
/// })));
/// assert!(!is_self_contained(&json!({"$ref": "#/components/schemas/Node"})));
/// ```
#[must_use]
pub fn is_self_contained(schema: &Value) -> bool {
    !has_dangling(schema, &Map::new())
}

fn has_dangling(value: &Value, defs: &Map<String, Value>) -> bool {
    match value {
        Value::Object(map) => {
            let defs = match map.get("$defs") {
                Some(Value::Object(own)) => own,
                _ => defs,
            };
            if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                let resolves = reference
                    .strip_prefix("#/$defs/")
                    .is_some_and(|name| defs.contains_key(name));
                if !resolves {
                    return true;
                }
            }
            map.iter()
                .filter(|(keyword, _)| !is_data_keyword(keyword))
                .any(|(_, inner)| has_dangling(inner, defs))
        }
        Value::Array(items) => items.iter().any(|item| has_dangling(item, defs)),
        _ => false,
    }
}

/// JSON Schema keywords whose values are instance data, not schemas.
#[must_use]
pub fn is_data_keyword(keyword: &str) -> bool {
    matches!(
        keyword,
        "example" | "examples" | "default" | "const" | "enum"
    )
}
