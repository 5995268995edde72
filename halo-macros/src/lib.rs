#![doc = include_str!("../README.md")]

mod expand;
mod extensions;
mod json;
mod parse;
mod validate;

use proc_macro::TokenStream;

/// Describes an operation to LLM agents: typed HALO metadata written as `x-halo-*` extensions
/// of the `#[utoipa::path(...)]` attribute that must follow it.
///
/// Every key is optional and checked at compile time; misspelt keys, wrong literal types, bad
/// rates, dates and language tags are errors on the offending token. Entries are merged into
/// an `extensions(...)` group the attribute already has (utoipa keeps only the last one), or
/// added as a new group.
///
/// ```ignore
/// // `ignore`: a proc-macro crate's doctests cannot use utoipa; `halo_axum::halo` re-exports
/// // this macro with a compiled example.
/// use halo_macros::halo;
///
/// /// Charge a customer's saved card.
/// #[halo(
///     why = "Use right after order confirmation; prefer authorise when the amount may change",
///     reversible = true, undo = "/api/payments/{id}/refund",
///     rate = "100/hour", idempotent = true, idempotency_key = "Idempotency-Key",
///     next(when = "status=pending", suggest = "/api/payments/confirm"),
///     example(input = { "amount": 1200, "currency": "EUR" }, output = { "status": "paid" }),
///     retry = true, backoff = "exponential", timeout_ms = 2000,
///     locale("zh", name = "扣款", why = "订单确认后使用"),
/// )]
/// #[utoipa::path(post, path = "/api/payments/charge", responses((status = 200)))]
/// async fn charge() {}
/// ```
///
/// # Keys
///
/// | key(s) | value | extension |
/// |---|---|---|
/// | `why` | string | `x-halo-why`: `"..."` |
/// | `reversible`, `undo`, `approval` | bool, string, `"required"` | `x-halo-effects`: `{"reversible", "undo", "approval"}` |
/// | `rate`, `idempotent`, `idempotency_key` | `"N/unit"`, bool, header name | `x-halo-limits`: `{"rate", "idempotent", "idempotency_key"}` |
/// | `rates("..", ..)` | strings `"N/unit per caller\|tenant\|tool\|<argument>"`, or parts joined by `and` (`"100/50s per tenant and campaign_id"`), at least one | `x-halo-limits`: `{"rates": [{"rate", "per", "argument", "of"}]}` |
/// | `next(when = "..", suggest = "..")` (repeatable) | strings, both required | `x-halo-next`: `[{"when", "suggest"}]` |
/// | `example(input = {..}, output = ..)` (repeatable) | json! object, any json! value | `x-halo-examples`: `[{"input", "output"}]` |
/// | `retry`, `backoff`, `timeout_ms`, `fallback` | bool, `"exponential"`/`"linear"`/`"none"`, integer > 0, string | `x-halo-resilience`: `{"retry", "backoff", "timeout_ms", "fallback"}` |
/// | `circuit` | `"failures/cool-down/successes"`, e.g. `"5/30s/2"` (cool-down in `ms`, `s`, `m`, `h`; all above zero) | `x-halo-resilience`: `{"circuit": {"failures", "cool_down_ms", "successes"}}` |
/// | `signed`, `jwks` | bool, string | `x-halo-trust`: `{"signed", "jwks"}` |
/// | `trace_header`, `explain` | header name, bool | `x-halo-observe`: `{"trace_header", "explain"}` |
/// | `status`, `sunset`, `replace_with` | `"active"`/`"deprecated"`/`"sunset"`, `"YYYY-MM-DD"`, string | `x-halo-lifecycle`: `{"status", "sunset", "replace_with"}` |
/// | `stream` | bool | `x-halo-stream`: `{"events": ["tool_progress"]}` when `true` |
/// | `locale("tag", name = .., description = .., why = ..)` (repeatable) | BCP 47 tag, strings, at least one | `x-halo-i18n`: `{"tag": {"name", "description", "why"}}` |
///
/// Only the keys given are written; a group none of whose keys is given is left out. Rate units
/// accept `ms`, `msec`, `s`, `sec`, `m`, `min`, `h`, `hr`, `d` and plurals, after an optional
/// span (`"100/50s"`: 100 calls per 50 seconds), and are written in the long form (`"5/min"`
/// becomes `"5/minute"`, `"100/50s"` becomes `"100/50 seconds"`).
#[proc_macro_attribute]
pub fn halo(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::halo(attr.into(), item.into()).into()
}
