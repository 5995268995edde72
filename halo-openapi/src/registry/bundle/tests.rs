use super::*;
use serde_json::json;

fn bundle(document: &Value, schema: &Value, direction: Direction) -> Value {
    let bundler = Bundler::new(document, DocumentLimits::default(), false);
    let mut out = bundler.schema(schema, Root::Reference, direction).unwrap();
    let defs = bundler.defs_of(&out, direction);
    if !defs.is_empty() {
        out.as_object_mut().unwrap().insert(
            "$defs".into(),
            Value::Object(bundler.defs_value(&defs, direction)),
        );
    }
    assert!(halo_protocol::is_self_contained(&out), "{out}");
    out
}

fn openapi(version: &str, schemas: Value) -> Value {
    json!({"openapi": version, "components": {"schemas": schemas}})
}

#[test]
fn shared_definitions_once_single_uses_and_tiny_leaves_inline() {
    let doc = openapi(
        "3.1.0",
        json!({
            "Book": {"type": "object", "properties": {
                "author": {"$ref": "#/components/schemas/Author"},
                "editor": {"$ref": "#/components/schemas/Author"},
                "isbn": {"$ref": "#/components/schemas/Isbn"},
                "published": {"$ref": "#/components/schemas/Date"},
                "revised": {"$ref": "#/components/schemas/Date"}}},
            "Author": {"type": "object", "description": "Who wrote it, with a long enough text",
                       "properties": {"name": {"type": "string"}}},
            "Isbn": {"type": "string", "description": "The book's ISBN-13, used once, so in place"},
            "Date": {"type": "string", "format": "date"}
        }),
    );
    let out = bundle(
        &doc,
        &json!({"$ref": "#/components/schemas/Book"}),
        Direction::Output,
    );
    let properties = &out["properties"];
    assert_eq!(properties["author"], json!({"$ref": "#/$defs/Author"}));
    assert_eq!(properties["editor"], json!({"$ref": "#/$defs/Author"}));
    assert_eq!(
        properties["isbn"]["description"],
        "The book's ISBN-13, used once, so in place"
    );
    assert_eq!(
        properties["published"],
        json!({"type": "string", "format": "date"})
    );
    assert_eq!(out["$defs"].as_object().unwrap().len(), 1);
}

#[test]
fn cycles_go_through_defs_once() {
    let doc = openapi(
        "3.1.0",
        json!({
            "Ping": {"type": "object", "properties": {"pong": {"$ref": "#/components/schemas/Pong"}}},
            "Pong": {"type": "object", "properties": {"ping": {"$ref": "#/components/schemas/Ping"}}}
        }),
    );
    let out = bundle(
        &doc,
        &json!({"$ref": "#/components/schemas/Ping"}),
        Direction::Output,
    );
    assert_eq!(out["$ref"], "#/$defs/Ping");
    let defs = out["$defs"].as_object().unwrap();
    assert_eq!(defs.keys().collect::<Vec<_>>(), ["Ping", "Pong"]);
    assert_eq!(
        defs["Pong"]["properties"]["ping"],
        json!({"$ref": "#/$defs/Ping"})
    );
}

#[test]
fn nullable_in_openapi_30_is_json_schema_null() {
    let doc = openapi(
        "3.0.3",
        json!({
            "Status": {"type": "string", "enum": ["on", "off"], "description": "an enum used twice"},
            "Thing": {"type": "object", "properties": {
                "name": {"type": "string", "nullable": true},
                "status": {"$ref": "#/components/schemas/Status"},
                "again": {"$ref": "#/components/schemas/Status"},
                "choice": {"anyOf": [{"type": "integer"}, {"type": "string"}], "nullable": true},
                "wrapped": {"allOf": [{"$ref": "#/components/schemas/Status"}], "nullable": true},
                "level": {"type": "string", "enum": ["a", "b"], "nullable": true},
                "plain": {"type": "integer", "nullable": false},
                "nullable": {"type": "boolean"}}}
        }),
    );
    let out = bundle(
        &doc,
        &json!({"$ref": "#/components/schemas/Thing"}),
        Direction::Output,
    );
    let p = &out["properties"];
    assert_eq!(p["name"], json!({"type": ["string", "null"]}));
    assert_eq!(p["choice"]["anyOf"][2], json!({"type": "null"}));
    assert_eq!(
        p["wrapped"],
        json!({"anyOf": [{"allOf": [{"$ref": "#/$defs/Status"}]}, {"type": "null"}]})
    );
    assert_eq!(
        p["level"],
        json!({"type": ["string", "null"], "enum": ["a", "b", null]})
    );
    assert_eq!(p["plain"], json!({"type": "integer"}));
    assert_eq!(
        p["nullable"],
        json!({"type": "boolean"}),
        "a property named nullable"
    );
    // 3.1 documents are JSON Schema already: `nullable` is not theirs to convert.
    let doc = openapi("3.1.0", json!({"N": {"type": "string", "nullable": true}}));
    let out = bundle(
        &doc,
        &json!({"$ref": "#/components/schemas/N"}),
        Direction::Output,
    );
    assert_eq!(out, json!({"type": "string", "nullable": true}));
}

#[test]
fn read_only_is_not_asked_and_write_only_not_shown() {
    let doc = openapi(
        "3.0.3",
        json!({
            "Id": {"type": "integer", "readOnly": true, "description": "assigned by the server"},
            "User": {"type": "object", "required": ["id", "name", "password"], "properties": {
                "id": {"$ref": "#/components/schemas/Id"},
                "created": {"type": "string", "readOnly": true},
                "name": {"type": "string"},
                "password": {"type": "string", "writeOnly": true}}},
            "Team": {"type": "object", "properties": {
                "lead": {"$ref": "#/components/schemas/User"},
                "members": {"type": "array", "items": {"$ref": "#/components/schemas/User"}}}}
        }),
    );
    let team = json!({"$ref": "#/components/schemas/Team"});
    let input = bundle(&doc, &team, Direction::Input);
    let user = &input["$defs"]["User"];
    assert_eq!(user["required"], json!(["name", "password"]));
    let keys: Vec<&String> = user["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["name", "password"]);
    let output = bundle(&doc, &team, Direction::Output);
    let user = &output["$defs"]["User"];
    assert_eq!(user["required"], json!(["id", "name"]));
    let mut keys: Vec<&String> = user["properties"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["created", "id", "name"]);
}

#[test]
fn discriminator_mappings_do_not_point_into_the_document() {
    let doc = openapi(
        "3.0.3",
        json!({
            "Cat": {"type": "object", "properties": {"kind": {"type": "string"}}},
            "Pet": {"oneOf": [{"$ref": "#/components/schemas/Cat"}],
                    "discriminator": {"propertyName": "kind",
                                      "mapping": {"cat": "#/components/schemas/Cat"}}}
        }),
    );
    let out = bundle(
        &doc,
        &json!({"$ref": "#/components/schemas/Pet"}),
        Direction::Output,
    );
    assert_eq!(out["discriminator"], json!({"propertyName": "kind"}));
    assert!(!out.to_string().contains("#/components/"));
}

#[test]
fn properties_named_like_keywords_are_schemas_and_extensions_are_not_served() {
    let doc = openapi(
        "3.0.3",
        json!({
            "Order": {"type": "object", "x-resourceId": "order",
                      "x-expandableFields": ["customer"],
                      "properties": {
                "default": {"$ref": "#/components/schemas/Customer"},
                "enum": {"$ref": "#/components/schemas/Customer"},
                "x-request-id": {"type": "string", "x-stripeBypassValidation": true},
                "customer": {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Customer"}],
                             "x-expansionResources": {"oneOf": [{"$ref": "#/components/schemas/Hidden"}]}}}},
            "Customer": {"type": "object", "description": "Who ordered, with a long enough text",
                         "properties": {"name": {"type": "string"}}},
            "Hidden": {"type": "object", "description": "Only named by a vendor extension",
                       "properties": {"secret": {"type": "string"}}}
        }),
    );
    let out = bundle(
        &doc,
        &json!({"$ref": "#/components/schemas/Order"}),
        Direction::Output,
    );
    let text = out.to_string();
    // Properties called `default`, `enum` or `x-…` are schemas: their references resolve.
    assert_eq!(
        out["properties"]["default"],
        json!({"$ref": "#/$defs/Customer"}),
        "{out}"
    );
    assert_eq!(
        out["properties"]["enum"],
        json!({"$ref": "#/$defs/Customer"}),
        "{out}"
    );
    assert_eq!(
        out["properties"]["x-request-id"],
        json!({"type": "string"}),
        "{out}"
    );
    // Vendor extensions are not served, nor what only they refer to.
    assert!(
        !text.contains("x-resourceId") && !text.contains("x-expan"),
        "{out}"
    );
    assert!(
        !text.contains("Hidden") && !text.contains("secret"),
        "{out}"
    );
    assert!(!text.contains("#/components"), "{out}");
}

/// A subschema of well over 256 bytes as served, different for each `seed`.
fn big(seed: &str) -> Value {
    let categories: Vec<String> = (0..40).map(|i| format!("{seed}_{i}")).collect();
    json!({"type": "array", "description": format!("The {seed} categories"),
           "items": {"type": "string", "enum": categories}})
}

#[test]
fn a_repeated_subschema_is_one_definition_named_after_its_property() {
    let mut spending = big("merchant");
    spending["x-stripe"] = json!("vendor extensions are not served, so not compared");
    let doc = openapi(
        "3.1.0",
        json!({
            "Card": {"type": "object", "properties": {
                "allowed": big("merchant"), "other": big("other")}},
            "Holder": {"type": "object", "properties": {
                "controls": {"type": "object", "properties": {"allowed": spending}},
                "card": {"$ref": "#/components/schemas/Card"}}}
        }),
    );
    let out = bundle(
        &doc,
        &json!({"$ref": "#/components/schemas/Holder"}),
        Direction::Output,
    );
    let defs = out["$defs"].as_object().unwrap();
    assert_eq!(defs.keys().collect::<Vec<_>>(), ["allowed"], "{out}");
    assert_eq!(defs["allowed"], big("merchant"));
    let reference = json!({"$ref": "#/$defs/allowed"});
    assert_eq!(
        out["properties"]["controls"]["properties"]["allowed"],
        reference
    );
    let card = &out["properties"]["card"];
    assert_eq!(card["properties"]["allowed"], reference);
    assert_eq!(
        card["properties"]["other"],
        big("other"),
        "a subschema written once stays"
    );
}

#[test]
fn a_repeat_reached_once_small_repeats_and_non_schemas_stay_in_place() {
    let small = json!({"type": "string", "description": "short"});
    let discriminator = json!({"propertyName": "kind", "mapping": {
        "a": "#/components/schemas/A", "b": "#/components/schemas/B",
        "padding": "x".repeat(300)}});
    let doc = openapi(
        "3.1.0",
        json!({
            "One": {"type": "object", "discriminator": discriminator,
                    "properties": {"list": big("thing"), "name": small}},
            "Two": {"type": "object", "discriminator": discriminator,
                    "properties": {"list": big("thing"), "name": small}}
        }),
    );
    // Only `One` is reached: the repeat is used once here, so it is written in place.
    let out = bundle(
        &doc,
        &json!({"$ref": "#/components/schemas/One"}),
        Direction::Output,
    );
    assert!(out.get("$defs").is_none(), "{out}");
    assert_eq!(out["properties"]["list"], big("thing"));
    assert_eq!(out["properties"]["name"], small);
    assert_eq!(out["discriminator"]["propertyName"], "kind");
    // Both reached: the large repeat once, the short one and the discriminator in place.
    let both = bundle(
        &doc,
        &json!({"type": "object", "properties": {
            "one": {"$ref": "#/components/schemas/One"},
            "two": {"$ref": "#/components/schemas/Two"}}}),
        Direction::Output,
    );
    let defs = both["$defs"].as_object().unwrap();
    assert_eq!(defs.keys().collect::<Vec<_>>(), ["list"], "{both}");
    for side in ["one", "two"] {
        let side = &both["properties"][side];
        assert_eq!(side["properties"]["list"], json!({"$ref": "#/$defs/list"}));
        assert_eq!(side["properties"]["name"], small);
        assert_eq!(side["discriminator"]["propertyName"], "kind");
    }
}

#[test]
fn repeats_inside_a_shared_repeat_are_not_shared_again_and_names_stay_the_components() {
    let inner = big("inner");
    let outer = json!({"type": "object", "title": "Limits",
                       "properties": {"inner": inner, "note": {"type": "string"}}});
    let doc = openapi(
        "3.1.0",
        json!({
            // A component called `inner`: the shared subschema may not take its name.
            "inner": {"type": "object", "properties": {"elsewhere": big("inner")}},
            "A": {"type": "object", "properties": {"limits": outer}},
            "B": {"type": "object", "properties": {"limits": outer}},
            "C": {"type": "object", "properties": {
                "a": {"$ref": "#/components/schemas/A"},
                "b": {"$ref": "#/components/schemas/B"},
                "i": {"$ref": "#/components/schemas/inner"},
                "j": {"$ref": "#/components/schemas/inner"}}}
        }),
    );
    let out = bundle(
        &doc,
        &json!({"$ref": "#/components/schemas/C"}),
        Direction::Output,
    );
    let defs = out["$defs"].as_object().unwrap();
    let mut names: Vec<&String> = defs.keys().collect();
    names.sort();
    // `Limits` (its title) once; `big("inner")` is in `Limits` and in the component `inner`:
    // twice, so one definition, which is not called `inner`.
    assert_eq!(names, ["Limits", "inner", "inner_2"], "{out}");
    assert_eq!(
        defs["Limits"]["properties"]["inner"],
        json!({"$ref": "#/$defs/inner_2"})
    );
    assert_eq!(
        defs["inner"]["properties"]["elsewhere"],
        json!({"$ref": "#/$defs/inner_2"})
    );
    assert_eq!(defs["inner_2"], big("inner"));
    assert_eq!(
        out["properties"]["a"]["properties"]["limits"],
        json!({"$ref": "#/$defs/Limits"})
    );
}

#[test]
fn a_shared_subschema_reads_each_way() {
    let mut record = big("record");
    record["readOnly"] = json!(true);
    let doc = openapi(
        "3.1.0",
        json!({
            "A": {"type": "object", "properties": {"id": record, "name": {"type": "string"}}},
            "B": {"type": "object", "properties": {"id": record, "name": {"type": "string"}}},
            "Both": {"type": "object", "properties": {
                "a": {"$ref": "#/components/schemas/A"}, "b": {"$ref": "#/components/schemas/B"}}}
        }),
    );
    let schema = json!({"$ref": "#/components/schemas/Both"});
    let input = bundle(&doc, &schema, Direction::Input);
    assert!(
        input["properties"]["a"]["properties"].get("id").is_none(),
        "{input}"
    );
    let output = bundle(&doc, &schema, Direction::Output);
    assert_eq!(
        output["properties"]["b"]["properties"]["id"],
        json!({"$ref": "#/$defs/id"})
    );
}
