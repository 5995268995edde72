use std::sync::Arc;
use std::time::Duration;

use halo_protocol::Circuit;
use serde_json::Value;
use utoipa::openapi::OpenApi;

use super::Shared;
use super::{Describe, HaloLayer};
use crate::audit::AuditSink;
use crate::auth::{Authenticator, DynAuthenticator};
use crate::auth::{Challenges, Gate};
use crate::catalog::{Catalogs, Documents};
use crate::discovery::Discovery;
use crate::govern::{Governance, Stores};
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::stream::{Calls, OnDisconnect, StreamConfig};
use crate::{BuildError, DocumentLimits, IdempotencyLimits, Validation};

/// Builds a [`HaloLayer`] with settings beyond the defaults.
///
/// ```
/// use std::time::Duration;
/// use halo_axum::{Describe, HaloLayer};
/// # use utoipa_axum::{router::OpenApiRouter, routes};
/// # /// Ping.
/// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
/// # async fn ping() {}
/// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
///
/// let layer = HaloLayer::builder(api)
///     .max_age(Duration::from_secs(300))
///     .describe("ping", Describe::new().why("Check that the API is up").retry(true))
///     .build()
///     .expect("valid HALO metadata");
/// let app = router.layer(layer);
/// # let _: axum::Router = app;
/// ```
#[derive(Debug)]
#[must_use]
pub struct HaloBuilder {
    document: Result<Value, String>,
    pub(super) described: Vec<(String, Describe)>,
    /// Operations left out, by `operationId` and by path.
    pub(super) excluded: (Vec<String>, Vec<String>),
    /// Operations that cannot be served are left out rather than failing the build.
    pub(super) lenient: bool,
    /// Whether calls let through carry a `ToolCall`.
    mark_calls: bool,
    max_age: Duration,
    authenticator: Option<Box<dyn DynAuthenticator>>,
    require_credentials: bool,
    realm: Option<String>,
    protected_resource: Option<crate::ProtectedResource>,
    validation: Validation,
    body_limit: usize,
    stream: StreamConfig,
    timeout: Option<Duration>,
    circuit: Option<Circuit>,
    idempotency_ttl: Duration,
    idempotency_limits: IdempotencyLimits,
    #[cfg(feature = "redis")]
    redis: Option<crate::RedisStore>,
    audit: Option<Box<dyn AuditSink>>,
    audit_arguments: bool,
    metrics: bool,
    pub(super) document_limits: DocumentLimits,
    catalogs: Catalogs,
    /// Who decides held calls, what is kept, which operations need approval.
    pub(crate) approvals: crate::approval::Settings,
    /// The layer this one replaces, whose state it keeps.
    pub(super) previous: Option<Arc<Shared>>,
}

impl HaloBuilder {
    pub(crate) fn new(openapi: &OpenApi) -> Self {
        Self::from_json(serde_json::to_value(openapi).map_err(|e| e.to_string()))
    }

    /// A builder over an OpenAPI 3.x document given as JSON, for documents that do not come
    /// from utoipa (aide, a hand-written file).
    ///
    /// ```
    /// use halo_axum::HaloBuilder;
    /// use serde_json::json;
    ///
    /// let layer = HaloBuilder::from_openapi_json(json!({
    ///     "openapi": "3.1.0",
    ///     "info": {"title": "Pets", "version": "1"},
    ///     "paths": {"/pets": {"get": {"operationId": "list_pets", "responses": {}}}}
    /// }))
    /// .build()
    /// .unwrap();
    /// # let _ = layer;
    /// ```
    pub fn from_openapi_json(document: Value) -> Self {
        Self::from_json(Ok(document))
    }

    fn from_json(document: Result<Value, String>) -> Self {
        Self {
            document,
            described: Vec::new(),
            excluded: (Vec::new(), Vec::new()),
            lenient: false,
            max_age: Duration::from_secs(60),
            authenticator: None,
            realm: None,
            protected_resource: None,
            require_credentials: false,
            validation: Validation::Off,
            body_limit: 2 * 1024 * 1024,
            stream: StreamConfig::default(),
            timeout: None,
            circuit: None,
            idempotency_ttl: Duration::from_secs(24 * 60 * 60),
            idempotency_limits: IdempotencyLimits::new(),
            #[cfg(feature = "redis")]
            redis: None,
            audit: None,
            audit_arguments: false,
            metrics: false,
            document_limits: DocumentLimits::default(),
            catalogs: Catalogs::new(),
            approvals: crate::approval::Settings::default(),
            previous: None,
            mark_calls: false,
        }
    }

    /// How long clients may cache discovery responses (`Cache-Control: max-age`); 60 seconds
    /// by default. They revalidate with `If-None-Match` afterwards.
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// Identifies callers. Discovery then shows each caller only the operations it may call
    /// (`Cache-Control: private`, `Vary: Authorization`), a path whose operations are all
    /// hidden answers `404`, and every call of a described operation is checked before the
    /// handler runs: `401` without valid credentials, `403` without the scopes of the
    /// operation's OpenAPI `security` requirement. The input is checked only when
    /// [`validate`](Self::validate) says so.
    ///
    /// ```
    /// use halo_axum::{HaloLayer, Principal, StaticAuthenticator};
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api)
    ///     .authenticator(
    ///         StaticAuthenticator::new()
    ///             .bearer("demo-admin", Principal::new("admin").with_scopes(["admin"])),
    ///     )
    ///     .build()
    ///     .expect("valid HALO metadata");
    /// # let _: axum::Router = router.layer(layer);
    /// ```
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Box::new(authenticator));
        self
    }

    /// Whether discovery without credentials is refused with `401` and `WWW-Authenticate`
    /// (by default an anonymous caller sees the operations anyone may call). Needs an
    /// [`authenticator`](Self::authenticator): without one, [`build`](Self::build) fails
    /// ([`BuildError::is_settings`]).
    pub fn require_credentials(mut self, require: bool) -> Self {
        self.require_credentials = require;
        self
    }

    /// The realm the `WWW-Authenticate` challenges of `401` and `403` answers name (RFC 9110
    /// §11.5), which a client may show when it asks for credentials: the document's
    /// `info.title` by default. Characters other than visible ASCII and spaces are left out;
    /// when nothing is left, the realm is `halo`.
    ///
    /// ```
    /// use halo_axum::{HaloLayer, Principal, StaticAuthenticator};
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api)
    ///     .authenticator(StaticAuthenticator::new().bearer("t0ken", Principal::new("ops")))
    ///     .realm("Staff tools")
    ///     .build()
    ///     .expect("valid HALO metadata");
    /// # let _: axum::Router = router.layer(layer);
    /// ```
    pub fn realm(mut self, realm: impl Into<String>) -> Self {
        self.realm = Some(realm.into());
        self
    }

    /// Describes the API as an OAuth 2.0 protected resource (RFC 9728): the layer serves
    /// its metadata at `/.well-known/oauth-protected-resource` (`GET` and `HEAD`, public),
    /// and every `Bearer` challenge of a `401` or `403` names that document in
    /// `resource_metadata`. [`build`](Self::build) fails ([`BuildError::is_settings`]) when
    /// the resource identifier is not an absolute URL or no authorization server is named.
    /// See [`ProtectedResource`](crate::ProtectedResource).
    ///
    /// ```
    /// use halo_axum::{HaloLayer, Principal, ProtectedResource, StaticAuthenticator};
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api)
    ///     .authenticator(StaticAuthenticator::new().bearer("t0ken", Principal::new("ops")))
    ///     .protected_resource(ProtectedResource::new(
    ///         "https://api.example.com",
    ///         ["https://id.example.com"],
    ///     ))
    ///     .build()
    ///     .expect("valid HALO metadata");
    /// # let _: axum::Router = router.layer(layer);
    /// ```
    pub fn protected_resource(mut self, resource: crate::ProtectedResource) -> Self {
        self.protected_resource = Some(resource);
        self
    }

    /// Whether calls of described operations are checked against their input schema before
    /// the handler runs, and whether `format` keywords are asserted ([`Validation`]: off by
    /// default, with or without an [`authenticator`](Self::authenticator)). The statuses are those axum's own extractors
    /// answer with: `400` for a path, query or header value that does not match (one error
    /// per offending value) and for a body that is not JSON, `413` for a body over
    /// [`body_limit`](Self::body_limit), `415` for the wrong `Content-Type`, `422` with one
    /// error per offending value of the body's data. What changes is the body: an
    /// `application/problem+json` document whose `errors` point at the arguments, the same
    /// whichever extractor the handler uses.
    ///
    /// ```
    /// use halo_axum::{HaloLayer, Validation};
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api)
    ///     .validate(Validation::On)
    ///     .build()
    ///     .expect("valid HALO metadata");
    /// # let _: axum::Router = router.layer(layer);
    /// ```
    pub fn validate(mut self, validation: Validation) -> Self {
        self.validation = validation;
        self
    }

    /// The largest request body read for validation (2 MiB by default, like axum's `Json`).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// How long a streamed call's events stay available after it ends, for clients that
    /// reconnect with `Last-Event-ID` (5 minutes by default).
    pub fn stream_retention(mut self, retention: Duration) -> Self {
        self.stream.retention = retention;
        self
    }

    /// The most events kept per streamed call (16,384 by default); past it the oldest
    /// progress is dropped, and a client that falls that far behind misses it.
    pub fn stream_max_events(mut self, events: usize) -> Self {
        self.stream.max_events = events.max(2);
        self
    }

    /// The interval of keep-alive comments on an idle event stream (15 s by default).
    pub fn stream_keep_alive(mut self, interval: Duration) -> Self {
        self.stream.keep_alive = interval.max(Duration::from_millis(10));
        self
    }

    /// The timeout of described operations that declare none (none by default): the
    /// deadline of their handler, as [`Describe::timeout`](crate::Describe::timeout) and
    /// `resilience.timeout_ms` set it for one operation. Past it the handler is dropped and
    /// the caller gets `504` (a streamed call ends with a `504` `tool_error`).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The circuit breaker of described operations that declare none (none by default), as
    /// [`Describe::circuit`](crate::Describe::circuit) and `resilience.circuit` set it for
    /// one operation. Unlike the default timeout, it is written into those operations'
    /// schemas: agents see every circuit the layer enforces.
    ///
    /// ```
    /// use halo_axum::HaloLayer;
    /// use halo_axum::protocol::Circuit;
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// // 5 failures in a row open it for 30 s; 2 successful probes close it.
    /// let layer = HaloLayer::builder(api)
    ///     .default_circuit(Circuit::default())
    ///     .build()
    ///     .expect("valid HALO metadata");
    /// # let _: axum::Router = router.layer(layer);
    /// ```
    pub fn default_circuit(mut self, circuit: Circuit) -> Self {
        self.circuit = Some(circuit);
        self
    }

    /// Writes one [`AuditRecord`](crate::AuditRecord) per call of a described operation that
    /// reaches the layer's checks (executed, replayed, rate-limited, denied, invalid, timed
    /// out, unavailable, refused by an open circuit, held for approval and decided, or
    /// cancelled: [`Outcome`](crate::Outcome)) to `sink`: [`TracingSink`](crate::TracingSink), a
    /// [`JsonLinesSink`](crate::JsonLinesSink) file, or your own. Records never block a
    /// request.
    pub fn audit(mut self, sink: impl AuditSink) -> Self {
        self.audit = Some(Box::new(sink));
        self
    }

    /// Whether audit records carry the call's JSON body as `arguments` (off by default),
    /// with the values of `writeOnly` and `format: password` inputs replaced by
    /// `"[redacted]"`. Needs an [`audit`](Self::audit) sink and
    /// [`validate`](Self::validate), which reads the body: without them
    /// [`build`](Self::build) fails ([`BuildError::is_settings`]).
    pub fn audit_arguments(mut self, include: bool) -> Self {
        self.audit_arguments = include;
        self
    }

    /// Whether the layer counts and times every call of a described operation and every
    /// discovery request through the [`metrics`](https://docs.rs/metrics) facade (off by
    /// default). Whatever recorder the application installs gets them (with the feature
    /// `prometheus`, `halo_axum::Prometheus` is one); with none installed they cost
    /// next to nothing, but every described call then passes through the layer's execution
    /// path, which is why this is a choice.
    ///
    /// | metric | kind | labels |
    /// |---|---|---|
    /// | `halo_tool_calls_total` | counter | `tool`, `outcome`, `status` |
    /// | `halo_tool_call_duration_seconds` | histogram (seconds) | `tool`, `outcome` |
    /// | `halo_discovery_requests_total` | counter | `target`, `status` |
    ///
    /// `tool` is the manifest name; `outcome` is the call's [`Outcome`](crate::Outcome)
    /// (`executed`, `replayed`, `rate_limited`, `denied`, `invalid`, `timed_out`); `status` is
    /// the answer's class (`2xx`, `4xx`, ...); `target` is `manifest` (`OPTIONS /`) or `path`.
    /// The duration is the layer's time to the answer's head (for a streamed call, until the
    /// stream starts). No label ever holds a path, a caller or a key, so the number of series
    /// is bounded by the number of tools.
    ///
    /// ```
    /// use halo_axum::HaloLayer;
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api).metrics(true).build().expect("valid HALO metadata");
    /// # let _: axum::Router = router.layer(layer);
    /// ```
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// How long the response to a request with an `Idempotency-Key` is kept for replay (24
    /// hours by default).
    pub fn idempotency_ttl(mut self, ttl: Duration) -> Self {
        self.idempotency_ttl = ttl;
        self
    }

    /// Bounds the idempotency records kept: per caller, and in records and bytes in all
    /// (1,000, 100,000 and 256 MiB by default). A new key that does not fit is refused before
    /// its handler runs (`429` past the caller's quota, `503` when the store is full, both
    /// with `Retry-After`); a live record is never dropped to make room. See
    /// [`IdempotencyLimits`] for what counts, the defaults and Redis.
    ///
    /// ```
    /// use halo_axum::{HaloLayer, IdempotencyLimits};
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api)
    ///     .idempotency_limits(
    ///         IdempotencyLimits::new()
    ///             .per_caller(1_000)
    ///             .records(100_000)
    ///             .bytes(256 * 1024 * 1024),
    ///     )
    ///     .build()
    ///     .expect("valid HALO metadata");
    /// # let _: axum::Router = router.layer(layer);
    /// ```
    pub fn idempotency_limits(mut self, limits: IdempotencyLimits) -> Self {
        self.idempotency_limits = limits;
        self
    }

    /// Keeps rate budgets, idempotency records, circuit breakers' state and the approvals of
    /// held calls in Redis instead of this process's memory, and copies the events of
    /// streamed calls there, so that every instance of the API that uses the same server and
    /// prefix shares them and can resume any call (see
    /// [`RedisStore`](crate::RedisStore) for what happens when Redis cannot be reached).
    /// Needs the `redis` feature.
    ///
    /// ```
    /// use halo_axum::{HaloLayer, RedisStore};
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api)
    ///     .redis(RedisStore::open("redis://127.0.0.1:6379/").expect("a Redis URL"))
    ///     .build()
    ///     .expect("valid HALO metadata");
    /// # let _: axum::Router = router.layer(layer);
    /// ```
    #[cfg(feature = "redis")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    pub fn redis(mut self, store: crate::RedisStore) -> Self {
        self.redis = Some(store);
        self
    }

    /// What happens to a streamed call when its client goes away
    /// ([`OnDisconnect::Continue`] by default).
    pub fn on_disconnect(mut self, policy: OnDisconnect) -> Self {
        self.stream.on_disconnect = policy;
        self
    }

    /// The scope that lets a caller cancel any caller's running call (none by default:
    /// only the caller that started a call may cancel it). A cancel request is `DELETE
    /// /.well-known/halo/calls/{call_id}`; an administrator names whose call with
    /// `?caller=` when several callers named calls alike.
    ///
    /// ```
    /// use halo_axum::{HaloLayer, Principal, StaticAuthenticator};
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api)
    ///     .authenticator(
    ///         StaticAuthenticator::new()
    ///             .bearer("ops-token", Principal::new("ops").with_scopes(["halo:admin"])),
    ///     )
    ///     .cancel_scope("halo:admin")
    ///     .build()
    ///     .expect("valid HALO metadata");
    /// # let _: axum::Router = router.layer(layer);
    /// ```
    pub fn cancel_scope(mut self, scope: impl Into<String>) -> Self {
        self.stream.cancel_scope = Some(scope.into());
        self
    }

    /// The bounds of tool streams over WebSocket (feature `ws`; [`WebSocketLimits`]'s
    /// defaults): the largest client message, the send buffer, and how long a client may
    /// stay silent.
    ///
    /// [`WebSocketLimits`]: crate::WebSocketLimits
    #[cfg(feature = "ws")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ws")))]
    pub fn websocket_limits(mut self, limits: crate::WebSocketLimits) -> Self {
        self.stream.websocket = limits;
        self
    }

    /// Serves the discovery documents `catalogs` chooses beside HALO, generated from the
    /// same operations (none by default): an RFC 9727 API catalog at
    /// `/.well-known/api-catalog`, a Markdown digest of the caller's tools at `/llms.txt`,
    /// and an A2A agent card for the hosted agents at `/.well-known/agent-card.json`. The
    /// layer answers `GET` and `HEAD` at those paths before the application (other methods
    /// pass through); see [`Catalogs`].
    ///
    /// ```
    /// use halo_axum::{Catalogs, HaloLayer};
    /// use http::Uri;
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api)
    ///     .catalogs(Catalogs::all().openapi_url(Uri::from_static("/openapi.json")))
    ///     .build()
    ///     .expect("valid HALO metadata");
    /// # let _: axum::Router = router.layer(layer);
    /// ```
    pub fn catalogs(mut self, catalogs: Catalogs) -> Self {
        self.catalogs = catalogs;
        self
    }

    /// Marks each call of a described operation the layer checked and lets through with a
    /// [`ToolCall`](crate::ToolCall) in its extensions, so that the service behind the layer
    /// can tell which tool it calls (and that it is one). Off by default: it costs every
    /// such call an allocation. `halo gateway` turns it on, and forwards only marked calls.
    ///
    /// ```
    /// use halo_axum::HaloBuilder;
    /// use serde_json::json;
    ///
    /// let document = json!({"openapi": "3.1.0", "info": {"title": "Pets", "version": "1"},
    ///     "paths": {"/pets": {"get": {"operationId": "list_pets", "responses": {}}}}});
    /// let layer = HaloBuilder::from_openapi_json(document).mark_calls(true).build().unwrap();
    /// # let _ = layer;
    /// ```
    pub fn mark_calls(mut self, mark: bool) -> Self {
        self.mark_calls = mark;
        self
    }

    /// Walks the document and pre-serialises every HALO response.
    ///
    /// # Errors
    /// Invalid HALO metadata, a `$ref` that points nowhere, a limit of [`DocumentLimits`]
    /// passed, metadata attached to an unknown `operationId`, or a link (`undo`, `next`, `replace_with`, `fallback`) to a path the
    /// document does not describe.
    pub fn build(self) -> Result<HaloLayer, BuildError> {
        if self.require_credentials && self.authenticator.is_none() {
            return Err(BuildError::settings(
                "require_credentials(true) needs an authenticator to check the credentials",
            ));
        }
        if self.audit_arguments && (self.audit.is_none() || self.validation == Validation::Off) {
            return Err(BuildError::settings(
                "audit_arguments(true) needs an audit sink to write to and validation to read the body",
            ));
        }
        if let Some(problem) = self.protected_resource.as_ref().and_then(|r| r.problem()) {
            return Err(BuildError::settings(problem));
        }
        let document = self.document.map_err(BuildError::document)?;
        let mut compiler = Registry::builder(&document)
            .validation(self.validation)
            .limits(self.document_limits);
        for (operation_id, describe) in self.described {
            let meta = describe.into_metadata(&operation_id)?;
            compiler = compiler.describe(operation_id, meta);
        }
        if let Some(circuit) = self.circuit {
            compiler = compiler.default_circuit(circuit);
        }
        for rule in self.approvals.rules() {
            compiler = compiler.require_approval(rule.clone());
        }
        for operation_id in self.excluded.0 {
            compiler = compiler.exclude_operation(operation_id);
        }
        for path in self.excluded.1 {
            compiler = compiler.exclude_path(path);
        }
        if self.lenient {
            compiler = compiler.lenient();
        }
        let registry = compiler.build()?;
        let mut challenges = Challenges::new(&document, self.realm.as_deref());
        let mut mcp_challenges = challenges.clone();
        if let Some(resource) = &self.protected_resource {
            challenges = challenges.with_resource_metadata(&resource.metadata_url());
            mcp_challenges = match resource.for_mcp() {
                Some(mcp) => mcp_challenges.with_resource_metadata(&mcp.metadata_url()),
                None => challenges.clone(),
            };
        }
        let mut stores = Stores::local(self.idempotency_ttl, self.idempotency_limits);
        let approvals = self.approvals.into_book(&registry);
        #[cfg(feature = "redis")]
        let approvals = match self.redis {
            Some(store) => {
                let link;
                (stores, link) = Stores::redis(
                    store,
                    self.idempotency_ttl,
                    self.idempotency_limits,
                    self.stream.retention,
                    self.stream.max_events,
                );
                let tools = registry.tools().map(|tool| tool.name().to_owned());
                approvals.in_redis(link, tools.collect())
            }
            None => approvals,
        };
        let replay = stores.replay.take();
        let previous = self.previous.as_deref();
        let approvals = match previous {
            Some(old) => approvals.carrying(&old.approvals),
            None => approvals,
        };
        if let Some(old) = previous
            && old.governance.stores.local
            && stores.local
        {
            stores.records = Arc::clone(&old.governance.stores.records);
        }
        let governance = Governance::new(
            &registry,
            self.timeout,
            stores,
            self.metrics,
            previous.map(|old| (&old.discovery.registry, &old.governance)),
        );
        let metrics = self.metrics.then(|| Metrics::new(&registry));
        let catalogs = Documents::new(
            self.catalogs
                .with_protected_resource(self.protected_resource),
            &document,
            &registry,
            self.max_age,
            self.authenticator.is_some(),
        )
        .map(Arc::new);
        let tool_names = registry
            .tools()
            .map(|tool| Arc::from(tool.name()))
            .collect();
        Ok(HaloLayer {
            catalogs,
            shared: Arc::new(Shared {
                discovery: Discovery::new(registry, self.max_age),
                gate: Gate::new(
                    self.authenticator,
                    challenges,
                    mcp_challenges,
                    self.require_credentials,
                ),
                validate: self.validation != Validation::Off,
                body_limit: self.body_limit,
                calls: Calls::new(self.stream, replay),
                governance,
                audit: self.audit,
                audit_arguments: self.audit_arguments,
                metrics,
                approvals,
                mark_calls: self.mark_calls,
                tool_names,
                #[cfg(feature = "redis")]
                takeover: super::slot::Slot::default(),
                #[cfg(feature = "ws")]
                socket_app: super::slot::Slot::default(),
            }),
        })
    }
}
