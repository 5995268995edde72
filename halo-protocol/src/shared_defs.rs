//! The definitions a tool's schemas share: `$defs` at the root of a tool's schema, written
//! once for its input entries and its output, where a `#/$defs/Name` reference of theirs
//! resolves when their own `$defs` do not define `Name`.

use serde_json::{Map, Value};

use crate::{ToolSchema, is_data_keyword};

/// `schema` (an input entry or the output of a tool) standing alone: the definitions of
/// `shared` (the tool's `$defs`) that it reaches, directly or through other definitions,
/// added to its own `$defs`. A name its own `$defs` defines is its own, never replaced.
///
/// ```
/// use halo_protocol::standalone;
/// use serde_json::{Value, json};
///
/// let shared = json!({
///     "Tag": {"type": "string", "description": "A label."},
///     "Unused": {"type": "integer"}
/// });
/// let entry = json!({"type": "array", "items": {"$ref": "#/$defs/Tag"}});
/// assert_eq!(
///     Value::Object(standalone(entry.as_object().unwrap(), shared.as_object().unwrap())),
///     json!({"type": "array", "items": {"$ref": "#/$defs/Tag"},
///            "$defs": {"Tag": {"type": "string", "description": "A label."}}})
/// );
/// ```
#[must_use]
pub fn standalone(schema: &Map<String, Value>, shared: &Map<String, Value>) -> Map<String, Value> {
    let own = match schema.get("$defs") {
        Some(Value::Object(own)) => Some(own),
        _ => None,
    };
    let mut reached = Vec::new();
    let mut pending = Vec::new();
    references_in(schema, &mut pending);
    while let Some(name) = pending.pop() {
        let taken = own.is_some_and(|own| own.contains_key(&name)) || reached.contains(&name);
        if let Some(definition) = shared.get(&name).filter(|_| !taken) {
            // A shared definition's own references resolve among the shared ones.
            references(definition, &mut pending);
            reached.push(name);
        }
    }
    let mut out = schema.clone();
    if !reached.is_empty() {
        let defs = out
            .entry("$defs")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(defs) = defs {
            for name in reached {
                defs.insert(name.clone(), shared[&name].clone());
            }
        }
    }
    out
}

impl ToolSchema {
    /// Makes every input entry and the output stand alone again ([`standalone`]), and
    /// empties the shared [`defs`](Self::defs): for code that takes one schema at a time.
    ///
    /// ```
    /// use halo_protocol::{Call, InputField, ToolSchema, is_self_contained};
    /// use serde_json::json;
    ///
    /// let mut schema = ToolSchema::new(Call::new("POST", "/tags"));
    /// schema.input.insert("tag".into(), InputField::new(json!({"$ref": "#/$defs/Tag"})));
    /// schema.output = Some(json!({"$ref": "#/$defs/Tag"}));
    /// schema.defs.insert("Tag".into(), json!({"type": "string"}));
    /// schema.unshare();
    /// assert!(schema.defs.is_empty());
    /// assert!(is_self_contained(&serde_json::to_value(&schema.input["tag"]).unwrap()));
    /// assert!(is_self_contained(schema.output.as_ref().unwrap()));
    /// ```
    pub fn unshare(&mut self) {
        if self.defs.is_empty() {
            return;
        }
        let shared = std::mem::take(&mut self.defs);
        for field in self.input.values_mut() {
            field.schema = standalone(&field.schema, &shared);
        }
        if let Some(Value::Object(output)) = &mut self.output {
            *output = standalone(output, &shared);
        }
    }
}

/// The names of the `#/$defs/Name` references in `value`, outside data keywords.
fn references(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => references_in(map, out),
        Value::Array(items) => items.iter().for_each(|item| references(item, out)),
        _ => {}
    }
}

fn references_in(map: &Map<String, Value>, out: &mut Vec<String>) {
    for (keyword, inner) in map {
        match (keyword.as_str(), inner) {
            ("$ref", Value::String(reference)) => {
                if let Some(name) = reference.strip_prefix("#/$defs/") {
                    out.push(crate::unescape_token(name).into_owned());
                }
            }
            _ if is_data_keyword(keyword) => {}
            _ => references(inner, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::is_self_contained;

    #[test]
    fn reaches_through_shared_and_own_definitions_and_keeps_its_own() {
        let shared = json!({
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "string", "description": "shared B"},
            "C": {"type": "integer"},
            "D": {"type": "boolean"}
        });
        let shared = shared.as_object().unwrap();
        // Its own `B` wins over the shared one; its own `E` reaches the shared `C`; `D` is
        // never reached; a `$ref` inside `example` is data.
        let entry = json!({
            "anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/E"}],
            "example": {"$ref": "#/$defs/D"},
            "$defs": {"B": {"type": "string", "description": "own B"},
                      "E": {"type": "array", "items": {"$ref": "#/$defs/C"}}}
        });
        let alone = Value::Object(standalone(entry.as_object().unwrap(), shared));
        assert!(is_self_contained(&alone), "{alone:#}");
        let defs = alone["$defs"].as_object().unwrap();
        let mut names: Vec<&String> = defs.keys().collect();
        names.sort();
        assert_eq!(names, ["A", "B", "C", "E"]);
        assert_eq!(defs["B"]["description"], "own B");
        assert!(
            !is_self_contained(&entry),
            "the entry alone refers to shared A and C"
        );
    }

    #[test]
    fn cycles_among_shared_definitions_end() {
        let shared = json!({"Node": {"type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}});
        let root = json!({"$ref": "#/$defs/Node"});
        let alone = Value::Object(standalone(
            root.as_object().unwrap(),
            shared.as_object().unwrap(),
        ));
        assert_eq!(alone["$defs"].as_object().unwrap().len(), 1);
        assert!(is_self_contained(&alone));
    }
}
