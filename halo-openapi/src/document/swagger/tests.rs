use serde_json::{Value, json};

use crate::{Document, Registry, Validation};

/// A Swagger 2.0 document of `paths` and `extra` top-level fields, read.
fn convert(paths: Value, extra: Value) -> Document {
    let mut document = json!({
        "swagger": "2.0",
        "info": {"title": "Shop", "version": "1"},
        "paths": paths,
    });
    for (key, value) in extra.as_object().unwrap() {
        document[key] = value.clone();
    }
    Document::read(document.to_string().as_bytes()).unwrap()
}

fn noted(document: &Document, words: &str) -> bool {
    document.notes().iter().any(|note| note.contains(words))
}

#[test]
fn host_base_path_and_schemes_are_the_servers() {
    let document = convert(
        json!({}),
        json!({"host": "api.shop.test", "basePath": "/v2/", "schemes": ["https", "http"]}),
    );
    assert_eq!(
        document.json()["servers"],
        json!([{"url": "https://api.shop.test/v2"}, {"url": "http://api.shop.test/v2"}])
    );
    assert_eq!(document.json()["openapi"], "3.0.3");
    assert!(noted(&document, "converted to OpenAPI 3.0.3"));
    let relative = convert(json!({}), json!({"basePath": "/api"}));
    assert_eq!(relative.json()["servers"], json!([{"url": "/api"}]));
    assert!(noted(&relative, "no `host`"));
    let bare = convert(json!({}), json!({}));
    assert!(bare.json().get("servers").is_none());
}

#[test]
fn definitions_are_components_and_every_reference_follows() {
    let document = convert(
        json!({"/pets": {"get": {"responses": {"200": {"description": "",
            "schema": {"type": "array", "items": {"$ref": "#/definitions/Pet"}}}}}}}),
        json!({
            "produces": ["application/json", "application/xml"],
            "definitions": {
                "Pet": {"type": "object", "x-kind": "animal", "discriminator": "kind",
                    "properties": {
                        "owner": {"$ref": "#/definitions/Owner"},
                        "tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}},
                        "nick": {"type": "string", "x-nullable": true}},
                    "allOf": [{"$ref": "#/definitions/Base"}]},
                "Owner": {"type": "object"}, "Tag": {"type": "string"}, "Base": {}
            }
        }),
    );
    let json = document.json();
    let pet = &json["components"]["schemas"]["Pet"];
    assert_eq!(
        pet["properties"]["owner"]["$ref"],
        "#/components/schemas/Owner"
    );
    assert_eq!(
        pet["properties"]["tags"]["items"]["$ref"],
        "#/components/schemas/Tag"
    );
    assert_eq!(pet["allOf"][0]["$ref"], "#/components/schemas/Base");
    assert_eq!(pet["discriminator"], json!({"propertyName": "kind"}));
    assert_eq!(pet["x-kind"], "animal");
    assert_eq!(
        pet["properties"]["nick"],
        json!({"type": "string", "nullable": true})
    );
    let content = &json["paths"]["/pets"]["get"]["responses"]["200"]["content"];
    assert_eq!(
        content["application/xml"]["schema"]["items"]["$ref"],
        "#/components/schemas/Pet"
    );
    assert!(content["application/json"].is_object());
}

#[test]
fn a_body_is_the_request_body_in_what_the_operation_consumes() {
    let document = convert(
        json!({"/pets": {"post": {
            "consumes": ["application/json", "text/plain"],
            "parameters": [{"name": "pet", "in": "body", "required": true,
                "description": "The pet", "schema": {"$ref": "#/definitions/Pet"}}],
            "responses": {"201": {"description": "Created"}}}}}),
        json!({"consumes": ["application/xml"], "definitions": {"Pet": {"type": "object"}}}),
    );
    let body = &document.json()["paths"]["/pets"]["post"]["requestBody"];
    assert_eq!(body["required"], true);
    assert_eq!(body["description"], "The pet");
    let content = body["content"].as_object().unwrap();
    let types: Vec<&String> = content.keys().collect();
    assert_eq!(types, ["application/json", "text/plain"]);
    assert_eq!(
        content["text/plain"]["schema"]["$ref"],
        "#/components/schemas/Pet"
    );
    assert!(
        document.json()["paths"]["/pets"]["post"]
            .get("parameters")
            .is_none()
    );
}

#[test]
fn form_fields_are_a_form_and_a_file_makes_it_multipart() {
    let fields = json!([
        {"name": "token", "in": "formData", "type": "string", "required": true},
        {"name": "ids", "in": "formData", "type": "array", "items": {"type": "integer"},
         "collectionFormat": "multi"},
        {"name": "limit", "in": "formData", "type": "integer", "default": 10,
         "description": "How many"}
    ]);
    let document = convert(
        json!({"/a": {"post": {"parameters": fields, "responses": {}}}}),
        json!({}),
    );
    let body = &document.json()["paths"]["/a"]["post"]["requestBody"];
    let form = &body["content"]["application/x-www-form-urlencoded"];
    assert_eq!(body["required"], true);
    assert_eq!(form["schema"]["required"], json!(["token"]));
    assert_eq!(
        form["schema"]["properties"]["limit"],
        json!({"type": "integer", "default": 10, "description": "How many"})
    );
    assert_eq!(
        form["encoding"]["ids"],
        json!({"style": "form", "explode": true})
    );

    let mut with_file = fields.clone();
    with_file[0] = json!({"name": "file", "in": "formData", "type": "file"});
    let document = convert(
        json!({"/a": {"post": {"parameters": with_file, "responses": {}}}}),
        json!({}),
    );
    let content = &document.json()["paths"]["/a"]["post"]["requestBody"]["content"];
    assert_eq!(
        content["multipart/form-data"]["schema"]["properties"]["file"],
        json!({"type": "string", "format": "binary"})
    );
    let said = convert(
        json!({"/a": {"post": {"consumes": ["multipart/form-data"], "parameters": fields,
            "responses": {}}}}),
        json!({}),
    );
    let content = &said.json()["paths"]["/a"]["post"]["requestBody"]["content"];
    assert!(content["multipart/form-data"].is_object());
}

#[test]
fn other_parameters_get_a_schema_and_a_style() {
    let array = |format: &str| {
        json!({"name": format, "in": "query", "type": "array", "collectionFormat": format,
            "items": {"type": "string", "enum": ["a", "b"]}})
    };
    let document = convert(
        json!({"/items/{id}": {
            "parameters": [
                {"name": "id", "in": "path", "type": "integer", "format": "int64"},
                {"name": "X-Trace", "in": "header", "type": "string"}
            ],
            "get": {"parameters": [
                array("csv"), array("multi"), array("ssv"), array("pipes"), array("tsv"),
                {"name": "X-Trace", "in": "header", "type": "string", "required": true,
                 "x-secret": true},
                {"name": "limit", "in": "query", "type": "integer", "minimum": 1,
                 "maximum": 100, "default": 20}
            ], "responses": {}}}}),
        json!({}),
    );
    let parameters = document.json()["paths"]["/items/{id}"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .clone();
    let named = |name: &str| {
        parameters
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name}"))
            .clone()
    };
    assert_eq!(
        named("id"),
        json!({"name": "id", "in": "path", "required": true,
            "schema": {"type": "integer", "format": "int64"}})
    );
    let styles: Vec<(Value, Value)> = ["csv", "multi", "ssv", "pipes", "tsv"]
        .iter()
        .map(|format| {
            (
                named(format)["style"].clone(),
                named(format)["explode"].clone(),
            )
        })
        .collect();
    assert_eq!(
        styles,
        [
            (json!("form"), json!(false)),
            (json!("form"), json!(true)),
            (json!("spaceDelimited"), json!(false)),
            (json!("pipeDelimited"), json!(false)),
            (Value::Null, Value::Null)
        ]
    );
    assert!(noted(&document, "`collectionFormat`"));
    assert_eq!(named("csv")["schema"]["items"]["enum"], json!(["a", "b"]));
    let trace = named("X-Trace");
    assert_eq!(
        (trace["required"].clone(), trace["x-secret"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(
        parameters.iter().filter(|p| p["name"] == "X-Trace").count(),
        1
    );
    assert_eq!(
        named("limit")["schema"],
        json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 20})
    );
}

#[test]
fn shared_parameters_and_responses_are_components() {
    let document = convert(
        json!({"/a": {"post": {
            "parameters": [{"$ref": "#/parameters/Limit"}, {"$ref": "#/parameters/Body"},
                           {"$ref": "#/parameters/Gone"}],
            "responses": {"200": {"$ref": "#/responses/Ok"}}}}}),
        json!({
            "parameters": {
                "Limit": {"name": "limit", "in": "query", "type": "integer"},
                "Body": {"name": "body", "in": "body", "schema": {"type": "object"}}
            },
            "responses": {"Ok": {"description": "Fine", "schema": {"type": "string"},
                "headers": {"X-Rate": {"type": "integer", "description": "Left"}},
                "examples": {"application/json": "fine"}}}
        }),
    );
    let json = document.json();
    let operation = &json["paths"]["/a"]["post"];
    assert_eq!(
        operation["parameters"],
        json!([{"$ref": "#/components/parameters/Gone"},
               {"$ref": "#/components/parameters/Limit"}])
    );
    assert!(operation["requestBody"]["content"]["application/json"].is_object());
    assert_eq!(
        operation["responses"]["200"]["$ref"],
        "#/components/responses/Ok"
    );
    let components = &json["components"];
    assert_eq!(
        components["parameters"]["Limit"]["schema"],
        json!({"type": "integer"})
    );
    assert!(components["parameters"].get("Body").is_none());
    let ok = &components["responses"]["Ok"];
    assert_eq!(
        ok["headers"]["X-Rate"],
        json!({"description": "Left", "schema": {"type": "integer"}})
    );
    assert_eq!(ok["content"]["application/json"]["example"], "fine");
    assert!(noted(&document, "points nowhere"));

    let registry = Registry::builder(json).lenient().build().unwrap();
    assert_eq!(registry.tools().count(), 0);
    assert!(
        registry.skipped()[0]
            .reason()
            .contains("#/components/parameters/Gone")
    );
}

#[test]
fn security_definitions_are_security_schemes() {
    let document = convert(
        json!({}),
        json!({"securityDefinitions": {
            "basic": {"type": "basic"},
            "key": {"type": "apiKey", "name": "X-Key", "in": "header", "description": "A key"},
            "oauth": {"type": "oauth2", "flow": "accessCode",
                "authorizationUrl": "https://a.test/auth", "tokenUrl": "https://a.test/token",
                "scopes": {"read": "Read"}},
            "odd": {"type": "magic"}
        }}),
    );
    let schemes = &document.json()["components"]["securitySchemes"];
    assert_eq!(schemes["basic"], json!({"type": "http", "scheme": "basic"}));
    assert_eq!(
        schemes["key"],
        json!({"type": "apiKey", "name": "X-Key", "in": "header", "description": "A key"})
    );
    assert_eq!(
        schemes["oauth"]["flows"]["authorizationCode"],
        json!({"authorizationUrl": "https://a.test/auth", "tokenUrl": "https://a.test/token",
            "scopes": {"read": "Read"}})
    );
    assert!(schemes.get("odd").is_none());
    assert!(noted(&document, "security definition"));
}

/// What Slack's document does that Swagger 2.0 does not allow is read as meant, and noted
/// once per kind, however often it happens.
#[test]
fn what_swagger_does_not_allow_is_read_as_meant_and_noted() {
    let document = convert(
        json!({"/chat": {"post": {"schemes": ["http"], "parameters": [
                {"name": "token", "in": "query", "type": "string"}],
            "responses": {"default": {"description": "", "schema": {"type": "object",
                "properties": {
                    "ok": {"type": ["boolean"]},
                    "ts": {"type": ["string", "null"]},
                    "either": {"type": ["string", "integer"]},
                    "gone": {"type": "null"},
                    "blob": {"type": "file"}}}}}}}}),
        json!({}),
    );
    let properties = &document.json()["paths"]["/chat"]["post"]["responses"]["default"]["content"]
        ["application/json"]["schema"]["properties"];
    assert_eq!(properties["ok"], json!({"type": "boolean"}));
    assert_eq!(
        properties["ts"],
        json!({"type": "string", "nullable": true})
    );
    assert_eq!(properties["either"], json!({"type": ["string", "integer"]}));
    assert_eq!(properties["gone"], json!({"type": "null"}));
    assert_eq!(
        properties["blob"],
        json!({"type": "string", "format": "binary"})
    );
    for words in [
        "as a list",
        "`null` as a type",
        "only a `default`",
        "own `schemes`",
        "`type: file`",
    ] {
        assert!(noted(&document, words), "{words}: {:?}", document.notes());
    }
    let lists = document
        .notes()
        .iter()
        .find(|n| n.contains("as a list"))
        .unwrap();
    assert!(
        lists.contains(
            "3 times; first at `/paths/~1chat/post/responses/default/schema/properties/either/type`"
        ),
        "{lists}"
    );
}

/// A converted document builds, validation on, and its form's fields are the tool's input.
#[test]
fn a_converted_document_builds() {
    let document = convert(
        json!({"/chat.postMessage": {"post": {"operationId": "chat_postMessage",
            "consumes": ["application/x-www-form-urlencoded"],
            "parameters": [
                {"name": "token", "in": "header", "type": "string"},
                {"name": "channel", "in": "formData", "type": "string", "required": true},
                {"name": "text", "in": "formData", "type": "string"}],
            "responses": {"200": {"description": "", "schema": {"$ref": "#/definitions/Ok"}}}}}}),
        json!({"host": "slack.test", "basePath": "/api",
            "definitions": {"Ok": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}),
    );
    let registry = Registry::builder(document.json())
        .validation(Validation::On)
        .build()
        .unwrap();
    let tool = registry.tools().next().unwrap();
    let input: Vec<&str> = tool.schema().input.keys().map(String::as_str).collect();
    assert_eq!(input, ["token", "channel", "text"]);
}
