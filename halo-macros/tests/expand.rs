//! `#[halo]` on real `#[utoipa::path]` handlers: the generated OpenAPI document carries exactly
//! the `x-halo-*` extensions asked for.
#![allow(
    dead_code,
    reason = "the handlers exist for their #[utoipa::path] attribute only"
)]

use halo_macros::halo;
use serde_json::{Map, Value, json};
use utoipa::OpenApi;

#[halo(why = "Use to check the service is up")]
#[utoipa::path(get, path = "/why")]
async fn why_only() {}

#[halo(
    why = "Charge a saved card",
    reversible = true,
    undo = "/api/payments/{id}/refund",
    rate = "100/hrs",
    idempotent = true,
    idempotency_key = "Idempotency-Key",
    next(when = "status=pending", suggest = "/api/payments/confirm"),
    next(when = "status=failed", suggest = "/api/payments/retry"),
    example(input = { "amount": 1200, "currency": "EUR" }, output = { "status": "paid", "id": 7 }),
    example(input = {}, output = ["a", 1, null]),
    example(input = { "amount": 0 }),
    retry = true,
    backoff = "exponential",
    timeout_ms = 2000,
    fallback = "/api/payments/charge-later",
    circuit = "3/2m/1",
    signed = true,
    jwks = "https://pay.example/.well-known/jwks.json",
    trace_header = "traceparent",
    explain = false,
    status = "deprecated",
    sunset = "2027-02-28",
    replace_with = "/api/v2/payments/charge",
    stream = true,
    locale("zh", name = "扣款", description = "从已保存的卡扣款", why = "订单确认后使用"),
    locale("pt-BR", why = "Use após a confirmação do pedido"),
)]
#[utoipa::path(post, path = "/charge", tag = "payments", responses((status = 200, description = "charged")))]
async fn every_key() {}

#[halo(why = "Merged", rate = "5/m")]
#[utoipa::path(get, path = "/merged", extensions(("x-team" = json!("a")), ("x-owner" = json!({"id": 1}))))]
async fn merged() {}

#[halo(reversible = false)]
#[utoipa::path(
    delete,
    path = "/merged-last",
    extensions(("x-ignored" = json!(1))),
    extensions(("x-team" = json!("b")),),
)]
async fn merged_into_last_group() {}

#[halo(stream = false, idempotent = false)]
#[utoipa::path(get, path = "/no-stream")]
async fn no_stream() {}

#[halo()]
#[utoipa::path(get, path = "/empty", extensions(("x-team" = json!("c"))))]
async fn empty_halo() {}

/// Doc comments and other attributes may sit around the utoipa attribute.
#[halo(status = "sunset", sunset = "2026-01-31")]
#[allow(clippy::unused_async)]
#[utoipa::path(get, path = "/documented")]
#[inline]
async fn documented() {}

mod imported {
    use halo_macros::halo;
    use utoipa::path;

    // A bare `#[path(...)]` is ambiguous with the built-in `#[path]` (E0659): rustc asks for
    // `self::path`, which `#[halo]` recognises like `utoipa::path`.
    #[halo(why = "Imported path attribute", timeout_ms = 50)]
    #[self::path(get, path = "/imported")]
    pub(crate) async fn imported() {}
}

#[derive(OpenApi)]
#[openapi(paths(
    why_only,
    every_key,
    merged,
    merged_into_last_group,
    no_stream,
    empty_halo,
    documented,
    imported::imported
))]
struct ApiDoc;

/// The `x-*` extensions of one operation.
fn extensions(path: &str, method: &str) -> Value {
    let doc = serde_json::to_value(ApiDoc::openapi()).expect("the document serialises");
    let operation = doc["paths"][path][method]
        .as_object()
        .unwrap_or_else(|| panic!("{method} {path} missing"));
    let extensions: Map<String, Value> = operation
        .iter()
        .filter(|(key, _)| key.starts_with("x-"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Value::Object(extensions)
}

#[test]
fn why_alone_writes_one_extension() {
    assert_eq!(
        extensions("/why", "get"),
        json!({ "x-halo-why": "Use to check the service is up" })
    );
}

#[test]
fn every_key_writes_its_group() {
    let expected = json!({
        "x-halo-why": "Charge a saved card",
        "x-halo-effects": { "reversible": true, "undo": "/api/payments/{id}/refund" },
        "x-halo-limits": { "rate": "100/hour", "idempotent": true, "idempotency_key": "Idempotency-Key" },
        "x-halo-next": [
            { "when": "status=pending", "suggest": "/api/payments/confirm" },
            { "when": "status=failed", "suggest": "/api/payments/retry" }
        ],
        "x-halo-examples": [
            { "input": { "amount": 1200, "currency": "EUR" }, "output": { "status": "paid", "id": 7 } },
            { "input": {}, "output": ["a", 1, null] },
            { "input": { "amount": 0 } }
        ],
        "x-halo-resilience": {
            "retry": true,
            "backoff": "exponential",
            "timeout_ms": 2000,
            "fallback": "/api/payments/charge-later",
            "circuit": { "failures": 3, "cool_down_ms": 120000, "successes": 1 }
        },
        "x-halo-trust": { "signed": true, "jwks": "https://pay.example/.well-known/jwks.json" },
        "x-halo-observe": { "trace_header": "traceparent", "explain": false },
        "x-halo-lifecycle": {
            "status": "deprecated",
            "sunset": "2027-02-28",
            "replace_with": "/api/v2/payments/charge"
        },
        "x-halo-stream": { "events": ["tool_progress"] },
        "x-halo-i18n": {
            "zh": { "name": "扣款", "description": "从已保存的卡扣款", "why": "订单确认后使用" },
            "pt-BR": { "why": "Use após a confirmação do pedido" }
        }
    });
    assert_eq!(extensions("/charge", "post"), expected);
}

#[test]
fn every_key_keeps_the_rest_of_the_utoipa_attribute() {
    let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
    let operation = &doc["paths"]["/charge"]["post"];
    assert_eq!(operation["tags"], json!(["payments"]));
    assert_eq!(
        operation["responses"]["200"]["description"],
        json!("charged")
    );
}

#[test]
fn entries_merge_into_the_users_extensions_group() {
    let expected = json!({
        "x-team": "a",
        "x-owner": { "id": 1 },
        "x-halo-why": "Merged",
        "x-halo-limits": { "rate": "5/minute" }
    });
    assert_eq!(extensions("/merged", "get"), expected);
}

#[test]
fn entries_merge_into_the_last_group_which_is_the_one_utoipa_keeps() {
    let expected = json!({ "x-team": "b", "x-halo-effects": { "reversible": false } });
    assert_eq!(extensions("/merged-last", "delete"), expected);
}

#[test]
fn stream_false_writes_nothing_but_false_flags_are_kept() {
    assert_eq!(
        extensions("/no-stream", "get"),
        json!({ "x-halo-limits": { "idempotent": false } })
    );
}

#[test]
fn empty_halo_leaves_the_users_extensions_alone() {
    assert_eq!(extensions("/empty", "get"), json!({ "x-team": "c" }));
}

#[test]
fn other_attributes_and_docs_survive() {
    let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
    let operation = &doc["paths"]["/documented"]["get"];
    assert_eq!(
        operation["summary"],
        json!("Doc comments and other attributes may sit around the utoipa attribute.")
    );
    assert_eq!(
        extensions("/documented", "get"),
        json!({ "x-halo-lifecycle": { "status": "sunset", "sunset": "2026-01-31" } })
    );
}

#[test]
fn imported_path_attribute_is_recognised() {
    assert_eq!(
        extensions("/imported", "get"),
        json!({ "x-halo-why": "Imported path attribute", "x-halo-resilience": { "timeout_ms": 50 } })
    );
}
