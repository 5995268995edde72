//! What the OAuth 2.0 authenticators share: the bearer token of a request, the issuer over
//! HTTP, and the caller that a token's claims name.

pub(crate) mod cache;
pub(crate) mod fetch;
pub(crate) mod settings;

use http::header::AUTHORIZATION;
use http::request::Parts;
use serde_json::{Map, Value};

use super::{Principal, Scheme, Unauthenticated};

/// The most a document from the issuer (metadata, key set, introspection answer) may weigh.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// The token of `Authorization: Bearer <token>`: `None` without an `Authorization` header,
/// refused with `expected` for another scheme or an empty token.
pub(crate) fn bearer_token<'a>(
    parts: &'a Parts,
    expected: &str,
) -> Result<Option<&'a str>, Unauthenticated> {
    let Some(value) = parts.headers.get(AUTHORIZATION) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|value| value.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|token| !token.is_empty())
        .map(Some)
        .ok_or_else(|| Unauthenticated::new(expected))
}

/// A valid token's claims, as [`principal`] reads them: a JWT's payload (parsed once, in
/// borrowed form, by the JWT authenticator) or an introspection answer (a JSON object).
pub(crate) trait Claims {
    /// The claim `name`, when it is a string.
    fn string(&self, name: &str) -> Option<&str>;
    /// The strings of the claim `name`, when it is an array (its other items left out).
    fn strings(&self, name: &str) -> Option<impl Iterator<Item = &str>>;
}

impl Claims for Map<String, Value> {
    fn string(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str)
    }

    fn strings(&self, name: &str) -> Option<impl Iterator<Item = &str>> {
        match self.get(name) {
            Some(Value::Array(items)) => Some(items.iter().filter_map(Value::as_str)),
            _ => None,
        }
    }
}

/// The caller a valid token's claims (a JWT's payload, an introspection answer) name: `sub`,
/// else `client_id`; the scopes of `scope` and `scp`; the tenant of `tenant_claim`, if set.
pub(crate) fn principal(
    claims: &impl Claims,
    tenant_claim: Option<&str>,
) -> Result<Principal, Unauthenticated> {
    let text = |name: &str| claims.string(name).filter(|text| !text.is_empty());
    let id = text("sub")
        .or_else(|| text("client_id"))
        .ok_or_else(|| Unauthenticated::new("the token names no subject (sub or client_id)"))?;
    let mut principal = Principal::new(id)
        .with_scopes(text("scope").into_iter().flat_map(str::split_whitespace))
        .authenticated_by(Scheme::Bearer);
    if let Some(scp) = claims.strings("scp") {
        principal = principal.with_scopes(scp);
    } else if let Some(scp) = claims.string("scp") {
        principal = principal.with_scopes(scp.split_whitespace());
    }
    Ok(match tenant_claim.and_then(text) {
        Some(tenant) => principal.in_tenant(tenant),
        None => principal,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn claims(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn the_principal_from_claims() {
        let user = principal(
            &claims(json!({"sub": "u1", "scope": "a  b", "scp": ["c"], "org": "acme"})),
            None,
        )
        .unwrap();
        assert_eq!(user.id(), "u1");
        assert_eq!(user.scopes().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(user.scheme(), Some(&Scheme::Bearer));
        assert_eq!(user.tenant(), None);
        let client = principal(
            &claims(json!({"client_id": "agent", "scp": "x y", "org": "acme"})),
            Some("org"),
        )
        .unwrap();
        assert_eq!(client.id(), "agent");
        assert!(client.has_scope("y"));
        assert_eq!(client.tenant(), Some("acme"));
        assert!(principal(&claims(json!({"sub": ""})), None).is_err());
        let untenanted = principal(&claims(json!({"sub": "u", "org": ""})), Some("org")).unwrap();
        assert_eq!(untenanted.tenant(), None);
    }

    #[test]
    fn the_bearer_token() {
        let parts = |value: Option<&str>| {
            let mut request = http::Request::builder();
            if let Some(value) = value {
                request = request.header(AUTHORIZATION, value);
            }
            request.body(()).unwrap().into_parts().0
        };
        assert_eq!(bearer_token(&parts(None), "no").unwrap(), None);
        let spaced = parts(Some("bearer  abc "));
        assert_eq!(bearer_token(&spaced, "no").unwrap(), Some("abc"));
        for refused in ["Basic abc", "Bearer ", "Bearer"] {
            let parts = parts(Some(refused));
            let error = bearer_token(&parts, "expected a bearer token").unwrap_err();
            assert_eq!(error.to_string(), "expected a bearer token");
        }
    }
}
