//! `halo mcp`: an MCP server over stdio whose tools are a HALO API's tools.
//!
//! The tools come from discovery (`OPTIONS /`, then each path's schemas) and are turned into
//! MCP tools by [`tool_definitions`], the conversion the exports use too. A call goes through
//! halo-client ([`Client::call`]): the host's credentials, arguments placed where the schema
//! says, retries only when safe. A `4xx`/`5xx` answer is a tool result with `isError` and the
//! problem details, so the model reads what went wrong.
//!
//! The manifest is polled with its entity tag (a body-less `304` while unchanged), and the
//! schemas are revalidated the same way; when the tools change, the new list is announced
//! with `notifications/tools/list_changed`. Standard output carries MCP frames only: what
//! `halo` has to say goes to standard error.

use std::collections::HashMap;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::future::{self, Either};
use halo_client::protocol::{
    Manifest, ToolEntry, ToolEvent, ToolOutput, ToolSchema, mcp_progress, tool_definitions,
};
use halo_client::{Client, StreamEvent};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressToken, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};

use crate::run::{Failure, describe_manifest};

/// What `halo mcp` serves, and how it watches for changes.
#[derive(Debug)]
pub(crate) struct Options {
    /// Only tools with any of these tags.
    pub(crate) tags: Vec<String>,
    /// How often the manifest is checked for changes.
    pub(crate) poll: Duration,
}

/// Serves the API's tools over stdio until the client closes the connection.
pub(crate) async fn serve(client: Client, options: Options) -> Result<ExitCode, Failure> {
    let tags: Vec<&str> = options.tags.iter().map(String::as_str).collect();
    // Nothing but MCP frames may reach stdout, so every failure becomes a message for stderr.
    let discovered = client
        .discover_since(&tags, None)
        .await
        .map_err(quiet)?
        .ok_or_else(|| Failure::Other("the server answered OPTIONS / with 304".to_owned()))?;
    let manifest = discovered.manifest;
    let tools =
        describe_manifest(&client, manifest.clone())
            .await
            .map_err(|failure| match failure {
                Failure::Status(error) => Failure::Other(error.to_string()),
                other => other,
            })?;
    let toolset = Toolset::new(tools);
    log(&format!(
        "serving {} tools of {} {} ({}) over stdio",
        toolset.tools.len(),
        manifest.api,
        manifest.version,
        client.base_url()
    ));
    let bridge = Bridge {
        info: server_info(&manifest, client.base_url()),
        client,
        toolset: Arc::new(RwLock::new(Arc::new(toolset))),
    };
    let running = bridge
        .clone()
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Failure::Other(format!("the MCP connection could not start: {e}")))?;
    let watcher = watch(
        bridge,
        running.peer().clone(),
        &tags,
        manifest,
        discovered.etag,
        options.poll,
    );
    // The watcher stops only when it cannot reach the client; the connection ending stops both.
    let ended = match future::select(Box::pin(running.waiting()), Box::pin(watcher)).await {
        Either::Left((ended, _)) => ended,
        Either::Right(((), running)) => running.await,
    };
    match ended {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(Failure::Other(format!("the MCP connection failed: {e}"))),
    }
}

/// The MCP server: the current tools and the client that calls them.
#[derive(Clone)]
struct Bridge {
    client: Client,
    toolset: Arc<RwLock<Arc<Toolset>>>,
    info: ServerConfig,
}

/// The tools being served: what the API described, and the MCP tools made from it.
struct Toolset {
    /// Each tool's manifest entry and schema, for comparing with a later discovery.
    described: Vec<(ToolEntry, ToolSchema)>,
    tools: Vec<Tool>,
    /// The schema of each tool, by its MCP name.
    schemas: HashMap<String, ToolSchema>,
}

impl Toolset {
    fn new(described: Vec<(ToolEntry, ToolSchema)>) -> Self {
        let definitions = tool_definitions(&described);
        let schemas = definitions
            .iter()
            .zip(&described)
            .map(|(definition, (_, schema))| (definition.name.clone(), schema.clone()))
            .collect();
        Self {
            tools: definitions.iter().map(Tool::from).collect(),
            schemas,
            described,
        }
    }
}

impl Bridge {
    fn toolset(&self) -> Arc<Toolset> {
        Arc::clone(&self.toolset.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Replaces the tools when they differ; whether they did.
    fn update(&self, described: Vec<(ToolEntry, ToolSchema)>) -> bool {
        if self.toolset().described == described {
            return false;
        }
        let toolset = Arc::new(Toolset::new(described));
        *self.toolset.write().unwrap_or_else(PoisonError::into_inner) = toolset;
        true
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        self.info.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.toolset().tools.clone(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.toolset()
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let toolset = self.toolset();
        let Some(schema) = toolset.schemas.get(request.name.as_ref()) else {
            return Err(ErrorData::invalid_params(
                format!("no tool is named `{}`", request.name),
                None,
            ));
        };
        let args = request
            .arguments
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        // A client that asked for progress gets the streamed steps of a streaming tool.
        let progress = context
            .meta
            .get_progress_token()
            .filter(|_| schema.stream.is_some());
        let call = match progress {
            Some(token) => Either::Left(streamed(&self.client, schema, args, token, &context.peer)),
            None => Either::Right(async {
                match self.client.call(schema, args).await {
                    Ok(response) => ToolOutput::from(&response),
                    Err(error) => ToolOutput::from(&error),
                }
            }),
        };
        let cancelled = std::pin::pin!(context.ct.cancelled());
        let output = match future::select(std::pin::pin!(call), cancelled).await {
            Either::Left((output, _)) => output,
            Either::Right(((), _)) => ToolOutput::failure("the call was cancelled by the client"),
        };
        Ok(CallToolResult::from(output).into())
    }
}

/// Calls a streaming tool, relaying each `tool_progress` event as an MCP progress
/// notification for `token`; the output is the call's end.
async fn streamed(
    client: &Client,
    schema: &ToolSchema,
    args: serde_json::Value,
    token: ProgressToken,
    peer: &Peer<RoleServer>,
) -> ToolOutput {
    let mut events = match client.call_stream(schema, args).await {
        Ok(events) => events,
        Err(error) => return ToolOutput::from(&error),
    };
    let mut progress = 0.0;
    while let Some(event) = events.next().await {
        match event.map(StreamEvent::into_event) {
            Ok(ToolEvent::ToolProgress(data)) => {
                let note = mcp_progress(token.clone(), progress, &data);
                progress = note.progress;
                // A client that stopped listening still gets the result.
                let _ = peer.notify_progress(note).await;
            }
            Ok(ToolEvent::ToolEnd(end)) => {
                return ToolOutput::from_response(end.status, end.content);
            }
            Ok(ToolEvent::ToolError(problem)) => return ToolOutput::problem(problem),
            Ok(_) => {}
            Err(error) => return ToolOutput::from(&error),
        }
    }
    ToolOutput::failure("the stream ended before the call did")
}

/// What the server tells MCP clients about itself.
fn server_info(manifest: &Manifest, base_url: &str) -> ServerConfig {
    let mut instructions = format!(
        "The tools of the HTTP API {} {} at {base_url}, discovered through HALO.",
        manifest.api, manifest.version
    );
    if !manifest.description.trim().is_empty() {
        instructions.push(' ');
        instructions.push_str(manifest.description.trim());
    }
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build(),
    )
    .with_server_info(Implementation::new("halo", env!("CARGO_PKG_VERSION")))
    .with_instructions(instructions)
}

/// Checks the API for changed tools every `interval`, and announces a change.
///
/// The manifest is asked for with its entity tag, and the schemas come from the client's
/// cache, revalidated after their `max-age`: an unchanged API costs body-less `304`s.
/// Failures are reported on stderr and the tools kept as they were.
async fn watch(
    bridge: Bridge,
    peer: Peer<RoleServer>,
    tags: &[&str],
    mut manifest: Manifest,
    mut etag: Option<String>,
    interval: Duration,
) {
    loop {
        tokio::time::sleep(interval).await;
        match bridge.client.discover_since(tags, etag.as_deref()).await {
            Ok(Some(discovered)) => {
                manifest = discovered.manifest;
                etag = discovered.etag;
            }
            Ok(None) => {}
            Err(error) => {
                log(&format!("cannot check the API for changes: {error}"));
                continue;
            }
        }
        let described = match describe_manifest(&bridge.client, manifest.clone()).await {
            Ok(described) => described,
            Err(failure) => {
                log(&format!(
                    "cannot describe the API's tools: {}",
                    failure_text(&failure)
                ));
                continue;
            }
        };
        if bridge.update(described) {
            log(&format!(
                "the API's tools changed ({} now); telling the client",
                bridge.toolset().tools.len()
            ));
            if let Err(error) = peer.notify_tool_list_changed().await {
                log(&format!("cannot announce the change: {error}"));
                return;
            }
        }
    }
}

/// A failure of the client as one for stderr only.
fn quiet(error: halo_client::Error) -> Failure {
    match Failure::from(error) {
        Failure::Status(error) => Failure::Other(error.to_string()),
        other => other,
    }
}

fn failure_text(failure: &Failure) -> String {
    match failure {
        Failure::Status(error) => error.to_string(),
        Failure::NotDescribed(message) | Failure::Other(message) => message.clone(),
    }
}

/// A line on stderr.
fn log(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "halo mcp: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use halo_client::protocol::{Call, InputField, Location};
    use serde_json::json;

    #[test]
    fn the_toolset_keeps_each_tool_with_its_schema() {
        let entry = ToolEntry::new("/api/payments/{id}/refund", "POST", "refund", "Refund.");
        let mut schema = ToolSchema::new(Call::new("POST", "/api/payments/{id}/refund"));
        schema.input.insert(
            "id".into(),
            InputField::new(json!({"type": "integer"}))
                .located(Location::Path)
                .required(true),
        );
        let toolset = Toolset::new(vec![(entry, schema)]);
        assert_eq!(toolset.tools.len(), 1);
        assert_eq!(toolset.tools[0].name, "refund");
        assert_eq!(
            toolset.schemas["refund"].call.url,
            "/api/payments/{id}/refund"
        );
    }
}
