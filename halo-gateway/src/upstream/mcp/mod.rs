//! An MCP upstream: a server the gateway runs as a child process (`stdio`) or reaches over
//! streamable HTTP (`mcp`, or MCP's older HTTP+SSE transport when that is all the server
//! offers, [`legacy`]), spoken to with rmcp's client. Its tools are written as an OpenAPI
//! document ([`document`]) and compiled like any upstream's; its calls are `tools/call`s
//! ([`Server::call`]), their progress relayed and, when the gateway's call is dropped,
//! cancelled upstream (rmcp sends `notifications/cancelled`).
//!
//! A server that goes away (its process exits, its connection closes) is connected to again
//! on the next call, no sooner than a delay that doubles with each failure (up to 30 s), so a
//! crashing server is not restarted in a loop. A `stdio` server's standard error goes to the
//! log, line by line; it is killed when the gateway drops it.

mod document;
mod legacy;
mod pins;
mod progress;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use halo_axum::Progress;
use http::HeaderMap;
use reqwest::Url;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    JsonObject, Tool,
};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt as _};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::sync::{Mutex, Notify};
use tokio::time::Instant;

pub(crate) use self::document::openapi;
pub use self::pins::PinChanges;
pub(crate) use self::pins::Pins;
use self::progress::Relays;
use crate::config::Command;

/// The environment variables of the gateway's own that a `stdio` server gets: enough to find
/// programs and a home for their caches, none of the gateway's credentials.
const KEPT_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];

/// The longest wait before connecting again to a server that failed.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How an MCP server is reached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reach {
    /// Run as a child process, spoken to over its standard input and output.
    Stdio(Command),
    /// Over streamable HTTP, with these headers (its credentials).
    Http { url: Url, headers: HeaderMap },
}

/// Why a call did not get the tool's result.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The server answered with a JSON-RPC error.
    Refused(rmcp::ErrorData),
    /// The server could not be reached, or went away during the call.
    Unavailable(String),
    /// The server did not answer within the upstream's read timeout.
    TimedOut,
}

/// One MCP upstream, connected.
pub(crate) struct Server {
    name: String,
    reach: Reach,
    /// How long a call may wait for its answer, and connecting for the server.
    timeouts: (Duration, Duration),
    connection: Mutex<Connection>,
    relays: Arc<Relays>,
    /// Told when the server says its tools changed.
    changed: Arc<Notify>,
}

struct Connection {
    running: Option<RunningService<RoleClient, progress::Handler>>,
    /// When the next attempt to connect may be made, after a failure, and the delay after
    /// the next failure.
    retry: Option<(Instant, Duration)>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Connects to the server `reach` names (the upstream `name`), and lists its tools;
    /// `changed` is told when the server says they changed.
    pub(crate) async fn connect(
        name: &str,
        reach: Reach,
        (connect_timeout, read_timeout): (Duration, Duration),
        changed: Arc<Notify>,
    ) -> Result<(Arc<Self>, Vec<Tool>), String> {
        let relays = Arc::new(Relays::default());
        let running = start(name, &reach, (&relays, &changed), connect_timeout).await?;
        let tools = tokio::time::timeout(read_timeout, running.list_all_tools())
            .await
            .map_err(|_| "it did not list its tools in time".to_owned())?
            .map_err(|e| format!("it did not list its tools: {e}"))?;
        let server = Arc::new(Self {
            name: name.to_owned(),
            reach,
            timeouts: (connect_timeout, read_timeout),
            connection: Mutex::new(Connection {
                running: Some(running),
                retry: None,
            }),
            relays,
            changed,
        });
        Ok((server, tools))
    }

    /// Whether this is the server `reach` names, with these `timeouts`: a gateway built
    /// again keeps such a server (its process, its connection) rather than starting another.
    pub(crate) fn runs(&self, reach: &Reach, timeouts: (Duration, Duration)) -> bool {
        self.reach == *reach && self.timeouts == timeouts
    }

    /// Its tools, listed again (connecting again first if it went away).
    pub(crate) async fn tools(&self) -> Result<Vec<Tool>, String> {
        let peer = self.peer().await.map_err(|error| match error {
            CallError::Unavailable(why) => why,
            CallError::TimedOut => "it did not answer in time".to_owned(),
            CallError::Refused(error) => error.message.into_owned(),
        })?;
        tokio::time::timeout(self.timeouts.1, peer.list_all_tools())
            .await
            .map_err(|_| "it did not list its tools in time".to_owned())?
            .map_err(|e| format!("it did not list its tools: {e}"))
    }

    /// Calls the tool `tool` with `arguments`; its progress goes to `progress` when that
    /// streams. Dropping the future cancels the call upstream.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        progress: Option<&Progress>,
    ) -> Result<CallToolResult, CallError> {
        let peer = self.peer().await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        let relay = progress.filter(|p| p.is_streaming()).cloned();
        let answer = self.relays.call(&peer, params, relay);
        match tokio::time::timeout(self.timeouts.1, answer).await {
            Err(_) => Err(CallError::TimedOut),
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ServiceError::McpError(error))) => Err(CallError::Refused(error)),
            Ok(Err(error)) => Err(CallError::Unavailable(error.to_string())),
        }
    }

    /// The connection's peer, connecting again when the server went away (not before its
    /// backoff allows).
    async fn peer(&self) -> Result<rmcp::Peer<RoleClient>, CallError> {
        let mut connection = self.connection.lock().await;
        if let Some(running) = &connection.running
            && !running.is_closed()
            && !running.peer().is_transport_closed()
        {
            return Ok(running.peer().clone());
        }
        connection.running = None;
        let now = Instant::now();
        if let Some((at, _)) = connection.retry
            && now < at
        {
            return Err(CallError::Unavailable(format!(
                "the server went away; it is started again in {} ms",
                (at - now).as_millis()
            )));
        }
        let told = (&self.relays, &self.changed);
        match start(&self.name, &self.reach, told, self.timeouts.0).await {
            Ok(running) => {
                tracing::info!(upstream = self.name, "connected to the MCP server again");
                let peer = running.peer().clone();
                connection.running = Some(running);
                connection.retry = None;
                Ok(peer)
            }
            Err(error) => {
                let delay = connection
                    .retry
                    .map_or(Duration::from_millis(500), |(_, delay)| delay);
                connection.retry = Some((now + delay, (delay * 2).min(MAX_BACKOFF)));
                tracing::warn!(upstream = self.name, %error, "the MCP server could not be reached");
                Err(CallError::Unavailable(error))
            }
        }
    }
}

/// Starts (or connects to) the server and completes MCP's initialisation.
async fn start(
    name: &str,
    reach: &Reach,
    (relays, changed): (&Arc<Relays>, &Arc<Notify>),
    timeout: Duration,
) -> Result<RunningService<RoleClient, progress::Handler>, String> {
    let handler = progress::Handler::new(client_info(), Arc::clone(relays), Arc::clone(changed));
    let started = match reach {
        Reach::Stdio(command) => {
            let (transport, stderr) = TokioChildProcess::builder(child(command))
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot run `{}`: {e}", command.program))?;
            if let Some(stderr) = stderr {
                let name = name.to_owned();
                tokio::spawn(async move {
                    let mut lines = BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tracing::info!(upstream = name, "{line}");
                    }
                });
            }
            tokio::time::timeout(timeout, handler.serve(transport)).await
        }
        Reach::Http { url, headers } => {
            let client = reqwest::Client::builder()
                .default_headers(headers.clone())
                .connect_timeout(timeout)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            let transport = StreamableHttpClientTransport::with_client(client.clone(), config);
            let streamable = tokio::time::timeout(timeout, handler.serve(transport)).await;
            if let Ok(Ok(running)) = streamable {
                return Ok(running);
            }
            // A server that offers only the older HTTP+SSE transport, as MCP's backwards
            // compatibility says to try it; when it is not that either, the first failure is
            // the one to report.
            match legacy::connect(client, url, timeout).await {
                Ok(transport) => {
                    let handler = progress::Handler::new(
                        client_info(),
                        Arc::clone(relays),
                        Arc::clone(changed),
                    );
                    let started = tokio::time::timeout(timeout, handler.serve(transport)).await;
                    if matches!(started, Ok(Ok(_))) {
                        tracing::info!(
                            upstream = name,
                            "the MCP server speaks HTTP with SSE (2024-11-05)"
                        );
                    }
                    started
                }
                Err(legacy) => {
                    tracing::debug!(upstream = name, %legacy, "not an HTTP+SSE server either");
                    streamable
                }
            }
        }
    };
    started
        .map_err(|_| "it did not complete MCP's initialisation in time".to_owned())?
        .map_err(|e| format!("MCP's initialisation failed: {e}"))
}

/// The process of a `stdio` server: its program and arguments, the few variables of the
/// gateway's environment it keeps and its own, killed when dropped.
fn child(command: &Command) -> tokio::process::Command {
    let mut child = tokio::process::Command::new(&command.program);
    child.args(&command.args).env_clear();
    let kept: BTreeMap<&str, String> = KEPT_ENV
        .iter()
        .filter_map(|name| Some((*name, std::env::var(name).ok()?)))
        .collect();
    child.envs(kept);
    child.envs(command.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    child.kill_on_drop(true);
    child
}

/// What the gateway tells MCP servers about itself.
fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("halo-gateway", env!("CARGO_PKG_VERSION")),
    )
}
