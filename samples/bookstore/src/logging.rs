//! What the bookstore logs about a request, without its credentials.
//!
//! Each request is traced in a `request` span (tower-http's `TraceLayer`, at `DEBUG`) that
//! names the method, the URI and the version, with [`request_span`]: the value of every query
//! parameter whose name looks like a credential is replaced by `[redacted]`
//! ([`redact_query`]), and no request header is recorded. The values of the
//! [`sensitive_headers`] are marked sensitive as each request arrives, so that a dependency
//! that prints request headers with `{:?}` shows `Sensitive` instead.
//!
//! hyper logs nothing (its logging is behind an unstable `cfg`), and the HALO layer's audit
//! trail records paths without their queries. Run with `RUST_LOG=trace`, the bookstore prints
//! neither a token sent in a query string nor a credential header (`tests/limits.rs` checks
//! it). What a caller sends in a body, such as an MCP request's arguments, rmcp prints at
//! `DEBUG` and `TRACE`.

use std::borrow::Cow;

use axum::http::header::{AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION};
use axum::http::{HeaderName, Request, Uri};
use percent_encoding::percent_decode_str;

use crate::auth::API_KEY_HEADER;
use tracing::Span;

/// The request headers whose values are never logged (marked sensitive on arrival): the
/// credentials, the API key's header ([`auth::API_KEY_HEADER`](crate::auth::API_KEY_HEADER))
/// included.
#[must_use]
pub fn sensitive_headers() -> [HeaderName; 4] {
    [
        AUTHORIZATION,
        PROXY_AUTHORIZATION,
        COOKIE,
        HeaderName::try_from(API_KEY_HEADER).expect("API_KEY_HEADER is a valid header name"),
    ]
}

/// Query parameters whose values are never logged: those whose names end with one of these,
/// ignoring case and anything but letters and digits (`access_token`, `api_key`, `apiKey`,
/// `X-API-Key`, `client_secret`, `password`, `user[password]`, ...). A few names that only
/// look like one (`monkey`) lose their values in the log too.
const SECRET_NAME_ENDINGS: &[&str] = &[
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "pwd",
    "auth",
    "authorization",
    "credential",
    "credentials",
    "signature",
    "sig",
    "session",
    "sessionid",
    "cookie",
];

/// What replaces a secret value.
const REDACTED: &str = "[redacted]";

/// The `request` span of `request`: its method, its URI with credentials redacted
/// ([`redact_uri`]) and its version; no headers.
pub fn request_span<B>(request: &Request<B>) -> Span {
    tracing::debug_span!(
        "request",
        method = %request.method(),
        uri = %redact_uri(request.uri()),
        version = ?request.version(),
    )
}

/// `uri` as it is logged: its query's credentials redacted ([`redact_query`]).
///
/// ```
/// let uri = "/api/books?q=dune&access_token=SECRET".parse().unwrap();
/// assert_eq!(bookstore::logging::redact_uri(&uri), "/api/books?q=dune&access_token=[redacted]");
/// ```
#[must_use]
pub fn redact_uri(uri: &Uri) -> String {
    let text = uri.to_string();
    match text.split_once('?') {
        Some((before, query)) => format!("{before}?{}", redact_query(query)),
        None => text,
    }
}

/// `query` with the value of every parameter whose name looks like a credential (see
/// [`is_secret_name`]) replaced by `[redacted]`; everything else as it was.
///
/// ```
/// use bookstore::logging::redact_query;
///
/// assert_eq!(redact_query("q=dune&limit=5"), "q=dune&limit=5");
/// assert_eq!(
///     redact_query("Access_Token=a&api%2Dkey=b&password=c&q=d"),
///     "Access_Token=[redacted]&api%2Dkey=[redacted]&password=[redacted]&q=d"
/// );
/// ```
#[must_use]
pub fn redact_query(query: &str) -> Cow<'_, str> {
    let secret = |pair: &str| {
        pair.split_once('=')
            .is_some_and(|(name, value)| !value.is_empty() && is_secret_name(name))
    };
    if !query.split('&').any(secret) {
        return Cow::Borrowed(query);
    }
    let pairs: Vec<Cow<'_, str>> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if secret(pair) => Cow::Owned(format!("{name}={REDACTED}")),
            _ => Cow::Borrowed(pair),
        })
        .collect();
    Cow::Owned(pairs.join("&"))
}

/// Whether a query parameter named `name` (percent-encoded, as sent) may carry a
/// credential: its decoded name, in lower case and with only its letters and digits, ends
/// with `token`, `key`, `secret`, `password`, `auth`, `signature`, `session`, ....
///
/// ```
/// use bookstore::logging::is_secret_name;
///
/// for name in ["access_token", "token", "api_key", "apikey", "KEY", "X-Api-Key", "client_secret", "password", "access%5Ftoken"] {
///     assert!(is_secret_name(name), "{name}");
/// }
/// for name in ["q", "tags", "city", "limit", "author"] {
///     assert!(!is_secret_name(name), "{name}");
/// }
/// ```
#[must_use]
pub fn is_secret_name(name: &str) -> bool {
    let decoded = percent_decode_str(name).decode_utf8_lossy();
    let folded: String = decoded
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    SECRET_NAME_ENDINGS
        .iter()
        .any(|ending| folded.ends_with(ending))
}
