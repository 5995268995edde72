//! Answers HALO discovery requests from pre-serialised bytes: the manifest at `/` and each
//! described path's schemas, for the caller's audience and language.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use halo_protocol::{MEDIA_TYPE, SearchQuery, TagFilter, accepts_halo, negotiate_language};
use http::header::{
    ACCEPT, ACCEPT_LANGUAGE, ALLOW, CACHE_CONTROL, CONTENT_LANGUAGE, CONTENT_LENGTH, CONTENT_TYPE,
    ETAG, IF_NONE_MATCH, VARY,
};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode};

use crate::Principal;
use crate::auth::Gate;
use crate::problem;
use crate::registry::{Audience, Cached, Registry, View};

/// What discovery responses vary on when nothing about the caller matters.
const VARY_ACCEPT: HeaderValue = HeaderValue::from_static("accept");
const LLM_JSON: HeaderValue = HeaderValue::from_static(MEDIA_TYPE);

/// The most views (audience × language) kept rendered; past it, a view is rendered for the
/// request and dropped.
const MAX_VIEWS: usize = 256;

/// A rendered view's audience (`None`: everyone) and language (`None`: the base texts).
type ViewKey = (Option<Audience>, Option<String>);

/// Who is asking, as far as discovery cares.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Viewer<'a> {
    /// No authenticator: every operation is shown to everyone.
    Everyone,
    /// An identified caller, or an anonymous one (`None`).
    Caller(Option<&'a Principal>),
}

/// The registry plus the response settings and the rendered views.
#[derive(Debug)]
pub(crate) struct Discovery {
    pub(crate) registry: Registry,
    /// For responses that are the same for every caller.
    cache_public: HeaderValue,
    /// For responses that depend on the caller.
    cache_private: HeaderValue,
    /// `Vary` for responses that depend on the caller (and the language).
    vary_caller: HeaderValue,
    /// `Vary` for responses that depend only on `Accept` (and the language).
    vary_public: HeaderValue,
    views: Mutex<HashMap<ViewKey, Arc<View>>>,
}

impl Discovery {
    pub(crate) fn new(registry: Registry, max_age: Duration) -> Self {
        let seconds = max_age.as_secs();
        let localised = !registry.languages().is_empty();
        let language = if localised { ", accept-language" } else { "" };
        let mut caller = format!("accept, authorization{language}");
        for header in registry.key_headers() {
            caller.push_str(", ");
            caller.push_str(header.as_str());
        }
        let value = |text: String| HeaderValue::try_from(text).expect("header names and digits");
        Self {
            cache_public: value(format!("public, max-age={seconds}")),
            cache_private: value(format!("private, max-age={seconds}")),
            vary_caller: value(caller),
            vary_public: value(format!("accept{language}")),
            views: Mutex::new(HashMap::new()),
            registry,
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

    /// The discovery response for the caller `parts` come from, when an authenticator is
    /// set: what it may call, or the `401` the gate answers.
    pub(crate) async fn respond_to(&self, gate: &Gate, parts: &Parts) -> Response {
        match gate.discoverer(parts).await {
            Err(refused) => refused_discovery(refused),
            Ok(caller) => self.respond(&parts.uri, &parts.headers, Viewer::Caller(caller.as_ref())),
        }
    }

    /// The discovery response: the manifest at `/`, a path's schemas, `304` or `404`. A path
    /// whose every operation is hidden from the viewer is a `404` like an undescribed one.
    pub(crate) fn respond(
        &self,
        uri: &http::Uri,
        headers: &HeaderMap,
        viewer: Viewer<'_>,
    ) -> Response {
        let languages = self.registry.languages();
        let language = headers
            .get(ACCEPT_LANGUAGE)
            .filter(|_| !languages.is_empty())
            .and_then(|v| v.to_str().ok())
            .and_then(|header| negotiate_language(header, languages.iter().map(String::as_str)));
        let audience = match viewer {
            Viewer::Everyone => None,
            Viewer::Caller(caller) => Some(self.registry.audience(caller)),
        };
        let personal = audience.is_some();
        let view = self.view(audience, language);
        let index = self.registry.path_index(uri.path());
        let found = if uri.path() == "/" {
            let filter = TagFilter::from_query(uri.query());
            match SearchQuery::from_query(uri.query()) {
                Ok(None) => Some(view.manifest(&self.registry, &filter, language)),
                Ok(Some(search)) => Some(view.search(&self.registry, &search, &filter, language)),
                Err(invalid) => {
                    let mut response =
                        problem::response(StatusCode::BAD_REQUEST, invalid.to_string());
                    response.headers_mut().insert(VARY, self.vary(personal));
                    if index.is_some() {
                        response.headers_mut().insert(ALLOW, view.allow(index));
                    }
                    return response;
                }
            }
        } else {
            index.and_then(|index| view.path(index).cloned())
        };
        let mut response = match found {
            Some(cached) => {
                let mut response = conditional(cached, headers, LLM_JSON, false);
                let headers = response.headers_mut();
                let cache = if personal {
                    &self.cache_private
                } else {
                    &self.cache_public
                };
                headers.insert(CACHE_CONTROL, cache.clone());
                headers.insert(VARY, self.vary(personal));
                response
            }
            None => {
                let mut response = not_found(uri.path());
                response.headers_mut().insert(VARY, self.vary(personal));
                response
            }
        };
        if let Some(language) = language
            && let Ok(value) = HeaderValue::try_from(language)
        {
            response.headers_mut().insert(CONTENT_LANGUAGE, value);
        }
        // Said here, and only what the caller may call: axum's method router adds the route's
        // every method to an answer without `Allow` when the layer wraps each route. Not for
        // the manifest at `/` unless an operation is described there: no tool is hidden by
        // what axum would say of the app's own route, and the manifest is the hot path.
        if index.is_some() || uri.path() != "/" {
            response.headers_mut().insert(ALLOW, view.allow(index));
        }
        response
    }

    /// The view of an audience in a language: the full one, or one rendered on first use.
    fn view(&self, audience: Option<Audience>, language: Option<&str>) -> ViewRef<'_> {
        if audience.is_none() && language.is_none() {
            return ViewRef::Full(self.registry.full());
        }
        let key = (audience, language.map(str::to_owned));
        let mut views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(view) = views.get(&key) {
            return ViewRef::Rendered(Arc::clone(view));
        }
        let view = Arc::new(self.registry.render(key.0.as_ref(), language));
        if views.len() < MAX_VIEWS {
            views.insert(key, Arc::clone(&view));
        }
        ViewRef::Rendered(view)
    }

    /// `Allow` for a plain `OPTIONS` the application has no answer for (and gave no `Allow`
    /// of its own): the methods an anonymous caller may call at the path (every described
    /// one without an authenticator), `None` where it may call nothing, so that nothing
    /// hidden is hinted at.
    pub(crate) fn allow(&self, path: &str, authenticated: bool) -> Option<HeaderValue> {
        let index = self.registry.path_index(path)?;
        let audience = authenticated.then(|| self.registry.audience(None));
        let view = self.view(audience, None);
        view.path(index).map(|_| view.allow(Some(index)))
    }

    fn vary(&self, personal: bool) -> HeaderValue {
        if personal {
            self.vary_caller.clone()
        } else {
            self.vary_public.clone()
        }
    }
}

/// A pre-rendered entity as the answer to a `GET` (or a `HEAD`, `head`) with `request`'s
/// headers: `304` when `If-None-Match` names its tag, else `200` with the body as
/// `content_type` (none for `HEAD`, its length still given); its `ETag` either way.
pub(crate) fn conditional(
    cached: Cached,
    request: &HeaderMap,
    content_type: HeaderValue,
    head: bool,
) -> Response {
    let Cached { body, etag } = cached;
    let mut response = if matches_etag(request, &etag) {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else if head {
        let mut response = Response::new(Body::empty());
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, content_type);
        headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        response
    } else {
        let mut response = Response::new(Body::new(body.into_body()));
        response.headers_mut().insert(CONTENT_TYPE, content_type);
        response
    };
    response.headers_mut().insert(ETAG, etag);
    response
}

/// A view borrowed from the registry or shared from the cache.
enum ViewRef<'a> {
    Full(&'a View),
    Rendered(Arc<View>),
}

impl std::ops::Deref for ViewRef<'_> {
    type Target = View;

    fn deref(&self) -> &View {
        match self {
            Self::Full(view) => view,
            Self::Rendered(view) => view,
        }
    }
}

/// Adds `Vary: Accept` to an `OPTIONS` response the application gave, since the layer chose
/// it by looking at `Accept`.
pub(crate) fn vary_on_accept(headers: &mut HeaderMap) {
    headers.append(VARY, VARY_ACCEPT);
}

fn not_found(path: &str) -> Response {
    let problem = halo_protocol::Problem::new(404)
        .with_detail("no operation is described at this path")
        .with_instance(path.chars().take(256).collect::<String>());
    problem::from_problem(&problem)
}

/// Whether `If-None-Match` names this entity tag (weak comparison, `*` matches anything).
pub(crate) fn matches_etag(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let ours = etag.as_bytes();
    headers.get_all(IF_NONE_MATCH).iter().any(|value| {
        value.as_bytes().split(|b| *b == b',').any(|candidate| {
            let candidate = candidate.trim_ascii();
            let candidate = candidate.strip_prefix(b"W/").unwrap_or(candidate);
            candidate == b"*" || candidate == ours
        })
    })
}

/// A discovery the gate refused (`401`), with the `Allow` of a path nothing is described at:
/// axum's method router would otherwise add the route's own methods to it, which would tell
/// a caller without valid credentials a routed (perhaps hidden) path from an absent one.
pub(crate) fn refused_discovery(mut refused: Response) -> Response {
    refused
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static("OPTIONS"));
    refused
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
