//! A tool's input entries as the one JSON Schema object that LLM APIs and MCP take, their
//! `$defs` hoisted to its root.

use serde_json::{Map, Value, json};

use crate::{ToolSchema, is_data_keyword, standalone};

/// A tool's input entries as one JSON Schema object: one property per entry (its schema
/// without HALO's `required` and `in` markers), `required` listing the required entries,
/// and `additionalProperties: false`. The entries' `$defs`, and the tool's shared
/// definitions they reach, move to the root, where their `#/$defs/...` references resolve,
/// renamed on a clash (identical definitions are shared).
///
/// A variable of the call's URL template that the input does not describe (servers that
/// describe bodies only leave path parameters out) becomes a required string, so that a
/// model knows to pass it and a strict client does not refuse it.
///
/// Arguments that follow this schema can be placed back into a request by
/// [`place_arguments`](crate::place_arguments).
///
/// ```
/// use halo_protocol::{Call, InputField, Location, ToolSchema, input_schema};
/// use serde_json::{Value, json};
///
/// let mut schema = ToolSchema::new(Call::new("GET", "/api/books"));
/// schema.input.insert(
///     "q".into(),
///     InputField::new(json!({"type": "string"})).located(Location::Query),
/// );
/// assert_eq!(
///     Value::Object(input_schema(&schema)),
///     json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": [],
///            "additionalProperties": false})
/// );
/// ```
#[must_use]
pub fn input_schema(schema: &ToolSchema) -> Map<String, Value> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut defs = Map::new();
    for (name, field) in &schema.input {
        let mut property = standalone(&field.schema, &schema.defs);
        if let Some(Value::Object(own)) = property.remove("$defs") {
            hoist(own, &mut property, &mut defs);
        }
        properties.insert(name.clone(), Value::Object(property));
        if field.required {
            required.push(Value::String(name.clone()));
        }
    }
    for variable in crate::place::template_variables(&schema.call.url) {
        if !variable.is_empty() && !properties.contains_key(variable) {
            let description = format!("The `{{{variable}}}` segment of {}", schema.call.url);
            properties.insert(
                variable.to_owned(),
                json!({"type": "string", "description": description}),
            );
            required.push(Value::String(variable.to_owned()));
        }
    }
    let mut parameters = Map::new();
    parameters.insert("type".into(), json!("object"));
    parameters.insert("properties".into(), Value::Object(properties));
    parameters.insert("required".into(), Value::Array(required));
    parameters.insert("additionalProperties".into(), Value::Bool(false));
    if !defs.is_empty() {
        parameters.insert("$defs".into(), Value::Object(defs));
    }
    parameters
}

/// Moves an entry's `$defs` into the root's, renaming a definition whose name is taken by a
/// different one (and rewriting the references to it) until everything settles.
fn hoist(
    own: Map<String, Value>,
    property: &mut Map<String, Value>,
    root: &mut Map<String, Value>,
) {
    let mut renames: Vec<(String, String)> = Vec::new();
    loop {
        let mut changed = false;
        for (name, definition) in &own {
            if renames.iter().any(|(from, _)| from == name) {
                continue;
            }
            let mut rewritten = definition.clone();
            rewrite_refs(&mut rewritten, &renames);
            if root
                .get(name)
                .is_some_and(|existing| *existing != rewritten)
            {
                let mut n = 2_u32;
                let fresh = loop {
                    let candidate = format!("{name}_{n}");
                    let clashes = root.contains_key(&candidate)
                        || own.contains_key(&candidate)
                        || renames.iter().any(|(_, to)| *to == candidate);
                    if !clashes {
                        break candidate;
                    }
                    n += 1;
                };
                renames.push((name.clone(), fresh));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (name, mut definition) in own {
        rewrite_refs(&mut definition, &renames);
        let target = renames
            .iter()
            .find(|(from, _)| *from == name)
            .map_or(name, |(_, to)| to.clone());
        root.entry(target).or_insert(definition);
    }
    if !renames.is_empty() {
        let mut value = Value::Object(std::mem::take(property));
        rewrite_refs(&mut value, &renames);
        if let Value::Object(map) = value {
            *property = map;
        }
    }
}

/// Rewrites `{"$ref": "#/$defs/from"}` to `#/$defs/to`, outside data keywords.
fn rewrite_refs(value: &mut Value, renames: &[(String, String)]) {
    if renames.is_empty() {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get_mut("$ref")
                && let Some(name) = reference.strip_prefix("#/$defs/")
                && let Some((_, to)) = renames.iter().find(|(from, _)| from == name)
            {
                *reference = format!("#/$defs/{to}");
            }
            for (keyword, inner) in map.iter_mut() {
                if !is_data_keyword(keyword) && keyword != "$ref" {
                    rewrite_refs(inner, renames);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rewrite_refs(item, renames);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::tests::tool;
    use crate::{Call, InputField, Location, ToolEntry, is_self_contained};

    fn input(schema: &ToolSchema) -> Value {
        Value::Object(input_schema(schema))
    }

    #[test]
    fn undescribed_path_variables_become_required_strings() {
        // As halo-fastapi serves it: the path parameter is not part of the input.
        let bare = ToolSchema::new(Call::new("GET", "/notes/{note_id}/files/{*path}"));
        let parameters = Value::Object(input_schema(&bare));
        assert_eq!(parameters["required"], json!(["note_id", "path"]));
        assert_eq!(parameters["properties"]["note_id"]["type"], "string");
        assert_eq!(parameters["additionalProperties"], false);

        // A described one keeps its own schema and requiredness.
        let mut described = ToolSchema::new(Call::new("GET", "/notes/{id}"));
        described.input.insert(
            "id".into(),
            InputField::new(json!({"type": "integer"}))
                .located(Location::Path)
                .required(true),
        );
        let parameters = Value::Object(input_schema(&described));
        assert_eq!(parameters["properties"], json!({"id": {"type": "integer"}}));
        assert_eq!(parameters["required"], json!(["id"]));
    }

    #[test]
    fn entries_become_properties() {
        let (_, mut schema) = tool("create_book", "POST", "/api/books");
        schema.input.insert(
            "title".into(),
            InputField::new(json!({"type": "string", "maxLength": 200}))
                .located(Location::Body)
                .required(true),
        );
        schema.input.insert(
            "Idempotency-Key".into(),
            InputField::new(json!({"type": "string"})).located(Location::Header),
        );
        assert_eq!(
            input(&schema),
            json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string", "maxLength": 200},
                    "Idempotency-Key": {"type": "string"}
                },
                "required": ["title"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn nested_entries_are_unwrapped() {
        let body = json!({"type": "object", "description": "The pet", "required": ["name"],
                          "properties": {"name": {"type": "string"}}});
        let (_, mut schema) = tool("add", "POST", "/pets");
        schema.input.insert(
            "body".into(),
            InputField::new(body.clone())
                .located(Location::Body)
                .required(true),
        );
        // Through the wire form, as a client reads it.
        let wire = serde_json::to_value(&schema).unwrap();
        assert!(wire["input"]["body"]["allOf"].is_array());
        let read: ToolSchema = serde_json::from_value(wire).unwrap();
        let parameters = input(&read);
        assert_eq!(parameters["properties"]["body"], body);
        assert_eq!(parameters["required"], json!(["body"]));
    }

    #[test]
    fn defs_move_to_the_root_and_clashes_are_renamed() {
        let node = |kind: &str| {
            json!({"type": "object", "properties": {
                "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                "kind": {"const": kind}
            }})
        };
        let entry_with = |kind: &str| {
            let mut field = node(kind);
            field["$defs"] = json!({"Node": node(kind)});
            field["example"] = json!({"$ref": "#/$defs/Node"});
            InputField::new(field).located(Location::Body)
        };
        let (_, mut schema) = tool("t", "POST", "/t");
        schema.input.insert("a".into(), entry_with("a"));
        schema.input.insert("same".into(), entry_with("a"));
        schema.input.insert("b".into(), entry_with("b"));
        let parameters = input(&schema);
        assert!(is_self_contained(&parameters), "{parameters:#}");
        let defs = parameters["$defs"].as_object().unwrap();
        assert_eq!(
            defs.keys().collect::<Vec<_>>(),
            ["Node", "Node_2"],
            "identical definitions are shared"
        );
        assert_eq!(defs["Node"], node("a"));
        let properties = &parameters["properties"];
        assert!(properties["a"].get("$defs").is_none());
        assert_eq!(
            properties["a"]["properties"]["kids"]["items"]["$ref"],
            "#/$defs/Node"
        );
        assert_eq!(
            properties["b"]["properties"]["kids"]["items"]["$ref"],
            "#/$defs/Node_2"
        );
        assert_eq!(
            defs["Node_2"]["properties"]["kids"]["items"]["$ref"],
            "#/$defs/Node_2"
        );
        assert_eq!(defs["Node_2"]["properties"]["kind"]["const"], "b");
        // Data is never rewritten.
        assert_eq!(properties["b"]["example"]["$ref"], "#/$defs/Node");
    }

    #[test]
    fn a_renamed_definition_renames_those_that_use_it() {
        let entry_with = |leaf: &str| {
            InputField::new(json!({
                "$ref": "#/$defs/Tree",
                "$defs": {
                    "Tree": {"type": "array", "items": {"$ref": "#/$defs/Leaf"}},
                    "Leaf": {"type": leaf}
                }
            }))
        };
        let (_, mut schema) = tool("t", "POST", "/t");
        schema.input.insert("one".into(), entry_with("string"));
        schema.input.insert("two".into(), entry_with("integer"));
        let parameters = input(&schema);
        assert!(is_self_contained(&parameters), "{parameters:#}");
        let two = &parameters["properties"]["two"]["$ref"];
        let tree = two.as_str().unwrap().strip_prefix("#/$defs/").unwrap();
        assert_eq!(tree, "Tree_2");
        let leaf_ref = parameters["$defs"][tree]["items"]["$ref"].as_str().unwrap();
        let leaf = leaf_ref.strip_prefix("#/$defs/").unwrap();
        assert_eq!(parameters["$defs"][leaf]["type"], "integer");
        assert_eq!(parameters["$defs"]["Leaf"]["type"], "string");
    }

    #[test]
    fn the_tools_shared_definitions_join_the_root() {
        let (_, mut schema) = tool("t", "POST", "/t");
        schema
            .defs
            .insert("Tag".into(), json!({"type": "string", "maxLength": 20}));
        schema.defs.insert("Out".into(), json!({"type": "integer"}));
        for name in ["first", "second"] {
            schema.input.insert(
                name.into(),
                InputField::new(json!({"type": "array", "items": {"$ref": "#/$defs/Tag"}})),
            );
        }
        schema.output =
            Some(json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/Out"}}}));
        let parameters = input(&schema);
        assert!(is_self_contained(&parameters), "{parameters:#}");
        // Only what the input reaches, once.
        assert_eq!(
            parameters["$defs"],
            json!({"Tag": {"type": "string", "maxLength": 20}})
        );
        let entry = ToolEntry::new("/t", "POST", "t", "");
        let definition = &crate::tool_definitions(&[(entry, schema)])[0];
        let output = Value::Object(definition.output_schema.clone().unwrap());
        assert_eq!(output["$defs"], json!({"Out": {"type": "integer"}}));
    }
}
