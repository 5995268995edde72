//! Every `$ref` of a JSON document, visited to be rewritten, without reading data (examples,
//! defaults, enums, constants) as schemas: a key named `$ref` inside an example is not one.

use serde_json::Value;

/// Replaces each `$ref` string in `value` with what `rewrite` makes of it (`None`: kept).
/// Iterative: a deep document cannot exhaust the stack.
pub(crate) fn rewrite(value: &mut Value, rewrite: &dyn Fn(&str) -> Option<String>) {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(object) => {
                for (key, child) in object.iter_mut() {
                    match (key.as_str(), &mut *child) {
                        ("$ref", Value::String(reference)) => {
                            if let Some(new) = rewrite(reference) {
                                *reference = new;
                            }
                        }
                        ("example" | "examples" | "default" | "enum" | "const", _) => {}
                        _ => pending.push(child),
                    }
                }
            }
            Value::Array(items) => pending.extend(items.iter_mut()),
            _ => {}
        }
    }
}
