//! A tool call made ready to send: arguments placed where the schema says, the URL resolved,
//! an idempotency key added when the schema advertises one, and what may be repeated
//! decided.

use std::borrow::Cow;

use bytes::Bytes;
use halo_protocol::ToolSchema;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde_json::Value;

use super::Client;
use crate::args::{self, Payload};
use crate::credentials;
use crate::{Error, Result, RetryPolicy};

/// The header that makes a repeated request safe (IETF draft `Idempotency-Key`).
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// A request, ready to be sent as many times as its policy allows.
#[derive(Clone)]
pub(crate) struct Prepared {
    pub(super) method: Method,
    pub(crate) url: Url,
    pub(crate) headers: HeaderMap,
    pub(super) body: Option<Encoded>,
    /// The API-key header its tool's security scheme names, for a key that goes where the
    /// scheme says ([`Credential::api_key_in_scheme_header`](crate::Credential::api_key_in_scheme_header)).
    pub(super) key_header: Option<HeaderName>,
    /// Whether repeating it cannot duplicate a side effect.
    pub(crate) safe: bool,
    /// Its tool's retry policy (none for `resilience.retry: false`), which also bounds the
    /// reconnections of a stream.
    pub(crate) policy: RetryPolicy,
}

/// A body, encoded once however many times it is sent.
#[derive(Clone)]
pub(super) struct Encoded {
    pub(super) content_type: HeaderValue,
    pub(super) bytes: Bytes,
}

/// Encodes a placed body: JSON as `application/json`, raw bytes with their media type.
fn encode(payload: Payload) -> Result<Encoded> {
    match payload {
        Payload::Json(value) => Ok(Encoded {
            content_type: HeaderValue::from_static("application/json"),
            bytes: serde_json::to_vec(&value)
                .map_err(|e| Error::argument(format!("the body cannot be encoded: {e}")))?
                .into(),
        }),
        Payload::Raw {
            content_type,
            bytes,
        } => Ok(Encoded {
            content_type: HeaderValue::try_from(content_type).map_err(|_| {
                Error::argument("the body's media type is not a valid Content-Type")
            })?,
            bytes: bytes.into(),
        }),
    }
}

impl Prepared {
    /// A request of one of the server's own endpoints (no tool, nothing to place): `method`
    /// at `url`, with `body` as JSON when there is one.
    pub(crate) fn endpoint(
        method: Method,
        url: Url,
        body: Option<&Value>,
        safe: bool,
        policy: RetryPolicy,
    ) -> Self {
        Self {
            method,
            url,
            headers: HeaderMap::new(),
            body: body.map(|body| Encoded {
                content_type: HeaderValue::from_static("application/json"),
                bytes: body.to_string().into(),
            }),
            key_header: None,
            safe,
            policy,
        }
    }

    /// `POST /api/orders`: the method and path, never the query (which may carry secrets).
    pub(crate) fn label(&self) -> impl std::fmt::Display + '_ {
        struct Label<'a>(&'a Method, &'a str);
        impl std::fmt::Display for Label<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{} {}", self.0, self.1)
            }
        }
        Label(&self.method, self.url.path())
    }
}

impl Client {
    /// A tool call, ready to send: arguments placed, URL resolved, an idempotency key added
    /// when the schema advertises one, and what may be repeated decided.
    pub(super) fn prepare(
        &self,
        template: &str,
        method: Method,
        schema: &ToolSchema,
        args: Value,
    ) -> Result<Prepared> {
        let placed = args::place(template, &method, Some(schema), args)?;
        let mut url = self.resolve(&placed.target)?;
        if !placed.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&placed.query);
        }
        let mut headers = placed.headers;
        let limits = schema.limits.as_ref();
        let idempotent_method = halo_protocol::is_idempotent_method(method.as_str());
        if let Some(name) = limits.and_then(|l| l.idempotency_key.as_deref())
            && !idempotent_method
        {
            let name = HeaderName::try_from(name)
                .map_err(|_| decode_error("the schema's idempotency_key is not a header name"))?;
            if !headers.contains_key(&name) {
                let key = uuid::Uuid::new_v4().to_string();
                headers.insert(
                    name,
                    HeaderValue::try_from(key).expect("a UUID is a valid header value"),
                );
            }
        }
        // A key makes a repeat safe; otherwise what the schema declares, else the method.
        let keyed = headers.contains_key(IDEMPOTENCY_KEY)
            || limits
                .and_then(|l| l.idempotency_key.as_deref())
                .is_some_and(|name| headers.contains_key(name));
        let safe = keyed
            || limits
                .and_then(|l| l.idempotent)
                .unwrap_or(idempotent_method);
        let retries = schema.resilience.as_ref().and_then(|r| r.retry) != Some(false);
        let policy = if retries {
            self.inner.retry
        } else {
            RetryPolicy::none()
        };
        Ok(Prepared {
            method,
            url,
            headers,
            body: placed.body.map(encode).transpose()?,
            key_header: credentials::scheme_header(schema.auth.as_ref()),
            safe,
            policy,
        })
    }

    /// A URL of the API: a relative path is appended to the base URL, an absolute URL is
    /// used as it is.
    pub(crate) fn resolve(&self, target: &str) -> Result<Url> {
        if target.starts_with("http://") || target.starts_with("https://") {
            return Url::parse(target).map_err(invalid_url);
        }
        if target.contains(['?', '#']) {
            let separator = if target.starts_with('/') { "" } else { "/" };
            return Url::parse(&format!("{}{separator}{target}", self.inner.base))
                .map_err(invalid_url);
        }
        // Only the path changes: no need to parse the scheme and host again.
        let mut url = self.inner.base_url.clone();
        let prefix = url.path().trim_end_matches('/');
        let path: Cow<'_, str> = match (prefix.is_empty(), target.starts_with('/')) {
            (true, true) => Cow::Borrowed(target),
            (true, false) => Cow::Owned(format!("/{target}")),
            (false, true) => Cow::Owned(format!("{prefix}{target}")),
            (false, false) => Cow::Owned(format!("{prefix}/{target}")),
        };
        url.set_path(&path);
        Ok(url)
    }
}

fn invalid_url(error: impl std::fmt::Display) -> Error {
    Error::argument(format!("invalid URL: {error}"))
}

pub(super) fn decode_error(message: impl Into<String>) -> Error {
    Error::decode(message.into())
}
