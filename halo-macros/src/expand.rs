//! Splicing the `x-halo-*` extensions into the `#[utoipa::path(...)]` attribute below `#[halo]`.
//!
//! utoipa 6 keeps only the last `extensions(...)` argument of a path attribute, so the entries
//! are merged into that group when the user wrote one, and appended as a new group otherwise.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, LitStr, Meta};

use crate::extensions::{Extension, extensions};
use crate::parse::HaloArgs;

/// `#[halo(attr)] item` → `item` with its utoipa attribute extended; on error the item is
/// re-emitted unchanged next to the error, so the error is the only one the user sees.
pub(crate) fn halo(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr, item.clone()) {
        Ok(expanded) => expanded,
        Err(error) => {
            let error = error.into_compile_error();
            quote!(#error #item)
        }
    }
}

const NO_PATH_ATTRIBUTE: &str = "`#[halo(...)]` must be placed above `#[utoipa::path(...)]`, \
    but no utoipa path attribute follows it (attributes expand top-down: one written above \
    `#[halo]` has already expanded and cannot be extended)";

fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let args = syn::parse2::<HaloArgs>(attr)?;
    let mut item = syn::parse2::<AttributedItem>(item)?;
    let path_attr = item.attrs.iter_mut().find(|attr| is_utoipa_path(attr));
    let path_attr =
        path_attr.ok_or_else(|| syn::Error::new(Span::call_site(), NO_PATH_ATTRIBUTE))?;
    let ours = extensions(&args);
    if !ours.is_empty() {
        splice(path_attr, &ours)?;
    }
    Ok(item.into_token_stream())
}

/// An item seen as its outer attributes plus everything else, which is re-emitted untouched.
struct AttributedItem {
    attrs: Vec<Attribute>,
    rest: TokenStream,
}

impl Parse for AttributedItem {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        Ok(Self {
            attrs: input.call(Attribute::parse_outer)?,
            rest: input.parse()?,
        })
    }
}

impl ToTokens for AttributedItem {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for attr in &self.attrs {
            attr.to_tokens(tokens);
        }
        self.rest.to_tokens(tokens);
    }
}

/// The utoipa path attribute: a list attribute whose path ends in `path`: `#[utoipa::path(...)]`,
/// `#[::utoipa::path(...)]`, or after `use utoipa::path;` the `#[self::path(...)]` that rustc asks
/// for (a bare `#[path(...)]` is ambiguous with the built-in `#[path = "..."]` of modules, E0659).
fn is_utoipa_path(attr: &Attribute) -> bool {
    let last = attr.path().segments.last();
    last.is_some_and(|segment| segment.ident == "path") && matches!(attr.meta, Meta::List(_))
}

/// Adds `ours` to the attribute's last `extensions(...)` group, or appends a new group.
fn splice(attr: &mut Attribute, ours: &[Extension]) -> syn::Result<()> {
    let Meta::List(list) = &mut attr.meta else {
        return Ok(()); // `is_utoipa_path` only accepts lists
    };
    let mut args = split_commas(list.tokens.clone());
    match args.iter_mut().rev().find_map(|arg| extensions_group(arg)) {
        Some(group) => merge(group, ours)?,
        None => args.push(quote!(extensions(#(#ours),*)).into_iter().collect()),
    }
    list.tokens = join_commas(args.into_iter().map(TokenStream::from_iter));
    Ok(())
}

/// The tokens of one argument between top-level commas.
type Arg = Vec<TokenTree>;

/// Splits at top-level commas. Commas of generics (`Vec<A, B>`) split too, but `join_commas`
/// puts them back, and such pieces never look like `extensions(...)`.
fn split_commas(tokens: TokenStream) -> Vec<Arg> {
    let mut args = Vec::new();
    let mut current = Arg::new();
    for token in tokens {
        match token {
            TokenTree::Punct(punct) if punct.as_char() == ',' => {
                args.push(std::mem::take(&mut current));
            }
            other => current.push(other),
        }
    }
    args.push(current);
    args.retain(|arg| !arg.is_empty());
    args
}

fn join_commas(items: impl Iterator<Item = TokenStream>) -> TokenStream {
    quote!(#(#items),*)
}

/// The `( ... )` of an argument written `extensions( ... )`.
fn extensions_group(arg: &mut [TokenTree]) -> Option<&mut Group> {
    match arg {
        [TokenTree::Ident(name), TokenTree::Group(group)]
            if name == "extensions" && group.delimiter() == Delimiter::Parenthesis =>
        {
            Some(group)
        }
        _ => None,
    }
}

/// The user's entries first, then ours.
fn merge(group: &mut Group, ours: &[Extension]) -> syn::Result<()> {
    let theirs = split_commas(group.stream());
    reject_overlap(&theirs, ours)?;
    let entries = theirs
        .into_iter()
        .map(TokenStream::from_iter)
        .chain(ours.iter().map(ToTokens::to_token_stream));
    let mut merged = Group::new(Delimiter::Parenthesis, join_commas(entries));
    merged.set_span(group.span());
    *group = merged;
    Ok(())
}

/// A name written both by hand and by `#[halo]` would be silently overwritten: refuse it.
fn reject_overlap(theirs: &[Arg], ours: &[Extension]) -> syn::Result<()> {
    for name in theirs.iter().filter_map(|entry| entry_name(entry)) {
        if ours.iter().any(|extension| extension.name == name.value()) {
            let message = format!(
                "extension {:?} is also written by `#[halo(...)]`; set it in one place only",
                name.value()
            );
            return Err(syn::Error::new(name.span(), message));
        }
    }
    Ok(())
}

/// The `"name"` of an entry written `("name" = json!(...))`.
fn entry_name(entry: &[TokenTree]) -> Option<LitStr> {
    let [TokenTree::Group(group)] = entry else {
        return None;
    };
    let first = group.stream().into_iter().next()?;
    syn::parse2::<LitStr>(first.into_token_stream()).ok()
}
