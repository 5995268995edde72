//! The MCP server behind `/mcp`: discovery and calls dispatched in process through the app
//! wrapped by its HALO layer ([`Local`]), with the MCP request's credentials.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::Arc;

use futures_util::future::{self, Either};
use halo_protocol::{
    CallRequest, Manifest, SearchRequest, ToolDefinition, ToolListing, ToolOutput, entry_schema,
    mcp_cache_hints, mcp_page, mcp_progress, search_tools_result, tool_definitions,
};
use http::HeaderMap;
use http::header::{CACHE_CONTROL, VARY};
use http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CustomRequest,
    CustomResult, ErrorCode, GetTaskParams, GetTaskResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressToken, ServerCapabilities, ServerConfig, Tool,
    UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::mpsc;

use super::approval::{self, Approvals};
use super::asked::Asked;
use super::caller::Identified;
use super::task::{self, Running, Streamed, TaskLimits, Tasks};
use crate::Progress;
use crate::layer::Shared as Layer;
use crate::local::{Failure, Local};
use crate::registry::Tool as AppTool;
use crate::stream::CALL_ID;

/// One MCP server per request (the transport is stateless), sharing the app.
#[derive(Clone)]
pub(super) struct Bridge {
    shared: Arc<Shared>,
}

struct Shared {
    /// The app's tools, in process.
    local: Local,
    /// The layer's state: who may decide approvals.
    layer: Arc<Layer>,
    /// Every tool of the app by name, whoever may see it. The layer's names are already
    /// unique and valid for MCP, so they are the MCP names for every caller.
    tools: HashMap<String, Known>,
    info: ServerConfig,
    listing: Listing,
    /// The tasks of this instance's streamed calls.
    tasks: Arc<Streamed>,
}

/// A tool of the app, as the bridge knows it from start-up.
struct Known {
    /// Where the layer's registry holds it.
    index: usize,
    /// What listing it costs at least (its entry alone, in estimated tokens): enough to
    /// know, from the manifest, that a caller's tools are over the budget.
    least_tokens: usize,
}

/// How `tools/list` lists the caller's tools.
#[derive(Debug, Clone, Copy)]
pub(super) struct Listing {
    /// All of them, or the tools of progressive disclosure above a budget.
    pub(super) tools: ToolListing,
    /// Tools per page.
    pub(super) page_size: usize,
}

impl Bridge {
    pub(super) fn new(
        local: Local,
        layer: Arc<Layer>,
        instructions: Option<String>,
        listing: Listing,
        limits: TaskLimits,
    ) -> Self {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tasks()
            .build();
        let mut info = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("halo-axum", env!("CARGO_PKG_VERSION")));
        if let Some(instructions) = instructions {
            info = info.with_instructions(instructions);
        }
        let tools = layer
            .discovery
            .registry
            .tools()
            .enumerate()
            .map(|(index, tool)| {
                let entry = tool.entry();
                let least_tokens =
                    tool_definitions(&[(entry.clone(), entry_schema(entry))])[0].estimated_tokens();
                (
                    entry.name.clone(),
                    Known {
                        index,
                        least_tokens,
                    },
                )
            })
            .collect();
        let tasks = Arc::new(Streamed::new(local.clone(), limits));
        Self {
            shared: Arc::new(Shared {
                local,
                layer,
                tools,
                info,
                listing,
                tasks,
            }),
        }
    }

    /// The tools to list for a caller who may see `manifest`: all of them, or the two
    /// tools of progressive disclosure when they would cost more than the budget.
    async fn listed(
        &self,
        caller: Option<&Parts>,
        manifest: Manifest,
    ) -> Result<Vec<Tool>, ErrorData> {
        let listing = self.shared.listing.tools;
        // What the manifest alone says the tools cost at least: over budget, no tool need
        // be described.
        let least: usize = manifest
            .tools
            .iter()
            .filter_map(|entry| self.shared.tools.get(&entry.name))
            .map(|known| known.least_tokens)
            .sum();
        if listing.exceeded_by(least) {
            return Ok(ToolListing::progressive());
        }
        let described = self
            .shared
            .local
            .describe(caller, manifest.tools)
            .await
            .map_err(protocol_error)?;
        Ok(listing.tools(tool_definitions(&described)).0)
    }

    /// Answers `search_tools`: the caller's best matches, found by the layer's own search.
    async fn search(&self, caller: Option<&Parts>, arguments: &Value) -> CallToolResult {
        let request = match SearchRequest::from_arguments(arguments) {
            Ok(request) => request,
            Err(message) => return CallToolResult::from(ToolOutput::failure(message)),
        };
        let local = &self.shared.local;
        let found = match local.search(caller, &request).await {
            Ok((entries, total)) => local
                .describe(caller, entries)
                .await
                .map(|described| (described, total)),
            Err(failure) => Err(failure),
        };
        match found {
            Ok((described, total)) => {
                let definitions = tool_definitions(&described);
                let found: Vec<&ToolDefinition> = definitions.iter().collect();
                search_tools_result(&found, total.saturating_sub(found.len()))
            }
            Err(Failure::Answered(output)) => CallToolResult::from(output),
            Err(Failure::Hidden) => CallToolResult::from(ToolOutput::failure("no tool was found")),
            Err(Failure::Other(message)) => CallToolResult::from(ToolOutput::failure(message)),
        }
    }
}

/// The error of a call to a tool that does not exist, or that the caller may not see.
fn no_such_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("no tool is named `{name}`"), None)
}

/// A discovery failure as a protocol error: the MCP client sees why it got no tools.
fn protocol_error(failure: Failure) -> ErrorData {
    match failure {
        Failure::Answered(output) => ErrorData::internal_error(
            format!("discovery was refused: {}", output.text),
            output.structured,
        ),
        Failure::Other(message) => ErrorData::internal_error(message, None),
        Failure::Hidden => ErrorData::internal_error("discovery found nothing to see", None),
    }
}

/// The handlers box their futures: rmcp spawns one task per request whose future holds the
/// handler's, and moves it while doing so; a call's future (the request through the layer,
/// an approval's wait) is large, and copying it cost more than the call itself.
impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        self.shared.info.clone()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Box::pin(self.tools(request, context)).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Box::pin(self.answer(request, Asked::Rmcp(&context))).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let task = self.tasks(&context).get(&request.task_id).await?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks(&context).update(&request.task_id).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Box::pin(self.tasks(&context).cancel(&request.task_id)).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method;
        Err(halo_protocol::malformed_task_request(&method)
            .unwrap_or_else(|| ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method, None)))
    }
}

impl Bridge {
    /// `tools/list`.
    async fn tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = Asked::Rmcp(&context).caller();
        let (manifest, headers): (Manifest, HeaderMap) = self
            .shared
            .local
            .discover_with_headers(caller, "/")
            .await
            .map_err(protocol_error)?;
        let tools = self.listed(caller, manifest).await?;
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        let mut page = mcp_page(&tools, cursor, self.shared.listing.page_size)?;
        let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
        let (ttl_ms, scope) = mcp_cache_hints(header(CACHE_CONTROL), header(VARY));
        page.ttl_ms = Some(ttl_ms);
        page.cache_scope = Some(scope);
        Ok(page)
    }

    /// `tools/call`, as the MCP request `asked` asks it.
    pub(super) async fn answer(
        &self,
        request: CallToolRequestParams,
        asked: Asked<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.map_or(Value::Null, Value::Object);
        let mut name = request.name.into_owned();
        let mut arguments = arguments;
        // In progressive mode, the two tools it lists; an API tool of the same name is then
        // called through `call_tool`.
        if self.shared.listing.tools.budget.is_some() {
            match name.as_str() {
                halo_protocol::SEARCH_TOOLS => {
                    return Ok(self.search(asked.caller(), &arguments).await.into());
                }
                halo_protocol::CALL_TOOL => match CallRequest::from_arguments(&arguments) {
                    Ok(call) => (name, arguments) = (call.name, call.arguments),
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
            let tool = self.registry().tool_at(self.known(&name)?.index);
            let approvals = self.approvals(asked);
            let responses = request.input_responses.as_ref();
            let output = approvals.resume(tool.name(), state, responses).await?;
            return Ok(CallToolResult::from(output).into());
        }
        self.call(&name, arguments, asked).await
    }

    /// The layer's tools.
    fn registry(&self) -> &crate::registry::Registry {
        &self.shared.layer.discovery.registry
    }

    /// The tool named `name`, whoever may see it.
    fn known(&self, name: &str) -> Result<&Known, ErrorData> {
        self.shared
            .tools
            .get(name)
            .ok_or_else(|| no_such_tool(name))
    }

    /// The tasks, as the caller of the MCP request of `context` reads them.
    fn tasks<'a>(&'a self, context: &'a RequestContext<RoleServer>) -> Tasks<'a> {
        Tasks {
            layer: &self.shared.layer,
            streamed: &self.shared.tasks,
            parts: Asked::Rmcp(context).caller(),
        }
    }

    /// The approvals of the caller of `asked`.
    fn approvals<'a>(&'a self, asked: Asked<'a>) -> Approvals<'a> {
        Approvals {
            layer: &self.shared.layer,
            caller: asked.caller(),
            asked,
        }
    }

    /// The tool named `name` when the caller of `asked` may see it (and so call it): the
    /// layer's own check, made in process on the caller [`McpService`](super::McpService)
    /// identified. Discovery shows a caller exactly the tools it admits.
    fn visible(&self, name: &str, asked: Asked<'_>) -> Result<&AppTool, ErrorData> {
        let registry = self.registry();
        let tool = registry.tool_at(self.known(name)?.index);
        if !self.shared.layer.gate.is_closed() {
            return Ok(tool);
        }
        let identified = asked
            .caller()
            .and_then(|parts| parts.extensions.get::<Identified>());
        let principal = identified.and_then(|identified| identified.0.as_ref());
        if registry.admits(tool, principal) {
            Ok(tool)
        } else {
            // A tool the caller may not see is answered as one that does not exist.
            Err(no_such_tool(name))
        }
    }

    /// Calls the tool `name` as the caller: any tool it may see, listed or not.
    async fn call(
        &self,
        name: &str,
        args: Value,
        asked: Asked<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = asked.caller();
        let local = &self.shared.local;
        let schema = self.visible(name, asked)?.schema();
        let mut call = match local.tool_request(caller, schema, args) {
            Ok(call) => call,
            Err(output) => return Ok(CallToolResult::from(output).into()),
        };
        if schema.stream.is_some() && asked.wants_tasks() {
            return self.call_streamed(call, asked).await;
        }
        // A client that asked for progress gets the steps of a streaming tool as they come.
        let progress = asked.progress_token().filter(|_| schema.stream.is_some());
        let answer = async {
            match progress {
                Some(token) => {
                    let (relay, steps) = mpsc::unbounded_channel();
                    call.extensions_mut().insert(Progress::relayed(relay));
                    relaying(local.exchange(call), steps, token, asked).await
                }
                None => local.exchange(call).await,
            }
        };
        // A cancelled request drops the call (and with it the handler, unless it streams).
        match future::select(pin!(answer), pin!(asked.cancelled())).await {
            Either::Left((answer, _)) => Ok(self.output(answer, asked).await),
            Either::Right(((), _)) => Ok(cancelled_by_client()),
        }
    }

    /// A call of a streaming tool by a client that declared the Tasks extension: answered as
    /// any call when it ends within the grace, else a task of this instance; waited for, as
    /// for any client, when the caller or the instance keeps as many tasks as it may.
    async fn call_streamed(
        &self,
        mut call: http::Request<axum::body::Body>,
        asked: Asked<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tasks = &self.shared.tasks;
        let call_id = task::call_id();
        call.headers_mut().insert(CALL_ID, call_id.clone());
        let (relay, steps) = mpsc::unbounded_channel();
        call.extensions_mut().insert(Progress::relayed(relay));
        let mut running = Running::spawn(&self.shared.local, call);
        let grace = tasks.limits().grace_period();
        let within = {
            let answered = pin!(tokio::time::timeout(grace, running.answer()));
            match future::select(answered, pin!(asked.cancelled())).await {
                Either::Left((Ok(answer), _)) => Some(answer),
                Either::Left((Err(_), _)) => None,
                // Dropped, the running call stops.
                Either::Right(((), _)) => return Ok(cancelled_by_client()),
            }
        };
        let answer = match within {
            Some(answer) => answer,
            None => {
                let caller = asked
                    .caller()
                    .and_then(|parts| parts.extensions.get::<Identified>())
                    .and_then(|identified| identified.0.clone());
                let layer = &self.shared.layer;
                match tasks.adopt(layer, caller, &call_id, running, steps) {
                    Ok(task) => return Ok(CallToolResponse::Task(task)),
                    Err((mut running, steps)) => {
                        let answer = async {
                            match asked.progress_token() {
                                Some(token) => {
                                    relaying(running.answer(), steps, token, asked).await
                                }
                                None => running.answer().await,
                            }
                        };
                        match future::select(pin!(answer), pin!(asked.cancelled())).await {
                            Either::Left((answer, _)) => answer,
                            Either::Right(((), _)) => return Ok(cancelled_by_client()),
                        }
                    }
                }
            }
        };
        Ok(self.output(answer, asked).await)
    }

    /// The result of a call's answer: a call held for approval is settled (a task, a
    /// confirmation, or its end once decided), any other is the answer.
    async fn output(&self, answer: task::Answer, asked: Asked<'_>) -> CallToolResponse {
        let output = match answer {
            Ok((status, headers, body)) => {
                if let Some(held) = approval::held(status, &headers, &body) {
                    return self.approvals(asked).settle(held).await;
                }
                let media = headers
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|value| value.to_str().ok());
                ToolOutput::from_answer(status.as_u16(), media, body)
            }
            Err(message) => ToolOutput::failure(message),
        };
        CallToolResult::from(output).into()
    }
}

/// The result of a call whose client cancelled it.
fn cancelled_by_client() -> CallToolResponse {
    CallToolResult::from(ToolOutput::failure("the call was cancelled by the client")).into()
}

/// Awaits a call, sending each step its handler reports as an MCP progress notification for
/// `token`, the last ones before the answer.
async fn relaying<T>(
    answer: impl Future<Output = T>,
    mut steps: mpsc::UnboundedReceiver<Value>,
    token: ProgressToken,
    asked: Asked<'_>,
) -> T {
    let mut progress = 0.0;
    let mut notify = async |data: Value| {
        let note = mcp_progress(token.clone(), progress, &data);
        progress = note.progress;
        asked.notify_progress(note).await;
    };
    let mut answer = pin!(answer);
    let output = loop {
        match future::select(answer, pin!(steps.recv())).await {
            Either::Left((output, _)) => break output,
            Either::Right((Some(data), pending)) => {
                answer = pending;
                notify(data).await;
            }
            // Every sender is gone: nothing more to relay.
            Either::Right((None, pending)) => break pending.await,
        }
    };
    while let Ok(data) = steps.try_recv() {
        notify(data).await;
    }
    output
}
