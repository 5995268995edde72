//! `halo mcp`: an MCP server over stdio whose tools are a HALO API's tools.
//!
//! The tools come from discovery (`OPTIONS /`, then each path's schemas) and are turned into
//! MCP tools by [`tool_definitions`](halo_client::protocol::tool_definitions), the conversion
//! the exports use too. A call goes through halo-client ([`Client::call`]): the host's
//! credentials, arguments placed where the schema
//! says, retries only when safe. A `4xx`/`5xx` answer is a tool result with `isError` and the
//! problem details, so the model reads what went wrong. A call the MCP client cancels
//! (`notifications/cancelled`) is cancelled on the API too: `halo mcp` names each call
//! without a stream (`Halo-Call-Id`), knows a stream's id from the server, and sends
//! `DELETE /.well-known/halo/calls/{call_id}`.
//!
//! A call held for approval (`202 Accepted`) is confirmed by the person at the MCP client
//! when the client can be asked, and waited for (`approval`). A client that declared the MCP
//! Tasks extension gets a task instead, for a held call and for a call of a streaming tool
//! still running after a grace (`task`, `streamed`).
//!
//! Above a token budget (4,000 estimated tokens by default, `--tool-budget`), `tools/list`
//! lists `search_tools` and `call_tool` instead of every tool (progressive disclosure):
//! `search_tools` ranks the described tools with [`ToolCatalog`] (BM25 over names, texts,
//! tags, paths and parameters, in process, so it works against any HALO server), and
//! `tools/call` takes any tool's name, listed or not. `--all-tools` lists every tool.
//!
//! The manifest is polled with its entity tag (a body-less `304` while unchanged), and the
//! schemas are revalidated the same way; when the tools change, the new list is announced
//! with `notifications/tools/list_changed`. Standard output carries MCP frames only: what
//! `halo` has to say goes to standard error.

mod approval;
mod streamed;
mod task;

use std::io::Write as _;
use std::pin::pin;
use std::process::ExitCode;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use futures_util::future::{self, Either};
use halo_client::protocol::{
    CALL_TOOL, CallRequest, Manifest, SEARCH_TOOLS, SearchRequest, TaskLimits, ToolCatalog,
    ToolEntry, ToolListing, ToolOutput, ToolSchema, malformed_task_request, mcp_cache_hints,
    mcp_page, search_tools_result,
};
use halo_client::{Approval, CallId, CancelOutcome, Client, ClientBuilder};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    CustomRequest, CustomResult, ErrorCode, GetTaskParams, GetTaskResult, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressToken, ServerCapabilities, ServerConfig, Tool,
    UpdateTaskParams,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use tokio::sync::mpsc;

use self::approval::Approvals;
use self::streamed::{Running, read, relayed};
use self::task::Tasks;
use crate::connect::describe_manifest;
use crate::failure::Failure;

/// Tools per `tools/list` page.
const PAGE_SIZE: usize = 100;

/// What `halo mcp` serves, and how it watches for changes.
#[derive(Debug)]
pub(crate) struct Options {
    /// Only tools with any of these tags.
    pub(crate) tags: Vec<String>,
    /// How often the manifest is checked for changes.
    pub(crate) poll: Duration,
    /// How the tools are listed.
    pub(crate) listing: ToolListing,
    /// When a streamed call becomes a task, how many are kept, and for how long.
    pub(crate) task_limits: TaskLimits,
}

/// Serves the API's tools over stdio until the client closes the connection.
pub(crate) async fn serve(client: ClientBuilder, options: Options) -> Result<ExitCode, Failure> {
    // A call held for approval comes back at once: the client may be asked to confirm it.
    let client = client.await_approvals(false).build().map_err(quiet)?;
    let tags: Vec<&str> = options.tags.iter().map(String::as_str).collect();
    // Nothing but MCP frames may reach stdout, so every failure becomes a message for stderr.
    let discovered = client
        .discover_since(&tags, None)
        .await
        .map_err(quiet)?
        .ok_or_else(|| Failure::Other("the server answered OPTIONS / with 304".to_owned()))?;
    let hints = mcp_cache_hints(
        discovered.cache_control.as_deref(),
        discovered.vary.as_deref(),
    );
    let manifest = discovered.manifest;
    let tools = describe_manifest(&client, manifest.clone())
        .await
        .map_err(quiet)?;
    let toolset = Toolset::new(tools, options.listing, hints);
    log(&format!(
        "serving {} tools of {} {} ({}) over stdio{}",
        toolset.described.len(),
        manifest.api,
        manifest.version,
        client.base_url(),
        if toolset.progressive {
            format!(
                ", found through search_tools (listing them all would cost ~{} tokens)",
                toolset.catalog.tokens()
            )
        } else {
            String::new()
        }
    ));
    let bridge = Bridge {
        info: server_info(&manifest, client.base_url()),
        client,
        toolset: Arc::new(RwLock::new(Arc::new(toolset))),
        listing: options.listing,
        tasks: Arc::new(Tasks::new(options.task_limits)),
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
    listing: ToolListing,
    /// The tasks given to the client: of held calls, and of long streamed calls.
    tasks: Arc<Tasks>,
}

/// The tools being served: what the API described, the MCP tools listed, and the catalog
/// searched.
struct Toolset {
    /// Each tool's manifest entry and schema, for comparing with a later discovery.
    described: Vec<(ToolEntry, ToolSchema)>,
    /// Every tool's definition and the search over them.
    catalog: ToolCatalog,
    /// What `tools/list` lists: every tool, or `search_tools` and `call_tool`.
    listed: Vec<Tool>,
    /// Whether the tools are found through `search_tools`.
    progressive: bool,
    /// `ttlMs` and `cacheScope` of the listing, from discovery's caching headers.
    hints: (u64, CacheScope),
}

impl Toolset {
    fn new(
        described: Vec<(ToolEntry, ToolSchema)>,
        listing: ToolListing,
        hints: (u64, CacheScope),
    ) -> Self {
        let catalog = ToolCatalog::new(&described);
        let (listed, progressive) = listing.tools(catalog.definitions().iter().cloned());
        Self {
            described,
            catalog,
            listed,
            progressive,
            hints,
        }
    }

    /// The schema of the tool an MCP name names.
    fn schema(&self, name: &str) -> Option<&ToolSchema> {
        let (index, _) = self.catalog.get(name)?;
        Some(&self.described[index].1)
    }

    /// The manifest entry of the tool an MCP name names.
    fn entry(&self, name: &str) -> Option<&ToolEntry> {
        let (index, _) = self.catalog.get(name)?;
        Some(&self.described[index].0)
    }
}

impl Bridge {
    fn toolset(&self) -> Arc<Toolset> {
        Arc::clone(&self.toolset.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Replaces the tools when they differ; whether they did. New cache hints are kept
    /// either way.
    fn update(&self, described: Vec<(ToolEntry, ToolSchema)>, hints: (u64, CacheScope)) -> bool {
        let current = self.toolset();
        let changed = current.described != described;
        if !changed && current.hints == hints {
            return false;
        }
        let toolset = Arc::new(Toolset::new(described, self.listing, hints));
        *self.toolset.write().unwrap_or_else(PoisonError::into_inner) = toolset;
        changed
    }

    /// Calls the tool named `name` (any tool, listed or not).
    async fn call(
        &self,
        name: &str,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let toolset = self.toolset();
        let Some(schema) = toolset.schema(name) else {
            return Err(ErrorData::invalid_params(
                format!("no tool is named `{name}`"),
                None,
            ));
        };
        let wants_tasks = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        if schema.stream.is_some() && wants_tasks {
            return Ok(self.call_streamed(schema, args, context).await);
        }
        // A client that asked for progress gets the streamed steps of a streaming tool.
        let progress = context
            .meta
            .get_progress_token()
            .filter(|_| schema.stream.is_some());
        let output = match progress {
            Some(token) => streamed(&self.client, schema, args, token, context).await,
            None => {
                // Named, so that a cancel can be sent for it.
                let id = CallId::random();
                let call = std::pin::pin!(self.client.call_cancellable(schema, args, &id));
                match future::select(call, std::pin::pin!(context.ct.cancelled())).await {
                    Either::Left((Ok(response), _)) => match Approval::from_response(&response) {
                        // Held for approval: confirmed by the client, or waited for.
                        Some(held) => {
                            let approvals = Approvals {
                                client: &self.client,
                                context,
                                tasks: &self.tasks,
                            };
                            return Ok(approvals.settle(held).await);
                        }
                        None => ToolOutput::from(&response),
                    },
                    Either::Left((Err(error), _)) => ToolOutput::from(&error),
                    Either::Right(((), _)) => cancelled(&self.client, Some(&id)).await,
                }
            }
        };
        Ok(CallToolResult::from(output).into())
    }

    /// A call of a streaming tool by a client that declared the Tasks extension: read in a
    /// Tokio task of its own, answered as for any client when it ends within the grace, else
    /// a task ([`task`]); waited for as for any client when `halo mcp` keeps as many tasks of
    /// streamed calls as it may.
    async fn call_streamed(
        &self,
        schema: &ToolSchema,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let events = match self.client.call_stream(schema, args).await {
            Ok(events) => events,
            Err(error) => return CallToolResult::from(ToolOutput::from(&error)).into(),
        };
        let (sender, steps) = mpsc::unbounded_channel();
        let mut running = Running::spawn(&self.client, events, sender);
        let grace = self.tasks.limits().grace_period();
        // `None`: the client cancelled the request.
        let within = {
            let answered = pin!(tokio::time::timeout(grace, running.end()));
            match future::select(answered, pin!(context.ct.cancelled())).await {
                Either::Left((ended, _)) => Some(ended.ok()),
                Either::Right(((), _)) => None,
            }
        };
        let output = match within {
            Some(Some(ended)) => ended.output,
            None => running.cancel().await,
            Some(None) => match self.tasks.adopt(running, steps) {
                Ok(task) => return CallToolResponse::Task(task),
                Err((mut running, steps)) => {
                    let token = context.meta.get_progress_token();
                    let ended = {
                        let ended = relayed(running.end(), steps, token, &context.peer);
                        match future::select(pin!(ended), pin!(context.ct.cancelled())).await {
                            Either::Left((ended, _)) => Some(ended),
                            Either::Right(((), _)) => None,
                        }
                    };
                    match ended {
                        Some(ended) => ended.output,
                        None => running.cancel().await,
                    }
                }
            },
        };
        CallToolResult::from(output).into()
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        self.info.clone()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let toolset = self.toolset();
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        let mut page = mcp_page(&toolset.listed, cursor, PAGE_SIZE)?;
        page.ttl_ms = Some(toolset.hints.0);
        page.cache_scope = Some(toolset.hints.1);
        Ok(page)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let toolset = self.toolset();
        toolset
            .listed
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
            .or_else(|| {
                toolset
                    .catalog
                    .get(name)
                    .map(|(_, definition)| Tool::from(definition))
            })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut args = request
            .arguments
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        let mut name = request.name.into_owned();
        let toolset = self.toolset();
        // In progressive mode, the two tools it lists; an API tool of the same name is then
        // called through `call_tool`.
        if toolset.progressive {
            match name.as_str() {
                SEARCH_TOOLS => {
                    let result = match SearchRequest::from_arguments(&args) {
                        Ok(search) => {
                            let (found, more) = toolset.catalog.search(&search);
                            search_tools_result(&found, more)
                        }
                        Err(message) => CallToolResult::from(ToolOutput::failure(message)),
                    };
                    return Ok(result.into());
                }
                CALL_TOOL => match CallRequest::from_arguments(&args) {
                    Ok(call) => (name, args) = (call.name, call.arguments),
                    Err(message) => {
                        return Ok(CallToolResult::from(ToolOutput::failure(message)).into());
                    }
                },
                _ => {}
            }
        }
        // The retry of a call held for approval, with the client's confirmation: the call
        // is not made again.
        if let Some(state) = &request.request_state {
            let Some(entry) = toolset.entry(&name) else {
                return Err(ErrorData::invalid_params(
                    format!("no tool is named `{name}`"),
                    None,
                ));
            };
            let approvals = Approvals {
                client: &self.client,
                context: &context,
                tasks: &self.tasks,
            };
            let responses = request.input_responses.as_ref();
            let output = approvals.resume(&entry.name, state, responses).await?;
            return Ok(CallToolResult::from(output).into());
        }
        self.call(&name, args, &context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let task = self.tasks.get(&self.client, &request.task_id).await?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // These tasks never ask for input: there is nothing to deliver.
        self.tasks
            .get(&self.client, &request.task_id)
            .await
            .map(|_| ())
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&self.client, &request.task_id).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method;
        Err(malformed_task_request(&method)
            .unwrap_or_else(|| ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method, None)))
    }
}

/// `notifications/cancelled` for a call: the API is asked to cancel it too (`id`, when the
/// call has one), and the MCP client gets an error result it will ignore. A failure to cancel
/// is only reported on stderr: the call may have ended, or the server may not cancel calls.
async fn cancelled(client: &Client, id: Option<&CallId>) -> ToolOutput {
    if let Some(id) = id {
        match client.cancel(id).await {
            Ok(CancelOutcome::AlreadyEnded) => {
                log(&format!("call {id} had ended before its cancel"));
            }
            Ok(_) => {}
            Err(error) => log(&format!("cannot cancel call {id}: {error}")),
        }
    }
    ToolOutput::failure("the call was cancelled by the client")
}

/// Calls a streaming tool, relaying each `tool_progress` event as an MCP progress
/// notification for `token`; the output is the call's end. Once the stream is open (it
/// names the call), a cancelled request cancels the call on the API.
async fn streamed(
    client: &Client,
    schema: &ToolSchema,
    args: serde_json::Value,
    token: ProgressToken,
    context: &RequestContext<RoleServer>,
) -> ToolOutput {
    let events = match client.call_stream(schema, args).await {
        Ok(events) => events,
        Err(error) => return ToolOutput::from(&error),
    };
    let id = events.call_id().cloned();
    let (sender, steps) = mpsc::unbounded_channel();
    let ended = relayed(read(events, sender), steps, Some(token), &context.peer);
    match future::select(pin!(ended), pin!(context.ct.cancelled())).await {
        Either::Left((ended, _)) => ended.output,
        Either::Right(((), _)) => cancelled(client, id.as_ref()).await,
    }
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
            .enable_tasks()
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
    let mut hints = bridge.toolset().hints;
    loop {
        tokio::time::sleep(interval).await;
        match bridge.client.discover_since(tags, etag.as_deref()).await {
            Ok(Some(discovered)) => {
                hints = mcp_cache_hints(
                    discovered.cache_control.as_deref(),
                    discovered.vary.as_deref(),
                );
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
                    failure.message()
                ));
                continue;
            }
        };
        if bridge.update(described, hints) {
            log(&format!(
                "the API's tools changed ({} now); telling the client",
                bridge.toolset().described.len()
            ));
            if let Err(error) = peer.notify_tool_list_changed().await {
                log(&format!("cannot announce the change: {error}"));
                return;
            }
        }
    }
}

/// A failure (or an error of the client) as one for stderr only.
fn quiet(failure: impl Into<Failure>) -> Failure {
    match failure.into() {
        Failure::Status(error) => Failure::Other(error.to_string()),
        other => other,
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
        let listing = ToolListing::default();
        let toolset = Toolset::new(vec![(entry, schema)], listing, (0, CacheScope::Private));
        assert!(!toolset.progressive);
        assert_eq!(toolset.listed.len(), 1);
        assert_eq!(toolset.listed[0].name, "refund");
        assert_eq!(
            toolset.schema("refund").unwrap().call.url,
            "/api/payments/{id}/refund"
        );
    }
}
