//! [`Gateway`]: a configuration's upstreams fetched, compiled into one registry, and served
//! by the halo-axum layer in front of the forwarder.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use axum::Router;
use halo_axum::mcp::McpService;
use halo_axum::playground::Playground;
use halo_axum::{ApprovalQueue, HaloBuilder, HaloLayer, JsonLinesSink, RedisStore, Validation};

use crate::config::Config;
use crate::error::Error;
use crate::file;
use crate::forward::{HttpTarget, Target, forwarder};
use crate::merge::{self, Entry, Part};
use crate::report::{Report, UpstreamReport};
use crate::upstream::{self, Via};

/// How long fetching one upstream's description may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// A gateway built from a [`Config`]: every upstream's tools compiled into one HALO registry
/// and served by the halo-axum layer (discovery, `/mcp`, validation, policies, approvals,
/// audit) in front of a forwarder that calls the upstreams.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use halo_gateway::{Config, Gateway};
///
/// let config = Config::from_path("gateway.yaml")?;
/// let gateway = Gateway::build(&config).await?;
/// print!("{}", gateway.report());
/// let listener = tokio::net::TcpListener::bind(config.listen()).await?;
/// axum::serve(listener, gateway.router()).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Gateway {
    router: Router,
    layer: HaloLayer,
    report: Report,
    tools: Vec<Entry>,
    explained: Vec<String>,
    /// Told when an upstream says its tools changed (one for every gateway that replaces
    /// this one, since they keep its MCP servers).
    changed: Arc<Notify>,
    /// The MCP servers, by upstream name: kept by the gateway that replaces this one when
    /// their settings did not change.
    servers: HashMap<String, Arc<upstream::mcp::Server>>,
}

impl Gateway {
    /// Fetches and reads every upstream's description, merges them, and builds the layer
    /// and the forwarder.
    ///
    /// # Errors
    /// An upstream whose description cannot be fetched or read, two tools of one name, an
    /// issuer whose keys cannot be fetched, an audit file that cannot be opened, a Redis URL
    /// that is not one, or a merged document the layer refuses.
    pub async fn build(config: &Config) -> Result<Self, Error> {
        Self::build_with(config, None).await
    }

    /// Builds a gateway that replaces `previous` (its configuration reloaded), as
    /// [`build`](Self::build) does, keeping `previous`'s state in this process's memory: the
    /// rate budgets and circuits of tools whose declarations did not change, and the
    /// idempotency records. Calls in flight on `previous` finish there.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub async fn build_after(config: &Config, previous: &Self) -> Result<Self, Error> {
        Self::build_with(config, Some(previous)).await
    }

    async fn build_with(config: &Config, previous: Option<&Self>) -> Result<Self, Error> {
        let fetcher = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| Error::layer(format!("cannot make an HTTP client: {e}")))?;
        // Pushed one by one rather than mapped: a closure's higher-ranked borrow would make
        // the future not `Send` for every lifetime, as `tokio::spawn` needs.
        let pins = crate::pin::read(config)?;
        let changed = previous.map_or_else(Arc::default, |p| Arc::clone(&p.changed));
        let mut loading = Vec::with_capacity(config.upstreams.len());
        for spec in &config.upstreams {
            let running = previous.and_then(|p| p.servers.get(&spec.name));
            loading.push(upstream::load(
                spec,
                &fetcher,
                pins.as_ref(),
                &changed,
                running,
            ));
        }
        let loaded = futures_util::future::try_join_all(loading).await?;
        let file = &config.file;
        let authenticated = file.auth.is_some();
        let mut targets = HashMap::new();
        let mut parts = Vec::with_capacity(loaded.len());
        let mut vias = Vec::with_capacity(loaded.len());
        let mut notes = Vec::with_capacity(loaded.len());
        for (spec, loaded) in config.upstreams.iter().zip(loaded) {
            vias.push(loaded.via);
            notes.push(loaded.notes);
            parts.push(Part {
                name: &spec.name,
                prefix: spec.prefix,
                document: loaded.document,
            });
        }
        let title = file.name.as_deref().unwrap_or("halo gateway");
        let merged = merge::merge(title, parts, &config.policies, authenticated)?;
        let mut servers = HashMap::new();
        for ((spec, via), credentials) in config.upstreams.iter().zip(vias).zip(merged.credentials)
        {
            let target = match via {
                Via::Mcp(server) => {
                    servers.insert(spec.name.clone(), Arc::clone(&server));
                    Target::Mcp(server)
                }
                Via::Http { base_url, halo } => {
                    let client = reqwest::Client::builder()
                        .connect_timeout(spec.connect_timeout)
                        .read_timeout(spec.read_timeout)
                        .redirect(reqwest::redirect::Policy::none())
                        .build()
                        .map_err(|e| Error::layer(format!("cannot make an HTTP client: {e}")))?;
                    Target::Http(Box::new(HttpTarget {
                        base_url,
                        headers: spec.headers.clone(),
                        oauth: spec.oauth.clone(),
                        credentials,
                        client,
                        halo,
                    }))
                }
            };
            targets.insert(spec.name.clone(), target);
        }
        let layer = layer(config, merged.document, previous.map(|p| &p.layer)).await?;
        let app = Router::new().fallback_service(forwarder(targets));
        let mut mcp = McpService::builder(&layer, app.clone());
        if let Some(settings) = &file.mcp {
            mcp = mcp
                .allowed_hosts(settings.allowed_hosts.iter().cloned())
                .allowed_origins(settings.allowed_origins.iter().cloned());
        }
        let readiness = layer.readiness();
        let router = app
            .layer(layer.clone())
            .nest_service("/mcp", mcp.build())
            .nest_service("/playground", Playground::new())
            .route(
                "/ready",
                axum::routing::get(move || {
                    let readiness = readiness.clone();
                    async move { readiness.answer().await }
                }),
            );
        // Streamed tools over WebSocket too (HALO §10.1.2), as over SSE.
        let router = layer.websocket_app(router);
        let report = Report::new(
            config
                .upstreams
                .iter()
                .zip(notes)
                .enumerate()
                .map(|(index, (spec, notes))| {
                    UpstreamReport::new(&spec.name, index, &merged.tools, layer.skipped(), notes)
                })
                .collect(),
        );
        let explained = merged
            .tools
            .iter()
            .map(|tool| {
                let spec = &config.upstreams[tool.upstream];
                format!(
                    "{} ({} {} of `{}`, named `{}` there)\n{}",
                    tool.served,
                    tool.method,
                    tool.path,
                    spec.name,
                    tool.given,
                    tool.effective
                        .explain(&|index| config.policies.describe(index))
                )
            })
            .collect();
        Ok(Self {
            router,
            layer,
            report,
            tools: merged.tools,
            explained,
            changed,
            servers,
        })
    }

    /// Resolves when an upstream says its tools changed (an MCP server's
    /// `notifications/tools/list_changed`): time to build the gateway again
    /// ([`Reloading`](crate::Reloading) does).
    pub async fn tools_changed(&self) {
        self.changed.notified().await;
    }

    /// The app to serve: the upstreams' tools under `/<upstream>/...` (streamed over SSE or
    /// WebSocket when asked), discovery, `/mcp`, `/playground` and the approvals endpoints.
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// What each upstream contributed.
    #[must_use]
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// The effective policy of the tool named `tool` (as the gateway serves it or as its
    /// upstream gives it), field by field with the rule that set each; `None` when no
    /// upstream has such a tool.
    #[must_use]
    pub fn explain(&self, tool: &str) -> Option<&str> {
        let index = self
            .tools
            .iter()
            .position(|t| t.served == tool)
            .or_else(|| self.tools.iter().position(|t| t.given == tool))?;
        Some(&self.explained[index])
    }
}

/// The layer over the merged document, with the configuration's callers, approvers, audit
/// and store.
async fn layer(
    config: &Config,
    document: serde_json::Value,
    previous: Option<&HaloLayer>,
) -> Result<HaloLayer, Error> {
    let file = &config.file;
    // Every call is checked against its schema, so every call carries the layer's mark and
    // nothing undescribed is forwarded.
    // Documents nobody here wrote: an operation that cannot be served is left out (or
    // repaired) and reported, never the whole upstream.
    let mut builder = HaloBuilder::from_openapi_json(document)
        .validate(Validation::On)
        .mark_calls(true)
        .lenient();
    if let Some(auth) = &file.auth {
        builder = builder
            .authenticator(crate::auth::authenticator(auth).await?)
            .require_credentials(true);
    }
    if let Some(approvals) = &file.approvals {
        builder = builder
            .approver(ApprovalQueue::new(&approvals.scope).self_approval(approvals.self_approval));
    }
    if let Some(path) = &file.audit {
        let path = config.dir.join(path);
        let sink = JsonLinesSink::open(&path)
            .map_err(|e| Error::layer(format!("audit: cannot open {}: {e}", path.display())))?;
        builder = builder.audit(sink);
    }
    if let Some(redis) = &file.redis {
        let store = match redis {
            file::Redis::Server(url) => RedisStore::open(url),
            file::Redis::Cluster(cluster) => RedisStore::open_cluster(&cluster.cluster),
        };
        let store = store.map_err(|e| Error::layer(format!("redis: {e}")))?;
        builder = builder.redis(store);
    }
    if let Some(previous) = previous {
        builder = builder.carry_over(previous);
    }
    builder
        .build()
        .map_err(|e| Error::layer(format!("the merged document: {e}")))
}
