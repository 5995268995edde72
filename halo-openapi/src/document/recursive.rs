//! JSON Schema 2019-09's recursion (`$recursiveAnchor: true` on a schema, `$recursiveRef: "#"`
//! inside it), which OpenAPI 3.1's dialect (2020-12) replaced: a component that recurs this
//! way is read as recurring through a `$ref` to itself, which says the same for a schema
//! that nothing extends dynamically, and which the rest of halo-rs follows.
//!
//! OpenAI's document does this for its search filters (a compound filter holds filters or
//! compound filters); JSON Schema 2020-12 takes `$recursiveAnchor: true` for a malformed
//! `$dynamicAnchor`, so the operations that reach it could not be validated.

use serde_json::Value;

use super::notes::{Note, Notes, pointer};
use halo_protocol::is_data_keyword;

/// Rewrites each component schema that declares `$recursiveAnchor: true`: the anchor is
/// dropped and its `$recursiveRef: "#"` become `$ref`s to the component.
pub(super) fn resolve(document: &mut Value, notes: &mut Notes) {
    let Some(Value::Object(schemas)) = document.pointer_mut("/components/schemas") else {
        return;
    };
    for (name, schema) in schemas.iter_mut() {
        let Value::Object(map) = schema else { continue };
        if map.get("$recursiveAnchor") != Some(&Value::Bool(true)) {
            continue;
        }
        map.remove("$recursiveAnchor");
        let at = pointer("/components/schemas", name);
        point(schema, &format!("#{at}"), false);
        notes.note(Note::RecursiveRef, || at.clone());
    }
}

/// Replaces `$recursiveRef: "#"` in the schema `value` (or, with `names`, in the schemas of
/// a map of names such as `properties`), outside instance data, with `$ref: target`.
fn point(value: &mut Value, target: &str, names: bool) {
    match value {
        Value::Object(map) if names => {
            for inner in map.values_mut() {
                point(inner, target, false);
            }
        }
        Value::Object(map) => {
            if map.get("$recursiveRef").and_then(Value::as_str) == Some("#") {
                map.remove("$recursiveRef");
                map.insert("$ref".to_owned(), Value::String(target.to_owned()));
            }
            for (key, inner) in map.iter_mut() {
                let names = matches!(
                    key.as_str(),
                    "properties"
                        | "patternProperties"
                        | "$defs"
                        | "definitions"
                        | "dependentSchemas"
                );
                if names || !is_data_keyword(key) {
                    point(inner, target, names);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| point(item, target, false)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_recursive_anchor_becomes_a_reference_to_its_component() {
        let mut document = json!({"components": {"schemas": {
            "Filter": {
                "$recursiveAnchor": true,
                "type": "object",
                "properties": {
                    "filters": {"type": "array", "items": {"oneOf": [
                        {"$ref": "#/components/schemas/Leaf"},
                        {"$recursiveRef": "#"}
                    ]}},
                    "default": {"$recursiveRef": "#"}
                },
                "example": {"$recursiveRef": "#"}
            },
            "Leaf": {"type": "string", "properties": {"x": {"$recursiveRef": "#"}}}
        }}});
        let mut notes = Notes::default();
        resolve(&mut document, &mut notes);
        let filter = &document["components"]["schemas"]["Filter"];
        assert!(filter.get("$recursiveAnchor").is_none());
        let own = json!({"$ref": "#/components/schemas/Filter"});
        assert_eq!(filter["properties"]["filters"]["items"]["oneOf"][1], own);
        // A property may be called `default`; an example is data.
        assert_eq!(filter["properties"]["default"], own);
        assert_eq!(filter["example"], json!({"$recursiveRef": "#"}));
        // Without an anchor, nothing changes.
        let leaf = &document["components"]["schemas"]["Leaf"]["properties"]["x"];
        assert_eq!(*leaf, json!({"$recursiveRef": "#"}));
        let sentences = notes.into_sentences();
        assert_eq!(sentences.len(), 1);
        assert!(
            sentences[0].contains("/components/schemas/Filter"),
            "{sentences:?}"
        );
    }
}
