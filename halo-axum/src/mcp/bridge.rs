//! The MCP server behind `/mcp`: discovery and calls dispatched in process through the app
//! wrapped by its HALO layer ([`Local`]), with the MCP request's credentials.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::Arc;

use futures_util::future::{self, Either};
use halo_protocol::{
    Manifest, ToolEntry, ToolOutput, entry_schema, mcp_progress, tool_definitions,
};
use http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressToken, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::Progress;
use crate::local::{Failure, Local};

/// One MCP server per request (the transport is stateless), sharing the app.
#[derive(Clone)]
pub(super) struct Bridge {
    shared: Arc<Shared>,
}

struct Shared {
    /// The app's tools, in process.
    local: Local,
    /// Every tool of the app by name, whoever may see it. The layer's names are already
    /// unique and valid for MCP, so they are the MCP names for every caller.
    tools: HashMap<String, ToolEntry>,
    info: ServerConfig,
}

impl Bridge {
    pub(super) fn new(
        local: Local,
        tools: impl IntoIterator<Item = ToolEntry>,
        instructions: Option<String>,
    ) -> Self {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("halo-axum", env!("CARGO_PKG_VERSION")));
        if let Some(instructions) = instructions {
            info = info.with_instructions(instructions);
        }
        let tools = tools
            .into_iter()
            .map(|entry| (entry.name.clone(), entry))
            .collect();
        Self {
            shared: Arc::new(Shared { local, tools, info }),
        }
    }
}

/// The HTTP request an MCP request came in, when the transport kept it.
fn caller(context: &RequestContext<RoleServer>) -> Option<&Parts> {
    context.extensions.get::<Parts>()
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

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        self.shared.info.clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .shared
            .local
            .tools(caller(&context), |_| true)
            .await
            .map_err(protocol_error)?;
        Ok(ListToolsResult::with_all_items(
            tool_definitions(&tools).iter().map(Tool::from).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller(&context);
        let local = &self.shared.local;
        // A tool the caller may not see is answered as one that does not exist.
        let no_such_tool =
            || ErrorData::invalid_params(format!("no tool is named `{}`", request.name), None);
        let entry = self
            .shared
            .tools
            .get(request.name.as_ref())
            .ok_or_else(no_such_tool)?;
        // One discovery request, as the caller: the path's schemas, which are the ones it
        // may see. A tool at `/` has no schema of its own; the manifest lists it or not.
        let schema = if entry.url == "/" {
            let manifest: Manifest = local.discover(caller, "/").await.map_err(protocol_error)?;
            if !manifest
                .tools
                .iter()
                .any(|listed| listed.name == entry.name)
            {
                return Err(no_such_tool());
            }
            entry_schema(entry)
        } else {
            match local.schema(caller, entry, &mut Vec::new()).await {
                Ok(schema) => schema,
                Err(Failure::Hidden) => return Err(no_such_tool()),
                Err(failure) => return Err(protocol_error(failure)),
            }
        };
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let mut call = match local.tool_request(caller, &schema, args) {
            Ok(call) => call,
            Err(output) => return Ok(CallToolResult::from(output).into()),
        };
        // A client that asked for progress gets the steps of a streaming tool as they come.
        let progress = context
            .meta
            .get_progress_token()
            .filter(|_| schema.stream.is_some());
        let answer = async {
            match progress {
                Some(token) => {
                    let (relay, steps) = mpsc::unbounded_channel();
                    call.extensions_mut().insert(Progress::relayed(relay));
                    relaying(local.answer(call), steps, token, &context.peer).await
                }
                None => local.answer(call).await,
            }
        };
        // A cancelled request drops the call (and with it the handler, unless it streams).
        let output = match future::select(pin!(answer), pin!(context.ct.cancelled())).await {
            Either::Left((output, _)) => output,
            Either::Right(((), _)) => ToolOutput::failure("the call was cancelled by the client"),
        };
        Ok(CallToolResult::from(output).into())
    }
}

/// Awaits a call, sending each step its handler reports as an MCP progress notification for
/// `token`, the last ones before the answer.
async fn relaying(
    answer: impl Future<Output = ToolOutput>,
    mut steps: mpsc::UnboundedReceiver<Value>,
    token: ProgressToken,
    peer: &Peer<RoleServer>,
) -> ToolOutput {
    let mut progress = 0.0;
    let mut notify = async |data: Value| {
        let note = mcp_progress(token.clone(), progress, &data);
        progress = note.progress;
        // A client that stopped listening still gets the result.
        let _ = peer.notify_progress(note).await;
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
