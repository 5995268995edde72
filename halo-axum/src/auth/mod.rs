//! Who is calling, as the layer sees it: the identities of halo-auth, the layer's
//! type-erased authenticator, and the gate every described call passes.

mod gate;

use std::future::Future;
use std::pin::Pin;

use http::request::Parts;

pub(crate) use self::gate::Gate;
pub(crate) use halo_auth::Challenges;
pub use halo_auth::{
    Authenticator, EitherAuthenticator, Principal, ProtectedResource, Scheme, StaticAuthenticator,
    Unauthenticated,
};
#[cfg(feature = "introspection")]
pub use halo_auth::{
    IntrospectionAuthenticator, IntrospectionAuthenticatorBuilder, IntrospectionError,
};
#[cfg(feature = "jwt")]
pub use halo_auth::{JwtAuthenticator, JwtAuthenticatorBuilder, JwtError};

/// The future of a type-erased authenticator.
pub(crate) type Identified<'a> =
    Pin<Box<dyn Future<Output = Result<Option<Principal>, Unauthenticated>> + Send + 'a>>;

/// An [`Authenticator`] behind a pointer.
pub(crate) trait DynAuthenticator: Send + Sync + 'static {
    fn identify<'a>(&'a self, parts: &'a Parts) -> Identified<'a>;
}

impl<A: Authenticator> DynAuthenticator for A {
    fn identify<'a>(&'a self, parts: &'a Parts) -> Identified<'a> {
        Box::pin(self.authenticate(parts))
    }
}

impl std::fmt::Debug for dyn DynAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authenticator")
    }
}
