//! Discovery documents beside HALO, generated from the same registry, so that an agent that
//! does not know HALO still finds the API (issue 14, item 6): an RFC 9727 API catalog, an
//! `llms.txt` digest and an A2A agent card.
//!
//! Each is opt-in ([`Catalogs`], given to
//! [`HaloBuilder::catalogs`](crate::HaloBuilder::catalogs)); with none chosen the layer adds
//! one branch on an `Option` to a request and nothing else, so that adding it changes
//! nothing the application already does. When one is chosen, the layer answers `GET` and
//! `HEAD` at its path *before* the application (a route of the app at that path no longer
//! sees those two methods); any other method at that path goes to the application.
//!
//! | document | path | media type | depends on the caller |
//! |---|---|---|---|
//! | API catalog ([`api_catalog`]) | `/.well-known/api-catalog` | `application/linkset+json` | no |
//! | digest ([`llms_txt`]) | `/llms.txt` | `text/markdown` | yes |
//! | agent card ([`agent_card`]) | `/.well-known/agent-card.json` | `application/json` | yes |
//!
//! The two that name tools are scoped to the caller the way discovery is: with an
//! [`Authenticator`](crate::Authenticator), each caller sees only the tools it may call
//! (`Registry::admits`), rendered once per audience (`Registry::audience`) and kept;
//! `Cache-Control: private` and `Vary` on the credential headers; bad credentials are a
//! `401`, and so is an anonymous caller when discovery requires credentials. A hidden tool's
//! name, path, method, tags and count never appear. Every answer carries an `ETag` and
//! answers `If-None-Match` with `304`, like discovery.

mod agent_card;
mod api_catalog;
mod llms_txt;
mod protected_resource;

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use axum::response::Response;
use http::header::{CACHE_CONTROL, LINK, VARY};
use http::{HeaderMap, HeaderValue, Method, Uri};
use serde_json::Value;

use crate::auth::ProtectedResource;
use crate::discovery::{Viewer, conditional};
use crate::registry::{Audience, Cached, Registry, Tool};

/// The token budget of `/llms.txt` unless told otherwise.
pub(crate) const DEFAULT_LLMS_TXT_BUDGET: usize = 4_000;

/// The most audiences whose documents are kept rendered; past it, a document is rendered for
/// the request and dropped (as discovery does).
const MAX_VIEWS: usize = 256;

const API_CATALOG_PATH: &str = "/.well-known/api-catalog";
const LLMS_TXT_PATH: &str = "/llms.txt";
const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// Which discovery documents the layer serves beside HALO, and what they link to. None by
/// default: give it to [`HaloBuilder::catalogs`](crate::HaloBuilder::catalogs).
///
/// - [`api_catalog`](Self::api_catalog): `GET /.well-known/api-catalog` (RFC 9727), a
///   linkset (RFC 9264) pointing at the HALO manifest, the OpenAPI document
///   ([`openapi_url`](Self::openapi_url)) and the documentation
///   ([`docs_url`](Self::docs_url), `/llms.txt`).
/// - [`llms_txt`](Self::llms_txt): `GET /llms.txt`, a Markdown digest (llmstxt.org) of the
///   tools the caller may call, grouped by tag, within a token budget
///   ([`llms_txt_budget`](Self::llms_txt_budget)); when the tools do not all fit, it says
///   how to search the rest.
/// - [`agent_card`](Self::agent_card): `GET /.well-known/agent-card.json`, an A2A agent card
///   whose skills are the API's hosted agents (`"kind": "agent"`) the caller may see; not
///   served when the API hosts none.
///
/// The layer answers `GET` and `HEAD` at these paths before the application; other methods
/// go to the application. Links are written as paths of the app unless
/// [`base_url`](Self::base_url) says where the API is reached: RFC 9264 and A2A prefer
/// absolute URLs, which only the deployment knows (a proxy may change the scheme, host and
/// prefix), so set it in production.
///
/// ```
/// use halo_axum::{Catalogs, HaloLayer};
/// use http::Uri;
/// # use utoipa_axum::{router::OpenApiRouter, routes};
/// # /// Ping.
/// # #[utoipa::path(get, path = "/ping", tags = ["health"], responses((status = 200)))]
/// # async fn ping() {}
/// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
///
/// let layer = HaloLayer::builder(api)
///     .catalogs(
///         Catalogs::new()
///             .api_catalog(true)
///             .openapi_url(Uri::from_static("/openapi.json"))
///             .llms_txt(true)
///             .llms_txt_budget(2_000)
///             .agent_card(true)
///             .base_url(Uri::from_static("https://api.example.com")),
///     )
///     .build()
///     .expect("valid HALO metadata");
/// # let _: axum::Router = router.layer(layer);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use]
pub struct Catalogs {
    api_catalog: bool,
    llms_txt: bool,
    llms_txt_budget: usize,
    agent_card: bool,
    openapi_url: Option<Uri>,
    docs_url: Option<Uri>,
    base_url: Option<Uri>,
    /// The protected-resource metadata to serve (`HaloBuilder::protected_resource`).
    protected_resource: Option<ProtectedResource>,
}

impl Default for Catalogs {
    fn default() -> Self {
        Self::new()
    }
}

impl Catalogs {
    /// No document served; turn each on with its method.
    ///
    /// ```
    /// use halo_axum::Catalogs;
    ///
    /// let only_the_digest = Catalogs::new().llms_txt(true);
    /// # let _ = only_the_digest;
    /// ```
    pub fn new() -> Self {
        Self {
            api_catalog: false,
            llms_txt: false,
            llms_txt_budget: DEFAULT_LLMS_TXT_BUDGET,
            agent_card: false,
            openapi_url: None,
            docs_url: None,
            base_url: None,
            protected_resource: None,
        }
    }

    /// Every document: the API catalog, `/llms.txt` (4,000 tokens) and the agent card (when
    /// the API hosts agents).
    ///
    /// ```
    /// use halo_axum::Catalogs;
    /// use http::Uri;
    ///
    /// let catalogs = Catalogs::all().openapi_url(Uri::from_static("/openapi.json"));
    /// # let _ = catalogs;
    /// ```
    pub fn all() -> Self {
        Self::new()
            .api_catalog(true)
            .llms_txt(true)
            .agent_card(true)
    }

    /// Whether `GET /.well-known/api-catalog` answers with the API catalog of RFC 9727: an
    /// `application/linkset+json` document (RFC 9264) that links the API to its HALO
    /// manifest and, when named, its OpenAPI document and documentation. Its `HEAD` answers
    /// the same headers, with `Link: <...>; rel="api-catalog"` as RFC 9727 asks.
    ///
    /// ```
    /// use halo_axum::Catalogs;
    ///
    /// let catalogs = Catalogs::new().api_catalog(true);
    /// # let _ = catalogs;
    /// ```
    pub fn api_catalog(mut self, on: bool) -> Self {
        self.api_catalog = on;
        self
    }

    /// Where the application serves its OpenAPI document (a path of the app such as
    /// `/openapi.json`, or an absolute URL): the API catalog links it as a `service-desc`.
    /// The layer does not serve it; the application does. A path ending in `.yaml` or `.yml`
    /// is typed `application/vnd.oai.openapi`, any other `application/vnd.oai.openapi+json`.
    ///
    /// ```
    /// use halo_axum::Catalogs;
    /// use http::Uri;
    ///
    /// let catalogs = Catalogs::new()
    ///     .api_catalog(true)
    ///     .openapi_url(Uri::from_static("/openapi.json"));
    /// # let _ = catalogs;
    /// ```
    pub fn openapi_url(mut self, url: Uri) -> Self {
        self.openapi_url = Some(url);
        self
    }

    /// Where people read about the API (a page of the app such as `/playground`, or an
    /// absolute URL): the API catalog links it as a `service-doc`, and the agent card as its
    /// `documentationUrl`.
    ///
    /// ```
    /// use halo_axum::Catalogs;
    /// use http::Uri;
    ///
    /// let catalogs = Catalogs::all().docs_url(Uri::from_static("https://docs.example.com/api"));
    /// # let _ = catalogs;
    /// ```
    pub fn docs_url(mut self, url: Uri) -> Self {
        self.docs_url = Some(url);
        self
    }

    /// Whether `GET /llms.txt` answers with a Markdown digest of the tools the caller may
    /// call (the llmstxt.org format: `# title`, a `> summary`, then one section of
    /// `- [name](path): METHOD. summary` lines per tag, the tags with the most tools first).
    /// It stays within [`llms_txt_budget`](Self::llms_txt_budget); when the tools do not all
    /// fit, the tags that do not are summarised in a line each, and the digest ends with how
    /// to search the rest (`OPTIONS /?q=words`, `OPTIONS /?tags=name`, `OPTIONS /`, with
    /// `Accept: application/llm+json`).
    ///
    /// ```
    /// use halo_axum::Catalogs;
    ///
    /// let catalogs = Catalogs::new().llms_txt(true);
    /// # let _ = catalogs;
    /// ```
    pub fn llms_txt(mut self, on: bool) -> Self {
        self.llms_txt = on;
        self
    }

    /// The most tokens `/llms.txt` may take, as [`halo_protocol::estimate_tokens`] counts
    /// them (4,000 by default). The title, the summary and the closing note on how to find
    /// the tools are always written, even past a budget too small for them.
    ///
    /// ```
    /// use halo_axum::Catalogs;
    ///
    /// let catalogs = Catalogs::new().llms_txt(true).llms_txt_budget(1_500);
    /// # let _ = catalogs;
    /// ```
    pub fn llms_txt_budget(mut self, tokens: usize) -> Self {
        self.llms_txt_budget = tokens;
        self
    }

    /// Whether `GET /.well-known/agent-card.json` answers with an A2A agent card whose
    /// skills are the API's hosted agents (operations with `"kind": "agent"`, such as those
    /// of `halo_axum::agents::Agents`, feature `agents`) that the caller may see. It is not served when
    /// the API hosts no agent, nor to a caller who may see none (the application answers, as
    /// without the layer). The card names HALO as its transport and as a required extension:
    /// the agents run at `POST /agents/{name}/run`, not over A2A's JSON-RPC.
    ///
    /// ```
    /// use halo_axum::Catalogs;
    ///
    /// let catalogs = Catalogs::new().agent_card(true);
    /// # let _ = catalogs;
    /// ```
    pub fn agent_card(mut self, on: bool) -> Self {
        self.agent_card = on;
        self
    }

    /// Where clients reach the API: an absolute URL (`https://api.example.com`, or with a
    /// prefix, `https://example.com/api`), or a path prefix (`/api`). Every link the
    /// documents write is this followed by a path of the app; without it, links are paths
    /// of the app (relative references, which RFC 9264 discourages). The documents are still
    /// served at the paths the layer sees (`/llms.txt`, ...).
    ///
    /// ```
    /// use halo_axum::Catalogs;
    /// use http::Uri;
    ///
    /// let catalogs = Catalogs::all().base_url(Uri::from_static("https://api.example.com"));
    /// # let _ = catalogs;
    /// ```
    pub fn base_url(mut self, url: Uri) -> Self {
        self.base_url = Some(url);
        self
    }

    /// The same choice, with the RFC 9728 metadata of `resource` served as well (set by
    /// [`HaloBuilder::protected_resource`](crate::HaloBuilder::protected_resource)).
    pub(crate) fn with_protected_resource(mut self, resource: Option<ProtectedResource>) -> Self {
        self.protected_resource = resource;
        self
    }

    /// Whether any document is served.
    fn any(&self) -> bool {
        self.api_catalog || self.llms_txt || self.agent_card || self.protected_resource.is_some()
    }
}

/// One of the documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Document {
    ApiCatalog,
    LlmsTxt,
    AgentCard,
    /// The protected-resource metadata of RFC 9728: the API's (`0`), or its MCP
    /// endpoint's (`1`).
    ProtectedResource(usize),
}

impl Document {
    /// Whether what it says depends on the caller.
    pub(crate) fn is_personal(self) -> bool {
        !matches!(self, Self::ApiCatalog | Self::ProtectedResource(_))
    }
}

/// What the documents say about the API, and how they link.
#[derive(Debug)]
pub(crate) struct Site {
    /// `info.title`, on one line.
    title: String,
    /// `info.description`, as written.
    description: String,
    /// `info.version`.
    version: String,
    /// The base of every link: an absolute URL or a path, without a trailing `/`.
    base: String,
    /// The OpenAPI document's link, when named.
    openapi: Option<String>,
    /// The documentation's link, when named.
    docs: Option<String>,
    /// Whether `/llms.txt` is served (the other documents link it).
    llms_txt: bool,
}

impl Site {
    fn new(catalogs: &Catalogs, document: &Value) -> Self {
        let info = |key: &str| {
            document
                .pointer(&format!("/info/{key}"))
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or_default()
        };
        let base = catalogs.base_url.as_ref().map(base_of).unwrap_or_default();
        let resolve = |uri: &Uri| resolve(&base, uri);
        Self {
            title: one_line(info("title")),
            description: info("description").to_owned(),
            version: info("version").to_owned(),
            openapi: catalogs.openapi_url.as_ref().map(resolve),
            docs: catalogs.docs_url.as_ref().map(resolve),
            llms_txt: catalogs.llms_txt,
            base,
        }
    }

    /// The link to a path of the app (`/llms.txt`).
    fn href(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The API's name: its title, or `API`.
    fn name(&self) -> &str {
        if self.title.is_empty() {
            "API"
        } else {
            &self.title
        }
    }
}

/// The base of links from a configured URL: `scheme://authority/path` or `/path`, without a
/// trailing `/`.
fn base_of(uri: &Uri) -> String {
    let path = uri.path().trim_end_matches('/');
    let path = if path.starts_with('/') { path } else { "" };
    match (uri.scheme_str(), uri.authority()) {
        (Some(scheme), Some(authority)) => format!("{scheme}://{authority}{path}"),
        _ => path.to_owned(),
    }
}

/// A configured link: absolute as it is, a path after the base.
fn resolve(base: &str, uri: &Uri) -> String {
    if uri.scheme().is_some() {
        return uri.to_string();
    }
    let target = uri.path_and_query().map_or("/", |p| p.as_str());
    if target.starts_with('/') {
        format!("{base}{target}")
    } else {
        format!("{base}/{target}")
    }
}

/// `text` with every run of whitespace (newlines included) as one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters of `text`, with `…` when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
    }
}

/// A document rendered per audience: for everyone once (no authenticator), or per audience
/// on first use. `None` means "not for this caller" (an agent card without a visible agent).
#[derive(Debug)]
struct Scoped {
    everyone: Option<Cached>,
    views: Mutex<HashMap<Audience, Option<Cached>>>,
}

impl Scoped {
    fn new(everyone: Option<Cached>) -> Self {
        Self {
            everyone,
            views: Mutex::new(HashMap::new()),
        }
    }
}

/// The documents a layer serves, rendered from its registry.
#[derive(Debug)]
pub(crate) struct Documents {
    site: Site,
    api_catalog: Option<Cached>,
    /// `Link: <catalog>; rel="api-catalog"`, on the catalog's answers.
    catalog_link: Option<HeaderValue>,
    llms_txt: Option<Scoped>,
    llms_txt_budget: usize,
    agent_card: Option<Scoped>,
    /// The protected-resource metadata documents (the API's, and its MCP endpoint's when
    /// configured) and the paths they are served at.
    protected_resource: Vec<(String, Cached)>,
    cache_public: HeaderValue,
    cache_private: HeaderValue,
    /// `Vary` for the documents that depend on the caller: the credential headers.
    vary_caller: HeaderValue,
}

impl Documents {
    /// The documents `catalogs` asks for, from `document` (the OpenAPI JSON) and `registry`;
    /// `None` when it asks for none, or only for an agent card and the API hosts no agent.
    /// `personal`: an authenticator identifies callers, so the documents that name tools are
    /// rendered per audience rather than once.
    pub(crate) fn new(
        catalogs: Catalogs,
        document: &Value,
        registry: &Registry,
        max_age: Duration,
        personal: bool,
    ) -> Option<Self> {
        if !catalogs.any() {
            return None;
        }
        let site = Site::new(&catalogs, document);
        // Without an authenticator, discovery shows every tool to everyone.
        let everyone = |_: &Tool| true;
        let api_catalog = catalogs
            .api_catalog
            .then(|| Cached::new(api_catalog::render(&site)));
        let catalog_link = api_catalog.as_ref().and_then(|_| {
            HeaderValue::try_from(format!(
                "<{}>; rel=\"api-catalog\"",
                site.href(API_CATALOG_PATH)
            ))
            .ok()
        });
        let llms_txt = catalogs.llms_txt.then(|| {
            Scoped::new((!personal).then(|| {
                Cached::new(
                    llms_txt::render(&site, registry, &everyone, catalogs.llms_txt_budget)
                        .into_bytes(),
                )
            }))
        });
        let hosts_agents = registry.tools().any(Tool::is_agent);
        let agent_card = (catalogs.agent_card && hosts_agents).then(|| {
            Scoped::new(
                (!personal)
                    .then(|| agent_card::render(&site, registry, &everyone).map(Cached::new))
                    .flatten(),
            )
        });
        let protected_resource: Vec<_> = catalogs
            .protected_resource
            .iter()
            .flat_map(|resource| [Some(resource.clone()), resource.for_mcp()])
            .flatten()
            .map(|resource| {
                let rendered = protected_resource::render(&resource, document);
                (resource.served_path(), Cached::new(rendered))
            })
            .collect();
        if api_catalog.is_none()
            && llms_txt.is_none()
            && agent_card.is_none()
            && protected_resource.is_empty()
        {
            return None;
        }
        let seconds = max_age.as_secs();
        let mut vary = String::from("authorization");
        for header in registry.key_headers() {
            vary.push_str(", ");
            vary.push_str(header.as_str());
        }
        let value = |text: String| {
            HeaderValue::try_from(text).unwrap_or_else(|_| HeaderValue::from_static("no-cache"))
        };
        Some(Self {
            site,
            api_catalog,
            catalog_link,
            llms_txt,
            llms_txt_budget: catalogs.llms_txt_budget,
            agent_card,
            protected_resource,
            cache_public: value(format!("public, max-age={seconds}")),
            cache_private: value(format!("private, max-age={seconds}")),
            vary_caller: HeaderValue::try_from(vary)
                .unwrap_or_else(|_| HeaderValue::from_static("authorization")),
        })
    }

    /// The document a request asks for, when the layer serves it: `GET` or `HEAD` at its
    /// path.
    #[inline] // On the path of `Halo::call` of an app that opted in.
    pub(crate) fn document(&self, method: &Method, path: &str) -> Option<Document> {
        if method != Method::GET && method != Method::HEAD {
            return None;
        }
        match path {
            API_CATALOG_PATH if self.api_catalog.is_some() => Some(Document::ApiCatalog),
            LLMS_TXT_PATH if self.llms_txt.is_some() => Some(Document::LlmsTxt),
            AGENT_CARD_PATH if self.agent_card.is_some() => Some(Document::AgentCard),
            _ => self
                .protected_resource
                .iter()
                .position(|(served, _)| served == path)
                .map(Document::ProtectedResource),
        }
    }

    /// The answer to a `GET` (or `HEAD`) of `document` by `viewer`, with the request's
    /// `headers`; `None` when the document is not for this caller (the application answers).
    pub(crate) fn answer(
        &self,
        document: Document,
        registry: &Registry,
        viewer: Viewer<'_>,
        headers: &HeaderMap,
        head: bool,
    ) -> Option<Response> {
        let (cached, content_type) = match document {
            Document::ApiCatalog => (
                self.api_catalog.clone()?,
                HeaderValue::from_static(api_catalog::CONTENT_TYPE),
            ),
            Document::LlmsTxt => (
                self.scoped(self.llms_txt.as_ref()?, registry, viewer, |visible| {
                    let text =
                        llms_txt::render(&self.site, registry, visible, self.llms_txt_budget);
                    Some(Cached::new(text.into_bytes()))
                })?,
                HeaderValue::from_static(llms_txt::CONTENT_TYPE),
            ),
            Document::AgentCard => (
                self.scoped(self.agent_card.as_ref()?, registry, viewer, |visible| {
                    agent_card::render(&self.site, registry, visible).map(Cached::new)
                })?,
                HeaderValue::from_static(agent_card::CONTENT_TYPE),
            ),
            Document::ProtectedResource(index) => (
                self.protected_resource.get(index)?.1.clone(),
                HeaderValue::from_static(protected_resource::CONTENT_TYPE),
            ),
        };
        let mut response = conditional(cached, headers, content_type, head);
        let personal = document.is_personal() && matches!(viewer, Viewer::Caller(_));
        let headers = response.headers_mut();
        if personal {
            headers.insert(CACHE_CONTROL, self.cache_private.clone());
            headers.insert(VARY, self.vary_caller.clone());
        } else {
            headers.insert(CACHE_CONTROL, self.cache_public.clone());
        }
        if let Some(link) = &self.catalog_link {
            headers.insert(LINK, link.clone());
        }
        Some(response)
    }

    /// A scoped document for `viewer`: the one rendered for everyone, or the audience's,
    /// rendered by `render` (given which tools the caller may see) on first use.
    fn scoped(
        &self,
        scoped: &Scoped,
        registry: &Registry,
        viewer: Viewer<'_>,
        render: impl FnOnce(&dyn Fn(&Tool) -> bool) -> Option<Cached>,
    ) -> Option<Cached> {
        let caller = match viewer {
            Viewer::Everyone => return scoped.everyone.clone(),
            Viewer::Caller(caller) => caller,
        };
        let audience = registry.audience(caller);
        let views = scoped.views.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(view) = views.get(&audience) {
            return view.clone();
        }
        drop(views);
        let visible = |tool: &Tool| registry.admits(tool, caller);
        let view = render(&visible);
        let mut views = scoped.views.lock().unwrap_or_else(PoisonError::into_inner);
        if views.len() < MAX_VIEWS {
            views.insert(audience, view.clone());
        }
        view
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_and_links() {
        assert_eq!(
            base_of(&Uri::from_static("https://api.example.com")),
            "https://api.example.com"
        );
        assert_eq!(
            base_of(&Uri::from_static("https://example.com/api/")),
            "https://example.com/api"
        );
        assert_eq!(base_of(&Uri::from_static("/api")), "/api");
        assert_eq!(base_of(&Uri::from_static("/")), "");
        assert_eq!(
            resolve("", &Uri::from_static("/openapi.json")),
            "/openapi.json"
        );
        assert_eq!(
            resolve(
                "https://x.example/api",
                &Uri::from_static("/openapi.json?v=3")
            ),
            "https://x.example/api/openapi.json?v=3"
        );
        assert_eq!(
            resolve("/api", &Uri::from_static("https://docs.example/")),
            "https://docs.example/"
        );
    }

    #[test]
    fn clipping_and_lines() {
        assert_eq!(one_line(" a\n  b\tc "), "a b c");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("ééé", 2), "éé…");
    }
}
