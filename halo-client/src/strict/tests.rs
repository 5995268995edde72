//! Unit tests of the rewriting of input schemas for OpenAI's strict mode.

use super::*;

/// The names of a `required` list, sorted: their order follows the properties', which
/// follows `serde_json`'s map (sorted unless an application turns on `preserve_order`).
fn names(required: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = required
        .as_array()
        .expect("a list")
        .iter()
        .map(|name| name.as_str().expect("a name"))
        .collect();
    names.sort_unstable();
    names
}

fn strict(schema: &Value) -> Value {
    Value::Object(strict_schema(schema.as_object().unwrap()))
}

/// Checks what strict mode requires, everywhere in a schema.
fn assert_strict(schema: &Value) {
    match schema {
        Value::Object(map) => {
            if has_type(map, "object") {
                assert_eq!(map["additionalProperties"], false, "{schema}");
                let properties = map["properties"].as_object().unwrap();
                let required: Vec<&str> = map["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|name| name.as_str().unwrap())
                    .collect();
                let names: Vec<&str> = properties.keys().map(String::as_str).collect();
                assert_eq!(required, names, "{schema}");
            }
            if has_type(map, "array") {
                assert!(map.contains_key("items"), "{schema}");
            }
            for keyword in map.keys() {
                assert!(
                    KEPT.contains(&keyword.as_str())
                        || NUMERIC.contains(&keyword.as_str())
                        || [
                            "pattern",
                            "format",
                            "anyOf",
                            "$defs",
                            "properties",
                            "required",
                            "additionalProperties",
                            "items"
                        ]
                        .contains(&keyword.as_str()),
                    "`{keyword}` in {schema}"
                );
            }
            assert!(
                !(map.contains_key("$ref") && map.len() > 1),
                "a $ref with siblings: {schema}"
            );
            for (keyword, value) in map {
                if keyword == "properties" || keyword == "$defs" {
                    for inner in value.as_object().unwrap().values() {
                        assert_strict(inner);
                    }
                } else if keyword != "enum" && keyword != "const" {
                    assert_strict(value);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(assert_strict),
        _ => {}
    }
}

#[test]
fn objects_everywhere_are_closed_and_fully_required() {
    let schema = json!({
        "type": "object",
        "properties": {
            "owner": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "address": {"type": "object", "properties": {"street": {"type": "string"}},
                                "additionalProperties": {"type": "string"}}
                },
                "required": ["name"]
            },
            "items": {"type": "array", "items": {"properties": {"sku": {"type": "string"}}}},
            "pick": {"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}}},
                               {"type": "string"}]},
            "node": {"$ref": "#/$defs/Node"}
        },
        "required": ["owner"],
        "additionalProperties": false,
        "$defs": {
            "Node": {"type": "object", "properties": {
                "next": {"$ref": "#/$defs/Node"},
                "value": {"type": "number"}
            }, "required": ["value"]}
        }
    });
    let out = strict(&schema);
    assert_strict(&out);
    assert_eq!(names(&out["required"]), ["items", "node", "owner", "pick"]);
    let owner = &out["properties"]["owner"];
    assert_eq!(owner["properties"]["name"], json!({"type": "string"}));
    assert_eq!(
        owner["properties"]["address"]["type"],
        json!(["object", "null"])
    );
    assert_eq!(
        owner["properties"]["address"]["properties"]["street"],
        json!({"type": ["string", "null"]})
    );
    assert_eq!(
        out["properties"]["items"]["items"]["type"], "object",
        "an implied object gets its type"
    );
    let pick = &out["properties"]["pick"]["anyOf"];
    assert_eq!(pick[0]["additionalProperties"], false);
    assert_eq!(pick[2], json!({"type": "null"}));
    // A reference made optional: a union with null; recursion through $defs stays.
    assert_eq!(
        out["properties"]["node"],
        json!({"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]})
    );
    let node = &out["$defs"]["Node"];
    assert_eq!(node["required"], json!(["next", "value"]));
    assert_eq!(
        node["properties"]["next"],
        json!({"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]})
    );
}

#[test]
fn optional_properties_become_nullable() {
    let out = strict(&json!({
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": ["integer", "string"]},
            "c": {"enum": ["x", "y"], "description": "Pick"},
            "d": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "e": {"type": ["string", "null"]},
            "f": {"description": "Anything"},
            "g": {"type": "string", "nullable": true}
        },
        "required": ["g"]
    }));
    assert_strict(&out);
    let p = &out["properties"];
    assert_eq!(p["a"]["type"], json!(["string", "null"]));
    assert_eq!(p["b"]["type"], json!(["integer", "string", "null"]));
    assert_eq!(
        p["c"],
        json!({"anyOf": [{"enum": ["x", "y"]}, {"type": "null"}], "description": "Pick"})
    );
    assert_eq!(p["d"]["anyOf"].as_array().unwrap().len(), 3);
    assert_eq!(
        p["e"]["type"],
        json!(["string", "null"]),
        "already nullable"
    );
    assert_eq!(p["f"]["anyOf"].as_array().unwrap().len(), 4);
    assert_eq!(p["f"]["description"], "Anything");
    assert_eq!(
        p["g"]["type"],
        json!(["string", "null"]),
        "OpenAPI nullable"
    );
}

#[test]
fn unsupported_keywords_are_dropped() {
    let out = strict(&json!({
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time", "pattern": "^2"},
            "site": {"type": "string", "format": "uri", "maxLength": 200,
                     "description": "The site"},
            "n": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5,
                  "examples": [3], "x-internal": true, "exclusiveMinimum": true},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true,
                     "minItems": 1, "maxItems": 5},
            "odd": {"not": {"type": "string"}, "if": {}, "then": {}, "type": "string"},
            "loose": {"type": "array"}
        },
        "required": ["when", "site", "n", "tags", "odd", "loose"],
        "patternProperties": {"^x": {}},
        "minProperties": 1
    }));
    assert_strict(&out);
    let p = &out["properties"];
    assert_eq!(
        p["when"],
        json!({"type": "string", "pattern": "^2", "format": "date-time"})
    );
    assert_eq!(
        p["site"],
        json!({"type": "string", "description": "The site (at most 200 characters)"})
    );
    assert_eq!(
        p["n"],
        json!({"type": "integer", "minimum": 1, "maximum": 10,
               "description": "(default: 5)"})
    );
    assert_eq!(p["tags"]["minItems"], 1);
    assert_eq!(p["tags"]["description"], "(items are unique)");
    assert_eq!(p["odd"], json!({"type": "string"}));
    assert_eq!(p["loose"]["items"]["anyOf"].as_array().unwrap().len(), 3);
}

#[test]
fn all_of_is_merged_and_described_references_unravelled() {
    let out = strict(&json!({
        "type": "object",
        "properties": {
            "pet": {"allOf": [{"$ref": "#/$defs/Pet"}], "description": "The pet"},
            "dog": {"allOf": [{"$ref": "#/$defs/Pet"},
                              {"type": "object", "properties": {"barks": {"type": "boolean"}},
                               "required": ["barks"]}]},
            "cat": {"$ref": "#/$defs/Pet", "description": "A cat"}
        },
        "required": ["pet", "dog", "cat"],
        "$defs": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}},
                          "required": ["name"]}}
    }));
    assert_strict(&out);
    let p = &out["properties"];
    assert_eq!(
        p["pet"],
        json!({"description": "The pet", "anyOf": [{"$ref": "#/$defs/Pet"}]})
    );
    assert_eq!(names(&p["dog"]["required"]), ["barks", "name"]);
    assert_eq!(p["dog"]["properties"]["name"], json!({"type": "string"}));
    assert_eq!(
        p["cat"],
        json!({"description": "A cat", "anyOf": [{"$ref": "#/$defs/Pet"}]})
    );
    // A definition that includes itself merges a bounded number of times.
    let looped = strict(&json!({
        "type": "object",
        "properties": {"x": {"allOf": [{"$ref": "#/$defs/L"}, {"type": "object"}]}},
        "$defs": {"L": {"allOf": [{"$ref": "#/$defs/L"}, {"type": "object"}]}}
    }));
    assert_strict(&looped);
}

#[test]
fn hostile_schemas_do_not_break_it() {
    let mut deep = json!({"type": "string"});
    for _ in 0..100 {
        deep = json!({"type": "object", "properties": {"x": deep}});
    }
    let out = strict(&deep);
    assert_eq!(out["type"], "object");
    for odd in [
        json!({"type": 7, "properties": [1], "required": "x", "anyOf": {}, "items": 3}),
        json!({"anyOf": [{"type": "string"}]}),
        json!({}),
    ] {
        let out = strict(&odd);
        assert_eq!(out["type"], "object", "{odd}");
        assert_eq!(out["additionalProperties"], false, "{odd}");
    }
}

#[test]
fn size_limits() {
    let small = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert_eq!(exceeded_limit(small.as_object().unwrap()), None);
    let wide: Map<String, Value> = (0..5_001)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let wide = json!({"type": "object", "properties": wide});
    let reason = exceeded_limit(wide.as_object().unwrap()).unwrap();
    assert!(reason.contains("5001 object properties"), "{reason}");
    let mut deep = json!({"type": "string"});
    for _ in 0..11 {
        deep = json!({"type": "object", "properties": {"x": deep}});
    }
    let reason = exceeded_limit(deep.as_object().unwrap()).unwrap();
    assert!(reason.contains("11 levels"), "{reason}");
    let values: Vec<Value> = (0..1_001).map(|i| json!(i)).collect();
    let enums = json!({"type": "object", "properties": {"e": {"enum": values}}});
    assert!(exceeded_limit(enums.as_object().unwrap()).is_some());
}
