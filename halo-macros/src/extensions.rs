//! The `x-halo-*` extensions and their JSON shapes: the one place that maps [`HaloArgs`] to what
//! the operation's OpenAPI object carries (and what the registry reads back).

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens, quote};

use crate::json::Json;
use crate::parse::{
    Effects, Example, HaloArgs, Lifecycle, Limits, Locale, Next, Observe, Resilience, Trust,
};

/// One `("x-halo-..." = json!(...))` entry of utoipa's `extensions(...)`.
pub(crate) struct Extension {
    pub(crate) name: &'static str,
    value: Json,
}

impl ToTokens for Extension {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let name = Literal::string(self.name);
        let value = &self.value;
        tokens.extend(quote!((#name = json!(#value))));
    }
}

/// The extensions `args` asks for, only those it gives.
pub(crate) fn extensions(args: &HaloArgs) -> Vec<Extension> {
    [
        ("x-halo-why", args.why.as_deref().map(Json::str)),
        ("x-halo-effects", effects(&args.effects)),
        ("x-halo-limits", limits(&args.limits)),
        (
            "x-halo-next",
            Json::array(args.next.iter().filter_map(next)),
        ),
        (
            "x-halo-examples",
            Json::array(args.examples.iter().filter_map(example)),
        ),
        ("x-halo-resilience", resilience(&args.resilience)),
        ("x-halo-trust", trust(&args.trust)),
        ("x-halo-observe", observe(&args.observe)),
        ("x-halo-lifecycle", lifecycle(&args.lifecycle)),
        ("x-halo-stream", stream(args.stream)),
        ("x-halo-i18n", Json::object(args.locales.iter().map(locale))),
    ]
    .into_iter()
    .filter_map(|(name, value)| {
        Some(Extension {
            name,
            value: value?,
        })
    })
    .collect()
}

fn text(value: &Option<String>) -> Option<Json> {
    value.as_deref().map(Json::str)
}

fn flag(value: Option<bool>) -> Option<Json> {
    value.map(Json::bool)
}

/// `{"reversible": bool, "undo": str, "approval": "required"}`
fn effects(e: &Effects) -> Option<Json> {
    Json::object([
        ("reversible", flag(e.reversible)),
        ("undo", text(&e.undo)),
        ("approval", text(&e.approval)),
    ])
}

/// `{"rate": "N/unit", "rates": [limit], "idempotent": bool, "idempotency_key": str}`
fn limits(l: &Limits) -> Option<Json> {
    let rates = l.rates.iter().flatten().filter_map(limit);
    Json::object([
        ("rate", text(&l.rate)),
        ("rates", Json::array(rates)),
        ("idempotent", flag(l.idempotent)),
        ("idempotency_key", text(&l.idempotency_key)),
    ])
}

/// `{"rate": "N/unit", "per": "caller"|"tenant"|"tool"|"argument"|"combined", "argument": str,
/// "of": [{"per", "argument"}]}`
fn limit(l: &halo_protocol::Limit) -> Option<Json> {
    let per = l.per();
    let of = match per {
        halo_protocol::Dimension::Combined(parts) => Json::array(parts.iter().filter_map(part)),
        _ => None,
    };
    Json::object([
        ("rate", Some(Json::str(&l.rate().to_string()))),
        ("per", Some(Json::str(per.as_str()))),
        ("argument", per.argument().map(Json::str)),
        ("of", of),
    ])
}

/// A part of a combined limit: `{"per": "caller"|"tenant"|"argument", "argument": str}`
fn part(p: &halo_protocol::Dimension) -> Option<Json> {
    Json::object([
        ("per", Some(Json::str(p.as_str()))),
        ("argument", p.argument().map(Json::str)),
    ])
}

/// `{"when": str, "suggest": str}`
fn next(n: &Next) -> Option<Json> {
    Json::object([("when", text(&n.when)), ("suggest", text(&n.suggest))])
}

/// `{"input": {...}, "output": any}`
fn example(e: &Example) -> Option<Json> {
    let tokens = |value: &Option<TokenStream>| value.clone().map(Json::Tokens);
    Json::object([("input", tokens(&e.input)), ("output", tokens(&e.output))])
}

/// `{"retry": bool, "backoff": "exponential"|"linear"|"none", "timeout_ms": u64, "fallback": str,
/// "circuit": {"failures": u32, "cool_down_ms": u64, "successes": u32}}`
fn resilience(r: &Resilience) -> Option<Json> {
    Json::object([
        ("retry", flag(r.retry)),
        ("backoff", text(&r.backoff)),
        ("timeout_ms", r.timeout_ms.map(Json::uint)),
        ("fallback", text(&r.fallback)),
        ("circuit", r.circuit.as_ref().and_then(circuit)),
    ])
}

/// `{"failures": u32, "cool_down_ms": u64, "successes": u32}`
fn circuit(c: &halo_protocol::Circuit) -> Option<Json> {
    let ms = u64::try_from(c.cool_down().as_millis()).unwrap_or(u64::MAX);
    Json::object([
        ("failures", Some(Json::uint(c.failures().get().into()))),
        ("cool_down_ms", Some(Json::uint(ms))),
        ("successes", Some(Json::uint(c.successes().get().into()))),
    ])
}

/// `{"signed": bool, "jwks": str}`
fn trust(t: &Trust) -> Option<Json> {
    Json::object([("signed", flag(t.signed)), ("jwks", text(&t.jwks))])
}

/// `{"trace_header": str, "explain": bool}`
fn observe(o: &Observe) -> Option<Json> {
    Json::object([
        ("trace_header", text(&o.trace_header)),
        ("explain", flag(o.explain)),
    ])
}

/// `{"status": "active"|"deprecated"|"sunset", "sunset": "YYYY-MM-DD", "replace_with": str}`
fn lifecycle(l: &Lifecycle) -> Option<Json> {
    Json::object([
        ("status", text(&l.status)),
        ("sunset", text(&l.sunset)),
        ("replace_with", text(&l.replace_with)),
    ])
}

/// `{"events": ["tool_progress"]}` when the operation streams; nothing otherwise.
fn stream(stream: Option<bool>) -> Option<Json> {
    let events = Json::array([Json::str("tool_progress")]);
    Json::object([("events", events)]).filter(|_| stream == Some(true))
}

/// `"tag": {"name": str, "description": str, "why": str}`
fn locale(l: &Locale) -> (String, Option<Json>) {
    let texts = Json::object([
        ("name", text(&l.name)),
        ("description", text(&l.description)),
        ("why", text(&l.why)),
    ]);
    (l.tag.clone(), texts)
}
