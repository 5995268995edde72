//! Credentials read from a JSON file (or text), with `${ENV}` expansion.

use std::collections::HashMap;
use std::path::Path;

use reqwest::Url;
use reqwest::header::HeaderName;
use serde::Deserialize;

use super::{Credential, Credentials, Secret};
use crate::{ClientCredentials, Error, Result};

impl Credentials {
    /// Reads a credentials file: a JSON object of `host` or `host:port` to
    /// `{"type": "bearer", "value": ...}`, `{"type": "apikey", "header": ..., "value": ...}`
    /// (without `header`, the key goes in the header the API's security scheme names, as
    /// [`Credential::api_key_in_scheme_header`]),
    /// `{"type": "basic", "user": ..., "password": ...}` or `{"type": "oauth", "token_url":
    /// ..., "client_id": ..., "client_secret": ..., "scopes": [...]}` (OAuth 2.0 client
    /// credentials, [`ClientCredentials`]; `"issuer": ...` instead of `token_url` for a token
    /// endpoint found from the issuer's metadata, [`ClientCredentials::from_issuer`], and an
    /// optional `"resource": ...`, [`ClientCredentials::resource`]). `${NAME}` in any string
    /// is replaced by the environment variable `NAME`.
    ///
    /// # Errors
    /// The file cannot be read, is not such a JSON object, or names an environment variable
    /// that is not set. Messages name the host and the variable, never a secret.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::credentials(format!("cannot read {}: {e}", path.display())))?;
        Self::from_json(&text)
    }

    /// Reads the JSON form of [`from_file`](Self::from_file).
    ///
    /// ```
    /// use halo_client::Credentials;
    ///
    /// // SAFETY of the example: set before any thread reads the environment.
    /// let json = r#"{"api.example.com": {"type": "bearer", "value": "${HOME}"},
    ///                "localhost:3000": {"type": "basic", "user": "ada", "password": "pw"}}"#;
    /// let credentials = Credentials::from_json(json).unwrap();
    /// assert!(!credentials.is_empty());
    /// ```
    ///
    /// # Errors
    /// As [`from_file`](Self::from_file).
    pub fn from_json(json: &str) -> Result<Self> {
        #[derive(Deserialize)]
        #[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
        enum Entry {
            Bearer {
                value: String,
            },
            #[serde(rename = "apikey")]
            ApiKey {
                value: String,
                header: Option<String>,
            },
            Basic {
                user: String,
                password: String,
            },
            #[serde(rename = "oauth")]
            OAuth {
                token_url: Option<String>,
                issuer: Option<String>,
                client_id: String,
                client_secret: String,
                #[serde(default)]
                scopes: Vec<String>,
                resource: Option<String>,
            },
        }
        let entries: HashMap<String, Entry> = serde_json::from_str(json).map_err(|e| {
            Error::credentials(format!(
                "not a credentials map (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        let mut credentials = Self::new();
        for (host, entry) in entries {
            let expand = |text: &str| {
                expand_env(text).map_err(|name| {
                    Error::credentials(format!("{host}: environment variable `{name}` is not set"))
                })
            };
            let credential = match entry {
                Entry::Bearer { value } => Credential::bearer(expand(&value)?),
                Entry::ApiKey { value, header } => {
                    let header = header
                        .map(|header| {
                            HeaderName::try_from(header.as_str()).map_err(|_| {
                                Error::credentials(format!(
                                    "{host}: `{header}` is not a valid header name"
                                ))
                            })
                        })
                        .transpose()?;
                    Credential::ApiKey {
                        header,
                        key: Secret::new(expand(&value)?),
                    }
                }
                Entry::Basic { user, password } => {
                    Credential::basic(expand(&user)?, expand(&password)?)
                }
                Entry::OAuth {
                    token_url,
                    issuer,
                    client_id,
                    client_secret,
                    scopes,
                    resource,
                } => {
                    let (id, secret) = (expand(&client_id)?, expand(&client_secret)?);
                    let oauth = match (token_url, issuer) {
                        (Some(token_url), None) => {
                            let token_url = Url::parse(&expand(&token_url)?).map_err(|_| {
                                Error::credentials(format!("{host}: the token_url is not a URL"))
                            })?;
                            ClientCredentials::new(token_url, id, secret).map_err(|_| {
                                Error::credentials(format!(
                                    "{host}: the token_url must be https (or http on a loopback \
                                     address)"
                                ))
                            })?
                        }
                        (None, Some(issuer)) => {
                            ClientCredentials::from_issuer(expand(&issuer)?, id, secret).map_err(
                                |_| {
                                    Error::credentials(format!(
                                        "{host}: the issuer must be an https URL (or http on a \
                                         loopback address) without query or fragment"
                                    ))
                                },
                            )?
                        }
                        _ => {
                            return Err(Error::credentials(format!(
                                "{host}: an oauth entry names either a token_url or an issuer"
                            )));
                        }
                    };
                    let oauth = match resource {
                        Some(resource) => oauth.resource(expand(&resource)?),
                        None => oauth,
                    };
                    Credential::from(oauth.scopes(scopes))
                }
            };
            credentials.insert(host, credential);
        }
        Ok(credentials)
    }
}

/// Replaces `${NAME}` with the environment variable `NAME`; `Err(NAME)` when it is unset.
fn expand_env(text: &str) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        let name = &rest[start + 2..start + 2 + len];
        let value = std::env::var(name).map_err(|_| name.to_owned())?;
        out.push_str(&rest[..start]);
        out.push_str(&value);
        rest = &rest[start + 3 + len..];
    }
    out.push_str(rest);
    Ok(out)
}
