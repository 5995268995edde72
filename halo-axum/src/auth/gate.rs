//! The first two steps of a call, and the check before discovery: who the caller is
//! (`401` for credentials the authenticator refuses), and whether it may call the
//! operation (`401` without credentials, `403` without the scopes).

use axum::response::Response;
use http::StatusCode;
use http::header::WWW_AUTHENTICATE;
use http::request::Parts;

use super::Challenges;
use super::{DynAuthenticator, Principal};
use crate::audit::Outcome;
use crate::problem;
use crate::registry::{Registry, Tool};
use crate::step::{Step, Stop};

/// The authenticator a layer checks callers with (if any), and its challenges.
pub(crate) struct Gate {
    authenticator: Option<Box<dyn DynAuthenticator>>,
    challenges: Challenges,
    /// The challenges of the MCP endpoint, which may name a metadata document of its own.
    #[cfg_attr(
        not(feature = "mcp"),
        expect(dead_code, reason = "read by the MCP endpoint")
    )]
    mcp_challenges: Challenges,
    /// Discovery without credentials is refused (`401`) rather than shown the public tools.
    require_credentials: bool,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("authenticator", &self.authenticator.is_some())
            .field("require_credentials", &self.require_credentials)
            .finish_non_exhaustive()
    }
}

impl Gate {
    /// A gate answering with `challenges`, and with `mcp_challenges` on the MCP endpoint.
    pub(crate) fn new(
        authenticator: Option<Box<dyn DynAuthenticator>>,
        challenges: Challenges,
        mcp_challenges: Challenges,
        require_credentials: bool,
    ) -> Self {
        Self {
            authenticator,
            challenges,
            mcp_challenges,
            require_credentials,
        }
    }

    /// Whether callers are identified at all (an authenticator is set).
    #[inline] // On the pass-through path of `Halo::call` (see there).
    pub(crate) fn is_closed(&self) -> bool {
        self.authenticator.is_some()
    }

    /// Who sent the request: `None` for anonymous (or when no authenticator is set), or the
    /// `401` for credentials the authenticator refuses.
    pub(crate) async fn identify(&self, parts: &Parts) -> Step<Option<Principal>> {
        self.identify_with(parts, &self.challenges).await
    }

    /// [`identify`](Self::identify), challenging with `challenges`.
    async fn identify_with(
        &self,
        parts: &Parts,
        challenges: &Challenges,
    ) -> Step<Option<Principal>> {
        let Some(authenticator) = &self.authenticator else {
            return Ok(None);
        };
        authenticator.identify(parts).await.map_err(|rejected| {
            let mut response = problem::response(StatusCode::UNAUTHORIZED, rejected.to_string());
            // RFC 6750 §3.1: say that the credentials, not their absence, are the problem.
            response
                .headers_mut()
                .insert(WWW_AUTHENTICATE, challenges.invalid());
            Stop::new(Outcome::Denied, response)
        })
    }

    /// Who is discovering tools (over HALO, MCP or a discovery document): the caller, or
    /// the `401` for credentials the authenticator refuses, or for none when credentials
    /// are required.
    pub(crate) async fn discoverer(&self, parts: &Parts) -> Result<Option<Principal>, Response> {
        self.discoverer_with(parts, &self.challenges).await
    }

    /// [`discoverer`](Self::discoverer) for the MCP endpoint, whose challenges name its
    /// own metadata document when it has one.
    #[cfg(feature = "mcp")]
    pub(crate) async fn mcp_discoverer(
        &self,
        parts: &Parts,
    ) -> Result<Option<Principal>, Response> {
        self.discoverer_with(parts, &self.mcp_challenges).await
    }

    async fn discoverer_with(
        &self,
        parts: &Parts,
        challenges: &Challenges,
    ) -> Result<Option<Principal>, Response> {
        match self.identify_with(parts, challenges).await {
            Ok(None) if self.require_credentials => {
                Err(unauthorized(challenges, "discovery needs credentials"))
            }
            Ok(caller) => Ok(caller),
            Err(refused) => Err(refused.into_response()),
        }
    }

    /// Whether `caller` may call `tool`: nothing to check without an authenticator, else
    /// `401` for an anonymous caller and `403` for one without the scopes.
    pub(crate) fn authorize(
        &self,
        registry: &Registry,
        tool: &Tool,
        caller: Option<&Principal>,
    ) -> Step<()> {
        if self.authenticator.is_none() || registry.admits(tool, caller) {
            return Ok(());
        }
        let refused = match caller {
            None => unauthorized(&self.challenges, "this operation needs credentials"),
            Some(caller) => self.forbidden(&registry.missing_scopes(tool, caller)),
        };
        Err(Stop::new(Outcome::Denied, refused))
    }

    /// `403` naming the scopes that are missing, in the body and (RFC 6750 §3.1) in
    /// `WWW-Authenticate`; with none missing, the operation is not open to this caller at
    /// all (`x-halo-callers`), which no other token of its would change.
    fn forbidden(&self, missing: &[&str]) -> Response {
        if missing.is_empty() {
            return problem::response(
                StatusCode::FORBIDDEN,
                "this operation is not open to this caller",
            );
        }
        let mut response = problem::response(
            StatusCode::FORBIDDEN,
            format!(
                "the credentials lack the scope{} this operation needs: {}",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            ),
        );
        if let Some(value) = self.challenges.insufficient_scope(missing) {
            response.headers_mut().insert(WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// `401` for a request without credentials, with `challenges`.
fn unauthorized(challenges: &Challenges, detail: impl Into<String>) -> Response {
    let mut response = problem::response(StatusCode::UNAUTHORIZED, detail);
    response
        .headers_mut()
        .insert(WWW_AUTHENTICATE, challenges.missing());
    response
}
