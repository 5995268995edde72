//! Answers HALO discovery requests from the registry's pre-serialised bytes.

use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use halo_protocol::{MEDIA_TYPE, PROBLEM_MEDIA_TYPE, Problem, TagFilter, accepts_halo};
use http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, VARY};
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode};

use crate::registry::{Cached, Registry};

/// What discovery responses vary on.
const VARY_ACCEPT: HeaderValue = HeaderValue::from_static("accept");
const LLM_JSON: HeaderValue = HeaderValue::from_static(MEDIA_TYPE);
const PROBLEM_JSON: HeaderValue = HeaderValue::from_static(PROBLEM_MEDIA_TYPE);
const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache");

/// The registry plus the response settings.
#[derive(Debug)]
pub(crate) struct Discovery {
    registry: Registry,
    cache_control: HeaderValue,
}

impl Discovery {
    pub(crate) fn new(registry: Registry, max_age: Duration) -> Self {
        let cache_control = format!("public, max-age={}", max_age.as_secs());
        Self {
            registry,
            cache_control: HeaderValue::try_from(cache_control)
                .expect("digits are a valid header value"),
        }
    }

    /// Whether a request is HALO discovery: `OPTIONS` accepting `application/llm+json`.
    pub(crate) fn is_discovery<B>(request: &Request<B>) -> bool {
        request.method() == Method::OPTIONS
            && request
                .headers()
                .get_all(ACCEPT)
                .iter()
                .any(|value| value.to_str().is_ok_and(accepts_halo))
    }

    /// The discovery response: the manifest at `/`, a path's schemas, `304` or `404`.
    pub(crate) fn respond<B>(&self, request: &Request<B>) -> Response {
        let uri = request.uri();
        let found = if uri.path() == "/" {
            Some(self.registry.manifest(&TagFilter::from_query(uri.query())))
        } else {
            self.registry
                .path(uri.path())
                .map(|entry| entry.schemas.clone())
        };
        match found {
            Some(cached) if matches_etag(request.headers(), &cached.etag) => {
                self.cached(StatusCode::NOT_MODIFIED, cached.etag, Body::empty())
            }
            Some(Cached { body, etag }) => {
                let mut response = self.cached(StatusCode::OK, etag, Body::from(body));
                response.headers_mut().insert(CONTENT_TYPE, LLM_JSON);
                response
            }
            None => not_found(uri.path()),
        }
    }

    /// The methods a described path serves, for `Allow`.
    pub(crate) fn allow(&self, path: &str) -> Option<HeaderValue> {
        self.registry.path(path).map(|entry| entry.allow.clone())
    }

    fn cached(&self, status: StatusCode, etag: HeaderValue, body: Body) -> Response {
        let mut response = Response::new(body);
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(ETAG, etag);
        headers.insert(CACHE_CONTROL, self.cache_control.clone());
        headers.insert(VARY, VARY_ACCEPT);
        response
    }
}

/// Adds `Vary: Accept` to an `OPTIONS` response the application gave, since the layer chose
/// it by looking at `Accept`.
pub(crate) fn vary_on_accept(headers: &mut HeaderMap) {
    headers.append(VARY, VARY_ACCEPT);
}

fn not_found(path: &str) -> Response {
    let problem = Problem::new(404)
        .with_detail("no operation is described at this path")
        .with_instance(path.chars().take(256).collect::<String>());
    let mut response = Response::new(Body::from(problem.to_json()));
    *response.status_mut() = StatusCode::NOT_FOUND;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, PROBLEM_JSON);
    headers.insert(CACHE_CONTROL, NO_CACHE);
    headers.insert(VARY, VARY_ACCEPT);
    response
}

/// Whether `If-None-Match` names this entity tag (weak comparison, `*` matches anything).
fn matches_etag(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let ours = etag.as_bytes();
    headers.get_all(IF_NONE_MATCH).iter().any(|value| {
        value.as_bytes().split(|b| *b == b',').any(|candidate| {
            let candidate = candidate.trim_ascii();
            let candidate = candidate.strip_prefix(b"W/").unwrap_or(candidate);
            candidate == b"*" || candidate == ours
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(IF_NONE_MATCH, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn etag_matching() {
        let etag = HeaderValue::from_static("\"abc\"");
        assert!(matches_etag(&headers("\"abc\""), &etag));
        assert!(matches_etag(&headers("W/\"abc\""), &etag));
        assert!(matches_etag(&headers("\"x\", \"abc\""), &etag));
        assert!(matches_etag(&headers("*"), &etag));
        assert!(!matches_etag(&headers("\"abcd\""), &etag));
        assert!(!matches_etag(&headers("abc"), &etag));
        assert!(!matches_etag(&HeaderMap::new(), &etag));
    }
}
