//! The API as an OAuth 2.0 protected resource (RFC 9728): its identifier and the
//! authorization servers that issue tokens for it.

use http::Uri;

/// The path of the protected-resource metadata document (RFC 9728 §3).
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The API as an OAuth 2.0 protected resource (RFC 9728): its resource identifier (the
/// audience of the tokens it accepts) and the authorization servers that issue them.
///
/// Given to halo-axum's `HaloBuilder::protected_resource`, it
/// makes the layer serve the protected-resource metadata document at
/// `/.well-known/oauth-protected-resource` (followed by the identifier's path, if it has
/// one), generated from the OpenAPI document: `resource`, `authorization_servers`,
/// `scopes_supported` (every scope the document's `security` requirements name) and
/// `bearer_methods_supported: ["header"]`. Every `Bearer` challenge of a `401` or `403` then
/// carries `resource_metadata="<the document's URL>"`, so that a client that knows nothing
/// about the API can find where to get a token, and for which `resource` (RFC 8707) to ask.
///
/// ```
/// use halo_auth::ProtectedResource;
///
/// let resource = ProtectedResource::new("https://api.example.com", ["https://id.example.com"]);
/// assert_eq!(
///     resource.metadata_url(),
///     "https://api.example.com/.well-known/oauth-protected-resource"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct ProtectedResource {
    resource: String,
    authorization_servers: Vec<String>,
    /// Where the app mounts its MCP endpoint, described as a resource of its own.
    mcp: Option<String>,
}

impl ProtectedResource {
    /// The resource `identifier` (an absolute `https` URL without query or fragment, such as
    /// `https://api.example.com`: the `aud` of the tokens the API accepts) and the issuer
    /// identifiers of the `authorization_servers` that issue them. Both are written as given
    /// (no `/` added or removed): tokens and clients compare them character for character.
    /// halo-axum's `HaloBuilder::build` fails when the identifier is not
    /// such a URL or no authorization server is named.
    pub fn new<I, S>(identifier: impl Into<String>, authorization_servers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            resource: identifier.into(),
            authorization_servers: authorization_servers.into_iter().map(Into::into).collect(),
            mcp: None,
        }
    }

    /// Describes the MCP endpoint the app mounts at `path` (where a
    /// halo-axum's `McpService` is nested, usually `/mcp`) as a protected
    /// resource of its own, as MCP clients expect: its identifier is this one followed by
    /// `path` (`https://api.example.com/mcp`), its metadata document is served at the
    /// well-known path followed by that path (`/.well-known/oauth-protected-resource/mcp`,
    /// where MCP clients look first) with that identifier as `resource`, and the
    /// halo-axum's `McpService`'s `401` challenges name that document.
    ///
    /// MCP clients ask for tokens for that identifier (RFC 8707 `resource`), so tokens for
    /// it carry it as `aud`: accept it as an audience too
    /// (`JwtAuthenticatorBuilder::audience`, feature `jwt`).
    ///
    /// ```
    /// use halo_auth::ProtectedResource;
    ///
    /// let resource =
    ///     ProtectedResource::new("https://api.example.com", ["https://id.example.com"]).mcp("/mcp");
    /// assert_eq!(resource.mcp_identifier().as_deref(), Some("https://api.example.com/mcp"));
    /// ```
    pub fn mcp(mut self, path: impl Into<String>) -> Self {
        self.mcp = Some(path.into());
        self
    }

    /// The MCP endpoint's resource identifier, when [`mcp`](Self::mcp) named its path.
    #[must_use]
    pub fn mcp_identifier(&self) -> Option<String> {
        let path = self.mcp.as_deref()?;
        Some(format!("{}{path}", self.resource.trim_end_matches('/')))
    }

    /// The MCP endpoint as a resource of its own (same authorization servers), when
    /// [`mcp`](Self::mcp) named its path.
    #[must_use]
    pub fn for_mcp(&self) -> Option<Self> {
        Some(Self {
            resource: self.mcp_identifier()?,
            authorization_servers: self.authorization_servers.clone(),
            mcp: None,
        })
    }

    /// The resource identifier.
    #[must_use]
    pub fn identifier(&self) -> &str {
        &self.resource
    }

    /// The issuer identifiers of the authorization servers.
    pub fn authorization_servers(&self) -> impl Iterator<Item = &str> {
        self.authorization_servers.iter().map(String::as_str)
    }

    /// The absolute URL of the metadata document (RFC 9728 §3.1): the well-known path put
    /// between the identifier's host and its path, so `https://example.com/api` has its
    /// document at `https://example.com/.well-known/oauth-protected-resource/api`.
    #[must_use]
    pub fn metadata_url(&self) -> String {
        match self.resource.parse::<Uri>() {
            Ok(uri) => match (uri.scheme_str(), uri.authority()) {
                (Some(scheme), Some(authority)) => {
                    format!("{scheme}://{authority}{}", self.served_path())
                }
                _ => self.served_path(),
            },
            Err(_) => self.served_path(),
        }
    }

    /// The path the layer serves the document at: the well-known path followed by the
    /// identifier's path, without a trailing `/`.
    #[must_use]
    pub fn served_path(&self) -> String {
        let path = self
            .resource
            .parse::<Uri>()
            .map(|uri| uri.path().trim_end_matches('/').to_owned())
            .unwrap_or_default();
        format!("{WELL_KNOWN}{path}")
    }

    /// Why the settings cannot be served, if they cannot.
    #[must_use]
    pub fn problem(&self) -> Option<&'static str> {
        let Ok(uri) = self.resource.parse::<Uri>() else {
            return Some("protected_resource: the resource identifier is not a URL");
        };
        let absolute =
            matches!(uri.scheme_str(), Some("https" | "http")) && uri.authority().is_some();
        if !absolute || uri.query().is_some() || self.resource.contains('#') {
            return Some(
                "protected_resource: the resource identifier must be an absolute http(s) URL without query or fragment",
            );
        }
        if self.authorization_servers.is_empty() {
            return Some("protected_resource: name at least one authorization server");
        }
        match self.mcp.as_deref() {
            Some(path)
                if !path.starts_with('/')
                    || path.len() < 2
                    || path.ends_with('/')
                    || path.contains(['?', '#'])
                    || path.parse::<Uri>().is_err() =>
            {
                Some(
                    "protected_resource: the MCP path must be a path such as /mcp (a leading /, no trailing /, query or fragment)",
                )
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_at_the_well_known_path_before_the_identifier_path() {
        let root = ProtectedResource::new("https://api.example.com/", ["https://id.example"]);
        assert_eq!(root.served_path(), WELL_KNOWN);
        assert_eq!(
            root.metadata_url(),
            "https://api.example.com/.well-known/oauth-protected-resource"
        );
        let prefixed = ProtectedResource::new("https://example.com/api", ["https://id.example"]);
        assert_eq!(
            prefixed.served_path(),
            "/.well-known/oauth-protected-resource/api"
        );
        assert_eq!(
            prefixed.metadata_url(),
            "https://example.com/.well-known/oauth-protected-resource/api"
        );
        assert_eq!(prefixed.problem(), None);
    }

    #[test]
    fn settings_that_cannot_be_served() {
        let servers = ["https://id.example"];
        for bad in [
            "/api",
            "api.example.com",
            "https://a.example/?x=1",
            "https://a.example/#f",
            "ftp://a.example",
        ] {
            assert!(
                ProtectedResource::new(bad, servers).problem().is_some(),
                "{bad}"
            );
        }
        let none: [&str; 0] = [];
        assert!(
            ProtectedResource::new("https://a.example", none)
                .problem()
                .is_some()
        );
    }

    #[test]
    fn the_mcp_endpoint_is_a_resource_of_its_own() {
        let servers = ["https://id.example"];
        let resource = ProtectedResource::new("https://example.com/api/", servers).mcp("/mcp");
        let mcp = resource.for_mcp().unwrap();
        assert_eq!(mcp.identifier(), "https://example.com/api/mcp");
        assert_eq!(
            mcp.served_path(),
            "/.well-known/oauth-protected-resource/api/mcp"
        );
        assert_eq!(
            mcp.metadata_url(),
            "https://example.com/.well-known/oauth-protected-resource/api/mcp"
        );
        assert_eq!(resource.problem(), None);
        assert!(
            ProtectedResource::new("https://a.example", servers)
                .for_mcp()
                .is_none()
        );
        for bad in ["mcp", "/", "/mcp/", "/mcp?x", "/mcp#f", "/m cp"] {
            let resource = ProtectedResource::new("https://a.example", servers).mcp(bad);
            assert!(resource.problem().is_some(), "{bad}");
        }
    }
}
