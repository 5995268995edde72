//! The playground: one page where a developer sees the API's tools and tries them.

use std::convert::Infallible;
use std::fmt;
use std::future::{Ready, ready};
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::OriginalUri;
use axum::response::Response;
use http::header::{
    ALLOW, CACHE_CONTROL, CONTENT_SECURITY_POLICY, LOCATION, REFERRER_POLICY,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Uri};
use tower_service::Service;

use crate::discovery::conditional;
use crate::problem;
use crate::registry::Cached;

/// The page, with `{{api_base}}` where the API's base goes (HTML-escaped).
const INDEX_TEMPLATE: &str = include_str!("assets/index.html");

/// Assets are not content-addressed, so a browser revalidates them (a `304` when unchanged).
const REVALIDATE: HeaderValue = HeaderValue::from_static("no-cache");
const NOSNIFF: HeaderValue = HeaderValue::from_static("nosniff");
const NO_REFERRER: HeaderValue = HeaderValue::from_static("no-referrer");
const DENY: HeaderValue = HeaderValue::from_static("DENY");
const GET_HEAD: HeaderValue = HeaderValue::from_static("GET, HEAD");

/// One file of the page: its bytes and entity tag, and its media type.
#[derive(Debug)]
struct Asset {
    content: Cached,
    content_type: HeaderValue,
}

impl Asset {
    fn new(content: &str, content_type: &'static str) -> Self {
        Self {
            content: Cached::new(content.as_bytes().to_vec()),
            content_type: HeaderValue::from_static(content_type),
        }
    }
}

/// The files that do not depend on the configuration, shared by every playground.
struct Statics {
    script: Asset,
    approvals: Asset,
    style: Asset,
    icon: Asset,
}

static STATICS: LazyLock<Statics> = LazyLock::new(|| Statics {
    script: Asset::new(
        include_str!("assets/playground.js"),
        "text/javascript; charset=utf-8",
    ),
    approvals: Asset::new(
        include_str!("assets/approvals.js"),
        "text/javascript; charset=utf-8",
    ),
    style: Asset::new(
        include_str!("assets/playground.css"),
        "text/css; charset=utf-8",
    ),
    icon: Asset::new(include_str!("assets/favicon.svg"), "image/svg+xml"),
});

/// A browser page where a developer sees the API's tools and tries them: a tower service to
/// mount with [`Router::nest_service`](axum::Router::nest_service) at a path the app chooses,
/// such as `/playground`.
///
/// The page asks the API itself, from the browser, with the credentials typed into it
/// (an `Authorization` value and an API key in a header the user names, kept in the page's
/// memory only), so it lists exactly the tools that caller may see. It:
///
/// - lists the tools of the manifest (`OPTIONS /`), filtered by tag on the server (`?tags=`);
/// - shows a tool's schema (`OPTIONS` on its path): `why`, description, effects, limits, and
///   its input and output schemas;
/// - builds a form from the input (numbers as numbers, booleans as checkboxes, enums as
///   selects, objects and arrays as JSON), places each argument in the path, query, headers
///   or body as its `input` entry says, and calls the tool with `Accept: text/event-stream`,
///   showing every event as it arrives and then the result (a broken stream is resumed with
///   `Last-Event-ID` and `Halo-Call-Id`, as a HALO client does);
/// - shows problem details (status, title, detail, and each error with its JSON Pointer);
/// - shows a call held for approval: a `202` as its approval's id and state, read again from
///   its `Location` on demand until it is decided and run, or an `approval_pending` event;
/// - when the credentials may list approvals (`GET /.well-known/halo/approvals` answers),
///   lists the pending ones with their tool, call, caller and arguments, and approves or
///   denies them, with an optional reason.
///
/// Everything the page needs is served by this service (no external scripts, styles or
/// fonts), so it works offline. Every answer carries a strict `Content-Security-Policy`
/// (scripts, styles and images from the page's own origin only, requests to the page's
/// origin and the API's), `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`
/// and `X-Frame-Options: DENY`; assets carry an `ETag` and `Cache-Control: no-cache`, and a
/// matching `If-None-Match` gets `304`. Only `GET` and `HEAD` are answered (others get
/// `405`); an unknown file gets a `404` problem.
///
/// The page finds its files by relative URLs, so it works under any mount path; a request for
/// the mount path without its trailing slash (`/playground`) is redirected to it
/// (`/playground/`).
///
/// The playground describes nothing itself and bypasses nothing: every request it makes is an
/// ordinary request to the API, checked by its [`HaloLayer`](crate::HaloLayer) like any other.
/// It is off by default (feature `playground`); serve it where developers work, and think
/// twice before exposing it in production.
///
/// ```
/// use axum::Router;
/// use halo_axum::HaloLayer;
/// use halo_axum::playground::Playground;
/// use utoipa_axum::{router::OpenApiRouter, routes};
///
/// /// Say hello.
/// #[utoipa::path(get, path = "/hello", tags = ["greetings", "read"],
///                responses((status = 200, body = String)))]
/// async fn hello() -> axum::Json<&'static str> {
///     axum::Json("hello")
/// }
///
/// let (router, api) = OpenApiRouter::new().routes(routes!(hello)).split_for_parts();
/// let app: Router = router
///     .layer(HaloLayer::from_openapi(api))
///     .nest_service("/playground", Playground::new());
/// # let _ = app;
/// ```
#[derive(Clone)]
#[must_use]
pub struct Playground {
    inner: Arc<Inner>,
}

struct Inner {
    /// The API's base as the page is told it.
    api_base: String,
    index: Asset,
    csp: HeaderValue,
}

impl fmt::Debug for Playground {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Playground")
            .field("api_base", &self.inner.api_base)
            .finish_non_exhaustive()
    }
}

impl Default for Playground {
    fn default() -> Self {
        Self::new()
    }
}

impl Playground {
    /// A playground for the API served at the root of the page's own origin (where
    /// `OPTIONS /` answers discovery).
    ///
    /// ```
    /// let app: axum::Router =
    ///     axum::Router::new().nest_service("/playground", halo_axum::playground::Playground::new());
    /// # let _ = app;
    /// ```
    pub fn new() -> Self {
        Self::with_base("/", None)
    }

    /// Where the API is: a path on the page's own origin (`/v1`, for an API whose
    /// discovery is `OPTIONS /v1/` and whose tools' paths are under `/v1`), or an absolute
    /// `http`/`https` URL of another origin, which the page's `Content-Security-Policy` then
    /// allows it to reach (that API must answer the browser's CORS requests). A query or
    /// fragment is ignored. The page sends the credentials typed into it to this origin only.
    ///
    /// ```
    /// use axum::http::Uri;
    /// use halo_axum::playground::Playground;
    ///
    /// let same_origin = Playground::new().api_base(Uri::from_static("/v1"));
    /// let elsewhere = Playground::new().api_base(Uri::from_static("https://api.example.com"));
    /// # let _ = (same_origin, elsewhere);
    /// ```
    ///
    /// # Panics
    /// When `base` is neither a path starting with `/` nor an `http` or `https` URL: a
    /// mistake in the app's configuration, found when it is built.
    pub fn api_base(self, base: Uri) -> Self {
        let path = base.path();
        match (base.scheme_str(), base.authority()) {
            (None, None) if path.starts_with('/') => Self::with_base(path, None),
            (Some(scheme @ ("http" | "https")), Some(authority)) => {
                let origin = format!("{scheme}://{authority}");
                Self::with_base(&format!("{origin}{path}"), Some(&origin))
            }
            _ => panic!(
                "Playground::api_base: {base} is neither a path starting with `/` nor an http(s) URL"
            ),
        }
    }

    /// The playground for the API at `api_base`, whose requests may also go to `origin`.
    fn with_base(api_base: &str, origin: Option<&str>) -> Self {
        let index = INDEX_TEMPLATE.replace("{{api_base}}", &escape_html(api_base));
        let connect = origin.map_or_else(String::new, |origin| format!(" {origin}"));
        let csp = format!(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'{connect}; base-uri 'none'; form-action 'none'; \
             frame-ancestors 'none'"
        );
        Self {
            inner: Arc::new(Inner {
                api_base: api_base.to_owned(),
                index: Asset::new(&index, "text/html; charset=utf-8"),
                // An origin from a parsed `Uri` holds no control characters.
                csp: HeaderValue::try_from(csp).expect("a policy from a parsed URI is a header"),
            }),
        }
    }

    fn respond<B>(&self, request: &Request<B>) -> Response {
        let mut response = self.answer(request);
        let headers = response.headers_mut();
        headers.insert(CONTENT_SECURITY_POLICY, self.inner.csp.clone());
        headers.insert(X_CONTENT_TYPE_OPTIONS, NOSNIFF);
        headers.insert(REFERRER_POLICY, NO_REFERRER);
        headers.insert(X_FRAME_OPTIONS, DENY);
        response
    }

    fn answer<B>(&self, request: &Request<B>) -> Response {
        let method = request.method();
        if method != Method::GET && method != Method::HEAD {
            let mut response = problem::response(
                StatusCode::METHOD_NOT_ALLOWED,
                "the playground answers GET and HEAD only",
            );
            response.headers_mut().insert(ALLOW, GET_HEAD);
            return response;
        }
        let statics = &*STATICS;
        let asset = match request.uri().path() {
            "" | "/" => {
                if let Some(redirect) = trailing_slash(request) {
                    return redirect;
                }
                &self.inner.index
            }
            "/index.html" => &self.inner.index,
            "/playground.js" => &statics.script,
            "/approvals.js" => &statics.approvals,
            "/playground.css" => &statics.style,
            "/favicon.svg" => &statics.icon,
            _ => {
                return problem::response(StatusCode::NOT_FOUND, "the playground has no such file");
            }
        };
        serve(asset, request.headers(), method == Method::HEAD)
    }
}

/// A redirect to the page's address with a trailing slash, when it was asked for without one
/// (the page's relative links would otherwise miss its files).
fn trailing_slash<B>(request: &Request<B>) -> Option<Response> {
    // Nested in a router, the request's own URI has lost the mount path; the router keeps
    // the one the browser asked for.
    let seen = request
        .extensions()
        .get::<OriginalUri>()
        .map_or_else(|| request.uri(), |original| &original.0);
    let path = seen.path();
    if path.ends_with('/') {
        return None;
    }
    // Relative to the page's own address, so it holds whatever prefix a proxy added.
    let last = path.rsplit('/').next().unwrap_or_default();
    let location = match seen.query() {
        Some(query) => format!("{last}/?{query}"),
        None => format!("{last}/"),
    };
    let location = HeaderValue::try_from(location).ok()?;
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::PERMANENT_REDIRECT;
    response.headers_mut().insert(LOCATION, location);
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Some(response)
}

/// `asset`, or `304` when the client holds it already; revalidated on every use.
fn serve(asset: &Asset, request: &HeaderMap, head: bool) -> Response {
    let mut response = conditional(
        asset.content.clone(),
        request,
        asset.content_type.clone(),
        head,
    );
    response.headers_mut().insert(CACHE_CONTROL, REVALIDATE);
    response
}

/// `text` safe inside a double-quoted HTML attribute.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

impl<B> Service<Request<B>> for Playground {
    type Response = Response;
    type Error = Infallible;
    type Future = Ready<Result<Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        ready(Ok(self.respond(&request)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_is_escaped_into_the_page() {
        let playground = Playground::new().api_base(Uri::from_static("/v1/a%22b"));
        let bytes = playground.inner.index.content.body.to_bytes();
        let page = std::str::from_utf8(&bytes).unwrap();
        assert!(
            page.contains(r#"content="/v1/a%22b""#),
            "the page names its base"
        );
        assert_eq!(
            escape_html(r#"<a href="x">'&'"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;"
        );
    }

    #[test]
    fn another_origin_is_allowed_to_be_reached() {
        let playground =
            Playground::new().api_base(Uri::from_static("https://api.example.com:8443/v1?x=1"));
        assert_eq!(playground.inner.api_base, "https://api.example.com:8443/v1");
        let csp = playground.inner.csp.to_str().unwrap();
        assert!(
            csp.contains("connect-src 'self' https://api.example.com:8443;"),
            "{csp}"
        );
        assert!(
            !Playground::new()
                .inner
                .csp
                .to_str()
                .unwrap()
                .contains("https:")
        );
    }

    #[test]
    #[should_panic(expected = "neither a path")]
    fn a_base_of_another_scheme_is_a_mistake() {
        let _ = Playground::new().api_base(Uri::from_static("ftp://example.com/"));
    }
}
