//! What the registry derives from a utoipa document: the manifest and every schema.

use crate::common;

use axum::http::StatusCode;
use common::client::App;
use halo_axum::{BuildError, Describe, HaloBuilder, HaloLayer};
use serde_json::{Value, json};

async fn options(layer: HaloLayer, uri: &str) -> (StatusCode, Value) {
    let (router, _) = common::petshop();
    let answer = App::new(router.layer(layer)).discover(uri).send().await;
    (answer.status, answer.json())
}

fn layer() -> HaloLayer {
    HaloLayer::from_openapi(common::petshop().1)
}

#[tokio::test]
async fn manifest_lists_every_operation_with_info() {
    let (status, manifest) = options(layer(), "/").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(manifest["api"], "Pet Shop");
    assert_eq!(manifest["version"], "2.1.0");
    assert_eq!(manifest["description"], "Pets for sale");
    let tools: Vec<(String, String, String)> = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["method"].as_str().unwrap().into(),
                t["url"].as_str().unwrap().into(),
                t["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    for expected in [
        ("GET", "/pets", "list_pets"),
        ("POST", "/pets", "add_pet"),
        ("GET", "/pets/{id}", "get_pet"),
        ("PUT", "/pets/{id}", "replace_pet"),
        ("DELETE", "/pets/{id}", "delete_pet"),
        ("POST", "/pets/bulk-tag", "bulk_tag"),
        ("GET", "/v1/pets", "list_pets_v1"),
        ("GET", "/categories", "categories"),
    ] {
        let expected = (
            expected.0.to_owned(),
            expected.1.to_owned(),
            expected.2.to_owned(),
        );
        assert!(
            tools.contains(&expected),
            "{expected:?} missing from {tools:?}"
        );
    }
    assert_eq!(tools.len(), 8);
    let list = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "list_pets")
        .unwrap();
    assert_eq!(list["description"], "List pets.");
    assert_eq!(list["tags"], json!(["pets", "read"]));
}

#[tokio::test]
async fn parameters_in_every_location() {
    let (_, schemas) = options(layer(), "/pets").await;
    let list = &schemas[0];
    assert_eq!(list["call"], json!({"method": "GET", "url": "/pets"}));
    assert_eq!(
        list["description"],
        "List pets.\n\nFilters by free text; newest first."
    );
    assert_eq!(list["why"], "Use to find pets before acting on one");
    assert_eq!(list["input"]["q"]["in"], "query");
    assert_eq!(list["input"]["q"]["description"], "Free text.");
    assert!(list["input"]["q"].get("required").is_none());
    assert_eq!(list["input"]["limit"]["maximum"], 100);
    assert_eq!(list["input"]["X-Request-Id"]["in"], "header");
    assert_eq!(list["limits"], json!({"idempotent": true}));
    assert_eq!(list["examples"][0]["input"], json!({"q": "rex"}));
    assert!(list.get("auth").is_none());

    let (_, schemas) = options(layer(), "/pets/7").await;
    let get = &schemas[0];
    assert_eq!(
        get["input"]["id"],
        json!({"type": "integer", "format": "int64", "minimum": 0, "description": "Pet id", "required": true, "in": "path"})
    );
    assert_eq!(
        get["auth"],
        json!({"type": "apikey", "header": "X-API-Key"})
    );
}

#[tokio::test]
async fn object_bodies_are_flattened_and_others_are_one_entry() {
    let (_, schemas) = options(layer(), "/pets").await;
    let add = &schemas[1];
    assert_eq!(add["call"]["method"], "POST");
    assert_eq!(add["input"]["name"]["in"], "body");
    assert_eq!(add["input"]["name"]["required"], true);
    assert_eq!(add["input"]["price"]["minimum"], 1);
    assert!(add["input"]["category"].get("required").is_none());
    assert_eq!(
        add["limits"],
        json!({"rate": "10/minute", "idempotent": false})
    );
    assert_eq!(
        add["effects"],
        json!({"reversible": true, "undo": "/pets/{id}"})
    );
    assert_eq!(
        add["next"],
        json!([{"when": "201", "suggest": "GET /pets/{id}"}])
    );
    assert_eq!(
        add["auth"],
        json!({"type": "bearer", "scopes": ["pets:write"]})
    );
    assert_eq!(add["output"]["properties"]["name"]["type"], "string");

    let (_, schemas) = options(layer(), "/pets/bulk-tag").await;
    let bulk = &schemas[0]["input"]["body"];
    assert_eq!(bulk["type"], "array");
    assert_eq!(bulk["in"], "body");
    assert_eq!(bulk["required"], true);
    assert_eq!(schemas[0]["output"]["type"], "array");

    // PUT /pets/{id} takes a Pet body whose `id` clashes with the path parameter.
    let (_, schemas) = options(layer(), "/pets/{id}").await;
    let replace = schemas
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["call"]["method"] == "PUT")
        .unwrap();
    assert_eq!(replace["input"]["id"]["in"], "path");
    assert_eq!(replace["input"]["body"]["in"], "body");
    assert_eq!(replace["input"]["body"]["required"], true);
    // The object's own `required` list cannot sit beside HALO's `required: true`: nested.
    let pet = &replace["input"]["body"]["allOf"][0];
    assert_eq!(pet["properties"]["id"]["type"], "integer");
    assert_eq!(pet["required"], json!(["id", "name", "category", "tags"]));
    // Every schema the server writes reads back with the protocol's own types.
    for path in [
        "/pets",
        "/pets/1",
        "/pets/bulk-tag",
        "/v1/pets",
        "/categories",
    ] {
        let (_, schemas) = options(layer(), path).await;
        let typed: Vec<halo_protocol::ToolSchema> =
            serde_json::from_value(schemas.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), schemas, "{path}");
    }
    assert_eq!(
        replace["auth"],
        json!({"type": "oauth", "scopes": ["pets:write", "pets:read"], "tokenUrl": "https://auth.example/token"})
    );
}

#[tokio::test]
async fn one_schema_per_method_in_path_order() {
    let (_, schemas) = options(layer(), "/pets/42").await;
    let methods = halo_tests::json::each_str(&schemas, "/call/method");
    assert_eq!(methods, ["GET", "PUT", "DELETE"]);
    let delete = &schemas[2];
    assert_eq!(delete["limits"]["idempotent"], true);
    assert!(
        delete.get("auth").is_none(),
        "an empty alternative makes credentials optional"
    );
}

#[tokio::test]
async fn recursive_types_are_self_contained() {
    let (_, schemas) = options(layer(), "/categories").await;
    // A recursive output refers to its definition rather than write it twice.
    let output = &schemas[0]["output"];
    assert_eq!(output["$ref"], "#/$defs/Category");
    assert_eq!(
        output["$defs"]["Category"]["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Category"})
    );
    for path in [
        "/",
        "/pets",
        "/pets/1",
        "/pets/bulk-tag",
        "/v1/pets",
        "/categories",
    ] {
        let (_, body) = options(layer(), path).await;
        assert!(halo_protocol::is_self_contained(&body), "{path}: {body}");
        assert!(!body.to_string().contains("#/components/"), "{path}");
    }
}

#[tokio::test]
async fn deprecation_becomes_lifecycle() {
    let (_, schemas) = options(layer(), "/v1/pets").await;
    assert_eq!(schemas[0]["status"], "deprecated");
    assert_eq!(schemas[0]["sunset"], "2027-06-30");
    assert_eq!(schemas[0]["replace_with"], "/pets");
}

#[tokio::test]
async fn metadata_by_operation_id_overrides_extensions() {
    let layer = HaloLayer::builder(common::petshop().1)
        .describe(
            "categories",
            Describe::new()
                .why("Browse the tree")
                .retry(true)
                .rate("3/s".parse().unwrap()),
        )
        .describe("list_pets", Describe::new().why("Replaced why"))
        .build()
        .unwrap();
    let (_, categories) = options(layer.clone(), "/categories").await;
    assert_eq!(categories[0]["why"], "Browse the tree");
    assert_eq!(categories[0]["resilience"], json!({"retry": true}));
    assert_eq!(
        categories[0]["limits"],
        json!({"rate": "3/second", "idempotent": true})
    );
    let (_, pets) = options(layer, "/pets").await;
    assert_eq!(pets[0]["why"], "Replaced why");
    assert_eq!(
        pets[0]["examples"][0]["input"],
        json!({"q": "rex"}),
        "parts not overridden stay"
    );
}

fn build_error(builder: HaloBuilder) -> BuildError {
    builder.build().expect_err("the build must fail")
}

#[test]
fn start_up_errors_name_the_problem() {
    let unknown = build_error(
        HaloLayer::builder(common::petshop().1).describe("no_such_op", Describe::new().why("x")),
    );
    assert!(unknown.is_unknown_operation());
    assert!(unknown.to_string().contains("no_such_op"));

    let mut doc = serde_json::to_value(common::petshop().1).unwrap();
    doc["paths"]["/pets"]["get"]["x-halo-limits"] = json!({"rate": "5/fortnight"});
    let bad_rate = build_error(HaloBuilder::from_openapi_json(doc));
    assert!(bad_rate.is_metadata());
    assert!(bad_rate.to_string().contains("5/fortnight"), "{bad_rate}");

    let mut doc = serde_json::to_value(common::petshop().1).unwrap();
    doc["paths"]["/pets"]["get"]["x-halo-reversable"] = json!(true);
    let typo = build_error(HaloBuilder::from_openapi_json(doc));
    assert!(typo.is_metadata());
    assert!(typo.to_string().contains("GET /pets (list_pets)"), "{typo}");
    assert!(typo.to_string().contains("x-halo-reversable"), "{typo}");

    let mut doc = serde_json::to_value(common::petshop().1).unwrap();
    doc["paths"]["/pets"]["get"]["x-halo-effects"] = json!({"undo": "/nowhere/{id}"});
    let dangling = build_error(HaloBuilder::from_openapi_json(doc));
    assert!(dangling.is_dangling_link(), "{dangling}");

    let mut doc = serde_json::to_value(common::petshop().1).unwrap();
    doc["paths"]["/pets"]["get"]["x-halo-next"] =
        json!([{"when": "x", "suggest": "PATCH /pets/{id}"}]);
    let wrong_method = build_error(HaloBuilder::from_openapi_json(doc));
    assert!(wrong_method.is_dangling_link(), "{wrong_method}");
    assert!(
        wrong_method.to_string().contains("PATCH /pets/{id}"),
        "{wrong_method}"
    );

    let mut doc = serde_json::to_value(common::petshop().1).unwrap();
    doc["components"]["schemas"]
        .as_object_mut()
        .unwrap()
        .remove("Category");
    let unresolved = build_error(HaloBuilder::from_openapi_json(doc));
    assert!(unresolved.is_unresolved_reference(), "{unresolved}");
    assert!(
        unresolved
            .to_string()
            .contains("#/components/schemas/Category")
    );
}

#[test]
#[should_panic(expected = "HaloLayer: ")]
fn from_openapi_panics_on_invalid_metadata() {
    let mut api = common::petshop().1;
    let op = api
        .paths
        .paths
        .get_mut("/pets")
        .unwrap()
        .get
        .as_mut()
        .unwrap();
    op.extensions
        .get_or_insert_with(Default::default)
        .insert("x-halo-limits".into(), json!({"rate": "often"}));
    let _ = HaloLayer::from_openapi(api);
}

/// Health, answered to GET and HEAD.
#[utoipa::path(method(get, head), path = "/health", responses((status = 200)))]
async fn health() {}

#[tokio::test]
async fn head_beside_get_is_the_get_tool() {
    let (router, api) = utoipa_axum::router::OpenApiRouter::new()
        .routes(utoipa_axum::routes!(health))
        .split_for_parts();
    assert!(
        serde_json::to_value(&api).unwrap()["paths"]["/health"]["head"].is_object(),
        "utoipa describes both"
    );
    let app = App::new(router.layer(HaloLayer::from_openapi(api)));
    let manifest = app.discover("/").send().await.json();
    let tools: Vec<(&str, &str)> = manifest["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t["method"].as_str().unwrap()))
        .collect();
    assert_eq!(tools, [("health", "GET")]);
    let head = app
        .request(axum::http::Method::HEAD, "/health")
        .send()
        .await;
    assert_eq!(head.status, StatusCode::OK);
}

fn with_parameters(template: &str, parameters: Value) -> Result<HaloLayer, BuildError> {
    HaloBuilder::from_openapi_json(json!({
        "openapi": "3.1.0", "info": {"title": "Things", "version": "1"},
        "paths": {template: {"get": {"operationId": "list_things", "parameters": parameters,
                                     "responses": {"200": {"description": "ok"}}}}}
    }))
    .build()
}

#[test]
fn path_parameters_must_agree_with_the_template() {
    // utoipa's `IntoParams` without `parameter_in` (and without `axum_extras`) says `in: path`
    // for what is a query parameter: refused, saying how to fix it, not enforced.
    let error = with_parameters(
        "/things",
        json!([{"name": "limit", "in": "path", "required": true, "schema": {"type": "integer"}}]),
    )
    .unwrap_err();
    assert!(error.is_invalid_parameter(), "{error}");
    let message = error.to_string();
    assert!(
        message.starts_with("GET /things (list_things): parameter `limit`"),
        "{message}"
    );
    assert!(message.contains("parameter_in = Query"), "{message}");
    assert!(message.contains("axum_extras"), "{message}");

    let error = with_parameters("/things/{id}", json!([])).unwrap_err();
    assert!(error.is_invalid_parameter(), "{error}");
    assert!(
        error.to_string().contains("`{id}` is not declared"),
        "{error}"
    );

    with_parameters(
        "/things/{id}",
        json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
               {"name": "limit", "in": "query", "schema": {"type": "integer"}}]),
    )
    .unwrap();
}
