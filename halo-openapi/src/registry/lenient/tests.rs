use halo_protocol::{Location, Metadata};
use serde_json::{Value, json};

use crate::{DocumentLimits, Registry, RegistryBuilder, Skipped, Validation};

/// A document of `paths`, with `components.schemas` `schemas`.
fn document(paths: Value, schemas: Value) -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Sloppy", "version": "1"},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

fn names(registry: &Registry) -> Vec<&str> {
    registry.tools().map(|tool| tool.name()).collect()
}

/// What a lenient build recorded: method, path, `operationId`, repaired.
fn record(registry: &Registry) -> Vec<(&str, &str, Option<&str>, bool)> {
    registry
        .skipped()
        .iter()
        .map(|s| (s.method(), s.path(), s.operation_id(), s.is_repaired()))
        .collect()
}

/// The bytes served for the schemas of `path`.
fn served(registry: &Registry, path: &str) -> String {
    let index = registry.path_index(path).expect("a described path");
    let cached = registry.full().path(index).expect("served to everyone");
    String::from_utf8(cached.body.to_bytes().to_vec()).unwrap()
}

/// A builder setting, as each case needs it.
type Setting = fn(RegistryBuilder<'_>) -> RegistryBuilder<'_>;

/// One bad operation (`operationId` `bad`) beside good ones: strict, the build fails; lenient,
/// the bad one alone is left out, recorded with the strict error's words.
fn left_out_alone(case: &str, paths: Value, schemas: Value, setting: Setting) {
    let document = document(paths, schemas);
    let strict = setting(Registry::builder(&document)).build();
    let error = strict.expect_err(case).to_string();
    let registry = setting(Registry::builder(&document).lenient())
        .build()
        .unwrap_or_else(|e| panic!("{case}: {e}"));
    let [skipped] = registry.skipped() else {
        panic!("{case}: {:?}", registry.skipped());
    };
    assert_eq!(skipped.operation_id(), Some("bad"), "{case}");
    assert!(!skipped.is_repaired(), "{case}");
    assert_eq!(skipped.reason(), error, "{case}");
    let names = names(&registry);
    assert!(names.contains(&"good"), "{case}: {names:?}");
    assert!(!names.contains(&"bad"), "{case}: {names:?}");
}

fn plain(builder: RegistryBuilder<'_>) -> RegistryBuilder<'_> {
    builder
}

fn good() -> Value {
    json!({"get": {"operationId": "good", "responses": {"200": {"description": "", "content":
        {"application/json": {"schema": {"$ref": "#/components/schemas/Fine"}}}}}}})
}

fn fine() -> Value {
    json!({"Fine": {"type": "object", "properties": {"name": {"type": "string"}}}})
}

/// A `get` operation `bad` at `path` with `fields` besides its id and responses.
fn bad(fields: Value) -> Value {
    let mut operation = json!({"operationId": "bad", "responses": {}});
    for (key, value) in fields.as_object().unwrap() {
        operation[key] = value.clone();
    }
    json!({"get": operation})
}

fn body(schema: Value) -> Value {
    json!({"requestBody": {"content": {"application/json": {"schema": schema}}}})
}

#[test]
fn each_failure_leaves_out_its_operation_alone() {
    let missing = json!({"$ref": "#/components/schemas/Missing"});
    let cases: [(&str, Value, Value, Setting); 8] = [
        (
            "metadata that does not parse",
            json!({"/good": good(), "/bad": bad(json!({"x-halo-reversable": true}))}),
            fine(),
            plain,
        ),
        (
            "a response's reference to nothing",
            json!({"/good": good(), "/bad": bad(json!({"responses": {"200": {"description": "",
                "content": {"application/json": {"schema": missing}}}}}))}),
            fine(),
            plain,
        ),
        (
            "a parameter's reference to nothing",
            json!({"/good": good(), "/bad": bad(json!({"parameters": [
                {"$ref": "#/components/parameters/Missing"}]}))}),
            fine(),
            plain,
        ),
        (
            "a parameter in the path the template does not have",
            json!({"/good": good(), "/bad": bad(json!({"parameters": [
                {"name": "id", "in": "path", "required": true}]}))}),
            fine(),
            plain,
        ),
        (
            "a template variable another argument's name is taken by",
            json!({"/good": good(), "/bad/{id}": bad(json!({"parameters": [
                {"name": "id", "in": "query"}]}))}),
            fine(),
            plain,
        ),
        (
            "a schema the validator cannot compile",
            json!({"/good": good(), "/bad": bad(body(json!({"type": "object",
                "properties": {"code": {"type": "string", "pattern": "(unclosed"}}})))}),
            fine(),
            |builder| builder.validation(Validation::On),
        ),
        (
            "a rate per an argument the operation does not take",
            json!({"/good": good(), "/bad": bad(json!({"x-halo-limits": {"rates": [
                {"rate": "3/minute", "per": "argument", "argument": "nope"}]}}))}),
            fine(),
            plain,
        ),
        (
            "a cycle of bare references",
            json!({"/bad": bad(body(json!({"$ref": "#/components/schemas/Loop1"}))),
                   "/good": good()}),
            json!({"Fine": {"type": "object", "properties": {"name": {"type": "string"}}},
                   "Loop1": {"$ref": "#/components/schemas/Loop2"},
                   "Loop2": {"$ref": "#/components/schemas/Loop1"}}),
            plain,
        ),
    ];
    for (case, paths, schemas, setting) in cases {
        left_out_alone(case, paths, schemas, setting);
    }
}

#[test]
fn limits_passed_leave_out_the_operation_that_passes_them() {
    let mut deep = json!({"type": "string"});
    for _ in 0..20 {
        deep = json!({"type": "array", "items": deep});
    }
    left_out_alone(
        "max_depth",
        json!({"/good": good(), "/bad": bad(body(deep))}),
        fine(),
        |builder| builder.limits(DocumentLimits::new().max_depth(16)),
    );
    let many: Vec<String> = (0..200).map(|i| format!("value-{i}")).collect();
    left_out_alone(
        "max_schema_bytes",
        json!({"/good": good(), "/bad": bad(body(json!({"type": "string", "enum": many})))}),
        fine(),
        |builder| builder.limits(DocumentLimits::new().max_schema_bytes(2000)),
    );
}

/// Definitions reached by the fields of `bad`'s body: three, past `max_defs`. What `bad`
/// counted before it failed is not counted against what follows.
#[test]
fn a_def_limit_passed_counts_nothing_of_the_operation_left_out() {
    let object = |fields: &[&str]| {
        let properties: serde_json::Map<String, Value> = fields
            .iter()
            .map(|field| ((*field).to_owned(), json!({"type": "string"})))
            .collect();
        json!({"type": "object", "properties": properties})
    };
    let to = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let paths = json!({
        "/bad": {"post": {"operationId": "bad", "responses": {}, "requestBody": {"content": {
            "application/json": {"schema": {"type": "object", "properties": {
                "a": to("Address"), "b": to("Phone"), "c": to("Email"),
                "d": to("Phone"), "e": to("Email")}}}}}}},
        "/good": {"post": {"operationId": "good", "responses": {}, "requestBody": {"content": {
            "application/json": {"schema": {"type": "object", "properties": {
                "from": to("Address"), "to": to("Address")}}}}}}}
    });
    let schemas = json!({
        "Address": object(&["street", "city", "zip"]),
        "Phone": object(&["country", "number"]),
        "Email": object(&["local", "domain"]),
    });
    let document = document(paths, schemas);
    let limits = DocumentLimits::new().max_defs(2);
    let error = Registry::builder(&document)
        .limits(limits)
        .build()
        .unwrap_err();
    assert!(error.is_limit(), "{error}");
    let registry = Registry::builder(&document)
        .limits(limits)
        .lenient()
        .build()
        .unwrap();
    assert_eq!(names(&registry), ["good"]);
    assert_eq!(record(&registry), [("POST", "/bad", Some("bad"), false)]);
    assert_eq!(registry.skipped()[0].reason(), error.to_string());
}

#[test]
fn a_template_matching_an_earlier_ones_paths_is_left_out() {
    let document = document(
        json!({"/good/{a}": {"get": {"operationId": "good", "responses": {},
                   "parameters": [{"name": "a", "in": "path", "required": true}]}},
               "/good/{b}": {"get": {"operationId": "bad", "responses": {},
                   "parameters": [{"name": "b", "in": "path", "required": true}]},
                             "delete": {"operationId": "also_bad", "responses": {},
                   "parameters": [{"name": "b", "in": "path", "required": true}]}}}),
        json!({}),
    );
    let error = Registry::builder(&document)
        .build()
        .unwrap_err()
        .to_string();
    let registry = Registry::builder(&document).lenient().build().unwrap();
    assert_eq!(names(&registry), ["good"]);
    assert_eq!(
        record(&registry),
        [
            ("GET", "/good/{b}", Some("bad"), false),
            ("DELETE", "/good/{b}", Some("also_bad"), false)
        ]
    );
    assert!(registry.skipped().iter().all(|s| s.reason() == error));
    assert!(registry.path_index("/good/7").is_some());
}

#[test]
fn a_path_item_that_resolves_nowhere_is_left_out_whole() {
    let document = document(
        json!({"/good": good(), "/gone": {"$ref": "#/components/pathItems/Gone"}}),
        fine(),
    );
    let error = Registry::builder(&document).build().unwrap_err();
    assert!(error.is_unresolved_reference(), "{error}");
    let registry = Registry::builder(&document).lenient().build().unwrap();
    assert_eq!(names(&registry), ["good"]);
    assert_eq!(record(&registry), [("*", "/gone", None, false)]);
    assert_eq!(registry.skipped()[0].reason(), error.to_string());
}

/// A definition whose own reference resolves nowhere fails every operation that reaches
/// it, however many, and nothing else: none finds it half-taken-in by an earlier one.
#[test]
fn a_broken_definition_fails_each_operation_that_reaches_it() {
    let broken = json!({"$ref": "#/components/schemas/Broken"});
    let document = document(
        json!({"/one": {"get": {"operationId": "one", "responses": {"200": {"description": "",
                   "content": {"application/json": {"schema": broken}}}}}},
               "/good": good(),
               "/two": {"post": {"operationId": "two", "responses": {},
                   "requestBody": {"content": {"application/json": {"schema": {
                       "type": "object", "properties": {"it": broken}}}}}}}}),
        json!({"Fine": {"type": "object", "properties": {"name": {"type": "string"}}},
               "Broken": {"type": "object", "properties": {
                   "fine": {"$ref": "#/components/schemas/Fine"},
                   "gone": {"$ref": "#/components/schemas/Missing"}}}}),
    );
    for validation in [Validation::Off, Validation::On] {
        let registry = Registry::builder(&document)
            .validation(validation)
            .lenient()
            .build()
            .unwrap();
        assert_eq!(names(&registry), ["good"]);
        let skipped: Vec<_> = record(&registry).into_iter().map(|s| s.2).collect();
        assert_eq!(skipped, [Some("one"), Some("two")]);
        assert!(
            registry
                .skipped()
                .iter()
                .all(|s| s.reason().contains("#/components/schemas/Missing"))
        );
    }
}

#[test]
fn an_undeclared_template_variable_is_declared_a_required_string() {
    let document = document(
        json!({"/users/{org}/{id}": {"get": {"operationId": "get_user", "responses": {},
            "parameters": [{"name": "id", "in": "path", "required": true,
                            "schema": {"type": "integer"}},
                           {"name": "fields", "in": "query"}]}}}),
        json!({}),
    );
    let error = Registry::builder(&document).build().unwrap_err();
    assert!(error.is_invalid_parameter(), "{error}");
    let registry = Registry::builder(&document)
        .validation(Validation::On)
        .lenient()
        .build()
        .unwrap();
    assert_eq!(
        record(&registry),
        [("GET", "/users/{org}/{id}", Some("get_user"), true)]
    );
    let reason = registry.skipped()[0].reason();
    assert!(reason.starts_with(&error.to_string()), "{reason}");
    assert!(
        reason.ends_with("declared as a required string path parameter"),
        "{reason}"
    );
    let tool = registry.tools().next().unwrap();
    let input: Vec<&str> = tool.schema().input.keys().map(String::as_str).collect();
    assert_eq!(input, ["id", "org", "fields"]);
    let org = &tool.schema().input["org"];
    assert_eq!(org.location, Some(Location::Path));
    assert!(org.required);
    assert_eq!(Value::Object(org.schema.clone()), json!({"type": "string"}));
}

#[test]
fn a_link_to_an_operation_left_out_is_dropped() {
    let document = document(
        json!({"/good": {"get": {"operationId": "good", "responses": {},
                   "x-halo-next": [{"when": "to undo it", "suggest": "DELETE /bad"},
                                   {"when": "to see it again", "suggest": "GET /good"}]}},
               "/bad": {"delete": {"operationId": "bad", "responses": {},
                   "x-halo-reversable": true}}}),
        json!({}),
    );
    let registry = Registry::builder(&document).lenient().build().unwrap();
    assert_eq!(names(&registry), ["good"]);
    assert_eq!(
        record(&registry),
        [
            ("DELETE", "/bad", Some("bad"), false),
            ("GET", "/good", Some("good"), true)
        ]
    );
    let link = registry.skipped()[1].reason();
    assert!(
        link.contains("`next.suggest` points at \"DELETE /bad\""),
        "{link}"
    );
    assert!(link.ends_with("the link was dropped"), "{link}");
    let schema = served(&registry, "/good");
    assert!(!schema.contains("DELETE /bad"), "{schema}");
    assert!(schema.contains("GET /good"), "{schema}");
}

#[test]
fn metadata_given_to_an_operation_left_out_goes_with_it() {
    let document = document(
        json!({"/good": good(), "/bad": bad(json!({"x-halo-reversable": true}))}),
        fine(),
    );
    let why = || Metadata::default();
    let registry = Registry::builder(&document)
        .describe("bad", why())
        .lenient()
        .build()
        .unwrap();
    assert_eq!(names(&registry), ["good"]);
    let unknown = Registry::builder(&document)
        .describe("nothing", why())
        .lenient()
        .build()
        .unwrap_err();
    assert!(unknown.is_unknown_operation(), "{unknown}");
}

/// What a lenient build serves is what a strict build of the document without the
/// operations it left out serves: the same names, the same definitions inlined.
#[test]
fn what_is_served_is_the_strict_build_of_what_is_kept() {
    let pet = json!({"$ref": "#/components/schemas/Pet"});
    let paths = json!({
        "/pet/{id}": {"get": {"operationId": "get_pet", "responses": {"200": {
            "description": "", "content": {"application/json": {"schema": pet}}}},
            "parameters": [{"name": "id", "in": "path", "required": true},
                           {"name": "owner", "in": "path", "required": true}]}},
        "/pets": {"post": {"operationId": "get_pet", "responses": {"201": {
            "description": "", "content": {"application/json": {"schema": pet}}}}}},
    });
    let schemas = json!({"Pet": {"type": "object", "properties": {
        "name": {"type": "string"}, "tag": {"type": "string"}, "age": {"type": "integer"}}}});
    let document = document(paths, schemas);
    let registry = Registry::builder(&document).lenient().build().unwrap();
    assert_eq!(names(&registry), ["get_pet"]);
    assert_eq!(
        record(&registry),
        [("GET", "/pet/{id}", Some("get_pet"), false)]
    );

    let mut kept = document;
    kept["paths"]["/pet/{id}"]["get"]["x-halo-exclude"] = json!(true);
    let strict = Registry::builder(&kept).build().unwrap();
    assert_eq!(served(&registry, "/pets"), served(&strict, "/pets"));
    assert!(
        !served(&registry, "/pets").contains("$defs"),
        "Pet, used once by what is kept, is written in its place"
    );
    let manifest = |registry: &Registry| {
        let all = halo_protocol::TagFilter::default();
        registry
            .full()
            .manifest(registry, &all, None)
            .body
            .to_bytes()
    };
    assert_eq!(manifest(&registry), manifest(&strict));
}

#[test]
fn a_clean_document_builds_the_same_either_way() {
    let document = document(json!({"/good": good()}), fine());
    let strict = Registry::builder(&document).build().unwrap();
    let lenient = Registry::builder(&document).lenient().build().unwrap();
    assert!(strict.skipped().is_empty() && lenient.skipped().is_empty());
    assert_eq!(served(&strict, "/good"), served(&lenient, "/good"));
}

#[test]
fn what_concerns_the_whole_document_still_fails() {
    let not_paths = json!({"openapi": "3.1.0", "paths": []});
    let swagger = json!({"swagger": "2.0", "paths": {}});
    for document in [not_paths, swagger] {
        let error = Registry::builder(&document).lenient().build().unwrap_err();
        assert!(!error.to_string().is_empty());
    }
    let document = document(json!({"/good": good()}), fine());
    let error = Registry::builder(&document)
        .exclude_path("/nowhere")
        .lenient()
        .build()
        .unwrap_err();
    assert!(error.is_unknown_operation(), "{error}");
}

#[test]
fn skipped_is_comparable_and_cloned() {
    let skipped = Skipped::new("GET", "/a", Some("a"), "why".to_owned(), false);
    assert_eq!(skipped.clone(), skipped);
}
