//! Two authenticators tried in turn, for an API that accepts two kinds of credentials (fixed
//! demo tokens beside an issuer's JWTs, say), and an authenticator that may not be there.

use http::request::Parts;

use super::{Authenticator, Principal, Unauthenticated};

/// An [`Authenticator`] that asks `first`, then `second`: made by [`Authenticator::or`].
///
/// The caller is the first principal either finds. When neither finds one, the request is
/// anonymous if neither saw credentials it knows how to read, and otherwise refused: with
/// `second`'s reason when both refused (put the authenticator whose reasons say the most,
/// such as a JWT authenticator's "the token has expired", second), else with the one
/// refusal.
///
/// ```
/// use halo_auth::{Authenticator, Principal, StaticAuthenticator};
///
/// let staff = StaticAuthenticator::new().bearer("staff-token", Principal::new("staff"));
/// let robots = StaticAuthenticator::new().bearer("robot-token", Principal::new("robot"));
/// let both = staff.or(robots);
/// # let _ = both;
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct EitherAuthenticator<A, B> {
    first: A,
    second: B,
}

impl<A, B> EitherAuthenticator<A, B> {
    pub(super) fn new(first: A, second: B) -> Self {
        Self { first, second }
    }
}

impl<A: Authenticator, B: Authenticator> Authenticator for EitherAuthenticator<A, B> {
    async fn authenticate(&self, parts: &Parts) -> Result<Option<Principal>, Unauthenticated> {
        match self.first.authenticate(parts).await {
            Ok(Some(principal)) => Ok(Some(principal)),
            Ok(None) => self.second.authenticate(parts).await,
            Err(refused) => match self.second.authenticate(parts).await {
                Ok(None) => Err(refused),
                decided => decided,
            },
        }
    }
}

/// An authenticator that may not be configured: `None` finds no one (every request is
/// anonymous to it), so `demo.or(issuer)` works whether or not an issuer was given.
///
/// ```
/// use halo_auth::{Authenticator, Principal, StaticAuthenticator};
///
/// let extra: Option<StaticAuthenticator> = None; // from the configuration
/// let demo = StaticAuthenticator::new().bearer("demo", Principal::new("demo"));
/// let authenticator = demo.or(extra);
/// # let _ = authenticator;
/// ```
impl<A: Authenticator> Authenticator for Option<A> {
    async fn authenticate(&self, parts: &Parts) -> Result<Option<Principal>, Unauthenticated> {
        match self {
            Some(authenticator) => authenticator.authenticate(parts).await,
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;

    use super::*;
    use crate::StaticAuthenticator;

    /// A second authenticator that reads an `X-Robot` header only.
    struct Robots;

    impl Authenticator for Robots {
        async fn authenticate(&self, parts: &Parts) -> Result<Option<Principal>, Unauthenticated> {
            match parts.headers.get("x-robot").map(|v| v.as_bytes()) {
                None => Ok(None),
                Some(b"r2") => Ok(Some(Principal::new("r2"))),
                Some(_) => Err(Unauthenticated::new("unknown robot")),
            }
        }
    }

    fn identify(headers: &[(&str, &str)]) -> Result<Option<String>, String> {
        let auth = StaticAuthenticator::new()
            .bearer("staff", Principal::new("staff"))
            .or(Robots);
        let mut request = http::Request::builder();
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let parts = request.body(()).unwrap().into_parts().0;
        auth.authenticate(&parts)
            .now_or_never()
            .unwrap()
            .map(|found| found.map(|principal| principal.id().to_owned()))
            .map_err(|refused| refused.to_string())
    }

    #[test]
    fn the_first_principal_found_or_the_telling_refusal() {
        assert_eq!(identify(&[]), Ok(None));
        assert_eq!(
            identify(&[("authorization", "Bearer staff")]),
            Ok(Some("staff".into()))
        );
        assert_eq!(identify(&[("x-robot", "r2")]), Ok(Some("r2".into())));
        // The first refuses, the second finds the caller.
        assert_eq!(
            identify(&[("authorization", "Bearer nope"), ("x-robot", "r2")]),
            Ok(Some("r2".into()))
        );
        // The first refuses, the second sees nothing: the first's refusal.
        assert!(identify(&[("authorization", "Bearer nope")]).is_err());
        // Both refuse: the second's reason.
        assert_eq!(
            identify(&[("authorization", "Bearer nope"), ("x-robot", "c3")]),
            Err("unknown robot".into())
        );
    }

    #[test]
    fn no_authenticator_finds_no_one() {
        let parts = http::Request::builder()
            .header("x-robot", "r2")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        let absent: Option<Robots> = None;
        assert!(matches!(
            absent.authenticate(&parts).now_or_never(),
            Some(Ok(None))
        ));
        let present = Some(Robots);
        let found = present
            .authenticate(&parts)
            .now_or_never()
            .unwrap()
            .unwrap();
        assert_eq!(found.map(|p| p.id().to_owned()).as_deref(), Some("r2"));
    }
}
