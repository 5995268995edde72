//! The parser's tests: keys, values and the errors they give.

use super::*;
use quote::quote;

fn parse(tokens: TokenStream) -> syn::Result<HaloArgs> {
    syn::parse2(tokens)
}

fn error(tokens: TokenStream) -> String {
    match parse(tokens) {
        Ok(_) => panic!("expected an error"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn every_key_is_read() {
    let args = parse(quote! {
        why = "w", reversible = true, undo = "/u", approval = "required", rate = "5/min",
        rates("1000/hr per tenant", "3/minute per sku", "100/50s per tenant and sku"),
        idempotent = false,
        idempotency_key = "Idempotency-Key",
        next(when = "a", suggest = "b"), next(suggest = "d", when = "c"),
        example(input = {"a": 1}), example(input = {}, output = [1, 2]),
        retry = true, backoff = "linear", timeout_ms = 2000, fallback = "/f",
        circuit = "3/10s/1",
        signed = true, jwks = "https://j", trace_header = "traceparent", explain = false,
        status = "deprecated", sunset = "2026-12-31", replace_with = "/r", stream = true,
        locale("zh", name = "n"), locale("pt-BR", why = "y", description = "d"),
    })
    .unwrap();
    assert_eq!(args.limits.rate.as_deref(), Some("5/minute"));
    assert_eq!(args.effects.approval.as_deref(), Some("required"));
    assert_eq!(
        args.limits
            .rates
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [
            "1000/hour per tenant",
            "3/minute per sku",
            "100/50 seconds per tenant and sku"
        ]
    );
    assert_eq!(args.next.len(), 2);
    assert_eq!(args.examples.len(), 2);
    assert_eq!(args.resilience.timeout_ms, Some(2000));
    assert_eq!(
        args.resilience.circuit.map(|c| c.to_string()).as_deref(),
        Some("3/10s/1")
    );
    assert_eq!(args.locales.len(), 2);
    assert_eq!(args.stream, Some(true));
}

#[test]
fn unknown_keys_suggest_and_list() {
    let message = error(quote!(rversible = true));
    assert!(message.contains("did you mean `reversible`?"), "{message}");
    assert!(
        message.contains("valid keys are: why, reversible"),
        "{message}"
    );
}

#[test]
fn repeatable_keys_may_repeat_but_others_may_not() {
    assert!(error(quote!(why = "a", why = "b")).contains("duplicate key `why`"));
    assert!(
        error(quote!(next(when = "a", when = "b", suggest = "c"))).contains("duplicate key `when`")
    );
    assert!(
        error(quote!(locale("zh", name = "a"), locale("ZH", why = "b")))
            .contains("duplicate locale")
    );
}

#[test]
fn lists_check_their_required_keys() {
    assert!(error(quote!(next(when = "a"))).contains("requires `suggest`"));
    assert!(error(quote!(example(output = 1))).contains("requires `input`"));
    assert!(error(quote!(example(input = [1]))).contains("must be a JSON object"));
    assert!(error(quote!(example(input = {}, output = ))).contains("expects a JSON value"));
    assert!(error(quote!(locale("zh"))).contains("at least one of"));
    assert!(error(quote!(next)).contains("takes a list"));
}

#[test]
fn rates_list_checked_limits() {
    let message = error(quote!(rates("5/minute")));
    assert!(
        message.contains("invalid limit \"5/minute\" in `rates(...)`: say whose budget"),
        "{message}"
    );
    assert!(error(quote!(rates("0/minute per tool"))).contains("above zero"));
    assert!(error(quote!(rates("1/s per tool and sku"))).contains("`tool` cannot be combined"));
    assert!(error(quote!(rates("1/s per tenant and"))).contains("`and` must be followed"));
    assert!(error(quote!(rates())).contains("at least one limit"));
    assert!(error(quote!(rates(5))).contains("lists strings"));
    assert!(error(quote!(rates = "5/minute per tool")).contains("takes a list"));
    assert!(
        error(quote!(rates("1/s per tool"), rates("2/s per tool")))
            .contains("duplicate key `rates`")
    );
}

#[test]
fn wrong_literal_types_say_what_is_expected() {
    let message = error(quote!(reversible = "yes"));
    assert_eq!(
        message,
        "`reversible` expects a boolean literal, e.g. `reversible = true`, found a string"
    );
    assert!(error(quote!(timeout_ms = "x")).contains("expects a positive integer literal"));
    assert!(error(quote!(timeout_ms = 0)).contains("greater than 0"));
    assert!(error(quote!(circuit = 5)).contains("expects a string literal"));
    let message = error(quote!(circuit = "0/30s/2"));
    assert!(
        message.contains("invalid `circuit` \"0/30s/2\""),
        "{message}"
    );
    assert!(error(quote!(circuit = "5/30/2")).contains("cool-down"));
    assert!(error(quote!(circuit = "5/0s/2")).contains("longer than zero"));
    assert!(error(quote!(why = 1)).contains("expects a string literal"));
    assert!(error(quote!(why = "  ")).contains("cannot be empty"));
    assert!(error(quote!(stream)).contains("expected `=` after `stream`"));
}

#[test]
fn approval_is_required_or_an_error() {
    let message = error(quote!(approval = "maybe"));
    assert!(message.contains("required"), "{message}");
    assert!(error(quote!(approval = true)).contains("`approval`"));
}
