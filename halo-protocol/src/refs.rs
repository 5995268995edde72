//! Checking that a JSON Schema stands alone.

use serde_json::{Map, Value};

/// Whether every `$ref` in a schema resolves inside it: each must be `#/$defs/Name` with
/// `Name` defined in an enclosing `$defs` (the nearest one that defines it). HALO schemas must
/// be self-contained, since a client has no document to resolve `#/components/...` against.
/// A whole tool schema is checked the same way: its entries and output may refer to the
/// definitions it shares at its root ([`ToolSchema::defs`](crate::ToolSchema::defs)).
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
    !has_dangling(schema, &mut Vec::new())
}

fn has_dangling<'v>(value: &'v Value, scopes: &mut Vec<&'v Map<String, Value>>) -> bool {
    match value {
        Value::Object(map) => {
            let own = match map.get("$defs") {
                Some(Value::Object(own)) => Some(own),
                _ => None,
            };
            scopes.extend(own);
            let dangling = map
                .get("$ref")
                .and_then(Value::as_str)
                .is_some_and(|reference| {
                    !reference
                        .strip_prefix("#/$defs/")
                        .is_some_and(|name| scopes.iter().any(|defs| defs.contains_key(name)))
                })
                || map
                    .iter()
                    .filter(|(keyword, _)| !is_data_keyword(keyword))
                    .any(|(_, inner)| has_dangling(inner, scopes));
            if own.is_some() {
                scopes.pop();
            }
            dangling
        }
        Value::Array(items) => items.iter().any(|item| has_dangling(item, scopes)),
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
