//! The minimal OpenAPI slice of an operation: what an agent would have to be shown of the
//! document to know the operation as well as its served schema tells it. The measure of
//! served schemas (issue 13: each within 1.2× its slice).

use std::collections::HashSet;

use serde_json::Value;

/// The bytes of `value` as minified JSON.
///
/// # Panics
/// Never for a `serde_json::Value` (its keys are strings).
#[must_use]
pub fn minified(value: &Value) -> usize {
    serde_json::to_vec(value).expect("JSON").len()
}

/// Bytes of the minimal OpenAPI slice of an operation: the operation object, its path
/// item's parameters and every component it reaches, each minified.
///
/// # Panics
/// When a reference it reaches is not local to `document`.
#[must_use]
pub fn slice_bytes(document: &Value, path_item: &Value, operation: &Value) -> usize {
    let mut size = minified(operation);
    let mut pending = Vec::new();
    for (key, inner) in operation.as_object().into_iter().flatten() {
        match (key.as_str(), inner) {
            // Responses by status, `default` among them (not JSON Schema's `default`).
            ("responses", Value::Object(responses)) => {
                responses.values().for_each(|r| references(r, &mut pending));
            }
            _ => references(inner, &mut pending),
        }
    }
    if let Some(parameters) = path_item.get("parameters") {
        size += minified(parameters);
        references(parameters, &mut pending);
    }
    let mut seen = HashSet::new();
    while let Some(reference) = pending.pop() {
        if !seen.insert(reference) {
            continue;
        }
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| document.pointer(pointer))
            .unwrap_or_else(|| panic!("a local reference: {reference}"));
        size += minified(target);
        // An Example Object's `value` is instance data.
        if !reference.starts_with("#/components/examples/") {
            references(target, &mut pending);
        }
    }
    size
}

/// The slice of the operation the served schema `tool` describes (found in `document`'s
/// `paths` by `template`, which path keys that differ only in a `#fragment` share, and by
/// the tool's method), and its label (`POST /pets`); `None` when the document has none.
///
/// # Panics
/// As [`slice_bytes`].
#[must_use]
pub fn tool_slice(document: &Value, template: &str, tool: &Value) -> Option<(usize, String)> {
    let method = tool["call"]["method"].as_str()?.to_ascii_lowercase();
    let (item, operation) = document["paths"]
        .as_object()?
        .iter()
        .filter(|(key, _)| key.split('#').next() == Some(template))
        .find_map(|(_, item)| Some((item, item.get(&method)?)))?;
    let label = format!("{} {template}", method.to_ascii_uppercase());
    Some((slice_bytes(document, item, operation), label))
}

/// The references of a value: those of schemas (not inside instance data such as `example`
/// or `enum`), and of OpenAPI's `examples` maps, whose entries may be Reference Objects to
/// `#/components/examples`.
fn references<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                match inner {
                    Value::String(reference) if key == "$ref" => out.push(reference),
                    Value::Object(examples) if key == "examples" => out.extend(
                        examples
                            .values()
                            .filter_map(|example| example.get("$ref")?.as_str())
                            .filter(|reference| reference.starts_with("#/")),
                    ),
                    _ if halo_protocol::is_data_keyword(key) => {}
                    _ => references(inner, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| references(item, out)),
        _ => {}
    }
}
