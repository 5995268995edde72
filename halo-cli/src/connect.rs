//! Reaching the API: the client the command line's credentials and timeout configure, and
//! the tools it describes, for every command that talks to an API.

use std::time::Duration;

use halo_client::protocol::{Manifest, ToolEntry, ToolSchema};
use halo_client::{Client, ClientBuilder, ClientCredentials, Credential, Credentials};

use crate::cli::Global;
use crate::failure::Failure;

/// Whether the command line gives no credentials.
pub(crate) fn anonymous(global: &Global) -> bool {
    global.bearer.is_none()
        && global.api_key.is_none()
        && global.oauth_token_url.is_none()
        && global.oauth_issuer.is_none()
        && global.credentials.is_none()
}

/// A client for `url` with the command line's credentials and timeout.
pub(crate) fn client(global: &Global, url: &str) -> Result<Client, Failure> {
    Ok(builder(global, url)?.build()?)
}

/// The builder of [`client`], for a command that configures the client further.
pub(crate) fn builder(global: &Global, url: &str) -> Result<ClientBuilder, Failure> {
    // A call held for approval says which one it waits for; its result stays on stdout.
    let mut builder = Client::builder(url).on_approval_pending(crate::approvals::announce);
    if let Some(path) = &global.credentials {
        builder = builder.credentials(Credentials::from_file(path)?);
    }
    if let Some(token) = &global.bearer {
        builder = builder.credential(Credential::bearer(token.as_str()));
    }
    if let Some(key) = &global.api_key {
        builder = builder.credential(match &global.api_key_header {
            // The header name was checked when the command line was parsed.
            Some(header) => Credential::api_key(header.clone(), key.as_str()),
            None => Credential::api_key_in_scheme_header(key.as_str()),
        });
    }
    // (clap cannot require one global argument from another given before the subcommand.)
    // (`--oauth-token-url` and `--oauth-issuer` conflict: clap says so.)
    let server = match (&global.oauth_token_url, &global.oauth_issuer) {
        (Some(token_url), _) => Some((token_url, false)),
        (None, Some(issuer)) => Some((issuer, true)),
        (None, None) => None,
    };
    let no_oauth = global.oauth_scopes.is_empty() && global.oauth_resource.is_none();
    match (server, &global.oauth_client_id, &global.oauth_client_secret) {
        (None, None, None) if no_oauth => {}
        (Some((url, issuer)), Some(id), Some(secret)) => {
            let oauth = if issuer {
                ClientCredentials::from_issuer(url.as_str(), id.as_str(), secret.as_str())?
            } else {
                let token_url = url.parse().map_err(|_| {
                    Failure::Other(format!("--oauth-token-url: `{url}` is not a URL"))
                })?;
                ClientCredentials::new(token_url, id.as_str(), secret.as_str())?
            };
            let oauth = oauth.scopes(global.oauth_scopes.iter().cloned());
            let oauth = match &global.oauth_resource {
                Some(resource) => oauth.resource(resource.as_str()),
                None => oauth,
            };
            builder = builder.credential(Credential::from(oauth));
        }
        _ => {
            return Err(Failure::Other(
                "--oauth-token-url (or --oauth-issuer), --oauth-client-id and \
                 --oauth-client-secret (or HALO_OAUTH_CLIENT_SECRET) go together"
                    .to_owned(),
            ));
        }
    }
    if let Some(seconds) = global.timeout {
        builder = builder.timeout(Some(Duration::from_secs_f64(seconds)));
    }
    Ok(builder)
}

/// Each tool of the manifest with its schema.
pub(crate) async fn describe_manifest(
    client: &Client,
    manifest: Manifest,
) -> Result<Vec<(ToolEntry, ToolSchema)>, Failure> {
    let schemas = client.describe_all(&manifest.tools).await?;
    Ok(manifest.tools.into_iter().zip(schemas).collect())
}
