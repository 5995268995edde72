//! `/mcp`: the app's HALO tools served over MCP streamable HTTP by the app itself.

mod approval;
mod asked;
mod bridge;
mod caller;
mod direct;
mod headers;
mod task;

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use halo_protocol::ToolListing;
use http::{HeaderName, Request};
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use tower_service::Service;

use self::bridge::{Bridge, Listing};
use self::caller::Identified;
use self::direct::{Direct, Hosts};
pub use self::task::TaskLimits;
use crate::HaloLayer;
use crate::layer::Shared;
use crate::local::{Local, forwarded};

/// Tools per `tools/list` page, unless configured.
const DEFAULT_PAGE_SIZE: usize = 100;

/// The `Host` values accepted by default: loopback only.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The `Origin`s accepted by default (requests without one, from programs rather than
/// browsers, are accepted too): loopback only, any port.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// The app's HALO tools over MCP streamable HTTP, served by the app itself: a tower service
/// to mount with [`Router::nest_service`](axum::Router::nest_service), usually at `/mcp`.
///
/// `tools/list` shows the tools the caller may see, and `tools/call` runs a tool, both in
/// process (no network hop) through the app wrapped by its [`HaloLayer`]: the MCP request's
/// credentials (`Authorization`, the API-key headers the API's security schemes name) go with
/// each discovery and call, so identity, visibility, validation, rate limits, idempotency,
/// deadlines and audit all apply as they do over HTTP. A tool's arguments are placed in the
/// path, query, headers and JSON body as its `input` says.
///
/// **Progressive disclosure.** When the tools a caller may see would cost a model more than
/// a budget (4,000 estimated tokens by default, [`McpBuilder::tool_budget`]), `tools/list`
/// lists two tools instead: `search_tools` (the caller's best matches for a few words, with
/// their input schemas) and `call_tool` (a found tool by name). `tools/call` takes the name
/// of any tool the caller may see, listed or not. Below the budget every tool is listed;
/// [`McpBuilder::list_all_tools`] always lists every one. Output schemas are listed when
/// small ([`McpBuilder::all_output_schemas`] lists them all), lists are paged
/// ([`McpBuilder::page_size`]), and each carries MCP's cache hints (`ttlMs`, `cacheScope`)
/// from the discovery answer's `Cache-Control` and `Vary`.
///
/// A `4xx`/`5xx` answer is a tool result with `isError` and the problem details as its
/// content, so a model reads what went wrong; a success carries the JSON answer as text and,
/// when it is an object, as `structuredContent`.
///
/// **Approvals.** A call the layer holds for approval is not answered with its `202`. A
/// client that negotiated MCP `2026-07-28` and declared form elicitation, calling as someone
/// the approver lets decide their own calls, is asked to confirm it (an `input_required`
/// result); accept approves it, decline denies it. Any other client waits for the decision:
/// the result is the call's answer once it ran, or an error saying it was denied or expired.
///
/// **Tasks.** A client that declared the MCP Tasks extension (`io.modelcontextprotocol/tasks`)
/// gets a task instead: a held call answers with the task `approval-{id}`, which `tasks/get`
/// reads and `tasks/cancel` withdraws through the approvals (any replica answers, the approval
/// being its state); a call of a streaming tool still running after a grace becomes a task of
/// this instance, bounded by [`TaskLimits`], which `tasks/cancel` cancels as `DELETE` of the
/// call does. A task is its caller's: anyone else is told no such task exists.
///
/// Credentials are checked before anything else: with an authenticator, credentials it
/// refuses (or none, when the layer requires them) get HTTP `401` with the layer's
/// `WWW-Authenticate` challenge, as a call over HTTP would.
///
/// Only loopback `Host`s and `Origin`s are accepted unless configured
/// ([`McpBuilder::allowed_hosts`], [`McpBuilder::allowed_origins`]), which protects a locally
/// running server from DNS rebinding. The server is stateless (no MCP sessions): any
/// instance behind a load balancer can answer any request.
///
/// ```
/// use axum::Router;
/// use halo_axum::HaloLayer;
/// use halo_axum::mcp::McpService;
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
/// let halo = HaloLayer::from_openapi(api);
/// // The app *without* the layer: the service wraps it in the layer itself.
/// let mcp = McpService::builder(&halo, router.clone()).build();
/// let app: Router = router.layer(halo).nest_service("/mcp", mcp);
/// # let _ = app;
/// ```
#[derive(Clone)]
pub struct McpService {
    /// Shared rather than cloned with each request: its configuration holds the allowed
    /// hosts and origins.
    inner: Arc<StreamableHttpService<Bridge, NeverSessionManager>>,
    /// The server, for the plain `tools/call`s answered without rmcp ([`direct`]), and the
    /// hosts those may name.
    bridge: Bridge,
    hosts: Hosts,
    /// The layer's state: credentials are checked before MCP sees the request.
    shared: Arc<Shared>,
}

impl fmt::Debug for McpService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpService")
            .field("allowed_hosts", &self.inner.config.allowed_hosts)
            .field("allowed_origins", &self.inner.config.allowed_origins)
            .finish_non_exhaustive()
    }
}

/// Builds an [`McpService`].
#[must_use]
pub struct McpBuilder {
    shared: Arc<Shared>,
    local: Local,
    allowed_hosts: Option<Vec<String>>,
    allowed_origins: Option<Vec<String>>,
    instructions: Option<String>,
    listing: Listing,
    task_limits: TaskLimits,
}

impl fmt::Debug for McpBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpBuilder")
            .field("forward", &self.local.forward())
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .finish_non_exhaustive()
    }
}

impl McpService {
    /// A builder for the MCP service of `app` described by `layer`.
    ///
    /// Give the app **without** the layer (the router you call `.layer(halo)` on): the
    /// service wraps it in `layer` itself, outermost, so every tool call goes through the
    /// layer's checks exactly once. The app must answer every request (`Infallible`), as an
    /// axum [`Router`](axum::Router) does.
    pub fn builder<S>(layer: &HaloLayer, app: S) -> McpBuilder
    where
        S: Service<Request<Body>, Response = Response, Error = Infallible>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        McpBuilder {
            shared: Arc::clone(&layer.shared),
            local: Local::new(layer, app, forwarded(layer), 16 * 1024 * 1024),
            allowed_hosts: None,
            allowed_origins: None,
            instructions: None,
            listing: Listing {
                tools: ToolListing::default(),
                page_size: DEFAULT_PAGE_SIZE,
            },
            task_limits: TaskLimits::default(),
        }
    }
}

impl McpBuilder {
    /// The `Host` values (`example.com`, or `example.com:8443` for one port only) accepted;
    /// loopback only by default. Set this for a server reached under a public name.
    pub fn allowed_hosts<I, H>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = H>,
        H: Into<String>,
    {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// The browser `Origin`s accepted (`https://app.example.com`, `http://localhost:*` for any
    /// port, `null`); loopback only by default. Requests without an `Origin`, from programs
    /// rather than browsers, are always accepted.
    pub fn allowed_origins<I, O>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = O>,
        O: Into<String>,
    {
        self.allowed_origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }

    /// Also passes this header of the MCP request on to discovery and calls (a session
    /// cookie, say). `Authorization`, the API-key headers of the API's security schemes,
    /// `Accept-Language`, `traceparent`, `tracestate` and `x-request-id` always are.
    pub fn forward_header(mut self, name: HeaderName) -> Self {
        self.local.forward_header(name);
        self
    }

    /// What the server tells MCP clients about itself and its tools.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The largest answer of a tool call passed on, in bytes (16 MiB by default); a larger
    /// one is an error result.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.local.set_max_response_bytes(bytes);
        self
    }

    /// The most tokens the tools a caller may see can cost before `tools/list` lists only
    /// `search_tools` and `call_tool` (progressive disclosure); 4,000 by default
    /// ([`DEFAULT_TOOL_BUDGET`](halo_protocol::DEFAULT_TOOL_BUDGET)), estimated by [`estimate_tokens`](halo_protocol::estimate_tokens).
    ///
    /// `search_tools` answers the caller's best matches (the layer's own `OPTIONS /?q=`
    /// search) with their names, descriptions and input schemas; `call_tool` calls one by
    /// name, and `tools/call` accepts the name of any tool the caller may see, listed or
    /// not.
    ///
    /// ```
    /// # use axum::Router;
    /// # use halo_axum::HaloLayer;
    /// # use halo_axum::mcp::McpService;
    /// # let (router, api) = utoipa_axum::router::OpenApiRouter::<()>::new().split_for_parts();
    /// # let halo = HaloLayer::from_openapi(api);
    /// let mcp = McpService::builder(&halo, router).tool_budget(8_000).build();
    /// # let _ = mcp;
    /// ```
    pub fn tool_budget(mut self, tokens: usize) -> Self {
        self.listing.tools = self.listing.tools.budget(Some(tokens));
        self
    }

    /// Lists every tool the caller may see, whatever they cost (no `search_tools`).
    pub fn list_all_tools(mut self) -> Self {
        self.listing.tools = self.listing.tools.budget(None);
        self
    }

    /// Lists every tool's output schema; by default only those of at most
    /// [`SMALL_OUTPUT_TOKENS`](halo_protocol::SMALL_OUTPUT_TOKENS) estimated tokens are,
    /// since a large one costs a model more than it helps it.
    pub fn all_output_schemas(mut self) -> Self {
        self.listing.tools = self.listing.tools.all_output_schemas(true);
        self
    }

    /// How many tools one `tools/list` page holds (100 by default); the rest follow by
    /// `nextCursor`.
    pub fn page_size(mut self, tools: usize) -> Self {
        self.listing.page_size = tools.max(1);
        self
    }

    /// How long a streamed call runs before it becomes an MCP task, how many tasks are kept
    /// per caller and in all, and for how long ([`TaskLimits`]). Only clients that declared
    /// the Tasks extension get tasks.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use halo_axum::HaloLayer;
    /// use halo_axum::mcp::{McpService, TaskLimits};
    /// # let (router, api) = utoipa_axum::router::OpenApiRouter::<()>::new().split_for_parts();
    /// # let halo = HaloLayer::from_openapi(api);
    /// let limits = TaskLimits::default().grace(Duration::ZERO).per_caller(4);
    /// let mcp = McpService::builder(&halo, router).task_limits(limits).build();
    /// # let _ = mcp;
    /// ```
    pub fn task_limits(mut self, limits: TaskLimits) -> Self {
        self.task_limits = limits;
        self
    }

    /// The service.
    #[must_use]
    pub fn build(self) -> McpService {
        let bridge = Bridge::new(
            self.local,
            Arc::clone(&self.shared),
            self.instructions,
            self.listing,
            self.task_limits,
        );
        let hosts = self
            .allowed_hosts
            .unwrap_or_else(|| LOOPBACK_HOSTS.map(str::to_owned).to_vec());
        let origins = self
            .allowed_origins
            .unwrap_or_else(|| LOOPBACK_ORIGINS.map(str::to_owned).to_vec());
        let direct_hosts = Hosts::new(&hosts);
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_legacy_session_mode(false)
            .with_json_response(true);
        let server = bridge.clone();
        McpService {
            inner: Arc::new(StreamableHttpService::new(
                move || Ok(server.clone()),
                NeverSessionManager::default().into(),
                config,
            )),
            bridge,
            hosts: direct_hosts,
            shared: self.shared,
        }
    }
}

impl<B> Service<Request<B>> for McpService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send + 'static,
    B::Error: fmt::Display,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Always ready, as rmcp's service is.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let shared = Arc::clone(&self.shared);
        let inner = Arc::clone(&self.inner);
        let bridge = self.bridge.clone();
        let hosts = self.hosts.clone();
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            if let Some(refused) = headers::refusal(&parts.headers) {
                return Ok(refused);
            }
            if shared.gate.is_closed() {
                // Credentials are checked first: a refused caller gets `401` and the
                // challenge before any tool is looked up, so no answer differs by what a
                // tool is called.
                match shared.gate.mcp_discoverer(&parts).await {
                    Ok(caller) => parts.extensions.insert(Identified(caller)),
                    Err(refused) => return Ok(refused),
                };
            }
            let request = Request::from_parts(parts, body);
            let answer = match direct::answer(&bridge, &hosts, request).await {
                Direct::Answered(answer) => return Ok(answer),
                Direct::Untouched(request) => inner.handle(request).await,
                Direct::Read(request) => inner.handle(request).await,
            };
            Ok(answer.map(Body::new))
        })
    }
}
