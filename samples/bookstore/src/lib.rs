//! A sample HALO API: a bookstore served by axum, described by utoipa, discovered through
//! [`halo_axum::HaloLayer`].
//!
//! The API manages a catalogue of books, warehouse stock, orders and payments, and reports the
//! weather at pick-up cities. Data lives in memory and is seeded with a few well-known books.
//! Every operation is a HALO tool: an agent sends
//! `OPTIONS /` with `Accept: application/llm+json` for the manifest, and `OPTIONS` on a path for
//! the schemas of its operations.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! bookstore::serve(listener, bookstore::app(), bookstore::Limits::default(), async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await;
//! # Ok(())
//! # }
//! ```
//!
//! [`serve`] closes connections that take more than 10 s to send a request's headers (or sit
//! idle that long between requests) and accepts at most 512 at once ([`server`]).
//!
//! Demo credentials (see [`auth`]): bearer tokens `demo-admin` (every scope) and `demo-reader`
//! (read scopes), and the API key `X-API-Key: demo-key` for inventory. The HALO layer enforces
//! them: discovery shows each caller only what it may call, and a call without the right
//! credentials is refused before its handler runs.
//!
//! `POST /api/books/{id}/summarize` with `Accept: text/event-stream` streams its progress, one
//! `tool_progress` event per chapter, then `tool_end` with the summary.
//!
//! With a model ([`Options::llm`]), the bookstore also hosts an LLM agent, a shopping
//! assistant at `POST /agents/shopping_assistant/run` ([`agents`]).

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::http::Uri;
use axum::http::header::CONTENT_TYPE;
use axum::middleware;
use axum::routing::get;
use halo_agent::LlmProvider;
use halo_axum::agents::Agents;
use halo_axum::mcp::McpService;
use halo_axum::playground::Playground;
use halo_axum::{
    ApprovalQueue, Catalogs, HaloLayer, JsonLinesSink, JwtAuthenticator, Prometheus,
    ProtectedResource, RedisStore, Validation, WebhookApproverBuilder,
};
use tower_http::cors::CorsLayer;
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub mod agents;
pub mod auth;
pub mod cli;
pub mod error;
pub mod logging;
pub mod model;
mod routes;
pub mod server;
mod store;

pub use server::{Limits, serve};
pub use store::AppState;

use auth::SecuritySchemes;
use routes::weather::WeatherUpstream;
use routes::{books, inventory, orders, payments, weather};

/// The document-level part of the OpenAPI description; operations are added by the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Bookstore",
        version = "1.2.0",
        description = "A bookstore: search the catalogue, check and hold stock, place orders and take payments."
    ),
    modifiers(&SecuritySchemes),
    tags(
        (name = "books", description = "The catalogue"),
        (name = "inventory", description = "Warehouse stock (API key)"),
        (name = "orders", description = "Customer orders"),
        (name = "payments", description = "Charges and refunds"),
        (name = "weather", description = "Weather at pick-up cities"),
        (name = "read", description = "Does not change anything"),
        (name = "write", description = "Changes data"),
        (name = "admin", description = "Restricted to administrators"),
    )
)]
struct ApiDoc;

/// Every operation, registered with both axum and the OpenAPI document.
#[allow(deprecated)] // legacy_search_books is deprecated on purpose: it shows HALO's lifecycle fields
fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(books::search_books, books::create_book))
        .routes(routes!(books::legacy_search_books))
        .routes(routes!(
            books::get_book,
            books::update_book,
            books::delete_book
        ))
        .routes(routes!(books::summarize_book))
        .routes(routes!(inventory::get_stock))
        .routes(routes!(inventory::reserve_stock))
        .routes(routes!(inventory::release_stock))
        .routes(routes!(orders::create_order))
        .routes(routes!(orders::get_order))
        .routes(routes!(payments::charge_payment))
        .routes(routes!(payments::refund_payment))
        .routes(routes!(weather::get_weather))
}

/// The OpenAPI description of the whole API (the same one [`app`] serves at `/openapi.json` and
/// hands to the HALO layer).
#[must_use]
pub fn openapi() -> utoipa::openapi::OpenApi {
    api_router().into_openapi()
}

/// The complete application over a freshly seeded store.
///
/// Layers, inside out: the API routes, `GET /openapi.json` and `GET /health` (and with
/// [`Options::metrics`], `GET /metrics`), request tracing (credentials left out, see
/// [`logging`]), CORS (permissive: this is a demo), and the HALO layer, which must see
/// `OPTIONS` requests before CORS answers them; outermost, every route's credential headers
/// are marked sensitive ([`logging::sensitive_headers`]). The HALO layer also identifies
/// callers with the demo credentials of [`auth::authenticator`]: it shows each caller only
/// the tools it may call, and checks credentials, scopes and input before a handler runs.
/// `/openapi.json` and `/metrics`, which it does not describe, answer only the
/// administrator, checked by the same authenticator ([`auth::AdminOnly`]); `/health`
/// answers everyone.
///
/// `/mcp` serves the same tools over MCP (streamable HTTP) to the caller its credentials
/// name, each call dispatched in process through the HALO layer
/// ([`halo_axum::mcp::McpService`]); it accepts loopback hosts only. `/playground` is a page
/// to see and try the tools in a browser ([`halo_axum::playground::Playground`]).
///
/// The layer also serves the discovery documents of [`Catalogs::all`]: the RFC 9727 API
/// catalog at `/.well-known/api-catalog` (linking the manifest, `/openapi.json`, for the
/// administrator, and the playground), a Markdown digest of the caller's tools at
/// `/llms.txt`, and, when the shopping assistant is hosted, an A2A agent card at
/// `/.well-known/agent-card.json`.
///
/// # Panics
/// Never for the bookstore as shipped; an edit that makes its HALO metadata invalid panics
/// here, at start-up (see [`app_with_state`]).
pub fn app() -> Router {
    app_with_state(AppState::seeded())
}

/// The complete application over the given state (see [`app`]).
///
/// # Panics
/// When the HALO metadata of the operations is invalid (a bad rate, a link to a path the API
/// does not have): a programming error, found at start-up.
pub fn app_with_state(state: AppState) -> Router {
    app_with(state, Options::default())
}

/// Settings of the application beyond its state.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Options {
    /// Where the audit trail goes: one JSON line per call of an operation.
    pub audit: Option<JsonLinesSink>,
    /// Where rate budgets and idempotency records live when not in this process's memory:
    /// every instance given the same Redis shares them.
    pub redis: Option<RedisStore>,
    /// Where the layer's metrics go, served at `GET /metrics` in the Prometheus text format,
    /// to the administrator only.
    pub metrics: Option<Prometheus>,
    /// The model of the hosted shopping assistant; without one the bookstore hosts no agent.
    pub llm: Option<Arc<dyn LlmProvider>>,
    /// The weather service the weather tool asks (`GET <url>?city=NAME`, answering a
    /// [`model::Weather`]) instead of its built-in table.
    pub weather_upstream: Option<reqwest::Url>,
    /// An OAuth 2.0 authorization server whose JWT access tokens the bookstore accepts
    /// beside the demo credentials, and the bookstore as its protected resource.
    pub oauth: Option<(JwtAuthenticator, ProtectedResource)>,
    /// A webhook asked first to approve held calls; the administrators decide what it
    /// leaves undecided.
    pub approval_webhook: Option<WebhookApproverBuilder>,
}

impl Options {
    /// Writes the audit trail to `sink`.
    #[must_use]
    pub fn audit(mut self, sink: JsonLinesSink) -> Self {
        self.audit = Some(sink);
        self
    }

    /// Keeps rate budgets and idempotency records in Redis, shared with the other instances
    /// that use it.
    #[must_use]
    pub fn redis(mut self, store: RedisStore) -> Self {
        self.redis = Some(store);
        self
    }

    /// Counts and times every call of an operation and every discovery request (see
    /// [`HaloBuilder::metrics`](halo_axum::HaloBuilder::metrics)), and serves the metrics of
    /// `prometheus` at `GET /metrics`, a route HALO does not describe, to callers with
    /// [`auth::ADMIN_SCOPE`] only.
    #[must_use]
    pub fn metrics(mut self, prometheus: Prometheus) -> Self {
        self.metrics = Some(prometheus);
        self
    }

    /// Hosts the shopping assistant ([`agents::shopping_assistant`]) on `provider`, at
    /// `POST /agents/shopping_assistant/run`.
    #[must_use]
    pub fn llm(mut self, provider: impl LlmProvider) -> Self {
        self.llm = Some(Arc::new(provider));
        self
    }

    /// Asks the weather service at `url` (`GET <url>?city=NAME`) for the weather instead of
    /// the built-in table. The weather tool answers `502` when the service fails, and its
    /// circuit breaker (`resilience.circuit`: 5 failures in a row, 10 s) answers `503`
    /// without asking it while it keeps failing.
    #[must_use]
    pub fn weather_upstream(mut self, url: reqwest::Url) -> Self {
        self.weather_upstream = Some(url);
        self
    }

    /// Asks the webhook `hook` to approve held calls (refunds) before anyone else: its
    /// answer decides them; what it leaves undecided (it failed, or answered
    /// `{"approved": null}`) the administrators decide over HTTP, as without it.
    ///
    /// ```no_run
    /// use halo_axum::{WebhookApprover, WebhookSecret};
    ///
    /// let secret = WebhookSecret::new(std::env::var("HALO_APPROVAL_WEBHOOK_SECRET")?);
    /// let hook = WebhookApprover::builder("https://risk.example.com/halo", secret);
    /// let options = bookstore::Options::default().approval_webhook(hook);
    /// # let _ = options;
    /// # Ok::<(), std::env::VarError>(())
    /// ```
    #[must_use]
    pub fn approval_webhook(mut self, hook: WebhookApproverBuilder) -> Self {
        self.approval_webhook = Some(hook);
        self
    }

    /// Accepts the JWT access tokens `issuer` checks (beside the demo credentials), with
    /// the scopes they carry, and describes the bookstore as `resource` (RFC 9728): its
    /// metadata at `/.well-known/oauth-protected-resource` (and, with
    /// [`ProtectedResource::mcp`], the MCP endpoint's), named by every `Bearer` challenge.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use halo_axum::{JwtAuthenticator, ProtectedResource};
    ///
    /// let issuer = "https://id.example.com";
    /// let base = "https://books.example.com";
    /// let jwt = JwtAuthenticator::builder(issuer).audience(base).build().await?;
    /// let options = bookstore::Options::default().oauth(jwt, ProtectedResource::new(base, [issuer]));
    /// # let _ = options;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn oauth(mut self, issuer: JwtAuthenticator, resource: ProtectedResource) -> Self {
        self.oauth = Some((issuer, resource));
        self
    }
}

/// The complete application over the given state, with `options` (see [`app`]).
///
/// ```no_run
/// let audit = halo_axum::JsonLinesSink::open("audit.jsonl")?;
/// let app = bookstore::app_with(bookstore::AppState::seeded(), bookstore::Options::default().audit(audit));
/// # let _ = app;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Panics
/// As [`app_with_state`]; also for an approval webhook that cannot be built
/// ([`cli::Cli::approval_webhook`] checks it before the binary starts).
pub fn app_with(state: AppState, options: Options) -> Router {
    let weather = options.weather_upstream.map(WeatherUpstream::new);
    let state = state.with_weather(weather);
    let (router, api) = api_router().with_state(state).split_for_parts();
    // The hosted agent, when there is a model: described in the document like any operation.
    let agents = options
        .llm
        .map(|provider| Agents::new().agent(agents::shopping_assistant(provider)));
    let api = match &agents {
        Some(agents) => agents
            .document(api)
            .unwrap_or_else(|error| panic!("bookstore: invalid agent: {error}")),
        None => api,
    };
    let spec = Bytes::from(api.to_pretty_json().unwrap_or_else(|_| "{}".to_owned()));
    let (issuer, resource) = options.oauth.unzip();
    let authenticator = auth::callers(&api, issuer);
    let mut admin_only = auth::AdminOnly::new(authenticator.clone(), &api.info.title);
    if let Some(resource) = &resource {
        admin_only = admin_only.resource_metadata(&resource.metadata_url(), &api.info.title);
    }
    // Refunds wait for approval, decided over HTTP by callers with the admin scope; the
    // demo has one administrator, who may approve its own refunds. With a webhook, it is
    // asked first, and the administrators decide what it leaves undecided.
    let admins = ApprovalQueue::new(auth::ADMIN_SCOPE).self_approval(true);
    let halo = HaloLayer::builder(api).authenticator(authenticator);
    let halo = match options.approval_webhook {
        Some(hook) => halo.approver(
            hook.fallback(admins)
                .build()
                .unwrap_or_else(|error| panic!("bookstore: {error}")),
        ),
        None => halo.approver(admins),
    };
    let mut halo = halo
        // Arguments are checked against the schemas before a handler runs.
        .validate(Validation::On)
        // The API catalog, `/llms.txt` and (with an agent) the agent card, for agents that
        // look for them before they know HALO.
        .catalogs(
            Catalogs::all()
                .openapi_url(Uri::from_static("/openapi.json"))
                .docs_url(Uri::from_static("/playground")),
        );
    if let Some(sink) = options.audit {
        halo = halo.audit(sink);
    }
    if let Some(store) = options.redis {
        halo = halo.redis(store);
    }
    if let Some(resource) = resource {
        halo = halo.protected_resource(resource);
    }
    let halo = halo
        .metrics(options.metrics.is_some())
        .build()
        .unwrap_or_else(|error| panic!("bookstore: invalid HALO metadata: {error}"));
    let mut router = match &agents {
        // Its tools are the API's operations, called in process through the layer.
        Some(agents) => router.clone().merge(agents.router(&halo, router)),
        None => router,
    };
    // The whole document names every admin operation, and the metrics every tool: neither
    // is a tool, so the HALO layer does not check them, and the same authenticator does.
    let mut admin = Router::new().route(
        "/openapi.json",
        get(move || {
            let spec = spec.clone();
            async move { ([(CONTENT_TYPE, "application/json")], spec) }
        }),
    );
    if let Some(prometheus) = options.metrics {
        admin = admin.route_service("/metrics", prometheus);
    }
    router = router
        .merge(admin.route_layer(middleware::from_fn_with_state(admin_only, auth::admin_only)))
        // A liveness probe, not a tool: HALO does not describe it.
        .route("/health", get(|| async { "ok" }));
    // A readiness probe: `503` while the shared store (Redis) does not answer, so a load
    // balancer sends calls to the replicas whose store does.
    let readiness = halo.readiness();
    router = router.route(
        "/ready",
        get(move || {
            let readiness = readiness.clone();
            async move { readiness.answer().await }
        }),
    );
    let app = router
        .layer(TraceLayer::new_for_http().make_span_with(logging::request_span::<axum::body::Body>))
        .layer(CorsLayer::permissive());
    // The same tools over MCP (streamable HTTP), dispatched in process through the layer.
    let mcp = McpService::builder(&halo, app.clone()).build();
    app.layer(halo)
        .nest_service("/mcp", mcp)
        // A page to see and try the tools in a browser; its calls are ordinary requests.
        .nest_service("/playground", Playground::new())
        .layer(SetSensitiveRequestHeadersLayer::new(
            logging::sensitive_headers(),
        ))
}
