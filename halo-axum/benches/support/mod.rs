//! What the benchmarks share: the timing (a runtime, `n` calls' time, paired ratios) and the
//! calls they time (in process or over loopback HTTP); for the discovery benchmarks, a small
//! utoipa application and a generated OpenAPI document of any size.
//!
//! `scripts/compare-builds.sh` builds this file, with `governed.rs`, against an earlier
//! commit's layer: it uses nothing of halo-axum that layer lacks.
#![allow(dead_code)] // each bench uses a part of it

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Json, Router};
use halo_axum::halo;
use halo_tests::BearerScheme;
use http::Request;
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::runtime::Runtime;
use tower::ServiceExt;
use tower_service::Service;
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

// ---------------------------------------------------------------------------------------------
// Timing, and the calls timed.
// ---------------------------------------------------------------------------------------------

/// The runtime the benchmarks drive their calls on: one thread, I/O and timers on.
pub(crate) fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}

/// The time `n` calls of `call` take, one after another.
pub(crate) fn time<F, Fut>(rt: &Runtime, n: u64, call: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: Future,
{
    rt.block_on(async {
        let started = Instant::now();
        for _ in 0..n {
            black_box(call().await);
        }
        started.elapsed()
    })
}

/// Iterations of one side before switching to the other in [`paired`].
const ROUND: u64 = 32;

/// `candidate / baseline` over `iters` calls each, in alternating rounds of [`ROUND`] calls
/// (ABBA order) within every sample, so that load on the machine hits both alike, as
/// microseconds per iteration (criterion's `1.0300 µs` reads "ratio 1.030"). Each closure
/// times `n` calls.
pub(crate) fn paired(
    iters: u64,
    mut baseline: impl FnMut(u64) -> Duration,
    mut candidate: impl FnMut(u64) -> Duration,
) -> Duration {
    let (mut base, mut cand, mut done, mut base_first) = (Duration::ZERO, Duration::ZERO, 0, true);
    while done < iters {
        let n = ROUND.min(iters - done);
        if base_first {
            base += baseline(n);
            cand += candidate(n);
        } else {
            cand += candidate(n);
            base += baseline(n);
        }
        base_first = !base_first;
        done += n;
    }
    let ratio = cand.as_secs_f64() / base.as_secs_f64().max(f64::MIN_POSITIVE);
    #[allow(clippy::cast_precision_loss)] // iteration counts stay far below 2^52
    Duration::from_secs_f64(ratio * 1e-6 * iters as f64)
}

/// `request` through a clone of `service`, in process (`tower::oneshot`): the status, the
/// body read.
pub(crate) async fn call<S>(service: &S, request: Request<Body>) -> StatusCode
where
    S: Service<Request<Body>, Response = Response, Error = Infallible> + Clone,
{
    let response = service
        .clone()
        .oneshot(request)
        .await
        .unwrap_or_else(|never| match never {});
    let status = response.status();
    black_box(response.into_body().collect().await.expect("a body"));
    status
}

/// A `GET path` without headers or body.
pub(crate) fn get_request(path: &'static str) -> Request<Body> {
    Request::builder()
        .uri(path)
        .body(Body::empty())
        .expect("a request")
}

/// Serves `router` on a loopback port: its base URL.
pub(crate) async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, router).await.expect("serving") });
    format!("http://{addr}")
}

/// `request` sent over HTTP: the status, the body read.
pub(crate) async fn answered(request: reqwest::RequestBuilder) -> StatusCode {
    let response = request.send().await.expect("an answer");
    let status = response.status();
    black_box(response.bytes().await.expect("a body"));
    status
}

/// `GET url` over HTTP: the status, the body read.
pub(crate) async fn get_once(client: &reqwest::Client, url: &str) -> StatusCode {
    answered(client.get(url)).await
}

// ---------------------------------------------------------------------------------------------
// A small application: the request path of benchmarks (a) and (b).
// ---------------------------------------------------------------------------------------------

/// A pet.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub(crate) struct Pet {
    /// Identifier.
    id: u64,
    /// Name.
    name: String,
    /// Free-form tags.
    tags: Vec<String>,
    /// Where the pet belongs.
    category: Category,
}

/// A category tree (recursive).
#[allow(clippy::use_self)] // `Self` inside a `ToSchema` derive
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub(crate) struct Category {
    /// Name.
    name: String,
    /// Sub-categories.
    #[schema(no_recursion)]
    children: Vec<Category>,
}

/// A pet to add.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub(crate) struct NewPet {
    /// The pet's name.
    name: String,
    /// Price in cents.
    #[schema(minimum = 1)]
    price: u32,
}

fn pet(id: u64) -> Pet {
    Pet {
        id,
        name: "Rex".to_owned(),
        tags: vec!["dog".to_owned(), "good".to_owned()],
        category: Category {
            name: "dogs".to_owned(),
            children: Vec::new(),
        },
    }
}

/// List pets.
#[halo(why = "Use to find pets before acting on one", rate = "100/min")]
#[utoipa::path(get, path = "/pets", tags = ["pets", "read"],
    params(("q" = Option<String>, Query, description = "Free text"),
           ("limit" = Option<u32>, Query, description = "At most this many")),
    responses((status = 200, body = Vec<Pet>)))]
async fn list_pets() -> Json<Vec<Pet>> {
    Json((0..2).map(pet).collect())
}

/// Add a pet.
#[halo(reversible = true, undo = "/pets/{id}", rate = "10/min")]
#[utoipa::path(post, path = "/pets", tags = ["pets", "write"], request_body = NewPet,
    responses((status = 201, body = Pet)), security(("bearer" = ["pets:write"])))]
async fn add_pet(Json(_pet): Json<NewPet>) -> StatusCode {
    StatusCode::CREATED
}

/// Get one pet.
#[utoipa::path(get, path = "/pets/{id}", tags = ["pets", "read"],
    params(("id" = u64, Path, description = "Pet id")),
    responses((status = 200, body = Pet), (status = 404)))]
async fn get_pet(Path(id): Path<u64>) -> Json<Pet> {
    Json(pet(id))
}

/// Delete a pet.
#[utoipa::path(delete, path = "/pets/{id}", tags = ["pets", "write", "admin"],
    params(("id" = u64, Path)), responses((status = 204)),
    security(("bearer" = ["pets:admin"])))]
async fn delete_pet(Path(_id): Path<u64>) -> StatusCode {
    StatusCode::NO_CONTENT
}

/// A category tree.
#[utoipa::path(get, path = "/categories", tags = ["categories", "read"],
    responses((status = 200, body = Category)))]
async fn categories() -> Json<Category> {
    Json(pet(0).category)
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Pet Shop", version = "1.0.0", description = "Pets for sale"),
    modifiers(&BearerScheme)
)]
struct ApiDoc;

/// The pet shop router and its OpenAPI document.
pub(crate) fn petshop() -> (axum::Router, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(list_pets, add_pet))
        .routes(routes!(get_pet, delete_pet))
        .routes(routes!(categories))
        .split_for_parts()
}

// ---------------------------------------------------------------------------------------------
// A generated OpenAPI document: the build benchmark (c) and the tag filter benchmark.
// ---------------------------------------------------------------------------------------------

/// Methods of every generated path, so `operations / 4` paths.
const METHODS: [&str; 4] = ["get", "post", "put", "delete"];

/// How many distinct request body schemas the generated operations share.
const PAYLOADS: usize = 10;

/// An OpenAPI 3.1 document with `operations` operations (four per path), every one with path,
/// query and (path-level) header parameters, a JSON request body that references shared
/// component schemas (one of them recursive), a JSON response and a `$ref`'d error response,
/// tags, security, and `x-halo-why` / `x-halo-limits` (plus `x-halo-effects` or `x-halo-next`
/// linking to a sibling operation). One path in ten carries the tag `x`. It stays within what
/// utoipa's `OpenApi` can deserialise (no `$ref`'d parameters), so both ways in can be timed.
pub(crate) fn generated_document(operations: usize) -> Value {
    let mut paths = Map::new();
    for i in 0..operations.div_ceil(METHODS.len()) {
        let template = format!("/api/r{i}/items/{{item_id}}");
        let mut item = Map::new();
        item.insert(
            "parameters".to_owned(),
            json!([{"name": "X-Request-Id", "in": "header", "required": false,
                    "schema": {"type": "string", "format": "uuid"}}]),
        );
        let first = i * METHODS.len();
        for (m, method) in METHODS.iter().enumerate().take(operations - first) {
            item.insert((*method).to_owned(), operation(i, m, method, &template));
        }
        paths.insert(template, Value::Object(item));
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Generated",
            "version": "1.0.0",
            "description": format!("{operations} generated operations")
        },
        "paths": paths,
        "components": components(),
        "security": [{"api_key": []}]
    })
}

fn operation(i: usize, m: usize, method: &str, template: &str) -> Value {
    let write = method != "get";
    let mut tags = vec![
        json!(format!("group{}", i % 25)),
        json!(if write { "write" } else { "read" }),
    ];
    if i.is_multiple_of(10) {
        tags.push(json!("x"));
    }
    let security = if write {
        json!([{"bearer": [format!("r{i}:write")]}])
    } else {
        json!([{"api_key": []}])
    };
    let mut op = json!({
        "operationId": format!("{method}_r{i}_item"),
        "summary": format!("{method} an item of resource {i}"),
        "description": format!("{method} an item of resource {i}.\n\nGenerated for benchmarks."),
        "tags": tags,
        "parameters": [
            {"name": "item_id", "in": "path", "required": true,
             "description": "Item id", "schema": {"type": "integer", "format": "int64", "minimum": 1}},
            {"name": "limit", "in": "query", "required": false,
             "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
            {"name": "q", "in": "query", "required": false,
             "schema": {"type": "string", "maxLength": 64}}
        ],
        "requestBody": {
            "required": true,
            "content": {"application/json": {"schema": {
                "$ref": format!("#/components/schemas/Payload{}", (i + m) % PAYLOADS)
            }}}
        },
        "responses": {
            "200": {"description": "The item", "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Order"}}}},
            "404": {"$ref": "#/components/responses/NotFound"}
        },
        "security": security,
        "x-halo-why": format!("Use to {method} an item of resource {i}"),
        "x-halo-limits": {"rate": "10/minute"}
    });
    let extra = match method {
        "post" => Some((
            "x-halo-effects",
            json!({"reversible": true, "undo": format!("DELETE {template}")}),
        )),
        "get" => Some((
            "x-halo-next",
            json!([{"when": "200", "suggest": format!("PUT {template}")}]),
        )),
        _ => None,
    };
    if let (Some((key, value)), Value::Object(op)) = (extra, &mut op) {
        op.insert(key.to_owned(), value);
    }
    op
}

fn components() -> Value {
    let mut schemas = Map::new();
    schemas.insert(
        "Money".to_owned(),
        json!({"type": "object", "required": ["amount", "currency"], "properties": {
            "amount": {"type": "integer", "format": "int64"},
            "currency": {"type": "string", "enum": ["EUR", "USD", "GBP"]}}}),
    );
    schemas.insert(
        "Address".to_owned(),
        json!({"type": "object", "properties": {
            "line1": {"type": "string"}, "city": {"type": "string"},
            "country": {"type": "string", "minLength": 2, "maxLength": 2}}}),
    );
    schemas.insert(
        "Category".to_owned(),
        json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Category"}}}}),
    );
    schemas.insert(
        "LineItem".to_owned(),
        json!({"type": "object", "required": ["sku", "quantity"], "properties": {
            "sku": {"type": "string"},
            "quantity": {"type": "integer", "minimum": 1},
            "price": {"$ref": "#/components/schemas/Money"},
            "category": {"$ref": "#/components/schemas/Category"}}}),
    );
    schemas.insert(
        "Order".to_owned(),
        json!({"type": "object", "required": ["id", "items"], "properties": {
            "id": {"type": "integer", "format": "int64"},
            "items": {"type": "array", "items": {"$ref": "#/components/schemas/LineItem"}},
            "shipping": {"$ref": "#/components/schemas/Address"},
            "total": {"$ref": "#/components/schemas/Money"}}}),
    );
    for k in 0..PAYLOADS {
        schemas.insert(
            format!("Payload{k}"),
            json!({"type": "object", "required": ["order"], "properties": {
                "order": {"$ref": "#/components/schemas/Order"},
                "category": {"$ref": "#/components/schemas/Category", "description": "Filed under"},
                format!("note{k}"): {"type": "string", "maxLength": 200}}}),
        );
    }
    json!({
        "schemas": schemas,
        "responses": {
            "NotFound": {"description": "No such item", "content": {"application/problem+json": {
                "schema": {"type": "object", "properties": {"title": {"type": "string"}}}}}}
        },
        "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer"},
            "api_key": {"type": "apiKey", "in": "header", "name": "X-API-Key"}
        }
    })
}
