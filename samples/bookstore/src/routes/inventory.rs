//! Warehouse stock: read stock levels, hold copies, release holds. Needs the `inventory` role,
//! which the API key holds.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use halo_axum::{ValidJson, halo};

use crate::error::{ApiError, ApiPath, ApiResult, Problem};
use crate::model::{ReleaseRequest, Reservation, ReservationStatus, ReserveRequest, StockLevel};
use crate::store::{AppState, Stock};

const WAREHOUSE: &str = "Lisbon-1";

fn level(sku: &str, stock: Stock) -> StockLevel {
    StockLevel {
        sku: sku.to_owned(),
        on_hand: stock.on_hand,
        reserved: stock.reserved,
        available: stock.on_hand.saturating_sub(stock.reserved),
        warehouse: WAREHOUSE.to_owned(),
    }
}

fn no_sku(sku: &str) -> ApiError {
    ApiError::not_found(format!(
        "no stock record for the SKU {sku:?}; the SKU is the book's ISBN-13"
    ))
}

/// Get the stock level of a SKU.
///
/// Returns copies on hand, copies held by reservations, and copies still available.
#[halo(
    why = "Use before reserve_stock or create_order to check that enough copies are available",
    idempotent = true,
    retry = true,
    backoff = "linear"
)]
#[utoipa::path(
    get,
    path = "/api/inventory/{sku}",
    tags = ["inventory", "read"],
    params(("sku" = String, Path, description = "The SKU: the book's ISBN-13", example = "9780441172719")),
    responses(
        (status = 200, description = "The stock level", body = StockLevel),
        (status = 401, description = "No valid API key", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The credentials lack the `inventory` role", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown SKU", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []), ("bearer" = ["inventory"]))
)]
pub(crate) async fn get_stock(
    State(state): State<AppState>,
    ApiPath(sku): ApiPath<String>,
) -> ApiResult<Json<StockLevel>> {
    let store = state.read();
    store
        .stock
        .get(&sku)
        .map(|stock| Json(level(&sku, *stock)))
        .ok_or_else(|| no_sku(&sku))
}

/// Hold copies of a SKU.
///
/// Reserves copies so that they cannot be sold to anyone else; answers `201` with the
/// reservation, or `409` when not enough copies are available.
#[halo(
    why = "Use to hold copies while the customer decides; release the hold with release_stock \
           if they do not buy",
    reversible = true,
    undo = "/api/inventory/{sku}/release",
    rates("10/minute per sku"),
    next(when = "status=held", suggest = "/api/orders"),
    example(
        input = { "sku": "9780441172719", "quantity": 2 },
        output = { "reservation_id": "rsv_1", "sku": "9780441172719", "quantity": 2, "status": "held" }
    ),
)]
#[utoipa::path(
    post,
    path = "/api/inventory/{sku}/reserve",
    tags = ["inventory", "write"],
    params(("sku" = String, Path, description = "The SKU: the book's ISBN-13", example = "9780441172719")),
    request_body = ReserveRequest,
    responses(
        (status = 201, description = "The copies are held", body = Reservation),
        (status = 401, description = "No valid API key", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The credentials lack the `inventory` role", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown SKU", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Not enough copies available", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The quantity is out of range", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []), ("bearer" = ["inventory"]))
)]
pub(crate) async fn reserve_stock(
    State(state): State<AppState>,
    ApiPath(sku): ApiPath<String>,
    ValidJson(request): ValidJson<ReserveRequest>,
) -> ApiResult<(StatusCode, Json<Reservation>)> {
    let mut store = state.write();
    let stock = store.stock.get(&sku).copied().ok_or_else(|| no_sku(&sku))?;
    let available = stock.on_hand.saturating_sub(stock.reserved);
    if request.quantity > available {
        return Err(ApiError::conflict(format!(
            "only {available} copies of {sku} are available, {} were asked for",
            request.quantity
        )));
    }
    store.stock.insert(
        sku.clone(),
        Stock {
            reserved: stock.reserved + request.quantity,
            ..stock
        },
    );
    let reservation = Reservation {
        reservation_id: store.next_reservation_id(),
        sku,
        quantity: request.quantity,
        status: ReservationStatus::Held,
    };
    store
        .reservations
        .insert(reservation.reservation_id.clone(), reservation.clone());
    Ok((StatusCode::CREATED, Json(reservation)))
}

/// Release a reservation.
///
/// Gives the held copies back to available stock. Releasing a reservation twice answers `409`.
#[halo(
    why = "Use to undo reserve_stock when the customer does not buy, so others can buy the copies",
    reversible = true,
    undo = "/api/inventory/{sku}/reserve",
    example(
        input = { "sku": "9780441172719", "reservation_id": "rsv_1" },
        output = { "reservation_id": "rsv_1", "sku": "9780441172719", "quantity": 2, "status": "released" }
    ),
)]
#[utoipa::path(
    post,
    path = "/api/inventory/{sku}/release",
    tags = ["inventory", "write"],
    params(("sku" = String, Path, description = "The SKU: the book's ISBN-13", example = "9780441172719")),
    request_body = ReleaseRequest,
    responses(
        (status = 200, description = "The reservation, now released", body = Reservation),
        (status = 401, description = "No valid API key", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The credentials lack the `inventory` role", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such reservation for this SKU", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The reservation was already released", body = Problem, content_type = "application/problem+json"),
    ),
    security(("api_key" = []), ("bearer" = ["inventory"]))
)]
pub(crate) async fn release_stock(
    State(state): State<AppState>,
    ApiPath(sku): ApiPath<String>,
    ValidJson(request): ValidJson<ReleaseRequest>,
) -> ApiResult<Json<Reservation>> {
    let mut store = state.write();
    let reservation = store
        .reservations
        .get(&request.reservation_id)
        .filter(|reservation| reservation.sku == sku)
        .cloned()
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "no reservation {:?} for the SKU {sku}",
                request.reservation_id
            ))
        })?;
    if reservation.status == ReservationStatus::Released {
        return Err(ApiError::conflict(format!(
            "the reservation {} was already released",
            reservation.reservation_id
        )));
    }
    if let Some(stock) = store.stock.get_mut(&sku) {
        stock.reserved = stock.reserved.saturating_sub(reservation.quantity);
    }
    let released = Reservation {
        status: ReservationStatus::Released,
        ..reservation
    };
    store
        .reservations
        .insert(released.reservation_id.clone(), released.clone());
    Ok(Json(released))
}
