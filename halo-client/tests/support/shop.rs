//! The shop: the tools of the [`halo`](super::halo) server, with real handlers that count
//! their executions, and a generated API of many paths for discovery only.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use halo_axum::halo;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::halo::Recorder;

type Shared = State<Arc<Recorder>>;

fn header_text(headers: &HeaderMap, name: &str) -> Value {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map_or(Value::Null, |v| Value::String(v.to_owned()))
}

/// An item.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Item {
    /// Its name.
    pub name: String,
}

/// An order to place.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct NewOrder {
    /// What to order.
    pub item: String,
    /// How many.
    pub qty: u32,
}

/// A charge.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Charge {
    /// Amount in cents.
    pub amount: u32,
}

/// An amount to validate.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Amount {
    /// Must be positive.
    pub amount: i64,
}

/// Get one item.
#[utoipa::path(get, path = "/items/{id}", tags = ["items", "read"],
    params(("id" = String, Path, description = "Item id"),
           ("fields" = Option<String>, Query, description = "Fields to return"),
           ("X-Trace" = Option<String>, Header, description = "Correlation id")),
    responses((status = 200, description = "The item")))]
async fn get_item(
    State(recorder): Shared,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    recorder.executions.get_item.fetch_add(1, Ordering::SeqCst);
    if let Some(failure) = recorder.failure() {
        return failure;
    }
    Json(json!({"id": id, "query": query, "trace": header_text(&headers, "x-trace")}))
        .into_response()
}

/// Search items.
#[utoipa::path(get, path = "/search", tags = ["items", "read", "two words"],
    params(("q" = Option<String>, Query, description = "Free text"),
           ("tag" = Option<Vec<String>>, Query, description = "Any of these tags")),
    responses((status = 200, description = "Matches")))]
async fn search(State(recorder): Shared, RawQuery(query): RawQuery) -> Json<Value> {
    recorder.executions.search.fetch_add(1, Ordering::SeqCst);
    Json(json!({"query": query}))
}

/// Place an order (not idempotent, no idempotency key).
#[utoipa::path(post, path = "/orders", tags = ["orders", "write"], request_body = NewOrder,
    responses((status = 201, description = "Placed")))]
async fn create_order(State(recorder): Shared, Json(order): Json<NewOrder>) -> Response {
    let n = recorder
        .executions
        .create_order
        .fetch_add(1, Ordering::SeqCst)
        + 1;
    if let Some(failure) = recorder.failure() {
        return failure;
    }
    (
        StatusCode::CREATED,
        Json(json!({"order": n, "item": order.item, "qty": order.qty})),
    )
        .into_response()
}

/// Charge a card (made safe to repeat by an idempotency key).
#[halo(idempotency_key = "Idempotency-Key")]
#[utoipa::path(post, path = "/payments", tags = ["payments", "write", "R&D"],
    request_body = Charge, responses((status = 200, description = "Charged")))]
async fn pay(State(recorder): Shared, headers: HeaderMap, Json(charge): Json<Charge>) -> Response {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let stored = key
        .as_ref()
        .and_then(|key| recorder.payments.lock().unwrap().get(key).cloned());
    let body = stored.unwrap_or_else(|| {
        recorder.executions.pay.fetch_add(1, Ordering::SeqCst);
        let body =
            json!({"amount": charge.amount, "key": header_text(&headers, "idempotency-key")});
        if let Some(key) = key {
            recorder.payments.lock().unwrap().insert(key, body.clone());
        }
        body
    });
    // A failure after the side effect: the answer is lost on its way back.
    if let Some(failure) = recorder.failure() {
        return failure;
    }
    Json(body).into_response()
}

/// Replace an item.
#[utoipa::path(put, path = "/items/{id}", tags = ["items", "write"],
    params(("id" = String, Path)), request_body = Item,
    responses((status = 200, description = "Replaced")))]
async fn put_item(
    State(recorder): Shared,
    Path(id): Path<String>,
    Json(item): Json<Item>,
) -> Response {
    recorder.executions.put_item.fetch_add(1, Ordering::SeqCst);
    if let Some(failure) = recorder.failure() {
        return failure;
    }
    Json(json!({"id": id, "name": item.name})).into_response()
}

/// Delete an item.
#[utoipa::path(delete, path = "/items/{id}", tags = ["items", "write", "admin"],
    params(("id" = String, Path)), responses((status = 204, description = "Deleted")))]
async fn delete_item(State(recorder): Shared, Path(_id): Path<String>) -> StatusCode {
    recorder
        .executions
        .delete_item
        .fetch_add(1, Ordering::SeqCst);
    StatusCode::NO_CONTENT
}

/// Validate an amount: always refused with a problem document.
#[utoipa::path(post, path = "/validate", tags = ["write"], request_body = Amount,
    responses((status = 422, description = "Invalid")))]
async fn validate(State(recorder): Shared, Json(amount): Json<Amount>) -> Response {
    recorder.executions.validate.fetch_add(1, Ordering::SeqCst);
    let problem = json!({
        "type": "about:blank",
        "title": "Unprocessable Content",
        "status": 422,
        "detail": "the amount must be positive",
        "instance": "/validate",
        "errors": [{"pointer": "/amount",
                    "message": format!("{} is less than the minimum of 1", amount.amount)}]
    });
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        [(header::CONTENT_TYPE, "application/problem+json")],
        problem.to_string(),
    )
        .into_response()
}

/// Read the note, as plain text.
#[utoipa::path(get, path = "/note", tags = ["notes"],
    responses((status = 200, body = String, content_type = "text/plain")))]
async fn note(State(recorder): Shared) -> &'static str {
    recorder.executions.note.fetch_add(1, Ordering::SeqCst);
    "hello, agent"
}

/// Tag everything: the body is a whole JSON array.
#[utoipa::path(post, path = "/tags", tags = ["items", "write"], request_body = Vec<String>,
    responses((status = 200, description = "The tags")))]
async fn tag_all(State(recorder): Shared, Json(tags): Json<Vec<String>>) -> Json<Value> {
    recorder.executions.tag_all.fetch_add(1, Ordering::SeqCst);
    Json(json!({"tags": tags}))
}

/// Write a note: the body is plain text, sent raw.
#[utoipa::path(post, path = "/notes", tags = ["notes", "write"],
    request_body(content = String, content_type = "text/plain"),
    responses((status = 200, description = "What arrived")))]
async fn write_note(State(recorder): Shared, headers: HeaderMap, body: String) -> Json<Value> {
    recorder
        .executions
        .write_note
        .fetch_add(1, Ordering::SeqCst);
    Json(json!({"content_type": header_text(&headers, "content-type"), "text": body}))
}

/// Take the first item of the queue: a DELETE that is declared not idempotent.
#[halo(idempotent = false)]
#[utoipa::path(delete, path = "/queue/head", tags = ["queue", "write"],
    responses((status = 200, description = "The item taken")))]
async fn pop(State(recorder): Shared) -> Response {
    let n = recorder.executions.pop.fetch_add(1, Ordering::SeqCst) + 1;
    if let Some(failure) = recorder.failure() {
        return failure;
    }
    Json(json!({"popped": n})).into_response()
}

#[derive(OpenApi)]
#[openapi(info(
    title = "Test Shop",
    version = "1.0.0",
    description = "A shop for tests"
))]
struct ApiDoc;

/// The shop's router (needing the recorder as state) and its OpenAPI document.
pub(super) fn shop() -> (Router<Arc<Recorder>>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(get_item, put_item, delete_item))
        .routes(routes!(search))
        .routes(routes!(create_order))
        .routes(routes!(pay))
        .routes(routes!(validate))
        .routes(routes!(note))
        .routes(routes!(tag_all))
        .routes(routes!(write_note))
        .routes(routes!(pop))
        .split_for_parts()
}

/// An OpenAPI document of `paths` paths `/tools/t{i}/{id}` with GET (and DELETE when
/// `methods` is 2).
pub(super) fn many(paths: usize, methods: usize) -> Value {
    let mut items = Map::new();
    for i in 0..paths {
        let mut item = Map::new();
        for method in ["get", "delete"].into_iter().take(methods) {
            item.insert(
                method.to_owned(),
                json!({
                    "operationId": format!("{method}_t{i}"),
                    "summary": format!("{method} tool {i}"),
                    "tags": ["generated"],
                    "parameters": [
                        {"name": "id", "in": "path", "required": true,
                         "schema": {"type": "integer"}},
                        {"name": "q", "in": "query", "schema": {"type": "string"}}
                    ],
                    "responses": {"200": {"description": "ok", "content": {
                        "application/json": {"schema": {"type": "object"}}}}}
                }),
            );
        }
        items.insert(format!("/tools/t{i}/{{id}}"), Value::Object(item));
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Many", "version": "1"},
        "paths": items
    })
}
