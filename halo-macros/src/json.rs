//! JSON values written as `json!` tokens: what goes inside `json!(...)` in a utoipa extension.

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens, quote};

/// A JSON value to be emitted in `serde_json::json!` syntax.
pub(crate) enum Json {
    /// A literal, or tokens the user wrote (already json! syntax).
    Tokens(TokenStream),
    Array(Vec<Self>),
    Object(Vec<(String, Self)>),
}

impl Json {
    pub(crate) fn str(value: &str) -> Self {
        Self::Tokens(Literal::string(value).into_token_stream())
    }

    pub(crate) fn bool(value: bool) -> Self {
        Self::Tokens(if value { quote!(true) } else { quote!(false) })
    }

    pub(crate) fn uint(value: u64) -> Self {
        Self::Tokens(Literal::u64_unsuffixed(value).into_token_stream())
    }

    /// An object of the fields that are present; `None` when none is.
    pub(crate) fn object<K: Into<String>>(
        fields: impl IntoIterator<Item = (K, Option<Self>)>,
    ) -> Option<Self> {
        let fields: Vec<(String, Self)> = fields
            .into_iter()
            .filter_map(|(key, value)| Some((key.into(), value?)))
            .collect();
        (!fields.is_empty()).then_some(Self::Object(fields))
    }

    /// An array of the items; `None` when there are none.
    pub(crate) fn array(items: impl IntoIterator<Item = Self>) -> Option<Self> {
        let items: Vec<Self> = items.into_iter().collect();
        (!items.is_empty()).then_some(Self::Array(items))
    }
}

impl ToTokens for Json {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            Self::Tokens(value) => value.to_tokens(tokens),
            Self::Array(items) => tokens.extend(quote!([#(#items),*])),
            Self::Object(fields) => {
                let keys = fields.iter().map(|(key, _)| Literal::string(key));
                let values = fields.iter().map(|(_, value)| value);
                tokens.extend(quote!({ #(#keys: #values),* }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_only_present_fields() {
        let object = Json::object([
            ("a", Some(Json::bool(true))),
            ("b", None),
            ("c", Some(Json::uint(3))),
        ]);
        assert_eq!(
            object.unwrap().to_token_stream().to_string(),
            quote!({ "a": true, "c": 3 }).to_string()
        );
        assert!(Json::object([("a", None::<Json>)]).is_none());
        assert!(Json::array([]).is_none());
    }

    #[test]
    fn strings_are_escaped() {
        let value = Json::str("say \"hi\"\n").to_token_stream().to_string();
        assert_eq!(value, r#""say \"hi\"\n""#);
    }
}
