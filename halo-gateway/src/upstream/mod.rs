//! Upstreams: each one's description fetched and read (an OpenAPI document, or a HALO API's
//! discovery), and the base URL its calls go to.

mod definitions;
pub(crate) mod document;
mod halo;
pub(crate) mod mcp;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use reqwest::Url;
use serde_json::Value;

use crate::config::{Location, Source, UpstreamSpec};
use crate::error::Error;

/// The largest description fetched (halo-openapi's reader refuses more): GitHub's, among the
/// largest public ones, is about 11 MB.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 64 * 1024 * 1024;

/// An upstream's description, read.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// Its OpenAPI document (3.1 form).
    pub(crate) document: Value,
    /// What reading the document changed (a Swagger 2.0 document converted, ...).
    pub(crate) notes: Vec<String>,
    /// How its calls reach it.
    pub(crate) via: Via,
}

/// How an upstream's calls reach it.
#[derive(Debug)]
pub(crate) enum Via {
    /// HTTP requests to `base_url`; for a HALO upstream, its streamed calls through its
    /// client (resumed, their progress relayed).
    Http {
        base_url: Url,
        halo: Option<halo_client::Client>,
    },
    /// `tools/call`s to an MCP server.
    Mcp(Arc<mcp::Server>),
}

/// Fetches and reads `spec`'s description; an MCP server's tools are served only as `pins`
/// pinned them when the upstream is `pinned`. `running` is the MCP server the gateway this
/// one replaces had under `spec`'s name, if any: kept when its settings are `spec`'s.
pub(crate) async fn load(
    spec: &UpstreamSpec,
    client: &reqwest::Client,
    pins: Option<&mcp::Pins>,
    changed: &Arc<Notify>,
    running: Option<&Arc<mcp::Server>>,
) -> Result<Loaded, Error> {
    let fail = |message: String| Error::upstream(&spec.name, message);
    let location = match &spec.source {
        Source::OpenApi(location) => location,
        Source::Halo(base) => {
            let document = halo::document(base, spec).await.map_err(fail)?;
            let base_url = spec.base_url.clone().unwrap_or_else(|| base.clone());
            let halo = halo::client(&base_url, spec).map_err(fail)?;
            return Ok(Loaded {
                document,
                notes: Vec::new(),
                via: Via::Http {
                    base_url,
                    halo: Some(halo),
                },
            });
        }
        Source::Stdio(_) | Source::Mcp(_) => {
            return mcp_server(spec, pins, changed, running).await;
        }
    };
    let bytes = match location {
        Location::File(path) => {
            let meta = tokio::fs::metadata(path)
                .await
                .map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
            if meta.len() > MAX_DOCUMENT_BYTES as u64 {
                return Err(fail(format!(
                    "{} is larger than {MAX_DOCUMENT_BYTES} bytes",
                    path.display()
                )));
            }
            tokio::fs::read(path)
                .await
                .map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?
        }
        Location::Url(url) => document::fetch(client, url).await.map_err(fail)?,
    };
    let (document, notes) = document::read(&bytes).map_err(fail)?;
    let base_url = match &spec.base_url {
        Some(url) => url.clone(),
        None => document::first_server(&document, location).map_err(fail)?,
    };
    Ok(Loaded {
        document,
        notes,
        via: Via::Http {
            base_url,
            halo: None,
        },
    })
}

/// Connects to an MCP server and writes the document of its tools (of a `pinned` one, those
/// as pinned).
async fn mcp_server(
    spec: &UpstreamSpec,
    pins: Option<&mcp::Pins>,
    changed: &Arc<Notify>,
    running: Option<&Arc<mcp::Server>>,
) -> Result<Loaded, Error> {
    let kept = running
        .filter(|server| reach(spec).is_some_and(|reach| server.runs(&reach, timeouts(spec))));
    let (server, tools) = match kept {
        Some(server) => {
            let tools = server
                .tools()
                .await
                .map_err(|message| Error::upstream(&spec.name, message))?;
            (Arc::clone(server), tools)
        }
        None => mcp_connect(spec, Arc::clone(changed)).await?,
    };
    let (tools, mut left_out) = match pins.filter(|_| spec.pinned) {
        Some(pins) => pins.admit(&spec.name, tools),
        None => (tools, Vec::new()),
    };
    let (document, mut notes) = mcp::openapi(&spec.name, &tools);
    notes.append(&mut left_out);
    Ok(Loaded {
        document,
        notes,
        via: Via::Mcp(server),
    })
}

/// Connects to the MCP server of `spec` (a `stdio` or `mcp` upstream): it, and its tools;
/// `changed` is told when it says they changed.
pub(crate) async fn mcp_connect(
    spec: &UpstreamSpec,
    changed: Arc<Notify>,
) -> Result<(Arc<mcp::Server>, Vec<rmcp::model::Tool>), Error> {
    let reach =
        reach(spec).ok_or_else(|| Error::upstream(&spec.name, "it is not an MCP server"))?;
    mcp::Server::connect(&spec.name, reach, timeouts(spec), changed)
        .await
        .map_err(|message| Error::upstream(&spec.name, message))
}

/// How the MCP server of `spec` is reached, if it is one.
fn reach(spec: &UpstreamSpec) -> Option<mcp::Reach> {
    match &spec.source {
        Source::Stdio(command) => Some(mcp::Reach::Stdio(command.clone())),
        Source::Mcp(url) => Some(mcp::Reach::Http {
            url: url.clone(),
            headers: spec.headers.clone(),
        }),
        Source::OpenApi(_) | Source::Halo(_) => None,
    }
}

fn timeouts(spec: &UpstreamSpec) -> (Duration, Duration) {
    (spec.connect_timeout, spec.read_timeout)
}
