//! The example of the macro's docs, compiled and checked end to end.

use halo_macros::halo;
use utoipa::OpenApi;

/// Charge a customer's saved card.
#[halo(
    why = "Use right after order confirmation; prefer authorise when the amount may change",
    reversible = true, undo = "/api/payments/{id}/refund",
    rate = "100/hour", idempotent = true, idempotency_key = "Idempotency-Key",
    next(when = "status=pending", suggest = "/api/payments/confirm"),
    example(input = { "amount": 1200, "currency": "EUR" }, output = { "status": "paid" }),
    retry = true, backoff = "exponential", timeout_ms = 2000, fallback = "/api/payments/queue",
    signed = false, jwks = "https://pay.example/jwks.json",
    trace_header = "traceparent", explain = true,
    status = "active", sunset = "2030-01-01", replace_with = "/api/v2/payments/charge",
    stream = true,
    locale("zh", name = "扣款", why = "订单确认后使用"),
)]
#[utoipa::path(
    post,
    path = "/api/payments/charge",
    tags = ["payments", "write"],
    responses((status = 200, description = "charged")),
    extensions(("x-team" = json!("payments"))),
)]
async fn charge() {}

#[derive(OpenApi)]
#[openapi(paths(charge))]
struct ApiDoc;

fn main() {
    let _ = charge();
    let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
    let operation = &doc["paths"]["/api/payments/charge"]["post"];
    assert_eq!(operation["x-team"], "payments");
    assert_eq!(operation["x-halo-limits"]["rate"], "100/hour");
    assert_eq!(operation["x-halo-stream"]["events"][0], "tool_progress");
    assert_eq!(operation["x-halo-i18n"]["zh"]["name"], "扣款");
    assert_eq!(operation["x-halo-examples"][0]["output"]["status"], "paid");
}
