//! Payments: charge an order, refund a charge.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use halo_axum::{Principal, ValidJson, halo};

use crate::error::{ApiError, ApiPath, ApiResult, Problem};
use crate::model::{Charge, ChargeRequest, ChargeStatus, OrderStatus, Refund, RefundRequest};
use crate::routes::orders::cents;
use crate::store::AppState;

/// Charge an order.
///
/// Takes the order's total from the customer's saved payment method and marks the order `paid`.
/// The amount must equal the order's total.
#[halo(
    why = "Use right after create_order, once the customer confirms; read the amount from the order. \
           Never charge the same order twice: a charge is refunded with refund_payment",
    reversible = true,
    undo = "/api/payments/{id}/refund",
    rate = "5/minute",
    idempotent = false,
    next(when = "status=succeeded", suggest = "/api/orders/{id}"),
    example(
        input = { "order_id": 1001, "amount": 21.98, "currency": "EUR", "payment_method": "pm_card_visa" },
        output = { "id": "ch_1", "order_id": 1001, "amount": 21.98, "currency": "EUR", "status": "succeeded" }
    ),
    signed = false,
    jwks = "https://bookstore.example/.well-known/jwks.json",
    trace_header = "traceparent",
    locale("zh", name = "支付订单", description = "从顾客保存的支付方式中扣取订单总额，并将订单标记为已付款。"),
)]
#[utoipa::path(
    post,
    path = "/api/payments/charge",
    tags = ["payments", "write"],
    request_body = ChargeRequest,
    responses(
        (status = 201, description = "The charge succeeded", body = Charge),
        (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks `payments:write`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The order is not waiting for payment", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Unknown order, wrong amount or currency", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["payments:write"]))
)]
pub(crate) async fn charge_payment(
    State(state): State<AppState>,
    ValidJson(request): ValidJson<ChargeRequest>,
) -> ApiResult<(StatusCode, Json<Charge>)> {
    let mut store = state.write();
    let order = store
        .orders
        .get(&request.order_id)
        .cloned()
        .ok_or_else(|| {
            ApiError::invalid(
                "/order_id",
                format!("no order has the id {}", request.order_id),
            )
        })?;
    if order.status != OrderStatus::PendingPayment {
        return Err(ApiError::conflict(format!(
            "the order {} is not waiting for payment",
            order.id
        )));
    }
    if !request.amount.is_finite() || (cents(request.amount) - order.total).abs() > 0.001 {
        return Err(ApiError::invalid(
            "/amount",
            format!("must equal the order's total, {:.2}", order.total),
        ));
    }
    let charge = Charge {
        id: store.next_charge_id(),
        order_id: order.id,
        amount: order.total,
        currency: order.currency.clone(),
        status: ChargeStatus::Succeeded,
    };
    if let Some(order) = store.orders.get_mut(&order.id) {
        order.status = OrderStatus::Paid;
    }
    store.charges.insert(charge.id.clone(), charge.clone());
    Ok((StatusCode::CREATED, Json(charge)))
}

/// Refund a charge.
///
/// Gives the whole amount back to the customer and marks the order `refunded`. Admin only,
/// and every refund waits for an approver (`demo-admin`, at `/.well-known/halo/approvals`).
#[halo(
    why = "Use only to undo charge_payment when a customer is owed their money back; a charge can \
           be refunded once",
    reversible = false,
    approval = "required",
    example(
        input = { "id": "ch_1", "reason": "customer returned the book" },
        output = { "id": "re_1", "charge_id": "ch_1", "amount": 21.98, "reason": "customer returned the book" }
    ),
    explain = true,
    trace_header = "traceparent",
)]
#[utoipa::path(
    post,
    path = "/api/payments/{id}/refund",
    tags = ["payments", "write", "admin"],
    params(("id" = String, Path, description = "The charge's id", example = "ch_1")),
    request_body = RefundRequest,
    responses(
        (status = 200, description = "The refund", body = Refund),
        (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks `payments:admin`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No charge has this id", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The charge was already refunded", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["payments:admin"]))
)]
pub(crate) async fn refund_payment(
    caller: Principal,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ValidJson(request): ValidJson<RefundRequest>,
) -> ApiResult<Json<Refund>> {
    let reason = request.reason.trim();
    let mut store = state.write();
    let charge = store
        .charges
        .get(&id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("no charge has the id {id}")))?;
    if charge.status == ChargeStatus::Refunded {
        return Err(ApiError::conflict(format!(
            "the charge {id} was already refunded"
        )));
    }
    if let Some(charge) = store.charges.get_mut(&id) {
        charge.status = ChargeStatus::Refunded;
    }
    if let Some(order) = store.orders.get_mut(&charge.order_id) {
        order.status = OrderStatus::Refunded;
    }
    let refund = Refund {
        id: store.next_refund_id(),
        charge_id: id,
        amount: charge.amount,
        reason: reason.to_owned(),
    };
    // The audit trail: who gave money back, and why.
    tracing::info!(
        refund = %refund.id,
        charge = %refund.charge_id,
        amount = refund.amount,
        reason = %refund.reason,
        by = caller.id(),
        "charge refunded"
    );
    Ok(Json(refund))
}
