//! An OpenAPI 3.0 document rewritten as 3.1 says the same, for documents of both versions
//! compiled together (the registry reads one document, of one version).

use serde_json::{Map, Value};

use crate::registry::bundle::nullable;

/// Rewrites an OpenAPI 3.0 document in place so that, read as 3.1, its schemas mean what
/// they meant: `nullable: true` becomes `null` among the types (or an alternative), boolean
/// `exclusiveMinimum`/`exclusiveMaximum` become the bounds themselves, and the version says
/// `3.1.0`. A document of another version is left as it is. Values that are data, not
/// schemas (`example`, `examples`, `default`, `enum`, `const`, and `x-` extensions), are not
/// touched.
///
/// ```
/// use serde_json::json;
///
/// let mut document = json!({
///     "openapi": "3.0.3",
///     "components": {"schemas": {"Price": {
///         "type": "number", "nullable": true, "minimum": 0, "exclusiveMinimum": true,
///         "example": {"nullable": true}
///     }}}
/// });
/// halo_openapi::upgrade_to_3_1(&mut document);
/// assert_eq!(document["openapi"], "3.1.0");
/// assert_eq!(
///     document["components"]["schemas"]["Price"],
///     json!({"type": ["number", "null"], "exclusiveMinimum": 0, "example": {"nullable": true}})
/// );
/// ```
pub fn upgrade_to_3_1(document: &mut Value) {
    let is_30 = document
        .get("openapi")
        .and_then(Value::as_str)
        .is_some_and(|version| version.starts_with("3.0"));
    if !is_30 {
        return;
    }
    document["openapi"] = Value::String("3.1.0".to_owned());
    // Iterative, so that a deep document cannot exhaust the stack.
    let mut pending: Vec<&mut Value> = vec![document];
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(object) => {
                upgrade_object(object);
                for (key, child) in object.iter_mut() {
                    if !is_data(key) {
                        pending.push(child);
                    }
                }
            }
            Value::Array(items) => pending.extend(items.iter_mut()),
            _ => {}
        }
    }
}

/// Keys whose values are data, never schemas.
pub(crate) fn is_data(key: &str) -> bool {
    matches!(key, "example" | "examples" | "default" | "enum" | "const") || key.starts_with("x-")
}

fn upgrade_object(object: &mut Map<String, Value>) {
    if matches!(object.get("nullable"), Some(Value::Bool(_))) {
        nullable(object);
    }
    boolean_bounds(object);
}

/// OpenAPI 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` made the bounds themselves,
/// as JSON Schema 2020-12 writes them: `minimum: 0, exclusiveMinimum: true` becomes
/// `exclusiveMinimum: 0`, and a `false` one is dropped. Whether anything changed.
pub(crate) fn boolean_bounds(object: &mut Map<String, Value>) -> bool {
    let mut changed = false;
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match object.get(flag) {
            Some(Value::Bool(true)) => match object.remove(bound) {
                Some(value) => {
                    object.insert(flag.to_owned(), value);
                }
                None => {
                    object.remove(flag);
                }
            },
            Some(Value::Bool(false)) => {
                object.remove(flag);
            }
            _ => continue,
        }
        changed = true;
    }
    changed
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_30_documents_change_and_data_stays() {
        let mut v31 = json!({"openapi": "3.1.0", "x": {"nullable": true, "type": "string"}});
        let before = v31.clone();
        upgrade_to_3_1(&mut v31);
        assert_eq!(v31, before);

        let mut v30 = json!({
            "openapi": "3.0.0",
            "paths": {"/a": {"get": {"parameters": [{"name": "q", "in": "query",
                "schema": {"$ref": "#/components/schemas/Q", "nullable": true},
                "example": {"type": "string", "nullable": true}}]}}},
            "components": {"schemas": {"Q": {"enum": ["a"], "type": "string", "nullable": true,
                "maximum": 3, "exclusiveMaximum": false,
                "properties": {"nullable": {"type": "boolean"}}}}}
        });
        upgrade_to_3_1(&mut v30);
        assert_eq!(
            v30["paths"]["/a"]["get"]["parameters"][0],
            json!({"name": "q", "in": "query",
                "schema": {"anyOf": [{"$ref": "#/components/schemas/Q"}, {"type": "null"}]},
                "example": {"type": "string", "nullable": true}})
        );
        assert_eq!(
            v30["components"]["schemas"]["Q"],
            json!({"enum": ["a", null], "type": ["string", "null"], "maximum": 3,
                "properties": {"nullable": {"type": "boolean"}}})
        );
    }

    #[test]
    fn a_deep_document_does_not_exhaust_the_stack() {
        let mut deep = json!({"openapi": "3.0.0"});
        let mut at = &mut deep;
        for _ in 0..100_000 {
            at["items"] = json!({});
            at = &mut at["items"];
        }
        upgrade_to_3_1(&mut deep);
        assert_eq!(deep["openapi"], "3.1.0");
        // Dropping a deep value recurses in serde_json; take it apart iteratively.
        let mut pending = vec![deep];
        while let Some(mut value) = pending.pop() {
            if let Some(items) = value.get_mut("items") {
                pending.push(items.take());
            }
        }
    }
}
