//! Reading `#[halo(...)]` arguments into [`HaloArgs`], checking keys and value types.
//!
//! Every argument list (`#[halo(...)]`, `next(...)`, `example(...)`, `locale(...)`) is read by
//! [`parse_keyed`] from a table of [`Key`]s; the table is the single source of the valid keys
//! listed in error messages.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseBuffer, ParseStream};
use syn::{Ident, Lit, LitStr, Token, parenthesized, token};

use crate::validate;

/// Everything one `#[halo(...)]` says about an operation, checked.
#[derive(Default)]
pub(crate) struct HaloArgs {
    pub(crate) why: Option<String>,
    pub(crate) effects: Effects,
    pub(crate) limits: Limits,
    pub(crate) next: Vec<Next>,
    pub(crate) examples: Vec<Example>,
    pub(crate) resilience: Resilience,
    pub(crate) trust: Trust,
    pub(crate) observe: Observe,
    pub(crate) lifecycle: Lifecycle,
    pub(crate) stream: Option<bool>,
    pub(crate) locales: Vec<Locale>,
}

/// `reversible`, `undo`, `approval`
#[derive(Default)]
pub(crate) struct Effects {
    pub(crate) reversible: Option<bool>,
    pub(crate) undo: Option<String>,
    pub(crate) approval: Option<String>,
}

/// `rate` (canonical `N/unit`), `rates(...)` (limits with a dimension), `idempotent`,
/// `idempotency_key`
#[derive(Default)]
pub(crate) struct Limits {
    pub(crate) rate: Option<String>,
    pub(crate) rates: Option<Vec<halo_protocol::Limit>>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) idempotency_key: Option<String>,
}

/// One `next(when = "...", suggest = "...")`.
#[derive(Default)]
pub(crate) struct Next {
    pub(crate) when: Option<String>,
    pub(crate) suggest: Option<String>,
}

/// One `example(input = {...}, output = ...)`: the user's json! tokens, passed through.
#[derive(Default)]
pub(crate) struct Example {
    pub(crate) input: Option<TokenStream>,
    pub(crate) output: Option<TokenStream>,
}

/// `retry`, `backoff`, `timeout_ms`, `fallback`, `circuit` (`"failures/cool-down/successes"`)
#[derive(Default)]
pub(crate) struct Resilience {
    pub(crate) retry: Option<bool>,
    pub(crate) backoff: Option<String>,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) fallback: Option<String>,
    pub(crate) circuit: Option<halo_protocol::Circuit>,
}

/// `signed`, `jwks`
#[derive(Default)]
pub(crate) struct Trust {
    pub(crate) signed: Option<bool>,
    pub(crate) jwks: Option<String>,
}

/// `trace_header`, `explain`
#[derive(Default)]
pub(crate) struct Observe {
    pub(crate) trace_header: Option<String>,
    pub(crate) explain: Option<bool>,
}

/// `status`, `sunset`, `replace_with`
#[derive(Default)]
pub(crate) struct Lifecycle {
    pub(crate) status: Option<String>,
    pub(crate) sunset: Option<String>,
    pub(crate) replace_with: Option<String>,
}

/// One `locale("tag", name = "...", description = "...", why = "...")`.
pub(crate) struct Locale {
    pub(crate) tag: String,
    tag_span: Span,
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) why: Option<String>,
}

const BACKOFFS: &[&str] = &["exponential", "linear", "none"];
const STATUSES: &[&str] = &["active", "deprecated", "sunset"];

/// The keys of `#[halo(...)]`, in the order the docs list them.
const HALO_KEYS: &[Key<HaloArgs>] = &[
    Key::once("why", |a, k, i| put(&mut a.why, text(k, i))),
    Key::once("reversible", |a, k, i| {
        put(&mut a.effects.reversible, boolean(k, i))
    }),
    Key::once("undo", |a, k, i| put(&mut a.effects.undo, text(k, i))),
    Key::once("approval", |a, k, i| {
        let choices = |s: &str| validate::one_of(s, &["required"]);
        put(
            &mut a.effects.approval,
            checked(k, i, "\"required\"", choices),
        )
    }),
    Key::once("rate", |a, k, i| {
        put(
            &mut a.limits.rate,
            checked(k, i, "\"5/minute\"", validate::rate),
        )
    }),
    Key::once("rates", |a, k, i| put(&mut a.limits.rates, rates(k, i))),
    Key::once("idempotent", |a, k, i| {
        put(&mut a.limits.idempotent, boolean(k, i))
    }),
    Key::once("idempotency_key", |a, k, i| {
        put(
            &mut a.limits.idempotency_key,
            checked(k, i, "\"Idempotency-Key\"", validate::header_name),
        )
    }),
    Key::many("next", |a, k, i| push(&mut a.next, next(k, i))),
    Key::many("example", |a, k, i| push(&mut a.examples, example(k, i))),
    Key::once("retry", |a, k, i| {
        put(&mut a.resilience.retry, boolean(k, i))
    }),
    Key::once("backoff", |a, k, i| {
        put(
            &mut a.resilience.backoff,
            checked(k, i, "\"exponential\"", |s| validate::one_of(s, BACKOFFS)),
        )
    }),
    Key::once("timeout_ms", |a, k, i| {
        put(&mut a.resilience.timeout_ms, positive_integer(k, i))
    }),
    Key::once("fallback", |a, k, i| {
        put(&mut a.resilience.fallback, text(k, i))
    }),
    Key::once("circuit", |a, k, i| {
        let canonical = checked(k, i, "\"5/30s/2\"", validate::circuit)?;
        let circuit = canonical.parse().expect("a checked circuit parses again");
        put(&mut a.resilience.circuit, Ok(circuit))
    }),
    Key::once("signed", |a, k, i| put(&mut a.trust.signed, boolean(k, i))),
    Key::once("jwks", |a, k, i| put(&mut a.trust.jwks, text(k, i))),
    Key::once("trace_header", |a, k, i| {
        put(
            &mut a.observe.trace_header,
            checked(k, i, "\"traceparent\"", validate::header_name),
        )
    }),
    Key::once("explain", |a, k, i| {
        put(&mut a.observe.explain, boolean(k, i))
    }),
    Key::once("status", |a, k, i| {
        put(
            &mut a.lifecycle.status,
            checked(k, i, "\"deprecated\"", |s| validate::one_of(s, STATUSES)),
        )
    }),
    Key::once("sunset", |a, k, i| {
        put(
            &mut a.lifecycle.sunset,
            checked(k, i, "\"2026-12-31\"", validate::date),
        )
    }),
    Key::once("replace_with", |a, k, i| {
        put(&mut a.lifecycle.replace_with, text(k, i))
    }),
    Key::once("stream", |a, k, i| put(&mut a.stream, boolean(k, i))),
    Key::many("locale", add_locale),
];

const NEXT_KEYS: &[Key<Next>] = &[
    Key::once("when", |n, k, i| put(&mut n.when, text(k, i))),
    Key::once("suggest", |n, k, i| put(&mut n.suggest, text(k, i))),
];

const EXAMPLE_KEYS: &[Key<Example>] = &[
    Key::once("input", |e, k, i| put(&mut e.input, json_object(k, i))),
    Key::once("output", |e, k, i| put(&mut e.output, json_value(k, i))),
];

const LOCALE_KEYS: &[Key<Locale>] = &[
    Key::once("name", |l, k, i| put(&mut l.name, text(k, i))),
    Key::once("description", |l, k, i| put(&mut l.description, text(k, i))),
    Key::once("why", |l, k, i| put(&mut l.why, text(k, i))),
];

impl Parse for HaloArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut args = Self::default();
        parse_keyed(input, "#[halo(...)]", HALO_KEYS, &mut args)?;
        Ok(args)
    }
}

/// Reads a key's value (everything after the key) into the target.
type Read<T> = for<'a> fn(&mut T, &Ident, ParseStream<'a>) -> syn::Result<()>;

/// One accepted key of an argument list.
struct Key<T> {
    name: &'static str,
    repeatable: bool,
    read: Read<T>,
}

impl<T> Key<T> {
    const fn once(name: &'static str, read: Read<T>) -> Self {
        Self {
            name,
            repeatable: false,
            read,
        }
    }

    const fn many(name: &'static str, read: Read<T>) -> Self {
        Self {
            name,
            repeatable: true,
            read,
        }
    }
}

/// Reads `key = value, key(...), ...` against a table of keys: unknown and duplicate keys are
/// errors on the key's span.
fn parse_keyed<T>(
    input: ParseStream<'_>,
    context: &str,
    keys: &[Key<T>],
    target: &mut T,
) -> syn::Result<()> {
    let mut seen: Vec<&str> = Vec::new();
    while !input.is_empty() {
        let ident = Ident::parse_any(input).map_err(|error| {
            syn::Error::new(
                error.span(),
                format!("expected a key of {context}; {}", valid_keys(keys)),
            )
        })?;
        let key = find_key(&ident, context, keys)?;
        if !key.repeatable && seen.contains(&key.name) {
            let message =
                format!("duplicate key `{ident}` in {context}: each key may be given at most once");
            return Err(syn::Error::new(ident.span(), message));
        }
        seen.push(key.name);
        (key.read)(target, &ident, input)?;
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
    }
    Ok(())
}

fn find_key<'k, T>(ident: &Ident, context: &str, keys: &'k [Key<T>]) -> syn::Result<&'k Key<T>> {
    let name = ident.to_string();
    keys.iter().find(|key| key.name == name).ok_or_else(|| {
        let names: Vec<&str> = keys.iter().map(|key| key.name).collect();
        let hint = validate::closest(&name, &names)
            .map(|close| format!(" (did you mean `{close}`?)"))
            .unwrap_or_default();
        let message = format!(
            "unknown key `{name}` in {context}{hint}; {}",
            valid_keys(keys)
        );
        syn::Error::new(ident.span(), message)
    })
}

fn valid_keys<T>(keys: &[Key<T>]) -> String {
    let names: Vec<&str> = keys.iter().map(|key| key.name).collect();
    format!("valid keys are: {}", names.join(", "))
}

fn put<T>(slot: &mut Option<T>, value: syn::Result<T>) -> syn::Result<()> {
    *slot = Some(value?);
    Ok(())
}

fn push<T>(list: &mut Vec<T>, value: syn::Result<T>) -> syn::Result<()> {
    list.push(value?);
    Ok(())
}

// ---- `key = literal` values ----

/// What a `key = literal` expects, for error messages.
#[derive(Clone, Copy)]
enum Expected {
    Bool,
    PositiveInt,
    /// A string literal; the example value shown in messages.
    Str(&'static str),
}

impl Expected {
    fn kind(self) -> &'static str {
        match self {
            Self::Bool => "a boolean",
            Self::PositiveInt => "a positive integer",
            Self::Str(_) => "a string",
        }
    }

    fn example(self) -> &'static str {
        match self {
            Self::Bool => "true",
            Self::PositiveInt => "2000",
            Self::Str(example) => example,
        }
    }

    /// "`key` expects a boolean literal, e.g. `key = true`, found a string"
    fn error(self, key: &Ident, span: Span, found: Option<&Lit>) -> syn::Error {
        let (kind, example) = (self.kind(), self.example());
        let found = found
            .map(|lit| format!(", found {}", describe(lit)))
            .unwrap_or_default();
        syn::Error::new(
            span,
            format!("`{key}` expects {kind} literal, e.g. `{key} = {example}`{found}"),
        )
    }
}

fn describe(lit: &Lit) -> &'static str {
    match lit {
        Lit::Str(_) => "a string",
        Lit::Bool(_) => "a boolean",
        Lit::Int(_) => "an integer",
        Lit::Float(_) => "a float",
        _ => "another kind of literal",
    }
}

/// The `=` after `key`.
fn equals(key: &Ident, input: ParseStream<'_>, example: &str) -> syn::Result<()> {
    match input.parse::<Token![=]>() {
        Ok(_) => Ok(()),
        Err(_) => Err(syn::Error::new(
            key.span(),
            format!("expected `=` after `{key}`: write `{key} = {example}`"),
        )),
    }
}

/// `= <literal>`, with errors that say what `key` expects.
fn assigned_literal(key: &Ident, input: ParseStream<'_>, expected: Expected) -> syn::Result<Lit> {
    equals(key, input, expected.example())?;
    input
        .parse::<Lit>()
        .map_err(|error| expected.error(key, error.span(), None))
}

fn boolean(key: &Ident, input: ParseStream<'_>) -> syn::Result<bool> {
    match assigned_literal(key, input, Expected::Bool)? {
        Lit::Bool(lit) => Ok(lit.value),
        other => Err(Expected::Bool.error(key, other.span(), Some(&other))),
    }
}

fn positive_integer(key: &Ident, input: ParseStream<'_>) -> syn::Result<u64> {
    let lit = match assigned_literal(key, input, Expected::PositiveInt)? {
        Lit::Int(lit) => lit,
        other => return Err(Expected::PositiveInt.error(key, other.span(), Some(&other))),
    };
    match lit.base10_parse::<u64>() {
        Ok(0) => Err(syn::Error::new(
            lit.span(),
            format!("`{key}` must be greater than 0"),
        )),
        Ok(value) => Ok(value),
        Err(error) => Err(syn::Error::new(lit.span(), format!("`{key}`: {error}"))),
    }
}

fn string(key: &Ident, input: ParseStream<'_>, example: &'static str) -> syn::Result<LitStr> {
    let expected = Expected::Str(example);
    match assigned_literal(key, input, expected)? {
        Lit::Str(lit) => Ok(lit),
        other => Err(expected.error(key, other.span(), Some(&other))),
    }
}

/// A string literal that `check` accepts; its canonical form is returned.
fn checked(
    key: &Ident,
    input: ParseStream<'_>,
    example: &'static str,
    check: impl FnOnce(&str) -> Result<String, String>,
) -> syn::Result<String> {
    let lit = string(key, input, example)?;
    let value = lit.value();
    check(&value).map_err(|reason| {
        syn::Error::new(lit.span(), format!("invalid `{key}` {value:?}: {reason}"))
    })
}

/// Free text: a non-empty string literal.
fn text(key: &Ident, input: ParseStream<'_>) -> syn::Result<String> {
    checked(key, input, "\"...\"", validate::non_empty)
}

// ---- `key(...)` lists ----

/// The `(...)` after `key`, or an error showing how the list is written.
fn list<'a>(key: &Ident, input: ParseStream<'a>, usage: &str) -> syn::Result<ParseBuffer<'a>> {
    if !input.peek(token::Paren) {
        return Err(syn::Error::new(
            key.span(),
            format!("`{key}` takes a list: write `{usage}`"),
        ));
    }
    let content;
    parenthesized!(content in input);
    Ok(content)
}

fn required<T>(value: Option<T>, key: &Ident, field: &str, usage: &str) -> syn::Result<T> {
    value.ok_or_else(|| {
        syn::Error::new(
            key.span(),
            format!("`{key}(...)` requires `{field}`: write `{usage}`"),
        )
    })
}

fn next(key: &Ident, input: ParseStream<'_>) -> syn::Result<Next> {
    const USAGE: &str = "next(when = \"...\", suggest = \"...\")";
    let content = list(key, input, USAGE)?;
    let mut next = Next::default();
    parse_keyed(&content, "`next(...)`", NEXT_KEYS, &mut next)?;
    required(next.when.as_ref(), key, "when", USAGE)?;
    required(next.suggest.as_ref(), key, "suggest", USAGE)?;
    Ok(next)
}

fn example(key: &Ident, input: ParseStream<'_>) -> syn::Result<Example> {
    const USAGE: &str = "example(input = { \"id\": 1 }, output = { ... })";
    let content = list(key, input, USAGE)?;
    let mut example = Example::default();
    parse_keyed(&content, "`example(...)`", EXAMPLE_KEYS, &mut example)?;
    required(example.input.as_ref(), key, "input", USAGE)?;
    Ok(example)
}

/// `rates("1000/hour per tenant", "3/minute per sku", ...)`: rate limits with their
/// dimension, each checked by the parser the server uses.
fn rates(key: &Ident, input: ParseStream<'_>) -> syn::Result<Vec<halo_protocol::Limit>> {
    const USAGE: &str =
        "rates(\"1000/hour per tenant\", \"20/minute per tool\", \"3/minute per sku\")";
    let content = list(key, input, USAGE)?;
    let texts = content.parse_terminated(|item| item.parse::<LitStr>(), Token![,]);
    let texts = texts.map_err(|error| {
        syn::Error::new(
            error.span(),
            format!("`rates(...)` lists strings: write `{USAGE}`"),
        )
    })?;
    if texts.is_empty() {
        return Err(syn::Error::new(
            key.span(),
            format!("`rates(...)` needs at least one limit: write `{USAGE}`"),
        ));
    }
    texts
        .iter()
        .map(|lit| {
            lit.value()
                .parse::<halo_protocol::Limit>()
                .map_err(|error| {
                    let message = format!(
                        "invalid limit {:?} in `rates(...)`: {}",
                        lit.value(),
                        error.reason()
                    );
                    syn::Error::new(lit.span(), message)
                })
        })
        .collect()
}

/// `= { ... }`: a JSON object in json! syntax, kept as tokens.
fn json_object(key: &Ident, input: ParseStream<'_>) -> syn::Result<TokenStream> {
    equals(key, input, "{ \"id\": 1 }")?;
    let expected =
        || format!("`{key}` must be a JSON object in braces, e.g. `{key} = {{ \"id\": 1 }}`");
    match input.parse::<TokenTree>() {
        Ok(TokenTree::Group(group)) if group.delimiter() == Delimiter::Brace => {
            Ok(TokenTree::Group(group).into())
        }
        Ok(other) => Err(syn::Error::new(other.span(), expected())),
        Err(error) => Err(syn::Error::new(error.span(), expected())),
    }
}

/// `= <json! value>`: any tokens up to the next top-level comma.
fn json_value(key: &Ident, input: ParseStream<'_>) -> syn::Result<TokenStream> {
    equals(key, input, "{ \"ok\": true }")?;
    let mut tokens = TokenStream::new();
    while !input.is_empty() && !input.peek(Token![,]) {
        tokens.extend([input.parse::<TokenTree>()?]);
    }
    if tokens.is_empty() {
        let message = format!(
            "`{key}` expects a JSON value in json! syntax, e.g. `{key} = {{ \"ok\": true }}`"
        );
        return Err(syn::Error::new(key.span(), message));
    }
    Ok(tokens)
}

fn add_locale(args: &mut HaloArgs, key: &Ident, input: ParseStream<'_>) -> syn::Result<()> {
    let locale = locale(key, input)?;
    if args
        .locales
        .iter()
        .any(|seen| seen.tag.eq_ignore_ascii_case(&locale.tag))
    {
        let message = format!(
            "duplicate locale {:?}: each language tag may be given once",
            locale.tag
        );
        return Err(syn::Error::new(locale.tag_span, message));
    }
    args.locales.push(locale);
    Ok(())
}

fn locale(key: &Ident, input: ParseStream<'_>) -> syn::Result<Locale> {
    const USAGE: &str = "locale(\"zh\", name = \"...\", description = \"...\", why = \"...\")";
    let content = list(key, input, USAGE)?;
    let tag = content.parse::<LitStr>().map_err(|error| {
        syn::Error::new(
            error.span(),
            format!("`locale(...)` starts with a language tag string: write `{USAGE}`"),
        )
    })?;
    let checked_tag = validate::language_tag(&tag.value()).map_err(|reason| {
        syn::Error::new(
            tag.span(),
            format!("invalid language tag {:?}: {reason}", tag.value()),
        )
    })?;
    let mut locale = Locale {
        tag: checked_tag,
        tag_span: tag.span(),
        name: None,
        description: None,
        why: None,
    };
    if !content.is_empty() {
        content.parse::<Token![,]>()?;
        parse_keyed(&content, "`locale(...)`", LOCALE_KEYS, &mut locale)?;
    }
    if locale.name.is_none() && locale.description.is_none() && locale.why.is_none() {
        let message = format!(
            "`locale({:?}, ...)` needs at least one of `name`, `description`, `why`",
            locale.tag
        );
        return Err(syn::Error::new(key.span(), message));
    }
    Ok(locale)
}

#[cfg(test)]
mod tests;
