//! Bearer tokens and API keys known when the server starts.

use std::collections::HashMap;
use std::fmt;

use http::HeaderName;
use http::header::AUTHORIZATION;
use http::request::Parts;
use sha2::{Digest, Sha256};

use super::{Authenticator, Principal, Scheme, Unauthenticated};

/// The SHA-256 of a secret: secrets are looked up by digest, so the time a lookup takes says
/// nothing about how much of a guess was right, and the plain secrets are not kept.
type Digested = [u8; 32];

fn digest(secret: &str) -> Digested {
    Sha256::digest(secret.as_bytes()).into()
}

/// An [`Authenticator`] for a fixed set of bearer tokens and API keys, each mapped to the
/// [`Principal`] it stands for: demos, tests, and services with a few machine callers.
///
/// `Authorization: Bearer <token>` is looked up among the bearer tokens, and each API-key
/// header among its keys; the principal found is marked with that [`Scheme`], so an
/// operation that accepts only an API key is not opened by a bearer token. A request with neither is anonymous; one with an unknown token
/// or key, or with another `Authorization` scheme, is rejected.
///
/// ```
/// use halo_auth::{Principal, StaticAuthenticator};
/// use http::HeaderName;
///
/// let auth = StaticAuthenticator::new()
///     .bearer("demo-admin", Principal::new("admin").with_scopes(["books:write", "admin"]))
///     .bearer("demo-reader", Principal::new("reader"))
///     .api_key(HeaderName::from_static("x-api-key"), "demo-key", Principal::new("service"));
/// // Debug output never shows a secret.
/// assert!(!format!("{auth:?}").contains("demo"));
/// ```
#[derive(Clone, Default)]
#[must_use]
pub struct StaticAuthenticator {
    bearer: HashMap<Digested, Principal>,
    api_keys: Vec<(HeaderName, HashMap<Digested, Principal>)>,
}

impl StaticAuthenticator {
    /// An authenticator that knows no one yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `Authorization: Bearer <token>` as `principal`.
    pub fn bearer(mut self, token: impl AsRef<str>, principal: Principal) -> Self {
        self.bearer.insert(digest(token.as_ref()), principal);
        self
    }

    /// Accepts `key` in the `header` request header as `principal`.
    pub fn api_key(
        mut self,
        header: HeaderName,
        key: impl AsRef<str>,
        principal: Principal,
    ) -> Self {
        let digest = digest(key.as_ref());
        match self.api_keys.iter_mut().find(|(name, _)| *name == header) {
            Some((_, keys)) => {
                keys.insert(digest, principal);
            }
            None => self
                .api_keys
                .push((header, HashMap::from([(digest, principal)]))),
        }
        self
    }

    fn by_authorization(&self, parts: &Parts) -> Option<Result<Principal, Unauthenticated>> {
        let mut values = parts.headers.get_all(AUTHORIZATION).iter();
        let value = values.next()?;
        if values.next().is_some() {
            return Some(Err(Unauthenticated::new(
                "more than one Authorization header",
            )));
        }
        let Some((scheme, token)) = value.to_str().ok().and_then(|v| v.trim().split_once(' '))
        else {
            return Some(Err(Unauthenticated::new(
                "the Authorization header is not `Bearer <token>`",
            )));
        };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Some(Err(Unauthenticated::new(
                "only the Bearer authorization scheme is accepted",
            )));
        }
        Some(
            self.bearer
                .get(&digest(token.trim()))
                .map(|principal| principal.clone().authenticated_by(Scheme::Bearer))
                .ok_or_else(|| Unauthenticated::new("the bearer token is not valid")),
        )
    }

    fn by_api_keys(&self, parts: &Parts) -> Option<Result<Principal, Unauthenticated>> {
        self.api_keys.iter().find_map(|(header, keys)| {
            let value = parts.headers.get(header)?;
            Some(
                value
                    .to_str()
                    .ok()
                    .and_then(|key| keys.get(&digest(key.trim())))
                    .map(|principal| {
                        principal
                            .clone()
                            .authenticated_by(Scheme::ApiKey(header.clone()))
                    })
                    .ok_or_else(|| Unauthenticated::new(format!("the {header} key is not valid"))),
            )
        })
    }
}

impl Authenticator for StaticAuthenticator {
    async fn authenticate(&self, parts: &Parts) -> Result<Option<Principal>, Unauthenticated> {
        match self
            .by_authorization(parts)
            .or_else(|| self.by_api_keys(parts))
        {
            Some(identified) => identified.map(Some),
            None => Ok(None),
        }
    }
}

impl fmt::Debug for StaticAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<&str> = self.api_keys.iter().map(|(h, _)| h.as_str()).collect();
        f.debug_struct("StaticAuthenticator")
            .field("bearer_tokens", &self.bearer.len())
            .field("api_key_headers", &headers)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut request = http::Request::builder();
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    fn identify(
        auth: &StaticAuthenticator,
        headers: &[(&str, &str)],
    ) -> Result<Option<String>, String> {
        let parts = parts(headers);
        let future = auth.authenticate(&parts);
        futures_util::FutureExt::now_or_never(future)
            .unwrap()
            .map(|p| p.map(|p| p.id().to_owned()))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn tokens_keys_and_rejections() {
        let auth = StaticAuthenticator::new()
            .bearer("t1", Principal::new("one"))
            .api_key(
                HeaderName::from_static("x-api-key"),
                "k1",
                Principal::new("key"),
            );
        assert_eq!(identify(&auth, &[]), Ok(None));
        assert_eq!(
            identify(&auth, &[("authorization", "Bearer t1")]),
            Ok(Some("one".into()))
        );
        assert_eq!(
            identify(&auth, &[("authorization", "bearer  t1 ")]),
            Ok(Some("one".into()))
        );
        assert_eq!(
            identify(&auth, &[("x-api-key", "k1")]),
            Ok(Some("key".into()))
        );
        for bad in [
            vec![("authorization", "Bearer t2")],
            vec![("authorization", "Basic dTpw")],
            vec![("authorization", "t1")],
            vec![
                ("authorization", "Bearer t1"),
                ("authorization", "Bearer t1"),
            ],
            vec![("x-api-key", "k2")],
        ] {
            let error = identify(&auth, &bad).unwrap_err();
            assert!(!error.contains("t1") && !error.contains("k2"), "{error}");
        }
    }
}
