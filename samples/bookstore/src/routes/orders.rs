//! Orders: place an order for books, read it back.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::LOCATION;
use axum::response::IntoResponse;
use halo_axum::{ValidJson, halo};

use crate::error::{ApiError, ApiPath, ApiResult, FieldError, Problem};
use crate::model::{NewOrder, Order, OrderItem, OrderStatus};
use crate::store::AppState;

/// Rounds an amount to whole cents.
pub(crate) fn cents(amount: f64) -> f64 {
    (amount * 100.0).round() / 100.0
}

/// Place an order.
///
/// Prices the requested books at today's prices and creates an order in `pending_payment`;
/// charge it next with `POST /api/payments/charge`. Send an `Idempotency-Key` header so that a
/// retried request does not place a second order.
#[halo(
    why = "Use when the customer has decided what to buy; it does not take payment (charge_payment \
           does) and does not check stock (get_stock does)",
    reversible = false,
    idempotency_key = "Idempotency-Key",
    next(when = "status=pending_payment", suggest = "/api/payments/charge"),
    next(when = "status=paid", suggest = "/api/orders/{id}"),
    example(
        input = { "customer_email": "ada@example.com", "items": [{ "book_id": 1, "quantity": 2 }] },
        output = { "id": 1001, "status": "pending_payment", "customer_email": "ada@example.com",
                   "items": [{ "book_id": 1, "title": "Dune", "quantity": 2, "unit_price": 10.99 }],
                   "total": 21.98, "currency": "EUR" }
    ),
    locale("zh", name = "创建订单", description = "按当前价格为所选图书创建一个待付款订单。",
           why = "顾客决定购买时使用；它不收款（收款用 charge_payment）"),
)]
#[utoipa::path(
    post,
    path = "/api/orders",
    tags = ["orders", "write"],
    params(("Idempotency-Key" = Option<String>, Header, description = "A unique key per order attempt, e.g. a UUID; a retry with the same key returns the first order")),
    request_body = NewOrder,
    responses(
        (status = 201, description = "The order, waiting for payment", body = Order, headers(("Location" = String, description = "The order's URL"))),
        (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks `orders:write`", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The order is invalid", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["orders:write"]))
)]
pub(crate) async fn create_order(
    State(state): State<AppState>,
    ValidJson(request): ValidJson<NewOrder>,
) -> ApiResult<impl IntoResponse> {
    let mut errors = Vec::new();
    let email = request.customer_email.trim();
    if !email
        .split_once('@')
        .is_some_and(|(user, host)| !user.is_empty() && host.contains('.'))
    {
        errors.push(FieldError::new(
            "/customer_email",
            "must be an email address",
        ));
    }
    let mut store = state.write();
    let mut items = Vec::new();
    for (index, line) in request.items.iter().enumerate() {
        match store.books.get(&line.book_id) {
            Some(book) => items.push(OrderItem {
                book_id: book.id,
                title: book.title.clone(),
                quantity: line.quantity,
                unit_price: book.price,
            }),
            None => errors.push(FieldError::new(
                format!("/items/{index}/book_id"),
                format!("no book has the id {}", line.book_id),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let total = cents(
        items
            .iter()
            .map(|item| item.unit_price * f64::from(item.quantity))
            .sum(),
    );
    let order = Order {
        id: store.next_order_id(),
        status: OrderStatus::PendingPayment,
        customer_email: email.to_owned(),
        items,
        total,
        currency: "EUR".to_owned(),
    };
    store.orders.insert(order.id, order.clone());
    Ok((
        StatusCode::CREATED,
        [(LOCATION, format!("/api/orders/{}", order.id))],
        Json(order),
    ))
}

/// Get an order.
///
/// Returns the order with its lines, total and status (`pending_payment`, `paid` or `refunded`).
#[halo(
    why = "Use to check whether an order has been paid or refunded, or to read its total before charging",
    idempotent = true,
    next(when = "status=pending_payment", suggest = "/api/payments/charge")
)]
#[utoipa::path(
    get,
    path = "/api/orders/{id}",
    tags = ["orders", "read"],
    params(("id" = u64, Path, description = "The order's id", example = 1001)),
    responses(
        (status = 200, description = "The order", body = Order),
        (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The credentials lack `orders:read`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No order has this id", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["orders:read"]))
)]
pub(crate) async fn get_order(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<u64>,
) -> ApiResult<Json<Order>> {
    let store = state.read();
    store
        .orders
        .get(&id)
        .cloned()
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no order has the id {id}")))
}
