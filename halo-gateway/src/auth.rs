//! The gateway's callers, as its configuration names them: static tokens, JWTs of an issuer,
//! tokens introspected at an issuer; asked in that order.

use halo_axum::{
    Authenticator, IntrospectionAuthenticator, JwtAuthenticator, Principal, StaticAuthenticator,
};

use crate::error::Error;
use crate::file;

/// The authenticator `auth` describes, its issuers' keys and metadata fetched.
pub(crate) async fn authenticator(auth: &file::Auth) -> Result<impl Authenticator + use<>, Error> {
    let tokens = (!auth.tokens.is_empty()).then(|| {
        auth.tokens
            .iter()
            .fold(StaticAuthenticator::new(), |tokens, (token, caller)| {
                let mut principal =
                    Principal::new(&caller.caller).with_scopes(caller.scopes.iter().cloned());
                if let Some(tenant) = &caller.tenant {
                    principal = principal.in_tenant(tenant);
                }
                tokens.bearer(token, principal)
            })
    });
    let jwt = match &auth.jwt {
        None => None,
        Some(jwt) => {
            let mut builder = JwtAuthenticator::builder(&jwt.issuer).audience(&jwt.audience);
            if let Some(claim) = &jwt.tenant_claim {
                builder = builder.tenant_claim(claim);
            }
            Some(
                builder
                    .build()
                    .await
                    .map_err(|e| Error::layer(format!("auth.jwt: {e}")))?,
            )
        }
    };
    let introspection = match &auth.introspection {
        None => None,
        Some(settings) => {
            let mut builder = IntrospectionAuthenticator::builder(
                &settings.issuer,
                &settings.client_id,
                &settings.client_secret,
            );
            if let Some(audience) = &settings.audience {
                builder = builder.audience(audience);
            }
            if let Some(claim) = &settings.tenant_claim {
                builder = builder.tenant_claim(claim);
            }
            Some(
                builder
                    .build()
                    .await
                    .map_err(|e| Error::layer(format!("auth.introspection: {e}")))?,
            )
        }
    };
    // `Option::or` would shadow `Authenticator::or`.
    let either = Authenticator::or(tokens, jwt);
    Ok(Authenticator::or(either, introspection))
}
